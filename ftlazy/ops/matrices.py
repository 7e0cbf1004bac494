# SPDX-License-Identifier: MIT
"""Matrix construction and triangles: ``diag tril triu meshgrid``.

Each result is one :class:`~ftlazy.IndexLambda` (or, for ``meshgrid``, a
broadcast of each input) computed from its indices; shapes may be symbolic
where the result's shape stays affine.

.. autofunction:: diag
.. autofunction:: tril
.. autofunction:: triu
.. autofunction:: meshgrid
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pymbolic.primitives as prim

from ftlazy import shapes as sh
from ftlazy.array import Array, IndexLambda
from ftlazy.ops.convert import ArrayLike
from ftlazy.ops.creation import zeros
from ftlazy.ops.array_pad import _length_expr, clamp_index
from ftlazy.ops.shape_ops import _as_int, as_array, broadcast_to, reshape
from ftlazy.scalar_expr import index_var

__all__ = ["diag", "tril", "triu", "meshgrid"]


def _zero(dtype: np.dtype) -> np.generic:
    return np.zeros((), dtype)[()]


def _diagonal_length(rows: Any, cols: Any) -> Any:
    """``max(0, min(rows, cols))`` as a shape component: affine where which
    one it is can be proven for every size parameter value, else a
    data-dependent size."""
    if isinstance(rows, int) and isinstance(cols, int):
        return max(0, min(rows, cols))
    for length, other in ((rows, cols), (cols, rows)):
        if sh.prove_le(length, other) and sh.prove_le(0, length):
            return length
    from ftlazy.fractal_access import _size
    # (min is symmetric: one order, so that diag(a) and diag(a.T) agree)
    r, c = sorted((sh.to_affine(x).to_expr() for x in (rows, cols)), key=str)
    smaller = prim.If(prim.Comparison(r, "<", c), r, c)
    return _size(prim.If(prim.Comparison(smaller, "<", 0), 0, smaller))


def diagonal_view(a: Array, offset: int, axis1: int, axis2: int) -> Array:
    """Diagonal *offset* of axes *axis1* and *axis2* of *a* as
    ``numpy.diagonal`` gives it: the other axes in order, then the
    diagonal. Its length is a data-dependent size where it is not affine
    (``min(n, m)`` of an ``(n, m)`` array); the reads are then guarded, in
    range by construction."""
    r0, c0 = max(0, -offset), max(0, offset)
    n1, n2 = a.shape[axis1], a.shape[axis2]
    length = _diagonal_length(sh.add(n1, -r0), sh.add(n2, -c0))
    others = [i for i in range(a.ndim) if i not in (axis1, axis2)]
    d = index_var(len(others))
    index: list[Any] = [None] * a.ndim
    for out, i in enumerate(others):
        index[i] = index_var(out)
    index[axis1] = prim.Sum((d, np.int64(r0)))
    index[axis2] = prim.Sum((d, np.int64(c0)))
    read: Any = prim.Subscript(prim.Variable("_in0"), tuple(index))
    bindings: dict[str, Array] = {"_in0": a}
    if not sh.size_param_names(length) <= _names(n1, n2):
        from ftlazy.fractal_access import _guarded, derived_size_bindings
        for i, n in ((axis1, n1), (axis2, n2)):
            read = _guarded(read, index[i], n, a.dtype)
        bindings.update(derived_size_bindings((length,)))
    shape = tuple(a.shape[i] for i in others) + (length,)
    return IndexLambda(read, shape, a.dtype, bindings)


def _names(*components: Any) -> set[str]:
    return {name for c in components for name in sh.size_param_names(c)}


def diag(v: ArrayLike, k: int = 0) -> Array:
    """``numpy.diag``: for a 1-d *v*, a square 2-d array with *v* on
    diagonal *k* (positive: above the main one) and zeros elsewhere; for a
    2-d *v*, its diagonal *k* as a 1-d array (of a data-dependent length
    where it is not affine in the size parameters)."""
    k = _as_int(k, "diag: k")
    a = as_array(v)
    if a.ndim == 1:
        n = a.shape[0]
        side = sh.add(n, abs(k))
        row, col = index_var(0), index_var(1)
        # the element index, clamped so that off-diagonal reads stay in range
        along = row if k >= 0 else col
        if n == 0:
            return zeros((side, side), a.dtype)
        at = clamp_index(along, _length_expr(sh.add(n, -1)))
        on = prim.Comparison(prim.Sum((row, np.int64(k))), "==", col)
        body = prim.If(on, prim.Subscript(prim.Variable("_in0"), (at,)),
                       _zero(a.dtype))
        return IndexLambda(body, (side, side), a.dtype, {"_in0": a})
    if a.ndim != 2:
        raise ValueError(f"diag: the input must be 1-d or 2-d, got shape "
                         f"{sh.shape_str(a.shape)}")
    return diagonal_view(a, k, 0, 1)


def _triangle(m: ArrayLike, k: Any, lower: bool, what: str) -> Array:
    k = _as_int(k, f"{what}: k")
    a = as_array(m)
    if a.ndim == 0:
        raise ValueError(f"{what}: the input must be at least 1-d, got a 0-d "
                         "array")
    if a.ndim == 1:  # numpy broadcasts a row to a square matrix
        a = broadcast_to(a, (a.shape[0], a.shape[0]))
    row, col = index_var(a.ndim - 2), index_var(a.ndim - 1)
    # lower: keep col <= row + k; upper: keep col >= row + k
    keep = prim.Comparison(col, "<=" if lower else ">=",
                           prim.Sum((row, np.int64(k))))
    read = prim.Subscript(prim.Variable("_in0"),
                          tuple(index_var(i) for i in range(a.ndim)))
    body = prim.If(keep, read, _zero(a.dtype))
    return IndexLambda(body, a.shape, a.dtype, {"_in0": a})


def tril(m: ArrayLike, k: int = 0) -> Array:
    """``numpy.tril``: *m* with the elements above diagonal *k* of its last
    two axes set to zero (leading axes are batches; a 1-d *m* is repeated
    into a square matrix, as numpy does)."""
    return _triangle(m, k, True, "tril")


def triu(m: ArrayLike, k: int = 0) -> Array:
    """``numpy.triu``: *m* with the elements below diagonal *k* of its last
    two axes set to zero (leading axes are batches; a 1-d *m* is repeated
    into a square matrix, as numpy does)."""
    return _triangle(m, k, False, "triu")


def meshgrid(*xi: ArrayLike, copy: bool = True, sparse: bool = False,
             indexing: str = "xy") -> tuple[Array, ...]:
    """``numpy.meshgrid``: coordinate arrays from 1-d (or flattened)
    coordinate vectors. ``indexing="xy"`` (Cartesian) swaps the first two
    output axes, ``"ij"`` does not; with *sparse*, each result keeps length
    1 on the other axes. *copy* is accepted for numpy compatibility (lazy
    arrays are never views)."""
    if indexing not in ("xy", "ij"):
        raise ValueError(f"meshgrid: indexing must be 'xy' or 'ij', got "
                         f"{indexing!r}")
    if not isinstance(sparse, (bool, np.bool_)):
        raise TypeError(f"meshgrid: sparse must be a bool, got {sparse!r}")
    vectors = []
    for i, x in enumerate(xi):
        a = as_array(x)
        vectors.append(a if a.ndim == 1 else reshape(a, (-1,)))
    ndim = len(vectors)
    lengths = [v.shape[0] for v in vectors]
    if indexing == "xy" and ndim > 1:
        lengths[0], lengths[1] = lengths[1], lengths[0]
    results = []
    for i, v in enumerate(vectors):
        position = i
        if indexing == "xy" and ndim > 1 and i < 2:
            position = 1 - i
        shape = [1] * ndim
        shape[position] = v.shape[0]
        grid = reshape(v, tuple(shape)) if ndim > 1 else v
        results.append(grid if sparse else broadcast_to(grid, tuple(lengths)))
    return tuple(results)
