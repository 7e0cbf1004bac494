# SPDX-License-Identifier: MIT
"""Maps over FractalTensors inside a map over a FractalTensor, for
:mod:`ftlazy.transform.jagged_lowering`.

The body of a map over depth-2 data may itself build a FractalTensor from
its element and map over it: :func:`ftlazy.dilated_map` on an element of
symbolic length ``L`` splits it into ``K`` interleaved subsequences (a
FractalTensor of ``K`` elements whose offsets ``(K + 1,)`` depend on ``L``)
and maps its function over them. Element ``i`` of the outer map has such an
inner FractalTensor of ``K`` elements, its values packed at its own rows.
All inner elements of all outer elements together form one depth-2
FractalTensor of ``n*K`` elements:

* its values are the inner values of every element, batched as the body
  batches them (packed: element ``i``'s first row is ``c*i + a*off[i]``);
* its offsets are ``G[i*K + r] = first_i + inner_i[r]`` (``G[0] = 0``),
  computed on the device and by the host (segment ids, longest extents)
  from the outer offsets;
* a dense array zipped with it (``(n, K, ...)`` batched) is read flat,
  ``(n*K, ...)``; an array captured by the inner map that differs per outer
  element (``(n, ...)``) is mapped along too, repeated ``K`` times.

The inner map is then lowered as a map over this FractalTensor (a
:class:`~ftlazy.transform.jagged_lowering._MapLowering` of its own, so
scans over the subsequences become ragged scans). Its results are already
in the outer body's batched layout: a jagged result's rows of inner element
``i*K + r`` start where the outer element ``i``'s packed rows put them, and
a dense result ``(n*K, ...)`` is read as ``(n, K, ...)``.

An inner map may read its outer element's arrays of length ``L`` (each
subsequence attending to the whole sequence): the outer element is zipped
in as one more FractalTensor of the flattened map, with the outer offsets,
whose element ``i*K + r`` is outer element ``i``
(:attr:`~ftlazy.transform.jagged_lowering._MapLowering.repeats`), so its
rows are read where the outer body stored them (no copies), reductions
over them run over outer element ``i``'s range and axes of extent ``L``
are padded to the longest outer element.

Not lowered (:class:`NotImplementedError` naming it): an inner
FractalTensor of depth 3 or whose number of elements depends on ``L``,
zipped inner FractalTensors of different offsets, inner offsets computed
from the element's data, inner bodies computing arrays of the outer
length ``L`` per inner element, or reading outer arrays whose rows are
not the element's own (``c + a*L`` rows).

In the body of a scan over the element's rows (a fold whose carry is the
sequence, dilated-mapped at each step), the inner offsets depend on the
elements' lengths, not on the steps: they are computed outside the scan
(the scan's captured parameters replaced by what they capture), the host
derives segment ids and extents from them as for a map's body, and the
flattened map's lowered nodes read them through the scan's captures.

.. autofunction:: lower_inner_map
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import pymbolic.primitives as prim

from ftlazy import shapes as sh
from ftlazy.array import Array, IndexLambda, Placeholder, SizeParam
from ftlazy.fractal import Body, BodyParam, Loop, LoopResult
from ftlazy.fractal_tensor import JaggedMap
from ftlazy.node import Node, topological_order
from ftlazy.scalar_expr import index_var
from ftlazy.tags import ImplementationStrategy, ImplStored
from ftlazy.transform.jagged_scans import _Substituter
from ftlazy.transform.mappers import CopyMapper

if TYPE_CHECKING:
    from ftlazy.transform.jagged_lowering import (
        HostDerivations, _Kind, _MapLowering)

__all__ = ["lower_inner_map"]

_INT64 = np.dtype(np.int64)


def _refuse(what: str) -> NotImplementedError:
    return NotImplementedError(
        f"compiling a map over a FractalTensor inside a map over a "
        f"FractalTensor {what} is not supported (ft.evaluate_numpy evaluates "
        "it)")


def _rest(array: Array, first_axis: int, skip: int) -> tuple:
    """Index variables from *first_axis* on for the axes of *array* after
    its first *skip*."""
    return tuple(index_var(first_axis + k) for k in range(array.ndim - skip))


# {{{ reading batched arrays per inner element

def _flat_rows(array: Array, per_element: int) -> IndexLambda:
    """``(n, R, ...)`` read as ``(n*R, ...)``."""
    j = index_var(0)
    index = (prim.FloorDiv(j, per_element), prim.Remainder(j, per_element))
    return IndexLambda(prim.Variable("_in0")[index + _rest(array, 1, 2)],
                       (sh.mul(array.shape[0], per_element),) + array.shape[2:],
                       array.dtype, {"_in0": array})


def _split_rows(array: Array, n: Any, per_element: int) -> IndexLambda:
    """``(n*R, ...)`` read as ``(n, R, ...)``."""
    row = index_var(0) * per_element + index_var(1)
    return IndexLambda(prim.Variable("_in0")[(row,) + _rest(array, 2, 1)],
                       (n, per_element) + array.shape[1:], array.dtype,
                       {"_in0": array})


def _repeated(array: Array, times: int) -> IndexLambda:
    """``(n, ...)`` with each row repeated *times*: ``(n*times, ...)``."""
    row = prim.FloorDiv(index_var(0), times)
    return IndexLambda(prim.Variable("_in0")[(row,) + _rest(array, 1, 1)],
                       (sh.mul(array.shape[0], times),) + array.shape[1:],
                       array.dtype, {"_in0": array})


def _tiled(array: Array, n: Any) -> IndexLambda:
    """``(K, ...)`` (the same for every outer element) as ``(n*K, ...)``."""
    k = array.shape[0]
    row = prim.Remainder(index_var(0), k)
    return IndexLambda(prim.Variable("_in0")[(row,) + _rest(array, 1, 1)],
                       (sh.mul(n, k),) + array.shape[1:], array.dtype,
                       {"_in0": array})

# }}}


# {{{ the offsets of all inner elements

def _read_only(node: Array) -> Array:
    """*node* without the bindings its expression does not read (an
    element bound only to keep a length in the body), so that the host
    computes it from the offsets alone."""
    from ftlazy.transform.jagged_lowering import _free_names
    if not isinstance(node, IndexLambda):
        return node
    read = _free_names(node)
    return node.copy(bindings={k: v for k, v in node.bindings.items()
                               if k in read})


def _host_computable(node: Array, host: HostDerivations) -> bool:
    """Whether the host can evaluate *node* from the inputs of a call: it
    runs no loop and reads nothing that *host* derives at the call."""
    derived = host.names
    return not any(isinstance(n, (Loop, LoopResult)) or (
        isinstance(n, (Placeholder, SizeParam)) and n.name in derived)
        for n in topological_order([node]))


def _global_offsets(lowering: _MapLowering, first: tuple[int, int],
                    outer_offsets: Array, inner: Array, count: int
                    ) -> IndexLambda:
    """``(n*K + 1,)`` offsets of all inner elements: inner element ``r`` of
    outer element ``e`` ends at ``first_e + inner[e, r + 1]`` where outer
    element ``e``'s inner values start at ``first_e = c*e + a*off[e]``
    (*first* is ``(c, a)``) and *inner* ``(n, K + 1)`` holds each outer
    element's inner offsets; *outer_offsets* place outer element ``e``'s
    packed rows."""
    shape = (sh.add(sh.mul(lowering.n, count), 1),)
    if count == 0:
        return IndexLambda(0, shape, _INT64, {})
    j = index_var(0)
    e = prim.FloorDiv(j - 1, count)
    r = j - count * e
    const, coeff = first
    start = const * e + coeff * prim.Variable("_ft_off")[e]
    end = start + prim.Variable("_ft_inner")[e, r]
    expr = prim.If(prim.Comparison(j, "==", 0), 0, end)
    # (stored: every packed read of the inner map reads it, and inlined
    # offsets of nested inner maps would grow with each level)
    offsets = IndexLambda(expr, shape, _INT64,
                          {"_ft_off": outer_offsets,
                           "_ft_inner": inner},
                          tags=frozenset({ImplStored()}))
    if not _host_computable(offsets, lowering.host):
        raise _refuse("whose inner offsets are computed from the element's "
                      "data")
    return offsets

# }}}


def _stored(array: Array) -> Array:
    """*array* stored rather than inlined into its readers: the inner map
    reads its rows through index arithmetic on the offsets, which would
    grow with each level of nesting if the rows were inlined."""
    if isinstance(array, IndexLambda) and not any(
            isinstance(t, ImplementationStrategy) for t in array.tags):
        return array.copy(tags=array.tags | {ImplStored()})
    return array


def _first_rows(lowering: _MapLowering, kind: _Kind
                ) -> tuple[tuple[int, int], Array]:
    """``(c, a)`` of the first row ``c*i + a*off[i]`` of outer element
    ``i``'s inner values of batching *kind*, and the offsets ``off``."""
    if kind.what != "packed":
        raise _refuse("over a FractalTensor whose values do not have the "
                      "element's length")
    return kind.form, lowering.offsets_of(kind.symbol)


def lower_inner_map(lowering: _MapLowering, jmap: JaggedMap,
                    inputs: list[tuple[Array, _Kind]]
                    ) -> list[tuple[Array, _Kind]]:
    """The results of *jmap* (a map over a FractalTensor in the body of the
    map that *lowering* batches) for all outer elements, each with its
    batching kind; *inputs* are the batched values of ``jmap.inputs`` (see
    the module docs)."""
    from ftlazy.transform.jagged_lowering import _DENSE, _MapLowering
    # (in a scan's body, outer arrays are read through the scan's captures)
    captures = vars(lowering).get("outer")
    if 3 in jmap.depths:
        raise _refuse("of depth 3")
    host = lowering.host
    parts = jmap.mapped_parts()
    offsets_kinds = []
    pos = 0
    for depth, _ in parts:
        if depth == 2:
            offsets_kinds.append(inputs[pos + 1])
        pos += depth
    (inner, inner_kind), *others = [(_read_only(v), kind)
                                    for v, kind in offsets_kinds]
    if any(v != inner for v, _ in others):
        raise _refuse("zipping FractalTensors of different offsets")
    if inner_kind.what == "packed":
        raise _refuse("over a FractalTensor whose number of elements depends "
                      "on the element's length")
    count = sh.sub(inner.shape[-1], 1)
    if not isinstance(count, int):
        raise _refuse("over a FractalTensor of a symbolic number of elements")
    n = lowering.n
    if inner_kind.what == "hoisted":
        inner = _broadcast(inner, n)
    if captures is not None:
        inner = _outside(inner, captures)

    new_inputs: list[Array] = []
    depths: list[int] = []
    symbols: list[tuple[str, ...]] = []
    renumber: dict[int, BodyParam] = {}
    first_rows: tuple | None = None
    offsets: Array | None = None
    pos = 0
    params = jmap.body.params
    for k, (depth, _) in enumerate(parts):
        value, kind = inputs[pos]
        pos += depth
        if depth == 2:
            first = _first_rows(lowering, kind)
            if offsets is None:
                first_rows = first
                offsets = _global_offsets(lowering, *first, inner, count)
            elif first != first_rows:
                raise _refuse("zipping FractalTensors of differently laid out "
                              "values")
            new_inputs += [_stored(value), offsets]
        elif kind.what == "dense":
            new_inputs.append(_flat_rows(value, count))
        elif kind.what == "hoisted":
            new_inputs.append(_tiled(value, n))
        else:
            raise _refuse("zipping an array of the element's length")
        renumber[k] = params[k].copy(index=len(renumber))
        depths.append(depth)
        symbols.append(jmap.symbols[k])
    # captured arrays that differ per outer element are mapped along
    captured = list(zip(range(len(parts), len(params)), inputs[pos:]))
    kept = []
    # (the outer element's arrays are zipped in as one more FractalTensor
    # whose element i*K + r is outer element i: see _MapLowering.repeats)
    packed = {kind.symbol for _, (_, kind) in captured if kind.what == "packed"}
    padded = {symbol for index, _ in captured
              for _, symbol, _ in lowering.padded_axes(
                  jmap.inputs[pos + index - len(parts)].shape)}
    repeated = packed | padded
    for index, (value, kind) in captured:
        if kind.what == "packed" and kind.form != (0, 1):
            raise _refuse("whose body reads an array of the outer element's "
                          "length computed with other rows than the "
                          "element's")
        if kind.what == "packed":
            renumber[index] = params[index].copy(index=len(renumber))
            new_inputs += [_stored(value), lowering.offsets_of(kind.symbol)]
            depths.append(2)
            symbols.append((kind.symbol,))
        elif kind.what == "dense":
            renumber[index] = params[index].copy(index=len(renumber))
            new_inputs.append(_repeated(value, count))
            depths.append(1)
            symbols.append(())
        else:
            kept.append((index, value))
    for k, symbol in enumerate(sorted(padded - packed)):
        # (only axes after the first have the outer length: the outer
        # offsets zipped in with rows that the body does not read)
        rows = lowering.segments[symbol][1]
        renumber[-1 - k] = BodyParam(len(renumber), (prim.Variable(symbol),),
                                     np.dtype(np.int8))
        new_inputs += [IndexLambda(0, (rows,), np.int8, {}),
                       lowering.offsets_of(symbol)]
        depths.append(2)
        symbols.append((symbol,))
    for index, value in kept:
        renumber[index] = params[index].copy(index=len(renumber))
        new_inputs.append(value)
    body = jmap.body
    if any(p.index != index for index, p in renumber.items()):
        rebuild = _Substituter(renumber)
        body = Body(tuple(sorted(renumber.values(), key=lambda p: p.index)),
                    tuple(rebuild(o) for o in body.outputs))
    flat = JaggedMap(body, tuple(new_inputs), tuple(depths), tuple(symbols),
                     jmap.what)
    zipped, same_count = len(host.zipped), len(host.same_count)
    flat_lowering = _MapLowering(flat, new_inputs, host)
    if captures is not None:
        flat_lowering.outer = captures
    flat_lowering.repeats.update((symbol, count) for symbol in repeated)
    results = flat_lowering.run()
    # (the flattened inputs are zipped by construction: nothing to check)
    del host.zipped[zipped:]
    del host.same_count[same_count:]
    lowered = []
    for k, result in enumerate(results):
        shape = LoopResult(jmap, k).shape
        kind = lowering.kind_of_shape(shape)
        if kind is not None:
            lowered.append((result, kind))
        else:
            # (a static number of rows per outer element, stored in order)
            lowered.append((_split_rows(result, n, shape[0]), _DENSE))
    return lowered


class _Uncaptured(CopyMapper):
    """Copies nodes of a scan's body with the scan's captured parameters
    replaced by the arrays outside that they capture; other parameters
    (carries, steps) are refused."""

    def __init__(self, captured: dict[BodyParam, Array]) -> None:
        super().__init__()
        self.captured = captured

    def map_body_param(self, expr: BodyParam) -> Array:
        if expr not in self.captured:
            raise _refuse("inside the body of a scan, whose inner offsets "
                          "change with the scan's steps")
        return self.captured[expr]

    def map_body(self, body: Node) -> Node:
        return body


def _outside(inner: Array, captures: Any) -> Array:
    """*inner* (each outer element's inner offsets, batched in a scan's
    body) as computed outside the scan: the inner offsets of all elements
    are then derived on the host as for a map's body (they depend on the
    elements' lengths, not on the scan's steps)."""
    return _Uncaptured({p: node for node, p in captures.params.items()})(inner)


def _broadcast(array: Array, n: Any) -> IndexLambda:
    from ftlazy.transform.batch import _broadcast_batch
    return _broadcast_batch(array, n)
