# SPDX-License-Identifier: MIT
"""Array creation against numpy: values, dtypes, symbolic shapes, errors."""

from __future__ import annotations

import warnings

import numpy as np
import pymbolic.primitives as prim
import pytest
from test_elementwise import assert_same

import ftlazy as ft
from ftlazy.array import IndexLambda

DTYPES = [np.bool_, np.int8, np.int32, np.int64, np.uint16, np.float16,
          np.float32, np.float64, np.complex64, np.complex128]


@pytest.mark.parametrize("dt", DTYPES + [None])
@pytest.mark.parametrize("shape", [(), (0,), (3,), (2, 0, 4), (1, 1), 5])
def test_zeros_ones(dt, shape):
    kwargs = {} if dt is None else {"dtype": dt}
    for name in ("zeros", "ones"):
        lazy = getattr(ft, name)(shape, **kwargs)
        assert isinstance(lazy, IndexLambda) and not lazy.bindings
        assert_same(lazy, getattr(np, name)(shape, **kwargs))


@pytest.mark.parametrize("fill", [2, 2.5, True, 1 - 1j, np.float32(1.5), np.int8(-3),
                                  np.uint8(200), -7, np.nan, np.float32("nan"),
                                  -np.inf])
@pytest.mark.parametrize("dt", [None, np.int8, np.float32, np.complex128, np.bool_])
def test_full(fill, dt):
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            expected = np.full((2, 3), fill, dtype=dt)
        except (OverflowError, TypeError) as e:
            with pytest.raises(type(e)):
                ft.full((2, 3), fill, dtype=dt)
            return
        lazy = ft.full((2, 3), fill, dtype=dt)
    assert_same(lazy, expected)


def test_full_errors():
    with pytest.raises(OverflowError, match="300 out of bounds for int8"):
        ft.full(3, 300, dtype=np.int8)
    with pytest.raises(OverflowError, match="300"):
        ft.full_like(np.zeros(2, np.int8), 300)
    with pytest.raises(TypeError, match="not a valid dtype"):
        ft.zeros(3, dtype="nonsense")
    with pytest.raises(TypeError, match="unsupported dtype"):
        ft.ones(3, dtype=object)
    with pytest.raises(ValueError, match="negative dimension"):
        ft.zeros((2, -1))
    with pytest.raises(TypeError, match="integers"):
        ft.ones((2.5,))
    with pytest.raises(TypeError, match="str"):
        ft.full(3, "x")
    with pytest.raises(ValueError, match=r"\(3,\).*\(4,\)"):
        ft.full((3,), np.ones(4))
    with pytest.raises(ValueError, match=r"\(2, 3\) does not broadcast to "
                       r"shape \(3,\)"):
        ft.full((3,), np.ones((2, 3)))


def test_full_with_array_fill_value():
    row = np.arange(3.0)
    lazy = ft.full((2, 3), ft.make_placeholder("r", (3,), np.float64))
    assert_same(lazy, np.full((2, 3), row), r=row)
    assert_same(ft.full((2, 3), ft.asarray(np.float32(2)), dtype=np.int16),
                np.full((2, 3), np.float32(2), dtype=np.int16))
    assert_same(ft.full((2, 3), row, dtype=np.int32),
                np.full((2, 3), row, dtype=np.int32))


def test_like_functions():
    a = np.arange(6, dtype=np.int16).reshape(2, 3)
    x = ft.make_placeholder("a", (2, 3), np.int16)
    assert_same(ft.zeros_like(x), np.zeros_like(a))
    assert_same(ft.ones_like(x, dtype=np.float32), np.ones_like(a, dtype=np.float32))
    assert_same(ft.full_like(x, 2.7), np.full_like(a, 2.7))
    assert_same(ft.full_like(x, 2.7, dtype=np.float64),
                np.full_like(a, 2.7, dtype=np.float64))
    assert_same(ft.zeros_like(a), np.zeros_like(a))
    assert_same(ft.ones_like(3.5), np.ones_like(3.5))


def test_symbolic_shapes():
    n = ft.make_size_param("n")
    z = ft.zeros((n, 2 * n + 1), dtype=np.int32)
    assert z.shape == (prim.Variable("n"), ft.make_placeholder(
        "p", (2 * n + 1,), np.float64).shape[0])
    assert_same(z, np.zeros((3, 7), np.int32), n=3)
    x = ft.make_placeholder("x", (n,), np.float64)
    xv = np.arange(4.0)
    assert_same(x + ft.ones((n,)), xv + 1, x=xv)
    assert_same(ft.full_like(x, 2.0) * x, 2 * xv, x=xv)
    assert_same(x * ft.eye(n), xv * np.eye(4), x=xv)
    assert_same(ft.arange(n) + x, np.arange(4) + xv, x=xv)
    assert_same(ft.arange(2, n + 2) - x, np.arange(2, 6) - xv, x=xv)


@pytest.mark.parametrize("args, kwargs", [
    ((5,), {}), ((0,), {}), ((-3,), {}), ((1, 10, 3), {}), ((10, 1, -3), {}),
    ((0, 1, 0.1), {}), ((0.5, 4), {}), ((2.5,), {}), ((1, -4, -0.75), {}),
    ((5,), {"dtype": np.float32}), ((0, 5, 1.5), {"dtype": np.int64}),
    ((np.int32(5),), {}), ((0, np.float32(2)), {}), ((np.uint8(3),), {}),
    ((3, 3), {}), ((-2, 3, 2), {"dtype": np.int8}), ((True,), {}),
    ((0, 1, 0.3), {"dtype": np.float32}), ((1e3, 1e3 + 5), {}),
])
def test_arange(args, kwargs):
    expected = np.arange(*args, **kwargs)
    assert_same(ft.arange(*args, **kwargs), expected)


def test_arange_symbolic_stop():
    n = ft.make_size_param("n")
    r = ft.arange(n)
    assert r.shape == (prim.Variable("n"),) and r.dtype == np.int64
    assert_same(r, np.arange(5), n=5)
    assert_same(ft.arange(3, 2 * n + 3, dtype=np.float32),
                np.arange(3, 7, dtype=np.float32), n=2)
    assert_same(ft.arange(0, n, 1), np.arange(0), n=0)
    with pytest.raises(ValueError, match="symbolic stop.*step 1"):
        ft.arange(0, n, 2)
    with pytest.raises(ValueError, match="integer start"):
        ft.arange(0.5, n)
    with pytest.raises(TypeError, match="affine"):
        ft.arange(ft.make_placeholder("x", (), np.float64))


def test_arange_errors():
    with pytest.raises(ValueError, match="step must not be zero"):
        ft.arange(0, 1, 0)
    with pytest.raises(TypeError, match="complex"):
        ft.arange(0, 1j, 0.5, dtype=np.float64)
    with pytest.raises(TypeError, match="str"):
        ft.arange(0, 3, "1")


@pytest.mark.parametrize("n, m, k", [(3, None, 0), (3, 4, 1), (4, 3, -1), (2, 5, 7),
                                     (0, None, 0), (3, 3, -5), (1, 1, 0)])
@pytest.mark.parametrize("dt", [np.float64, np.int32, np.bool_, np.complex64])
def test_eye(n, m, k, dt):
    assert_same(ft.eye(n, m, k=k, dtype=dt), np.eye(n, m, k=k, dtype=dt))


def test_eye_symbolic_and_errors():
    n = ft.make_size_param("n")
    assert_same(ft.eye(n, n + 1, k=1), np.eye(3, 4, k=1), n=3)
    with pytest.raises(TypeError, match="k must be an int"):
        ft.eye(3, k=1.5)
    with pytest.raises(ValueError, match="negative"):
        ft.eye(-1)


@pytest.mark.parametrize("args, kwargs", [
    ((0, 1), {}), ((0, 1, 5), {}), ((1, 0, 5), {}), ((0, 10, 4), {"dtype": np.int32}),
    ((0, 1, 5), {"endpoint": False}), ((2, 2, 3), {}), ((0, 1, 1), {}),
    ((0, 1, 0), {}), ((np.float32(0), 1, 7), {}), ((-3, 7, 11), {"dtype": np.int64}),
    ((0, 1 + 1j, 4), {}), ((0, 1, 1), {"endpoint": False}), ((5, -5, 9), {}),
    ((0, 1e-300, 3), {}), ((-1.5, 2.5, 6), {"dtype": np.float16}),
])
def test_linspace(args, kwargs):
    expected = np.linspace(*args, **kwargs)
    assert_same(ft.linspace(*args, **kwargs), expected)
    lazy, step = ft.linspace(*args, retstep=True, **kwargs)
    _, expected_step = np.linspace(*args, retstep=True, **kwargs)
    assert_same(lazy, expected)
    np.testing.assert_allclose(step, expected_step, equal_nan=True)


@pytest.mark.parametrize("args, kwargs", [
    ((0, 1), {}), ((1, 0), {"endpoint": False}), ((-3, 7), {"dtype": np.int64}),
    ((2, 2), {}), ((0, 1e-320), {}), ((0, 1 + 1j), {}),
    ((np.float32(0), 1), {}), ((5, -5), {"dtype": np.float32}),
])
def test_linspace_of_symbolic_length(args, kwargs):
    # (num = a size parameter: "'SizeParam' object cannot be interpreted as
    # an integer")
    n = ft.make_size_param("n")
    lazy, step = ft.linspace(*args, n, retstep=True, **kwargs)
    both = ft.make_dict_of_named_arrays({"samples": lazy, "step": step})
    f = ft.compile(both)
    for num in (0, 1, 2, 7):
        want, want_step = np.linspace(*args, num, retstep=True, **kwargs)
        for got in (ft.evaluate_numpy(both, n=num), f(n=num)):
            assert got["samples"].dtype == want.dtype
            np.testing.assert_allclose(got["samples"], want, rtol=1e-6)
            np.testing.assert_allclose(got["step"], want_step, rtol=1e-6,
                                       equal_nan=True)


def test_linspace_over_each_sequence():
    xs = ft.make_jagged_placeholder("xs", (2,), np.float64, depth=2)
    ramp = ft.map(lambda s: s * ft.linspace(0.0, 1.0, s.shape[0])[:, None], xs)
    batch = [np.ones((3, 2)), np.ones((0, 2)), np.full((1, 2), 2.0)]
    for got in (ft.evaluate_numpy(ramp, xs=batch), ft.compile(ramp)(xs=batch)):
        for g, s in zip(got.tolist(), batch, strict=True):
            np.testing.assert_allclose(g, s * np.linspace(0, 1, len(s))[:, None])
    # (the step: a casts of the length and a NaN, which the jagged
    # lowering's walk of names refused)
    steps = ft.map(lambda s: ft.linspace(0.0, 1.0, s.shape[0], retstep=True)[1],
                   xs)
    want = [np.linspace(0, 1, len(s), retstep=True)[1] for s in batch]
    with warnings.catch_warnings():
        warnings.simplefilter("error", ft.HostEvaluationWarning)
        compiled = ft.compile(steps)(xs=batch)
    for got in (ft.evaluate_numpy(steps, xs=batch), compiled):
        np.testing.assert_allclose(got, want)


def test_linspace_errors():
    with pytest.raises(ValueError, match="-1.*non-negative"):
        ft.linspace(0, 1, -1)
    with pytest.raises(TypeError, match="start and stop must be scalars"):
        ft.linspace(np.zeros(2), 1)
    with pytest.raises(TypeError, match="num must be an int or an affine"):
        ft.linspace(0, 1, 2.5)


def test_creation_exports_documented():
    from ftlazy.ops import creation, reductions
    for mod in (creation, reductions):
        for name in mod.__all__:
            assert getattr(ft, name) is getattr(mod, name)
            assert getattr(mod, name).__doc__, name


def test_negative_zero_is_its_own_constant():
    zeros = ft.zeros(3)
    negative = ft.full(3, -0.0)
    assert negative is not zeros
    with np.errstate(divide="ignore"):
        assert_same(1 / negative, 1 / np.full(3, -0.0))
    x = ft.make_placeholder("x", (2,), np.float64)
    assert (x * 0.0) is not (x * -0.0)
    assert (x * 0.0) is (x * 0.0)
    assert ft.full(2, 1, dtype=np.int8) is not ft.full(2, 1, dtype=np.int16)
