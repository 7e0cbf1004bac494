# SPDX-License-Identifier: MIT
"""reprs and notebook HTML (``_repr_html_``) of nodes, loops, named results,
FractalTensors, JaggedArrays and compiled functions (ftlazy/display.py)."""

from __future__ import annotations

import html
import re

import numpy as np
import pytest
from pytools.tag import Tag, tag_dataclass

import ftlazy as ft
from ftlazy import display, visualization
from ftlazy.text_ir import Listing
from ftlazy.tags import ImplStored

F64 = np.float64


@tag_dataclass
class Note(Tag):
    text: str


def _dense():
    n = ft.make_size_param("n")
    x = ft.make_placeholder("x", (n, 3), F64)
    w = ft.make_placeholder("W", (3, 3), F64)
    return x, w, ft.exp(x) @ w + 1.0


# {{{ one-line reprs

def test_array_repr_is_one_informative_line():
    x, w, y = _dense()
    assert repr(y) == ("IndexLambda(shape=(n, 3), dtype=float64, "
                       "inputs=[Einsum], nodes=5)")
    assert repr(y.bindings["_in0"]) == (
        "Einsum(shape=(n, 3), dtype=float64, spec='ab,bc->ac', "
        "inputs=[IndexLambda, W: Placeholder], nodes=4)".replace(
            "nodes=4", f"nodes={ft.analysis.get_num_nodes(y.bindings['_in0'])}"))
    z = (x + x * 2).tagged(ImplStored())
    assert repr(z) == ("IndexLambda(shape=(n, 3), dtype=float64, "
                       "tags={ImplStored()}, inputs=[x: Placeholder, "
                       "IndexLambda], nodes=3)")
    # inputs without children keep the short form
    assert repr(x) == "Placeholder(shape=(n, 3), dtype=float64, name='x')"
    assert repr(ft.make_size_param("m")) == ("SizeParam(shape=(), dtype=int64, "
                                             "name='m')")


def test_node_counts_match_the_analysis():
    x, w, y = _dense()
    for a in (x, y, ft.map(lambda r: ft.sum(r @ w), x)):
        assert f"nodes={ft.analysis.get_num_nodes(a)}" in repr(a) or \
            ft.analysis.get_num_nodes(a) == 1
    assert display.count_nodes(y) == ft.analysis.get_num_nodes(y)


def test_many_inputs_are_abbreviated():
    parts = [ft.make_placeholder(f"p{i}", (2,), F64) for i in range(9)]
    s = ft.stack(parts)
    assert "inputs=[p0: Placeholder, p1: Placeholder, p2: Placeholder, " \
           "p3: Placeholder, p4: Placeholder, p5: Placeholder, ... 3 more]" in repr(s)


def test_loop_reprs_show_the_loop_structure():
    x, w, _ = _dense()
    h0 = ft.make_placeholder("h0", (3,), F64)
    states = ft.scan(lambda h, xi: ft.tanh(w @ h + xi), x, h0)
    scan = states.loop
    assert repr(scan) == (
        "Scan(length=n, carries=[float64[3]], scanned=[x: Placeholder], "
        "captured=[W: Placeholder], outputs=[float64[3]], keep_all=True, "
        f"nesting=1, nodes={ft.analysis.get_num_nodes(states) - 1})")
    assert repr(states).startswith("LoopResult(shape=(n, 3), dtype=float64, "
                                   "inputs=[Scan], nodes=")
    body = scan.body
    assert repr(body) == ("Body(params=[float64[3], float64[3], float64[3, 3]], "
                          "outputs=[float64[3]], nodes=6)")
    nested = ft.map(lambda seq: ft.fold(lambda c, r: c + r, seq, ft.zeros(3)),
                    ft.make_placeholder("xs", (4, 5, 3), F64))
    text = repr(nested.loop)
    assert text.startswith("Map(length=4, mapped=[xs: Placeholder], "
                           "captured=[IndexLambda], outputs=[float64[3]], "
                           "nesting=2, nodes=")
    assert "\n" not in text and "0x" not in text


def test_jagged_loop_and_node_reprs():
    xs = ft.make_jagged_placeholder("xs", (3,), F64, depth=3)
    assert repr(xs) == "Jagged('xs', depth=3, elem_shape=(3,), dtype=float64, nodes=4)"
    sums = ft.map(lambda doc: ft.map(lambda s: ft.sum(s), doc), xs)
    loop = next(s.node for s in Listing(sums).statements
                if type(s.node).__name__ == "JaggedMap")
    text = repr(loop)
    assert text.startswith("JaggedMap(length=xs_n0, mapped=[xs: FractalTensor("
                           "depth=3)], outputs=[float64[_ft_elem0_m]], "
                           "nesting=2, nodes=")
    zipped = ft.map(lambda s, d: ft.sum(s) * d, ft.make_jagged_placeholder(
        "seqs", (3,), F64, depth=2) * 2.0, ft.make_placeholder("d", (
            ft.make_size_param("m"),), F64))
    assert "mapped=[FractalTensor(depth=2), d: Placeholder]" in repr(
        next(s.node for s in Listing(zipped).statements
             if type(s.node).__name__ == "JaggedMap"))
    seqs = ft.make_jagged_placeholder("seqs", (3,), F64, depth=2)
    folded = ft.fold(lambda c, s: c + ft.sum(s, axis=0), seqs, ft.zeros(3))
    assert repr(folded.loop) == (
        "JaggedScan(length=seqs_n0, carries=[float64[3]], scanned=[seqs: "
        "FractalTensor(depth=2)], outputs=[float64[3]], keep_all=False, "
        "nesting=1, nodes=8)")
    assert repr(seqs) == ("Jagged('seqs', depth=2, elem_shape=(3,), "
                          "dtype=float64, nodes=3)")


def test_dict_of_named_arrays_repr():
    x, w, y = _dense()
    dag = ft.make_dict_of_named_arrays({"y": y, "total": ft.sum(x)})
    assert repr(dag) == ("DictOfNamedArrays({'y': float64[n, 3], 'total': "
                         f"float64[]}}, nodes={ft.analysis.get_num_nodes(dag)})")


def test_jagged_array_repr_summarizes_lengths():
    ja = ft.JaggedArray(np.arange(12.0).reshape(6, 2), np.array([0, 1, 4, 6, 6]))
    assert repr(ja) == ("JaggedArray(depth=2, len=4, elem_shape=(2,), "
                        "dtype=float64, nnz=6, lengths=[min 0, mean 1.5, max 3])")
    empty = ft.JaggedArray(np.zeros((0, 2)), np.array([0]))
    assert repr(empty).endswith("nnz=0, lengths=[])")


def test_a_100000_node_chain_repr_and_ir():
    x = ft.make_placeholder("x", (2,), F64)
    y = x
    for _ in range(100_000 - 1):
        y = y + 1.0
    assert repr(y) == ("IndexLambda(shape=(2,), dtype=float64, "
                       "inputs=[IndexLambda], nodes=100000)")
    assert y.ir().count("\n") == 100_000

# }}}


# {{{ HTML

def _cells(page: str) -> dict[str, str]:
    return dict(re.findall(r"<tr><th[^>]*>(.*?)</th><td[^>]*>(.*?)</td></tr>",
                           page))


def test_array_html_table_ir_and_escaping():
    x = ft.make_placeholder("x", (ft.make_size_param("n"), 3), F64)
    y = ft.sin(x).tagged(Note("<b>&")).with_tagged_axis(1, Note("cols"))
    page = y._repr_html_()
    cells = _cells(page)
    assert cells["shape"] == "(n, 3)" and cells["dtype"] == "float64"
    assert cells["size params"] == "n"
    assert cells["inputs"] == "x: Placeholder"
    assert cells["nodes"] == "2"
    assert cells["tags"] == html.escape("{Note(text='<b>&')}", quote=True)
    assert "1: {Note(text=&#x27;cols&#x27;)}" in cells["axis tags"]
    assert "<b>&" not in page
    assert "<details><summary>IR (3 lines, ft.pretty)</summary>" in page
    assert html.escape(ft.pretty(y), quote=True) in page


def test_html_includes_the_picture_where_to_svg_draws(monkeypatch):
    x, w, y = _dense()
    monkeypatch.setattr(visualization, "to_svg",
                        lambda expr: '<?xml version="1.0"?>\n<svg id="pic"></svg>')
    page = y._repr_html_()
    assert "<summary>DAG picture</summary><div class='ftlazy-svg'><svg " \
           "id=\"pic\"></svg></div>" in page
    assert "<?xml" not in page
    dag = ft.make_dict_of_named_arrays({"y": y})
    assert 'id="pic"' in dag._repr_html_()


@pytest.mark.parametrize("how", ["none", "missing", "import_error"])
def test_html_without_a_picture(monkeypatch, how):
    x, w, y = _dense()
    if how == "none":
        monkeypatch.setattr(visualization, "to_svg", lambda expr: None)
    elif how == "missing":
        monkeypatch.delattr(visualization, "to_svg")
    else:
        def refuse(expr):
            raise ImportError("no layout engine")
        monkeypatch.setattr(visualization, "to_svg", refuse)
    page = y._repr_html_()
    assert "DAG picture" not in page and "<svg" not in page
    assert "IR (" in page


def test_html_says_why_the_layout_engine_failed(monkeypatch):
    x, w, y = _dense()

    def fail(expr):
        raise RuntimeError("layout engine 'dot' failed (exit 1): <syntax>")
    monkeypatch.setattr(visualization, "to_svg", fail)
    page = y._repr_html_()
    assert "no picture: layout engine &#x27;dot&#x27; failed" in page
    assert "&lt;syntax&gt;" in page and "IR (" in page


def test_html_of_huge_dags_does_not_draw(monkeypatch):
    from ftlazy import display
    monkeypatch.setattr(display, "MAX_PICTURE_NODES", 4)
    drawn = []
    monkeypatch.setattr(visualization, "to_svg",
                        lambda expr: drawn.append(expr) or "<svg></svg>")
    x, w, y = _dense()
    page = y._repr_html_()
    assert drawn == [] and "too many to draw" in page and "IR (" in page


def test_loop_body_dict_and_jagged_html(monkeypatch):
    monkeypatch.setattr(visualization, "to_svg", lambda expr: None)
    x, w, _ = _dense()
    states = ft.scan(lambda h, xi: ft.tanh(w @ h + xi), x, ft.zeros(3))
    cells = _cells(states.loop._repr_html_())
    assert cells["length"] == "n" and cells["carries"] == "[float64[3]]"
    assert cells["scanned"] == "[x: Placeholder]"
    assert cells["nesting"] == "1"
    body_cells = _cells(states.loop.body._repr_html_())
    assert body_cells["outputs"] == "float64[3]"
    dag = ft.make_dict_of_named_arrays({"s": states, "x": x})
    dcells = _cells(dag._repr_html_())
    assert dcells["s"] == "float64[n, 3]" and dcells["loop nesting"] == "1"
    xs = ft.make_jagged_placeholder("xs", (3,), F64, depth=3)
    jcells = _cells(xs._repr_html_())
    assert jcells["depth"] == "3" and jcells["name"] == "xs"
    assert "jagged(values=%0" in xs._repr_html_()


def test_jagged_array_html_lengths_and_preview():
    ja = ft.JaggedArray.from_list([[np.ones((2, 2))], [np.zeros((1, 2)),
                                                       np.ones((3, 2))], []])
    page = ja._repr_html_()
    cells = _cells(page)
    assert cells["depth"] == "3" and cells["len"] == "3" and cells["nnz"] == "6"
    assert cells["lengths, level 0"] == "3 lists, min 0, mean 1, max 2"
    assert cells["lengths, level 1"] == "3 lists, min 1, mean 2, max 3"
    assert "[0] (2 rows) [[1., 1.], [1., 1.]]" in page
    assert "[1] (4 rows)" in page and "[2] (0 rows) []" in page
    many = ft.JaggedArray(np.arange(10.0), np.arange(11))
    assert "... 7 more" in many._repr_html_()


def test_ir_of_a_large_dag_is_abbreviated_in_html(monkeypatch):
    monkeypatch.setattr(visualization, "to_svg", lambda expr: None)
    y = ft.make_placeholder("x", (2,), F64)
    for _ in range(1000):
        y = y * 2.0
    page = y._repr_html_()
    assert "IR (1002 lines, ft.pretty)" in page
    assert "... 602 more lines ..." in page
    # (the first half begins with the placeholder, the second ends with return)
    assert page.count("index_lambda(") == 400 - 2

# }}}


# {{{ compiled functions

def test_compiled_function_repr_and_html(cl_queue):
    n = ft.make_size_param("n")
    x = ft.make_placeholder("x", (n, 3), F64)
    f = ft.compile(ft.make_dict_of_named_arrays({"y": ft.exp(x) * 2,
                                                 "s": ft.sum(x)}), cl_queue)
    text = repr(f)
    assert text.startswith("CompiledFunction(inputs=[x: float64[n, 3]], "
                           "outputs=[y: float64[n, 3], s: float64[]], ")
    assert re.search(r"(compiled in [\d.]+ ms|cached)\)$", text)
    page = f._repr_html_()
    cells = _cells(page)
    assert cells["inputs"] == "x: float64[n, 3]"
    for stage in ("DAG transforms", "loopy kernel creation", "scheduling",
                  "OpenCL build"):
        assert cells[stage] == "cached" or cells[stage].endswith(" ms")
    assert "<summary>plan</summary>" in page
    assert "<summary>OpenCL source</summary>" in page
    assert html.escape(f.source, quote=True) in page
    assert repr(f.program).startswith("BoundProgram(inputs=[x: float64[n, 3]]")
    assert "<summary>OpenCL source</summary>" in f.program._repr_html_()


def test_jagged_compiled_function_repr(cl_queue):
    xs = ft.make_jagged_placeholder("xs", (3,), F64, depth=2)
    w = ft.make_placeholder("w", (3, 3), F64)
    f = ft.compile(ft.map(lambda s: ft.sum(s @ w, axis=0), xs), cl_queue)
    assert repr(f).startswith("JaggedCompiledFunction(inputs=[xs: FractalTensor("
                              "depth=2, float64[3]), w: float64[3, 3]], "
                              "outputs=[float64[xs_n0, 3]], ")
    docs = ft.make_jagged_placeholder("docs", (3,), F64, depth=3)
    g = ft.compile(docs * 2.0, cl_queue)
    assert "outputs=[FractalTensor(depth=3, float64[3])]" in repr(g)
    assert "OpenCL source" in g._repr_html_()

# }}}
