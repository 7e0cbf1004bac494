# SPDX-License-Identifier: MIT
"""Scalar expressions used as :class:`~ftlazy.array.IndexLambda` bodies.

Bodies are pymbolic expressions over

* output index variables ``_0, _1, ...`` (see :func:`index_var`),
* reduction index variables ``_r0, _r1, ...`` bound by :class:`Reduce`,
* bindings: ``Variable(name)`` for a 0-d binding,
  ``Subscript(Variable(name), (i0, i1, ...))`` for others,
* size parameter names (as in shapes), which evaluate to their integer value,
* constants (numpy scalars carry their dtype), :class:`TypeCast`, ``If``,
  comparisons, logical and bitwise operators, ``FloorDiv``/``Remainder`` with
  numpy's sign rules, ``Min``/``Max``, and ``Call(Variable(fn), args)`` for
  the functions in :data:`FUNCTIONS`.

The front end keeps bodies well typed: every operand of an arithmetic
operator already has the result's dtype (casts are explicit), so a backend
need not re-derive numpy's promotion rules.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import pymbolic.primitives as prim
from pymbolic.mapper import CombineMapper, IdentityMapper, WalkMapper
from pymbolic.mapper.stringifier import PREC_NONE, StringifyMapper
from pymbolic.primitives import expr_dataclass

#: scalar functions an expression may call, by name
FUNCTIONS = frozenset({
    "abs", "sqrt", "exp", "exp2", "log", "log2", "log10", "sin", "cos", "tan",
    "arcsin", "arccos", "arctan", "arctan2", "sinh", "cosh", "tanh", "isnan",
    "isinf", "floor", "ceil", "rint", "fmod", "real", "imag", "conj",
})

#: reduction operations a :class:`Reduce` may use, by name
REDUCTIONS = frozenset({"sum", "product", "max", "min", "any", "all"})

RESERVED_PREFIX = "_ft"


def index_var(i: int) -> prim.Variable:
    """The variable for output axis *i*."""
    return prim.Variable(f"_{i}")


def linear_combination(terms: list[tuple[int, Any]]) -> Any:
    """``sum(c * t for c, t in terms)`` without the terms of coefficient 0
    and the products by 1 (``0*j + 1*offsets[j]`` is ``offsets[j]``): 0
    where no term is left."""
    result: Any = 0
    for coeff, term in terms:
        if coeff:
            part = term if coeff == 1 else coeff * term
            result = part if result == 0 else result + part
    return result


def reduction_var(i: int) -> prim.Variable:
    """The variable for reduction axis *i*."""
    return prim.Variable(f"_r{i}")


def is_index_name(name: str) -> bool:
    return name[:1] == "_" and (name[1:].isdigit()
                                or (name[1:2] == "r" and name[2:].isdigit()))


@expr_dataclass()
class TypeCast(prim.ExpressionNode):
    """``child`` converted to ``dtype`` (numpy's ``astype`` semantics)."""

    dtype: np.dtype
    child: prim.ExpressionNode

    def make_stringifier(self, originating_stringifier=None):
        return ExprStringifier()


@expr_dataclass()
class Reduce(prim.ExpressionNode):
    """A reduction of ``inner`` over the ``bounds``: a tuple of
    ``(name, lower, upper)`` with half-open affine bounds in size params.
    ``op`` is one of :data:`REDUCTIONS`."""

    op: str
    inner: prim.ExpressionNode
    bounds: tuple[tuple[str, object, object], ...]

    def make_stringifier(self, originating_stringifier=None):
        return ExprStringifier()

    def __post_init__(self) -> None:
        if self.op not in REDUCTIONS:
            raise ValueError(f"unknown reduction '{self.op}'")


class ExprStringifier(StringifyMapper):
    """Renders expressions with ftlazy's nodes readably."""

    def map_type_cast(self, expr: TypeCast, enclosing_prec, *args, **kwargs):
        return f"{expr.dtype}({self.rec(expr.child, PREC_NONE)})"

    def map_reduce(self, expr: Reduce, enclosing_prec, *args, **kwargs):
        bounds = ", ".join(f"{n}:{lo}..{hi}" for n, lo, hi in expr.bounds)
        return f"{expr.op}([{bounds}], {self.rec(expr.inner, PREC_NONE)})"


class ExprIdentityMapper(IdentityMapper):
    """pymbolic identity mapper that also knows ftlazy's nodes."""

    def map_type_cast(self, expr: Any, *args, **kwargs):
        child = self.rec(expr.child, *args, **kwargs)
        if child is expr.child:
            return expr
        if isinstance(expr, TypeCast):
            return TypeCast(expr.dtype, child)
        # loopy's TypeCast (code generation maps translated expressions
        # with these mappers too): same mapper method, its type is .type
        return type(expr)(expr.type, child)

    def map_reduce(self, expr: Reduce, *args, **kwargs):
        inner = self.rec(expr.inner, *args, **kwargs)
        return expr if inner is expr.inner else Reduce(expr.op, inner, expr.bounds)

    def map_numpy_scalar(self, expr, *args, **kwargs):
        return expr


class ExprWalkMapper(WalkMapper):
    """pymbolic walk mapper that also knows ftlazy's nodes."""

    def map_type_cast(self, expr: TypeCast, *args, **kwargs):
        if not self.visit(expr, *args, **kwargs):
            return
        self.rec(expr.child, *args, **kwargs)
        self.post_visit(expr, *args, **kwargs)

    def map_reduce(self, expr: Reduce, *args, **kwargs):
        if not self.visit(expr, *args, **kwargs):
            return
        self.rec(expr.inner, *args, **kwargs)
        self.post_visit(expr, *args, **kwargs)


class ExprCombineMapper(CombineMapper):
    """pymbolic combine mapper that also knows ftlazy's nodes."""

    def map_type_cast(self, expr: TypeCast, *args, **kwargs):
        return self.rec(expr.child, *args, **kwargs)

    def map_reduce(self, expr: Reduce, *args, **kwargs):
        return self.rec(expr.inner, *args, **kwargs)


class _VariableCollector(ExprCombineMapper):
    def combine(self, values):
        result: set = set()
        for v in values:
            result |= v
        return result

    def map_constant(self, expr):
        return set()

    def map_nan(self, expr):
        return set()

    def map_variable(self, expr):
        return {expr.name}

    def map_subscript(self, expr):
        return {expr.aggregate.name} | self.combine(
            [self.rec(i) for i in expr.index_tuple])

    def map_call(self, expr):
        return self.combine([self.rec(p) for p in expr.parameters])

    def map_reduce(self, expr):
        return self.rec(expr.inner) - {b[0] for b in expr.bounds}


def get_variable_names(expr) -> set[str]:
    """Names of the free variables (bindings, indices, size params) in *expr*,
    including subscripted aggregates."""
    return _VariableCollector()(expr)


class _Substituter(ExprIdentityMapper):
    def __init__(self, mapping):
        self.mapping = mapping

    def map_variable(self, expr):
        return self.mapping.get(expr.name, expr)

    def map_reduce(self, expr: Reduce):
        shadowed = {b[0] for b in expr.bounds}
        if shadowed & self.mapping.keys():
            inner_map = {k: v for k, v in self.mapping.items() if k not in shadowed}
            return Reduce(expr.op, _Substituter(inner_map)(expr.inner), expr.bounds)
        return super().map_reduce(expr)


_FIELDS: dict[type, tuple[str, ...]] = {}


def _field_values(e: prim.ExpressionNode) -> list:
    names = _FIELDS.get(type(e))
    if names is None:
        names = _FIELDS[type(e)] = tuple(f.name for f in dataclasses.fields(e))
    return [getattr(e, n) for n in names]


def expression_children(e) -> list:
    """The direct sub-expressions of *e* (none for a leaf)."""
    if not isinstance(e, prim.ExpressionNode):
        return []
    result: list = []
    for value in _field_values(e):
        if isinstance(value, tuple):
            result.extend(c for c in value if isinstance(c, prim.ExpressionNode))
        elif isinstance(value, prim.ExpressionNode):
            result.append(value)
    return result


def iter_subexpressions(expr):
    """*expr* and every expression node below it (an iterative walk, so
    deep bodies do not hit the recursion limit)."""
    stack = [expr]
    while stack:
        e = stack.pop()
        yield e
        if isinstance(e, prim.ExpressionNode):
            for value in _field_values(e):
                if isinstance(value, tuple):
                    stack.extend(c for c in value
                                 if isinstance(c, prim.ExpressionNode))
                elif isinstance(value, prim.ExpressionNode):
                    stack.append(value)


def _walk_constants(expr) -> tuple[tuple, bool]:
    """The type and bit pattern of every constant in *expr*, in walk order,
    and whether a constant is a real NaN. Expressions compare constants
    with ``==``, under which ``-0.0 == 0.0`` and ``np.float32(1) ==
    np.int8(1)``; node identity must not. (An iterative walk: this runs for
    every node built.)"""
    found: list = []
    has_nan = False
    stack = [expr]
    while stack:
        e = stack.pop()
        if isinstance(e, prim.ExpressionNode):
            if isinstance(e, prim.Variable):
                continue
            stack.extend(reversed(_field_values(e)))
        elif isinstance(e, tuple):
            stack.extend(reversed(e))
        elif isinstance(e, np.generic):
            found.append((e.dtype.str, e.tobytes()))
            has_nan = has_nan or (e.dtype.kind == "f" and e != e)
        elif isinstance(e, float):
            found.append(("float", e.hex()))
            has_nan = has_nan or e != e
        elif isinstance(e, (int, complex, bool)):
            found.append((type(e).__name__, e))
    return tuple(found), has_nan


class _CanonicalNaNs(ExprIdentityMapper):
    def map_constant(self, expr: Any, *args, **kwargs) -> Any:
        # (real NaNs: a complex one keeps its imaginary part)
        if not (isinstance(expr, (float, np.floating)) and expr != expr):
            return expr
        return prim.NaN(np.float64 if isinstance(expr, float) else type(expr))


def canonical_constants(expr) -> tuple[Any, tuple]:
    """*expr* with each real NaN constant replaced by pymbolic's
    :class:`~pymbolic.primitives.NaN` of its type, and the type and bit
    pattern of every constant, which node identity compares (one walk
    where it holds no NaN, the common case). A NaN compares unequal to
    itself and hashes by identity, so two nodes built alike from ``np.nan``
    would differ (and miss every cache, loopy's too); ``NaN`` nodes of one
    type are equal."""
    signature, has_nan = _walk_constants(expr)
    if has_nan:
        expr = _CanonicalNaNs()(expr)
        signature, _ = _walk_constants(expr)
    return expr, signature


def substitute(expr, mapping: dict) -> object:
    """Replace variables by name (respecting reduction scopes)."""
    return _Substituter(mapping)(expr) if mapping else expr
