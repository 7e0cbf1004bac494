# SPDX-License-Identifier: MIT
"""Rounding: ``round`` (``around``) and ``rint``, with numpy's rules.

``rint`` rounds half to even and keeps the sign of zero (``rint(-0.3)`` is
``-0.0``): OpenCL's ``rint`` in compiled code. ``round(x, decimals)``
scales by ``10**decimals``, rounds and scales back, as numpy does (so
``round(2.675, 2)`` is numpy's ``2.68``: ``2.675 * 100`` rounds to
``267.5``, a tie that goes to the even ``268``; ``round(1.005, 2)`` is
``1.0``). Integer arrays are unchanged for ``decimals >= 0``;
for negative decimals they are rounded through float64 and cast back, as
numpy does. Bools round as float16, as in numpy. Complex input is a
:class:`TypeError`.

.. autofunction:: round
.. autofunction:: around
.. autofunction:: rint
"""

from __future__ import annotations

import builtins
from typing import Any

import numpy as np
import pymbolic.primitives as prim

from ftlazy.array import Array
from ftlazy.ops.convert import ArrayLike, asarray, elementwise, is_scalar
from ftlazy.ops.shape_ops import _as_int, cast

__all__ = ["round", "around", "rint"]


def _rint_expr(e: Any, dtype: np.dtype) -> Any:
    # (OpenCL's rint, as numpy's: a function of the rounded value. Built
    # from floor(e) and e - floor(e) in one expression, a compiler may fuse
    # e = x * 100 into the subtraction (an FMA) and round the exact product:
    # round(2.675, 2) gave 2.67, numpy 2.68)
    return prim.Call(prim.Variable("rint"), (e,))


def real_operand(x: ArrayLike, what: str) -> Array:
    """*x* as an array of a real dtype (bool, integer or float); complex
    and non-numeric dtypes are a :class:`TypeError` naming *what*."""
    a = asarray(np.asarray(x) if isinstance(x, (list, tuple)) else x)
    if a.dtype.kind == "c":
        raise TypeError(f"{what}: complex input (dtype {a.dtype}) is not "
                        "supported")
    if a.dtype.kind not in "biuf":
        raise TypeError(f"{what}: the input's dtype {a.dtype} is not numeric")
    return a


def rint(x: ArrayLike) -> Any:
    """The nearest integer to *x*, ties to even, in *x*'s float dtype
    (``numpy.rint``; integers and bools become float64/float16 as there)."""
    if is_scalar(x):
        return np.rint(x)
    a = real_operand(x, "rint")
    out = np.rint(np.zeros((), a.dtype)).dtype
    a = cast(a, out)
    return elementwise([a], [out], out, lambda e: _rint_expr(e, out))


def round(a: ArrayLike, decimals: int = 0) -> Any:
    """*a* rounded to *decimals* decimal places (negative: to tens,
    hundreds, ...), ties to even, in *a*'s dtype (``numpy.round``)."""
    from ftlazy.ops.elementwise import divide, multiply
    decimals = _as_int(decimals, "round: decimals")
    if is_scalar(a):
        return np.round(a, decimals)
    arr = real_operand(a, "round")
    if arr.dtype.kind == "b":
        arr = cast(arr, np.dtype(np.float16))
    if arr.dtype.kind in "iu":
        if decimals >= 0:
            return arr
        as_float = round(cast(arr, np.dtype(np.float64)), decimals)
        return cast(as_float, arr.dtype)
    if decimals == 0:
        return rint(arr)
    with np.errstate(over="ignore"):
        # (inf past float64's range, as numpy's own factor: nan results)
        factor = float(np.float64(10.0) ** builtins.abs(decimals))
    if decimals > 0:
        return divide(rint(multiply(arr, factor)), factor)
    return multiply(rint(divide(arr, factor)), factor)


around = round
