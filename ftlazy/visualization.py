# SPDX-License-Identifier: MIT
"""Pictures of a DAG: Graphviz ``dot`` source, SVG, inline in notebooks.

:func:`get_dot_graph` needs nothing beyond ftlazy. :func:`to_svg` and
:func:`show_dot_graph` lay the picture out with a *layout engine*: the
``graphviz-pure`` executable that ``pip install ftlazy[viz]`` brings (a
self-contained port of Graphviz's ``dot``, no system package needed), or
else Graphviz's own ``dot`` if it is on the ``PATH``. In Jupyter,
:func:`show_dot_graph` shows the SVG inline. Why ``graphviz-pure`` was
chosen over the alternatives is written down in
``doc/notes/visualization_engines.rst``.

In the picture, each node of the DAG is a box that shows its class, shape,
dtype and its other (non-child) fields, such as a placeholder's name, an
einsum's spec or an index lambda's expression. Edges run from a child to
its user and carry the child's role (binding name, field name, position).
The body of each :class:`~ftlazy.fractal.Map` and
:class:`~ftlazy.fractal.Scan` is drawn as a dashed cluster next to the loop
node; dashed edges carry the body's outputs to the loop. The results are
drawn as rounded bold boxes: ``result`` for an array, one per name for a
:class:`~ftlazy.DictOfNamedArrays`.

Large DAGs are *collapsed*: each run of elementwise nodes (a chain of
index lambdas, each the only user of the one before; see
:mod:`ftlazy.visualization_collapse`) is drawn as one box saying how many
operations it folds ("4000 elementwise ops") and the first and last
expression. :func:`to_svg` and :func:`show_dot_graph` collapse by default
when the DAG has more than :data:`COLLAPSE_THRESHOLD` nodes; every function
here takes ``collapse=True`` or ``False`` to choose.

.. autodata:: COLLAPSE_THRESHOLD
.. autofunction:: get_dot_graph
.. autofunction:: to_svg
.. autofunction:: show_dot_graph
"""

from __future__ import annotations

import os
import pathlib
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from ftlazy.array import (
    Array, DataWrapper, DictOfNamedArrays, NormalizedSlice, Placeholder,
    SizeParam)
from ftlazy.fractal import Body, BodyParam
from ftlazy.fractal_tensor import Jagged
from ftlazy.node import Node, topological_order
from ftlazy.shapes import shape_str
from ftlazy.visualization_collapse import elementwise_runs

__all__ = ["COLLAPSE_THRESHOLD", "get_dot_graph", "show_dot_graph", "to_svg"]

ArrayOrNames = Array | DictOfNamedArrays | Jagged

#: longest rendering of one field value in a node's label
_MAX_VALUE_CHARS = 72
#: fields shown on a line of their own (or not at all) rather than generically
_SPECIAL_FIELDS = frozenset({"shape", "dtype", "tags", "axes"})
#: the formats :func:`show_dot_graph` asks ``dot`` to render
_RENDER_FORMATS = frozenset({"svg", "png", "pdf"})
#: the formats the ``graphviz-pure`` engine writes (it has no PDF backend)
_PURE_FORMATS = frozenset({"svg", "png"})
#: :func:`to_svg` and :func:`show_dot_graph` collapse a DAG of more nodes
#: than this (as counted by :func:`ftlazy.analysis.get_num_nodes`) unless
#: told otherwise
COLLAPSE_THRESHOLD = 200
#: what to install for pictures, in every message that lacks an engine
_INSTALL_HINT = "pip install ftlazy[viz]"


# {{{ labels

def _dot_quote(text: str) -> str:
    """*text* as a DOT double-quoted string (backslashes and quotes escaped,
    line breaks flattened)."""
    text = text.replace("\\", "\\\\").replace('"', '\\"')
    return '"' + text.replace("\r", " ").replace("\n", " ") + '"'


def _dot_label(lines: list[str]) -> str:
    """A left-justified multi-line DOT label: each line ends in ``\\l``."""
    escaped = [line.replace("\\", "\\\\").replace('"', '\\"') for line in lines]
    return '"' + "".join(line + "\\l" for line in escaped) + '"'


def _shorten(text: str) -> str:
    text = " ".join(text.split())
    if len(text) > _MAX_VALUE_CHARS:
        return text[:_MAX_VALUE_CHARS - 3] + "..."
    return text


def _format_value(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, NormalizedSlice):
        return f"slice(start={value.start}, step={value.step}, len={value.length})"
    if isinstance(value, tuple):
        inner = ", ".join(_format_value(v) for v in value)
        return f"({inner},)" if len(value) == 1 else f"({inner})"
    if isinstance(value, np.generic):
        # a constant expression (zeros' 0.0): numpy scalars have a shape too
        return str(value)
    if isinstance(value, np.ndarray) or (
            hasattr(value, "shape") and hasattr(value, "dtype")):
        # data is summarized, never printed: pictures stay small and stable
        return f"<{type(value).__name__}>"
    return str(value)


def _label_lines(n: Node) -> list[str]:
    lines = [type(n).__name__]
    if isinstance(n, Array):
        lines.append(f"shape: {shape_str(n.shape)} dtype: {n.dtype}")
    elif n._body_fields and hasattr(n, "length"):
        lines.append(f"length: {n.length}")
    skip = set(n._child_fields) | set(n._body_fields) | _SPECIAL_FIELDS
    for name in n._init_fields:
        if name in skip:
            continue
        value = getattr(n, name)
        if isinstance(n, DataWrapper) and name == "name" and value is None:
            continue
        lines.append(f"{name}: {_format_value(value)}")
    tags = getattr(n, "tags", frozenset())
    if tags:
        lines.append("tags: " + ", ".join(sorted(repr(t) for t in tags)))
    for iaxis, axis in enumerate(getattr(n, "axes", ())):
        if axis.tags:
            lines.append(f"axis {iaxis} tags: "
                         + ", ".join(sorted(repr(t) for t in axis.tags)))
    return [_shorten(line) for line in lines]


def _node_style(n: Node) -> str:
    if isinstance(n, (Placeholder, SizeParam, DataWrapper)):
        return 'style=filled, fillcolor="#dddddd"'
    if isinstance(n, BodyParam):
        return 'style=filled, fillcolor="#e4e4f8"'
    if n._body_fields:
        return 'shape=box3d'
    return ""


def _input_roles(loop: Node) -> list[str] | None:
    """Names for the inputs of a loop node, position by position."""
    inputs = getattr(loop, "inputs", None)
    if inputs is None:
        return None
    if hasattr(loop, "num_mapped"):
        nm = loop.num_mapped
        return [f"mapped[{i}]" if i < nm else f"captured[{i - nm}]"
                for i in range(len(inputs))]
    if hasattr(loop, "num_carries") and hasattr(loop, "num_scanned"):
        nc, ns = loop.num_carries, loop.num_scanned
        return [f"init[{i}]" if i < nc
                else f"scanned[{i - nc}]" if i < nc + ns
                else f"captured[{i - nc - ns}]" for i in range(len(inputs))]
    return None


def _param_role(role: str) -> str:
    if role.startswith(("mapped", "scanned")):
        return f"element of {role}"
    if role.startswith("init"):
        return "carry " + role[len("init["):-1]
    return role


def _child_edges(n: Node) -> list[tuple[Node, str]]:
    """``(child, role)`` for each child of *n*, in declaration order."""
    edges: list[tuple[Node, str]] = []
    roles = _input_roles(n) if n._body_fields else None
    for name in n._child_fields:
        value = getattr(n, name)
        if isinstance(value, Node):
            edges.append((value, name))
        elif isinstance(value, Mapping):
            edges.extend((v, str(k)) for k, v in value.items())
        elif roles is not None and name == "inputs":
            edges.extend(zip(value, roles))
        else:
            edges.extend((v, f"{name}[{i}]") for i, v in enumerate(value))
    return edges

# }}}


def _collapsed_label(run: list[Node]) -> list[str]:
    """The label of the box that stands for a run of elementwise nodes."""
    last = run[-1]
    return [_shorten(line) for line in (
        f"{len(run)} elementwise ops",
        f"shape: {shape_str(last.shape)} dtype: {last.dtype}",
        f"first: {_format_value(run[0].expr)}",
        f"last: {_format_value(last.expr)}")]


class _DotWriter:
    def __init__(self, collapse: bool) -> None:
        self.collapse = collapse
        self.lines: list[str] = []
        self.nclusters = 0
        self.nnodes = 0

    def _new_id(self) -> str:
        self.nnodes += 1
        return f"n{self.nnodes - 1}"

    def _runs(self, order: list[Node], pinned: set[Node]) -> dict[Node, list[Node]]:
        """Each node of a collapsed run, mapped to its run."""
        if not self.collapse:
            return {}
        runs = elementwise_runs(
            order, lambda n: (c for c, _ in _child_edges(n)), pinned)
        return {n: run for run in runs for n in run}

    def emit_scope(self, roots: list[Node], pinned: set[Node], indent: str,
                   param_roles: Mapping[int, str] | None = None) -> dict[Node, str]:
        """Draw the DAG below *roots* (one scope); return the dot ids (the
        nodes of a collapsed run share the id of its box). *pinned* nodes
        are drawn on their own even when collapsing."""
        ids: dict[Node, str] = {}
        order = [n for n in topological_order(roots)
                 if not isinstance(n, (DictOfNamedArrays, Body))]
        run_of = self._runs(order, pinned)
        for n in order:
            run = run_of.get(n)
            if run is not None and n is not run[-1]:
                continue
            ids[n] = node_id = self._new_id()
            if run is not None:
                ids.update((m, node_id) for m in run)
                attrs = [f"label={_dot_label(_collapsed_label(run))}",
                         'style="filled,bold", fillcolor="#fff2cc"']
            else:
                lines = _label_lines(n)
                if param_roles is not None and isinstance(n, BodyParam):
                    lines.append(f"= {param_roles.get(n.index, '?')}")
                attrs = [f"label={_dot_label(lines)}"]
                style = _node_style(n)
                if style:
                    attrs.append(style)
            self.lines.append(f"{indent}{node_id} [{', '.join(attrs)}];")
        for n in order:
            run = run_of.get(n)
            if run is not None:
                if n is run[-1]:
                    self._emit_run_edges(run, ids, indent)
                continue
            for child, role in _child_edges(n):
                self.lines.append(f"{indent}{ids[child]} -> {ids[n]} "
                                  f"[label={_dot_quote(role)}];")
            for name in n._body_fields:
                self.emit_body(n, name, getattr(n, name), ids[n], indent)
        return ids

    def _emit_run_edges(self, run: list[Node], ids: Mapping[Node, str],
                        indent: str) -> None:
        """One edge into a run's box per input from outside the run, with
        its role, or how often the run reads it."""
        members = set(run)
        roles: dict[Node, list[str]] = {}
        for n in run:
            for child, role in _child_edges(n):
                if child not in members:
                    roles.setdefault(child, []).append(role)
        for child, child_roles in roles.items():
            label = child_roles[0] if len(child_roles) == 1 else (
                f"{len(child_roles)} uses")
            self.lines.append(f"{indent}{ids[child]} -> {ids[run[-1]]} "
                              f"[label={_dot_quote(label)}];")

    def emit_body(self, loop: Node, field: str, body: Body, loop_id: str,
                  indent: str) -> None:
        roles = _input_roles(loop) or []
        param_roles = {i: _param_role(r) for i, r in enumerate(roles)}
        cluster = f"cluster_{self.nclusters}"
        self.nclusters += 1
        self.lines.append(f"{indent}subgraph {cluster} {{")
        inner = indent + "  "
        title = f"{type(loop).__name__} {field}"
        self.lines.append(f"{inner}label={_dot_quote(title)};")
        self.lines.append(f"{inner}style=dashed;")
        roots = list(body.outputs) + list(body.params)
        ids = self.emit_scope(roots, set(body.outputs), inner, param_roles)
        self.lines.append(f"{indent}}}")
        out_role = "new carry" if hasattr(loop, "num_carries") else "out"
        for i, out in enumerate(body.outputs):
            self.lines.append(
                f"{indent}{ids[out]} -> {loop_id} "
                f"[style=dashed, label={_dot_quote(f'{out_role} {i}')}];")


def _check_result(result: Any, caller: str) -> None:
    if not isinstance(result, (Array, DictOfNamedArrays, Jagged)):
        raise TypeError(f"{caller} expects an Array, a DictOfNamedArrays or "
                        f"a FractalTensor (Jagged), got {type(result).__name__} "
                        f"{result!r}")


def _named_outputs(result: ArrayOrNames) -> list[tuple[str, Array]]:
    """The result boxes of the picture: one per name of a
    :class:`~ftlazy.DictOfNamedArrays`, a FractalTensor's values and each
    level's offsets, else ``result``."""
    if isinstance(result, DictOfNamedArrays):
        return list(result.items())
    if isinstance(result, Jagged):
        return [("values", result.values)] + [
            (f"offsets {k}", o) for k, o in enumerate(result.offsets)]
    return [("result", result)]


def _check_collapse(collapse: Any, caller: str) -> None:
    if collapse is not None and not isinstance(collapse, bool):
        raise TypeError(f"{caller}: collapse must be True, False or None, "
                        f"got {collapse!r}")


def _should_collapse(result: ArrayOrNames, collapse: bool | None) -> bool:
    if collapse is not None:
        return collapse
    # (the count a node's HTML summary already made, kept per node)
    from ftlazy.display import count_nodes
    return count_nodes(result) > COLLAPSE_THRESHOLD


def get_dot_graph(result: ArrayOrNames, collapse: bool | None = False) -> str:
    """Graphviz ``dot`` source for the DAG of *result* (an array or a
    :class:`~ftlazy.DictOfNamedArrays`, or a FractalTensor, whose values
    and offsets are drawn as its results).

    Every node of the DAG is drawn once per scope (the outer DAG, and each
    loop body); see the module documentation for what the picture shows.
    The output is deterministic: the same DAG gives the same string.

    :arg collapse: draw each run of elementwise nodes as one box with their
        count (see the module documentation). *None* collapses when the DAG
        has more than :data:`COLLAPSE_THRESHOLD` nodes.
    """
    _check_result(result, "get_dot_graph")
    _check_collapse(collapse, "get_dot_graph")
    writer = _DotWriter(_should_collapse(result, collapse))
    writer.lines += [
        "digraph ftlazy {",
        # Courier: a font Graphviz knows the widths of without fontconfig
        # (graphviz-pure has no font files), so labels fit their boxes
        '  node [shape=box, fontname="Courier", fontsize=10];',
        '  edge [fontname="Courier", fontsize=9];',
    ]
    outputs = _named_outputs(result)
    roots = [result] if not isinstance(result, Jagged) else [
        array for _, array in outputs]
    ids = writer.emit_scope(roots, {array for _, array in outputs}, "  ")
    for i, (name, array) in enumerate(outputs):
        out_id = f"out{i}"
        writer.lines.append(f"  {out_id} [label={_dot_quote(name)}, "
                            'style="rounded,bold"];')
        writer.lines.append(f"  {ids[array]} -> {out_id};")
    writer.lines.append("}")
    return "\n".join(writer.lines) + "\n"


# {{{ layout engines

def _find_engine(fmt: str) -> str | None:
    """The executable that lays out and renders DOT into *fmt*: the
    ``graphviz-pure`` of ``ftlazy[viz]`` (looked up in this Python's
    scripts directories first, where pip puts it even when the environment
    is not activated or the user's scripts directory is not on the
    ``PATH``), else Graphviz's ``dot``; *None* if neither is installed (or
    the only one cannot write *fmt*)."""
    search = os.pathsep.join(
        [sysconfig.get_path("scripts"),
         sysconfig.get_path("scripts", sysconfig.get_preferred_scheme("user")),
         os.path.dirname(sys.executable), os.environ.get("PATH", os.defpath)])
    if fmt in _PURE_FORMATS:
        pure = shutil.which("graphviz-pure", path=search)
        if pure is not None:
            return pure
    return shutil.which("dot")


def _run_engine(engine: str, source: str, fmt: str,
                output: pathlib.Path | None = None) -> bytes:
    """Render *source* with *engine* into *fmt*: the bytes, or written to
    *output* (then the bytes are empty)."""
    command = [engine, f"-T{fmt}"]
    if output is not None:
        command += ["-o", str(output)]
    proc = subprocess.run(command, input=source.encode("utf-8"),
                          capture_output=True, check=False)
    if proc.returncode != 0:
        raise RuntimeError(
            f"layout engine {engine!r} failed (exit {proc.returncode}): "
            f"{proc.stderr.decode('utf-8', 'replace').strip()}")
    return proc.stdout

# }}}


def to_svg(result: ArrayOrNames, collapse: bool | None = None) -> str | None:
    """The picture of *result*'s DAG as SVG text, or *None* when no layout
    engine is installed (``pip install ftlazy[viz]`` brings one).

    :arg collapse: fold runs of elementwise nodes into one box each; *None*
        (the default) does so when the DAG has more than
        :data:`COLLAPSE_THRESHOLD` nodes.

    Nodes are ``<g class="node">`` groups and loop bodies
    ``<g class="cluster">`` groups, as Graphviz writes them.
    :class:`RuntimeError` carries the engine's error output if it fails.
    """
    _check_result(result, "to_svg")
    _check_collapse(collapse, "to_svg")
    engine = _find_engine("svg")
    if engine is None:
        return None
    source = get_dot_graph(result, collapse=_should_collapse(result, collapse))
    return _run_engine(engine, source, "svg").decode("utf-8")


def _notebook_display() -> Callable[[str], None] | None:
    """Where IPython runs with a kernel (Jupyter, nbclient), a function
    that displays SVG text inline; else *None*. IPython is not imported
    here: in a notebook it already is."""
    ipython = sys.modules.get("IPython")
    get_ipython = getattr(ipython, "get_ipython", None)
    shell = get_ipython() if get_ipython is not None else None
    if shell is None or getattr(shell, "kernel", None) is None:
        return None
    from IPython.display import SVG, display

    return lambda svg: display(SVG(data=svg))


def show_dot_graph(result: ArrayOrNames,
                   output_to: str | os.PathLike | None = None,
                   collapse: bool | None = None) -> str | None:
    """Show the picture of *result*'s DAG: inline in a notebook, else in a
    file whose path is returned.

    In Jupyter (IPython with a kernel) and with *output_to* left out, the
    SVG is displayed in the cell's output and *None* is returned. Elsewhere,
    or when *output_to* is given, the picture is written to a file:

    :arg output_to: where to write. A path ending in ``.dot`` or ``.gv``
        gets the DOT source only. A path ending in ``.svg``, ``.png`` or
        ``.pdf`` gets the DOT source beside it (same name, suffix ``.dot``)
        and, if a layout engine is installed, the rendered picture (PDF
        needs Graphviz's own ``dot``). *None* (the default) means
        ``graph.svg`` in a new temporary directory.
    :arg collapse: as for :func:`to_svg`.

    Without a layout engine this does not fail: it writes the ``.dot``
    file (in a notebook, nothing), prints that ``pip install ftlazy[viz]``
    brings one, and returns the ``.dot`` file's path. A one-line message
    says which file was written. If the engine fails,
    :class:`RuntimeError` carries its error output.
    """
    _check_result(result, "show_dot_graph")
    _check_collapse(collapse, "show_dot_graph")
    if output_to is not None:
        path = pathlib.Path(output_to)
        fmt = path.suffix.lower().lstrip(".")
        if fmt not in _RENDER_FORMATS | {"dot", "gv"}:
            raise ValueError(f"show_dot_graph: cannot write {str(path)!r}: the "
                             "name must end in .dot, .gv, .svg, .png or .pdf")
    source = get_dot_graph(result, collapse=_should_collapse(result, collapse))
    if output_to is None:
        display = _notebook_display()
        if display is not None:
            engine = _find_engine("svg")
            if engine is None:
                print("ftlazy: no layout engine to draw the DAG with: "
                      f"{_INSTALL_HINT} (or install Graphviz's 'dot'); "
                      "ft.get_dot_graph gives the DOT source")
            else:
                display(_run_engine(engine, source, "svg").decode("utf-8"))
            return None
        path = pathlib.Path(tempfile.mkdtemp(prefix="ftlazy-dot-")) / "graph.svg"
        fmt = "svg"
    path.parent.mkdir(parents=True, exist_ok=True)
    if fmt in ("dot", "gv"):
        path.write_text(source, encoding="utf-8")
        print(f"ftlazy: wrote DOT source to {path}")
        return str(path)
    dot_path = path.with_suffix(".dot")
    dot_path.write_text(source, encoding="utf-8")
    engine = _find_engine(fmt)
    if engine is None:
        if fmt == "pdf":
            how = ("install Graphviz (graphviz-pure writes no PDF), then run: "
                   f"dot -Tpdf {dot_path} -o {path}")
        else:
            how = (f"{_INSTALL_HINT}, then run: "
                   f"graphviz-pure -T{fmt} {dot_path} -o {path}")
        print(f"ftlazy: no layout engine found; wrote DOT source to {dot_path} "
              f"(to render {path.name}: {how})")
        return str(dot_path)
    _run_engine(engine, source, fmt, output=path)
    print(f"ftlazy: wrote {path}")
    return str(path)

# vim: foldmethod=marker
