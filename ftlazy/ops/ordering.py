# SPDX-License-Identifier: MIT
"""Ordering: ``argmax argmin sort argsort`` with numpy's semantics.

``argmax`` and ``argmin`` are two reductions: the extremum (``amax``,
which propagates NaN), then the smallest index whose element equals it or
is NaN. So ties give the first index and a NaN gives the first NaN's index,
as in numpy. The result is ``int64`` (numpy's ``intp``).

An empty reduced axis of static length 0 is numpy's :class:`ValueError`
("attempt to get argmax of an empty sequence") when the node is built. An
axis of symbolic length that turns out to be 0 fails where ``amax`` over
it fails: :func:`ftlazy.evaluate_numpy` and compiled programs raise
:class:`ValueError` at run time, naming the axis length.

``sort`` and ``argsort`` count ranks: the rank of element ``i`` along the
axis is the number of elements that sort before it (smaller, or equal with
a smaller index; NaN sorts last, as in numpy), ``argsort[k]`` is the index
whose rank is ``k``, and ``sort`` gathers the elements in that order. This
is ``O(n**2)`` work per lane, with no data-dependent control flow, so it is
offered only for axes of up to :data:`MAX_SORT_LENGTH`: a longer concrete
axis is a :class:`NotImplementedError` at graph-build time, a longer
symbolic one (each sequence of a FractalTensor sorted in a map) a
:class:`ValueError` at run time. The order is stable for every ``kind`` (a valid answer for each of
numpy's kinds).

.. autofunction:: argmax
.. autofunction:: argmin
.. autofunction:: argsort
.. autofunction:: sort
.. autodata:: MAX_SORT_LENGTH
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pymbolic.primitives as prim

from ftlazy import shapes as sh
from ftlazy.array import Array, IndexLambda
from ftlazy.ops.convert import ArrayLike, asarray, is_scalar
from ftlazy.ops.reductions import _reduced_read, amax, amin
from ftlazy.ops.shape_ops import expand_dims, normalize_axis, ravel, reshape
from ftlazy.scalar_expr import Reduce, index_var, reduction_var

__all__ = ["argmax", "argmin", "argsort", "sort"]

#: the longest (concrete) axis that :func:`sort` and :func:`argsort` accept:
#: their rank count costs ``n**2`` comparisons per lane
MAX_SORT_LENGTH = 1024

_INDEX = np.dtype(np.int64)
_KINDS = (None, "quicksort", "mergesort", "heapsort", "stable")


def _check_orderable(a: Array, what: str) -> None:
    if a.dtype.kind not in "biuf":
        raise TypeError(f"{what}: the array's dtype {a.dtype} is not supported "
                        "(bool, integer and real floating-point arrays are)")


def _is_nan(e: Any, dtype: np.dtype) -> Any:
    """Whether *e* is NaN (never for non-float dtypes)."""
    if dtype.kind != "f":
        return False
    return prim.Call(prim.Variable("isnan"), (e,))


def _whole_or_axis(a: Array, axis: Any, what: str) -> tuple[Array, int]:
    """``(array, axis)``: *a* flattened with axis 0 for ``axis=None``, else
    *a* and the normalized *axis*."""
    if axis is None:
        if a.ndim == 1:
            return a, 0
        try:
            return ravel(a), 0
        except ValueError as err:
            raise ValueError(f"{what} with axis=None flattens the array: "
                             f"{err}") from None
    if a.ndim == 0:
        # numpy treats a 0-d array as one element along axis 0 or -1
        normalize_axis(axis, 1, what)
        return reshape(a, (1,)), 0
    return a, normalize_axis(axis, a.ndim, what)


def _arg_extremum(name: str, a: ArrayLike, axis: Any, keepdims: bool) -> Any:
    if is_scalar(a):
        return getattr(np, name)(a, axis=axis, keepdims=keepdims)
    if not isinstance(keepdims, (bool, np.bool_)):
        raise TypeError(f"{name}: keepdims must be a bool, got {keepdims!r}")
    arr = asarray(a)
    _check_orderable(arr, name)
    flat, ax = _whole_or_axis(arr, axis, name)
    if flat.shape[ax] == 0:
        raise ValueError(f"attempt to get {name} of an empty sequence (axis "
                         f"{ax} of the array of shape {sh.shape_str(flat.shape)})")
    extremum = (amax if name == "argmax" else amin)(flat, axis=ax)
    read, bounds, out_shape = _reduced_read(flat, (ax,), False)
    best = (prim.Subscript(prim.Variable("_in1"),
                           tuple(index_var(i) for i in range(len(out_shape))))
            if out_shape else prim.Variable("_in1"))
    hit: Any = prim.Comparison(read, "==", best)
    nan = _is_nan(read, flat.dtype)
    if nan is not False:
        hit = prim.LogicalOr((hit, nan))
    position = prim.Variable(bounds[0][0])
    never = np.int64(np.iinfo(np.int64).max)
    body = Reduce("min", prim.If(hit, position, never), bounds)
    result: Array = IndexLambda(body, out_shape, _INDEX,
                                {"_in0": flat, "_in1": extremum})
    if keepdims:
        if axis is None:
            result = reshape(result, (1,) * arr.ndim)
        elif arr.ndim:
            result = expand_dims(result, ax)
    return result


def argmax(a: ArrayLike, axis: int | None = None, keepdims: bool = False
           ) -> Any:
    """The index of the largest element along *axis* (``None``: of the
    flattened array), as int64. Ties give the first index; a NaN counts as
    the largest (the first NaN's index), as in numpy. An empty axis is a
    :class:`ValueError`."""
    return _arg_extremum("argmax", a, axis, keepdims)


def argmin(a: ArrayLike, axis: int | None = None, keepdims: bool = False
           ) -> Any:
    """The index of the smallest element along *axis* (``None``: of the
    flattened array), as int64. Ties give the first index; a NaN counts as
    the smallest (the first NaN's index), as in numpy. An empty axis is a
    :class:`ValueError`."""
    return _arg_extremum("argmin", a, axis, keepdims)


# {{{ sorting by rank counts

def _sort_axis(a: ArrayLike, axis: Any, kind: Any, what: str) -> tuple[Array, int]:
    if kind not in _KINDS:
        raise ValueError(f"{what}: kind must be one of {_KINDS[1:]} or None, "
                         f"got {kind!r}")
    arr = asarray(a)
    _check_orderable(arr, what)
    if arr.ndim == 0:
        # numpy argsorts a 0-d array as one element; sorting needs axis=None
        if axis is not None:
            normalize_axis(axis, 1 if what == "argsort" else 0, what)
        arr = reshape(arr, (1,))
        axis = 0
    flat, ax = _whole_or_axis(arr, axis, what)
    n = flat.shape[ax]
    if not isinstance(n, int):
        return flat, ax
    if n > MAX_SORT_LENGTH:
        raise NotImplementedError(
            f"{what}: sorting along an axis of length {n} is not supported "
            f"(at most {MAX_SORT_LENGTH}: ftlazy sorts by counting ranks, "
            "n**2 comparisons)")
    return flat, ax


def _before(x: Any, y: Any, dtype: np.dtype) -> Any:
    """Whether *x* sorts strictly before *y* (NaN sorts last)."""
    if dtype.kind == "b":
        return prim.LogicalAnd((prim.LogicalNot(x), y))
    less = prim.Comparison(x, "<", y)
    if dtype.kind != "f":
        return less
    return prim.LogicalOr((less, prim.LogicalAnd((
        _is_nan(y, dtype), prim.LogicalNot(_is_nan(x, dtype))))))


def _length_guard(a: Array, ax: int, what: str) -> dict[str, Array]:
    """For an axis *ax* of symbolic length, an unread binding whose shape
    is negative exactly when the axis is longer than
    :data:`MAX_SORT_LENGTH` (which every evaluator refuses at run time with
    this message, naming the length); none for a concrete axis, checked
    when the node is built."""
    n = a.shape[ax]
    if isinstance(n, int):
        return {}
    from ftlazy.ops.requirements import shape_requirement
    return {"_fits": shape_requirement(
        sh.sub(MAX_SORT_LENGTH, n), a,
        f"ft.{what}: sorting along an axis longer than {MAX_SORT_LENGTH} is "
        f"not supported (the axis of length {n}; ftlazy sorts by counting "
        "ranks, n**2 comparisons)")}


def _ranks(a: Array, ax: int, what: str) -> IndexLambda:
    """The stable rank of each element of *a* along *ax*."""
    n = a.shape[ax]
    other = reduction_var(0)
    idx = [index_var(i) for i in range(a.ndim)]
    mine = prim.Subscript(prim.Variable("_in0"), tuple(idx))
    idx[ax] = other
    theirs = prim.Subscript(prim.Variable("_in0"), tuple(idx))
    earlier = prim.LogicalOr((
        _before(theirs, mine, a.dtype),
        prim.LogicalAnd((prim.LogicalNot(_before(mine, theirs, a.dtype)),
                         prim.Comparison(other, "<", index_var(ax))))))
    body = Reduce("sum", prim.If(earlier, np.int64(1), np.int64(0)),
                  ((other.name, 0, n),))
    return IndexLambda(body, a.shape, _INDEX, {"_in0": a}
                       | _length_guard(a, ax, what))


def _order(a: Array, ax: int, what: str) -> IndexLambda:
    """``argsort(a, axis=ax)``: the index of rank ``k`` at position ``k``."""
    ranks = _ranks(a, ax, what)
    source = reduction_var(0)
    idx = [index_var(i) for i in range(a.ndim)]
    idx[ax] = source
    rank = prim.Subscript(prim.Variable("_in0"), tuple(idx))
    body = Reduce("sum", prim.If(prim.Comparison(rank, "==", index_var(ax)),
                                 source, np.int64(0)),
                  ((source.name, 0, a.shape[ax]),))
    return IndexLambda(body, a.shape, _INDEX, {"_in0": ranks})


def argsort(a: ArrayLike, axis: int | None = -1, kind: str | None = None
            ) -> Any:
    """The indices that sort *a* along *axis* (``None``: the flattened
    array), as int64; NaN sorts last and equal elements keep their order
    (for every *kind*). Only axes of up to :data:`MAX_SORT_LENGTH`
    elements are supported (see the module's notes)."""
    if is_scalar(a):
        return np.argsort(a, axis=axis, kind=kind)
    flat, ax = _sort_axis(a, axis, kind, "argsort")
    return _order(flat, ax, "argsort")


def sort(a: ArrayLike, axis: int | None = -1, kind: str | None = None) -> Any:
    """*a* sorted along *axis* (``None``: the flattened array); NaN sorts
    last. Only axes of up to :data:`MAX_SORT_LENGTH` elements are
    supported (see the module's notes)."""
    if is_scalar(a):
        return np.sort(a, axis=axis, kind=kind)
    flat, ax = _sort_axis(a, axis, kind, "sort")
    order = _order(flat, ax, "sort")
    idx = [index_var(i) for i in range(flat.ndim)]
    idx[ax] = prim.Subscript(prim.Variable("_in1"),
                             tuple(index_var(i) for i in range(flat.ndim)))
    return IndexLambda(prim.Subscript(prim.Variable("_in0"), tuple(idx)),
                       flat.shape, flat.dtype, {"_in0": flat, "_in1": order})

# }}}

# vim: foldmethod=marker
