# SPDX-License-Identifier: MIT
"""Canonical renaming of a DAG before code generation.

Placeholders, data wrappers and size parameters get reserved names in the
order a deterministic traversal meets them, so ``2*x`` and ``2*y`` (and two
graphs that differ only in the data they wrap) become the *same* interned
DAG, which is the compile cache's key. Data wrappers turn into placeholders;
their data is passed as an argument at call time.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pymbolic.primitives as prim

from ftlazy.array import (
    Array, DataWrapper, DictOfNamedArrays, IndexLambda, NormalizedSlice,
    Placeholder, SizeParam)
from ftlazy.fractal import LoopResult
from ftlazy.node import FrozenDict, Node, topological_order
from ftlazy.scalar_expr import ExprIdentityMapper, Reduce
from ftlazy.shapes import size_param_names
from ftlazy.transform.mappers import CopyMapper

INPUT_PREFIX = "_ft_in"
DATA_PREFIX = "_ft_data"
SIZE_PREFIX = "_ft_n"


class _RenameSizes(ExprIdentityMapper):
    def __init__(self, renames: dict[str, str]) -> None:
        self.renames = renames

    def map_variable(self, expr: prim.Variable) -> Any:
        new = self.renames.get(expr.name)
        return expr if new is None else prim.Variable(new)

    def map_reduce(self, expr: Reduce) -> Any:
        bounds = tuple((n, self.rec(lo), self.rec(hi)) for n, lo, hi in expr.bounds)
        return Reduce(expr.op, self.rec(expr.inner), bounds)


def _rename_value(value: Any, mapper: _RenameSizes) -> Any:
    """Rename size params inside a non-child field value."""
    if isinstance(value, prim.ExpressionNode):
        return mapper(value)
    if isinstance(value, tuple):
        return tuple(_rename_value(v, mapper) for v in value)
    if isinstance(value, NormalizedSlice):
        return NormalizedSlice(_rename_value(value.start, mapper), value.step,
                               _rename_value(value.length, mapper))
    return value


class _Canonicalizer(CopyMapper):
    def __init__(self, inputs: dict, size_renames: dict[str, str]) -> None:
        super().__init__()
        self.inputs = inputs
        self.size_renames = size_renames
        self.expr_mapper = _RenameSizes(size_renames)

    def _rename_fields(self, expr: Node) -> dict[str, Any]:
        if not self.size_renames:
            return {}
        skip = set(expr._child_fields) | set(expr._body_fields)
        changes = {}
        for f in expr._init_fields:
            if f in skip:
                continue
            old = getattr(expr, f)
            new = _rename_value(old, self.expr_mapper)
            if new is not old and new != old:
                changes[f] = new
        return changes

    def map_placeholder(self, expr: Placeholder) -> Array:
        return Placeholder(self.inputs[expr], self._rename_value_shape(expr.shape),
                           expr.dtype, tags=expr.tags, axes=expr.axes)

    def map_data_wrapper(self, expr: DataWrapper) -> Array:
        return Placeholder(self.inputs[expr], self._rename_value_shape(expr.shape),
                           expr.dtype, tags=expr.tags, axes=expr.axes)

    def map_size_param(self, expr: SizeParam) -> Array:
        return SizeParam(self.size_renames[expr.name], tags=expr.tags,
                         axes=expr.axes)

    def _rename_value_shape(self, shape: tuple) -> tuple:
        return _rename_value(shape, self.expr_mapper)

    def map_node(self, expr: Node) -> Node:
        if isinstance(expr, LoopResult) and 0 in expr.shape:
            # (a result with no entries, a loop's carry of shape (0,): no
            # loop over it to emit, whose empty domain loopy refuses)
            return IndexLambda(expr.dtype.type(0),
                               self._rename_value_shape(expr.shape),
                               expr.dtype, {})
        # children, bodies and size names change in one copy: a node
        # validates them together (a reshape's new shape against its input)
        changes = self.mapped_fields(expr)
        changes.update(self._rename_fields(expr))
        if isinstance(expr, LoopResult) and expr.tags:
            # (a loop's results are found by the loop and the index alone
            # when its code is emitted; their tags ask nothing of it)
            changes["tags"] = frozenset()
        return expr.copy(**changes) if changes else expr


@dataclasses.dataclass(frozen=True)
class CanonicalDAG:
    """A canonically renamed DAG and how to map user inputs onto it."""

    #: output name (user's, or ``None`` for a single array) -> canonical array
    outputs: FrozenDict
    #: user placeholder name -> canonical argument name
    input_names: dict[str, str]
    #: user size parameter name -> canonical name
    size_names: dict[str, str]
    #: canonical argument name -> data of a data wrapper
    data: dict[str, Any]
    #: the user's input nodes (for call-time validation)
    user_inputs: list[Array]


def _shape_size_names(nodes: list[Node]) -> list[str]:
    names: list[str] = []
    for n in nodes:
        if isinstance(n, SizeParam):
            names.append(n.name)
        for c in getattr(n, "shape", ()):
            names.extend(sorted(size_param_names(c)))
    return names


def canonicalize(result: Array | DictOfNamedArrays) -> CanonicalDAG:
    """Rename inputs and size params canonically (see module docstring)."""
    from ftlazy.target.binding import collect_inputs
    if isinstance(result, DictOfNamedArrays):
        roots = dict(result.items())
    elif isinstance(result, Array):
        roots = {None: result}
    else:
        raise TypeError(f"expected an Array or DictOfNamedArrays, got "
                        f"{type(result).__name__}")
    from ftlazy.analysis import check_inputs_against_size_names
    from ftlazy.fractal import check_not_body_local
    check_not_body_local(list(roots.values()), "ft.compile")
    user_inputs = collect_inputs(list(roots.values()))
    order = topological_order(list(roots.values()))

    size_renames: dict[str, str] = {}
    for name in _shape_size_names(order):
        if name not in size_renames:
            size_renames[name] = f"{SIZE_PREFIX}{len(size_renames)}"
    # size params used only inside bodies or expressions still need names
    _collect_expression_sizes(order, size_renames)
    check_inputs_against_size_names(user_inputs, size_renames,
                                    list(roots.values()))

    inputs: dict[Array, str] = {}
    input_names: dict[str, str] = {}
    data: dict[str, Any] = {}
    for n in user_inputs:
        if isinstance(n, Placeholder):
            inputs[n] = input_names[n.name] = f"{INPUT_PREFIX}{len(input_names)}"
        elif isinstance(n, DataWrapper):
            inputs[n] = f"{DATA_PREFIX}{len(data)}"
            data[inputs[n]] = n.data
    mapper = _Canonicalizer(inputs, size_renames)
    outputs = FrozenDict({name: mapper(a) for name, a in roots.items()})
    return CanonicalDAG(outputs, input_names, size_renames, data, user_inputs)


def _collect_expression_sizes(order: list[Node], renames: dict[str, str]) -> None:
    """Size params that appear only in IndexLambda bodies (``x * n``) are
    bindings (SizeParam nodes), so the traversal above saw them; this adds
    size names appearing in shapes inside loop bodies."""
    from ftlazy.fractal import Loop
    stack = [n for n in order if isinstance(n, Loop)]
    while stack:
        loop = stack.pop()
        body_nodes = topological_order(list(loop.body.outputs))
        for name in _shape_size_names(body_nodes):
            if name not in renames:
                renames[name] = f"{SIZE_PREFIX}{len(renames)}"
        stack.extend(n for n in body_nodes if isinstance(n, Loop))
