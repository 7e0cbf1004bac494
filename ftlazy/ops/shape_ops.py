# SPDX-License-Identifier: MIT
"""Shape manipulation: reshape, transpose, broadcasting, roll, stack and
concatenate, with numpy's semantics.

Each function validates its input (errors name the offending axis or shapes)
and builds the most abstract node that states the intent
(:class:`~ftlazy.array.Reshape`, :class:`~ftlazy.array.AxisPermutation`,
:class:`~ftlazy.array.Roll`, :class:`~ftlazy.array.Stack`,
:class:`~ftlazy.array.Concatenate`); a no-op returns its input unchanged.
``broadcast_to`` is an :class:`~ftlazy.array.IndexLambda` that reads its
input with broadcast indices.

Symbolic shapes stay affine: a ``-1`` in a reshape is inferred only where the
quotient is an affine expression (``(n, 4) -> (-1,)`` gives ``4*n``), and a
reshape or flatten whose size would be a product of size parameters is a
:class:`ValueError` saying so.

.. autofunction:: reshape
.. autofunction:: ravel
.. autofunction:: flatten
.. autofunction:: transpose
.. autofunction:: swapaxes
.. autofunction:: moveaxis
.. autofunction:: expand_dims
.. autofunction:: squeeze
.. autofunction:: broadcast_to
.. autofunction:: roll
.. autofunction:: stack
.. autofunction:: concatenate
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from typing import Any

import numpy as np
import pymbolic.primitives as prim
from numpy.exceptions import AxisError

from ftlazy import shapes as sh
from ftlazy.array import (
    Array,
    AxisPermutation,
    Concatenate,
    IndexLambda,
    Reshape,
    Roll,
    Stack,
)
from ftlazy.ops.convert import asarray, broadcast_read
from ftlazy.shapes import Shape, ShapeComponent

__all__ = [
    "broadcast_to",
    "concatenate",
    "expand_dims",
    "flatten",
    "moveaxis",
    "ravel",
    "reshape",
    "roll",
    "squeeze",
    "stack",
    "swapaxes",
    "transpose",
]


# {{{ helpers shared with indexing and linalg

def as_array(x: Any) -> Array:
    """*x* as an :class:`~ftlazy.array.Array`. Non-arrays are converted the
    way numpy converts function arguments (``np.asarray``): Python scalars
    get their default dtype, not a weak one."""
    if isinstance(x, (list, tuple)):
        x = np.asarray(x)
    return asarray(x)


def cast(a: Array, dtype: np.dtype) -> Array:
    """*a* converted to *dtype* (unchanged if it already has it)."""
    if a.dtype == dtype:
        return a
    from ftlazy.ops.elementwise import astype
    return astype(a, dtype)


def _as_int(value: Any, what: str) -> int:
    if isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{what} must be an integer, got {value!r}")
    try:
        return operator.index(value)
    except TypeError:
        raise TypeError(f"{what} must be an integer, got "
                        f"{type(value).__name__} {value!r}") from None


def normalize_axis(axis: Any, ndim: int, what: str = "") -> int:
    """*axis* (negative counts from the end) as an index in ``[0, ndim)``.
    Raises :class:`numpy.exceptions.AxisError` naming the axis and *ndim*."""
    ax = _as_int(axis, f"{what} axis".strip())
    if not -ndim <= ax < ndim:
        raise AxisError(ax, ndim, what or None)
    return ax % ndim


def normalize_axis_tuple(axis: Any, ndim: int, what: str = "") -> tuple[int, ...]:
    """An int or a sequence of ints as a tuple of distinct normalized axes."""
    if isinstance(axis, (int, np.integer)) and not isinstance(axis, bool):
        axes: Sequence[Any] = (axis,)
    else:
        try:
            axes = tuple(axis)
        except TypeError:
            raise TypeError(f"{what} axis must be an int or a tuple of ints, "
                            f"got {axis!r}".lstrip()) from None
    result = tuple(normalize_axis(ax, ndim, what) for ax in axes)
    if len(set(result)) != len(result):
        raise ValueError(f"{what}: repeated axis in {tuple(axes)}".lstrip(": "))
    return result


def _is_int(value: Any) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(
        value, (bool, np.bool_))


# }}}


# {{{ reshape

def _shape_entries(shape: Any) -> tuple[Any, ...]:
    if _is_int(shape) or isinstance(shape, (Array, prim.ExpressionNode)):
        return (shape,)
    try:
        return tuple(shape)
    except TypeError:
        raise TypeError(f"shape must be an int or a sequence of ints, got "
                        f"{type(shape).__name__} {shape!r}") from None


def _infer_unknown(old: Shape, known: Shape, shown: str) -> ShapeComponent:
    """The entry that makes ``prod(known) * entry == prod(old)``."""
    old_const, old_factors = sh.size_factors(old)
    known_const, known_factors = sh.size_factors(known)
    prefix = (f"cannot reshape array of shape {sh.shape_str(old)} into shape "
              f"{shown}")
    if known_const == 0:
        raise ValueError(f"{prefix}: the -1 is ambiguous because the other "
                         "entries have size 0")
    if old_const == 0:
        return 0
    rest = list(old_factors)
    for f in known_factors:
        if f not in rest:
            raise ValueError(f"{prefix}: the size of the -1 entry would be "
                             "non-affine (the other entries do not divide "
                             f"{sh.size_expr(old)} exactly)")
        rest.remove(f)
    if old_const % known_const:
        if not rest and not known_factors:
            raise ValueError(f"{prefix}: size {old_const} is not divisible by "
                             f"{known_const}")
        raise ValueError(f"{prefix}: the size of the -1 entry would be "
                         f"non-affine (not an exact division by {known_const})")
    if len(rest) > 1:
        raise ValueError(f"{prefix}: the size of the -1 entry would be the "
                         f"product {' * '.join(map(str, rest))}, which is not "
                         "affine")
    factor = old_const // known_const
    return sh.mul(rest[0], factor) if rest else factor


def reshape(a: Any, newshape: Any, order: str = "C") -> Array:
    """``numpy.reshape(a, newshape, order)``: *order* is ``"C"`` (row-major)
    or ``"F"`` (column-major). One entry may be ``-1``; it is inferred from
    the size. Entries may be affine expressions of size parameters."""
    a = as_array(a)
    if order not in ("C", "F"):
        raise ValueError(f"reshape order must be 'C' or 'F', got {order!r}")
    entries = _shape_entries(newshape)
    shown = "(" + ", ".join(str(e) for e in entries) + \
        ("," if len(entries) == 1 else "") + ")"
    unknown = [i for i, e in enumerate(entries) if _is_int(e) and e == -1]
    if len(unknown) > 1:
        raise ValueError(f"cannot reshape into shape {shown}: only one entry "
                         "may be -1")
    known: list[ShapeComponent] = []
    for i, e in enumerate(entries):
        if i in unknown:
            continue
        if _is_int(e) and e < 0:
            raise ValueError(f"cannot reshape into shape {shown}: negative "
                             f"dimension {e}")
        try:
            known.append(sh.normalize_component(e))
        except (ValueError, TypeError) as err:
            raise type(err)(f"cannot reshape array of shape "
                            f"{sh.shape_str(a.shape)} into shape {shown}: "
                            f"{err}") from None
    if unknown:
        known.insert(unknown[0], _infer_unknown(a.shape, tuple(known), shown))
    shape = tuple(known)
    if shape == a.shape:
        return a
    if not sh.sizes_equal(a.shape, shape):
        raise ValueError(f"cannot reshape array of shape {sh.shape_str(a.shape)} "
                         f"(size {sh.size_expr(a.shape)}) into shape "
                         f"{sh.shape_str(shape)} (size {sh.size_expr(shape)})")
    return Reshape(a, shape, order)


def _flat_size(a: Array, what: str) -> ShapeComponent:
    try:
        return sh.product(a.shape)
    except sh.NonAffineError:
        raise ValueError(f"{what}: cannot flatten an array of shape "
                         f"{sh.shape_str(a.shape)}: its size "
                         f"{sh.size_expr(a.shape)} is not affine") from None


def ravel(a: Any, order: str = "C") -> Array:
    """``numpy.ravel(a, order)``: *a* as a 1-d array."""
    a = as_array(a)
    return reshape(a, (_flat_size(a, "ravel"),), order=order)


def flatten(a: Any, order: str = "C") -> Array:
    """``a.flatten(order)``: *a* as a 1-d array (the same as :func:`ravel`,
    since lazy arrays are never views)."""
    return ravel(a, order=order)

# }}}


# {{{ axis permutations

def transpose(a: Any, axes: Any = None) -> Array:
    """``numpy.transpose(a, axes)``: reverses the axes when *axes* is None;
    negative axes count from the end."""
    a = as_array(a)
    if axes is None:
        perm = tuple(range(a.ndim))[::-1]
    else:
        axes = tuple(axes) if not _is_int(axes) else (axes,)
        if len(axes) != a.ndim:
            raise ValueError(f"transpose: axes {axes} don't match an array of "
                             f"dimension {a.ndim}")
        perm = tuple(normalize_axis(ax, a.ndim, "transpose") for ax in axes)
        if len(set(perm)) != len(perm):
            raise ValueError(f"transpose: repeated axis in {axes}")
    if perm == tuple(range(a.ndim)):
        return a
    return AxisPermutation(a, perm)


def swapaxes(a: Any, axis1: int, axis2: int) -> Array:
    """``numpy.swapaxes(a, axis1, axis2)``."""
    a = as_array(a)
    ax1 = normalize_axis(axis1, a.ndim, "swapaxes")
    ax2 = normalize_axis(axis2, a.ndim, "swapaxes")
    perm = list(range(a.ndim))
    perm[ax1], perm[ax2] = perm[ax2], perm[ax1]
    return transpose(a, perm)


def moveaxis(a: Any, source: Any, destination: Any) -> Array:
    """``numpy.moveaxis(a, source, destination)``: *source* and
    *destination* are ints or sequences of ints of equal length."""
    a = as_array(a)
    src = normalize_axis_tuple(source, a.ndim, "moveaxis")
    dst = normalize_axis_tuple(destination, a.ndim, "moveaxis")
    if len(src) != len(dst):
        raise ValueError(f"moveaxis: source {source} and destination "
                         f"{destination} must have the same number of elements")
    order = [i for i in range(a.ndim) if i not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return transpose(a, order)

# }}}


# {{{ adding and removing axes of length 1

def expand_dims(a: Any, axis: Any) -> Array:
    """``numpy.expand_dims(a, axis)``: insert length-1 axes at the
    positions *axis* (an int or a tuple) of the result."""
    a = as_array(a)
    naxes = 1 if _is_int(axis) else len(tuple(axis))
    out_ndim = a.ndim + naxes
    positions = set(normalize_axis_tuple(axis, out_ndim, "expand_dims"))
    rest = iter(a.shape)
    shape = tuple(1 if i in positions else next(rest) for i in range(out_ndim))
    return Reshape(a, shape, "C")


def squeeze(a: Any, axis: Any = None) -> Array:
    """``numpy.squeeze(a, axis)``: remove length-1 axes. With *axis* None,
    every axis whose length is the literal 1 goes (a symbolic length is kept
    even if it is 1 at run time); a given axis must have length 1."""
    a = as_array(a)
    if axis is None:
        drop = {i for i, d in enumerate(a.shape) if d == 1}
    else:
        drop = set(normalize_axis_tuple(axis, a.ndim, "squeeze"))
        for i in sorted(drop):
            if a.shape[i] != 1:
                raise ValueError(f"cannot squeeze axis {i} of an array of shape "
                                 f"{sh.shape_str(a.shape)}: its length "
                                 f"{a.shape[i]} is not 1")
    if not drop:
        return a
    shape = tuple(d for i, d in enumerate(a.shape) if i not in drop)
    return Reshape(a, shape, "C")

# }}}


# {{{ broadcast_to

def broadcast_to(a: Any, shape: Any) -> Array:
    """``numpy.broadcast_to(a, shape)``: *a* repeated along its length-1
    (and missing leading) axes. *shape* may be symbolic; other axes must be
    provably equal to the target's."""
    a = as_array(a)
    shape = sh.normalize_shape(shape)
    if shape == a.shape:
        return a
    offset = len(shape) - a.ndim
    if offset < 0 or not all(d == 1 or sh.prove_equal(d, shape[offset + i])
                             for i, d in enumerate(a.shape)):
        raise ValueError(f"cannot broadcast an array of shape "
                         f"{sh.shape_str(a.shape)} to shape {sh.shape_str(shape)}")
    from ftlazy.fractal_access import derived_size_bindings
    # (a data-dependent size of the target, ``xs[i].shape[0]``, bound)
    return IndexLambda(broadcast_read("_in0", a.shape, shape), shape, a.dtype,
                       {"_in0": a, **derived_size_bindings(shape)})

# }}}


# {{{ roll

def roll(a: Any, shift: Any, axis: Any = None) -> Array:
    """``numpy.roll(a, shift, axis)``. With *axis* None the flattened array
    is rolled and reshaped back. *shift* and *axis* may be tuples, which
    broadcast against each other; shifts of a repeated axis add up."""
    a = as_array(a)
    if axis is None:
        total = sum(_as_int(s, "roll shift") for s in np.ravel(shift).tolist())
        if a.ndim == 0:
            return a
        return reshape(roll(ravel(a), total, 0), a.shape)
    shifts = np.asarray(shift)
    axes = np.asarray(axis)
    try:
        pairs = np.broadcast(shifts, axes)
    except ValueError:
        raise ValueError(f"roll: shift {shift} and axis {axis} have shapes "
                         f"{shifts.shape} and {axes.shape} that cannot be "
                         "broadcast together") from None
    if pairs.nd > 1:
        raise ValueError(f"roll: shift {shift} and axis {axis} must be ints or "
                         "1-d sequences")
    per_axis: dict[int, int] = {}
    for s, ax in pairs:
        ax = normalize_axis(ax.item(), a.ndim, "roll")
        per_axis[ax] = per_axis.get(ax, 0) + _as_int(s.item(), "roll shift")
    result = a
    for ax in sorted(per_axis):
        s = per_axis[ax]
        length = a.shape[ax]
        if isinstance(length, int):
            s = s % length if length else 0
        if s:
            result = Roll(result, s, ax)
    return result

# }}}


# {{{ joining arrays

def _joined_dtype(arrays: list[Array], dtype: Any, what: str) -> np.dtype:
    if dtype is None:
        return np.result_type(*[x.dtype for x in arrays])
    dtype = np.dtype(dtype)
    for x in arrays:
        if not np.can_cast(x.dtype, dtype, "same_kind"):
            raise TypeError(f"{what}: cannot cast an array of dtype {x.dtype} to "
                            f"{dtype} according to the rule 'same_kind'")
    return dtype


def _array_list(arrays: Any, what: str) -> list[Array]:
    if isinstance(arrays, Array):
        raise TypeError(f"{what} expects a sequence of arrays, got a single array")
    try:
        items = list(arrays)
    except TypeError:
        raise TypeError(f"{what} expects a sequence of arrays, got "
                        f"{type(arrays).__name__}") from None
    result = []
    for k, x in enumerate(items):
        try:
            result.append(as_array(x))
        except TypeError as err:
            raise TypeError(f"{what}: item {k}: {err}") from None
    if not result:
        raise ValueError(f"need at least one array to {what}")
    return result


def stack(arrays: Any, axis: int = 0, dtype: Any = None) -> Array:
    """``numpy.stack(arrays, axis)``: join arrays of one shape along a new
    axis. Inputs of different dtypes are cast to their
    ``numpy.result_type`` (or to *dtype*)."""
    arrays = _array_list(arrays, "stack")
    first = arrays[0]
    for i, x in enumerate(arrays[1:], 1):
        if not sh.shapes_equal(first.shape, x.shape):
            raise ValueError(f"stack: all input arrays must have the same shape, "
                             f"but array 0 has shape {sh.shape_str(first.shape)} "
                             f"and array {i} has shape {sh.shape_str(x.shape)}")
    ax = normalize_axis(axis, first.ndim + 1, "stack")
    dt = _joined_dtype(arrays, dtype, "stack")
    return Stack(tuple(cast(x, dt) for x in arrays), ax)


def concatenate(arrays: Any, axis: int | None = 0, dtype: Any = None) -> Array:
    """``numpy.concatenate(arrays, axis)``: join arrays along an existing
    axis (all other axes must be equal). With *axis* None the arrays are
    flattened first. Inputs of different dtypes are cast to their
    ``numpy.result_type`` (or to *dtype*)."""
    arrays = _array_list(arrays, "concatenate")
    if axis is None:
        arrays = [ravel(x) for x in arrays]
        axis = 0
    first = arrays[0]
    if first.ndim == 0:
        raise ValueError("zero-dimensional arrays cannot be concatenated")
    ax = normalize_axis(axis, first.ndim, "concatenate")
    for i, x in enumerate(arrays[1:], 1):
        if x.ndim != first.ndim:
            raise ValueError(
                f"concatenate: all input arrays must have the same number of "
                f"dimensions, but array 0 has shape {sh.shape_str(first.shape)} "
                f"and array {i} has shape {sh.shape_str(x.shape)}")
        for j, (d0, d) in enumerate(zip(first.shape, x.shape)):
            if j != ax and not sh.prove_equal(d0, d):
                raise ValueError(
                    f"concatenate: all input array dimensions except for the "
                    f"concatenation axis {ax} must match, but array 0 has shape "
                    f"{sh.shape_str(first.shape)} and array {i} has shape "
                    f"{sh.shape_str(x.shape)} (axis {j} differs)")
    dt = _joined_dtype(arrays, dtype, "concatenate")
    arrays = [cast(x, dt) for x in arrays]
    if len(arrays) == 1:
        return arrays[0]
    return Concatenate(tuple(arrays), ax)

# }}}
