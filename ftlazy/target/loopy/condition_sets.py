# SPDX-License-Identifier: MIT
"""loopy's bounds check on conditions it cannot read as integer sets.

Before scheduling, loopy checks every array access against its bounds,
under the conditions of the ``If`` expressions around it: it turns a
condition on inames and size parameters alone into an integer set
(``loopy.symbolic.condition_to_set``) and gives up, treating the condition
as unknown, when the condition is not affine. loopy 2025.2 gives up only on
the errors its affine conversion expects; a cast in the condition
(``(double) n == 1.5``: a size compared with a float, as numpy compares
them) raises pymbolic's :class:`~pymbolic.mapper.UnsupportedExpressionError`
instead, which stopped code generation. :func:`_patch_loopy` treats that
error as the unknown condition it is (applied once at import, before any
kernel is built).
"""

from __future__ import annotations

from typing import Any

import loopy.symbolic
from pymbolic.mapper import UnsupportedExpressionError


def _patch_loopy() -> None:
    original = loopy.symbolic.condition_to_set
    if getattr(original, "_ftlazy", False):
        return

    def condition_to_set(space: Any, expr: Any) -> Any:
        try:
            return original(space, expr)
        except UnsupportedExpressionError:
            return None     # (not an integer set: no bound from it)

    condition_to_set._ftlazy = True
    loopy.symbolic.condition_to_set = condition_to_set


_patch_loopy()
