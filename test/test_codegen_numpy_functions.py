# SPDX-License-Identifier: MIT
"""The numpy functions of test_numpy_functions.py through the OpenCL
target: every case there is one result of a single program over a symbolic
number of rows, compiled once per device flavour and run with 0, 1 and 4
rows, compared with ``ft.evaluate_numpy`` and numpy. A second small
program covers what needs concrete shapes (sort along both axes, argmax of
the whole array, complex arange, 2-d diagonals)."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest

import ftlazy as ft
from test_numpy_functions import (
    CASES, FLOAT16_CASES, LAZY, NP, assert_same, values)

# ulps: OpenCL's exp and log may differ from numpy's in the last bits
RTOL = {np.dtype(np.float64): 1e-12, np.dtype(np.float32): 1e-5}


def _close(actual: Any, expected: Any, what: str) -> None:
    actual, expected = np.asarray(actual), np.asarray(expected)
    assert actual.dtype == expected.dtype, (what, actual.dtype, expected.dtype)
    assert actual.shape == expected.shape, (what, actual.shape, expected.shape)
    if expected.dtype.kind in "fc":
        rtol = RTOL.get(np.dtype(expected.real.dtype), 1e-3)
        np.testing.assert_allclose(actual, expected, rtol=rtol, atol=rtol,
                                   equal_nan=True, err_msg=what)
    else:
        np.testing.assert_array_equal(actual, expected, err_msg=what)


@pytest.mark.parametrize("rows", [0, 1, 4])
def test_every_case_compiled(codegen_vector_width, rows: int) -> None:
    dag = ft.make_dict_of_named_arrays(
        {k: v for k, v in LAZY.items() if k not in FLOAT16_CASES})
    compiled = ft.compile(dag)  # cached: built once per flavour
    v = values(rows)
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = compiled(**v)
        reference = ft.evaluate_numpy(dag, **v)
    for name, fn in CASES.items():
        if name in FLOAT16_CASES:
            continue
        with np.errstate(all="ignore"):
            expected = fn(NP, v["x"], v["xf"], v["xi"], v["xb"])
        assert_same(reference[name], expected, f"{name}: evaluate_numpy")
        _close(got[name], expected, f"{name}: OpenCL, {rows} rows")


def test_concrete_shapes_compiled(codegen_vector_width) -> None:
    sq = ft.make_placeholder("sq", (4, 5), np.float64)
    iv = ft.make_placeholder("iv", (6,), np.int32)
    lazy = {
        "sort0": ft.sort(sq, axis=0), "sort_all": ft.sort(sq, axis=None),
        "argsort0": ft.argsort(sq, axis=0), "argsort_int": ft.argsort(iv),
        "argmax_all": ft.argmax(sq), "argmin_all_keep": ft.argmin(sq, keepdims=True),
        "argmax_int": ft.argmax(iv),
        "diag_up": ft.diag(sq, 2), "diag_down": ft.diag(sq, -1),
        "diag_far": ft.diag(sq, 7),
        "arange_complex": ft.arange(0, 2 + 1j, 0.3 + 0.1j) * sq[0, 0],
        "arange_float": ft.arange(-1, 1, 0.3) + sq[0, 0],
        "logsumexp_all": ft.logsumexp(sq), "cumsum_all": ft.cumsum(iv),
        "round_neg": ft.round(iv, -1), "rint": ft.rint(sq * 2.5),
    }
    v = np.array([[3.0, np.nan, -np.inf, 3.0, 0.0], [1, 1, 1, 1, 1],
                  [np.nan, 2.5, -0.5, 1.5, 9.0], [-0.0, 0.0, 2.0, -1.0, np.inf]])
    w = np.array([5, -15, 5, 25, 0, -3], np.int32)
    expected = {
        "sort0": np.sort(v, axis=0), "sort_all": np.sort(v, axis=None),
        "argsort0": np.argsort(v, axis=0, kind="stable"),
        "argsort_int": np.argsort(w, kind="stable"),
        "argmax_all": np.argmax(v), "argmin_all_keep": np.argmin(v, keepdims=True),
        "argmax_int": np.argmax(w),
        "diag_up": np.diag(v, 2), "diag_down": np.diag(v, -1),
        "diag_far": np.diag(v, 7),
        "arange_complex": np.arange(0, 2 + 1j, 0.3 + 0.1j) * v[0, 0],
        "arange_float": np.arange(-1, 1, 0.3) + v[0, 0],
        "logsumexp_all": np.float64(np.nan), "cumsum_all": np.cumsum(w),
        "round_neg": np.round(w, -1), "rint": np.rint(v * 2.5),
    }
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = ft.compile(ft.make_dict_of_named_arrays(lazy))(sq=v, iv=w)
    for name, value in expected.items():
        _close(got[name], value, name)


def test_float16_rounding_is_refused_clearly() -> None:
    # numpy rounds bools as float16, which the OpenCL target lacks
    assert FLOAT16_CASES == {"round_bool"}
    with pytest.raises(TypeError, match="float16"):
        ft.compile(LAZY["round_bool"])


def test_argmax_of_a_symbolic_axis_that_is_empty(codegen_vector_width) -> None:
    n = ft.make_size_param("n")
    x = ft.make_placeholder("x", (n, 3), np.float64)
    compiled = ft.compile(ft.argmin(x, axis=0))
    assert_same(compiled(x=np.eye(3)), np.argmin(np.eye(3), axis=0))
    with pytest.raises(ValueError, match="zero-size array.*length n"):
        compiled(x=np.zeros((0, 3)))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_rounding_a_product_ties_as_numpys(dtype) -> None:
    # (rint was built from floor(t) and t - floor(t) in one expression; the
    # compiler fused t = x * 100 into the subtraction, an FMA, and rounded
    # the exact product: round(2.675, 2) gave 2.67, numpy 2.68)
    rng = np.random.default_rng(7)
    data = np.concatenate([
        np.array([2.675, 99.835, -82.835, 0.125, 0.35, 1.45, -0.5, 0.5, 1.5,
                  2.5, -0.3, 0.0, -0.0, np.inf, -np.inf, np.nan]),
        np.round(rng.uniform(-100, 100, 5000), 3)]).astype(dtype)
    x = ft.make_placeholder("x", data.shape, dtype)
    with np.errstate(invalid="ignore", over="ignore"):
        cases = {
            "round1": (ft.round(x, 1), np.round(data, 1)),
            "round2": (ft.round(x, 2), np.round(data, 2)),
            "round_neg": (ft.round(x, -1), np.round(data, -1)),
            # (a factor past float64's range raised OverflowError: numpy's nan)
            "round_far": (ft.round(x, -400), np.round(data, -400)),
            "round_far_up": (ft.round(x, 400), np.round(data, 400)),
            "rint_product": (ft.rint(x * dtype(100)), np.rint(data * dtype(100))),
        }
    got = ft.compile(ft.make_dict_of_named_arrays(
        {name: lazy for name, (lazy, _) in cases.items()}))(x=data)
    for name, (_, want) in cases.items():
        assert np.asarray(got[name]).dtype == want.dtype
        # (equal, signs of zero included)
        np.testing.assert_array_equal(got[name], want, err_msg=name)
        np.testing.assert_array_equal(np.signbit(got[name]), np.signbit(want),
                                      err_msg=name)


def test_diagonals_of_unrelated_symbolic_lengths_compiled(codegen_vector_width
                                                          ) -> None:
    # (min(n, m) and max(0, n - 1) are not affine: data-dependent lengths,
    # the reads guarded)
    n, m = ft.make_size_param("n"), ft.make_size_param("m")
    a = ft.make_placeholder("a", (n, m), np.int32)
    b = ft.make_placeholder("b", (2, n, m), np.float64)
    lazy = {"diag": ft.diag(a, -1), "diag_up": ft.diag(a, 2),
            "trace": ft.trace(a), "batched": ft.trace(b, 1, axis1=1, axis2=2),
            # (min(n, m) and min(m, n): one size)
            "both_ways": ft.diag(a) * ft.diag(a.T)}
    compiled = ft.compile(ft.make_dict_of_named_arrays(lazy))
    rng = np.random.default_rng(4)
    for shape in [(0, 3), (3, 0), (1, 1), (2, 5), (5, 2)]:
        av = rng.integers(-9, 9, shape).astype(np.int32)
        bv = rng.standard_normal((2,) + shape)
        got = compiled(a=av, b=bv)
        assert_same(got["diag"], np.diag(av, -1))
        assert_same(got["diag_up"], np.diag(av, 2))
        assert_same(got["trace"], np.trace(av))
        assert_same(got["batched"], np.trace(bv, 1, axis1=1, axis2=2))
        assert_same(got["both_ways"], np.diag(av) * np.diag(av.T))


def test_sorting_each_sequence_of_a_fractal_tensor(codegen_vector_width
                                                   ) -> None:
    # (a symbolic axis: sorted by rank counts up to MAX_SORT_LENGTH rows,
    # a longer one refused at run time naming the limit)
    xs = ft.make_jagged_placeholder("xs", (3,), np.float64, depth=2)
    named = {
        "sorted": ft.map(lambda s: ft.sort(s, axis=0), xs),
        "order": ft.map(lambda s: ft.argsort(s[:, 0], kind="stable"), xs),
    }
    with warnings.catch_warnings():
        warnings.simplefilter("error", ft.HostEvaluationWarning)
        f = ft.compile(ft.make_dict_of_named_arrays(
            {"sorted": named["sorted"].values,
             "sorted_offsets": named["sorted"].offsets[0],
             "order": named["order"].values}))
    rng = np.random.default_rng(11)
    data = [np.round(rng.standard_normal((k, 3)), 1) for k in (5, 0, 1, 8)]
    data[0][1, 0] = np.nan
    got = f(xs=data)
    np.testing.assert_array_equal(
        got["sorted"], np.concatenate([np.sort(s, axis=0) for s in data]))
    np.testing.assert_array_equal(
        got["order"], np.concatenate([np.argsort(s[:, 0], kind="stable")
                                      for s in data]))
    # (the second largest of each column, read by index)
    second = ft.compile(ft.map(lambda s: ft.sort(s, axis=0)[-2], xs))
    assert_same(second(xs=[data[0], data[3]]),
                np.stack([np.sort(s, axis=0)[-2] for s in (data[0], data[3])]))
    longest = ft.ops.ordering.MAX_SORT_LENGTH
    with pytest.raises(ValueError, match="sort: sorting along an axis longer "
                       "than 1024"):
        f(xs=[np.zeros((2, 3)), np.zeros((longest + 1, 3))])
