# SPDX-License-Identifier: MIT
"""Numerically stable ``softmax`` and ``logsumexp`` (scipy.special's).

Both subtract the largest element along the reduced axes before
exponentiating, so large inputs do not overflow. Where that largest
element is infinite the shift is 0 instead, so that ``logsumexp`` of only
``-inf`` is ``-inf`` (not NaN) and of a ``+inf`` is ``+inf``, as in scipy.
Integer and bool inputs compute in float64; float32 stays float32. An
empty reduced axis is a :class:`ValueError`, as the largest element is.

.. autofunction:: softmax
.. autofunction:: logsumexp
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ftlazy.array import Array
from ftlazy.ops.convert import ArrayLike
from ftlazy.ops.reductions import AxisLike, amax, normalize_axes, sum
from ftlazy.ops.rounding import real_operand
from ftlazy.ops.shape_ops import cast

__all__ = ["softmax", "logsumexp"]


def _float_input(x: ArrayLike, what: str) -> Array:
    a = real_operand(x, what)
    if a.dtype.kind not in "f":
        a = cast(a, np.dtype(np.float64))
    return a


def _shifted(a: Array, axes: tuple[int, ...]) -> tuple[Array, Array]:
    """``(a - shift, shift)`` with the shift (kept dims) the largest element
    along *axes*, or 0 where that is infinite."""
    from ftlazy.ops.elementwise import isfinite, subtract, where
    largest = amax(a, axis=axes, keepdims=True)
    shift = where(isfinite(largest), largest, np.zeros((), a.dtype)[()])
    return subtract(a, shift), shift


def softmax(x: ArrayLike, axis: AxisLike = -1) -> Array:
    """``exp(x) / sum(exp(x), axis)`` along *axis* (an int, a tuple or
    ``None`` for all), computed as ``exp(x - max)`` so that it cannot
    overflow. A slice of only ``-inf`` gives NaN, as in scipy."""
    from ftlazy.ops.elementwise import divide, exp
    a = _float_input(x, "softmax")
    axes = normalize_axes(axis, a.ndim, ufunc_quirk=True)
    shifted, _ = _shifted(a, axes)
    e = exp(shifted)
    return divide(e, sum(e, axis=axes, keepdims=True))


def logsumexp(x: ArrayLike, axis: AxisLike = None, keepdims: bool = False
              ) -> Any:
    """``log(sum(exp(x), axis))`` along *axis* (an int, a tuple or ``None``
    for all), computed as ``max + log(sum(exp(x - max)))`` so that it cannot
    overflow; ``-inf`` where every element is ``-inf``, as in scipy."""
    from ftlazy.ops.elementwise import add, exp, log
    from ftlazy.ops.shape_ops import squeeze
    if not isinstance(keepdims, (bool, np.bool_)):
        raise TypeError(f"logsumexp: keepdims must be a bool, got {keepdims!r}")
    a = _float_input(x, "logsumexp")
    axes = normalize_axes(axis, a.ndim, ufunc_quirk=True)
    shifted, shift = _shifted(a, axes)
    total = sum(exp(shifted), axis=axes, keepdims=True)
    with np.errstate(divide="ignore"):
        result = add(log(total), shift)
    if not keepdims and axes:
        result = squeeze(result, axis=axes)
    return result
