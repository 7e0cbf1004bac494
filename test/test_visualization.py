# SPDX-License-Identifier: MIT
"""ftlazy.visualization: DOT source and rendering."""

from __future__ import annotations

import gc
import re
import shutil
import subprocess

import numpy as np
import pymbolic.primitives as prim
import pytest
from pytools.tag import Tag, tag_dataclass

import ftlazy as ft
from ftlazy import visualization
from ftlazy.analysis import get_num_nodes
from ftlazy.array import Einsum, IndexLambda

F64 = np.float64
NODE_LINE = re.compile(r'^\s*(n\d+) \[label="((?:[^"\\]|\\.)*)"(?:, [^\]]*)?\];$')
EDGE_LINE = re.compile(r'^\s*(\w+) -> (\w+)(?: \[(.*)\])?;$')


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


def test_deep_chain():
    y = ft.make_placeholder("x", (3,), F64)
    for _ in range(20_000):
        y = _add(y)
    dot = ft.get_dot_graph(y)
    assert dot.count("IndexLambda") == 20_000


def test_rejects_non_arrays():
    with pytest.raises(TypeError, match="get_dot_graph expects an Array"):
        ft.get_dot_graph(np.ones(3))


# {{{ show_dot_graph

def test_show_without_graphviz_writes_dot(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(visualization.shutil, "which", lambda name: None)
    y = _map_graph()
    result = ft.show_dot_graph(y, tmp_path / "pic.svg")
    assert result == str(tmp_path / "pic.dot")
    assert (tmp_path / "pic.dot").read_text() == ft.get_dot_graph(y)
    assert not (tmp_path / "pic.svg").exists()
    assert "'dot' not found" in capsys.readouterr().out


def test_show_default_location(monkeypatch):
    monkeypatch.setattr(visualization.shutil, "which", lambda name: None)
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


@pytest.mark.skipif(shutil.which("dot") is None,
                    reason="Graphviz 'dot' is not installed")
def test_show_renders_with_graphviz(tmp_path):
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
    # and the DOT source is accepted without warnings
    proc = subprocess.run(["dot", "-Tsvg", str(tmp_path / "pic.dot")],
                          capture_output=True, text=True, check=True)
    assert proc.stderr == ""

# }}}

# vim: foldmethod=marker
