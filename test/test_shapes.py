# SPDX-License-Identifier: MIT
"""Affine shapes over size params, decided with islpy."""

import numpy as np
import pymbolic.primitives as prim
import pytest

import ftlazy as ft
from ftlazy import shapes as sh

n = ft.make_size_param("n")
m = ft.make_size_param("m")
N, M = prim.Variable("n"), prim.Variable("m")


def test_canonical_forms_are_equal():
    a = ft.make_placeholder("a", (n + 1, 2 * n), np.float64)
    b = ft.make_placeholder("a", (1 + n, n * 2), np.float64)
    assert a is b
    assert a.shape[1] == sh.normalize_component(n + n)


@pytest.mark.parametrize("bad, exc, msg", [
    ((-1,), ValueError, "negative"),
    ((2.5,), TypeError, "integers"),
    (("n",), TypeError, "integers"),
    ((n * m,), ValueError, "affine"),
    ((n - n - 1,), ValueError, "negative"),
])
def test_bad_shapes(bad, exc, msg):
    with pytest.raises(exc, match=msg):
        ft.make_placeholder("x", bad, np.float64)


def test_non_integer_size_expression_rejected():
    with pytest.raises(TypeError):
        ft.make_placeholder("x", (n / 2,), np.float64)


def test_proofs():
    assert sh.prove_equal(N + 1, 1 + N)
    assert not sh.prove_equal(N, N + 1)
    assert sh.prove_different(N, N + 1)
    assert not sh.prove_equal(N, M)
    assert not sh.prove_different(N, M)
    assert sh.prove_le(N, N + M)
    assert sh.prove_lt(N, 2 * N + 1)
    assert not sh.prove_lt(N, 2 * N)


def test_broadcast_shapes():
    assert sh.broadcast_shapes((N, 1), (1, 4)) == (N, 4)
    assert sh.broadcast_shapes((3, 1), (4,)) == (3, 4)
    assert sh.broadcast_shapes((), (N,)) == (N,)
    with pytest.raises(ValueError, match=r"\(n,\) \(n \+ 1,\).*differ"):
        sh.broadcast_shapes((N,), (N + 1,))
    with pytest.raises(ValueError, match=r"\(n,\) \(m,\).*cannot be proven"):
        sh.broadcast_shapes((N,), (M,))
    with pytest.raises(ValueError, match=r"\(3,\) \(4,\)"):
        sh.broadcast_shapes((3,), (4,))


def test_product_and_division():
    assert sh.product((N, 4)) == sh.normalize_component(4 * n)
    with pytest.raises(sh.NonAffineError, match="affine"):
        sh.product((N, M))
    with pytest.raises(sh.NonAffineError):
        sh.exact_divide(sh.to_affine(N * 2 + 1), 2, "x")


def test_solve_and_evaluate():
    env = {}
    assert sh.solve_component(sh.normalize_component(2 * n + 1), 7, env) == "n"
    assert env == {"n": 3}
    assert sh.evaluate_shape((N, 2 * N + 1), env) == (3, 7)
    with pytest.raises(ValueError, match="no non-negative"):
        sh.solve_component(sh.normalize_component(2 * m), 7, {})
