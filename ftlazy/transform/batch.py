# SPDX-License-Identifier: MIT
"""Elimination of :class:`~ftlazy.fractal.Map` nodes by batching their
bodies, as ``jax.vmap`` does.

A map of length ``n`` applies its body to element ``i`` of each mapped
input. :func:`batch_maps` instead evaluates the body once on whole arrays:
after the body is lowered to IndexLambdas, every body node that depends on a
mapped input gets a leading axis of length ``n`` (it is *batched*), and
every node that does not is hoisted out of the loop unchanged. In a batched
IndexLambda the output index ``_i`` becomes ``_{i+1}``, batched bindings are
read at ``[_0, ...]`` and unbatched ones as before; reductions keep their
bounds. A :class:`~ftlazy.fractal.Scan` in a map body becomes a scan whose
carries are batched (the time axis stays first: batched sequences are read
as ``(t, n, ...)`` and stacked results transposed back). A map over
FractalTensors in a map body (``ft.dilated_map`` of an array the body
reads) keeps its FractalTensors, whose offsets must not depend on the
element: the batch axis moves inside it, its body becoming a map over the
batch axis of the old body (batched values and dense inputs read with the
batch axis after the element's rows, so that results keep the element's
length first). Maps nested in a body are batched first, so the result has
no dense maps at all.

.. autofunction:: batch_maps
.. autoclass:: MapBatcher
"""

from __future__ import annotations

import re
from typing import Any, TypeVar

import pymbolic.primitives as prim

from ftlazy.array import Array, Axis, IndexLambda
from ftlazy.fractal import Body, BodyParam, LoopResult, Map, Scan
from ftlazy.node import Node, iter_children, map_children, topological_order
from ftlazy.scalar_expr import ExprIdentityMapper, index_var
from ftlazy.shapes import ShapeComponent
from ftlazy.transform.lower import lower_to_index_lambdas
from ftlazy.transform.mappers import CopyMapper

__all__ = ["MapBatcher", "batch_maps"]

NodeT = TypeVar("NodeT", bound=Node)

_INDEX_NAME = re.compile(r"_(\d+)\Z")

#: a body node's value in the batched scope, and whether it is batched
_Batched = tuple[Any, bool]


# {{{ helpers

def _read_all(name: str, array: Array, first_axis: int) -> Any:
    """Binding *name* read with the index variables from *first_axis* on."""
    if not array.ndim:
        return prim.Variable(name)
    return prim.Subscript(prim.Variable(name), tuple(
        index_var(first_axis + k) for k in range(array.ndim)))


def _broadcast_batch(array: Array, n: ShapeComponent) -> IndexLambda:
    """*array* repeated along a new leading axis of length *n*."""
    return IndexLambda(_read_all("_in0", array, 1), (n,) + array.shape,
                       array.dtype, {"_in0": array})


def _swap_leading_axes(array: Array) -> IndexLambda:
    """*array* with its first two axes exchanged."""
    index = (index_var(1), index_var(0)) + tuple(
        index_var(k) for k in range(2, array.ndim))
    shape = (array.shape[1], array.shape[0]) + array.shape[2:]
    return IndexLambda(prim.Subscript(prim.Variable("_in0"), index), shape,
                       array.dtype, {"_in0": array})


def _with_tags_of(value: Array, result: Array, batched: bool) -> Array:
    """*value* carrying the tags and axis tags of the loop result *result*
    it replaces (with a leading batch axis if *batched*)."""
    if not result.tags and all(not ax.tags for ax in result.axes):
        return value
    axes = ((Axis(),) if batched else ()) + result.axes
    if not isinstance(value, IndexLambda):
        value = IndexLambda(_read_all("_in0", value, 0), value.shape,
                            value.dtype, {"_in0": value})
    else:
        axes = tuple(Axis(a.tags | b.tags) for a, b in zip(value.axes, axes))
    return value.copy(tags=value.tags | result.tags, axes=axes)


def _with_extra_bindings(array: Array, extra: list[Array]) -> IndexLambda:
    """*array* as an IndexLambda that also binds the (unread) *extra*."""
    if not isinstance(array, IndexLambda):
        array = IndexLambda(_read_all("_in0", array, 0), array.shape,
                            array.dtype, {"_in0": array})
    bindings = dict(array.bindings)
    for a in extra:
        bindings[f"_in{len(bindings)}"] = a
    return array.copy(bindings=bindings)


class _BatchedBodyRewriter(ExprIdentityMapper):
    """Shifts output indices by one and reads batched bindings at ``_0``."""

    def __init__(self, batched: set[str]) -> None:
        self.batched = batched

    def map_variable(self, expr: prim.Variable) -> Any:
        if expr.name in self.batched:
            return prim.Subscript(expr, (index_var(0),))
        match = _INDEX_NAME.match(expr.name)
        if match:
            return index_var(int(match.group(1)) + 1)
        return expr

    def map_subscript(self, expr: prim.Subscript) -> Any:
        index = tuple(self.rec(i) for i in expr.index_tuple)
        if expr.aggregate.name in self.batched:
            index = (index_var(0),) + index
        return prim.Subscript(expr.aggregate, index)

# }}}


# {{{ batching a body

def _batch_index_lambda(expr: IndexLambda, n: ShapeComponent,
                        values: dict[Node, _Batched]) -> _Batched:
    bindings = {}
    batched = set()
    for name, b in expr.bindings.items():
        bindings[name], is_batched = values[b]
        if is_batched:
            batched.add(name)
    if not batched:
        return expr.copy(bindings=bindings), False
    body = _BatchedBodyRewriter(batched)(expr.expr)
    return IndexLambda(body, (n,) + expr.shape, expr.dtype, bindings,
                       tags=expr.tags, axes=(Axis(),) + expr.axes), True


def _batch_scan(scan: Scan, n: ShapeComponent,
                values: dict[Node, _Batched]) -> _Batched:
    inputs = [values[a] for a in scan.inputs]
    if not any(is_batched for _, is_batched in inputs):
        return scan.copy(inputs=tuple(v for v, _ in inputs)), False
    nc, ns = scan.num_carries, scan.num_scanned
    new_inputs = []
    flags = []
    for k, (value, is_batched) in enumerate(inputs):
        if k < nc:
            # a carry may come to depend on batched data in any step
            new_inputs.append(value if is_batched else _broadcast_batch(value, n))
            is_batched = True
        elif k < nc + ns and is_batched:
            new_inputs.append(_swap_leading_axes(value))
        else:
            new_inputs.append(value)
        flags.append(is_batched)
    params = [BodyParam(p.index, ((n,) + p.shape) if flags[p.index] else p.shape,
                        p.dtype) for p in scan.body.params]
    outputs = tuple(v if is_batched else _broadcast_batch(v, n)
                    for v, is_batched in _batch_body(scan.body, n, params,
                                                     flags)[0])
    new_scan = Scan(Body(tuple(params), outputs), tuple(new_inputs), nc, ns,
                    scan.keep_all)
    results = tuple(LoopResult(new_scan, k) for k in range(nc))
    if scan.keep_all:
        results = tuple(_swap_leading_axes(r) for r in results)
    return results, True


def _batch_jagged_map(jmap: Any, n: ShapeComponent,
                      values: dict[Node, _Batched]) -> _Batched:
    """A map over FractalTensors in a map body (``ft.dilated_map`` of an
    array the body reads): the batch axis moves inside it. Its new body
    maps the old one over the batch axis (a dense :class:`Map`, batched
    when the map over FractalTensors is lowered), reading batched inputs
    with the batch axis second (first after the element's rows), so that
    each result's first axis stays the element's; its results are read
    with the batch axis first again."""
    from ftlazy.fractal_tensor import JaggedMap
    inputs = [values[a] for a in jmap.inputs]
    if not any(is_batched for _, is_batched in inputs):
        return jmap.copy(inputs=tuple(v for v, _ in inputs)), False
    if jmap.counted:
        raise NotImplementedError(
            "batch_maps: a map over a FractalTensor whose results have a "
            "length computed in its body, inside a map body, is not batched")
    params = jmap.body.params
    new_inputs: list[Array] = []
    new_params: list[BodyParam] = []
    pos = 0
    for depth, arrays in jmap.mapped_parts():
        offsets = [_unbatched(a, values) for a in arrays[1:]]
        if depth > 2 or None in offsets:
            raise NotImplementedError(
                "batch_maps: a map over a FractalTensor whose offsets depend "
                "on an enclosing map's element is not batched")
        value, is_batched = values[arrays[0]]
        p = params[len(new_params)]
        if is_batched:
            # (B, rows, ...) read as (rows, B, ...): element (L, B, ...),
            # or (B, ...) for a dense array zipped along
            value = _swap_leading_axes(value)
            p = BodyParam(p.index, (p.shape[0], n) + p.shape[1:]
                          if depth == 2 else (n,) + p.shape, p.dtype)
        new_inputs += [value] + offsets
        new_params.append(p)
        pos += len(arrays)
    for a, p in zip(jmap.inputs[pos:], params[len(new_params):]):
        value, is_batched = values[a]
        new_inputs.append(value)
        new_params.append(BodyParam(
            p.index, (n,) + p.shape if is_batched else p.shape, p.dtype))
    # the old body mapped over the batch axis: batched parameters mapped
    # (elements read with the batch axis first), the others captured
    batched = [p.shape != q.shape for p, q in zip(new_params, params)]
    order = ([k for k in range(len(params)) if batched[k]]
             + [k for k in range(len(params)) if not batched[k]])
    renumbered = {k: params[k].copy(index=new) for new, k in enumerate(order)}
    from ftlazy.transform.jagged_scans import _Substituter
    rebuild = _Substituter(renumbered)
    inner_body = Body(tuple(renumbered[k] for k in order),
                      tuple(rebuild(o) for o in jmap.body.outputs))
    mapped_inputs = [
        _swap_leading_axes(q) if batched[k] and jmap.depths[k:k + 1] == (2,)
        else q for k, q in ((k, new_params[k]) for k in order)]
    inner = Map(inner_body, tuple(mapped_inputs), sum(batched))
    outputs = []
    for k, out in enumerate(jmap.body.outputs):
        result = LoopResult(inner, k)
        # (a result of the element's length keeps it first)
        outputs.append(_swap_leading_axes(result)
                       if jmap.is_jagged_output(k) else result)
    new_jmap = JaggedMap(Body(tuple(new_params), tuple(outputs)),
                         tuple(new_inputs), jmap.depths, jmap.symbols,
                         jmap.what)
    results = []
    for k in range(len(outputs)):
        result = LoopResult(new_jmap, k)
        # ((rows or n, B, ...) read as (B, rows or n, ...))
        results.append(_swap_leading_axes(result))
    return tuple(results), True


def _unbatched(array: Array, values: dict[Node, _Batched]) -> Array | None:
    """*array* (offsets) as computed outside the map, where what it reads
    does not depend on the map's element (offsets built from a length bind
    the sequence only to keep the length), else None."""
    from ftlazy.transform.jagged_inner_maps import _read_only
    value, is_batched = values[array]
    if not is_batched:
        return value
    array = _read_only(array)
    if not isinstance(array, IndexLambda) or any(
            values[b][1] for b in array.bindings.values()):
        return None
    return array.copy(bindings={k: values[b][0]
                                for k, b in array.bindings.items()})


def _batch_body(body: Body, n: ShapeComponent, params: list[Array],
                flags: list[bool]) -> tuple[list[_Batched], set[int]]:
    """The outputs of *body* (lowered, free of maps) evaluated on *params*:
    ``params[k]`` stands for body parameter ``k``, with a leading axis of
    length *n* where ``flags[k]``. Also returns the indices of the
    parameters the outputs depend on."""
    values: dict[Node, _Batched] = {}
    used = set()
    for node in topological_order(list(body.outputs)):
        if isinstance(node, BodyParam):
            values[node] = (params[node.index], flags[node.index])
            used.add(node.index)
        elif isinstance(node, IndexLambda):
            values[node] = _batch_index_lambda(node, n, values)
        elif isinstance(node, Scan):
            values[node] = _batch_scan(node, n, values)
        elif _is_jagged_map(node):
            values[node] = _batch_jagged_map(node, n, values)
        elif isinstance(node, LoopResult) and values[node.loop][1]:
            results = values[node.loop][0]
            values[node] = (_with_tags_of(results[node.index], node, True),
                            True)
        elif not any(values[c][1] for c in iter_children(node)):
            values[node] = (map_children(node, lambda c: values[c][0]), False)
        else:
            # (a supported construct the batcher has no rule for, not a
            # user's type error)
            raise NotImplementedError(
                f"batch_maps: cannot batch a {type(node).__name__} node in a "
                f"map body: {node!r}")
    return [values[o] for o in body.outputs], used

# }}}


def _is_jagged_map(node: Node) -> bool:
    from ftlazy.fractal_tensor import JaggedMap
    return isinstance(node, JaggedMap)


class MapBatcher(CopyMapper):
    """Copies a DAG, replacing the results of every :class:`~ftlazy.fractal.Map`
    by batched computations (see the module docs). A map maps to the tuple
    of its results; everything else maps to a node."""

    def map_map(self, expr: Map) -> tuple[Array, ...]:  # type: ignore[override]
        inputs = [self.rec(a) for a in expr.inputs]
        body = lower_to_index_lambdas(self.map_body(expr.body))
        flags = [k < expr.num_mapped for k in range(len(inputs))]
        n = expr.length
        outputs, used = _batch_body(body, n, inputs, flags)
        results = [v if is_batched else _broadcast_batch(v, n)
                   for v, is_batched in outputs]
        unused = [a for k, a in enumerate(inputs) if k not in used]
        if unused:
            # inputs the results do not read (a mapped array that only gives
            # the length) stay in the DAG, so the program's inputs are kept
            results[0] = _with_extra_bindings(results[0], unused)
        return tuple(results)

    def map_loop_result(self, expr: LoopResult) -> Node:
        if isinstance(expr.loop, Map):
            return _with_tags_of(self.rec(expr.loop)[expr.index], expr, False)
        return self.map_node(expr)


def batch_maps(expr: NodeT) -> NodeT:
    """An equivalent DAG without :class:`~ftlazy.fractal.Map` nodes: each map
    is replaced by its body batched over the map's length (nested maps
    first; scans in map bodies get batched carries). Map bodies are lowered
    to IndexLambdas; the rest of the DAG is left as it is (apply
    :func:`~ftlazy.transform.lower.lower_to_index_lambdas` to lower it too).
    Tags of the map results are kept on the nodes that replace them."""
    if not isinstance(expr, Node):
        raise TypeError(f"batch_maps expects a DAG node, got "
                        f"{type(expr).__name__}")
    return MapBatcher()(expr)
