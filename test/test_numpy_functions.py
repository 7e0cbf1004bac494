# SPDX-License-Identifier: MIT
"""The numpy functions users reach for first (argmax, cumsum, sort, diag,
tril, meshgrid, softmax, round, pad, complex arange, ...) against numpy
through ``ft.evaluate_numpy``; their bad input; and numpy's dispatch
(``np.argmax(lazy)`` builds a lazy node). The OpenCL side is in
test_codegen_numpy_functions.py."""

from __future__ import annotations

import runpy
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from numpy.exceptions import AxisError

import ftlazy as ft
from ftlazy.analysis import get_inputs
from ftlazy.fractal import Scan
from ftlazy.node import topological_order
from ftlazy.ops.interop import supported_functions, supported_ufuncs
from ftlazy.target.binding import collect_size_names


def assert_same(actual: Any, expected: Any, what: str = "") -> None:
    """Same dtype, shape and values (NaNs equal; floats to a few ulps)."""
    actual, expected = np.asarray(actual), np.asarray(expected)
    assert actual.dtype == expected.dtype, (what, actual.dtype, expected.dtype)
    assert actual.shape == expected.shape, (what, actual.shape, expected.shape)
    if expected.dtype.kind in "fc":
        rtol = 1e-5 if expected.dtype in (np.float32, np.float16) else 1e-12
        np.testing.assert_allclose(actual, expected, rtol=rtol, atol=rtol,
                                   equal_nan=True, err_msg=what)
    else:
        np.testing.assert_array_equal(actual, expected, err_msg=what)


def evaluate(lazy: Any, **values: np.ndarray) -> Any:
    names = {p.name for p in get_inputs(lazy)
             if isinstance(p, ft.Placeholder)} | collect_size_names([lazy])
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return ft.evaluate_numpy(lazy, **{k: v for k, v in values.items()
                                          if k in names})


def _rng() -> np.random.Generator:
    return np.random.default_rng(10)


def float_rows(rows: int, cols: int = 5, dtype: Any = np.float64) -> np.ndarray:
    """Random rows with ties and (float64) NaNs in them."""
    v = np.round(_rng().normal(size=(rows, cols)) * 3, 0).astype(dtype)
    if rows > 1:
        v[1, 1:3] = v[1, 3]  # a tie with a later element
    if rows > 2 and dtype == np.float64:
        v[2, 3] = v[2, 1] = np.nan
    return v


n = ft.make_size_param("n")
X = ft.make_placeholder("x", (n, 5), np.float64)
XF = ft.make_placeholder("xf", (n, 5), np.float32)
XI = ft.make_placeholder("xi", (n, 5), np.int8)
XB = ft.make_placeholder("xb", (n, 5), np.bool_)


def values(rows: int) -> dict[str, np.ndarray]:
    return {"x": float_rows(rows), "xf": float_rows(rows, dtype=np.float32),
            "xi": (float_rows(rows) * 5).astype(np.int8) if rows < 3 else
            (np.arange(rows * 5).reshape(rows, 5) % 7 - 3).astype(np.int8),
            "xb": _rng().random((rows, 5)) < 0.5}


def _float(v: np.ndarray) -> np.ndarray:
    # ftlazy's choice: integers compute in float64 (scipy: numpy's exp dtype)
    return v.astype(np.float64) if v.dtype.kind in "biu" else v


def _softmax(v: np.ndarray, axis: Any = -1) -> np.ndarray:
    v = _float(v)
    e = np.exp(v - np.max(v, axis=axis, keepdims=True))
    return e / np.sum(e, axis=axis, keepdims=True)


def _logsumexp(v: np.ndarray, axis: Any = None, keepdims: bool = False
               ) -> np.ndarray:
    v = _float(v)
    m = np.max(v, axis=axis, keepdims=True)
    r = np.log(np.sum(np.exp(v - m), axis=axis, keepdims=True)) + m
    return r if keepdims else np.squeeze(r, axis=axis)


class _NumpyPlus:
    """numpy with softmax and logsumexp (scipy's), to run cases on both."""

    def __getattr__(self, name: str) -> Any:
        return {"softmax": _softmax, "logsumexp": _logsumexp}.get(
            name, getattr(np, name, None))


NP = _NumpyPlus()

#: name -> f(xp, x, xf, xi, xb), run with xp = ft on placeholders and
#: xp = numpy on values; every case works with 0 rows
CASES = {
    "argmax_axis1": lambda xp, x, xf, xi, xb: xp.argmax(x, axis=1),
    "argmin_axis_neg": lambda xp, x, xf, xi, xb: xp.argmin(xf, axis=-1),
    "argmax_keepdims": lambda xp, x, xf, xi, xb: xp.argmax(xi, 1, keepdims=True),
    "argmin_bool": lambda xp, x, xf, xi, xb: xp.argmin(xb, axis=1),
    "cumsum_axis0": lambda xp, x, xf, xi, xb: xp.cumsum(x, axis=0),
    "cumsum_flat": lambda xp, x, xf, xi, xb: xp.cumsum(xf),
    "cumsum_int8": lambda xp, x, xf, xi, xb: xp.cumsum(xi, axis=1),
    "cumsum_bool": lambda xp, x, xf, xi, xb: xp.cumsum(xb, axis=-1),
    "cumsum_dtype": lambda xp, x, xf, xi, xb: xp.cumsum(xi, 1, dtype=np.float32),
    "cumprod_axis1": lambda xp, x, xf, xi, xb: xp.cumprod(x, axis=1),
    "cumprod_int8": lambda xp, x, xf, xi, xb: xp.cumprod(xi, axis=0),
    "sort_rows": lambda xp, x, xf, xi, xb: xp.sort(x),
    "sort_int": lambda xp, x, xf, xi, xb: xp.sort(xi, axis=1),
    "argsort_rows": lambda xp, x, xf, xi, xb: xp.argsort(x, kind="stable"),
    "argsort_bool": lambda xp, x, xf, xi, xb: xp.argsort(xb, 1, kind="stable"),
    # (along the symbolic axis, and flattened: 5n elements)
    "sort_columns": lambda xp, x, xf, xi, xb: xp.sort(x, axis=0),
    "argsort_columns": lambda xp, x, xf, xi, xb: xp.argsort(
        xf, axis=0, kind="stable"),
    "sort_flat_int": lambda xp, x, xf, xi, xb: xp.sort(xi, axis=None),
    "tril": lambda xp, x, xf, xi, xb: xp.tril(x),
    "triu_k": lambda xp, x, xf, xi, xb: xp.triu(xi, 2),
    "tril_neg_k": lambda xp, x, xf, xi, xb: xp.tril(xf, -1),
    "tril_batched": lambda xp, x, xf, xi, xb: xp.tril(
        xp.reshape(xp.concatenate([x, x], axis=1), (-1, 2, 5)), 1),
    "triu_row": lambda xp, x, xf, xi, xb: xp.triu(x[:, 0]),
    "diag_vector": lambda xp, x, xf, xi, xb: xp.diag(x[:, 2], 1),
    "diag_vector_neg": lambda xp, x, xf, xi, xb: xp.diag(xi[:, 0], -2),
    "softmax": lambda xp, x, xf, xi, xb: xp.softmax(x),
    "softmax_f32": lambda xp, x, xf, xi, xb: xp.softmax(xf, axis=1),
    "softmax_int": lambda xp, x, xf, xi, xb: xp.softmax(xi, axis=(1,)),
    "logsumexp_rows": lambda xp, x, xf, xi, xb: xp.logsumexp(x * 300, axis=1),
    "logsumexp_keep": lambda xp, x, xf, xi, xb: xp.logsumexp(
        xf, axis=-1, keepdims=True),
    "round": lambda xp, x, xf, xi, xb: xp.round(x / 2),
    "round_decimals": lambda xp, x, xf, xi, xb: xp.round(x / 7, 2),
    "round_f32": lambda xp, x, xf, xi, xb: xp.round(xf * 0.5, 0),
    "round_negative": lambda xp, x, xf, xi, xb: xp.round(x * 50, -1),
    "round_int": lambda xp, x, xf, xi, xb: xp.round(xi * 5, -1),
    "round_int_positive": lambda xp, x, xf, xi, xb: xp.round(xi, 3),
    "round_bool": lambda xp, x, xf, xi, xb: xp.round(xb),
    "pad_constant": lambda xp, x, xf, xi, xb: xp.pad(x, ((1, 2), (0, 3))),
    "pad_values": lambda xp, x, xf, xi, xb: xp.pad(
        xi, 1, constant_values=((7, 8), (9, 10))),
    "pad_scalar_value": lambda xp, x, xf, xi, xb: xp.pad(
        xf, (2, 1), constant_values=2.5),
    "pad_edge_static": lambda xp, x, xf, xi, xb: xp.pad(
        xp.ones((2, 3)) * xp.arange(3), ((1, 2), (3, 0)), mode="edge"),
    "pad_wrap_static": lambda xp, x, xf, xi, xb: xp.pad(
        xp.arange(12).reshape(3, 4), ((4, 1), (9, 2)), mode="wrap"),
    "meshgrid_xy": lambda xp, x, xf, xi, xb: xp.meshgrid(
        x[:, 0], xp.arange(3.0))[0],
    "meshgrid_xy_second": lambda xp, x, xf, xi, xb: xp.meshgrid(
        x[:, 0], xp.arange(3.0), xp.arange(2))[2],
    "meshgrid_ij": lambda xp, x, xf, xi, xb: xp.meshgrid(
        x[:, 0], xi[:, 1], indexing="ij")[1],
    "meshgrid_sparse": lambda xp, x, xf, xi, xb: xp.meshgrid(
        xp.arange(4), x[:, 1], sparse=True)[1],
    "existing_clip": lambda xp, x, xf, xi, xb: xp.clip(x, -1, 2),
    "existing_sign": lambda xp, x, xf, xi, xb: xp.sign(xi),
    "existing_floor_ceil": lambda xp, x, xf, xi, xb: (
        xp.floor(xf) + xp.ceil(x / 3)),
    "existing_isfinite": lambda xp, x, xf, xi, xb: xp.isfinite(x / x),
    "existing_isinf": lambda xp, x, xf, xi, xb: xp.isinf(xf / xi),
    "existing_outer": lambda xp, x, xf, xi, xb: xp.outer(x[:, 0], xf[:, 1]),
    "existing_linspace": lambda xp, x, xf, xi, xb: xp.linspace(0, 1, 7),
}

LAZY = {name: fn(ft, X, XF, XI, XB) for name, fn in CASES.items()}

#: cases whose result is float16, which the OpenCL target refuses
FLOAT16_CASES = frozenset(name for name, lazy in LAZY.items()
                          if lazy.dtype == np.float16)


@pytest.mark.parametrize("rows", [0, 1, 4])
@pytest.mark.parametrize("name", list(CASES))
def test_against_numpy(name: str, rows: int) -> None:
    v = values(rows)
    with np.errstate(all="ignore"):
        expected = CASES[name](NP, v["x"], v["xf"], v["xi"], v["xb"])
    assert_same(evaluate(LAZY[name], n=rows, **v), expected, name)


def test_argmax_nan_and_ties() -> None:
    v = np.array([[1.0, 3.0, 3.0, np.nan, np.nan], [2, 2, 1, 1, 0],
                  [-np.inf, -np.inf, -np.inf, -np.inf, -np.inf]])
    for fn in ("argmax", "argmin"):
        for axis in (None, 0, 1):
            got = evaluate(getattr(ft, fn)(X, axis=axis), x=v)
            assert_same(got, getattr(np, fn)(v, axis=axis), f"{fn} {axis}")


@pytest.mark.parametrize("axis", [None, 0, 1, -1, -2])
def test_argmax_axes_and_keepdims(axis: Any) -> None:
    v = float_rows(4)
    for keepdims in (False, True):
        got = evaluate(ft.argmax(X, axis=axis, keepdims=keepdims), x=v)
        assert_same(got, np.argmax(v, axis=axis, keepdims=keepdims))
    scalar = ft.make_placeholder("s", (), np.float64)
    assert_same(evaluate(ft.argmin(scalar, keepdims=True), s=np.array(2.0)),
                np.argmin(np.array(2.0), keepdims=True))


def test_argmax_of_empty() -> None:
    with pytest.raises(ValueError, match="attempt to get argmax of an empty"):
        ft.argmax(ft.zeros((0, 3)), axis=0)
    with pytest.raises(ValueError, match="attempt to get argmin of an empty"):
        ft.argmin(ft.zeros((2, 0)))
    assert ft.argmax(ft.zeros((0, 3)), axis=1).shape == (0,)
    # a symbolic axis that is empty at run time
    with pytest.raises(ValueError, match="zero-size array"):
        evaluate(ft.argmax(X, axis=0), x=np.zeros((0, 5)))


def test_argmin_over_all_axes_of_two_symbolic_lengths_names_itself() -> None:
    # (the message named ravel, which the user did not call)
    n, m = ft.make_size_param("n"), ft.make_size_param("m")
    x = ft.make_placeholder("x", (n, m), np.float64)
    for name in ("argmin", "argmax"):
        with pytest.raises(ValueError, match=f"{name} with axis=None flattens "
                           r"the array: .*shape \(n, m\)"):
            getattr(ft, name)(x)


def test_cumsum_is_a_scan() -> None:
    for lazy in (ft.cumsum(X, axis=1), ft.cumprod(XI)):
        assert any(isinstance(node, Scan) for node in topological_order([lazy]))


def test_cumsum_of_0d() -> None:
    s = ft.make_placeholder("s", (), np.int32)
    assert_same(evaluate(ft.cumsum(s), s=np.array(3, np.int32)),
                np.cumsum(np.array(3, np.int32)))
    with pytest.raises(AxisError):
        ft.cumsum(s, axis=1)


def test_zero_d_inputs_as_numpy_treats_them() -> None:
    s = ft.make_placeholder("s", (), np.float64)
    v = np.array(3.0)
    assert_same(evaluate(ft.argsort(s), s=v), np.argsort(v))
    assert_same(evaluate(ft.sort(s, axis=None), s=v), np.sort(v, axis=None))
    assert_same(evaluate(ft.argmax(s, axis=-1), s=v), np.argmax(v, axis=-1))
    assert_same(evaluate(ft.cumprod(s, axis=0), s=v), np.cumprod(v, axis=0))
    assert_same(evaluate(ft.softmax(s), s=v), np.float64(1.0))
    assert_same(evaluate(ft.logsumexp(s, axis=-1), s=v), np.float64(3.0))
    with pytest.raises(AxisError, match="axis -1"):
        ft.sort(s)  # as np.sort(v)
    with pytest.raises(AxisError, match="axis 1"):
        ft.argsort(s, axis=1)


def test_sort_nan_last_and_stable_order() -> None:
    v = np.array([[3.0, np.nan, -np.inf, 3.0, 0.0], [np.nan] * 5,
                  [1, 1, 1, 1, 1], [-0.0, 0.0, 2.0, -1.0, np.inf]])
    sq = ft.make_placeholder("sq", (4, 5), np.float64)
    for axis in (0, 1, -1, None):
        assert_same(evaluate(ft.sort(sq, axis=axis), sq=v),
                    np.sort(v, axis=axis), f"sort {axis}")
        assert_same(evaluate(ft.argsort(sq, axis=axis), sq=v),
                    np.argsort(v, axis=axis, kind="stable"), f"argsort {axis}")


def test_sort_refusals() -> None:
    # (a symbolic axis longer than the limit: at run time)
    longest = ft.ops.ordering.MAX_SORT_LENGTH
    for lazy in (ft.sort(X, axis=0), ft.argsort(X, axis=None)):
        evaluate(lazy, x=np.zeros((longest // 5, 5)))
        with pytest.raises(ValueError, match="axis longer than 1024"):
            evaluate(lazy, x=np.zeros((longest + 1, 5)))
    long = ft.make_placeholder("long", (ft.ops.ordering.MAX_SORT_LENGTH + 1,),
                               np.float32)
    with pytest.raises(NotImplementedError, match="at most 1024"):
        ft.sort(long)
    with pytest.raises(ValueError, match="kind"):
        ft.sort(X, kind="bogo")
    with pytest.raises(TypeError, match="complex128"):
        ft.argsort(ft.zeros((3,), np.complex128))
    with pytest.raises(TypeError, match="complex64"):
        ft.argmax(ft.zeros((3,), np.complex64))


def test_diag_of_matrices() -> None:
    v = np.arange(20.0).reshape(4, 5)
    sq = ft.make_placeholder("sq", (4, 5), np.float64)
    for k in (-5, -4, -1, 0, 1, 3, 4, 7):
        assert_same(evaluate(ft.diag(sq, k), sq=v), np.diag(v, k), f"k={k}")
    m = ft.make_placeholder("m", (n, n + 2), np.int32)
    mv = np.arange(15, dtype=np.int32).reshape(3, 5)
    for k in (0, 1, 2):
        assert_same(evaluate(ft.diag(m, k), m=mv), np.diag(mv, k), f"k={k}")
    # max(0, n - 1) and min(n, 5) are not affine: data-dependent lengths
    for rows in (0, 1, 3, 7):
        mv = np.arange(rows * (rows + 2), dtype=np.int32).reshape(rows, rows + 2)
        xv = np.arange(rows * 5.0).reshape(rows, 5)
        for k in (-2, -1, 3, 6):
            assert_same(evaluate(ft.diag(m, k), m=mv), np.diag(mv, k), f"k={k}")
            assert_same(evaluate(ft.diag(X, k), x=xv), np.diag(xv, k), f"k={k}")
    with pytest.raises(ValueError, match="1-d or 2-d"):
        ft.diag(ft.zeros((2, 2, 2)))
    assert_same(evaluate(ft.diag(ft.zeros((0,)), 2)), np.diag(np.zeros(0), 2))


def test_softmax_and_logsumexp_edge_values() -> None:
    v = np.array([[1000.0, 1000.0, -1000.0, 0, 1], [-np.inf] * 5,
                  [np.inf, 0, 1, 2, 3], [np.nan, 0, 1, 2, 3]])
    got = evaluate(ft.logsumexp(X, axis=1), x=v)
    assert_same(got, np.array([1000 + np.log(2), -np.inf, np.inf, np.nan]))
    sm = evaluate(ft.softmax(X, axis=1), x=v)
    np.testing.assert_allclose(sm[0], [0.5, 0.5, 0, 0, 0], atol=1e-300)
    assert np.isnan(sm[1]).all() and np.isnan(sm[3]).all()
    assert_same(evaluate(ft.logsumexp(X), x=v[:1]), _logsumexp(v[:1]))
    assert_same(evaluate(ft.softmax(X, axis=None), x=v[:1]),
                _softmax(v[:1], axis=None))
    with pytest.raises(TypeError, match="complex"):
        ft.softmax(ft.zeros(3, np.complex128))
    with pytest.raises(TypeError, match="keepdims"):
        ft.logsumexp(X, keepdims="yes")


def test_round_ties_to_even_and_signed_zeros() -> None:
    v = np.array([[0.5, 1.5, 2.5, -0.5, -2.5], [-0.3, 0.3, 1e300, -np.inf, np.nan],
                  [2.675, 1.005, 4503599627370497.0, -7.5, 1e-320]])
    sq = ft.make_placeholder("sq", (3, 5), np.float64)
    for decimals in (0, 2, -1):
        got = evaluate(ft.round(sq, decimals), sq=v)
        expected = np.round(v, decimals)
        assert_same(got, expected, f"decimals={decimals}")
        np.testing.assert_array_equal(np.signbit(got), np.signbit(expected))
    big = np.array([1250, 1350, -1250, 2**40 + 50], np.int64)
    w = ft.make_placeholder("w", (4,), np.int64)
    assert_same(evaluate(ft.round(w, -2), w=big), np.round(big, -2))
    assert_same(evaluate(ft.rint(w), w=big), np.rint(big))


def test_pad_forms_and_corners() -> None:
    v = np.arange(12.0).reshape(3, 4)
    sq = ft.make_placeholder("sq", (3, 4), np.float64)
    for width in (0, 2, (1, 3), ((2, 0), (1, 1)), [[1], [2]]):
        for mode, extra in (("constant", {"constant_values": ((1, 2), (3, 4))}),
                            ("edge", {}), ("wrap", {})):
            assert_same(evaluate(ft.pad(sq, width, mode=mode, **extra), sq=v),
                        np.pad(v, width, mode=mode, **extra), f"{width} {mode}")
    s = ft.make_placeholder("s", (), np.float64)
    for width in (1, (1, 2), ((1, 2),)):
        assert_same(evaluate(ft.pad(s, width), s=np.array(1.0)),
                    np.pad(np.array(1.0), width))


def test_arange_float_and_complex() -> None:
    for args, kw in [((0, 1 + 1j, 0.3), {}), ((0, 2 + 1j, 0.5 + 0.1j), {}),
                     ((1j, 5, 1), {}), ((0, 3j, 1j), {}),
                     ((0, 3), {"dtype": np.complex64}),
                     ((1, -2 - 2j, -0.5 - 0.5j), {}), ((0.0, 1.0, 0.1), {}),
                     ((1, 2, 0.1), {"dtype": np.float32}),
                     ((0.5, 3), {"dtype": np.int64}), ((10, 1, -1.5), {})]:
        assert_same(evaluate(ft.arange(*args, **kw)), np.arange(*args, **kw),
                    f"arange{args} {kw}")
    with pytest.raises(TypeError, match="complex dtype"):
        ft.arange(0, 1j, 0.5, dtype=np.float64)
    with pytest.raises(ValueError, match="not finite"):
        ft.arange(0, np.inf)


@given(start=st.floats(-50, 50), length=st.floats(-3, 40),
       step=st.sampled_from([0.1, 0.25, 0.3, 1.0, 7.0, -0.7, -2.0]),
       imag=st.sampled_from([None, 0.5, -1.0]))
def test_arange_lengths_like_numpy(start: float, length: float, step: float,
                                   imag: float | None) -> None:
    stop = start + length * step
    if imag is not None:
        start, stop, step = start + imag * 1j, stop + 3j, complex(step, imag)
    expected = np.arange(start, stop, step)
    assert_same(evaluate(ft.arange(start, stop, step)), expected)


@given(data=st.data(), dtype=st.sampled_from([np.float64, np.float32, np.int16,
                                               np.uint8, np.bool_]))
def test_random_arrays_like_numpy(data: Any, dtype: Any) -> None:
    shape = data.draw(st.tuples(st.integers(1, 4), st.integers(1, 5)))
    pool = ([0.0, -0.0, 1.5, -2.0, 1.5, np.nan, np.inf, -np.inf]
            if np.dtype(dtype).kind == "f" else [0, 1, 3, 1, 7])
    flat = data.draw(st.lists(st.sampled_from(pool), min_size=shape[0] * shape[1],
                              max_size=shape[0] * shape[1]))
    v = np.array(flat).reshape(shape).astype(dtype)
    axis = data.draw(st.sampled_from([None, 0, 1, -1]))
    a = ft.make_placeholder("a", shape, dtype)
    calls = {
        "argmax": lambda xp, x: xp.argmax(x, axis=axis),
        "argmin": lambda xp, x: xp.argmin(x, axis=axis),
        "sort": lambda xp, x: xp.sort(x, axis=axis),
        "argsort": lambda xp, x: xp.argsort(x, axis=axis, kind="stable"),
        "cumsum": lambda xp, x: xp.cumsum(x, axis=axis),
    }
    for name, call in calls.items():
        with np.errstate(all="ignore"):
            expected = call(np, v)
        assert_same(evaluate(call(ft, a), a=v), expected, f"{name} {axis} {v!r}")


# {{{ bad input

@pytest.mark.parametrize(("call", "error", "match"), [
    (lambda: ft.argmax(X, axis=2), AxisError, "axis 2"),
    (lambda: ft.argmin(X, axis=-3), AxisError, "axis -3"),
    (lambda: ft.argmax(X, axis=(0, 1)), TypeError, "axis"),
    (lambda: ft.argmax(X, axis=1.0), TypeError, "axis"),
    (lambda: ft.argmax(X, keepdims=1), TypeError, "keepdims"),
    (lambda: ft.cumsum(X, axis=2), AxisError, "axis 2"),
    (lambda: ft.cumprod(X, axis="0"), TypeError, "axis"),
    (lambda: ft.cumsum(X, dtype="nope"), TypeError, "nope"),
    (lambda: ft.sort(X, axis=-3), AxisError, "axis -3"),
    (lambda: ft.sort(ft.zeros(()), axis=0), AxisError, "axis 0"),
    (lambda: ft.tril(ft.zeros(())), ValueError, "0-d"),
    (lambda: ft.triu(X, k=1.5), TypeError, "k must be an integer"),
    (lambda: ft.diag(X[:, 0], k="1"), TypeError, "k must be an integer"),
    (lambda: ft.meshgrid(X[:, 0], indexing="xyz"), ValueError, "indexing"),
    (lambda: ft.meshgrid(X[:, 0], sparse=None), TypeError, "sparse"),
    (lambda: ft.softmax(X, axis=5), AxisError, "axis 5"),
    (lambda: ft.logsumexp(X, axis=(1, 1)), ValueError, "duplicate"),
    (lambda: ft.round(X, decimals=1.5), TypeError, "decimals"),
    (lambda: ft.round(ft.zeros(3, np.complex64)), TypeError, "complex"),
    (lambda: ft.pad(X, -1), ValueError, "pad_width of axis 0"),
    (lambda: ft.pad(X, 1.5), TypeError, "pad_width"),
    (lambda: ft.pad(X, ((1, 2, 3),)), ValueError, "pad_width"),
    (lambda: ft.pad(X, ((1, 2), (1, 2), (1, 2))), ValueError, "pad_width"),
    (lambda: ft.pad(X, 1, mode="reflect"), ValueError, "mode 'reflect'"),
    (lambda: ft.pad(X, 1, mode="edge"), ValueError, "symbolic length n"),
    (lambda: ft.pad(ft.zeros((0, 2)), 1, mode="wrap"), ValueError, "axis 0"),
    (lambda: ft.pad(X, 1, constant_values="a"), TypeError, "constant_values"),
    (lambda: ft.arange(0, 1, 0), ValueError, "step"),
    (lambda: ft.arange(X), TypeError, "arange"),
])
def test_bad_input(call: Any, error: type, match: str) -> None:
    with pytest.raises(error, match=match):
        call()

# }}}


# {{{ numpy dispatch and the coverage page

DISPATCHED = [
    (lambda xp, a: xp.argmax(a), "argmax"),
    (lambda xp, a: xp.argmin(a, axis=0, keepdims=True), "argmin"),
    (lambda xp, a: xp.cumsum(a, axis=1), "cumsum"),
    (lambda xp, a: xp.cumprod(a, 0, np.float32), "cumprod"),
    (lambda xp, a: xp.sort(a, axis=0), "sort"),
    (lambda xp, a: xp.argsort(a, kind="stable"), "argsort"),
    (lambda xp, a: xp.diag(a, k=1), "diag"),
    (lambda xp, a: xp.tril(a, -1), "tril"),
    (lambda xp, a: xp.triu(a), "triu"),
    (lambda xp, a: xp.round(a, 1), "round"),
    (lambda xp, a: xp.around(a), "around"),
    (lambda xp, a: xp.rint(a), "rint"),
    (lambda xp, a: xp.pad(a, 1, constant_values=9), "pad"),
    (lambda xp, a: xp.pad(a, ((1, 0), (0, 2)), mode="wrap"), "pad"),
    (lambda xp, a: xp.meshgrid(a[0], a[:, 1], indexing="ij")[0], "meshgrid"),
    (lambda xp, a: xp.meshgrid(a[0], a[:, 1])[1], "meshgrid"),
]


@pytest.mark.parametrize(("call", "name"), DISPATCHED)
def test_numpy_calls_build_lazy_nodes(call: Any, name: str) -> None:
    a = ft.make_placeholder("a", (3, 4), np.float64)
    v = np.linspace(-2.1, 2.7, 12).reshape(3, 4)
    v[1, 2] = v[0, 1]
    lazy = call(np, a)
    assert isinstance(lazy, ft.Array), name
    assert_same(evaluate(lazy, a=v), call(np, v), name)
    func = getattr(np, name)
    assert (func in supported_ufuncs()) or (func in supported_functions())


def test_dispatch_refuses_what_ftlazy_lacks() -> None:
    a = ft.make_placeholder("a", (3, 4), np.float64)
    with pytest.raises(TypeError, match="numpy.pad: the argument "
                       "reflect_type='odd'"):
        np.pad(a, 1, mode="reflect", reflect_type="odd")
    with pytest.raises(TypeError, match="order="):
        np.sort(a, order="f")
    with pytest.raises(TypeError, match="out="):
        np.cumsum(a, out=np.zeros((3, 4)))
    with pytest.raises(TypeError, match="numpy.unique is not supported"):
        np.unique(a)


def test_coverage_page(tmp_path: Any) -> None:
    script = Path(__file__).parent.parent / "doc" / "numpy_coverage.py"
    coverage = runpy.run_path(str(script), run_name="numpy_coverage")
    page = tmp_path / "coverage.rst"
    rows = coverage["write"](str(page))
    by_name = {row.name: row for row in rows}
    for name in ("argmax", "cumsum", "tril", "round", "pad", "exp", "sum",
                 "meshgrid", "rint", "sort"):
        assert by_name[name].in_ftlazy and by_name[name].dispatches, name
    assert by_name["argmax"].checked_by == "called"
    assert by_name["pad"].checked_by == "table"  # it needs pad widths
    assert not by_name["unique"].dispatches and not by_name["unique"].in_ftlazy
    assert by_name["zeros"].in_ftlazy and not by_name["zeros"].dispatches
    assert "ndarray" not in by_name and "float64" not in by_name  # classes
    # everything in interop's tables is listed, and was found to dispatch
    listed = {getattr(np, row.name) for row in rows if row.dispatches}
    assert set(supported_ufuncs()) <= listed
    assert {f for f in supported_functions()
            if getattr(np, f.__name__, None) is f} <= listed
    text = page.read_text()
    assert f"public numpy callables: {len(rows)}" in text
    dispatched = sum(row.dispatches for row in rows)
    assert f"dispatching to ftlazy from numpy: {dispatched} (" in text
    assert text.count("   * - ``") == len(rows)

# }}}

# vim: foldmethod=marker
