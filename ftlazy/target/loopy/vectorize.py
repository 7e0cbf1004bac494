# SPDX-License-Identifier: MIT
"""Explicit SIMD for flat elementwise kernels.

On CPUs, OpenCL's scalar math builtins (``exp``, ``sin``) are several times
slower per element than their ``double8`` forms. When a whole kernel is
elementwise over one concrete length divisible by a vector width (chosen by
:mod:`.plan` among the widths the device's probe passed), its arrays are
viewed as ``(n / width, width)`` with a vector axis and the element loop
becomes a loopy ``vec`` iname, so the generated code works on e.g.
``double8``.

loopy 2025.2 declines to vectorize any function call; :func:`_patch_loopy`
teaches its vectorizability check that the elementwise OpenCL builtins are
fine (applied once at import, so loopy's disk cache never mixes patched and
unpatched code).
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import loopy as lp
import pymbolic.primitives as prim
from loopy.expression import VectorizabilityChecker

from ftlazy.scalar_expr import Reduce, TypeCast, iter_subexpressions
from ftlazy.target.loopy.expressions import C_FUNCTIONS

#: OpenCL builtins that apply elementwise to vector arguments
ELEMENTWISE_BUILTINS = frozenset({
    "exp", "exp2", "log", "log2", "log10", "sin", "cos", "tan", "asin", "acos",
    "atan", "atan2", "sinh", "cosh", "tanh", "sqrt", "fabs", "abs", "floor",
    "ceil", "fmod", "pow", "fmin", "fmax", "copysign"})


def _patch_loopy() -> None:
    original = VectorizabilityChecker.map_call
    if getattr(original, "_ftlazy", False):
        return

    def map_call(self: Any, expr: Any) -> bool:
        if getattr(expr.function, "name", None) in ELEMENTWISE_BUILTINS:
            return any([self.rec(p) for p in expr.parameters])
        return original(self, expr)

    def map_power(self: Any, expr: Any) -> bool:
        # a float power becomes pow(), which applies elementwise to vectors
        return any([self.rec(expr.base), self.rec(expr.exponent)])
    map_call._ftlazy = True
    VectorizabilityChecker.map_call = map_call
    VectorizabilityChecker.map_power = map_power


_patch_loopy()


_SIMD_UNSAFE = (prim.Comparison, prim.If, prim.LogicalAnd, prim.LogicalOr,
                prim.LogicalNot, prim.Min, prim.Max, prim.FloorDiv, prim.Remainder,
                prim.BitwiseAnd, prim.BitwiseOr, prim.BitwiseXor, prim.BitwiseNot,
                Reduce)


@lru_cache(maxsize=2**16)
def simd_safe(expr: Any) -> bool:
    """Whether a body means the same on vectors: OpenCL vector comparisons
    give -1 for true and vector conditionals select by sign bit, so bodies
    with comparisons, conditionals, min/max, integer casts or general powers
    stay scalar."""
    for e in iter_subexpressions(expr):
        if isinstance(e, _SIMD_UNSAFE):
            return False
        # loopy turns x**2 into x*x, any other power into a call of a scalar
        # helper function that takes no vectors
        if isinstance(e, prim.Power) and e.exponent not in (2, 2.0):
            return False
        if isinstance(e, TypeCast) and e.dtype.kind != "f":
            return False
        if isinstance(e, prim.Call) and (
                C_FUNCTIONS.get(e.function.name) not in ELEMENTWISE_BUILTINS):
            return False
    return True


@lru_cache(maxsize=2**16)
def has_vector_calls(expr: Any) -> bool:
    """Whether a float body calls math builtins that
    :meth:`~ftlazy.target.loopy.kernel.KernelBuilder._vector_calls` can run
    on vectors: the calls' dtype must be the body's, so bodies with casts or
    reductions do not qualify."""
    found = False
    for e in iter_subexpressions(expr):
        if isinstance(e, (TypeCast, Reduce)):
            return False
        if isinstance(e, prim.Call):
            if C_FUNCTIONS.get(e.function.name) not in ELEMENTWISE_BUILTINS:
                return False
            found = True
    return found


def vector_view(knl: lp.TranslationUnit, names: list[str], width: int
                ) -> lp.TranslationUnit:
    """View the 1-D arrays *names* as ``(n / width, width)`` with a vector
    axis."""
    if not names:
        return knl
    entry = knl.default_entrypoint
    entry = lp.split_array_axis(entry, names, 0, width)
    entry = lp.tag_array_axes(entry, names, "c,vec")
    return knl.with_kernel(entry)
