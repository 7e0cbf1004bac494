# SPDX-License-Identifier: MIT
"""numpy indexing of lazy arrays: ``x[index]`` and ``take``.

:func:`getitem` follows numpy's rules for ints, slices (any step),
``None``/``np.newaxis``, ``...`` and integer arrays (advanced indexing,
including where the broadcast index dimensions go). It builds a
:class:`~ftlazy.array.BasicIndex` or an :class:`~ftlazy.array.AdvancedIndex`,
followed by a :class:`~ftlazy.array.Reshape` that inserts the new axes of
``None`` entries (and an :class:`~ftlazy.array.AxisPermutation` in the one
case where numpy's placement of advanced dimensions depends on a ``None`` or
``...`` between advanced indices).

Symbolic axis lengths. A slice of a symbolic length ``n`` keeps an affine
length where either its bounds provably lie within the axis, or a violation
would make the result length negative, which the runtime reports (every
shape is checked to be non-negative when size parameters are bound). So
``x[1:-1]`` has length ``n - 2`` and *assumes* ``n >= 2``; at ``n == 1``
numpy would give an empty result while ftlazy reports a negative length.
Other slices of integer bounds are clamped as numpy does
(:mod:`ftlazy.ops.clamped_slices`): ``x[:5]`` has ``min(5, n)`` rows,
``x[-3:]`` ``min(3, n)`` and ``x[::2]`` ``ceil(n / 2)``, data-dependent
sizes computed at run time. Integer indices and
constant index arrays that cannot be proven within such an axis (``x[0]``,
``x[-1]``, ``x[[0, 2]]``) are read as index arrays, checked at run time (an
:class:`IndexError` where the axis is too short, as in numpy). Symbolic
slice bounds and integer indices are read as non-negative positions; a
symbolic bound that cannot be proven within the axis is an
:class:`IndexError`. A slice
step ``k`` other than 1 keeps an affine length where ``k`` divides its
coefficients (``x[::2]`` of length ``2*n`` has ``n`` rows); with symbolic
bounds and a length that is not affine it is a :class:`ValueError`.

.. autofunction:: getitem
.. autofunction:: take
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pymbolic.primitives as prim

from ftlazy import shapes as sh
from ftlazy.array import (
    AdvancedIndex,
    Array,
    AxisPermutation,
    BasicIndex,
    IndexLambda,
    NormalizedSlice,
    Reshape,
    array_to_size_expr,
)
from ftlazy.ops.convert import asarray
from ftlazy.ops.shape_ops import as_array, normalize_axis, ravel
from ftlazy.shapes import ShapeComponent

__all__ = ["getitem", "take"]

_VALID = ("only integers, slices (`:`), ellipsis (`...`), numpy.newaxis "
          "(`None`) and integer arrays are valid indices")

_MASK = ("boolean mask indexing is not supported (data-dependent shape); "
         "use ft.where to select elementwise instead")


# {{{ classification of index entries

class _NewAxis:
    pass


class _Ellipsis:
    pass


class _IndexArray:
    """An advanced index: a lazy array, or constant data (checked at build
    time against the axis length)."""

    def __init__(self, array: Array, data: np.ndarray | None = None) -> None:
        self.array = array
        self.data = data


def _symbolic_int(value: Any) -> ShapeComponent | None:
    """An integer or affine size expression given as a pymbolic expression
    or a 0-d array of size parameters, else None."""
    if isinstance(value, prim.ExpressionNode):
        return sh.to_affine(value).to_expr()
    if isinstance(value, Array) and value.ndim == 0 and value.dtype.kind in "iu":
        try:
            return sh.to_affine(array_to_size_expr(value)).to_expr()
        except (TypeError, ValueError):
            return None
    return None


def _constant_index(data: np.ndarray, what: str) -> Any:
    if data.dtype.kind == "b":
        raise TypeError(f"{_MASK} (got a boolean index {what})")
    if data.size == 0 and data.dtype.kind == "f":
        data = data.astype(np.intp)  # numpy reads an empty list as integers
    if data.dtype.kind not in "iu":
        raise IndexError(f"{_VALID}; got an index {what} of dtype {data.dtype}")
    if data.ndim == 0:
        return int(data)
    return _IndexArray(asarray(data), data)


def _classify(item: Any) -> Any:
    """One entry of an index tuple as a slice, an int or affine expression,
    :class:`_NewAxis`, :class:`_Ellipsis` or :class:`_IndexArray`."""
    if item is None:
        return _NewAxis
    if item is Ellipsis:
        return _Ellipsis
    if isinstance(item, slice):
        return item
    if isinstance(item, (bool, np.bool_)):
        raise TypeError(f"{_MASK} (got the boolean index {item!r})")
    if isinstance(item, (int, np.integer)):
        return int(item)
    if isinstance(item, Array):
        if item.dtype.kind == "b":
            raise TypeError(f"{_MASK} (got a boolean array {item!r})")
        if item.dtype.kind not in "iu":
            raise IndexError(f"{_VALID}; got an array of dtype {item.dtype}")
        symbolic = _symbolic_int(item)
        return symbolic if symbolic is not None else _IndexArray(item)
    if isinstance(item, prim.ExpressionNode):
        try:
            return _symbolic_int(item)
        except sh.NonAffineError:
            # (x[x.shape[0] // 2]: a position, not a length; read as a 0-d
            # index array, checked against the axis at run time)
            from ftlazy.ops.convert import size_array
            return _IndexArray(size_array(item).astype(np.int64))
    if isinstance(item, (list, tuple, np.ndarray)):
        try:
            data = np.asarray(item)
        except ValueError:
            raise IndexError(f"{_VALID}; got the ragged sequence {item!r}") from None
        return _constant_index(data, repr(item))
    raise IndexError(f"{_VALID}; got {type(item).__name__} {item!r}")

# }}}


# {{{ normalization against an axis

def _normalize_int(i: ShapeComponent, length: ShapeComponent,
                   axis: int) -> ShapeComponent:
    """The non-negative position of index *i* in an axis of *length*
    (checked at build time: see :func:`_proven_in_range`)."""
    if isinstance(i, int) and isinstance(length, int):
        if not -length <= i < length:
            raise IndexError(f"index {i} is out of bounds for axis {axis} with "
                             f"size {length}")
        return i % length
    return sh.add(length, i) if isinstance(i, int) and i < 0 else i


def _proven_in_range(i: ShapeComponent, length: ShapeComponent) -> bool:
    """Whether index *i* lies in an axis of *length* for all sizes; else
    (``x[0]``, ``x[-1]`` of an axis of symbolic length) it is read as a
    0-d index array, checked at run time as gathers are."""
    if isinstance(length, int) and isinstance(i, int):
        return True  # (or out of bounds, which _normalize_int reports)
    return sh.prove_index_in_range(i, length)


def _slice_part(value: Any, what: str) -> ShapeComponent | None:
    if value is None:
        return None
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        return int(value)
    try:
        symbolic = _symbolic_int(value)
    except sh.NonAffineError as err:
        # (an element's length in a map's body is a size, named L here:
        # L // 2)
        from ftlazy.fractal_tensor import readable_sizes as readable
        raise sh.NonAffineError(
            f"slice {what} {readable(value)} is not an affine expression of "
            f"sizes ({readable(err)}): a slice's bounds "
            "must be c + a*n of sizes n, such as the element's length L in a "
            "map's body; a position computed otherwise, such as L // 2, works "
            "as an index (s[s.shape[0] // 2]), not as a slice bound") from None
    if symbolic is not None:
        return symbolic
    raise TypeError(f"slice {what} must be an integer or None (or an affine "
                    f"expression of size parameters), got {value!r}")


def _normalize_slice(slc: slice, length: ShapeComponent,
                     axis: int) -> NormalizedSlice | None:
    start = _slice_part(slc.start, "start")
    stop = _slice_part(slc.stop, "stop")
    step = _slice_part(slc.step, "step")
    if step is None:
        step = 1
    if not isinstance(step, int):
        raise TypeError(f"slice step must be an integer, got {step}")
    if step == 0:
        raise ValueError("slice step cannot be zero")
    if all(isinstance(v, (int, type(None))) for v in (start, stop, length)):
        s, t, k = slice(start, stop, step).indices(length)
        n = len(range(s, t, k))
        return NormalizedSlice(s, k, n) if n else NormalizedSlice(0, 1, 0)
    return _symbolic_slice(slc, start, stop, step, length, axis)


#: slice bounds and steps from which a slice of a symbolic length is
#: clamped whatever its bounds (beyond every length an array can have)
_HUGE = 2**61


def _symbolic_slice(slc: slice, start: Any, stop: Any, step: int,
                    length: ShapeComponent, axis: int
                    ) -> NormalizedSlice | None:
    """*slc* over an axis of symbolic *length* as an affine slice, or None
    where its integer bounds need Python's clamping or its length is not
    affine (see :func:`_clamp_slices`)."""
    def position(v: ShapeComponent) -> ShapeComponent:
        return sh.add(length, v) if isinstance(v, int) and v < 0 else v

    for v in (start, stop):
        if v is not None and not isinstance(v, int) and not sh.prove_le(0, v):
            raise IndexError(f"slice bound {v} of {slc} cannot be proven "
                             "non-negative")
    last = sh.sub(length, 1)
    if step > 0:
        s = 0 if start is None else position(start)
        t = length if stop is None else position(stop)
        extent = sh.sub(t, s)
        # a start below 0 or a stop past the end would need clamping, which
        # the runtime's negative-length check would not catch
        in_range = sh.prove_le(0, s) and sh.prove_le(t, length)
    else:
        s = last if start is None else position(start)
        t = -1 if stop is None else position(stop)
        extent = sh.sub(s, t)
        in_range = sh.prove_le(s, last) and sh.prove_le(-1, t)
    if sh.prove_le(extent, 0):
        # empty whatever the length: clamping both bounds keeps their order
        return NormalizedSlice(0, 1, 0)
    constant = all(isinstance(v, (int, type(None))) for v in (start, stop))
    if constant and any(v is not None and abs(v) >= _HUGE
                        for v in (start, stop, step)):
        return None     # (as good as infinite: clamped, no huge constants)
    if not in_range:
        if constant:
            return None
        raise IndexError(f"slice {slc} cannot be proven to lie within axis "
                         f"{axis} of symbolic length {length}, and its bounds "
                         "are symbolic: ftlazy clamps only integer bounds")
    k = abs(step)
    form = sh.to_affine(extent) + sh.AffineForm({}, k - 1)
    if any(c % k for c in form.coeffs.values()):
        if constant:
            return None
        raise ValueError(f"slice {slc} of axis {axis} with length {length} "
                         f"would have length ceil(({extent})/{k}), which is "
                         "not affine")
    n = sh.AffineForm({v: c // k for v, c in form.coeffs.items()},
                      form.const // k).to_expr()
    return NormalizedSlice(s, step, n)


def _check_constant_index(data: np.ndarray, length: ShapeComponent,
                          axis: int) -> None:
    if data.size == 0:
        return
    lo, hi = int(data.min()), int(data.max())
    if isinstance(length, int):
        bad = hi if hi >= length else lo if lo < -length else None
        if bad is not None:
            raise IndexError(f"index {bad} is out of bounds for axis {axis} with "
                             f"size {length}")
    # (against a symbolic length, entries are checked at run time)


def _int_index_array(position: ShapeComponent) -> Array:
    """A 0-d int64 array holding *position* (an int or size expression,
    whose size parameters are then inputs of the DAG: ``x[n]`` reads
    ``n``)."""
    if isinstance(position, int):
        return IndexLambda(np.int64(position), (), np.int64, {})
    from ftlazy.ops.convert import size_array
    return size_array(position).astype(np.int64)

# }}}


def _expand(index: Any, ndim: int) -> tuple[list[Any], int]:
    """Classified entries (ending with an ellipsis if the index has none)
    and how many full slices the ellipsis stands for."""
    if not isinstance(index, tuple):
        index = (index,)
    entries = [_classify(item) for item in index]
    n_ellipsis = sum(1 for e in entries if e is _Ellipsis)
    if n_ellipsis > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    consumed = sum(1 for e in entries if e is not _NewAxis and e is not _Ellipsis)
    if consumed > ndim:
        raise IndexError(f"too many indices for array: array is "
                         f"{ndim}-dimensional, but {consumed} were indexed")
    if not n_ellipsis:
        entries.append(_Ellipsis)
    return entries, ndim - consumed


def _int_entries(entries: list[Any], fill: int) -> list[tuple[Any, int]]:
    """The int (or affine) entries of *entries* with the axis each indexes."""
    result = []
    ax = 0
    for e in entries:
        if e is _Ellipsis:
            ax += fill
        elif e is not _NewAxis:
            if not isinstance(e, (slice, _IndexArray)):
                result.append((e, ax))
            ax += 1
    return result


def getitem(a: Any, index: Any) -> Array:
    """``a[index]`` with numpy's basic and advanced indexing semantics.

    Integer indices out of range raise :class:`IndexError` when the axis
    length is known; see the module docstring for symbolic lengths.
    Boolean masks are not supported (their result shape depends on data).
    """
    a = as_array(a)
    entries, fill = _expand(index, a.ndim)
    a, entries = _clamp_slices(a, entries, fill)
    advanced = any(isinstance(e, _IndexArray) for e in entries) or any(
        not _proven_in_range(e, a.shape[ax]) for e, ax in _int_entries(
            entries, fill))

    # one spec per axis of a: a NormalizedSlice, a position, or an index
    # array; and the output layout: the axis of a kept there, None for a
    # new axis, or "adv" for an advanced index
    per_axis: list[Any] = []
    layout: list[Any] = []
    adv_entries = []
    for pos, e in enumerate(entries):
        if e is _NewAxis:
            layout.append(None)
        elif e is _Ellipsis:
            for _ in range(fill):
                layout.append(len(per_axis))
                per_axis.append(NormalizedSlice(0, 1, a.shape[len(per_axis)]))
        else:
            ax = len(per_axis)
            length = a.shape[ax]
            if isinstance(e, slice):
                per_axis.append(_normalize_slice(e, length, ax))
                layout.append(ax)
            elif isinstance(e, _IndexArray):
                if e.data is not None:
                    _check_constant_index(e.data, length, ax)
                per_axis.append(e.array)
                adv_entries.append(pos)
                layout.append("adv")
            elif advanced:  # numpy counts ints among arrays as advanced
                # (an unproven index stays as given: an index array counts a
                # negative entry from the end once, and checks it)
                per_axis.append(_int_index_array(
                    _normalize_int(e, length, ax)
                    if _proven_in_range(e, length) else e))
                adv_entries.append(pos)
                layout.append("adv")
            else:
                per_axis.append(_normalize_int(e, length, ax))

    if advanced:
        result, final = _advanced(a, per_axis, adv_entries, layout)
    else:
        if all(isinstance(i, NormalizedSlice) and i.start == 0 and i.step == 1
               and i.length == d for i, d in zip(per_axis, a.shape)):
            result = a
        else:
            result = BasicIndex(a, tuple(per_axis))
        final = tuple(1 if item is None else per_axis[item].length
                      for item in layout)
    if final != result.shape:
        result = Reshape(result, final, "C")
    return result


def _clamp_slices(a: Array, entries: list[Any], fill: int
                  ) -> tuple[Array, list[Any]]:
    """*a* with every slice of integer bounds that needs clamping against
    a symbolic length (or whose length is not affine) applied first, as
    :func:`~ftlazy.ops.clamped_slices.clamped_slice`, and its entry made a full
    slice (slices keep the axis order, so the rest of the index applies
    unchanged)."""
    from ftlazy.ops.clamped_slices import clamped_slice
    entries = list(entries)
    ax = 0
    for pos, e in enumerate(entries):
        if e is _Ellipsis:
            ax += fill
        elif e is not _NewAxis:
            if (isinstance(e, slice) and not isinstance(a.shape[ax], int)
                    and _normalize_slice(e, a.shape[ax], ax) is None):
                a = clamped_slice(a, ax, e)
                entries[pos] = slice(None)
            ax += 1
    return a, entries


def _advanced(a: Array, per_axis: list[Any], adv_entries: list[int],
              layout: list[Any]) -> tuple[Array, tuple]:
    """The AdvancedIndex (moved into numpy's placement) and the final shape
    that inserts the new axes."""
    index_arrays: list[Array] = []
    indices: list[Any] = []
    for spec in per_axis:
        if isinstance(spec, NormalizedSlice):
            indices.append(spec)
        else:
            indices.append(len(index_arrays))
            index_arrays.append(spec)
    try:
        bshape = sh.broadcast_shapes(*[x.shape for x in index_arrays])
    except ValueError:
        raise IndexError(
            "shape mismatch: indexing arrays could not be broadcast together "
            "with shapes " + " ".join(sh.shape_str(x.shape) for x in index_arrays)
        ) from None
    result: Array = AdvancedIndex(a, tuple(indices), tuple(index_arrays))

    # numpy keeps the index dimensions in place only if no entry (not even a
    # None or an empty ...) separates the advanced indices; AdvancedIndex
    # sees no Nones, so it may have kept them in place where numpy does not
    in_place = adv_entries[-1] - adv_entries[0] + 1 == len(adv_entries)
    if not in_place and result.advanced_adjacent():
        nb = len(bshape)
        before = sum(1 for i in indices[:result.advanced_positions()[0]]
                     if isinstance(i, NormalizedSlice))
        perm = (tuple(range(before, before + nb)) + tuple(range(before))
                + tuple(range(before + nb, result.ndim)))
        result = AxisPermutation(result, perm)

    final: list[ShapeComponent] = [] if in_place else list(bshape)
    placed = not in_place
    for item in layout:
        if item is None:
            final.append(1)
        elif item != "adv":
            final.append(per_axis[item].length)
        elif not placed:
            final.extend(bshape)
            placed = True
    return result, tuple(final)


def take(a: Any, indices: Any, axis: int | None = None) -> Array:
    """``numpy.take(a, indices, axis)``: elements of *a* at integer
    *indices* along *axis* (of the flattened array if *axis* is None).
    Constant indices are checked at build time, lazy ones at run time."""
    from ftlazy.fractal import gather
    a = as_array(a)
    if axis is None:
        a = ravel(a)
        axis = 0
    ax = normalize_axis(axis, a.ndim, "take")
    if isinstance(indices, Array):
        if indices.dtype.kind == "b":
            raise TypeError(f"take: {_MASK}")
        if indices.dtype.kind not in "iu":
            raise IndexError(f"take: indices must have an integer dtype, got "
                             f"{indices.dtype}")
        return gather(a, indices, ax)
    data = np.asarray(indices)
    entry = _constant_index(data, repr(indices))
    if isinstance(entry, int):
        entry = _IndexArray(asarray(data), data)
    _check_constant_index(entry.data, a.shape[ax], ax)
    return gather(a, entry.array, ax)
