# SPDX-License-Identifier: MIT
"""Pictures of a DAG as Graphviz ``dot`` source.

:func:`get_dot_graph` needs nothing beyond ftlazy; :func:`show_dot_graph`
also renders the picture when the Graphviz ``dot`` executable is on the
``PATH`` (Debian: ``apt-get install graphviz``) and otherwise just writes
the ``.dot`` file.

In the picture, each node of the DAG is a box that shows its class, shape,
dtype and its other (non-child) fields, such as a placeholder's name, an
einsum's spec or an index lambda's expression. Edges run from a child to
its user and carry the child's role (binding name, field name, position).
The body of each :class:`~ftlazy.fractal.Map` and
:class:`~ftlazy.fractal.Scan` is drawn as a dashed cluster next to the loop
node; dashed edges carry the body's outputs to the loop. The results are
drawn as rounded bold boxes: ``result`` for an array, one per name for a
:class:`~ftlazy.DictOfNamedArrays`.

.. autofunction:: get_dot_graph
.. autofunction:: show_dot_graph
"""

from __future__ import annotations

import os
import pathlib
import shutil
import subprocess
import tempfile
from collections.abc import Mapping
from typing import Any

import numpy as np

from ftlazy.array import (
    Array, DataWrapper, DictOfNamedArrays, NormalizedSlice, Placeholder,
    SizeParam)
from ftlazy.fractal import Body, BodyParam
from ftlazy.node import Node, topological_order
from ftlazy.shapes import shape_str

__all__ = ["get_dot_graph", "show_dot_graph"]

ArrayOrNames = Array | DictOfNamedArrays

#: longest rendering of one field value in a node's label
_MAX_VALUE_CHARS = 72
#: fields shown on a line of their own (or not at all) rather than generically
_SPECIAL_FIELDS = frozenset({"shape", "dtype", "tags", "axes"})
#: the formats :func:`show_dot_graph` asks ``dot`` to render
_RENDER_FORMATS = frozenset({"svg", "png", "pdf"})


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


class _DotWriter:
    def __init__(self) -> None:
        self.lines: list[str] = []
        self.nclusters = 0
        self.nnodes = 0

    def _new_id(self) -> str:
        self.nnodes += 1
        return f"n{self.nnodes - 1}"

    def emit_scope(self, roots: list[Node], indent: str,
                   param_roles: Mapping[int, str] | None = None) -> dict[Node, str]:
        """Draw the DAG below *roots* (one scope); return the dot ids."""
        ids: dict[Node, str] = {}
        order = [n for n in topological_order(roots)
                 if not isinstance(n, (DictOfNamedArrays, Body))]
        for n in order:
            ids[n] = node_id = self._new_id()
            lines = _label_lines(n)
            if param_roles is not None and isinstance(n, BodyParam):
                lines.append(f"= {param_roles.get(n.index, '?')}")
            attrs = [f"label={_dot_label(lines)}"]
            style = _node_style(n)
            if style:
                attrs.append(style)
            self.lines.append(f"{indent}{node_id} [{', '.join(attrs)}];")
        for n in order:
            for child, role in _child_edges(n):
                self.lines.append(f"{indent}{ids[child]} -> {ids[n]} "
                                  f"[label={_dot_quote(role)}];")
            for name in n._body_fields:
                self.emit_body(n, name, getattr(n, name), ids[n], indent)
        return ids

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
        ids = self.emit_scope(roots, inner, param_roles)
        self.lines.append(f"{indent}}}")
        out_role = "new carry" if hasattr(loop, "num_carries") else "out"
        for i, out in enumerate(body.outputs):
            self.lines.append(
                f"{indent}{ids[out]} -> {loop_id} "
                f"[style=dashed, label={_dot_quote(f'{out_role} {i}')}];")


def get_dot_graph(result: ArrayOrNames) -> str:
    """Graphviz ``dot`` source for the DAG of *result* (an array or a
    :class:`~ftlazy.DictOfNamedArrays`).

    Every node of the DAG is drawn once per scope (the outer DAG, and each
    loop body); see the module documentation for what the picture shows.
    The output is deterministic: the same DAG gives the same string.
    """
    if not isinstance(result, (Array, DictOfNamedArrays)):
        raise TypeError(f"get_dot_graph expects an Array or a DictOfNamedArrays, "
                        f"got {type(result).__name__} {result!r}")
    writer = _DotWriter()
    writer.lines += [
        "digraph ftlazy {",
        '  node [shape=box, fontname="monospace", fontsize=10];',
        '  edge [fontname="monospace", fontsize=9];',
    ]
    ids = writer.emit_scope([result], "  ")
    outputs = (list(result.items()) if isinstance(result, DictOfNamedArrays)
               else [("result", result)])
    for i, (name, array) in enumerate(outputs):
        out_id = f"out{i}"
        writer.lines.append(f"  {out_id} [label={_dot_quote(name)}, "
                            'style="rounded,bold"];')
        writer.lines.append(f"  {ids[array]} -> {out_id};")
    writer.lines.append("}")
    return "\n".join(writer.lines) + "\n"


def show_dot_graph(result: ArrayOrNames,
                   output_to: str | os.PathLike | None = None) -> str:
    """Write the picture of *result*'s DAG to a file and return its path.

    :arg output_to: where to write. A path ending in ``.dot`` or ``.gv``
        gets the DOT source only. A path ending in ``.svg``, ``.png`` or
        ``.pdf`` gets the DOT source beside it (same name, suffix ``.dot``)
        and, if Graphviz's ``dot`` executable is found on the ``PATH``, the
        rendered picture. *None* (the default) means ``graph.svg`` in a new
        temporary directory.

    Without Graphviz installed this does not fail: it writes the ``.dot``
    file, prints where it is and how to render it, and returns its path.
    A one-line message says which file was written. If ``dot`` is installed
    but fails, :class:`RuntimeError` carries its error output.
    """
    source = get_dot_graph(result)
    if output_to is None:
        output_to = pathlib.Path(tempfile.mkdtemp(prefix="ftlazy-dot-")) / "graph.svg"
    path = pathlib.Path(output_to)
    fmt = path.suffix.lower().lstrip(".")
    if fmt not in _RENDER_FORMATS | {"dot", "gv"}:
        raise ValueError(f"show_dot_graph: cannot write {str(path)!r}: the name "
                         "must end in .dot, .gv, .svg, .png or .pdf")
    path.parent.mkdir(parents=True, exist_ok=True)
    if fmt in ("dot", "gv"):
        path.write_text(source, encoding="utf-8")
        print(f"ftlazy: wrote DOT source to {path}")
        return str(path)
    dot_path = path.with_suffix(".dot")
    dot_path.write_text(source, encoding="utf-8")
    dot = shutil.which("dot")
    if dot is None:
        print(f"ftlazy: Graphviz 'dot' not found; wrote DOT source to {dot_path} "
              f"(render it with: dot -T{fmt} {dot_path} -o {path})")
        return str(dot_path)
    proc = subprocess.run([dot, f"-T{fmt}", str(dot_path), "-o", str(path)],
                          capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"Graphviz 'dot' failed on {dot_path} "
                           f"(exit {proc.returncode}): {proc.stderr.strip()}")
    print(f"ftlazy: wrote {path}")
    return str(path)

# vim: foldmethod=marker
