# SPDX-License-Identifier: MIT
"""Plain-text and HTML summaries of ftlazy objects, for ``repr`` and for
notebooks (``_repr_html_``).

The classes keep one-line ``__repr__`` and ``_repr_html_`` methods that
delegate here. A ``repr`` is one line: the node's kind, shape (with its
size parameters) and dtype, its name and tags, its direct inputs (by name
where they have one) and the number of nodes in its DAG. The HTML form is
a table of the same facts, the :func:`ftlazy.pretty` text in a collapsible
block and, where :func:`ftlazy.visualization.to_svg` can draw, a picture.
Everything user-given is HTML-escaped.

Node counts follow :func:`ftlazy.analysis.get_num_nodes` (each node once
per scope, bodies included) and are computed once per node, iteratively.

.. autofunction:: count_nodes
.. autofunction:: node_repr
.. autofunction:: node_html
.. autofunction:: jagged_array_repr
.. autofunction:: jagged_array_html
.. autofunction:: compiled_repr
.. autofunction:: compiled_html
"""

from __future__ import annotations

import html
import weakref
from typing import Any

import numpy as np

from ftlazy.node import Node, iter_children, topological_order
from ftlazy.text_ir import pretty, type_str

__all__ = ["count_nodes", "node_repr", "node_html", "jagged_array_repr",
           "jagged_array_html", "compiled_repr", "compiled_html"]

#: inputs a one-line repr lists before it abbreviates
_MAX_INPUTS = 6
#: lines of the text IR an HTML summary shows before it abbreviates
_MAX_IR_LINES = 400
#: elements a JaggedArray's preview shows
_PREVIEW_ELEMENTS = 3

_COUNTS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_DEPTHS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


# {{{ facts about nodes

def count_nodes(expr: Node) -> int:
    """The number of nodes in the DAG of *expr*, each once per scope (the
    outer DAG and each loop body), as
    :func:`~ftlazy.analysis.get_num_nodes` counts them; kept per node."""
    try:
        return _COUNTS[expr]
    except KeyError:
        pass
    from ftlazy.analysis import count_distinct_nodes
    total = _COUNTS[expr] = count_distinct_nodes(expr)
    return total


def loop_depth(expr: Node) -> int:
    """How deeply loops nest in the DAG of *expr* (0: no loop; a map whose
    body holds a scan: 2); kept per node."""
    try:
        return _DEPTHS[expr]
    except KeyError:
        pass
    deepest = 0
    pending = [([expr], 0)]
    while pending:
        roots, level = pending.pop()
        for n in topological_order(roots):
            for b in n._body_fields:
                deepest = max(deepest, level + 1)
                pending.append(([getattr(n, b)], level + 1))
    _DEPTHS[expr] = deepest
    return deepest


def _label(n: Any) -> str:
    """``x: Placeholder`` for a named node, its kind otherwise."""
    name = getattr(n, "name", None)
    kind = type(n).__name__
    return f"{name}: {kind}" if isinstance(name, str) else kind


def _direct_inputs(n: Node) -> list[Node]:
    seen: dict[int, Node] = {}
    for child in iter_children(n):
        seen.setdefault(id(child), child)
    return list(seen.values())


def _input_list(nodes: list[Any]) -> str:
    labels = [_label(c) for c in nodes[:_MAX_INPUTS]]
    if len(nodes) > _MAX_INPUTS:
        labels.append(f"... {len(nodes) - _MAX_INPUTS} more")
    return "[" + ", ".join(labels) + "]"


def _tags_str(tags: Any) -> str:
    return "{" + ", ".join(sorted(repr(t) for t in tags)) + "}"


def _size_names(shape: Any) -> list[str]:
    from ftlazy.shapes import size_param_names
    names: set[str] = set()
    for c in shape:
        if not isinstance(c, int):
            names |= size_param_names(c)
    return sorted(names)

# }}}


# {{{ one-line reprs

def node_repr(n: Node) -> str:
    """The one-line ``repr`` of any node (arrays, loops, bodies, named
    results, FractalTensors)."""
    from ftlazy.array import Array, DictOfNamedArrays
    from ftlazy.fractal import Body, Loop
    from ftlazy.fractal_tensor import Jagged
    if isinstance(n, Array):
        return _array_repr(n)
    if isinstance(n, Loop):
        return f"{type(n).__name__}({', '.join(_loop_facts(n))})"
    if isinstance(n, Body):
        return (f"Body(params=[{', '.join(type_str(p) for p in n.params)}], "
                f"outputs=[{', '.join(type_str(o) for o in n.outputs)}], "
                f"nodes={count_nodes(n)})")
    if isinstance(n, DictOfNamedArrays):
        items = ", ".join(f"{name!r}: {result_str(a)}" for name, a in n.items())
        return f"DictOfNamedArrays({{{items}}}, nodes={count_nodes(n)})"
    if isinstance(n, Jagged):
        from ftlazy.shapes import shape_str
        name = f"{n.name!r}, " if n.name else ""
        return (f"Jagged({name}depth={n.depth}, "
                f"elem_shape={shape_str(n.elem_shape)}, dtype={n.dtype}, "
                f"nodes={count_nodes(n)})")
    return f"{type(n).__name__}(nodes={count_nodes(n)})"


def _array_repr(a: Any) -> str:
    from ftlazy.shapes import shape_str
    parts = [f"shape={shape_str(a.shape)}", f"dtype={a.dtype}"]
    extra = a._repr_extra()
    text = f"{type(a).__name__}(" + ", ".join(parts) + extra
    if a.tags:
        text += f", tags={_tags_str(a.tags)}"
    try:
        inputs = _direct_inputs(a)
        count = count_nodes(a)
    except (AttributeError, TypeError):
        # a node built around its constructor (see ft.verify) still shows
        return text + ", <broken DAG>)"
    if inputs:
        text += f", inputs={_input_list(inputs)}"
    if count > 1:
        text += f", nodes={count}"
    return text + ")"


def _loop_facts(loop: Any) -> list[str]:
    """``key=value`` facts of a loop node: what it runs over, its carries,
    inputs, results and nesting."""
    facts = []
    try:
        facts.append(f"length={loop.length}")
    except Exception:  # a jagged loop with no scanned FractalTensor
        pass
    if hasattr(loop, "inits"):
        facts.append("carries=[" + ", ".join(type_str(i) for i in loop.inits)
                     + "]")
        rest = list(loop.inputs[loop.num_carries:])
    else:
        rest = list(loop.inputs)
    captured = list(getattr(loop, "captured", ()))
    word = "scanned" if hasattr(loop, "inits") else "mapped"
    if hasattr(loop, "mapped_parts"):  # over FractalTensors: one per input
        labels = [_fractal_tensor_label(d, arrays)
                  for d, arrays in loop.mapped_parts()]
        facts.append(f"{word}=[{', '.join(labels)}]")
    else:
        sequences = rest[:len(rest) - len(captured)]
        facts.append(f"{word}={_input_list(sequences)}")
    if captured:
        facts.append(f"captured={_input_list(captured)}")
    facts.append("outputs=[" + ", ".join(type_str(o) for o in loop.body.outputs)
                 + "]")
    if hasattr(loop, "keep_all"):
        facts.append(f"keep_all={loop.keep_all}")
    facts.append(f"nesting={loop_depth(loop)}")
    facts.append(f"nodes={count_nodes(loop)}")
    return facts


def _fractal_tensor_label(depth: int, arrays: tuple) -> str:
    """``xs: FractalTensor(depth=2)`` for the parts (values, then offsets)
    of a jagged loop's input; a dense input's own label."""
    from ftlazy.fractal_tensor import JaggedInputPart
    if depth == 1:
        return _label(arrays[0])
    part = next((t for t in arrays[0].tags if isinstance(t, JaggedInputPart)),
                None)
    name = f"{part.name}: " if part is not None else ""
    return f"{name}FractalTensor(depth={depth})"


def jagged_array_repr(ja: Any) -> str:
    """One line for a :class:`~ftlazy.JaggedArray`: depth, outer length,
    rows, element shape, dtype and a summary of the outer lengths."""
    return (f"JaggedArray(depth={ja.depth}, len={len(ja)}, "
            f"elem_shape={ja.elem_shape}, dtype={ja.dtype}, nnz={ja.nnz}, "
            f"lengths={_lengths_summary(ja.lengths(0))})")


def _lengths_summary(lengths: np.ndarray) -> str:
    if not len(lengths):
        return "[]"
    return (f"[min {int(lengths.min())}, mean {float(lengths.mean()):.4g}, "
            f"max {int(lengths.max())}]")


def compiled_repr(f: Any) -> str:
    """One line for a compiled function or bound program: its inputs,
    outputs and total compile time."""
    ins, outs = _compiled_signature(f)
    total = _total_time(f.timings)
    time = "cached" if total is None else f"compiled in {total * 1e3:.1f} ms"
    host = getattr(f, "host_evaluated", ())
    on_host = f", on the host: [{'; '.join(host)}]" if host else ""
    return (f"{type(f).__name__}(inputs=[{', '.join(ins)}], "
            f"outputs=[{', '.join(outs)}], {time}{on_host})")


def _total_time(timings: Any) -> float | None:
    values = [getattr(timings, k) for k in _STAGES]
    if all(v is None for v in values):
        return None
    return sum(v for v in values if v is not None)


_STAGES = {"dag_transforms": "DAG transforms",
           "kernel_creation": "loopy kernel creation",
           "scheduling": "scheduling", "opencl_build": "OpenCL build"}


def _compiled_signature(f: Any) -> tuple[list[str], list[str]]:
    """``name: type`` of the user's inputs and of the results of a
    :class:`~ftlazy.target.loopy.program.CompiledFunction`, a bound program
    or a jagged compiled function."""
    result = getattr(f, "result", None)
    if result is not None:  # a FractalTensor program: its user's DAG
        return _inputs_of(result), _outputs_of(result)
    canon = f.canon if hasattr(f, "canon") else f.program.canon
    renames = {c: u for u, c in canon.size_names.items()}
    ins = [f"{n.name}: {_user_type(n, renames)}" for n in canon.user_inputs
           if getattr(n, "name", None)]
    outs = [(f"{name}: " if name is not None else "")
            + _user_type(a, renames) for name, a in canon.outputs.items()]
    return ins, outs


def _user_type(a: Any, renames: dict[str, str]) -> str:
    """``type_str`` with canonical size names given back their users'."""
    import pymbolic.primitives as prim

    from ftlazy.scalar_expr import substitute
    mapping = {c: prim.Variable(u) for c, u in renames.items()}
    shape = [c if isinstance(c, int) else substitute(c, mapping)
             for c in a.shape]
    return f"{a.dtype}[{', '.join(str(c) for c in shape)}]"


def _inputs_of(result: Any) -> list[str]:
    from ftlazy.array import DataWrapper, DictOfNamedArrays
    from ftlazy.fractal_tensor import JaggedInputPart
    from ftlazy.target.binding import collect_inputs
    roots = (list(result.values()) if isinstance(result, DictOfNamedArrays)
             else [result])
    found: dict[str, str] = {}
    for n in collect_inputs(roots):
        part = next((t for t in n.tags if isinstance(t, JaggedInputPart)), None)
        if part is not None:
            found.setdefault(part.name, f"{part.name}: FractalTensor(depth="
                             f"{part.depth}, {part.dtype}{list(part.elem_shape)})")
        elif getattr(n, "name", None) and not isinstance(n, DataWrapper):
            found.setdefault(n.name, f"{n.name}: {type_str(n)}")
    return list(found.values())


def result_str(a: Any) -> str:
    """A result's type: ``float64[n, 3]``, or ``FractalTensor(depth=2,
    float64[3])``."""
    from ftlazy.fractal_tensor import Jagged
    if isinstance(a, Jagged):
        return f"FractalTensor(depth={a.depth}, {a.dtype}{list(a.elem_shape)})"
    return type_str(a)


def _outputs_of(result: Any) -> list[str]:
    from ftlazy.array import DictOfNamedArrays
    if isinstance(result, DictOfNamedArrays):
        return [f"{name}: {result_str(a)}" for name, a in result.items()]
    return [result_str(result)]

# }}}


# {{{ HTML

def _esc(value: Any) -> str:
    return html.escape(str(value), quote=True)


def _table(title: str, rows: list[tuple[str, str]]) -> str:
    """A two-column table; *rows* hold already escaped HTML."""
    body = "".join(f"<tr><th style='text-align:left'>{k}</th>"
                   f"<td style='text-align:left'>{v}</td></tr>" for k, v in rows)
    return (f"<table class='ftlazy-summary'><caption style='text-align:left'>"
            f"<b>{title}</b></caption>{body}</table>")


def _details(summary: str, content_html: str, open_: bool = False) -> str:
    flag = " open" if open_ else ""
    return (f"<details{flag}><summary>{summary}</summary>{content_html}"
            "</details>")


def _pre(text: str) -> str:
    return f"<pre style='white-space:pre'>{_esc(text)}</pre>"


def _ir_block(expr: Node) -> str:
    lines = pretty(expr).split("\n")
    shown = lines
    if len(lines) > _MAX_IR_LINES:
        half = _MAX_IR_LINES // 2
        shown = (lines[:half] + [f"... {len(lines) - 2 * half} more lines ..."]
                 + lines[-half:])
    return _details(f"IR ({len(lines)} lines, ft.pretty)", _pre("\n".join(shown)))


#: DAGs with more nodes get no picture in their HTML summary (drawing one
#: of 20,000 nodes takes about 2 s; ``ft.show_dot_graph`` still draws it)
MAX_PICTURE_NODES = 20_000


def _svg_block(expr: Node) -> str:
    """The picture of *expr* from :func:`ftlazy.visualization.to_svg`, in a
    collapsible block; empty where no layout engine is available."""
    count = count_nodes(expr)
    if count > MAX_PICTURE_NODES:
        return _details("DAG picture", _pre(
            f"{count} nodes: too many to draw with every display; "
            "ft.show_dot_graph(expr) draws it, collapsed"))
    try:
        from ftlazy import visualization
        svg = visualization.to_svg(expr)
    except (ImportError, AttributeError):
        return ""
    except RuntimeError as err:  # (the layout engine failed: say so, and
        # keep the summary: a picture is not worth losing the table)
        return _details("DAG picture", _pre(f"no picture: {err}"))
    if not isinstance(svg, str) or "<svg" not in svg:
        return ""
    svg = svg[svg.index("<svg"):]  # no XML declaration or doctype inside HTML
    return _details("DAG picture", f"<div class='ftlazy-svg'>{svg}</div>")


def node_html(n: Node) -> str:
    """The HTML summary of any node: a table of its facts, its text IR in a
    collapsible block and, for arrays and named results, its picture."""
    from ftlazy.array import Array, DictOfNamedArrays
    from ftlazy.fractal import Body, Loop
    from ftlazy.fractal_tensor import Jagged
    from ftlazy.shapes import shape_str
    rows: list[tuple[str, str]] = []
    if isinstance(n, Array):
        rows.append(("shape", _esc(shape_str(n.shape))))
        rows.append(("dtype", _esc(n.dtype)))
        sizes = _size_names(n.shape)
        if sizes:
            rows.append(("size params", _esc(", ".join(sizes))))
        name = getattr(n, "name", None)
        if isinstance(name, str):
            rows.append(("name", _esc(name)))
        extra = n._repr_extra().lstrip(", ")
        if extra:
            rows.append(("details", _esc(extra)))
        if n.tags:
            rows.append(("tags", _esc(_tags_str(n.tags))))
        axis_tags = [f"{i}: {_tags_str(ax.tags)}" for i, ax in enumerate(n.axes)
                     if ax.tags]
        if axis_tags:
            rows.append(("axis tags", _esc("; ".join(axis_tags))))
        inputs = _direct_inputs(n)
        if inputs:
            rows.append(("inputs", _esc(", ".join(_label(c) for c in inputs))))
    elif isinstance(n, Loop):
        for fact in _loop_facts(n):
            key, _, value = fact.partition("=")
            rows.append((_esc(key), _esc(value)))
    elif isinstance(n, Body):
        rows.append(("params", _esc(", ".join(type_str(p) for p in n.params))))
        rows.append(("outputs", _esc(", ".join(type_str(o) for o in n.outputs))))
    elif isinstance(n, DictOfNamedArrays):
        for name, a in n.items():
            rows.append((_esc(name), _esc(result_str(a))))
    elif isinstance(n, Jagged):
        rows += [("name", _esc(n.name or "")), ("depth", _esc(n.depth)),
                 ("elem shape", _esc(shape_str(n.elem_shape))),
                 ("dtype", _esc(n.dtype))]
    if not isinstance(n, Loop):
        rows.append(("nodes", _esc(count_nodes(n))))
        depth = loop_depth(n)
        if depth:
            rows.append(("loop nesting", _esc(depth)))
    picture = _svg_block(n) if isinstance(n, (Array, DictOfNamedArrays)) else ""
    return (f"<div class='ftlazy'>{_table(_esc(type(n).__name__), rows)}"
            f"{_ir_block(n)}{picture}</div>")


def jagged_array_html(ja: Any) -> str:
    """The HTML summary of a :class:`~ftlazy.JaggedArray`: depth, lengths
    (count, min, mean, max) per level, element shape, dtype and a preview
    of its first elements."""
    rows = [("depth", _esc(ja.depth)), ("len", _esc(len(ja))),
            ("nnz", _esc(ja.nnz)), ("elem shape", _esc(ja.elem_shape)),
            ("dtype", _esc(ja.dtype)),
            ("on device", _esc(ja.on_device))]
    for level in range(ja.depth - 1):
        lengths = ja.lengths(level)
        rows.append((f"lengths, level {level}",
                     _esc(f"{len(lengths)} lists, "
                          + _lengths_summary(lengths).strip("[]"))))
    return (f"<div class='ftlazy'>{_table('JaggedArray', rows)}"
            f"{_details('values (first elements)', _pre(_preview(ja)), True)}"
            "</div>")


def _preview(ja: Any) -> str:
    """The first :data:`_PREVIEW_ELEMENTS` elements of the outer list."""
    offsets = ja.offsets[0]
    count = min(len(ja), _PREVIEW_ELEMENTS)
    if count == 0:
        return "[]"
    end = int(offsets[count])
    for level in range(1, ja.depth - 1):
        end = int(ja.offsets[level][end])
    values = np.asarray(ja.get().values[:end] if ja.on_device
                        else ja.values[:end])
    head = _JaggedPreview(values, [o[:count + 1] if k == 0 else o
                                       for k, o in enumerate(ja.offsets)])
    text = "\n".join(head.lines(count))
    if len(ja) > count:
        text += f"\n... {len(ja) - count} more"
    return text


class _JaggedPreview:
    """Text of the first elements of packed jagged data (values and
    offsets, outermost first), each element's leaves on one line."""

    def __init__(self, values: np.ndarray, offsets: list[np.ndarray]) -> None:
        self.values = values
        self.offsets = offsets

    def lines(self, count: int) -> list[str]:
        """One line per element ``0 <= i < count`` of the outer list."""
        result = []
        for i in range(count):
            lo, hi = int(self.offsets[0][i]), int(self.offsets[0][i + 1])
            for level in range(1, len(self.offsets)):
                lo, hi = (int(self.offsets[level][lo]),
                          int(self.offsets[level][hi]))
            rows = self.values[lo:hi]
            text = np.array2string(rows, threshold=12, edgeitems=2,
                                   precision=4, separator=", ")
            result.append(f"[{i}] ({hi - lo} rows) "
                          + " ".join(text.split()))
        return result


def compiled_html(f: Any) -> str:
    """The HTML summary of a compiled function or bound program: inputs,
    outputs, compile time per stage, and its plan and OpenCL source in
    collapsible blocks."""
    ins, outs = _compiled_signature(f)
    rows = [("inputs", _esc(", ".join(ins))), ("outputs", _esc(", ".join(outs))),
            ("from cache", _esc(f.from_cache))]
    host = getattr(f, "host_evaluated", ())
    if host:
        rows.append(("on the host, in numpy", _esc("; ".join(host))))
    timings = f.timings
    for key, label in _STAGES.items():
        value = getattr(timings, key)
        rows.append((_esc(label), "cached" if value is None
                     else _esc(f"{value * 1e3:.1f} ms")))
    blocks = []
    plan = f.plan
    if plan is not None:
        blocks.append(_details("plan", _pre(str(plan))))
    blocks.append(_details("OpenCL source", _pre(f.source)))
    return (f"<div class='ftlazy'>{_table(_esc(type(f).__name__), rows)}"
            + "".join(blocks) + "</div>")

# }}}
