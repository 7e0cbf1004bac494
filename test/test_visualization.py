# SPDX-License-Identifier: MIT
"""ftlazy.visualization: DOT source and rendering."""

from __future__ import annotations

import gc
import pathlib
import re
import subprocess
import sys
import time
import types

import numpy as np
import pymbolic.primitives as prim
import pytest
from pytools.tag import Tag, tag_dataclass

import ftlazy as ft
from ftlazy import visualization
from ftlazy.analysis import get_num_nodes
from ftlazy.array import Einsum, IndexLambda
from ftlazy.visualization_collapse import is_elementwise

F64 = np.float64
NODE_LINE = re.compile(r'^\s*(n\d+) \[label="((?:[^"\\]|\\.)*)"(?:, [^\]]*)?\];$')
EDGE_LINE = re.compile(r'^\s*(\w+) -> (\w+)(?: \[(.*)\])?;$')
ROOT = pathlib.Path(__file__).resolve().parent.parent
README_PICTURE = ROOT / "doc" / "_static" / "demo_dag.svg"
needs_engine = pytest.mark.skipif(
    visualization._find_engine("svg") is None,
    reason="no layout engine: pip install ftlazy[viz]")


@tag_dataclass
class Note(Tag):
    text: str


def _add(*arrays):
    names = [f"_in{i}" for i in range(len(arrays))]
    expr = prim.Sum(tuple(prim.Subscript(prim.Variable(n), (prim.Variable("_0"),))
                          for n in names))
    return IndexLambda(expr, arrays[0].shape, arrays[0].dtype,
                       dict(zip(names, arrays)))


def _matvec(w, v):
    return Einsum("ij,j->i", (w, v))


def _svg_boxes(svg: str) -> int:
    """The number of node boxes in an SVG that Graphviz drew."""
    return len(re.findall(r'<g id="node\d+" class="node">', svg))


def _parse(dot: str):
    """Node labels (unescaped, lines split) and edges of our DOT output; fails
    on a line that is neither a node, an edge nor known structure."""
    nodes, edges = {}, []
    for line in dot.splitlines()[3:-1]:
        if m := NODE_LINE.match(line):
            text = re.sub(r"\\(.)", lambda c: "\n" if c[1] == "l" else c[1], m[2])
            nodes[m[1]] = text.rstrip("\n").split("\n")
        elif m := EDGE_LINE.match(line):
            label = re.search(r'label="((?:[^"\\]|\\.)*)"', m[3] or "")
            edges.append((m[1], m[2], label[1] if label else None))
        else:
            assert re.match(r'^\s*(subgraph cluster_\d+ \{|\}|label=".*";|'
                            r'style=dashed;|out\d+ \[label=".*", '
                            r'style="rounded,bold"\];)$', line), line
    return nodes, edges


def _map_graph():
    x = ft.make_placeholder("x", (5, 3), F64)
    w = ft.make_placeholder("w", (3, 3), F64)
    return ft.map(lambda xi: _add(_matvec(w, xi), xi), x)


def test_one_node_per_dag_node_with_labels_and_edges():
    x = ft.make_placeholder("x", (3,), F64)
    w = ft.make_data_wrapper(np.eye(3), name="w")
    y = _add(x, _matvec(w, x))
    dot = ft.get_dot_graph(y)
    assert dot.startswith("digraph ftlazy {\n") and dot.endswith("}\n")
    nodes, edges = _parse(dot)
    assert len(nodes) == get_num_nodes(y) == 4
    by_label = {lines[0] + (lines[2] if len(lines) > 2 else ""): node_id
                for node_id, lines in nodes.items()}
    px = by_label["Placeholdername: x"]
    assert nodes[px][1] == "shape: (3,) dtype: float64"
    ein = by_label["Einsumspec: ij,j->i"]
    dw = by_label["DataWrapperdata: <ndarray>"]
    assert nodes[dw][3] == "name: w"
    lam = next(i for i, lines in nodes.items() if lines[0] == "IndexLambda")
    assert nodes[lam][2] == "expr: _in0[_0] + _in1[_0]"
    assert set(edges) >= {(px, lam, "_in0"), (ein, lam, "_in1"),
                          (dw, ein, "args[0]"), (px, ein, "args[1]")}
    assert (lam, "out0", None) in edges


def test_dict_of_named_arrays_outputs_shown():
    x = ft.make_placeholder("x", (3,), F64)
    d = ft.make_dict_of_named_arrays({"first": _add(x), "second": x})
    dot = ft.get_dot_graph(d)
    assert 'out0 [label="first", style="rounded,bold"];' in dot
    assert 'out1 [label="second", style="rounded,bold"];' in dot
    nodes, _ = _parse(dot)
    assert len(nodes) == 2
    assert "DictOfNamedArrays" not in dot


def test_map_body_is_a_cluster():
    y = _map_graph()
    dot = ft.get_dot_graph(y)
    nodes, edges = _parse(dot)
    assert len(nodes) == get_num_nodes(y)
    lines = dot.splitlines()
    start = lines.index("  subgraph cluster_0 {")
    end = lines.index("  }", start)
    cluster_ids = {m[1] for line in lines[start:end]
                   if (m := NODE_LINE.match(line))}
    assert {nodes[i][0] for i in cluster_ids} == {
        "BodyParam", "Einsum", "IndexLambda"}
    assert ["= element of mapped[0]" in nodes[i] for i in cluster_ids
            if nodes[i][0] == "BodyParam"].count(True) == 1
    assert any("= captured[0]" in nodes[i] for i in cluster_ids)
    (map_id,) = [i for i, lines in nodes.items() if lines[0] == "Map"]
    assert "length: 5" in nodes[map_id]
    roles = {label for _, dst, label in edges if dst == map_id}
    assert roles == {"mapped[0]", "captured[0]", "out 0"}


def test_nested_bodies_nest_clusters_and_scan_roles():
    x = ft.make_placeholder("x", (4, 5, 3), F64)
    w = ft.make_placeholder("w", (3, 3), F64)
    h0 = ft.make_placeholder("h0", (3,), F64)
    hs = ft.map(lambda seq: ft.scan(lambda h, v: _add(_matvec(w, h), v),
                                    seq, h0), x)
    dot = ft.get_dot_graph(hs)
    nodes, edges = _parse(dot)
    assert len(nodes) == get_num_nodes(hs)
    assert "    subgraph cluster_1 {" in dot.splitlines()  # inside cluster_0
    labels = [label for _, _, label in edges]
    for role in ("init[0]", "scanned[0]", "captured[0]", "new carry 0"):
        assert role in labels
    assert any("= carry 0" in lines for lines in nodes.values())


def test_labels_are_escaped():
    tricky = 'say "hi" \\n \\ {|<>}\nnext'
    x = ft.make_placeholder("x", (2,), F64, tags=Note(tricky))
    dot = ft.get_dot_graph(_add(x))
    nodes, _ = _parse(dot)
    (px,) = [i for i, lines in nodes.items() if lines[0] == "Placeholder"]
    expected = "tags: " + repr(Note(tricky))
    assert nodes[px][-1] == " ".join(expected.split())


def test_output_is_deterministic():
    def build():
        x = ft.make_placeholder("x", (5, 3), F64)
        d = ft.make_data_wrapper(np.ones((3, 3)))
        y = ft.map(lambda xi: _add(_matvec(d, xi), xi), x)
        return ft.make_dict_of_named_arrays({"y": y, "x": x})

    first = ft.get_dot_graph(build())
    gc.collect()
    assert ft.get_dot_graph(build()) == first


def test_long_values_are_shortened():
    x = ft.make_placeholder("x", (3,), F64)
    y = _add(*([x] * 40))
    nodes, _ = _parse(ft.get_dot_graph(y))
    expr_line = next(lines for lines in nodes.values()
                     if lines[0] == "IndexLambda")[2]
    assert expr_line.endswith("...") and len(expr_line) == 72


def test_constant_expressions_are_shown():
    # numpy scalars have a shape and a dtype, but they are not data
    nodes, _ = _parse(ft.get_dot_graph(ft.zeros(3, dtype=F64) + 2.5))
    exprs = sorted(lines[2] for lines in nodes.values())
    assert exprs == ["expr: 0.0", "expr: _in0[_0] + 2.5"]


def test_deep_chain():
    y = ft.make_placeholder("x", (3,), F64)
    for _ in range(20_000):
        y = _add(y)
    dot = ft.get_dot_graph(y)
    assert dot.count("IndexLambda") == 20_000


# {{{ show_dot_graph in files

def _no_engine(monkeypatch):
    monkeypatch.setattr(visualization, "_find_engine", lambda fmt: None)


def test_show_without_engine_writes_dot(tmp_path, monkeypatch, capsys):
    _no_engine(monkeypatch)
    y = _map_graph()
    result = ft.show_dot_graph(y, tmp_path / "pic.svg")
    assert result == str(tmp_path / "pic.dot")
    assert (tmp_path / "pic.dot").read_text() == ft.get_dot_graph(y)
    assert not (tmp_path / "pic.svg").exists()
    out = capsys.readouterr().out
    assert "no layout engine found" in out and "pip install ftlazy[viz]" in out


def test_show_default_location(monkeypatch):
    _no_engine(monkeypatch)
    path = ft.show_dot_graph(_map_graph())
    assert path.endswith("graph.dot")
    with open(path) as f:
        assert f.read().startswith("digraph")


def test_show_dot_suffix_writes_source_only(tmp_path):
    y = _map_graph()
    assert ft.show_dot_graph(y, tmp_path / "g.gv") == str(tmp_path / "g.gv")
    assert (tmp_path / "g.gv").read_text() == ft.get_dot_graph(y)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["g.gv"]


def test_show_bad_suffix(tmp_path):
    with pytest.raises(ValueError, match=r"pic\.jpeg.*must end in"):
        ft.show_dot_graph(_map_graph(), tmp_path / "pic.jpeg")


def test_pdf_needs_graphviz_dot(tmp_path, monkeypatch, capsys):
    # graphviz-pure has no PDF backend: only the system's dot may render it
    monkeypatch.setattr(visualization.shutil, "which",
                        lambda name, path=None: f"/opt/{name}")
    assert visualization._find_engine("pdf") == "/opt/dot"
    assert visualization._find_engine("svg") == "/opt/graphviz-pure"
    # without graphviz-pure, the system's dot draws everything
    monkeypatch.setattr(visualization.shutil, "which",
                        lambda name, path=None: None if name == "graphviz-pure"
                        else f"/opt/{name}")
    assert visualization._find_engine("svg") == "/opt/dot"
    monkeypatch.setattr(visualization.shutil, "which",
                        lambda name, path=None: None)
    assert ft.show_dot_graph(_map_graph(), tmp_path / "p.pdf") == str(
        tmp_path / "p.dot")
    assert "graphviz-pure writes no PDF" in capsys.readouterr().out


@needs_engine
def test_show_renders_with_engine(tmp_path):
    note = Note('a "quoted" \\ text')
    x = ft.make_placeholder("x", (4, 5, 3), F64, tags=note)
    w = ft.make_placeholder("w", (3, 3), F64)
    hs = ft.map(lambda seq: ft.scan(lambda h, v: _add(_matvec(w, h), v),
                                    seq, seq[0]), x)
    path = ft.show_dot_graph(hs, tmp_path / "pic.svg")
    svg = (tmp_path / "pic.svg").read_text()
    assert path == str(tmp_path / "pic.svg") and "<svg" in svg
    # repr doubles the backslash; the SVG shows exactly that text
    assert r"a &quot;quoted&quot; \\ text" in svg
    assert svg.count('class="node"') == get_num_nodes(hs) + 1
    # and the DOT source is accepted without warnings (no font fallback)
    engine = visualization._find_engine("svg")
    proc = subprocess.run([engine, "-Tsvg", str(tmp_path / "pic.dot")],
                          capture_output=True, text=True, check=True)
    assert proc.stderr == ""
    assert ft.show_dot_graph(hs, tmp_path / "pic.png") == str(tmp_path / "pic.png")
    assert (tmp_path / "pic.png").read_bytes().startswith(b"\x89PNG")


def test_engine_found_beside_python_without_path(monkeypatch):
    # a virtual environment used without activating it: its bin/ is not on
    # the PATH, and pip put graphviz-pure there
    if "graphviz-pure" not in str(visualization._find_engine("svg")):
        pytest.skip("graphviz-pure is not installed: pip install ftlazy[viz]")
    monkeypatch.setenv("PATH", "")
    engine = visualization._find_engine("svg")
    assert engine is not None and pathlib.Path(engine).stem == "graphviz-pure"


def test_engine_failure_is_reported(tmp_path, monkeypatch):
    monkeypatch.setattr(visualization, "_find_engine", lambda fmt: "false")
    with pytest.raises(RuntimeError, match="layout engine 'false' failed"):
        ft.to_svg(_map_graph())

# }}}


# {{{ to_svg

@needs_engine
def test_to_svg_one_box_per_node_and_result():
    x = ft.make_placeholder("x", (3,), F64)
    w = ft.make_data_wrapper(np.eye(3), name="w")
    y = _add(x, _matvec(w, x))
    svg = ft.to_svg(y)
    assert svg.lstrip().startswith("<?xml") and svg.rstrip().endswith("</svg>")
    assert _svg_boxes(svg) == get_num_nodes(y) + 1 == 5
    assert 'class="cluster"' not in svg
    assert "expr: _in0[_0] + _in1[_0]" in svg


@needs_engine
def test_to_svg_draws_bodies_as_clusters():
    y = _map_graph()
    svg = ft.to_svg(y)
    assert _svg_boxes(svg) == get_num_nodes(y) + 1
    assert svg.count('class="cluster"') == 1 and ">Map body</text>" in svg
    x = ft.make_placeholder("x", (4, 5, 3), F64)
    w = ft.make_placeholder("w", (3, 3), F64)
    hs = ft.map(lambda seq: ft.scan(lambda h, v: _add(_matvec(w, h), v),
                                    seq, seq[0]), x)
    svg = ft.to_svg(hs)
    assert svg.count('class="cluster"') == 2 and ">Scan body</text>" in svg


@needs_engine
def test_to_svg_collapses_a_2000_step_chain_quickly():
    x = ft.make_placeholder("x", (10,), "float64")
    for _ in range(2000):
        x = ft.sin(x) + 1.0
    assert get_num_nodes(x) == 4001
    start = time.perf_counter()
    svg = ft.to_svg(x)  # collapsed: more than COLLAPSE_THRESHOLD nodes
    elapsed = time.perf_counter() - start
    # the placeholder, one box for the 4000 index lambdas, the result
    assert _svg_boxes(svg) == 3
    assert "4000 elementwise ops" in svg and "first: sin(_in0[_0])" in svg
    assert elapsed < 5, elapsed
    assert "4000 elementwise ops" not in ft.to_svg(x[:5] * 2, collapse=False)


@needs_engine
def test_to_svg_small_dags_are_not_collapsed_by_default():
    x = ft.make_placeholder("x", (3,), F64)
    y = ft.exp(ft.sin(x) + 1.0)
    assert _svg_boxes(ft.to_svg(y)) == get_num_nodes(y) + 1 == 5
    assert _svg_boxes(ft.to_svg(y, collapse=True)) == 3


@needs_engine
def test_fractal_tensor_results_draw_their_values_and_offsets():
    xs = ft.make_jagged_placeholder("xs", (3,), F64, depth=2)
    w = ft.make_placeholder("w", (3, 3), F64)
    m = ft.map(lambda s: ft.tanh(s @ w), xs)
    dot = ft.get_dot_graph(m)
    assert 'label="values"' in dot and 'label="offsets 0"' in dot
    svg = ft.to_svg(m)
    assert "JaggedMap" in svg and _svg_boxes(svg) == len(_parse(dot)[0]) + 2


def test_to_svg_without_engine_is_none(monkeypatch):
    _no_engine(monkeypatch)
    assert ft.to_svg(_map_graph()) is None


@pytest.mark.parametrize("func", [ft.to_svg, ft.show_dot_graph, ft.get_dot_graph])
def test_rejects_non_arrays_and_bad_collapse(func):
    name = func.__name__
    with pytest.raises(TypeError, match=f"{name} expects an Array.*got ndarray"):
        func(np.ones(3))
    with pytest.raises(TypeError, match=f"{name} expects an Array.*got list"):
        func([ft.make_placeholder("x", (3,), F64)])
    with pytest.raises(TypeError, match=f"{name}: collapse must be.*'yes'"):
        func(_map_graph(), collapse="yes")

# }}}


# {{{ collapsing

def _box_labels(dot):
    nodes, edges = _parse(dot)
    return {i: lines for i, lines in nodes.items()}, edges


def test_collapse_folds_runs_and_keeps_other_inputs():
    x = ft.make_placeholder("x", (4,), F64)
    w = ft.make_placeholder("w", (4,), F64)
    y = x
    for _ in range(5):
        y = ft.exp(y) * w
    nodes, edges = _box_labels(ft.get_dot_graph(y, collapse=True))
    assert len(nodes) == 3
    (box,) = [i for i, lines in nodes.items() if lines[0] == "10 elementwise ops"]
    assert nodes[box][1:] == ["shape: (4,) dtype: float64", "first: exp(_in0[_0])",
                              "last: _in0[_0]*_in1[_0]"]
    px, pw = (next(i for i, lines in nodes.items() if f"name: {n}" in lines)
              for n in "xw")
    assert set(edges) == {(px, box, "_in0"), (pw, box, "5 uses"),
                          (box, "out0", None)}


def test_collapse_stops_at_shared_nodes_results_and_reductions():
    x = ft.make_placeholder("x", (4,), F64)
    a = ft.sin(ft.cos(x))          # a run of 2
    b = ft.exp(a) + a              # a has two users: b's run starts anew
    c = ft.sum(ft.tanh(b) * 2.0)   # the reduction ends the run
    d = ft.make_dict_of_named_arrays({"b": b, "c": c})
    nodes, _ = _box_labels(ft.get_dot_graph(d, collapse=True))
    heads = sorted(lines[0] for lines in nodes.values())
    # b is a result: it ends its run (exp, +) but starts none with tanh, *
    assert heads == ["2 elementwise ops", "2 elementwise ops",
                     "2 elementwise ops", "IndexLambda", "Placeholder"]
    assert any("expr: sum(" in line for lines in nodes.values() for line in lines)


def test_collapse_inside_bodies_keeps_outputs():
    x = ft.make_placeholder("x", (5, 3), F64)

    def f(xi):
        y = xi
        for _ in range(3):
            y = ft.sin(y) + 1.0
        return y, y * 2.0

    y, z = ft.map(f, x)
    dot = ft.get_dot_graph(ft.make_dict_of_named_arrays({"y": y, "z": z}),
                           collapse=True)
    nodes, edges = _box_labels(dot)
    labels = [lines[0] for lines in nodes.values()]
    # the run of six ends at the first output; the second output is its own box
    assert labels.count("6 elementwise ops") == 1
    assert sum(label == "IndexLambda" for label in labels) == 1
    assert sum(label == "out 0" or label == "out 1"
               for _, _, label in edges) == 2


def test_is_elementwise():
    x = ft.make_placeholder("x", (4, 3), F64)
    b = ft.make_placeholder("b", (3,), F64)
    c = ft.make_placeholder("c", (4, 1), F64)
    s = ft.make_placeholder("s", (), F64)
    for y in (x + b, x + c, ft.sin(x), x.T * 2.0, x + s):
        assert is_elementwise(y), y.expr
    x_vec = ft.make_placeholder("v", (3,), F64)
    transposing = IndexLambda(
        prim.Subscript(prim.Variable("_in0"), (prim.Variable("_1"),
                                                prim.Variable("_0"))),
        (3, 4), F64, {"_in0": x})
    shifted = IndexLambda(
        prim.Subscript(prim.Variable("_in0"), (prim.Variable("_0") + 1,)),
        (2,), F64, {"_in0": x_vec})
    whole = IndexLambda(prim.Variable("_in0"), (3,), F64, {"_in0": x_vec})
    for y in (ft.sum(x, axis=0), transposing, shifted, whole, x, _matvec(x, x_vec)):
        assert not is_elementwise(y), y

# }}}


# {{{ notebooks

class _FakeKernelShell:
    kernel = object()


def _fake_ipython(monkeypatch, shell):
    shown = []
    ipython = types.ModuleType("IPython")
    ipython.get_ipython = lambda: shell
    display_mod = types.ModuleType("IPython.display")
    display_mod.SVG = lambda data: ("SVG", data)
    display_mod.display = shown.append
    ipython.display = display_mod
    monkeypatch.setitem(sys.modules, "IPython", ipython)
    monkeypatch.setitem(sys.modules, "IPython.display", display_mod)
    return shown


@needs_engine
def test_show_in_notebook_displays_svg_inline(monkeypatch, capsys, tmp_path):
    shown = _fake_ipython(monkeypatch, _FakeKernelShell())
    y = _map_graph()
    assert ft.show_dot_graph(y) is None
    ((kind, svg),) = shown
    assert kind == "SVG" and _svg_boxes(svg) == get_num_nodes(y) + 1
    assert capsys.readouterr().out == ""
    # a file asked for is still written, and nothing is displayed
    assert ft.show_dot_graph(y, tmp_path / "p.svg") == str(tmp_path / "p.svg")
    assert len(shown) == 1


def test_show_in_notebook_without_engine_says_what_to_install(monkeypatch,
                                                               capsys):
    shown = _fake_ipython(monkeypatch, _FakeKernelShell())
    _no_engine(monkeypatch)
    assert ft.show_dot_graph(_map_graph()) is None
    assert shown == []
    assert "pip install ftlazy[viz]" in capsys.readouterr().out


@needs_engine
def test_show_in_a_real_kernel_displays_the_collapsed_chain():
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(
        "import ftlazy as ft\n"
        "x = ft.make_placeholder('x', (10,), 'float64')\n"
        "for _ in range(2000):\n"
        "    x = ft.sin(x) + 1.0\n"
        "ft.show_dot_graph(x)")]
    nbclient.NotebookClient(nb, timeout=120, kernel_name="python3").execute()
    # one inline picture, no Out[] value, nothing printed
    (output,) = nb.cells[0].outputs
    assert output.output_type == "display_data"
    svg = output.data["image/svg+xml"]
    assert _svg_boxes(svg) == 3 and "4000 elementwise ops" in svg


def test_show_in_terminal_ipython_writes_a_file(monkeypatch):
    # IPython without a kernel (a terminal) is not a notebook
    shown = _fake_ipython(monkeypatch, object())
    _no_engine(monkeypatch)
    assert ft.show_dot_graph(_map_graph()).endswith("graph.dot")
    assert shown == []

# }}}


# {{{ the README's picture

def _demo_scores():
    """The ``scores`` DAG of examples/demo.py, from running the script
    itself (its outputs go to a throwaway buffer)."""
    import contextlib
    import io
    import runpy
    with contextlib.redirect_stdout(io.StringIO()):
        return runpy.run_path(str(ROOT / "examples" / "demo.py"))["scores"]


def _svg_texts(svg):
    return sorted(re.findall(r"<text[^>]*>([^<]*)</text>", svg))


@needs_engine
def test_readme_picture_is_what_the_library_draws():
    committed = README_PICTURE.read_text(encoding="utf-8")
    drawn = ft.to_svg(_demo_scores())
    assert _svg_boxes(committed) == _svg_boxes(drawn) == 23
    assert committed.count('class="cluster"') == drawn.count('class="cluster"') == 2
    assert _svg_texts(committed) == _svg_texts(drawn)
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert README_PICTURE.relative_to(ROOT).as_posix() in readme

# }}}


if __name__ == "__main__":
    # regenerate the README's picture: python test/test_visualization.py
    README_PICTURE.write_text(ft.to_svg(_demo_scores()), encoding="utf-8")
    print(f"wrote {README_PICTURE}")

# vim: foldmethod=marker
