# SPDX-License-Identifier: MIT
"""Elementwise operations against numpy: values, dtypes, broadcasting,
weak Python scalars, errors, and well-typed IndexLambda bodies."""

from __future__ import annotations

import operator
import warnings

import numpy as np
import pymbolic.primitives as prim
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ftlazy as ft
from ftlazy.array import IndexLambda
from ftlazy.node import topological_order
from ftlazy.scalar_expr import FUNCTIONS, Reduce, TypeCast, is_index_name

# {{{ helpers shared by the op tests

INDEX = np.dtype(np.int64)


class _TypeChecker:
    """Infers the dtype of an IndexLambda body and asserts the design rule:
    every operand of an arithmetic operator, comparison or If already has
    one dtype, constants are numpy scalars, logical operands are bools."""

    def __init__(self, node: IndexLambda) -> None:
        self.node = node
        self.bindings = dict(node.bindings)

    def fail(self, expr, why: str):
        raise AssertionError(f"ill-typed body {self.node.expr} of {self.node!r}: "
                             f"{why} in {expr}")

    def same(self, expr, children) -> np.dtype:
        dtypes = {self(c) for c in children}
        if len(dtypes) != 1:
            self.fail(expr, f"operands of dtypes {sorted(map(str, dtypes))}")
        return dtypes.pop()

    def index(self, expr) -> None:
        """Index expressions: index variables, size params, Python ints."""
        if isinstance(expr, (int, np.integer)) and not isinstance(expr, bool):
            return
        if isinstance(expr, prim.Variable) and (
                is_index_name(expr.name) or expr.name not in self.bindings):
            return
        if isinstance(expr, (prim.Sum, prim.Product)):
            for c in expr.children:
                self.index(c)
            return
        self.fail(expr, "a non-index expression used as an index")

    def __call__(self, expr) -> np.dtype:
        if isinstance(expr, np.generic):
            return expr.dtype
        if isinstance(expr, prim.NaN):
            return np.dtype(expr.data_type)
        if isinstance(expr, (bool, int, float, complex)):
            self.fail(expr, "a Python constant outside an index")
        if isinstance(expr, prim.Variable):
            if expr.name in self.bindings:
                binding = self.bindings[expr.name]
                assert binding.shape == (), f"non-0-d binding {expr.name} read bare"
                return binding.dtype
            return INDEX  # index variables and size parameters
        if isinstance(expr, prim.Subscript):
            binding = self.bindings[expr.aggregate.name]
            assert len(expr.index_tuple) == binding.ndim
            for i in expr.index_tuple:
                self.index(i)
            return binding.dtype
        if isinstance(expr, TypeCast):
            self(expr.child)
            return expr.dtype
        if isinstance(expr, (prim.Sum, prim.Product, prim.Min, prim.Max)):
            dtype = self.same(expr, expr.children)
            if dtype.kind == "b":
                self.fail(expr, "arithmetic on bools")
            return dtype
        if isinstance(expr, (prim.Quotient, prim.FloorDiv, prim.Remainder)):
            return self.same(expr, (expr.numerator, expr.denominator))
        if isinstance(expr, prim.Power):
            return self.same(expr, (expr.base, expr.exponent))
        if isinstance(expr, prim.Comparison):
            self.same(expr, (expr.left, expr.right))
            return np.dtype(bool)
        if isinstance(expr, (prim.LogicalAnd, prim.LogicalOr)):
            if self.same(expr, expr.children) != np.bool_:
                self.fail(expr, "logical operation on non-bools")
            return np.dtype(bool)
        if isinstance(expr, prim.LogicalNot):
            if self(expr.child) != np.bool_:
                self.fail(expr, "logical not of a non-bool")
            return np.dtype(bool)
        if isinstance(expr, (prim.BitwiseAnd, prim.BitwiseOr, prim.BitwiseXor)):
            dtype = self.same(expr, expr.children)
            if dtype.kind not in "iu":
                self.fail(expr, f"bitwise operation on {dtype}")
            return dtype
        if isinstance(expr, prim.BitwiseNot):
            dtype = self(expr.child)
            if dtype.kind not in "iu":
                self.fail(expr, f"bitwise not of {dtype}")
            return dtype
        if isinstance(expr, prim.If):
            if self(expr.condition) != np.bool_:
                self.fail(expr, "a non-bool condition")
            return self.same(expr, (expr.then, expr.else_))
        if isinstance(expr, prim.Call):
            name = expr.function.name
            assert name in FUNCTIONS, name
            dtype = self.same(expr, expr.parameters)
            if name in ("isnan", "isinf"):
                return np.dtype(bool)
            if dtype.kind not in ("fciu" if name == "abs" else "fc"):
                self.fail(expr, f"{name} of {dtype}")
            if name in ("abs", "real", "imag"):
                return np.empty((), dtype).real.dtype
            return dtype
        if isinstance(expr, Reduce):
            dtype = self(expr.inner)
            if expr.op in ("any", "all") and dtype != np.bool_:
                self.fail(expr, f"{expr.op} of {dtype}")
            return dtype
        self.fail(expr, f"unknown expression type {type(expr).__name__}")


def check_well_typed(result) -> None:
    """Every IndexLambda reachable from *result* has a well-typed body of
    its own dtype."""
    for node in topological_order([result]):
        if isinstance(node, IndexLambda):
            dtype = _TypeChecker(node)(node.expr)
            assert dtype == node.dtype, (
                f"body {node.expr} has dtype {dtype}, node says {node.dtype}")


def assert_same(lazy, expected, **inputs) -> np.ndarray:
    """Evaluate *lazy* and compare to numpy's *expected*: dtype, shape and
    values (exact for bool and int, NaN-aware close for inexact)."""
    expected = np.asarray(expected)
    check_well_typed(lazy)
    assert lazy.dtype == expected.dtype, (lazy.dtype, expected.dtype)
    used = {p.name for p in topological_order([lazy])
            if isinstance(p, ft.Placeholder)}
    result = ft.evaluate_numpy(lazy, **{k: v for k, v in inputs.items()
                                        if k in used or not isinstance(v, np.ndarray)})
    assert result.dtype == expected.dtype
    assert result.shape == expected.shape, (result.shape, expected.shape)
    if expected.dtype.kind in "fc":
        rtol = 1e-2 if expected.dtype in (np.float16, np.complex64) else 1e-6
        if expected.dtype == np.float32:
            rtol = 1e-5
        np.testing.assert_allclose(result, expected, rtol=rtol, atol=0,
                                   equal_nan=True)
    else:
        np.testing.assert_array_equal(result, expected)
    return result


def random_array(rng: np.random.Generator, shape, dtype, low=-5, high=6,
                 nonzero=False) -> np.ndarray:
    """Small values of *dtype* (no zeros if *nonzero*)."""
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        values = rng.integers(0, 2, shape).astype(bool)
        return np.ones(shape, bool) if nonzero else values
    if dtype.kind == "u":
        low = max(low, 0)
    values = rng.integers(low, high, shape)
    if dtype.kind in "fc":
        values = values + rng.random(shape).round(2)
    if dtype.kind == "c":
        values = values + 1j * rng.integers(low, high, shape)
    if nonzero:
        values = np.where(values == 0, 1, values)
    return np.asarray(values).astype(dtype)


def placeholder_for(name: str, value: np.ndarray):
    return ft.make_placeholder(name, value.shape, value.dtype)


def numpy_or_error(fn, *args):
    """numpy's result, or the exception class numpy raises."""
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        try:
            return fn(*args), None
        except (OverflowError, TypeError, ValueError) as e:
            return None, next(c for c in (OverflowError, TypeError, ValueError)
                              if isinstance(e, c))

# }}}


DTYPES = [np.bool_, np.int32, np.int64, np.float32, np.float64, np.complex128]
SMALL_DTYPES = [np.int8, np.uint8, np.int16, np.uint32, np.float16, np.complex64]

ARITHMETIC = ["add", "subtract", "multiply", "divide", "floor_divide",
              "remainder", "power", "maximum", "minimum", "arctan2"]
COMPARISONS = ["equal", "not_equal", "less", "less_equal", "greater",
               "greater_equal"]
LOGICAL = ["logical_and", "logical_or", "logical_xor", "bitwise_and",
           "bitwise_or", "bitwise_xor"]
BINARY = ARITHMETIC + COMPARISONS + LOGICAL

UNARY = ["negative", "positive", "absolute", "sign", "sqrt", "exp", "exp2", "log",
         "log2", "log10", "sin", "cos", "tan", "arcsin", "arccos", "arctan",
         "sinh", "cosh", "tanh", "isnan", "isinf", "isfinite", "floor", "ceil",
         "logical_not", "invert", "square", "reciprocal", "conj", "real", "imag"]


def _operands(rng, name, dt1, dt2, shape1=(3, 4), shape2=(3, 4)):
    nonzero = name in ("divide", "floor_divide", "remainder")
    a = random_array(rng, shape1, dt1)
    b = random_array(rng, shape2, dt2, nonzero=nonzero)
    if name == "power":
        a = random_array(rng, shape1, dt1, low=-3, high=4)
        b = random_array(rng, shape2, dt2, low=0, high=4)
    return a, b


@pytest.mark.parametrize("name", BINARY)
@pytest.mark.parametrize("dt1", DTYPES)
@pytest.mark.parametrize("dt2", DTYPES)
def test_binary_ops_match_numpy(name, dt1, dt2):
    rng = np.random.default_rng(hash((name, str(dt1), str(dt2))) % 2**32)
    a, b = _operands(rng, name, dt1, dt2)
    expected, error = numpy_or_error(getattr(np, name), a, b)
    x, y = placeholder_for("a", a), placeholder_for("b", b)
    if error is not None:
        with pytest.raises(error):
            getattr(ft, name)(x, y)
        return
    assert_same(getattr(ft, name)(x, y), expected, a=a, b=b)


@pytest.mark.parametrize("name", ["equal", "not_equal", "less", "less_equal",
                                  "greater", "greater_equal"])
@pytest.mark.parametrize("flip", [False, True])
def test_unsigned_compared_with_signed_exactly(name, flip):
    # (numpy 2 compares uint64 with int64 exactly: -1 is below every
    # uint64, not 2**64 - 1 after a cast)
    u = np.array([0, 2**64 - 1, 5, 7, 2**63], np.uint64)
    i = np.array([-1, -1, 5, 9, -2**63], np.int64)
    a, b = (i, u) if flip else (u, i)
    lazy = getattr(ft, name)(placeholder_for("a", a), placeholder_for("b", b))
    expected = getattr(np, name)(a, b)
    assert_same(lazy, expected, a=a, b=b)
    np.testing.assert_array_equal(ft.compile(lazy)(a=a, b=b), expected)


@pytest.mark.parametrize("name", BINARY)
@pytest.mark.parametrize("dt", SMALL_DTYPES)
def test_binary_ops_small_dtypes(name, dt):
    rng = np.random.default_rng(7)
    a, b = _operands(rng, name, dt, dt)
    expected, error = numpy_or_error(getattr(np, name), a, b)
    x, y = placeholder_for("a", a), placeholder_for("b", b)
    if error is not None:
        with pytest.raises(error):
            getattr(ft, name)(x, y)
        return
    assert_same(getattr(ft, name)(x, y), expected, a=a, b=b)


def _unary_input(rng, name, dt):
    if name in ("arcsin", "arccos"):
        return random_array(rng, (2, 5), dt, low=-1, high=2)
    if name in ("exp", "exp2", "sinh", "cosh"):
        return random_array(rng, (2, 5), dt, low=-3, high=4)
    value = random_array(rng, (2, 5), dt)
    if name == "reciprocal" and np.dtype(dt).kind in "biu":
        value = np.where(value == 0, 1, value).astype(dt)
    return value


@pytest.mark.parametrize("name", UNARY)
@pytest.mark.parametrize("dt", DTYPES + SMALL_DTYPES)
def test_unary_ops_match_numpy(name, dt):
    rng = np.random.default_rng(3)
    a = _unary_input(rng, name, dt)
    expected, error = numpy_or_error(getattr(np, name), a)
    x = placeholder_for("a", a)
    if error is not None:
        with pytest.raises(error):
            getattr(ft, name)(x)
        return
    assert_same(getattr(ft, name)(x), expected, a=a)


@pytest.mark.parametrize("name", ["sqrt", "log", "isnan", "isinf", "isfinite",
                                  "sign", "floor", "ceil", "absolute", "tanh"])
@pytest.mark.parametrize("dt", [np.float32, np.float64, np.complex128])
def test_special_values(name, dt):
    a = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.5, -2.5])
    if np.dtype(dt).kind == "c":
        a = np.concatenate([a, [complex(np.nan, 1), complex(1, np.inf),
                                complex(0, -2)]])
    a = a.astype(dt)
    expected, error = numpy_or_error(getattr(np, name), a)
    x = placeholder_for("a", a)
    if error is not None:
        with pytest.raises(error):
            getattr(ft, name)(x)
        return
    if name == "sign" and np.dtype(dt).kind == "c":
        # complex sign is x/|x|: exact for finite inputs only
        finite = np.isfinite(a)
        a, expected = a[finite], expected[finite]
        x = placeholder_for("a", a)
    assert_same(getattr(ft, name)(x), expected, a=a)


def test_sign_of_negative_zero_is_positive_zero():
    a = np.array([-0.0, 0.0, -3.0])
    result = ft.evaluate_numpy(ft.sign(ft.make_placeholder("a", (3,), np.float64)),
                               a=a)
    np.testing.assert_array_equal(np.signbit(result), np.signbit(np.sign(a)))


# {{{ broadcasting

@pytest.mark.parametrize("shape1, shape2", [
    ((3, 1), (1, 4)),
    ((5,), (2, 1, 5)),
    ((), (2, 3)),
    ((2, 3), ()),
    ((), ()),
    ((0, 3), (1, 3)),
    ((0, 3), (3,)),
    ((1,), (0,)),
    ((1, 1), (1,)),
    ((4, 1, 2), (3, 1)),
])
@pytest.mark.parametrize("name", ["add", "subtract", "multiply", "maximum", "less",
                                  "where"])
def test_broadcasting(shape1, shape2, name):
    rng = np.random.default_rng(11)
    a = random_array(rng, shape1, np.float64)
    b = random_array(rng, shape2, np.int32)
    x, y = placeholder_for("a", a), placeholder_for("b", b)
    if name == "where":
        lazy, expected = ft.where(ft.less(x, 0), x, y), np.where(a < 0, a, b)
    else:
        lazy, expected = getattr(ft, name)(x, y), getattr(np, name)(a, b)
    assert lazy.shape == expected.shape
    assert_same(lazy, expected, a=a, b=b)


def test_broadcast_reads_index_zero_of_length_one_axes():
    x = ft.make_placeholder("x", (3, 1), np.float64)
    y = ft.make_placeholder("y", (4,), np.float64)
    z = x + y
    sub_x, sub_y = z.expr.children
    assert sub_x.index_tuple == (prim.Variable("_0"), 0)
    assert sub_y.index_tuple == (prim.Variable("_1"),)
    s = ft.make_placeholder("s", (), np.float64)
    assert (s * x).expr.children[0] == prim.Variable("_in0")


@pytest.mark.parametrize("scalar", [2, 2.5, True, 1 + 2j, np.float32(2),
                                    np.int8(3), np.float64(0.5)])
@pytest.mark.parametrize("dt", DTYPES + [np.int8, np.float16])
def test_scalar_operands_follow_nep50(scalar, dt):
    rng = np.random.default_rng(5)
    a = random_array(rng, (2, 3), dt)
    x = placeholder_for("a", a)
    for name in ("add", "multiply", "maximum", "less", "equal", "divide"):
        for args, np_args in (((x, scalar), (a, scalar)), ((scalar, x), (scalar, a))):
            expected, error = numpy_or_error(getattr(np, name), *np_args)
            if error is not None:
                with pytest.raises(error):
                    getattr(ft, name)(*args)
                continue
            assert_same(getattr(ft, name)(*args), expected, a=a)


def test_weak_scalar_dtypes():
    f32 = ft.make_placeholder("f", (3,), np.float32)
    i32 = ft.make_placeholder("i", (3,), np.int32)
    b = ft.make_placeholder("b", (3,), np.bool_)
    f16 = ft.make_placeholder("h", (3,), np.float16)
    assert (f32 + 2.0).dtype == np.float32
    assert (2.0 * f32).dtype == np.float32
    assert (f32 / 3).dtype == np.float32
    assert (f16 ** 2).dtype == np.float16
    assert (i32 + 2).dtype == np.int32
    assert (i32 + 2.5).dtype == np.float64
    assert (i32 / 2).dtype == np.float64
    assert (b + 2).dtype == np.int64
    assert (b + True).dtype == np.bool_
    assert (f32 + np.float64(2)).dtype == np.float64
    assert (f32 + ft.asarray(2.0)).dtype == np.float64
    assert (f32 + 1j).dtype == np.complex64
    assert ft.result_type(f32, 2.0) == np.float32
    assert ft.result_type(i32, 2) == np.int32
    assert ft.result_type(i32, 2.5) == np.float64
    assert ft.result_type(np.ones(2, np.int8), np.float32, 1) == np.float32


def test_python_int_out_of_range():
    i8 = np.array([-128, 0, 127], np.int8)
    x = placeholder_for("x", i8)
    with pytest.raises(OverflowError, match="300 out of bounds for int8"):
        x + 300
    with pytest.raises(OverflowError, match="-1 out of bounds for uint8"):
        ft.make_placeholder("u", (3,), np.uint8) * -1
    # comparisons are exact, as in numpy 2
    for op in (ft.less, ft.less_equal, ft.greater, ft.greater_equal, ft.equal,
               ft.not_equal):
        np_op = getattr(np, op.__name__)
        for value in (300, -300, 127, -128):
            assert_same(op(x, value), np_op(i8, value), x=i8)
            assert_same(op(value, x), np_op(value, i8), x=i8)
    u64 = np.array([0, 2**64 - 1], np.uint64)
    assert_same(ft.equal(placeholder_for("u", u64), -1), u64 == -1, u=u64)
    # where converts Python scalars as the installed numpy does: wrapping
    # (numpy 2.0 to 2.4) or raising (2.5)
    try:
        want = np.where(i8 < 0, i8, 300)
    except OverflowError:
        with pytest.raises(OverflowError, match="300 out of bounds for int8"):
            ft.where(x < 0, x, 300)
    else:
        assert_same(ft.where(x < 0, x, 300), want, x=i8)


@pytest.mark.parametrize("numpy_wraps", [True, False])
def test_where_follows_numpy_on_out_of_range_python_integers(monkeypatch,
                                                             numpy_wraps):
    from ftlazy.ops import elementwise
    monkeypatch.setattr(elementwise, "numpy_where_wraps_python_integers",
                        lambda: numpy_wraps)
    i8 = np.array([-128, 0, 127], np.int8)
    x = placeholder_for("x", i8)
    if numpy_wraps:
        assert_same(ft.where(x < 0, x, 300), np.where(i8 < 0, i8, 44), x=i8)
    else:
        with pytest.raises(OverflowError, match="300 out of bounds for int8"):
            ft.where(x < 0, x, 300)
    assert_same(ft.where(x < 0, x, 100), np.where(i8 < 0, i8, 100), x=i8)


@pytest.mark.parametrize("dt", [np.int32, np.int64, np.float32, np.float64])
def test_floor_division_and_modulo_signs(dt):
    a = np.array([7, -7, 7, -7, 0, 6, -6, 1], dt)
    b = np.array([2, 2, -2, -2, 3, -4, 4, -3], dt)
    x, y = placeholder_for("a", a), placeholder_for("b", b)
    assert_same(x // y, a // b, a=a, b=b)
    assert_same(x % y, a % b, a=a, b=b)
    assert_same(ft.mod(x, y), np.mod(a, b), a=a, b=b)
    assert_same(x // -3, a // dt(-3), a=a)
    assert_same(-7 % y, np.remainder(-7, b), b=b)
    if np.dtype(dt).kind == "f":
        c = np.array([7.5, -7.5, 0.5, -0.5], dt)
        d = np.array([2.0, 2.0, -0.25, 0.3], dt)
        assert_same(placeholder_for("c", c) // placeholder_for("d", d), c // d,
                    c=c, d=d)
        assert_same(placeholder_for("c", c) % placeholder_for("d", d), c % d,
                    c=c, d=d)


def test_nan_propagation_in_maximum_minimum():
    a = np.array([np.nan, 1.0, np.nan, 3.0, -np.inf])
    b = np.array([1.0, np.nan, np.nan, 2.0, np.nan])
    x, y = placeholder_for("a", a), placeholder_for("b", b)
    for name in ("maximum", "minimum"):
        result = assert_same(getattr(ft, name)(x, y), getattr(np, name)(a, b),
                             a=a, b=b)
        assert np.isnan(result).tolist() == [True, True, True, False, True]
    assert_same(ft.maximum(x, 2.0), np.maximum(a, 2.0), a=a)
    assert_same(ft.minimum(np.float64(2.0), y), np.minimum(2.0, b), b=b)
    c = np.array([1 + 1j, 1 + 2j, complex(np.nan, 0), 2 + 0j])
    d = np.array([1 + 2j, 1 + 1j, 0j, complex(0, np.nan)])
    z, w = placeholder_for("c", c), placeholder_for("d", d)
    assert_same(ft.maximum(z, w), np.maximum(c, d), c=c, d=d)
    assert_same(ft.minimum(z, w), np.minimum(c, d), c=c, d=d)


def test_clip():
    a = np.array([np.nan, -3.0, 0.5, 7.0])
    x = placeholder_for("a", a)
    assert_same(ft.clip(x, 0, 1), np.clip(a, 0, 1), a=a)
    assert_same(ft.clip(x, None, 1), np.clip(a, None, 1), a=a)
    assert_same(ft.clip(x, 0, None), np.clip(a, 0, None), a=a)
    assert_same(ft.clip(x, 3, 2), np.clip(a, 3, 2), a=a)
    assert_same(ft.clip(x, np.nan, 2), np.clip(a, np.nan, 2), a=a)
    f = a.astype(np.float32)
    assert_same(ft.clip(placeholder_for("f", f), 0, 1), np.clip(f, 0, 1), f=f)
    i = np.array([-100, 0, 5, 100], np.int8)
    y = placeholder_for("i", i)
    assert_same(ft.clip(y, 0.5, 1), np.clip(i, 0.5, 1), i=i)
    assert_same(ft.clip(y, -300, 50), np.clip(i, -300, 50), i=i)
    assert_same(ft.clip(y, 0, 300), np.clip(i, 0, 300), i=i)
    with pytest.raises(OverflowError):
        ft.clip(y, 300, 400)
    lo = np.array([0, 1, 2, 3], np.int16)
    assert_same(ft.clip(y, placeholder_for("lo", lo), 4), np.clip(i, lo, 4),
                i=i, lo=lo)
    assert ft.clip(2.0, 0, 1) == 1.0


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("target", DTYPES + [np.int8, np.uint16, np.float16])
def test_astype(dt, target):
    rng = np.random.default_rng(1)
    a = random_array(rng, (4,), dt)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", np.exceptions.ComplexWarning)
        expected = a.astype(target)
        x = placeholder_for("a", a)
        lazy = x.astype(target)
        if np.dtype(dt) == np.dtype(target):
            assert lazy is x
        assert_same(lazy, expected, a=a)
        assert_same(ft.astype(x, target), expected, a=a)


def test_where():
    rng = np.random.default_rng(2)
    c = rng.random((3, 4)) - 0.5
    a = random_array(rng, (3, 1), np.float32)
    b = random_array(rng, (4,), np.int8)
    z, x, y = placeholder_for("c", c), placeholder_for("a", a), placeholder_for("b", b)
    assert_same(ft.where(z, x, y), np.where(c, a, b), c=c, a=a, b=b)
    assert_same(ft.where(z > 0, x, 2.0), np.where(c > 0, a, 2.0), c=c, a=a)
    assert_same(ft.where(True, y, 1.5), np.where(True, b, 1.5), b=b)
    assert_same(ft.where(z > 0, 1, 2), np.where(c > 0, 1, 2), c=c)
    assert np.asarray(ft.where(True, 1, 2)) == 1


def test_complex_parts():
    a = np.array([1 + 2j, -3.5 - 1j, 0j], np.complex64)
    x = placeholder_for("a", a)
    assert_same(ft.real(x), np.real(a), a=a)
    assert_same(ft.imag(x), np.imag(a), a=a)
    assert_same(ft.conj(x), np.conj(a), a=a)
    assert_same(ft.conjugate(x), np.conjugate(a), a=a)
    assert_same(abs(x), np.abs(a), a=a)
    r = np.array([1.0, -2.0])
    y = placeholder_for("r", r)
    assert ft.real(y) is y and ft.conj(y) is y
    assert_same(ft.imag(y), np.imag(r), r=r)
    assert ft.real(2 + 3j) == 2.0 and ft.imag(2 + 3j) == 3.0


def test_operators():
    rng = np.random.default_rng(4)
    a = random_array(rng, (3, 4), np.float64, nonzero=True)
    i = random_array(rng, (4,), np.int64, nonzero=True)
    b = random_array(rng, (3, 4), np.bool_)
    x, y, z = placeholder_for("a", a), placeholder_for("i", i), placeholder_for("b", b)
    cases = [
        (x + y, a + i), (1 - x, 1 - a), (x * 2, a * 2), (2 / y, 2 / i),
        (x // y, a // i), (7 % y, 7 % i), (x ** 2, a ** 2), (2.0 ** y, 2.0 ** i),
        (-x, -a), (+x, +a), (abs(y), abs(i)), (~z, ~b), (~y, ~i), (z & b, b & b),
        (y | 3, i | 3), (y ^ y, i ^ i), (x < y, a < i), (x <= 1, a <= 1),
        (x > y, a > i), (x >= 0.5, a >= 0.5), (z | ft.less(x, 0), b | (a < 0)),
    ]
    for lazy, expected in cases:
        assert_same(lazy, expected, a=a, i=i, b=b)
    assert (x + 1) is (x + 1)
    assert (x == y) is False


# }}}


# {{{ eager scalars, constants, node structure

def test_scalars_are_computed_eagerly():
    assert ft.add(1, 2) == 3 and isinstance(ft.add(1, 2), np.integer)
    value = ft.exp(2.0)
    assert value == np.exp(2.0) and isinstance(value, np.float64)
    assert ft.maximum(np.float32(1), 2.0).dtype == np.float32
    assert ft.logical_not(0) == np.True_
    assert ft.where(False, 1, 2.5) == 2.5
    assert ft.sum(3) == 3 and ft.amax(np.float32(2)).dtype == np.float32


def test_asarray():
    c = ft.asarray(2.5)
    assert isinstance(c, IndexLambda) and c.shape == () and c.dtype == np.float64
    assert ft.asarray(3).dtype == np.int64
    assert ft.asarray(True).dtype == np.bool_
    assert ft.asarray(1j).dtype == np.complex128
    assert ft.asarray(np.float32(1)).dtype == np.float32
    data = np.arange(3.0)
    wrapped = ft.asarray(data)
    assert isinstance(wrapped, ft.DataWrapper) and wrapped.data is data
    assert ft.asarray(wrapped) is wrapped
    with pytest.raises(TypeError, match="list"):
        ft.asarray([1, 2])
    with pytest.raises(TypeError, match="str"):
        ft.asarray("abc")
    with pytest.raises(OverflowError):
        ft.asarray(2**70)
    with pytest.raises(TypeError, match="dtype"):
        ft.asarray(np.array(["a"]))


def test_constants_are_inlined_not_bound():
    x = ft.make_placeholder("x", (3,), np.float32)
    two = ft.asarray(2.0)
    y = x * two
    assert dict(y.bindings) == {"_in0": x}
    assert y.dtype == np.float64
    assert np.float64(2.0) in y.expr.children
    # other IndexLambdas are bound, not inlined
    z = y + x
    assert set(z.bindings.values()) == {y, x}
    # the same array twice is bound once
    assert len((x * x).bindings) == 1


def test_constants_fold():
    c = ft.asarray(2.0) * 3
    assert isinstance(c, IndexLambda) and c.expr == 6.0 and not c.bindings
    assert ft.sqrt(ft.asarray(4)).expr == 2.0
    assert ft.sqrt(ft.asarray(4)).dtype == np.float64
    assert (ft.asarray(np.int8(3)) < 300).expr == np.True_


def test_size_param_arithmetic_makes_shapes():
    n = ft.make_size_param("n")
    x = ft.make_placeholder("x", (2 * n + 1, n - 1 + 1), np.float64)
    assert x.shape[1] == prim.Variable("n")
    assert (n + 1).dtype == np.int64 and (n + 1).shape == ()
    assert ft.evaluate_numpy((n * 3 + 1) // 2, n=5) == 8


@pytest.mark.parametrize("name", ["equal", "not_equal", "less", "less_equal",
                                  "greater", "greater_equal"])
def test_a_symbolic_size_compared_with_python_scalars(name):
    # (numpy's loops for Python scalars alone are object ones: a size is
    # compared as int64, as numpy compares the number, and compiles)
    n = ft.make_size_param("n")
    x = ft.make_placeholder("x", (n,), np.float64)
    compare = getattr(ft, name)
    for other in (1, 1.5):
        picked = ft.where(compare(x.shape[0], other), x, -x)
        assert compare(x.shape[0], other).dtype == np.bool_
        f = ft.compile(picked)
        for size in (0, 1, 3):
            data = np.arange(size, dtype=np.float64) + 1
            want = np.where(getattr(np, name)(size, other), data, -data)
            np.testing.assert_array_equal(f(x=data), want)
            np.testing.assert_array_equal(ft.evaluate_numpy(picked, x=data),
                                          want)


def test_symbolic_shapes_bound_at_evaluation():
    n = ft.make_size_param("n")
    m = ft.make_size_param("m")
    x = ft.make_placeholder("x", (n, 1), np.float64)
    y = ft.make_placeholder("y", (m,), np.float32)
    w = ft.make_placeholder("w", (n, 1), np.int32)
    z = ft.maximum(x * y, 1.5) - w
    rng = np.random.default_rng(0)
    a, b = rng.random((4, 1)), rng.random(3).astype(np.float32)
    c = np.arange(4, dtype=np.int32).reshape(4, 1)
    assert z.shape == (prim.Variable("n"), prim.Variable("m"))
    assert_same(z, np.maximum(a * b, 1.5) - c, x=a, y=b, w=c)
    u = ft.sqrt(w + ft.make_placeholder("v", (n, 1), np.int32))
    assert_same(u, np.sqrt(c + c), w=c, v=c)
    assert_same(u, np.sqrt(c[:0] + c[:0]), w=c[:0], v=c[:0])

# }}}


# {{{ errors

def test_broadcast_errors_name_both_shapes():
    x = ft.make_placeholder("x", (3,), np.float64)
    y = ft.make_placeholder("y", (4,), np.float64)
    with pytest.raises(ValueError, match=r"\(3,\).*\(4,\)"):
        x + y
    n = ft.make_size_param("n")
    a = ft.make_placeholder("a", (n,), np.float64)
    b = ft.make_placeholder("b", (n + 1,), np.float64)
    with pytest.raises(ValueError, match=r"\(n,\).*\(n \+ 1,\)"):
        ft.multiply(a, b)
    m = ft.make_size_param("m")
    c = ft.make_placeholder("c", (m,), np.float64)
    with pytest.raises(ValueError, match=r"\(n,\).*\(m,\).*cannot be proven"):
        ft.where(a > 0, a, c)
    with pytest.raises(ValueError, match=r"\(2, 3\).*\(3, 2\)"):
        ft.less(np.ones((2, 3)), ft.make_placeholder("d", (3, 2), np.float64))


def test_dtype_errors():
    f = ft.make_placeholder("f", (3,), np.float64)
    b = ft.make_placeholder("b", (3,), np.bool_)
    i = ft.make_placeholder("i", (3,), np.int32)
    for op in (ft.bitwise_and, ft.bitwise_or, ft.bitwise_xor):
        with pytest.raises(TypeError, match="float64"):
            op(f, i)
        with pytest.raises(TypeError, match="float"):
            op(i, 1.5)
    with pytest.raises(TypeError, match="float64"):
        _ = ~f
    with pytest.raises(TypeError, match="subtract.*bool"):
        _ = b - b
    with pytest.raises(TypeError, match="negative.*bool"):
        _ = -b
    with pytest.raises(TypeError, match="positive.*bool"):
        ft.positive(b)
    with pytest.raises(TypeError, match="remainder.*complex"):
        ft.make_placeholder("c", (3,), np.complex128) % 2
    with pytest.raises(TypeError, match="floor"):
        ft.floor(ft.make_placeholder("c", (3,), np.complex128))
    with pytest.raises(TypeError, match="not a valid dtype"):
        f.astype("not a dtype")


def test_unsupported_operand_types():
    x = ft.make_placeholder("x", (3,), np.float64)
    with pytest.raises(TypeError, match="str"):
        ft.add(x, "a")
    with pytest.raises(TypeError, match="list"):
        ft.multiply([1, 2, 3], x)
    with pytest.raises(TypeError, match="dict"):
        ft.sqrt({})
    with pytest.raises(TypeError, match="object"):
        x + object()
    with pytest.raises(TypeError, match="NoneType"):
        ft.where(x > 0, x, None)
    with pytest.raises(TypeError, match="result_type.*str"):
        ft.result_type(x, "float32x")


def test_result_type_accepts_dtypes_and_arrays():
    x = ft.make_placeholder("x", (3,), np.int16)
    assert ft.result_type(x, np.float32) == np.float32
    assert ft.result_type(x, np.dtype(np.uint16)) == np.int32
    assert ft.result_type(np.ones(2, np.float16), 1.0) == np.float16
    assert ft.result_type(2, 2.5) == np.float64
    with pytest.raises(ValueError):
        ft.result_type()

# }}}


# {{{ random expressions

_HYP_UNARY = ["negative", "absolute", "exp", "sin", "tanh", "square", "sqrt",
              "isnan", "logical_not", "floor", "sign"]
_HYP_BINARY = ["add", "subtract", "multiply", "divide", "maximum", "minimum",
               "less", "equal", "logical_or", "where", "power"]
_HYP_REDUCE = ["sum", "prod", "amax", "amin", "any", "all", "mean"]
_HYP_DTYPES = [np.bool_, np.int32, np.int64, np.float32, np.float64]
_HYP_SHAPES = [(), (1,), (3,), (2, 3), (2, 1), (1, 3), (0, 3), (2, 1, 3)]


@st.composite
def _programs(draw):
    n_inputs = draw(st.integers(1, 3))
    inputs = [(f"in{k}", draw(st.sampled_from(_HYP_SHAPES)),
               draw(st.sampled_from(_HYP_DTYPES))) for k in range(n_inputs)]
    steps = draw(st.lists(st.tuples(
        st.sampled_from(["unary", "binary", "scalar", "reduce"]),
        st.sampled_from(_HYP_UNARY), st.sampled_from(_HYP_BINARY),
        st.sampled_from(_HYP_REDUCE), st.integers(0, 100),
        st.integers(0, 100), st.sampled_from([2, -1.5, True, np.float32(0.5)]),
        st.booleans()), min_size=1, max_size=8))
    return inputs, steps


def _apply_step(mod, step, pool):
    kind, unary, binary, reduce, i, j, scalar, keepdims = step
    # build on the latest result half of the time, for deeper DAGs
    x = pool[-1] if i < 50 else pool[i % len(pool)]
    if kind == "unary":
        return getattr(mod, unary)(x)
    if kind == "reduce":
        ndim = np.ndim(x) if mod is np else x.ndim
        axis = None if ndim == 0 or j % 3 == 0 else j % ndim
        if reduce in ("amax", "amin"):
            shape = np.shape(x) if mod is np else x.shape
            if 0 in (shape if axis is None else (shape[axis],)):
                return mod.sum(x, axis=axis, keepdims=keepdims)
        return getattr(mod, reduce)(x, axis=axis, keepdims=keepdims)
    y = pool[j % len(pool)] if kind == "binary" else scalar
    if binary == "where":
        return mod.where(mod.less(x, 1), x, y)
    if binary == "power":
        return mod.power(mod.absolute(x), 2 if kind == "scalar" else True)
    return getattr(mod, binary)(x, y)


@settings(max_examples=50, derandomize=True, deadline=None)
@given(_programs())
def test_random_expressions_match_numpy(program):
    inputs, steps = program
    rng = np.random.default_rng(0)
    values = {name: random_array(rng, shape, dt) for name, shape, dt in inputs}
    lazy_pool = [ft.make_placeholder(name, shape, dt) for name, shape, dt in inputs]
    np_pool = [values[name] for name, _, _ in inputs]
    for step in steps:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            try:
                expected = _apply_step(np, step, np_pool)
            except (TypeError, ValueError) as e:
                with pytest.raises(TypeError if isinstance(e, TypeError)
                                   else ValueError):
                    _apply_step(ft, step, lazy_pool)
                continue
        lazy = _apply_step(ft, step, lazy_pool)
        np_pool.append(np.asarray(expected))
        lazy_pool.append(lazy)
    result, expected = lazy_pool[-1], np_pool[-1]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert_same(result, expected, **values)

# }}}


def test_all_functions_documented():
    from ftlazy.ops import convert, elementwise
    for mod in (elementwise, convert):
        for name in mod.__all__:
            assert getattr(mod, name).__doc__, name
    assert operator.index(len(elementwise.__all__)) > 50


# {{{ negative integer powers of integers

@pytest.mark.parametrize("dtype", [np.int8, np.int32, np.int64, np.bool_])
@pytest.mark.parametrize("exponent", [-1, np.int64(-2), np.int8(-1),
                                      np.array([1, -2, 3])])
def test_known_negative_integer_exponent_fails_at_build_time(dtype, exponent):
    x = ft.make_placeholder("x", (3,), dtype)
    with pytest.raises(ValueError, match=r"^Integers to negative integer powers "
                                         r"are not allowed\. power: the exponent "
                                         "-[12] is negative"):
        x ** exponent
    with pytest.raises(ValueError, match="Integers to negative integer powers"):
        ft.power(x, ft.asarray(exponent) if np.ndim(exponent) == 0 else exponent)
    # numpy agrees
    with pytest.raises(ValueError, match="Integers to negative integer powers"):
        np.ones(3, dtype) ** exponent


def test_negative_exponent_of_a_float_loop_is_fine():
    x = ft.make_placeholder("x", (3,), np.int64)
    f = ft.make_placeholder("f", (3,), np.float64)
    xv = np.array([1, 2, 4])
    np.testing.assert_allclose(ft.evaluate_numpy(x ** -1.0, x=xv), xv ** -1.0)
    np.testing.assert_allclose(ft.evaluate_numpy(f ** -1, f=xv * 1.0), xv ** -1.0)
    np.testing.assert_array_equal(ft.evaluate_numpy(x ** 2, x=xv), xv ** 2)
    np.testing.assert_array_equal(ft.evaluate_numpy(2 ** x, x=xv), 2 ** xv)


def test_negative_exponent_known_only_at_evaluation():
    x = ft.make_placeholder("x", (3,), np.int64)
    y = ft.make_placeholder("y", (3,), np.int32)
    lazy = x ** y
    assert lazy.dtype == np.int64
    xv, yv = np.array([1, 2, 3]), np.array([2, -1, 0], np.int32)
    with pytest.raises(ValueError, match="Integers to negative integer powers are "
                                         "not allowed"):
        xv ** yv
    with pytest.raises(ValueError, match="Integers to negative integer powers are "
                                         "not allowed"):
        ft.evaluate_numpy(lazy, x=xv, y=yv)
    np.testing.assert_array_equal(
        ft.evaluate_numpy(lazy, x=xv, y=np.abs(yv)), xv ** np.abs(yv))


def test_negative_exponent_at_evaluation_in_a_body_and_from_a_size_param():
    n = ft.make_size_param("n")
    x = ft.make_placeholder("x", (2, 3), np.int64)
    mapped = ft.map(lambda row: row ** (n - 2), x)
    with pytest.raises(ValueError, match="Integers to negative integer powers"):
        ft.evaluate_numpy(mapped, x=np.ones((2, 3), np.int64), n=1)
    np.testing.assert_array_equal(
        ft.evaluate_numpy(mapped, x=np.full((2, 3), 3), n=4), np.full((2, 3), 9))

# }}}
