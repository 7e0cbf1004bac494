# SPDX-License-Identifier: MIT
"""ftlazy as a notebook user meets it: one notebook of every notebook
feature runs in a real Jupyter kernel (nbclient + ipykernel), and the
tests assert on the MIME bundles the kernel sends back, which is what
Jupyter would display."""

from __future__ import annotations

import os
import re

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")

#: (cell name, code): each cell's outputs are checked by name below
CELLS = [
    ("setup", """\
import numpy as np
import ftlazy as ft
n = ft.make_size_param("n")
x = ft.make_placeholder("x", (n, 3), np.float64)
w = ft.make_placeholder("w", (3, 3), np.float64)
y = ft.tanh(x @ w) + 1.0
"""),
    ("array", "y"),
    ("pretty", "print(ft.pretty(y))"),
    ("verify", "ft.verify(y)\nprint('verified')"),
    ("picture", "ft.show_dot_graph(y)"),
    ("chain", """\
c = ft.make_placeholder("c", (10,), np.float64)
for _ in range(1000):
    c = ft.sin(c) + 1.0
ft.show_dot_graph(c)
"""),
    ("map", """\
xs = ft.make_jagged_placeholder("xs", (3,), np.float64, depth=2)
m = ft.map(lambda s: ft.tanh(s @ w), xs)
m
"""),
    ("compiled", """\
ft.set_progress(True, threshold=0.0)
f = ft.compile(y)
f
"""),
    ("jagged_result", """\
g = ft.compile(m)
r = g(xs=[np.ones((2, 3)), np.ones((0, 3)), np.ones((5, 3))],
      w=np.eye(3))
r
"""),
    ("numpy_dispatch", "type(np.exp(x)).__name__, type(np.sum(x)).__name__"),
]


@pytest.fixture(scope="module")
def outputs(tmp_path_factory):
    """Cell name -> the outputs the kernel sent for it (a cell that raises
    fails its own tests only: see :func:`_ok`)."""
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(code) for _, code in CELLS]
    os.environ.setdefault("PYOPENCL_COMPILER_OUTPUT", "0")
    client = nbclient.NotebookClient(
        nb, timeout=600, kernel_name="python3", allow_errors=True,
        resources={"metadata": {"path": str(tmp_path_factory.mktemp("nb"))}})
    client.execute()
    return {name: cell.outputs for (name, _), cell in zip(CELLS, nb.cells)}


def _ok(outputs):
    """*outputs*, after checking that the cell raised nothing."""
    for out in outputs:
        if out["output_type"] == "error":
            raise AssertionError(
                f"the cell raised {out['ename']}: {out['evalue']}")
    return outputs


def _bundle(outputs, mime, kind=None):
    """The first output of *mime* (of output type *kind* if given:
    ``execute_result`` for the value of the cell's last line,
    ``display_data`` for what the cell displayed)."""
    for out in _ok(outputs):
        if mime in out.get("data", {}) and kind in (None, out["output_type"]):
            return out["data"][mime]
    raise AssertionError(f"no {mime} output among {outputs}")


def _text(outputs):
    return "".join(o.get("text", "") for o in _ok(outputs)
                   if o["output_type"] == "stream")


def _svg_nodes(svg: str) -> int:
    return len(re.findall(r'<g id="node\d+" class="node"', svg))


def test_arrays_show_an_html_summary_and_one_line_text(outputs):
    html = _bundle(outputs["array"], "text/html")
    assert "(n, 3)" in html and "float64" in html
    text = _bundle(outputs["array"], "text/plain")
    assert "\n" not in text and "(n, 3)" in text


def test_pretty_prints_numbered_statements(outputs):
    text = _text(outputs["pretty"])
    assert re.search(r"%0: float64\[n, 3\] = placeholder", text)
    assert "tanh" in text


def test_verify_passes_a_valid_dag(outputs):
    assert _text(outputs["verify"]).strip() == "verified"


def test_show_dot_graph_displays_an_svg_inline(outputs):
    svg = _bundle(outputs["picture"], "image/svg+xml")
    # x, w, the product, tanh(...) + 1 (one index lambda or two), result
    assert 5 <= _svg_nodes(svg) <= 6, svg


def test_a_long_chain_is_collapsed(outputs):
    svg = _bundle(outputs["chain"], "image/svg+xml")
    assert _svg_nodes(svg) < 10
    assert re.search(r"\b(1999|2000)\b", svg)


def test_map_nodes_show_their_loop(outputs):
    html = _bundle(outputs["map"], "text/html")
    text = _bundle(outputs["map"], "text/plain")
    assert "0x" not in text and "\n" not in text
    assert "xs" in html


def test_compiled_functions_show_source_plan_and_timings(outputs):
    html = _bundle(outputs["compiled"], "text/html", "execute_result")
    assert "<details" in html and "__kernel" in html
    assert "opencl_build" in html or "OpenCL build" in html


def test_a_slow_compile_shows_progress(outputs):
    bars = [o["data"] for o in _ok(outputs["compiled"])
            if o["output_type"] == "display_data"]
    assert any("text/html" in b and "progress" in b["text/html"]
               or "application/vnd.jupyter.widget-view+json" in b
               for b in bars), bars


def test_jagged_results_show_lengths(outputs):
    html = _bundle(outputs["jagged_result"], "text/html", "execute_result")
    assert "depth" in html.lower() and "5" in html


def test_numpy_functions_build_lazy_nodes(outputs):
    text = _bundle(outputs["numpy_dispatch"], "text/plain")
    assert "ndarray" not in text
