# SPDX-License-Identifier: MIT
"""Reductions against numpy: values, dtypes, axes, keepdims, empty and
symbolic shapes, and errors."""

from __future__ import annotations

import warnings

import numpy as np
import pymbolic.primitives as prim
import pytest
from test_elementwise import assert_same, numpy_or_error, random_array

import ftlazy as ft
from ftlazy.array import IndexLambda
from ftlazy.scalar_expr import Reduce

REDUCTIONS = ["sum", "prod", "amax", "amin", "max", "min", "any", "all", "mean",
              "var"]
DTYPES = [np.bool_, np.int8, np.uint8, np.int32, np.int64, np.uint64,
          np.float16, np.float32, np.float64, np.complex128]
AXES = [None, 0, 1, -1, (0, 2), (2, 0), (), (0, 1, 2), [1]]


def _compare(name, a, lazy_input, **kwargs):
    expected, error = numpy_or_error(
        lambda v: getattr(np, name)(v, **kwargs), a)
    if error is not None:
        with pytest.raises(error):
            getattr(ft, name)(lazy_input, **kwargs)
        return None
    lazy = getattr(ft, name)(lazy_input, **kwargs)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return assert_same(lazy, expected, a=a)


@pytest.mark.parametrize("name", REDUCTIONS)
@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("axis", AXES)
def test_reductions_match_numpy(name, dt, axis):
    rng = np.random.default_rng(0)
    a = random_array(rng, (2, 3, 4), dt, low=-2, high=3)
    x = ft.make_placeholder("a", a.shape, a.dtype)
    for keepdims in (False, True):
        _compare(name, a, x, axis=axis, keepdims=keepdims)


@pytest.mark.parametrize("name", REDUCTIONS)
@pytest.mark.parametrize("shape, axis", [
    ((), None), ((), ()), ((), 0), ((), -1), ((1,), 0), ((1, 1), None),
    ((0, 3), 0), ((0, 3), 1), ((0, 3), None), ((3, 0), (0,)), ((5,), 0),
    ((2, 1, 3), 1),
])
def test_reduction_shapes(name, shape, axis):
    rng = np.random.default_rng(1)
    a = random_array(rng, shape, np.float64)
    x = ft.make_placeholder("a", shape, np.float64)
    for keepdims in (False, True):
        _compare(name, a, x, axis=axis, keepdims=keepdims)


@pytest.mark.parametrize("dt, acc", [
    (np.bool_, np.int64), (np.int8, np.int64), (np.int32, np.int64),
    (np.uint8, np.uint64), (np.uint32, np.uint64), (np.float16, np.float16),
    (np.float32, np.float32), (np.complex64, np.complex64)])
def test_sum_and_prod_dtypes(dt, acc):
    x = ft.make_placeholder("x", (3,), dt)
    assert ft.sum(x).dtype == acc == np.sum(np.zeros(3, dt)).dtype
    assert ft.prod(x).dtype == acc == np.prod(np.zeros(3, dt)).dtype
    assert ft.amax(x).dtype == dt and ft.amin(x).dtype == dt
    assert ft.any(x).dtype == np.bool_ and ft.all(x).dtype == np.bool_
    assert ft.sum(x, dtype=np.float32).dtype == np.float32


def test_one_reduce_node_with_fresh_indices():
    x = ft.make_placeholder("x", (2, 3, 4), np.int16)
    r = ft.sum(x, axis=(0, 2), keepdims=True)
    assert isinstance(r, IndexLambda) and dict(r.bindings) == {"_in0": x}
    cast = r.expr
    assert isinstance(cast, Reduce) and cast.op == "sum"
    assert cast.bounds == (("_r0", 0, 2), ("_r1", 0, 4))
    assert r.shape == (1, 3, 1)
    read = cast.inner.child
    assert read.index_tuple == (prim.Variable("_r0"), prim.Variable("_1"),
                                prim.Variable("_r1"))
    r2 = ft.amax(x, axis=(0, 2))
    assert r2.expr.inner.index_tuple[1] == prim.Variable("_0")
    assert r2.expr.op == "max" and r2.dtype == np.int16


def test_nan_propagates_through_amax_amin():
    a = np.array([[1.0, np.nan, 3.0], [4.0, 5.0, 6.0]])
    x = ft.make_placeholder("a", a.shape, a.dtype)
    for name in ("amax", "amin", "sum", "mean"):
        for axis in (None, 0, 1):
            _compare(name, a, x, axis=axis)


def test_symbolic_shapes():
    n = ft.make_size_param("n")
    m = ft.make_size_param("m")
    x = ft.make_placeholder("a", (n, 3, m + 1), np.float32)
    r = ft.sum(x, axis=(0, 2))
    assert r.expr.bounds == (("_r0", 0, prim.Variable("n")),
                             ("_r1", 0, x.shape[2]))
    rng = np.random.default_rng(2)
    for shape in ((4, 3, 2), (1, 3, 1), (0, 3, 5)):
        a = random_array(rng, shape, np.float32)
        for name in ("sum", "prod", "any", "all", "mean", "var"):
            for axis in (None, 0, (0, 2), -1):
                _compare(name, a, x, axis=axis)
        if a.size:
            for axis in (None, 1, (0, 2)):
                _compare("amax", a, x, axis=axis)
    assert ft.mean(x, axis=(0, 2)).shape == (3,)
    assert ft.var(x, axis=0, ddof=1, keepdims=True).shape == (1, 3, x.shape[2])
    a = random_array(rng, (5, 3, 2), np.float32)
    assert_same(ft.var(x, axis=0, ddof=2), np.var(a, axis=0, ddof=2), a=a)


def test_mean_and_var_dtypes():
    for dt in (np.bool_, np.int8, np.uint16, np.int64, np.float16, np.float32,
               np.float64, np.complex64, np.complex128):
        x = ft.make_placeholder("x", (4,), dt)
        assert ft.mean(x).dtype == np.mean(np.ones(4, dt)).dtype
        assert ft.var(x).dtype == np.var(np.ones(4, dt)).dtype
    c = np.array([1 + 2j, 3 - 1j, -2j], np.complex64)
    assert_same(ft.var(ft.make_placeholder("a", (3,), np.complex64)), np.var(c),
                a=c)
    h = np.array([1, 2, 4, 8], np.float16)
    assert_same(ft.mean(ft.make_placeholder("a", (4,), np.float16)), np.mean(h),
                a=h)
    assert_same(ft.var(ft.make_placeholder("a", (4,), np.float16), ddof=1),
                np.var(h, ddof=1), a=h)
    # integers average in float64: 2**24 + 1 is not a float32
    big = np.array([2**24 + 1, 0], np.int64)
    result = ft.evaluate_numpy(ft.mean(ft.make_placeholder("a", (2,), np.int64)),
                               a=big)
    assert result == np.mean(big) == 8388608.5
    x = ft.make_placeholder("a", (4,), np.int32)
    i = np.array([1, 2, 3, 5], np.int32)
    assert_same(ft.mean(x, dtype=np.float32), np.mean(i, dtype=np.float32), a=i)


def test_methods():
    a = np.arange(6.0).reshape(2, 3)
    x = ft.make_placeholder("a", a.shape, a.dtype)
    assert_same(x.sum(axis=1), a.sum(axis=1), a=a)
    assert_same(x.prod(), a.prod(), a=a)
    assert_same(x.max(axis=0), a.max(axis=0), a=a)
    assert_same(x.min(), a.min(), a=a)
    assert_same((x > 2).any(axis=1), (a > 2).any(axis=1), a=a)
    assert_same((x > 2).all(), (a > 2).all(), a=a)


def test_reductions_of_numpy_arrays_and_scalars():
    a = np.arange(6).reshape(2, 3)
    assert_same(ft.sum(a, axis=0), a.sum(axis=0))
    assert ft.sum(3) == 3 and isinstance(ft.sum(3), np.integer)
    assert ft.amax(2.5) == 2.5
    const = ft.sum(ft.asarray(np.int8(4)))
    assert const.dtype == np.int64 and const.expr == 4 and not const.bindings


def test_reduction_errors():
    x = ft.make_placeholder("x", (2, 3), np.float64)
    with pytest.raises(np.exceptions.AxisError, match="axis 2 .* dimension 2"):
        ft.sum(x, axis=2)
    with pytest.raises(IndexError, match="axis -3"):
        ft.amax(x, axis=-3)
    with pytest.raises(ValueError, match="out of bounds"):
        ft.mean(x, axis=(0, 5))
    s = ft.make_placeholder("s", (), np.float64)
    with pytest.raises(np.exceptions.AxisError):
        ft.sum(s, axis=1)
    with pytest.raises(np.exceptions.AxisError):
        ft.sum(s, axis=(0,))
    with pytest.raises(np.exceptions.AxisError):
        ft.mean(s, axis=0)
    assert ft.sum(s, axis=0).shape == ()  # numpy's 0-d ufunc quirk
    with pytest.raises(ValueError, match="duplicate value in 'axis'"):
        ft.sum(x, axis=(0, 0))
    with pytest.raises(ValueError, match="duplicate"):
        ft.any(x, axis=(1, -1))
    with pytest.raises(TypeError, match="axis must be an int.*float"):
        ft.sum(x, axis=1.0)
    with pytest.raises(TypeError, match="axis must be an int"):
        ft.sum(x, axis=True)
    empty = ft.make_placeholder("e", (0, 3), np.float64)
    with pytest.raises(ValueError, match=r"zero-size array to reduction "
                       r"operation maximum.*\(0, 3\)"):
        ft.amax(empty)
    with pytest.raises(ValueError, match="minimum which has no identity"):
        ft.amin(empty, axis=0)
    assert ft.amax(empty, axis=1).shape == (0,)
    with pytest.raises(TypeError, match="ddof"):
        ft.var(x, ddof=0.5)
    with pytest.raises(TypeError, match="str"):
        ft.sum("abc")


# {{{ reductions without identity over empty axes

@pytest.mark.parametrize("fn", ["amax", "amin", "max", "min"])
@pytest.mark.parametrize(("shape", "axis"), [((0, 3), 0), ((0, 3), None),
                                             ((3, 0), 1), ((2, 0, 0), (1, 2)),
                                             ((0,), -1)])
def test_static_empty_axis_fails_at_build_time(fn, shape, axis):
    name = "maximum" if fn in ("amax", "max") else "minimum"
    with pytest.raises(ValueError, match="zero-size array"):
        getattr(np, fn)(np.zeros(shape), axis=axis)
    a = ft.make_placeholder("a", shape, np.float64)
    with pytest.raises(ValueError, match=rf"^zero-size array to reduction "
                                         rf"operation {name} which has no "
                                         r"identity: the reduced axis has length 0 "
                                         r"\(axis \d of the array of shape"):
        getattr(ft, fn)(a, axis=axis)
    # through the method and numpy's dispatch as well
    with pytest.raises(ValueError, match=f"operation {name} which has no identity"):
        getattr(a, fn[-3:])(axis=axis)
    with pytest.raises(ValueError, match=f"operation {name} which has no identity"):
        getattr(np, fn)(a, axis=axis)


def test_non_reduced_empty_axis_is_fine():
    a = ft.make_placeholder("a", (0, 3), np.float64)
    assert ft.amax(a, axis=1).shape == (0,)
    assert ft.evaluate_numpy(ft.amin(a, axis=1), a=np.zeros((0, 3))).shape == (0,)


@pytest.mark.parametrize(("fn", "name"), [(ft.amax, "maximum"),
                                          (ft.amin, "minimum")])
def test_symbolic_empty_axis_fails_at_evaluation_naming_the_length(fn, name):
    n = ft.make_size_param("n")
    a = ft.make_placeholder("a", (n, 3), np.float64)
    message = (rf"^zero-size array to reduction operation {name} which has no "
               r"identity: the reduced axis has length n, which is 0$")
    for lazy in (fn(a, axis=0), fn(a), fn(a[:, 0] * 2)):
        with pytest.raises(ValueError, match=message):
            ft.evaluate_numpy(lazy, a=np.zeros((0, 3)))
    np.testing.assert_array_equal(
        ft.evaluate_numpy(fn(a, axis=0), a=np.ones((2, 3))), np.ones(3))
    # an expression of the size parameter is shown as such
    tail = a[1:]
    with pytest.raises(ValueError) as info:
        ft.evaluate_numpy(fn(tail, axis=0), a=np.zeros((1, 3)))
    assert str(info.value).endswith(
        f"the reduced axis has length {tail.shape[0]}, which is 0")
    assert str(tail.shape[0]) != "n"


def test_symbolic_empty_axis_inside_a_map_body():
    n = ft.make_size_param("n")
    a = ft.make_placeholder("a", (2, n), np.float64)
    mapped = ft.map(lambda row: ft.amax(row), a)
    with pytest.raises(ValueError, match="operation maximum which has no "
                                         "identity: the reduced axis has length n"):
        ft.evaluate_numpy(mapped, a=np.zeros((2, 0)))


def test_empty_reduction_message_helper():
    from ftlazy.ops.reductions import empty_reduction_message
    n = ft.make_size_param("n")
    assert empty_reduction_message("max", 0) == (
        "zero-size array to reduction operation maximum which has no identity: "
        "the reduced axis has length 0")
    assert empty_reduction_message("minimum", prim.Variable("n")).endswith(
        "the reduced axis has length n, which is 0")
    assert "length 2*n" in empty_reduction_message("min", ft.make_placeholder(
        "b", (2 * n,), np.float64).shape[0])
    with pytest.raises(ValueError, match="'sum' has an identity"):
        empty_reduction_message("sum", 0)

# }}}


# {{{ amax/amin with initial=

@pytest.mark.parametrize("fn", ["amax", "amin"])
@pytest.mark.parametrize("dt", [np.bool_, np.int8, np.int64, np.uint8,
                                np.float32, np.float64])
@pytest.mark.parametrize("shape, axis", [
    ((2, 3, 4), None), ((2, 3, 4), 1), ((2, 3, 4), (0, 2)), ((2, 3, 4), ()),
    ((0, 3), 0), ((0, 3), None), ((3, 0), 1), ((3, 0), (0, 1)), ((), None),
    ((4,), -1),
])
def test_extrema_with_initial_match_numpy(fn, dt, shape, axis):
    rng = np.random.default_rng(3)
    a = random_array(rng, shape, dt, low=-2, high=3)
    x = ft.make_placeholder("a", shape, a.dtype)
    initial = True if dt == np.bool_ else 1
    for keepdims in (False, True):
        _compare(fn, a, x, axis=axis, keepdims=keepdims, initial=initial)


def test_extrema_with_initial_nan_and_conversion():
    a = np.array([[1.0, np.nan, 3.0], [4.0, 5.0, 6.0]])
    x = ft.make_placeholder("a", a.shape, a.dtype)
    for axis in (None, 0, 1):
        _compare("amax", a, x, axis=axis, initial=4.5)
        _compare("amin", a, x, axis=axis, initial=np.nan)
    # initial takes the array's dtype as in numpy: 2.7 is 2 for ints,
    # inf or an out-of-range int cannot be converted
    ints = np.array([0, 1], np.int8)
    y = ft.make_placeholder("a", (2,), np.int8)
    _compare("amax", ints, y, initial=2.7)
    for bad in (np.inf, 1000):
        with pytest.raises(OverflowError):
            ft.amax(y, initial=bad)
    with pytest.raises(TypeError, match="initial must be a scalar"):
        ft.amin(y, initial=np.array([1, 2]))


@pytest.mark.parametrize("evaluate", ["numpy", "compiled"])
def test_extrema_with_initial_over_symbolic_empty_axes(evaluate):
    n = ft.make_size_param("n")
    x = ft.make_placeholder("a", (n, 3), np.float64)
    results = {
        "max0": ft.amax(x, axis=0, initial=-np.inf),
        "min_all": ft.amin(x, initial=2.0),
        "max1_keep": ft.amax(x, axis=1, keepdims=True, initial=0.5),
    }
    assert results["max0"].shape == (3,)
    assert results["max1_keep"].shape == (x.shape[0], 1)
    rng = np.random.default_rng(4)
    for rows in (0, 1, 4):
        a = rng.standard_normal((rows, 3))
        expected = {
            "max0": np.amax(a, axis=0, initial=-np.inf),
            "min_all": np.amin(a, initial=2.0),
            "max1_keep": np.amax(a, axis=1, keepdims=True, initial=0.5),
        }
        for key, lazy in results.items():
            got = (ft.evaluate_numpy(lazy, a=a) if evaluate == "numpy"
                   else ft.compile(lazy)(a=a))
            np.testing.assert_array_equal(np.asarray(got), expected[key])

# }}}
