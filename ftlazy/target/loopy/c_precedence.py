# SPDX-License-Identifier: MIT
"""Parentheses for bitwise operands of comparisons in generated C.

loopy 2025.2 prints expressions with pymbolic's precedences, which are
Python's: there ``&``, ``^`` and ``|`` bind tighter than ``==`` and ``<``,
so ``(x & 1) == 0`` prints as ``x & 1 == 0``. C binds them the other way
round and reads ``x & (1 == 0)``: a wrong answer, not an error.
:func:`_patch_loopy` makes loopy's C printer parenthesize every operand of
a comparison that binds no tighter than C's shifts (bitwise operations,
comparisons, logical operations; arithmetic and shifts bind tighter in
both languages and stay bare). Applied once, at import, before any kernel
is generated.
"""

from __future__ import annotations

from typing import Any

from loopy.target.c.codegen.expression import CExpressionToCodeMapper
from pymbolic.mapper.stringifier import PREC_COMPARISON, PREC_SHIFT


def _patch_loopy() -> None:
    if getattr(CExpressionToCodeMapper.map_comparison, "_ftlazy", False):
        return

    def map_comparison(self: Any, expr: Any, enclosing_prec: int) -> str:
        # an operand printed below PREC_SHIFT gets parentheses
        return self.parenthesize_if_needed(
            f"{self.rec(expr.left, PREC_SHIFT)} {expr.operator} "
            f"{self.rec(expr.right, PREC_SHIFT)}",
            enclosing_prec, PREC_COMPARISON)

    map_comparison._ftlazy = True
    CExpressionToCodeMapper.map_comparison = map_comparison


_patch_loopy()
