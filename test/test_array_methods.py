# SPDX-License-Identifier: MIT
"""numpy's ndarray methods on lazy arrays: each the ftlazy function of the
same name, checked against the numpy method through the reference evaluator
and a compiled program."""

from __future__ import annotations

import numpy as np
import pytest
from pymbolic import evaluate

import ftlazy as ft

RNG = np.random.default_rng(3)
A = RNG.standard_normal((3, 1, 4))
M = RNG.standard_normal((4, 4))

#: method name -> (arguments, the numpy array it is called on)
METHODS = {
    "flatten": ((), A),
    "ravel": ((), A),
    "squeeze": ((), A),
    "squeeze_axis": ((1,), A),
    "swapaxes": ((0, 2), A),
    "argmax": ((), A),
    "argmax_axis": ((2,), A),
    "argmin": ((-1,), A),
    "clip": ((-0.5, 0.5), A),
    "dot": ((M,), A),
    "cumsum": ((2,), A),
    "cumprod": ((0,), A),
    "var": ((2,), A),
    "std": ((None,), A),
    "std_axis": ((0,), A),
    "round": ((2,), A),
    "conj": ((), A),
    "take": ((np.array([2, 0]), 2), A),
    "trace": ((), M),
    "sort": ((), A),
    "argsort": ((0,), A),
}


@pytest.mark.parametrize("name", list(METHODS))
def test_methods_match_numpy(name):
    args, data = METHODS[name]
    method = name.split("_")[0]
    x = ft.make_placeholder("x", data.shape, data.dtype)
    lazy = getattr(x, method)(*args)
    # (numpy's sort sorts in place: the lazy method returns what np.sort
    # does)
    want = (np.sort(data, *args) if method == "sort"
            else getattr(data, method)(*args))
    assert lazy.shape == want.shape and lazy.dtype == want.dtype
    for got in (ft.evaluate_numpy(lazy, x=data), ft.compile(lazy)(x=data)):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def test_properties_match_numpy():
    x = ft.make_placeholder("x", (2, 3), np.complex128)
    data = RNG.standard_normal((2, 3)) + 1j * RNG.standard_normal((2, 3))
    assert x.itemsize == data.itemsize and x.nbytes == data.nbytes
    for lazy, want in ((x.real, data.real), (x.imag, data.imag)):
        np.testing.assert_array_equal(ft.evaluate_numpy(lazy, x=data), want)
    n = ft.make_size_param("n")
    y = ft.make_placeholder("y", (n, 2), np.float32)
    assert y.itemsize == 4
    assert evaluate(y.nbytes, {"n": 5}) == 40


def test_method_errors_name_the_argument():
    x = ft.make_placeholder("x", (3, 1, 4), np.float64)
    with pytest.raises(ValueError, match="axis"):
        x.squeeze(0)
    with pytest.raises((ValueError, IndexError), match="axis"):
        x.swapaxes(0, 3)
    with pytest.raises(TypeError, match="ddof"):
        x.std(ddof=0.5)
