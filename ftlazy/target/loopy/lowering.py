# SPDX-License-Identifier: MIT
"""DAG passes that prepare a canonical DAG for kernel construction:
run-time index checks for data-dependent reads, lowering to IndexLambda and
batching of maps."""

from __future__ import annotations

from typing import Any

import numpy as np
import pymbolic.primitives as prim

from ftlazy.array import AdvancedIndex, Array, IndexLambda
from ftlazy.fractal import Body, BodyParam, Gather, LoopResult, Map, Scan
from ftlazy.node import Node
from ftlazy.scalar_expr import (
    ExprIdentityMapper, Reduce, TypeCast, index_var, reduction_var, substitute)
from ftlazy.target.loopy.storage import has_reduce
from ftlazy.transform.batch import MapBatcher
from ftlazy.transform.lower import IndexLambdaLowerer
from ftlazy.transform.mappers import CopyMapper, map_and_copy

_BOOL = np.dtype(np.bool_)


def _out_of_range(indices: Array, length: Any) -> IndexLambda:
    """A 0-d bool array: whether any entry of *indices* lies outside
    ``[-length, length)``."""
    rvars = [reduction_var(i) for i in range(indices.ndim)]
    read = (prim.Subscript(prim.Variable("_in0"), tuple(rvars)) if rvars
            else prim.Variable("_in0"))
    value = TypeCast(np.dtype(np.int64), read)
    bad = prim.LogicalOr((prim.Comparison(value, "<", prim.Product((-1, length))
                                          if not isinstance(length, int) else -length),
                          prim.Comparison(value, ">=", length)))
    expr = Reduce("any", bad, tuple((v.name, 0, d) for v, d in
                                    zip(rvars, indices.shape))) if rvars else bad
    return IndexLambda(expr, (), _BOOL, {"_in0": indices})


def _any_of(flags: list[Array]) -> Array:
    if len(flags) == 1:
        return flags[0]
    names = {f"_in{i}": f for i, f in enumerate(flags)}
    return IndexLambda(prim.LogicalOr(tuple(prim.Variable(n) for n in names)),
                       (), _BOOL, names)


def _any_along_axis0(flags: Array) -> IndexLambda:
    expr = Reduce("any", prim.Subscript(prim.Variable("_in0"), (reduction_var(0),)),
                  (("_r0", 0, flags.shape[0]),))
    return IndexLambda(expr, (), _BOOL, {"_in0": flags})


class _IndexCheckInserter(CopyMapper):
    """Collects a check per data-dependent read; loop bodies report theirs as
    extra map results or an extra scan carry."""

    def __init__(self) -> None:
        super().__init__()
        self.checks: list[tuple[Array, str]] = []

    def _reset_for_body(self) -> None:
        super()._reset_for_body()
        self.checks = []

    def map_gather(self, expr: Gather) -> Node:
        new = self.map_node(expr)
        n = new.array.shape[new.axis]
        self.checks.append((_out_of_range(new.indices, n),
                            f"gather index out of range for axis {new.axis} "
                            f"with size {n}"))
        return new

    def map_advanced_index(self, expr: AdvancedIndex) -> Node:
        new = self.map_node(expr)
        for axis, idx in enumerate(new.indices):
            if isinstance(idx, int):
                n = new.array.shape[axis]
                self.checks.append((_out_of_range(new.index_arrays[idx], n),
                                    f"index out of range for axis {axis} with "
                                    f"size {n}"))
        return new

    def _body_with_checks(self, body: Body) -> tuple[Body, list[Array], list[str]]:
        clone = self.clone_for_body()
        outputs = tuple(clone(o) for o in body.outputs)
        flags = [c for c, _ in clone.checks]
        return body.copy(outputs=outputs), flags, [m for _, m in clone.checks]

    def map_map(self, expr: Map) -> Node:
        inputs = tuple(self.rec(a) for a in expr.inputs)
        body, flags, messages = self._body_with_checks(expr.body)
        if not flags:
            return Map(body, inputs, expr.num_mapped)
        new = Map(body.copy(outputs=body.outputs + tuple(flags)), inputs,
                  expr.num_mapped)
        for k, message in enumerate(messages):
            result = LoopResult(new, len(body.outputs) + k)
            self.checks.append((_any_along_axis0(result), message))
        return new

    def map_scan(self, expr: Scan) -> Node:
        inputs = tuple(self.rec(a) for a in expr.inputs)
        body, flags, messages = self._body_with_checks(expr.body)
        if not flags:
            return Scan(body, inputs, expr.num_carries, expr.num_scanned,
                        expr.keep_all)
        # one more carry: "some index was out of range so far"
        nc = expr.num_carries

        def shift(node: Node) -> Node:
            if isinstance(node, BodyParam) and node.index >= nc:
                return BodyParam(node.index + 1, node.shape, node.dtype)
            return node
        shifted = [map_and_copy(o, shift) for o in body.outputs + tuple(flags)]
        flag_param = BodyParam(nc, (), _BOOL)
        new_flag = _any_of([flag_param] + shifted[len(body.outputs):])
        params = (body.params[:nc] + (flag_param,)
                  + tuple(shift(p) for p in body.params[nc:]))
        new_body = Body(params, tuple(shifted[:len(body.outputs)]) + (new_flag,))
        init = IndexLambda(np.bool_(False), (), _BOOL, {})
        new = Scan(new_body, inputs[:nc] + (init,) + inputs[nc:], nc + 1,
                   expr.num_scanned, expr.keep_all)
        result = LoopResult(new, nc)
        flag = _any_along_axis0(result) if expr.keep_all else result
        self.checks.append((flag, "; ".join(dict.fromkeys(messages))))
        return new


def insert_index_checks(roots: dict[Any, Array]
                        ) -> tuple[dict[Any, Array], list[tuple[Array, str]]]:
    """For every data-dependent read (gathers, advanced indexing) reachable
    from *roots*, loops included: a 0-d bool array that is true when an index
    was out of range, and the message of the :class:`IndexError` to raise.
    Returns the roots rewritten so that loops also report their checks, and
    the checks. Checks read the same index arrays as the program."""
    inserter = _IndexCheckInserter()
    new_roots = {k: inserter(r) for k, r in roots.items()}
    return new_roots, inserter.checks


def lower_for_codegen(roots: dict[Any, Array]) -> dict[Any, Array]:
    """Every root with maps batched away, high-level nodes lowered to
    IndexLambdas (scans and their bodies included) and scalar reductions
    split for parallelism."""
    batcher = MapBatcher()
    lowerer = IndexLambdaLowerer()
    splitter = _ReductionSplitter()
    return {k: splitter(lowerer(batcher(lowerer(v)))) for k, v in roots.items()}


#: a reduction to a scalar over more elements than this is split in chunks
REDUCTION_CHUNK = 8192


def neutral_element(op: str, dtype: np.dtype) -> Any:
    """The identity of reduction *op* for *dtype*."""
    if op == "sum" or op == "any":
        return dtype.type(0)
    if op == "product" or op == "all":
        return dtype.type(1)
    if dtype.kind == "f":
        return dtype.type(-np.inf if op == "max" else np.inf)
    info = np.iinfo(dtype)
    return dtype.type(info.min if op == "max" else info.max)


class _SplitScalarReductions(ExprIdentityMapper):
    """Rewrites each outermost reduction of a 0-d body into a reduction of a
    stored partial result computed in parallel: over the first of several
    axes, or over chunks of one long axis."""

    def __init__(self, node: IndexLambda) -> None:
        self.node = node
        self.bindings = dict(node.bindings)

    def map_reduce(self, expr: Reduce) -> Any:
        (name, lo, hi), rest = expr.bounds[0], expr.bounds[1:]
        dtype = self.node.dtype if expr.op not in ("any", "all") else _BOOL
        if rest:
            inner = substitute(expr.inner, {name: index_var(0)})
            partial = IndexLambda(Reduce(expr.op, inner, rest), (hi,), dtype,
                                  self.node.bindings)
        elif isinstance(hi, int) and hi > 2 * REDUCTION_CHUNK:
            k = REDUCTION_CHUNK
            chunks = -(-hi // k)
            position = prim.Sum((prim.Product((index_var(0), k)), prim.Variable(name)))
            inner = prim.If(prim.Comparison(position, "<", hi),
                            substitute(expr.inner, {name: position}),
                            neutral_element(expr.op, dtype))
            partial = IndexLambda(Reduce(expr.op, inner, ((name, 0, k),)),
                                  (chunks,), dtype, self.node.bindings)
            hi = chunks
        else:
            return expr
        part = f"_ft_part{len(self.bindings)}"
        self.bindings[part] = partial
        return Reduce(expr.op, prim.Subscript(prim.Variable(part),
                                              (prim.Variable(name),)),
                      ((name, lo, hi),))


class _ReductionSplitter(CopyMapper):
    def map_index_lambda(self, expr: IndexLambda) -> Node:
        new = self.map_node(expr)
        if new.shape != () or not has_reduce(new.expr):
            return new
        splitter = _SplitScalarReductions(new)
        body = splitter(new.expr)
        if body is new.expr:
            return new
        return IndexLambda(body, (), new.dtype, splitter.bindings, tags=new.tags,
                           axes=new.axes)
