# SPDX-License-Identifier: MIT
"""loopy's affine analysis of expressions it cannot read as affine.

loopy turns index expressions and conditions on inames and size parameters
into integer sets and affine functions, for its bounds check
(``loopy.symbolic.condition_to_set``) and to simplify indices
(``simplify_using_aff``), and gives up on what is not affine, treating it
as unknown. loopy 2025.2 gives up only on the errors its affine conversion
expects (``with_aff_conversion_guard``); a cast in the expression (a size
compared with a float, ``(double) n == 1.5``, as numpy compares them; an
integer computed in the unsigned type of its width to wrap as numpy's do,
``(int) ((uint) a + (uint) b)``, then used in an index) raises pymbolic's
:class:`~pymbolic.mapper.UnsupportedExpressionError` instead, which stopped
code generation. :func:`_patch_loopy` makes the guard treat that error as
the non-affine expression it is (applied once at import, before any kernel
is built). The same holds for a float constant in a condition, which
loopy converts with ``int()`` (an infinity raises :class:`OverflowError`,
a NaN gives no affine function at all).
"""

from __future__ import annotations

from typing import Any

import loopy.symbolic
from loopy.diagnostic import ExpressionToAffineConversionError
from pymbolic.mapper import UnsupportedExpressionError


def _patch_loopy() -> None:
    original = loopy.symbolic.with_aff_conversion_guard
    if getattr(original, "_ftlazy", False):
        return

    def with_aff_conversion_guard(f: Any, space: Any, expr: Any, *args: Any,
                                  **kwargs: Any) -> Any:
        try:
            return original(f, space, expr, *args, **kwargs)
        except (UnsupportedExpressionError, OverflowError, ValueError,
                AttributeError) as err:
            # (a float constant: int() of an infinity or NaN, and a NaN
            # that is no PwAff)
            raise ExpressionToAffineConversionError(
                f"could not convert expression '{expr}' to affine "
                f"representation: {err}") from None

    with_aff_conversion_guard._ftlazy = True
    loopy.symbolic.with_aff_conversion_guard = with_aff_conversion_guard


_patch_loopy()
