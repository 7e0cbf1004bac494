# SPDX-License-Identifier: MIT
"""Cumulative operations: ``cumsum cumprod``, built as scans.

Each is a :func:`ftlazy.scan` over the scanned axis: the axis is moved
first, the scan's body adds (multiplies) one slice into the carry, and the
axis is moved back. A scan compiles to a sequential loop per lane, so the
work is linear in the axis length (no quadratic prefix sums), and the
accumulation order is numpy's: ``c[k] = c[k-1] + a[k]``.

dtypes follow numpy: bools and small integers accumulate in int64 (small
unsigned integers in uint64), others in their own dtype; ``dtype=`` picks
the accumulator.

.. autofunction:: cumsum
.. autofunction:: cumprod
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ftlazy.array import Array, normalize_dtype
from ftlazy.ops.convert import ArrayLike, asarray, is_scalar
from ftlazy.ops.reductions import _sum_dtype
from ftlazy.ops.shape_ops import cast, moveaxis, normalize_axis, ravel

__all__ = ["cumsum", "cumprod"]


def _cumulative(name: str, op: str, a: ArrayLike, axis: Any, dtype: Any
                ) -> Any:
    from ftlazy.fractal import scan
    from ftlazy.ops.creation import full
    from ftlazy.ops.elementwise import add, multiply

    if is_scalar(a):
        return getattr(np, name)(a, axis=axis, dtype=dtype)
    arr = asarray(a)
    acc = (_sum_dtype(arr.dtype, op) if dtype is None
           else normalize_dtype(dtype))
    if axis is None or arr.ndim == 0:
        if axis is not None:
            normalize_axis(axis, 1, name)  # numpy's AxisError
        arr = ravel(arr) if arr.ndim != 1 else arr
        ax = 0
    else:
        ax = normalize_axis(axis, arr.ndim, name)
    lanes = cast(moveaxis(arr, ax, 0) if ax else arr, acc)
    combine = add if op == "sum" else multiply
    identity = 0 if op == "sum" else 1
    init = full(lanes.shape[1:], identity, acc)

    def step(carry: Array, x: Array) -> Array:
        return cast(asarray(combine(carry, x)), acc)

    result = scan(step, lanes, init)
    return moveaxis(result, 0, ax) if ax else result


def cumsum(a: ArrayLike, axis: int | None = None, dtype: Any = None) -> Any:
    """Cumulative sum along *axis* (``None``: of the flattened array), a
    sequential scan with numpy's accumulation dtype (int64 for bools and
    small integers)."""
    return _cumulative("cumsum", "sum", a, axis, dtype)


def cumprod(a: ArrayLike, axis: int | None = None, dtype: Any = None) -> Any:
    """Cumulative product along *axis* (``None``: of the flattened array), a
    sequential scan with numpy's accumulation dtype (int64 for bools and
    small integers)."""
    return _cumulative("cumprod", "product", a, axis, dtype)
