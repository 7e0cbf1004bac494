# SPDX-License-Identifier: MIT
"""Conversion of user values to arrays, numpy type promotion, and the one
builder that every elementwise operation uses.

Python scalars are *weak* (NEP 50): they take the dtype of the arrays they
meet. numpy scalars and 0-d arrays are strong. An op whose operands are all
Python or numpy scalars is computed eagerly with numpy.

.. autofunction:: asarray
.. autofunction:: result_type
.. autofunction:: elementwise
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pymbolic.primitives as prim

from ftlazy import shapes as sh
from ftlazy.array import Array, IndexLambda, normalize_dtype
from ftlazy.scalar_expr import TypeCast, index_var

__all__ = ["asarray", "result_type"]

#: what the front end accepts where numpy accepts an array
ArrayLike = Array | np.ndarray | np.generic | bool | int | float | complex

_PY_SCALARS = (bool, int, float, complex)


# {{{ classification and conversion

def is_weak_scalar(x: Any) -> bool:
    """Whether *x* is a Python scalar (weak in numpy's promotion). numpy's
    ``float64`` and ``complex128`` subclass Python's types but are strong."""
    return isinstance(x, _PY_SCALARS) and not isinstance(x, np.generic)


def is_scalar(x: Any) -> bool:
    """Whether *x* is a Python or numpy scalar (computed on eagerly)."""
    return is_weak_scalar(x) or isinstance(x, np.generic)


def _is_device_array(x: Any) -> bool:
    return type(x).__module__.startswith("pyopencl") and hasattr(x, "dtype")


def _default_scalar(x: bool | int | float | complex) -> np.generic:
    """numpy's default-dtype scalar for a Python scalar (an int from 2**63
    on is a uint64, as in numpy)."""
    if isinstance(x, int) and not isinstance(x, bool):
        if x < np.iinfo(np.int64).min:
            raise OverflowError(f"Python integer {x} out of bounds for int64")
        if x > np.iinfo(np.uint64).max:
            raise OverflowError(f"Python integer {x} out of bounds for uint64")
    return np.asarray(x)[()]


def is_size_expression(x: Any) -> bool:
    """Whether *x* is a symbolic shape component (``x.shape[0]`` of an array
    whose length is a size parameter, or arithmetic on one): a pymbolic
    expression, whose names are size parameters."""
    return isinstance(x, prim.ExpressionNode)


def size_array(expr: Any) -> Array:
    """The 0-d array of the value of the size expression *expr*, as numpy
    computes it on Python ints: a size parameter is a
    :class:`~ftlazy.SizeParam` (int64), arithmetic on it the ftlazy
    operation (``n - 1`` is int64, ``n / 2`` float64, ``n // 2`` int64).
    Raises :class:`TypeError` for an expression that is not arithmetic on
    size parameters and numbers."""
    from ftlazy.array import SizeParam
    from ftlazy.fractal_access import derived_size_value
    from ftlazy.ops import elementwise as ew

    def value(e: Any) -> Any:
        if isinstance(e, prim.Variable):
            # (a data-dependent size, the length of a filter's result: the
            # value that defines it, computed where it is used)
            derived = derived_size_value(e.name)
            return SizeParam(e.name) if derived is None else derived
        if is_scalar(e):
            return e
        if isinstance(e, (prim.Sum, prim.Product)):
            fn = ew.add if isinstance(e, prim.Sum) else ew.multiply
            result = value(e.children[0])
            for child in e.children[1:]:
                result = fn(result, value(child))
            return result
        for kind, fn in ((prim.FloorDiv, ew.floor_divide),
                         (prim.Quotient, ew.divide),
                         (prim.Remainder, ew.remainder)):
            if isinstance(e, kind):
                return fn(value(e.numerator), value(e.denominator))
        if isinstance(e, prim.Power):
            return ew.power(value(e.base), value(e.exponent))
        raise TypeError(
            f"cannot use the expression {expr} as an array: a symbolic shape "
            "component is usable as a value only through arithmetic (+ - * / "
            f"// % **) on size parameters and numbers, not {type(e).__name__}")

    return asarray(value(expr))


class SizeScalar:
    """A size expression as an operand (see :func:`prepare`): its 0-d value
    :attr:`array`, *weak* in promotion as the Python number that numpy's
    shapes are (``float32_array / x.shape[0]`` is float32)."""

    __slots__ = ("array",)

    def __init__(self, array: Array) -> None:
        self.array = array

    @property
    def python_type(self) -> type:
        """The Python type the value has in numpy: int or float."""
        return float if self.array.dtype.kind == "f" else int


#: a converted operand: an array, a weak Python scalar or a weak size value
Operand = Array | bool | int | float | complex | SizeScalar


def asarray(x: ArrayLike) -> Array:
    """*x* as an :class:`~ftlazy.Array`.

    Arrays pass through; Python and numpy scalars become a 0-d constant
    :class:`~ftlazy.IndexLambda` (Python scalars get numpy's default dtype:
    bool, int64, float64, complex128); numpy arrays become a
    :class:`~ftlazy.DataWrapper`; a symbolic shape component
    (``x.shape[0]``) becomes the 0-d int64 array of its value
    (:func:`size_array`). Anything else is a :class:`TypeError`.
    """
    from ftlazy.inputs import make_data_wrapper
    if isinstance(x, Array):
        return x
    if is_size_expression(x):
        return size_array(x)
    if is_weak_scalar(x):
        x = _default_scalar(x)
    if isinstance(x, np.generic):
        dtype = normalize_dtype(x.dtype)
        return IndexLambda(x, (), dtype, {})
    if isinstance(x, np.ndarray) or _is_device_array(x):
        return make_data_wrapper(x)
    from ftlazy.fractal_tensor import Jagged
    if isinstance(x, Jagged):
        raise TypeError(f"cannot use a FractalTensor ({x!r}) as an array: its "
                        "elements have lengths of their own; apply the "
                        "operation to each element with ft.map, or to its "
                        "packed rows with ft.flatten")
    raise TypeError(f"cannot use an object of type {type(x).__name__} as an "
                    "array: expected an ftlazy Array, a numpy array or a scalar")


def constant_value(a: Array) -> np.generic | None:
    """The value of *a* if it is an untagged 0-d constant (as built by
    :func:`asarray` from a scalar), else None."""
    if (isinstance(a, IndexLambda) and not a.bindings and a.shape == ()
            and not a.tags):
        if isinstance(a.expr, np.generic):
            return a.expr
        if isinstance(a.expr, prim.NaN):
            return a.expr.data_type(np.nan)
    return None


def prepare(x: Any) -> Operand:
    """Weak Python scalars stay as they are, symbolic shape components
    become a weak :class:`SizeScalar`; everything else goes through
    :func:`asarray`."""
    if is_weak_scalar(x):
        return x
    if is_size_expression(x):
        return SizeScalar(size_array(x))
    return asarray(x)

# }}}


# {{{ promotion

def _promotion_part(x: Any) -> Any:
    if isinstance(x, Array):
        return x.dtype
    if isinstance(x, SizeScalar):
        return x.python_type(0)
    if is_weak_scalar(x):
        return x
    if isinstance(x, (np.ndarray, np.generic)) or _is_device_array(x):
        return normalize_dtype(x.dtype)
    if isinstance(x, np.dtype) or (isinstance(x, type)
                                   and issubclass(x, (np.generic, *_PY_SCALARS))):
        return normalize_dtype(x)
    raise TypeError(f"result_type: cannot determine the dtype of an object of "
                    f"type {type(x).__name__}")


def result_type(*arrays_and_scalars: Any) -> np.dtype:
    """numpy's result dtype (NEP 50: Python scalars are weak, so
    ``float32`` array + ``2.0`` is ``float32`` and ``int32`` + ``2`` is
    ``int32``, while an integer array + ``2.5`` is ``float64``). Accepts
    arrays (lazy or numpy), scalars and dtypes."""
    if not arrays_and_scalars:
        raise ValueError("result_type needs at least one array, scalar or dtype")
    parts = [_promotion_part(x) for x in arrays_and_scalars]
    try:
        return normalize_dtype(np.result_type(*parts))
    except TypeError:
        dtypes = [p for p in parts if isinstance(p, np.dtype)]
        for i, a in enumerate(dtypes):
            for b in dtypes[i + 1:]:
                try:
                    np.result_type(a, b)
                except TypeError:
                    raise TypeError(f"dtypes {a} and {b} cannot be promoted to "
                                    "a common dtype") from None
        raise TypeError("cannot promote "
                        + ", ".join(map(str, parts)) + " to a common dtype"
                        ) from None

# }}}


# {{{ constants

def weak_constant(value: bool | int | float | complex, dtype: np.dtype,
                  wrap: bool = False) -> np.generic:
    """The Python scalar *value* as a numpy scalar of *dtype*. An integer out
    of *dtype*'s range raises :class:`OverflowError` as numpy does, unless
    *wrap* asks for numpy's unsafe cast (as ``numpy.where`` does)."""
    if (dtype.kind in "iu" and isinstance(value, int)
            and not isinstance(value, bool) and not wrap):
        info = np.iinfo(dtype)
        if not info.min <= value <= info.max:
            raise OverflowError(f"Python integer {value} out of bounds for {dtype}")
    if isinstance(value, int) and not isinstance(value, bool) and wrap:
        value = _default_scalar(value)
    with np.errstate(all="ignore"):
        return np.asarray(value).astype(dtype)[()]


def cast_constant(value: np.generic, dtype: np.dtype) -> np.generic:
    """A numpy scalar converted to *dtype* (numpy's ``astype``)."""
    if value.dtype == dtype:
        return value
    with np.errstate(all="ignore"):
        return np.asarray(value).astype(dtype)[()]


def cast(expr: Any, from_dtype: np.dtype, to_dtype: np.dtype) -> Any:
    """*expr* (of *from_dtype*) converted to *to_dtype*, if needed."""
    if from_dtype == to_dtype:
        return expr
    if isinstance(expr, np.generic):
        return cast_constant(expr, to_dtype)
    return TypeCast(to_dtype, expr)

# }}}


# {{{ the elementwise builder

def broadcast_read(name: str, shape: sh.Shape, out_shape: sh.Shape) -> Any:
    """The expression reading binding *name* of *shape* at the output index
    of an array of *out_shape* that it broadcasts to."""
    if not shape:
        return prim.Variable(name)
    offset = len(out_shape) - len(shape)
    idx = tuple(0 if d == 1 and out_shape[offset + i] != 1
                else index_var(offset + i)
                for i, d in enumerate(shape))
    return prim.Subscript(prim.Variable(name), idx)


def elementwise(operands: Sequence[Operand], in_dtypes: Sequence[np.dtype],
                out_dtype: np.dtype, make_expr: Callable[..., Any],
                wrap_weak: bool = False) -> IndexLambda:
    """One :class:`~ftlazy.IndexLambda` applying ``make_expr`` elementwise.

    :arg operands: arrays and weak Python scalars (see :func:`prepare`).
    :arg in_dtypes: the dtype each operand is cast to before ``make_expr``
        sees it, so that the body is well typed.
    :arg make_expr: called with one scalar expression per operand.
    :arg wrap_weak: cast out-of-range Python integers unsafely instead of
        raising :class:`OverflowError`.

    Shapes broadcast as in numpy. Each distinct array is bound once as
    ``_in<k>``; 0-d constants are inlined rather than bound.
    """
    arrays = [a for a in operands if isinstance(a, Array)]
    shape = sh.broadcast_shapes(*[a.shape for a in arrays])
    bindings: dict[str, Array] = {}
    names: dict[Array, str] = {}
    exprs = []
    for a, dtype in zip(operands, in_dtypes):
        if isinstance(a, SizeScalar):
            a = a.array
        if not isinstance(a, Array):
            exprs.append(weak_constant(a, dtype, wrap=wrap_weak))
            continue
        value = constant_value(a)
        if value is not None:
            exprs.append(cast_constant(value, dtype))
            continue
        name = names.get(a)
        if name is None:
            name = names[a] = f"_in{len(bindings)}"
            bindings[name] = a
        exprs.append(cast(broadcast_read(name, a.shape, shape), a.dtype, dtype))
    return IndexLambda(make_expr(*exprs), shape, out_dtype, bindings)


def _ufunc_dtype_arg(x: Operand) -> Any:
    if isinstance(x, Array):
        return x.dtype
    if isinstance(x, SizeScalar):
        return x.python_type
    if isinstance(x, bool):
        return np.dtype(bool)
    return type(x)


def resolve_ufunc(ufunc: np.ufunc, operands: Sequence[Operand], name: str
                  ) -> tuple[tuple[np.dtype, ...], np.dtype]:
    """numpy's loop for *ufunc* on *operands*: the input dtypes to cast to and
    the output dtype. Raises :class:`TypeError` naming *name* and the dtypes
    when numpy has no loop."""
    args = tuple(_ufunc_dtype_arg(x) for x in operands)
    if not any(isinstance(a, np.dtype) for a in args):
        # (only Python scalars, a symbolic size among them: numpy computes
        # on them as arrays of its default dtypes; its comparison loops for
        # Python types alone would be object ones)
        args = tuple(np.dtype(a) for a in args)
    try:
        loop = ufunc.resolve_dtypes(args + (None,) * ufunc.nout)
    except TypeError as e:
        described = ", ".join(str(a) if isinstance(a, np.dtype)
                              else f"Python {a.__name__}" for a in args)
        raise TypeError(f"{name} is not supported for dtype(s) {described}: "
                        f"{e}") from None
    return tuple(loop[:ufunc.nin]), loop[ufunc.nin]


def fold_constants(fn: Callable[..., Any], operands: Sequence[Operand]
                   ) -> Array | None:
    """If every array operand is a 0-d constant, *fn* applied with numpy to
    the values, as a constant array; else None."""
    values = []
    for a in operands:
        if isinstance(a, SizeScalar):
            return None
        if isinstance(a, Array):
            value = constant_value(a)
            if value is None:
                return None
            values.append(value)
        else:
            values.append(a)
    with np.errstate(all="ignore"):
        result = fn(*values)
    return asarray(np.asarray(result)[()])

# }}}
