# SPDX-License-Identifier: MIT
"""Translation of IndexLambda bodies to loopy expressions.

The translator inlines the bodies of non-stored arrays into their readers
(substituting index expressions), turns :class:`~ftlazy.scalar_expr.Reduce`
into :class:`loopy.Reduction` with fresh inames, and maps numpy semantics
that C lacks (float floor division and remainder, integer division by zero,
bool storage as ``int8``) onto explicit expressions.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
import pymbolic.primitives as prim
from loopy.symbolic import Reduction
from loopy.symbolic import TypeCast as LoopyTypeCast

from ftlazy.scalar_expr import ExprIdentityMapper, Reduce, TypeCast

#: numpy function names -> OpenCL C names
C_FUNCTIONS = {
    "abs": "abs", "sqrt": "sqrt", "exp": "exp", "exp2": "exp2", "log": "log",
    "log2": "log2", "log10": "log10", "sin": "sin", "cos": "cos", "tan": "tan",
    "arcsin": "asin", "arccos": "acos", "arctan": "atan", "arctan2": "atan2",
    "sinh": "sinh", "cosh": "cosh", "tanh": "tanh", "isnan": "isnan",
    "isinf": "isinf", "floor": "floor", "ceil": "ceil", "fmod": "fmod",
    "real": "real", "imag": "imag", "conj": "conj",
}


def storage_dtype(dtype: np.dtype) -> np.dtype:
    """The dtype an array is stored with in device memory (OpenCL has no
    ``bool`` buffers)."""
    return np.dtype(np.int8) if dtype == np.bool_ else dtype


class Translator(ExprIdentityMapper):
    """Translates one IndexLambda body in the context of a stored array.

    :arg index_map: ftlazy index variable name -> loopy expression
    :arg bindings: binding name -> array node
    :arg read: ``read(node, index_tuple) -> loopy expression`` for a binding
    :arg fresh_iname: ``fresh_iname(upper_bound) -> name`` creates a
        reduction iname with a domain ``0 <= name < upper_bound``
    :arg dtype_of: ``dtype_of(expr) -> dtype or None`` for operand typing
    """

    def __init__(self, index_map: dict[str, Any], bindings: Any,
                 read: Callable[[Any, tuple], Any],
                 fresh_iname: Callable[[Any], str]) -> None:
        self.index_map = index_map
        self.bindings = bindings
        self.read = read
        self.fresh_iname = fresh_iname
        self.in_index = False

    def map_constant(self, expr: Any) -> Any:
        if isinstance(expr, (bool, np.bool_)):
            return np.int8(1 if expr else 0)
        return expr

    def map_variable(self, expr: prim.Variable) -> Any:
        name = expr.name
        if name in self.index_map:
            return self.index_map[name]
        if name in self.bindings:
            return self.read(self.bindings[name], ())
        return expr  # a size parameter (a kernel value argument)

    def map_subscript(self, expr: prim.Subscript) -> Any:
        outer, self.in_index = self.in_index, True
        try:
            index = tuple(self.rec(i) for i in expr.index_tuple)
        finally:
            self.in_index = outer
        return self.read(self.bindings[expr.aggregate.name], index)

    def map_reduce(self, expr: Reduce) -> Any:
        saved = dict(self.index_map)
        inames = []
        for name, lo, hi in expr.bounds:
            if lo != 0:
                raise ValueError("reductions must start at 0")
            iname = self.fresh_iname(hi)
            inames.append(iname)
            self.index_map[name] = prim.Variable(iname)
        try:
            inner = self.rec(expr.inner)
        finally:
            self.index_map = saved
        if expr.op in ("any", "all"):
            inner = prim.Comparison(inner, "!=", 0)
        op = {"sum": "sum", "product": "product", "max": "max", "min": "min",
              "any": "any", "all": "all"}[expr.op]
        return Reduction(op, tuple(inames), inner)

    def map_type_cast(self, expr: TypeCast) -> Any:
        child = self.rec(expr.child)
        if self.in_index and expr.dtype == np.int64:
            # widening an index read from data: C converts implicitly, and
            # loopy's affine analysis of indices cannot see through casts
            return child
        if expr.dtype == np.bool_:
            return prim.Comparison(child, "!=", 0)
        return LoopyTypeCast(expr.dtype, child)

    def map_call(self, expr: prim.Call) -> Any:
        name = C_FUNCTIONS[expr.function.name]
        return prim.Variable(name)(*[self.rec(p) for p in expr.parameters])

    def _operands_are_float(self, expr: Any) -> bool:
        return expr_kind(expr, self.bindings) in "fc"

    def map_floor_div(self, expr: prim.FloorDiv) -> Any:
        num, den = self.rec(expr.numerator), self.rec(expr.denominator)
        if self._operands_are_float(expr):
            return _float_floor_div(num, den)
        if expr_kind(expr, self.bindings) == "?":
            return prim.FloorDiv(num, den)  # index arithmetic, divisor > 0
        return prim.If(prim.Comparison(den, "==", 0), 0, prim.FloorDiv(num, den))

    def map_remainder(self, expr: prim.Remainder) -> Any:
        num, den = self.rec(expr.numerator), self.rec(expr.denominator)
        if self._operands_are_float(expr):
            return _float_remainder(num, den)
        if expr_kind(expr, self.bindings) == "?":
            return prim.Remainder(num, den)  # index arithmetic, divisor > 0
        return prim.If(prim.Comparison(den, "==", 0), 0, prim.Remainder(num, den))


def expr_kind(expr: Any, bindings: Any) -> str:
    """The dtype kind of a well-typed ftlazy expression ('?' for untyped
    index arithmetic): operands of an operator share its dtype, so the first
    typed leaf decides."""
    stack = [expr]
    while stack:
        e = stack.pop()
        if isinstance(e, TypeCast):
            return e.dtype.kind
        if isinstance(e, np.generic):
            return e.dtype.kind
        if isinstance(e, float):
            return "f"
        if isinstance(e, prim.Subscript):
            return bindings[e.aggregate.name].dtype.kind
        if isinstance(e, prim.Variable) and e.name in bindings:
            return bindings[e.name].dtype.kind
        if isinstance(e, (prim.FloorDiv, prim.Remainder, prim.Quotient)):
            stack.extend([e.denominator, e.numerator])
        elif isinstance(e, prim.Power):
            stack.extend([e.exponent, e.base])
        elif isinstance(e, (prim.Sum, prim.Product, prim.Min, prim.Max)):
            stack.extend(reversed(e.children))
        elif isinstance(e, prim.If):
            stack.extend([e.else_, e.then])
        elif isinstance(e, prim.Call):
            stack.extend(reversed(e.parameters))
        elif isinstance(e, Reduce):
            stack.append(e.inner)
    return "?"


def _float_remainder(a: Any, b: Any) -> Any:
    fm = prim.Variable("fmod")(a, b)
    mismatch = prim.LogicalAnd((prim.Comparison(fm, "!=", 0),
                                prim.Comparison(prim.Comparison(fm, "<", 0), "!=",
                                                prim.Comparison(b, "<", 0))))
    return prim.If(mismatch, fm + b, fm)


def _float_floor_div(a: Any, b: Any) -> Any:
    """numpy's npy_divmod floor quotient."""
    fm = prim.Variable("fmod")(a, b)
    div = (a - fm) / b
    mismatch = prim.LogicalAnd((prim.Comparison(fm, "!=", 0),
                                prim.Comparison(prim.Comparison(fm, "<", 0), "!=",
                                                prim.Comparison(b, "<", 0))))
    div = prim.If(mismatch, div - 1, div)
    fl = prim.Variable("floor")(div)
    rounded = prim.If(prim.Comparison(div - fl, ">", 0.5), fl + 1, fl)
    return prim.If(prim.Comparison(b, "==", 0), a / b, rounded)
