# SPDX-License-Identifier: MIT
"""Elementwise operations with numpy's broadcasting and dtypes.

Each function accepts ftlazy arrays, numpy arrays and scalars. On arrays it
builds one :class:`~ftlazy.IndexLambda` whose body is well typed: operands
are cast to the dtypes of numpy's ufunc loop (:meth:`numpy.ufunc.resolve_dtypes`)
before the operation, so backends need no promotion logic. When every
argument is a Python or numpy scalar the result is computed eagerly by numpy.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np
import pymbolic.primitives as prim

from ftlazy.array import Array, IndexLambda, normalize_dtype
from ftlazy.scalar_expr import TypeCast
from ftlazy.ops.convert import (
    ArrayLike,
    asarray,
    cast,
    cast_constant,
    constant_value,
    elementwise,
    fold_constants,
    is_scalar,
    is_weak_scalar,
    prepare,
    resolve_ufunc,
    result_type,
)

__all__ = [
    "add", "subtract", "multiply", "divide", "true_divide", "floor_divide",
    "remainder", "mod", "power", "negative", "positive", "absolute", "abs",
    "sign", "sqrt", "exp", "exp2", "log", "log2", "log10", "sin", "cos", "tan",
    "arcsin", "arccos", "arctan", "arctan2", "sinh", "cosh", "tanh", "isnan",
    "isinf", "isfinite", "floor", "ceil", "maximum", "minimum", "where",
    "equal", "not_equal", "less", "less_equal", "greater", "greater_equal",
    "logical_and", "logical_or", "logical_not", "logical_xor", "bitwise_and",
    "bitwise_or", "bitwise_xor", "invert", "bitwise_not", "astype", "clip",
    "square", "reciprocal", "conj", "conjugate", "real", "imag",
]

#: what these functions return: a lazy array, or a numpy scalar when every
#: argument was a scalar
Result = Array | np.generic


# {{{ expression helpers

def _const(value: Any, dtype: np.dtype) -> np.generic:
    with np.errstate(all="ignore"):
        return np.asarray(value).astype(dtype)[()]


def _call(name: str, *args: Any) -> prim.Call:
    return prim.Call(prim.Variable(name), args)


def _neg(e: Any, dtype: np.dtype) -> Any:
    if isinstance(e, np.generic):
        with np.errstate(all="ignore"):
            return np.negative(e)
    return prim.Product((_const(-1, dtype), e))


def _isnan(e: Any, dtype: np.dtype) -> Any:
    if dtype.kind == "f":
        return _call("isnan", e)
    # for complex, x != x iff a component is NaN; for ints it is never true
    return prim.Comparison(e, "!=", e)


def _isinf(e: Any, dtype: np.dtype) -> Any:
    if dtype.kind == "f":
        return _call("isinf", e)
    if dtype.kind == "c":
        # |z| is infinite iff a component is (hypot(inf, nan) is inf)
        return _call("isinf", _call("abs", e))
    return prim.Comparison(e, "!=", e)


def _extremum(a: Any, b: Any, dtype: np.dtype, largest: bool) -> Any:
    """numpy's maximum/minimum: the first NaN operand wins."""
    if dtype.kind == "b":
        return prim.LogicalOr((a, b)) if largest else prim.LogicalAnd((a, b))
    if dtype.kind in "iu":
        return prim.Max((a, b)) if largest else prim.Min((a, b))
    if dtype.kind == "f":
        chosen: Any = prim.Max((a, b)) if largest else prim.Min((a, b))
    else:
        # complex numbers order lexicographically, as numpy does
        chosen = prim.If(prim.Comparison(a, ">=" if largest else "<=", b), a, b)
    return prim.If(prim.Comparison(a, "!=", a), a,
                   prim.If(prim.Comparison(b, "!=", b), b, chosen))


def _any_jagged(*args: Any) -> bool:
    """Whether one of *args* is a FractalTensor (a :class:`Jagged` node)."""
    from ftlazy.fractal_tensor import Jagged
    return any(isinstance(a, Jagged) for a in args)


def _leafwise(fn: Callable[..., Result], *args: Any) -> Any:
    """*fn* applied leaf-wise to *args*, one or more of which are
    FractalTensors (see :func:`~ftlazy.fractal_tensor.apply_leafwise`)."""
    from ftlazy.fractal_tensor import apply_leafwise
    return apply_leafwise(fn, *args)


def _unary(ufunc: np.ufunc, x: ArrayLike,
           build: Callable[[Any, np.dtype, np.dtype], Any],
           identity_kinds: str = "") -> Result:
    """Apply *ufunc*; ``build(expr, in_dtype, out_dtype)`` makes the body.
    Where numpy's loop keeps an input whose dtype kind is in
    *identity_kinds* unchanged, the input is returned itself."""
    if is_scalar(x):
        return ufunc(x)
    from ftlazy.fractal_tensor import Jagged
    if isinstance(x, Jagged):  # leaf-wise, keeping the structure
        return x.with_values(_unary(ufunc, x.values, build, identity_kinds))
    a = asarray(x)
    (in_dtype,), out_dtype = resolve_ufunc(ufunc, [a], ufunc.__name__)
    if in_dtype == out_dtype == a.dtype and a.dtype.kind in identity_kinds:
        return a
    folded = fold_constants(ufunc, [a])
    if folded is not None:
        return folded
    return elementwise([a], [in_dtype], out_dtype,
                       lambda e: build(e, in_dtype, out_dtype))


def _binary(ufunc: np.ufunc, x1: ArrayLike, x2: ArrayLike,
            build: Callable[[Any, Any, np.dtype], Any]) -> Result:
    """Apply the binary *ufunc*; ``build(a, b, loop_dtype)`` makes the body
    from operands already cast to numpy's loop dtype."""
    if is_scalar(x1) and is_scalar(x2):
        return ufunc(x1, x2)
    from ftlazy.fractal_tensor import Jagged, apply_leafwise
    if isinstance(x1, Jagged) or isinstance(x2, Jagged):
        return apply_leafwise(
            lambda a, b: _binary(ufunc, a, b, build), x1, x2)
    operands = [prepare(x1), prepare(x2)]
    in_dtypes, out_dtype = resolve_ufunc(ufunc, operands, ufunc.__name__)
    folded = fold_constants(ufunc, operands)
    if folded is not None:
        return folded
    return elementwise(operands, in_dtypes, out_dtype,
                       lambda a, b: build(a, b, in_dtypes[0]))

# }}}


# {{{ arithmetic

def add(x1: ArrayLike, x2: ArrayLike) -> Result:
    """``x1 + x2`` elementwise (logical or for two bools)."""
    return _binary(np.add, x1, x2, lambda a, b, dt: (
        prim.LogicalOr((a, b)) if dt.kind == "b" else prim.Sum((a, b))))


def subtract(x1: ArrayLike, x2: ArrayLike) -> Result:
    """``x1 - x2`` elementwise; two bools are a :class:`TypeError`."""
    return _binary(np.subtract, x1, x2,
                   lambda a, b, dt: prim.Sum((a, _neg(b, dt))))


def multiply(x1: ArrayLike, x2: ArrayLike) -> Result:
    """``x1 * x2`` elementwise (logical and for two bools)."""
    return _binary(np.multiply, x1, x2, lambda a, b, dt: (
        prim.LogicalAnd((a, b)) if dt.kind == "b" else prim.Product((a, b))))


def divide(x1: ArrayLike, x2: ArrayLike) -> Result:
    """``x1 / x2`` (true division; integers divide as float64)."""
    return _binary(np.divide, x1, x2, lambda a, b, dt: prim.Quotient(a, b))


true_divide = divide


def floor_divide(x1: ArrayLike, x2: ArrayLike) -> Result:
    """``x1 // x2``, rounding toward minus infinity as numpy does (for
    floats too)."""
    return _binary(np.floor_divide, x1, x2, lambda a, b, dt: prim.FloorDiv(a, b))


def remainder(x1: ArrayLike, x2: ArrayLike) -> Result:
    """``x1 % x2`` with the sign of the divisor (numpy's and Python's rule)."""
    return _binary(np.remainder, x1, x2, lambda a, b, dt: prim.Remainder(a, b))


mod = remainder


#: numpy's message for a negative integer power of an integer (for the
#: run-time checks of the backends)
NEGATIVE_INTEGER_POWER_MESSAGE = ("Integers to negative integer powers are not "
                                  "allowed.")


def _known_exponents(x2: Any) -> np.ndarray | None:
    """The values of the exponent *x2* if they are known when the graph is
    built (a scalar, a 0-d constant array or a numpy array), else None."""
    if isinstance(x2, Array):
        value = constant_value(x2)
        return None if value is None else np.asarray(value)
    if is_scalar(x2) or isinstance(x2, np.ndarray):
        return np.asarray(x2)
    return None


def power(x1: ArrayLike, x2: ArrayLike) -> Result:
    """``x1 ** x2`` elementwise. As in numpy, negative integer powers of
    integers are a :class:`ValueError`: when the graph is built if the
    exponent is known then (``x ** -1`` for an integer array), else when it
    is evaluated."""
    from ftlazy.fractal_tensor import Jagged, apply_leafwise
    if isinstance(x1, Jagged) or isinstance(x2, Jagged):
        return apply_leafwise(power, x1, x2)
    if not (is_scalar(x1) and is_scalar(x2)):
        operands = [prepare(x1), prepare(x2)]
        (_, exponent_dtype), _ = resolve_ufunc(np.power, operands, "power")
        exponents = _known_exponents(x2)
        if (exponent_dtype.kind == "i" and exponents is not None
                and exponents.dtype.kind in "biu" and (exponents < 0).any()):
            shown = exponents if exponents.ndim == 0 else exponents.min()
            raise ValueError(
                f"{NEGATIVE_INTEGER_POWER_MESSAGE} power: the exponent "
                f"{shown} is negative and the operands compute in "
                f"{exponent_dtype}; convert the base to a floating-point dtype "
                "first")
    return _binary(np.power, x1, x2, lambda a, b, dt: prim.Power(a, b))


def negative(x: ArrayLike) -> Result:
    """``-x`` elementwise; bools are a :class:`TypeError`."""
    return _unary(np.negative, x, lambda e, dt, out: _neg(e, dt))


def positive(x: ArrayLike) -> Result:
    """``+x``: *x* itself (bools are a :class:`TypeError`, as in numpy)."""
    return _unary(np.positive, x, lambda e, dt, out: e, identity_kinds="iufc")


def absolute(x: ArrayLike) -> Result:
    """``|x|`` elementwise; integers stay integers, complex gives its real
    dtype."""
    return _unary(np.absolute, x, lambda e, dt, out: _call("abs", e),
                  identity_kinds="bu")


abs = absolute


def _sign_expr(e: Any, dt: np.dtype, out: np.dtype) -> Any:
    one, zero = _const(1, dt), _const(0, dt)
    if dt.kind == "c":
        magnitude = cast(_call("abs", e), _real_dtype(dt), dt)
        return prim.If(prim.Comparison(e, "==", zero), zero,
                       prim.Quotient(e, magnitude))
    if dt.kind == "u":
        return prim.If(prim.Comparison(e, ">", zero), one, zero)
    negative_one = _const(-1, dt)
    inner: Any = zero if dt.kind == "i" else prim.If(
        prim.Comparison(e, "==", zero), zero, e)
    return prim.If(prim.Comparison(e, ">", zero), one,
                   prim.If(prim.Comparison(e, "<", zero), negative_one, inner))


def sign(x: ArrayLike) -> Result:
    """-1, 0 or 1 by the sign of *x* (NaN stays NaN; for complex *x*,
    ``x / |x|``, computed by complex division for finite *x*)."""
    return _unary(np.sign, x, _sign_expr)


def square(x: ArrayLike) -> Result:
    """``x * x`` elementwise (bools square as int8, as in numpy)."""
    return _unary(np.square, x, lambda e, dt, out: prim.Product((e, e)))


def _reciprocal_expr(e: Any, dt: np.dtype, out: np.dtype) -> Any:
    if dt.kind in "fc":
        return prim.Quotient(_const(1, dt), e)
    # C integer division 1/x: only 1 and -1 give non-zero results (numpy's
    # value for 0 is undefined behaviour in C; here it is 0)
    one, zero = _const(1, dt), _const(0, dt)
    result: Any = zero
    if dt.kind == "i":
        minus_one = _const(-1, dt)
        result = prim.If(prim.Comparison(e, "==", minus_one), minus_one, zero)
    return prim.If(prim.Comparison(e, "==", one), one, result)


def reciprocal(x: ArrayLike) -> Result:
    """``1 / x`` in *x*'s dtype (integer division for integers, as numpy)."""
    return _unary(np.reciprocal, x, _reciprocal_expr)

# }}}


# {{{ functions

def _math(ufunc: np.ufunc, fn: str) -> Callable[[ArrayLike], Result]:
    def math_function(x: ArrayLike) -> Result:
        return _unary(ufunc, x, lambda e, dt, out: _call(fn, e))
    math_function.__name__ = math_function.__qualname__ = fn
    math_function.__doc__ = (
        f"``numpy.{ufunc.__name__}`` elementwise. Integer and bool inputs are "
        "promoted to floats as numpy does (int32 to float64, int16 to "
        "float32, int8 to float16).")
    return math_function


sqrt = _math(np.sqrt, "sqrt")
exp = _math(np.exp, "exp")
exp2 = _math(np.exp2, "exp2")
log = _math(np.log, "log")
log2 = _math(np.log2, "log2")
log10 = _math(np.log10, "log10")
sin = _math(np.sin, "sin")
cos = _math(np.cos, "cos")
tan = _math(np.tan, "tan")
arcsin = _math(np.arcsin, "arcsin")
arccos = _math(np.arccos, "arccos")
arctan = _math(np.arctan, "arctan")
sinh = _math(np.sinh, "sinh")
cosh = _math(np.cosh, "cosh")
tanh = _math(np.tanh, "tanh")


def arctan2(x1: ArrayLike, x2: ArrayLike) -> Result:
    """The angle of the point ``(x2, x1)``, elementwise (``numpy.arctan2``)."""
    return _binary(np.arctan2, x1, x2, lambda a, b, dt: _call("arctan2", a, b))


def floor(x: ArrayLike) -> Result:
    """The largest integer ``<= x``, in *x*'s dtype (integers unchanged)."""
    return _unary(np.floor, x, lambda e, dt, out: _call("floor", e),
                  identity_kinds="biu")


def ceil(x: ArrayLike) -> Result:
    """The smallest integer ``>= x``, in *x*'s dtype (integers unchanged)."""
    return _unary(np.ceil, x, lambda e, dt, out: _call("ceil", e),
                  identity_kinds="biu")


def isnan(x: ArrayLike) -> Result:
    """Whether *x* is NaN (for complex: either component), as bool."""
    return _unary(np.isnan, x, lambda e, dt, out: _isnan(e, dt))


def isinf(x: ArrayLike) -> Result:
    """Whether *x* is infinite (for complex: either component), as bool."""
    return _unary(np.isinf, x, lambda e, dt, out: _isinf(e, dt))


def isfinite(x: ArrayLike) -> Result:
    """Whether *x* is neither infinite nor NaN, as bool."""
    def build(e: Any, dt: np.dtype, out: np.dtype) -> Any:
        if dt.kind in "biu":
            return prim.Comparison(e, "==", e)
        return prim.LogicalNot(prim.LogicalOr((_isnan(e, dt), _isinf(e, dt))))
    return _unary(np.isfinite, x, build)


def maximum(x1: ArrayLike, x2: ArrayLike) -> Result:
    """The larger of *x1* and *x2*; NaN propagates as in numpy."""
    return _binary(np.maximum, x1, x2,
                   lambda a, b, dt: _extremum(a, b, dt, largest=True))


def minimum(x1: ArrayLike, x2: ArrayLike) -> Result:
    """The smaller of *x1* and *x2*; NaN propagates as in numpy."""
    return _binary(np.minimum, x1, x2,
                   lambda a, b, dt: _extremum(a, b, dt, largest=False))


def clip(a: ArrayLike, a_min: ArrayLike | None = None,
         a_max: ArrayLike | None = None) -> Result:
    """*a* limited to ``[a_min, a_max]`` (either may be None), i.e.
    ``minimum(maximum(a, a_min), a_max)`` in the dtype numpy gives, with
    NaN propagating."""
    if all(v is None or is_scalar(v) for v in (a, a_min, a_max)):
        return np.clip(a, a_min, a_max)
    if _any_jagged(a, a_min, a_max):
        return _leafwise(clip, a, a_min, a_max)
    operands = [prepare(a)] + [prepare(v) for v in (a_min, a_max) if v is not None]
    dtype = result_type(*operands)
    bounds: list[tuple[Any, bool]] = []
    for value, largest in ((a_min, True), (a_max, False)):
        if value is None:
            continue
        if (dtype.kind in "iu" and is_weak_scalar(value)
                and not isinstance(value, (bool, float, complex))):
            info = np.iinfo(dtype)
            # numpy drops a Python integer bound that lies beyond the
            # dtype's range on the side where it cannot clip anything
            if (largest and value < info.min) or (not largest and value > info.max):
                continue
        bounds.append((prepare(value), largest))
    operands = [operands[0]] + [b for b, _ in bounds]

    def make(e: Any, *limits: Any) -> Any:
        for limit, (_, largest) in zip(limits, bounds):
            e = _extremum(e, limit, dtype, largest)
        return e
    if not bounds:
        return astype(operands[0], dtype)
    return elementwise(operands, [dtype] * len(operands), dtype, make)

# }}}


# {{{ comparisons and selection

_FLIPPED = {"<": ">", "<=": ">=", ">": "<", ">=": "<=", "==": "==", "!=": "!="}


def _out_of_range(op: str, value: int, info: Any) -> tuple[str, int] | None:
    """A comparison ``x op value`` for an integer *value* outside the range
    of *x*'s dtype, rewritten as an equivalent in-range comparison."""
    if value > info.max:
        true_op = op in ("<", "<=", "!=")
        return ("<=" if true_op else ">"), info.max
    if value < info.min:
        true_op = op in (">", ">=", "!=")
        return (">=" if true_op else "<"), info.min
    return None


def _compare(ufunc: np.ufunc, op: str, x1: ArrayLike, x2: ArrayLike) -> Result:
    if is_scalar(x1) and is_scalar(x2):
        return ufunc(x1, x2)
    from ftlazy.fractal_tensor import Jagged, apply_leafwise
    if isinstance(x1, Jagged) or isinstance(x2, Jagged):
        return apply_leafwise(lambda a, b: _compare(ufunc, op, a, b), x1, x2)
    operands = [prepare(x1), prepare(x2)]
    (dtype, other), _ = resolve_ufunc(ufunc, operands, ufunc.__name__)
    if dtype != other:
        # (numpy's exact loop for uint64 against int64)
        folded = fold_constants(ufunc, operands)
        return folded if folded is not None else elementwise(
            operands, [dtype, other], np.dtype(bool),
            lambda a, b: _mixed_sign_comparison(a, op, b, dtype, other))
    for i in (0, 1):
        value = operands[i]
        if (dtype.kind in "iu" and is_weak_scalar(value)
                and not isinstance(value, bool) and isinstance(value, int)):
            # numpy compares Python integers beyond the dtype's range
            # exactly instead of raising OverflowError
            this_op = op if i == 1 else _FLIPPED[op]
            rewritten = _out_of_range(this_op, value, np.iinfo(dtype))
            if rewritten is not None:
                new_op, bound = rewritten
                return _compare_built(operands[1 - i], new_op, bound, dtype, ufunc)
    folded = fold_constants(ufunc, operands)
    if folded is not None:
        return folded
    return elementwise(operands, [dtype, dtype], np.dtype(bool),
                       lambda a, b: prim.Comparison(a, op, b))


def _mixed_sign_comparison(a: Any, op: str, b: Any, dtype_a: np.dtype,
                           dtype_b: np.dtype) -> Any:
    """``a op b`` for an unsigned and a signed integer of the same width,
    exactly, as numpy compares them: a negative signed value is below every
    unsigned one; otherwise both compare as unsigned."""
    if dtype_a.kind == "i":
        return _mixed_sign_comparison(b, _FLIPPED[op], a, dtype_b, dtype_a)
    negative = prim.Comparison(b, "<", np.zeros((), dtype_b)[()])
    exact = prim.Comparison(a, op, TypeCast(dtype_a, b))
    if op in (">", ">=", "!="):
        return prim.LogicalOr((negative, exact))
    return prim.LogicalAnd((prim.LogicalNot(negative), exact))


def _compare_built(array: Any, op: str, bound: int, dtype: np.dtype,
                   ufunc: np.ufunc) -> Result:
    folded = fold_constants(lambda v: ufunc(v, _const(bound, dtype)), [array])
    if folded is not None:
        return folded
    return elementwise([array], [dtype], np.dtype(bool),
                       lambda a: prim.Comparison(a, op, _const(bound, dtype)))


def equal(x1: ArrayLike, x2: ArrayLike) -> Result:
    """``x1 == x2`` elementwise, as bool (``==`` on arrays compares graphs)."""
    return _compare(np.equal, "==", x1, x2)


def not_equal(x1: ArrayLike, x2: ArrayLike) -> Result:
    """``x1 != x2`` elementwise, as bool."""
    return _compare(np.not_equal, "!=", x1, x2)


def less(x1: ArrayLike, x2: ArrayLike) -> Result:
    """``x1 < x2`` elementwise, as bool."""
    return _compare(np.less, "<", x1, x2)


def less_equal(x1: ArrayLike, x2: ArrayLike) -> Result:
    """``x1 <= x2`` elementwise, as bool."""
    return _compare(np.less_equal, "<=", x1, x2)


def greater(x1: ArrayLike, x2: ArrayLike) -> Result:
    """``x1 > x2`` elementwise, as bool."""
    return _compare(np.greater, ">", x1, x2)


def greater_equal(x1: ArrayLike, x2: ArrayLike) -> Result:
    """``x1 >= x2`` elementwise, as bool."""
    return _compare(np.greater_equal, ">=", x1, x2)


@functools.cache
def numpy_where_wraps_python_integers() -> bool:
    """Whether the installed numpy's ``where`` converts a Python integer out
    of the other operand's integer range by wrapping (numpy 2.0 to 2.4) or
    raises :class:`OverflowError` as its arithmetic does (numpy 2.5)."""
    try:
        np.where(np.zeros(1, bool), np.zeros(1, np.int8), 300)
    except OverflowError:
        return False
    return True


def where(condition: ArrayLike, x: ArrayLike, y: ArrayLike) -> Result:
    """*x* where *condition* (converted to bool) holds, else *y*; the dtype
    is ``result_type(x, y)``. A Python integer out of that dtype's range
    wraps or raises :class:`OverflowError`, as the installed numpy's
    ``where`` does."""
    if is_scalar(condition) and is_scalar(x) and is_scalar(y):
        return np.where(condition, x, y)
    if _any_jagged(condition, x, y):
        return _leafwise(where, condition, x, y)
    operands = [prepare(condition), prepare(x), prepare(y)]
    dtype = result_type(operands[1], operands[2])
    folded = fold_constants(np.where, operands)
    if folded is not None:
        return folded
    return elementwise(operands, [np.dtype(bool), dtype, dtype], dtype,
                       lambda c, a, b: prim.If(c, a, b),
                       wrap_weak=numpy_where_wraps_python_integers())

# }}}


# {{{ logical and bitwise

def _logical(ufunc: np.ufunc, build: Callable[..., Any], *args: ArrayLike
             ) -> Result:
    # numpy has loops on every dtype, but the body is clearer on operands
    # converted to bool first (x != 0), which is what those loops compute
    if all(is_scalar(a) for a in args):
        return ufunc(*args)
    if _any_jagged(*args):
        return _leafwise(lambda *a: _logical(ufunc, build, *a), *args)
    operands = [prepare(a) for a in args]
    folded = fold_constants(ufunc, operands)
    if folded is not None:
        return folded
    bool_ = np.dtype(bool)
    return elementwise(operands, [bool_] * len(operands), bool_, build)


def logical_and(x1: ArrayLike, x2: ArrayLike) -> Result:
    """Both *x1* and *x2* are non-zero, as bool."""
    return _logical(np.logical_and, lambda a, b: prim.LogicalAnd((a, b)), x1, x2)


def logical_or(x1: ArrayLike, x2: ArrayLike) -> Result:
    """Either *x1* or *x2* is non-zero, as bool."""
    return _logical(np.logical_or, lambda a, b: prim.LogicalOr((a, b)), x1, x2)


def logical_xor(x1: ArrayLike, x2: ArrayLike) -> Result:
    """Exactly one of *x1* and *x2* is non-zero, as bool."""
    return _logical(np.logical_xor, lambda a, b: prim.Comparison(a, "!=", b),
                    x1, x2)


def logical_not(x: ArrayLike) -> Result:
    """*x* is zero, as bool."""
    return _logical(np.logical_not, prim.LogicalNot, x)


def _check_bitwise(name: str, *args: Any) -> None:
    for x in args:
        if isinstance(x, (Array, np.ndarray, np.generic)):
            dtype = np.dtype(x.dtype)
        elif is_weak_scalar(x):
            dtype = np.asarray(x).dtype if not isinstance(x, int) else None
        else:
            continue
        if dtype is not None and dtype.kind not in "biu":
            raise TypeError(f"{name} is only defined for bool and integer "
                            f"operands, got dtype {dtype}")


def _bitwise(ufunc: np.ufunc, logical: Callable[[Any, Any], Any],
             bitwise: Callable[[Any, Any], Any], x1: ArrayLike, x2: ArrayLike
             ) -> Result:
    _check_bitwise(ufunc.__name__, x1, x2)
    return _binary(ufunc, x1, x2, lambda a, b, dt: (
        logical(a, b) if dt.kind == "b" else bitwise(a, b)))


def bitwise_and(x1: ArrayLike, x2: ArrayLike) -> Result:
    """``x1 & x2`` on bool and integer arrays."""
    return _bitwise(np.bitwise_and, lambda a, b: prim.LogicalAnd((a, b)),
                    lambda a, b: prim.BitwiseAnd((a, b)), x1, x2)


def bitwise_or(x1: ArrayLike, x2: ArrayLike) -> Result:
    """``x1 | x2`` on bool and integer arrays."""
    return _bitwise(np.bitwise_or, lambda a, b: prim.LogicalOr((a, b)),
                    lambda a, b: prim.BitwiseOr((a, b)), x1, x2)


def bitwise_xor(x1: ArrayLike, x2: ArrayLike) -> Result:
    """``x1 ^ x2`` on bool and integer arrays."""
    return _bitwise(np.bitwise_xor, lambda a, b: prim.Comparison(a, "!=", b),
                    lambda a, b: prim.BitwiseXor((a, b)), x1, x2)


def invert(x: ArrayLike) -> Result:
    """``~x``: logical not for bools, bitwise not for integers."""
    _check_bitwise("invert", x)
    return _unary(np.invert, x, lambda e, dt, out: (
        prim.LogicalNot(e) if dt.kind == "b" else prim.BitwiseNot(e)))


bitwise_not = invert

# }}}


# {{{ dtypes and complex parts

def astype(x: ArrayLike, dtype: Any) -> Result:
    """*x* converted to *dtype* with numpy's (unsafe) ``astype`` rules;
    *x* itself if it already has that dtype."""
    dtype = normalize_dtype(dtype)
    if is_scalar(x):
        return np.asarray(x).astype(dtype)[()]
    if _any_jagged(x):
        return _leafwise(lambda v: astype(v, dtype), x)
    a = asarray(x)
    if a.dtype == dtype:
        return a
    folded = fold_constants(lambda v: cast_constant(v, dtype), [a])
    if folded is not None:
        return folded
    return elementwise([a], [dtype], dtype, lambda e: e)


def conj(x: ArrayLike) -> Result:
    """The complex conjugate; real arrays are returned unchanged (bools
    become int8, as in numpy)."""
    return _unary(np.conjugate, x, lambda e, dt, out: (
        _call("conj", e) if dt.kind == "c" else e), identity_kinds="iuf")


conjugate = conj


def _real_dtype(dtype: np.dtype) -> np.dtype:
    return np.empty((), dtype).real.dtype


def real(x: ArrayLike) -> Result:
    """The real part (*x* itself for real dtypes)."""
    if is_scalar(x):
        return np.real(x)
    if _any_jagged(x):
        return _leafwise(real, x)
    a = asarray(x)
    if a.dtype.kind != "c":
        return a
    out = _real_dtype(a.dtype)
    folded = fold_constants(np.real, [a])
    if folded is not None:
        return folded
    return elementwise([a], [a.dtype], out, lambda e: _call("real", e))


def imag(x: ArrayLike) -> Result:
    """The imaginary part (zeros of *x*'s dtype for real dtypes)."""
    if is_scalar(x):
        return np.imag(x)
    if _any_jagged(x):
        return _leafwise(imag, x)
    a = asarray(x)
    if a.dtype.kind != "c":
        # zeros, still a function of *a* (its value is not read)
        return IndexLambda(_const(0, a.dtype), a.shape, a.dtype, {"_in0": a})
    out = _real_dtype(a.dtype)
    folded = fold_constants(np.imag, [a])
    if folded is not None:
        return folded
    return elementwise([a], [a.dtype], out, lambda e: _call("imag", e))

# }}}

