# SPDX-License-Identifier: MIT
"""The double8/float8 path for flat elementwise kernels, and the cases that
must stay scalar."""

import numpy as np
import pytest

import ftlazy as ft

N = 8192
rng = np.random.default_rng(3)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_flat_elementwise_is_vectorized_and_correct(dtype):
    x = ft.make_placeholder("x", (N,), dtype)
    y = ft.make_placeholder("y", (N,), dtype)
    s = ft.make_placeholder("s", (), dtype)
    d = ft.make_dict_of_named_arrays({
        "w1": ft.exp(-x * x) * ft.sin(3 * x) + 0.5 * x / (1 + x * x),
        "mix": ft.sqrt(x + 1) * ft.tanh(y) - ft.log(y + 2) * s + x ** 2,
        "atan2": ft.arctan2(x, y + 1),
    })
    f = ft.compile(d)
    vector = {"float64": "double8", "float32": "float8"}[np.dtype(dtype).name]
    assert vector in f.source
    inputs = dict(x=rng.random(N, dtype=dtype), y=rng.random(N, dtype=dtype),
                  s=np.asarray(1.5, dtype=dtype))
    out, ref = f(**inputs), ft.evaluate_numpy(d, **inputs)
    # float32: a few ulp of the vector builtins, cancellation near zero
    rtol, atol = (1e-12, 1e-300) if dtype == np.float64 else (2e-6, 2e-6)
    for name in ref:
        assert out[name].dtype == ref[name].dtype and out[name].shape == (N,)
        np.testing.assert_allclose(out[name], ref[name], rtol=rtol, atol=atol)


def test_shared_subexpressions_on_vectors():
    """A value used several times becomes a private statement; on the
    vector path it is a private vector."""
    x = ft.make_placeholder("x", (N,), np.float64)
    shared = ft.sin(x) * 3 + 1
    f = ft.compile(shared * shared - ft.exp(shared) / (shared + 5))
    assert "double8" in f.source
    assert "double8 _ft_p" in f.source
    xv = rng.random(N)
    sv = np.sin(xv) * 3 + 1
    np.testing.assert_allclose(f(x=xv), sv * sv - np.exp(sv) / (sv + 5), rtol=1e-13)


def test_comparisons_and_conditionals_stay_scalar():
    x = ft.make_placeholder("x", (N,), np.float64)
    d = ft.make_dict_of_named_arrays({
        "clip": ft.where(x > 0.5, x, -x), "big": x > 0.25,
        "m": ft.maximum(x, 0.3), "fl": x // 0.1})
    f = ft.compile(d)
    assert "double8" not in f.source
    xv = rng.random(N)
    out, ref = f(x=xv), ft.evaluate_numpy(d, x=xv)
    for name in ref:
        np.testing.assert_array_equal(out[name], ref[name])


def test_lengths_not_divisible_by_the_width_stay_scalar():
    x = ft.make_placeholder("x", (N + 3,), np.float64)
    f = ft.compile(ft.exp(x))
    assert "double8" not in f.source
    xv = rng.random(N + 3)
    np.testing.assert_allclose(f(x=xv), np.exp(xv), rtol=1e-14)


def test_math_calls_on_vectors_in_row_loops():
    """2-D float bodies with math calls compute each call on 8 lanes at
    once (also inside a scan); results equal the scalar reference."""
    a = ft.make_placeholder("a", (16, 24), np.float64)
    b = ft.make_placeholder("b", (16, 24), np.float64)
    xs = ft.make_placeholder("xs", (5, 8, 16), np.float64)
    h0 = ft.make_placeholder("h0", (8, 16), np.float64)
    d = ft.make_dict_of_named_arrays({
        "nested": ft.exp(ft.sin(a) * 0.5) + ft.arctan2(a, b + 1),
        "rnn": ft.scan(lambda h, x: ft.tanh(h * 0.5 + x), xs, h0),
    })
    f = ft.compile(d)
    assert "_ft_vec" in f.source
    inputs = dict(a=rng.standard_normal((16, 24)), b=rng.random((16, 24)),
                  xs=rng.standard_normal((5, 8, 16)), h0=rng.standard_normal((8, 16)))
    out, ref = f(**inputs), ft.evaluate_numpy(d, **inputs)
    for name in ref:
        np.testing.assert_allclose(out[name], ref[name], rtol=1e-13, atol=1e-15)
