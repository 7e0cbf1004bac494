# SPDX-License-Identifier: MIT
"""Scans and folds inside a map over a FractalTensor, for
:mod:`ftlazy.transform.jagged_lowering`.

A scan in the body of a map over depth-2 data runs once per element. It
becomes one dense :class:`~ftlazy.fractal.Scan` for all elements together,
as :mod:`ftlazy.transform.batch` does for dense maps, with carries
``(n, ...)`` (element ``i`` in row ``i``):

* a scan over the element's own rows (its length ``f(L) = c + a*L`` affine
  in the element's length) becomes a
  :class:`~ftlazy.fractal_tensor.RaggedScan` of ``T = max_i f(L_i)`` steps,
  a size the host derives from the offsets. Step ``t`` reads row ``t`` of
  every element straight from the packed rows and writes stacked results
  straight to packed rows (no time-major copies); element ``i``'s carry is
  updated only while ``t < f(L_i)``: the step index, scanned time-major,
  compared with the extent read from the offsets gates each new carry, so a fold returns each element's own last carry (its init for an
  empty element). The scan's body is lowered as the map's body is, so it
  may read whole elements (attention to the sequence at every step), and a
  fold's carry may have the element's length (a per-query online softmax):
  such a carry stays packed, each row gated by its element's extent. Where
  the map has several element length symbols (see
  :mod:`ftlazy.transform.jagged_element_reads`), the scan runs over the
  offsets of its own length's symbol, and its body may read packed arrays
  of the others (a decoder step attending over its source's rows);
* a scan over an axis of static length is batched as in a dense map: its
  carries gain the element axis, and it does not depend on the offsets.

A scan over a static axis whose carries or inputs have the element's length
in their shape (a fold over layers whose carry is the whole sequence) is
unrolled by :func:`unroll_element_scans` before batching: each step is a
copy of the body, so the sequence arrays stay packed. What is not lowered
raises :class:`NotImplementedError`: a *scan* (not a fold) over the
element's rows whose carry has the element's length, a scan nested in the
body of a scan over rows, a static scan whose body uses the element's
length, and unrolling beyond :data:`MAX_UNROLLED_STEPS` steps.

.. autofunction:: lower_scan
.. autofunction:: unroll_element_scans
"""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any

import numpy as np
import pymbolic.primitives as prim

from ftlazy import shapes as sh
from ftlazy.array import Array, IndexLambda, SizeParam
from ftlazy.fractal import Body, BodyParam, LoopResult, Scan
from ftlazy.fractal_tensor import RaggedScan
from ftlazy.node import Node, topological_order
from ftlazy.scalar_expr import index_var
from ftlazy.transform.batch import _batch_scan, _broadcast_batch
from ftlazy.transform.mappers import CopyMapper

if TYPE_CHECKING:
    from ftlazy.transform.jagged_lowering import _Kind, _MapLowering

__all__ = ["lower_scan", "unroll_element_scans", "MAX_UNROLLED_STEPS"]

#: the longest static scan that :func:`unroll_element_scans` copies out
MAX_UNROLLED_STEPS = 64

_INT64 = np.dtype(np.int64)


def _read(name: str, index: tuple) -> Any:
    var = prim.Variable(name)
    return prim.Subscript(var, index) if index else var


def _element_indices(first: int, ndim: int) -> tuple:
    return tuple(index_var(first + k) for k in range(ndim))


# {{{ a scan over the element's rows

def _step_index(steps: Any) -> IndexLambda:
    """``(T,)``: the step index, scanned time-major so that the body can
    compare it with each element's extent (a ``(T, n)`` mask would cost
    ``n`` times the longest extent, however short the other elements)."""
    return IndexLambda(index_var(0), (steps,), _INT64, {})


def _gated(carry: BodyParam, new: Array, step: BodyParam, offsets: BodyParam,
           form: tuple[int, int], segment_ids: Array | None) -> IndexLambda:
    """The new batched carry where the element is still running (*step*
    below its extent, *form* of the lengths that *offsets* give), else the
    old one; a packed carry's row finds its element in *segment_ids*."""
    idx = _element_indices(0, carry.ndim)
    element = (index_var(0) if segment_ids is None
               else prim.Subscript(prim.Variable("_seg"), (index_var(0),)))
    bindings = {"_step": step, "_off": offsets, "_new": new, "_old": carry}
    if segment_ids is not None:
        bindings["_seg"] = segment_ids
    off = prim.Variable("_off")
    const, coeff = form
    running = prim.Comparison(prim.Variable("_step"), "<", const + coeff * (
        off[element + 1] - off[element]))
    expr = prim.If(running, _read("_new", idx), _read("_old", idx))
    return IndexLambda(expr, carry.shape, carry.dtype, bindings)


class _Captures:
    """Arrays outside a scan body that its lowered nodes read (offsets,
    segment ids, lengths), captured as parameters numbered from *first*."""

    def __init__(self, first: int) -> None:
        self.first = first
        self.params: dict[Node, BodyParam] = {}

    def __call__(self, node: Array) -> BodyParam:
        if node not in self.params:
            self.params[node] = BodyParam(self.first + len(self.params),
                                          node.shape, node.dtype)
        return self.params[node]


def _scan_over_rows(lowering: _MapLowering, scan: Scan, symbol: str,
                    form: tuple[int, int], inputs: list[tuple[Array, _Kind]]
                    ) -> list[tuple[Array, _Kind]]:
    from ftlazy.transform.jagged_lowering import _DENSE, _Kind
    nc, ns = scan.num_carries, scan.num_scanned
    offsets = lowering.offsets_of(symbol)
    steps = prim.Variable(lowering.host.step_count_for(offsets, form))
    n = lowering.n
    new_inputs: list[Array] = []
    params: list[tuple[BodyParam, _Kind]] = []     # by the body's own indices
    for k, (value, kind) in enumerate(inputs):
        new_index = k if k < nc + ns else k + 1
        if nc <= k < nc + ns:
            if kind != _Kind("packed", form, symbol):
                raise NotImplementedError(
                    "a scan over an element's rows must scan arrays of the "
                    "element's length")
            # (read packed, element i's row t at step t: see RaggedScan)
            shape, kind = (n,) + value.shape[1:], _DENSE
        else:
            if k < nc and kind.what == "hoisted":
                value, kind = _broadcast_batch(value, n), _DENSE
            if k < nc and kind.what == "packed" and scan.keep_all:
                raise NotImplementedError(
                    "compiling a scan over an element's rows whose carry "
                    f"{sh.shape_str(scan.inputs[k].shape)} has the element's "
                    "length is not supported (a fold is)")
            shape = value.shape
        new_inputs.append(value)
        params.append((BodyParam(new_index, shape, value.dtype), kind))
    step = BodyParam(nc + ns, (), _INT64)
    new_inputs.insert(nc + ns, _step_index(steps))
    # the body is lowered as the map's body is, its reads of the offsets
    # and segment ids captured
    captures = _Captures(len(new_inputs))
    body_scope = copy.copy(lowering)
    body_scope.outer = captures
    values = body_scope.lower_nodes(list(scan.body.outputs),
                                    lambda p: params[p.index])
    gated = []
    for k, out in enumerate(scan.body.outputs):
        value, kind = values[out]
        carry, carry_kind = params[k]
        segment_ids = None
        if carry_kind.what == "packed":
            segment_ids = captures(lowering.host.segment_ids_for(
                lowering.offsets_of(carry_kind.symbol), carry_kind.form))
        elif kind.what == "hoisted":
            value = _broadcast_batch(value, n)
        gated.append(_gated(carry, value, step, captures(offsets), form,
                            segment_ids))
    offsets_index = captures(offsets).index
    order_index = captures(lowering.host.row_order_for(offsets, form)).index
    body_params = sorted([p for p, _ in params] + [step]
                         + list(captures.params.values()), key=lambda p: p.index)
    batched_scan = RaggedScan(Body(tuple(body_params), tuple(gated)),
                              tuple(new_inputs) + tuple(captures.params),
                              nc, ns + 1, scan.keep_all,
                              offsets_index=offsets_index, form=form,
                              steps=steps, num_ragged=ns,
                              order_index=order_index)
    return [(LoopResult(batched_scan, k),
             _Kind("packed", form, symbol) if scan.keep_all else params[k][1])
            for k in range(nc)]


def _refuse_element_sizes(lowering: _MapLowering, scan: Scan) -> None:
    """A body that uses an element's length itself is not batched yet."""
    symbols = set(lowering.segments)
    for node in topological_order(list(scan.body.outputs)):
        if isinstance(node, Array) and (
                symbols & set().union(
                    *(sh.size_param_names(c) for c in node.shape))
                or (isinstance(node, SizeParam) and node.name in symbols)):
            raise NotImplementedError(
                "compiling a scan inside a map over a FractalTensor whose body "
                "uses the element's length is not supported yet "
                "(ft.evaluate_numpy evaluates it)")

# }}}


def lower_scan(lowering: _MapLowering, scan: Scan,
               inputs: list[tuple[Array, _Kind]]) -> list[tuple[Array, _Kind]]:
    """The results of *scan* (a lowered scan in the body of the map that
    *lowering* batches) for all elements, each with its batching kind;
    *inputs* are the batched values of the scan's inputs."""
    from ftlazy.transform.jagged_lowering import _DENSE, _HOISTED
    extent = lowering.extent_of(scan.length)
    if extent is not None:
        return _scan_over_rows(lowering, scan, *extent, inputs)
    if any(kind.what == "packed" for _, kind in inputs):
        raise NotImplementedError(
            f"compiling a scan of {scan.length} steps over arrays of an "
            "element's length inside a map over a FractalTensor is not "
            f"supported (scans of at most {MAX_UNROLLED_STEPS} static steps "
            "are unrolled)")
    _refuse_element_sizes(lowering, scan)
    values: dict[Node, tuple[Array, bool]] = {
        node: (value, kind.what == "dense")
        for node, (value, kind) in zip(scan.inputs, inputs)}
    results, batched = _batch_scan(scan, lowering.n, values)
    if not batched:
        return [(LoopResult(results, k), _HOISTED)
                for k in range(scan.num_carries)]
    return [(r, _DENSE) for r in results]


# {{{ unrolling short static scans over element-length arrays

class _Substituter(CopyMapper):
    """Copies a body's nodes with its parameters replaced; nested bodies
    (their own scopes) are kept as they are."""

    def __init__(self, params: dict[int, Array]) -> None:
        super().__init__()
        self.params = params

    def map_body_param(self, expr: BodyParam) -> Array:
        return self.params[expr.index]

    def map_body(self, body: Node) -> Node:
        return body


def _step(array: Array, t: int) -> IndexLambda:
    rest = _element_indices(0, array.ndim - 1)
    return IndexLambda(_read("_in0", (t,) + rest), array.shape[1:], array.dtype,
                       {"_in0": array})


def _stack(arrays: list[Array], like: Array) -> Array:
    if not arrays:
        return IndexLambda(0, (0,) + like.shape, like.dtype, {})
    from ftlazy.ops.shape_ops import stack
    return stack(arrays)


class _Unroller(CopyMapper):
    def __init__(self, symbols: set[str]) -> None:
        super().__init__()
        self.symbols = symbols

    def _involves_element(self, array: Array) -> bool:
        return any(self.symbols & sh.size_param_names(c) for c in array.shape)

    def map_loop_result(self, expr: LoopResult) -> Node:
        scan = expr.loop
        if not (isinstance(scan, Scan) and isinstance(scan.length, int)
                and any(self._involves_element(a) for a in
                        scan.inits + scan.captured)):
            return self.map_node(expr)
        return self.rec(scan)[expr.index]

    def map_scan(self, scan: Scan) -> Any:
        if not (isinstance(scan.length, int) and any(
                self._involves_element(a) for a in scan.inits + scan.captured)):
            return self.map_node(scan)
        if scan.length > MAX_UNROLLED_STEPS:
            raise NotImplementedError(
                f"compiling a scan of {scan.length} steps whose carries or "
                "captured arrays have an element's length inside a map over a "
                f"FractalTensor is not supported (at most {MAX_UNROLLED_STEPS} "
                "steps are unrolled)")
        inputs = [self.rec(a) for a in scan.inputs]
        nc, ns = scan.num_carries, scan.num_scanned
        carries = inputs[:nc]
        stacked: list[list[Array]] = [[] for _ in range(nc)]
        for t in range(scan.length):
            params = dict(enumerate(
                carries + [_step(x, t) for x in inputs[nc:nc + ns]]
                + inputs[nc + ns:]))
            substituter = _Substituter(params)
            carries = [substituter(o) for o in scan.body.outputs]
            for k in range(nc):
                stacked[k].append(carries[k])
        if scan.keep_all:
            return tuple(_stack(s, init) for s, init in zip(stacked, inputs[:nc]))
        return tuple(carries)


def unroll_element_scans(outputs: list[Array], symbols: set[str]
                         ) -> list[Array]:
    """*outputs* of a map body over a FractalTensor with every scan of static
    length whose carries or captured arrays have an element's length (one
    of *symbols*) in their shape replaced by copies of its body, one per
    step (see the module docs)."""
    unroller = _Unroller(symbols)
    return [unroller(o) for o in outputs]

# }}}
