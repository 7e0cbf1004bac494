# SPDX-License-Identifier: MIT
"""``pad``: numpy's ``np.pad`` in modes ``"constant"``, ``"edge"`` and
``"wrap"`` (pytato's ``pt.pad`` offers the constant mode).

The result is one :class:`~ftlazy.IndexLambda`: each output index, shifted
by the padding before it, is clamped into the input (``"edge"``), taken
modulo the input's length (``"wrap"``), or read where it lies inside and
replaced by the constant outside (``"constant"``). Axis lengths may be
symbolic; pad widths are non-negative ints.

.. autofunction:: pad
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pymbolic.primitives as prim

from ftlazy import shapes as sh
from ftlazy.array import Array, IndexLambda
from ftlazy.ops.convert import ArrayLike
from ftlazy.ops.reductions import _count_expr
from ftlazy.ops.shape_ops import _as_int, as_array
from ftlazy.scalar_expr import index_var

__all__ = ["pad"]


_MODES = ("constant", "edge", "wrap")


def _int_entry(value: Any, what: str) -> int:
    result = _as_int(value, f"pad: {what}")
    if result < 0:
        raise ValueError(f"pad: {what} must be non-negative, got {result}")
    return result


def _per_axis(value: Any, ndim: int, what: str, convert: Any) -> list[tuple]:
    """numpy's broadcasting of pad widths and constants: a scalar, a pair
    ``(before, after)``, ``((before, after),)`` or one pair per axis."""
    table = np.asarray(value, dtype=object)
    if table.ndim > 2 or (table.ndim == 2 and table.shape[1] not in (1, 2)):
        raise ValueError(f"pad: {what} {value!r} must be a scalar, a pair or "
                         f"one pair per axis ({ndim} axes)")
    try:
        table = np.broadcast_to(table, (ndim, 2))
    except ValueError:
        raise ValueError(f"pad: {what} {value!r} does not broadcast to one "
                         f"(before, after) pair per axis of {ndim}") from None
    return [tuple(convert(v, f"{what} of axis {i}") for v in row)
            for i, row in enumerate(table)]


def clamp_index(index: Any, last: Any) -> Any:
    """*index* clamped into ``[0, last]`` (comparisons rather than
    ``min``/``max``, whose OpenCL overloads refuse mixed integer types)."""
    upper = prim.If(prim.Comparison(index, ">", last), last, index)
    return prim.If(prim.Comparison(index, "<", np.int64(0)), np.int64(0), upper)


def _length_expr(n: Any) -> Any:
    value = _count_expr([n])
    return np.int64(value) if isinstance(value, int) else value


def pad(array: ArrayLike, pad_width: Any, mode: str = "constant",
        constant_values: Any = 0) -> Array:
    """``numpy.pad``: *array* extended by ``pad_width`` elements before and
    after each axis (numpy's forms: ``n``, ``(before, after)``, one pair per
    axis). *mode* is ``"constant"`` (*constant_values*, numpy's forms
    too, converted to the array's dtype), ``"edge"`` (the nearest element)
    or ``"wrap"`` (periodic); other modes are a :class:`ValueError`, as are
    ``"edge"`` and ``"wrap"`` padding of an empty axis."""
    if not isinstance(mode, str) or mode not in _MODES:
        raise ValueError(f"pad: mode {mode!r} is not supported (one of "
                         f"{', '.join(_MODES)})")
    a = as_array(array)
    widths = _per_axis(pad_width, a.ndim, "pad_width", _int_entry)

    def to_dtype(v: Any, what: str) -> np.generic:
        if not isinstance(v, (bool, int, float, complex, np.generic)):
            raise TypeError(f"pad: constant_values must be numbers, got "
                            f"{type(v).__name__} for the {what}")
        with np.errstate(all="ignore"):
            return np.asarray(v).astype(a.dtype)[()]

    constants = (_per_axis(constant_values, a.ndim, "constant_values", to_dtype)
                 if mode == "constant" else [])
    out_shape = tuple(sh.add(sh.add(n, before), after)
                      for n, (before, after) in zip(a.shape, widths))
    if all(before == after == 0 for before, after in widths):
        return a
    indices: list[Any] = []
    inside: list[tuple[Any, Any]] = []
    for i, (n, (before, _)) in enumerate(zip(a.shape, widths)):
        shifted = (prim.Sum((index_var(i), np.int64(-before))) if before
                   else index_var(i))
        if mode != "constant" and widths[i] != (0, 0):
            if n == 0:
                raise ValueError(f"pad: cannot {mode}-pad axis {i}, which is "
                                 "empty")
            if not (isinstance(n, int) or sh.prove_le(1, n)):
                raise ValueError(f"pad: cannot {mode}-pad axis {i} of symbolic "
                                 f"length {n}, which may be empty")
        length = _length_expr(n)
        if mode == "wrap" and widths[i] != (0, 0):
            indices.append(prim.Remainder(prim.Sum((shifted, prim.Product((
                np.int64(before // n + 1) if isinstance(n, int)
                else np.int64(before + 1), length)))), length))
        else:
            last = prim.Sum((length, np.int64(-1)))
            indices.append(clamp_index(shifted, last))
        inside.append((shifted, length))
    body: Any = prim.Subscript(prim.Variable("_in0"), tuple(indices))
    if not a.shape:
        body = prim.Variable("_in0")
    if mode == "constant":
        # numpy fills axis by axis, later axes over earlier ones' corners:
        # the last axis's test is the outermost
        for i in range(a.ndim):
            shifted, length = inside[i]
            before_value, after_value = constants[i]
            if widths[i][0]:
                body = prim.If(prim.Comparison(shifted, "<", np.int64(0)),
                               before_value, body)
            if widths[i][1]:
                body = prim.If(prim.Comparison(shifted, ">=", length),
                               after_value, body)
    return IndexLambda(body, out_shape, a.dtype, {"_in0": a})
