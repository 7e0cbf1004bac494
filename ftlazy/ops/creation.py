# SPDX-License-Identifier: MIT
"""Array creation: ``zeros ones full arange eye linspace`` and the ``_like``
variants. Each result is an :class:`~ftlazy.IndexLambda` computed from its
indices (no data is stored); shapes may be symbolic.
"""

from __future__ import annotations

import math
import operator
from typing import Any

import numpy as np
import pymbolic.primitives as prim

from ftlazy import shapes as sh
from ftlazy.array import Array, IndexLambda, normalize_dtype
from ftlazy.ops.convert import ArrayLike, asarray, cast, elementwise, is_scalar
from ftlazy.scalar_expr import TypeCast, index_var

__all__ = ["zeros", "ones", "full", "zeros_like", "ones_like", "full_like",
           "arange", "eye", "linspace"]

ShapeLike = Any
Scalar = bool | int | float | complex | np.generic


def _created(expr: Any, shape: ShapeLike, dtype: np.dtype) -> IndexLambda:
    """An array of *shape* computed by *expr* from its indices, binding
    the data-dependent sizes *shape* names (``ft.ones(xs[i].shape[0])``),
    which no input of it has, so that its program reaches their
    definitions."""
    shape = sh.normalize_shape(shape)
    bindings = {}
    if not all(isinstance(c, int) for c in shape):
        from ftlazy.fractal_access import derived_size_bindings
        bindings = derived_size_bindings(shape)
    return IndexLambda(expr, shape, dtype, bindings)


def _constant(shape: ShapeLike, value: np.generic) -> IndexLambda:
    return _created(value, shape, value.dtype)


def _fill_value(fill_value: Scalar, dtype: Any) -> np.generic:
    """*fill_value* as a scalar of *dtype* (its own dtype when None), with
    numpy's conversion rules (an out-of-range Python int is an
    :class:`OverflowError`)."""
    if not is_scalar(fill_value):
        raise TypeError(f"fill value must be a scalar or an array, got "
                        f"{type(fill_value).__name__}")
    dtype = asarray(fill_value).dtype if dtype is None else normalize_dtype(dtype)
    with np.errstate(all="ignore"):
        return np.full((), fill_value, dtype)[()]


def zeros(shape: ShapeLike, dtype: Any = np.float64) -> IndexLambda:
    """An array of zeros. *shape* entries are ints or affine expressions of
    size parameters."""
    return _constant(shape, _fill_value(0, dtype))


def ones(shape: ShapeLike, dtype: Any = np.float64) -> IndexLambda:
    """An array of ones. *shape* entries are ints or affine expressions of
    size parameters."""
    return _constant(shape, _fill_value(1, dtype))


def full(shape: ShapeLike, fill_value: ArrayLike, dtype: Any = None) -> Array:
    """An array of *shape* filled with *fill_value*; the dtype defaults to
    the fill value's (numpy's default dtypes for Python scalars). The fill
    value may also be an array that broadcasts to *shape*."""
    if is_scalar(fill_value):
        return _constant(shape, _fill_value(fill_value, dtype))
    fill = asarray(fill_value)
    dtype = fill.dtype if dtype is None else normalize_dtype(dtype)
    shape = sh.normalize_shape(shape)
    result_shape = sh.broadcast_shapes(shape, fill.shape)
    if not sh.shapes_equal(result_shape, shape):
        raise ValueError(f"fill value of shape {sh.shape_str(fill.shape)} does "
                         f"not broadcast to shape {sh.shape_str(shape)}")
    # a 0-d zeros operand makes the result take *shape*
    return elementwise([fill, zeros(shape, dtype)], [dtype, dtype], dtype,
                       lambda f, _: f)


def zeros_like(a: ArrayLike, dtype: Any = None) -> IndexLambda:
    """Zeros with the shape and (by default) the dtype of *a*."""
    a = asarray(a)
    return zeros(a.shape, a.dtype if dtype is None else dtype)


def ones_like(a: ArrayLike, dtype: Any = None) -> IndexLambda:
    """Ones with the shape and (by default) the dtype of *a*."""
    a = asarray(a)
    return ones(a.shape, a.dtype if dtype is None else dtype)


def full_like(a: ArrayLike, fill_value: ArrayLike, dtype: Any = None) -> Array:
    """*fill_value* with the shape and (by default) the dtype of *a*; the
    value is converted as numpy's ``full_like`` does (``2.7`` in an integer
    array is ``2``)."""
    a = asarray(a)
    return full(a.shape, fill_value, a.dtype if dtype is None else dtype)


# {{{ arange

def _arange_dtype(values: list[Any]) -> np.dtype:
    # numpy's arange promotes the platform integer with each argument's
    # own dtype (Python scalars count as numpy's default dtypes here)
    return normalize_dtype(np.result_type(
        np.intp, *[np.asarray(v).dtype for v in values]))


def _arange_length(quotient: Any, dtype: np.dtype) -> int:
    """numpy's length for ``(stop - start) / step == quotient``: its ceiling,
    and for a complex dtype and a complex quotient the smaller of the
    ceilings of its real and imaginary parts (so ``arange(0, 3j, 1j)`` is
    empty, as in numpy); at least 0."""
    parts = [quotient]
    if np.iscomplexobj(quotient):
        if dtype.kind != "c":
            raise TypeError(f"arange: complex arguments need a complex dtype, "
                            f"got {dtype}")
        parts = [quotient.real, quotient.imag]
    lengths = []
    for part in parts:
        value = float(part)
        if not math.isfinite(value):
            raise ValueError(f"arange: the length (stop - start) / step = "
                             f"{quotient!r} is not finite")
        lengths.append(math.ceil(value))
    return max(0, min(lengths))


def _index_times(dtype: np.dtype, step: np.generic) -> Any:
    i = TypeCast(dtype, index_var(0))
    return i if step == 1 else prim.Product((i, step))


def arange(start: Any, stop: Any = None, step: Any = None,
           dtype: Any = None) -> IndexLambda:
    """Evenly spaced values ``start, start + step, ...`` below *stop*, with
    numpy's length and dtype rules (``arange(stop)`` counts from 0). Float
    and complex arguments are allowed; for complex ones the length is the
    smaller of the real and imaginary parts' counts, as in numpy.

    A symbolic *stop* (a size parameter or affine expression of them) is
    allowed with an integer *start* and *step* 1; the length is then
    ``stop - start``. A zero *step* is a :class:`ValueError`.
    """
    if stop is None:
        start, stop = 0, start
    if not is_scalar(stop):
        return _symbolic_arange(start, stop, step, dtype)
    given = [v for v in (start, stop, step) if v is not None]
    for v in given:
        if not is_scalar(v):
            raise TypeError(f"arange arguments must be scalars, got "
                            f"{type(v).__name__}")
    step = 1 if step is None else step
    if step == 0:
        raise ValueError("arange: step must not be zero")
    dtype = _arange_dtype(given) if dtype is None else normalize_dtype(dtype)
    with np.errstate(all="ignore"):
        length = _arange_length((stop - start) / step, dtype)
        # numpy stores the first two values in the dtype and extends
        # with their difference
        first = np.empty(2, dtype)
        first[0] = start
        first[1] = start + step
        delta = first[1] - first[0]
    body: Any = _index_times(dtype, delta)
    if first[0] != 0:
        body = prim.Sum((first[0], body))
    return IndexLambda(body, (length,), dtype, {})


def _symbolic_arange(start: Any, stop: Any, step: Any, dtype: Any) -> IndexLambda:
    step_is_one = step is None or (is_scalar(step) and not isinstance(
        step, (bool, np.bool_)) and step == 1)
    if not step_is_one or not isinstance(start, (int, np.integer)) \
            or isinstance(start, (bool, np.bool_)):
        raise ValueError(f"arange with a symbolic stop ({stop!r}) needs an "
                         f"integer start and step 1, got start={start!r}, "
                         f"step={step!r}")
    try:
        stop_expr = sh.normalize_component(stop)
    except (TypeError, ValueError) as e:
        raise TypeError(f"arange: stop must be a scalar or an affine "
                        f"expression of size parameters: {e}") from None
    length = sh.sub(stop_expr, int(start))
    dtype = np.dtype(np.int64) if dtype is None else normalize_dtype(dtype)
    body: Any = TypeCast(dtype, index_var(0))
    if start != 0:
        body = prim.Sum((np.asarray(start).astype(dtype)[()], body))
    return _created(body, (length,), dtype)

# }}}


def eye(N: Any, M: Any = None, k: int = 0, dtype: Any = np.float64
        ) -> IndexLambda:
    """A 2-d array with ones on diagonal *k* (0: main, positive: above) and
    zeros elsewhere. *N* and *M* may be symbolic."""
    dtype = normalize_dtype(dtype)
    if isinstance(k, (bool, np.bool_)) or not isinstance(k, (int, np.integer)):
        raise TypeError(f"eye: k must be an int, got {type(k).__name__}")
    shape = sh.normalize_shape((N, N if M is None else M))
    row: Any = index_var(0)
    if k:
        row = prim.Sum((row, np.int64(k)))
    on_diagonal = prim.Comparison(row, "==", index_var(1))
    one, zero = np.ones((), dtype)[()], np.zeros((), dtype)[()]
    body = on_diagonal if dtype.kind == "b" else prim.If(on_diagonal, one, zero)
    return _created(body, shape, dtype)


def linspace(start: Scalar, stop: Scalar, num: int = 50, endpoint: bool = True,
             retstep: bool = False, dtype: Any = None) -> Any:
    """*num* evenly spaced values from *start* to *stop* (included if
    *endpoint*), computed as numpy computes them; integer dtypes floor the
    values. *start* and *stop* must be scalars; *num* an int or an affine
    expression of size parameters (``s.shape[0]`` of a sequence in a map
    body). With *retstep*, returns ``(samples, step)`` (the step a 0-d
    array where *num* is symbolic)."""
    for v in (start, stop):
        if not is_scalar(v):
            raise TypeError(f"linspace: start and stop must be scalars, got "
                            f"{type(v).__name__}")
    if not isinstance(num, (int, np.integer)) or isinstance(num, (bool, np.bool_)):
        try:
            num = sh.normalize_component(num)
        except (TypeError, ValueError):
            raise TypeError(f"linspace: num must be an int or an affine "
                            f"expression of size parameters, got {num!r}") from None
        if not isinstance(num, int):
            return _symbolic_linspace(start, stop, num, endpoint, retstep, dtype)
    num = operator.index(num)
    if num < 0:
        raise ValueError(f"linspace: number of samples, {num}, must be "
                         "non-negative")
    div = num - 1 if endpoint else num
    dt, out, start_c, stop_c, delta = _linspace_constants(start, stop, dtype)
    with np.errstate(all="ignore"):
        step = delta / div if div > 0 else np.asarray(np.nan).astype(dt)[()]
    i = TypeCast(dt, index_var(0))
    body: Any
    if div > 0 and step == 0:
        body = prim.Product((prim.Quotient(i, np.asarray(div).astype(dt)[()]),
                             delta))
    elif div > 0:
        body = prim.Product((i, step))
    else:
        body = prim.Product((i, delta))
    body = prim.Sum((body, start_c))
    if endpoint and num > 1:
        body = prim.If(prim.Comparison(index_var(0), "==", np.int64(num - 1)),
                       stop_c, body)
    if out.kind in "iu":
        body = prim.Call(prim.Variable("floor"), (body,))
    result = IndexLambda(cast(body, dt, out), (num,), out, {})
    return (result, step) if retstep else result


def _linspace_constants(start: Scalar, stop: Scalar, dtype: Any
                        ) -> tuple[np.dtype, np.dtype, Any, Any, Any]:
    """The computing and the result dtype of :func:`linspace`, and its
    start, stop and ``stop - start`` as constants of the computing one."""
    dt = np.result_type(start, stop, 1.0)
    out = dt if dtype is None else normalize_dtype(dtype)
    start_c = np.asarray(start).astype(dt)[()]
    stop_c = np.asarray(stop).astype(dt)[()]
    with np.errstate(all="ignore"):
        return dt, out, start_c, stop_c, stop_c - start_c


def _symbolic_linspace(start: Scalar, stop: Scalar, num: Any, endpoint: bool,
                       retstep: bool, dtype: Any) -> Any:
    """:func:`linspace` of a symbolic *num*: numpy's cases (no step for
    fewer than two samples, a step that underflows to 0, the exact last
    sample) chosen at run time."""
    from ftlazy.ops.reductions import _count_expr
    dt, out, start_c, stop_c, delta = _linspace_constants(start, stop, dtype)
    count = _count_expr([num])
    real = np.finfo(dt).dtype  # (the samples' count and index are real)
    div = TypeCast(real, prim.Sum((count, np.int64(-1))) if endpoint else count)
    has_step = prim.Comparison(div, ">", real.type(0))
    step = prim.Quotient(delta, div)
    i = TypeCast(real, index_var(0))
    stepped: Any = prim.Product((i, step))
    if dt.kind == "f":  # a step that underflows to 0: numpy scales by delta
        stepped = prim.If(prim.Comparison(step, "==", dt.type(0)),
                          prim.Product((prim.Quotient(i, div), delta)), stepped)
    body: Any = prim.If(has_step, stepped, prim.Product((i, delta)))
    body = prim.Sum((body, start_c))
    if endpoint:  # the last of two or more samples is stop itself
        last = prim.LogicalAnd((
            prim.Comparison(index_var(0), "==", prim.Sum((count, np.int64(-1)))),
            prim.Comparison(index_var(0), ">", np.int64(0))))
        body = prim.If(last, stop_c, body)
    if out.kind in "iu":
        body = prim.Call(prim.Variable("floor"), (body,))
    result = _created(cast(body, dt, out), (num,), out)
    if not retstep:
        return result
    no_step = real.type(np.nan) if dt == real else TypeCast(dt, real.type(np.nan))
    step_array = IndexLambda(prim.If(has_step, step, no_step), (), dt,
                             dict(result.bindings))
    return result, step_array
