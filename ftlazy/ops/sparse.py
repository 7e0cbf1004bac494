# SPDX-License-Identifier: MIT
"""Sparse matrices in compressed sparse row (CSR) form, with pytato's
constructor :func:`make_csr_matrix`.

A :class:`CSRMatrix` is a view of three lazy arrays: the values of its
stored elements, their column indices, and where each row's elements
start. Row ``i`` holds elements ``row_starts[i] <= k < row_starts[i+1]``
(elements outside ``[row_starts[0], row_starts[-1])`` belong to no row,
as in scipy). Nothing is built until it multiplies a dense array:
``A @ x`` is a map over the rows, seen as a FractalTensor whose offsets
are ``row_starts``, of ``sum_k values[k] * x[cols[k]]``. So it compiles
like any jagged map: one segment reduction over each row's elements, with
the bounds read from ``row_starts`` at run time, a column index out of
range an :class:`IndexError` and decreasing row starts a
:class:`ValueError` at run time, never a wrong result.

.. autofunction:: make_csr_matrix
.. autoclass:: CSRMatrix
    :members:
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ftlazy import shapes as sh
from ftlazy.array import Array
from ftlazy.ops.convert import ArrayLike, asarray

__all__ = ["CSRMatrix", "make_csr_matrix"]


class CSRMatrix:
    """A sparse ``(m, n)`` matrix of :attr:`values` at columns
    :attr:`col_indices`, row ``i`` being elements ``row_starts[i]`` to
    ``row_starts[i+1]``; see the module docs. Made by
    :func:`make_csr_matrix`."""

    def __init__(self, shape: tuple[Any, Any], values: Array,
                 col_indices: Array, row_starts: Array) -> None:
        self.shape = shape
        self.values = values
        self.col_indices = col_indices
        self.row_starts = row_starts

    @property
    def dtype(self) -> np.dtype:
        return self.values.dtype

    @property
    def ndim(self) -> int:
        return 2

    def __repr__(self) -> str:
        return (f"CSRMatrix(shape={sh.shape_str(self.shape)}, dtype={self.dtype}, "
                f"nnz={sh.shape_str(self.values.shape)[1:-2]})")

    def __matmul__(self, other: ArrayLike) -> Array:
        """The dense product ``self @ other``: *other* is ``(n,)``, giving
        ``(m,)``, or ``(n, k)``, giving ``(m, k)``."""
        from ftlazy.fractal_tensor import Jagged
        from ftlazy.fractal_tensor import map as ft_map
        from ftlazy.ops.reductions import sum as ft_sum
        x = asarray(other)
        if x.ndim not in (1, 2):
            raise ValueError(f"CSRMatrix @ x: x must have 1 or 2 axes, got "
                             f"shape {sh.shape_str(x.shape)}")
        if not sh.prove_equal(x.shape[0], self.shape[1]):
            raise ValueError(
                f"CSRMatrix @ x: the matrix has {self.shape[1]} columns but x "
                f"has {x.shape[0]} rows (shape {sh.shape_str(x.shape)})")
        rows = (self.row_starts,)
        values = Jagged(self.values[:, None], rows)
        cols = Jagged(self.col_indices, rows)

        def row_product(v: Array, c: Array) -> Array:
            if x.ndim == 1:
                return ft_sum(v[:, 0] * x[c])
            return ft_sum(v * x[c], axis=0)
        return ft_map(row_product, values, cols)

    def __array_ufunc__(self, *args: Any, **kwargs: Any) -> Any:
        return NotImplemented


def _one_axis(a: Any, what: str, kinds: str) -> Array:
    if not isinstance(a, (Array, np.ndarray)):
        raise TypeError(f"make_csr_matrix: {what} must be an array, got "
                        f"{type(a).__name__}")
    a = asarray(a)
    if a.ndim != 1:
        raise ValueError(f"make_csr_matrix: {what} must have one axis, got "
                         f"shape {sh.shape_str(a.shape)}")
    if a.dtype.kind not in kinds:
        raise TypeError(f"make_csr_matrix: {what} must be "
                        + ("integers" if kinds == "iu" else "numbers")
                        + f", got dtype {a.dtype}")
    return a


def make_csr_matrix(shape: Any, elem_values: ArrayLike,
                    elem_col_indices: ArrayLike, row_starts: ArrayLike,
                    ) -> CSRMatrix:
    """A sparse matrix of *shape* ``(m, n)`` (ints or size parameters) in
    CSR form: *elem_values* ``(nnz,)``, their columns *elem_col_indices*
    ``(nnz,)`` (integers) and *row_starts* ``(m + 1,)`` (integers); see
    the module docs. The shapes are checked when it is made, the index
    values when a product runs."""
    if not isinstance(shape, tuple) or len(shape) != 2:
        raise ValueError(f"make_csr_matrix: shape must be a pair (rows, "
                         f"columns), got {shape!r}")
    shape = sh.normalize_shape(shape)
    values = _one_axis(elem_values, "elem_values", "biufc")
    cols = _one_axis(elem_col_indices, "elem_col_indices", "iu")
    starts = _one_axis(row_starts, "row_starts", "iu")
    if not sh.prove_equal(values.shape[0], cols.shape[0]):
        raise ValueError(
            f"make_csr_matrix: elem_values has {values.shape[0]} elements but "
            f"elem_col_indices has {cols.shape[0]}")
    if not sh.prove_equal(starts.shape[0], sh.add(shape[0], 1)):
        raise ValueError(
            f"make_csr_matrix: row_starts must have rows + 1 = "
            f"{sh.add(shape[0], 1)} entries, got {starts.shape[0]}")
    if starts.dtype != np.int64:
        starts = starts.astype(np.int64)
    if cols.dtype != np.int64:
        cols = cols.astype(np.int64)
    return CSRMatrix(shape, values, cols, starts)
