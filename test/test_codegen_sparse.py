# SPDX-License-Identifier: MIT
"""CSR matrices (``ft.make_csr_matrix``, pytato's constructor) times dense
vectors and matrices, against numpy's dense product, through
ft.evaluate_numpy and ft.compile (one program for every sparsity pattern:
empty rows, no stored element, no row); bad input at build and run time."""

from __future__ import annotations

import numpy as np
import pytest

import ftlazy as ft

RNG = np.random.default_rng(3)


def random_csr(m, n, density, dtype=np.float64):
    """(values, column indices, row starts, the dense matrix)."""
    dense = np.where(RNG.random((m, n)) < density,
                     RNG.standard_normal((m, n)), 0).astype(dtype)
    rows, cols = np.nonzero(dense)
    starts = np.searchsorted(rows, np.arange(m + 1)).astype(np.int64)
    return dense[rows, cols], cols.astype(np.int32), starts, dense


def symbolic_csr(dtype=np.float64):
    m, n, nnz = (ft.make_size_param(s) for s in ("m", "n", "nnz"))
    return ft.make_csr_matrix(
        (m, n), ft.make_placeholder("v", (nnz,), dtype),
        ft.make_placeholder("c", (nnz,), np.int32),
        ft.make_placeholder("rs", (m + 1,), np.int64)), n


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_products_with_vectors_and_matrices(dtype):
    a, n = symbolic_csr(dtype)
    x = ft.make_placeholder("x", (n,), dtype)
    xs = ft.make_placeholder("xs", (n, 3), dtype)
    result = ft.make_dict_of_named_arrays({"y": a @ x, "ys": a @ xs})
    f = ft.compile(result)
    tol = 1e-5 if dtype == np.float32 else 1e-12
    for m, cols, density in [(30, 20, 0.2), (5, 7, 0.0), (0, 4, 0.5),
                             (1, 1, 1.0), (12, 9, 0.9)]:
        v, c, rs, dense = random_csr(m, cols, density, dtype)
        xv = RNG.standard_normal(cols).astype(dtype)
        xsv = RNG.standard_normal((cols, 3)).astype(dtype)
        inputs = dict(v=v, c=c, rs=rs, x=xv, xs=xsv)
        for got in (f(**inputs), ft.evaluate_numpy(result, **inputs)):
            np.testing.assert_allclose(got["y"], dense @ xv, rtol=tol, atol=tol)
            np.testing.assert_allclose(got["ys"], dense @ xsv, rtol=tol,
                                       atol=tol)


def test_concrete_shapes_and_computed_operands():
    v, c, rs, dense = random_csr(6, 4, 0.5)
    a = ft.make_csr_matrix((6, 4), 2 * ft.make_data_wrapper(v), c, rs)
    x = ft.make_placeholder("x", (4,), np.float64)
    y = a @ ft.exp(x)
    assert y.shape == (6,) and a.dtype == np.float64
    xv = RNG.standard_normal(4)
    np.testing.assert_allclose(ft.compile(y)(x=xv), 2 * dense @ np.exp(xv))


def test_bad_indices_raise_at_run_time():
    a, n = symbolic_csr()
    f = ft.compile(a @ ft.make_placeholder("x", (n,), np.float64))
    v, c, rs, _ = random_csr(8, 5, 0.5)
    bad_cols = c.copy()
    bad_cols[0] = 5
    with pytest.raises(IndexError, match="5"):
        f(v=v, c=bad_cols, rs=rs, x=np.ones(5))
    decreasing = rs.copy()
    decreasing[3], decreasing[4] = rs[4] + 1, rs[3]
    with pytest.raises(ValueError, match="negative"):
        f(v=v, c=c, rs=decreasing, x=np.ones(5))


def test_bad_input_is_refused_when_built():
    v = ft.make_placeholder("v", (7,), np.float64)
    c = ft.make_placeholder("c", (7,), np.int64)
    rs = ft.make_placeholder("rs", (4,), np.int64)
    with pytest.raises(ValueError, match="shape must be a pair"):
        ft.make_csr_matrix((3,), v, c, rs)
    with pytest.raises(TypeError, match="elem_col_indices must be integers"):
        ft.make_csr_matrix((3, 5), v, v, rs)
    with pytest.raises(TypeError, match="row_starts must be an array, got list"):
        ft.make_csr_matrix((3, 5), v, c, [0, 1, 2, 7])
    with pytest.raises(ValueError, match="elem_values must have one axis"):
        ft.make_csr_matrix((3, 5), v[:, None], c, rs)
    with pytest.raises(ValueError, match="elem_col_indices has 6"):
        ft.make_csr_matrix((3, 5), v, c[:6], rs)
    with pytest.raises(ValueError, match="row_starts must have rows \\+ 1 = 5"):
        ft.make_csr_matrix((4, 5), v, c, rs)
    a = ft.make_csr_matrix((3, 5), v, c, rs)
    with pytest.raises(ValueError, match="5 columns but x has 4 rows"):
        a @ ft.make_placeholder("x", (4,), np.float64)
    with pytest.raises(ValueError, match="1 or 2 axes"):
        a @ ft.make_placeholder("x", (5, 2, 2), np.float64)
