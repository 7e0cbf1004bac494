# SPDX-License-Identifier: MIT
"""Reductions: ``sum prod amax amin any all mean var`` with numpy's dtypes.

A reduction is one :class:`~ftlazy.IndexLambda` whose body is a
:class:`~ftlazy.scalar_expr.Reduce` over fresh reduction indices ``_r0,
_r1, ...`` with bounds ``(name, 0, dim)`` (``dim`` possibly symbolic).
"""

from __future__ import annotations

import builtins
from functools import cache
from typing import Any

import numpy as np
import pymbolic.primitives as prim

from ftlazy import shapes as sh
from ftlazy.array import Array, IndexLambda, normalize_dtype
from ftlazy.ops.convert import ArrayLike, asarray, cast, constant_value, is_scalar
from ftlazy.scalar_expr import Reduce, TypeCast, index_var, reduction_var

__all__ = ["sum", "prod", "amax", "amin", "max", "min", "any", "all", "mean",
           "var", "std"]

#: numpy's names of the reductions without an identity, by Reduce op
_NO_IDENTITY = {"max": "maximum", "min": "minimum", "maximum": "maximum",
                "minimum": "minimum"}

Result = Array | np.generic
AxisLike = None | int | tuple[int, ...]


def normalize_axes(axis: AxisLike, ndim: int, ufunc_quirk: bool = False
                   ) -> tuple[int, ...]:
    """The sorted, non-negative axes that *axis* (None, an int or a tuple
    of ints) names. Raises :class:`numpy.exceptions.AxisError` for an axis
    out of range and :class:`ValueError` for a repeated axis. With
    *ufunc_quirk*, an int axis 0 or -1 of a 0-d array names no axis, as in
    numpy's ufunc reductions (``np.sum(np.float64(1), axis=0)``)."""
    if axis is None:
        return tuple(range(ndim))
    if (ufunc_quirk and ndim == 0 and isinstance(axis, (int, np.integer))
            and not isinstance(axis, (bool, np.bool_)) and axis in (0, -1)):
        return ()
    entries = axis if isinstance(axis, tuple) else (axis,)
    result = []
    for ax in entries:
        if isinstance(ax, (bool, np.bool_)) or not isinstance(ax, (int, np.integer)):
            raise TypeError(f"axis must be an int, a tuple of ints or None, got "
                            f"{type(ax).__name__} {ax!r}")
        if not -ndim <= ax < ndim:
            raise np.exceptions.AxisError(int(ax), ndim)
        result.append(int(ax) % ndim)
    if len(set(result)) != len(result):
        raise ValueError(f"duplicate value in 'axis': {axis!r} names an axis "
                         "twice")
    return tuple(sorted(result))


def empty_reduction_message(op: str, axis_length: Any) -> str:
    """numpy's message for a reduction without identity over an empty axis,
    with the axis length: ``zero-size array to reduction operation maximum
    which has no identity: the reduced axis has length n, which is 0``.

    :arg op: the :class:`~ftlazy.scalar_expr.Reduce` op (``"max"``,
        ``"min"``) or numpy's name (``"maximum"``, ``"minimum"``).
    :arg axis_length: the length of the reduced axis as the program knows it:
        an int, or a size-parameter expression (shown as ``str`` gives it).

    For every evaluator: :func:`ftlazy.evaluate_numpy` raises
    :class:`ValueError` with this message when a symbolic axis turns out to
    be empty, and the compiled path's run-time check should too.
    """
    if op not in _NO_IDENTITY:
        raise ValueError(f"reduction {op!r} has an identity: an empty axis is "
                         "no error")
    shown = str(axis_length)
    return (f"zero-size array to reduction operation {_NO_IDENTITY[op]} which "
            f"has no identity: the reduced axis has length {shown}"
            + ("" if shown == "0" else ", which is 0"))


@cache
def _sum_dtype(dtype: np.dtype, op: str) -> np.dtype:
    # numpy's own answer: small integers and bools accumulate in the
    # platform integer, unsigned ones in the unsigned platform integer
    fn = np.sum if op == "sum" else np.prod
    return fn(np.zeros(1, dtype)).dtype


def _reduced_read(a: Array, axes: tuple[int, ...], keepdims: bool
                  ) -> tuple[Any, tuple, sh.Shape]:
    """``(read, bounds, out_shape)``: the expression reading ``_in0`` at the
    output and reduction indices, the reduction bounds and the output
    shape."""
    idx = []
    bounds = []
    out_shape: list[Any] = []
    for i, d in enumerate(a.shape):
        if i in axes:
            var = reduction_var(len(bounds))
            bounds.append((var.name, 0, d))
            idx.append(var)
            if keepdims:
                out_shape.append(1)
        else:
            idx.append(index_var(i if keepdims else len(out_shape)))
            out_shape.append(d)
    read = (prim.Subscript(prim.Variable("_in0"), tuple(idx)) if a.shape
            else prim.Variable("_in0"))
    return read, tuple(bounds), tuple(out_shape)


def _reduction(np_fn: Any, op: str, x: ArrayLike, axis: AxisLike,
               keepdims: bool, acc_dtype: np.dtype, out_dtype: np.dtype | None = None
               ) -> Result:
    """One Reduce node: elements of *x* cast to *acc_dtype*, reduced with *op*
    over *axis*, the result cast to *out_dtype* (default *acc_dtype*)."""
    a = asarray(x)
    axes = normalize_axes(axis, a.ndim, ufunc_quirk=True)
    out_dtype = acc_dtype if out_dtype is None else out_dtype
    if op in _NO_IDENTITY:
        for ax in axes:
            if a.shape[ax] == 0:
                raise ValueError(
                    f"{empty_reduction_message(op, 0)} (axis {ax} of the array "
                    f"of shape {sh.shape_str(a.shape)})")
    value = constant_value(a)
    if value is not None:
        with np.errstate(all="ignore"):
            return asarray(np.asarray(np_fn(value)).astype(out_dtype)[()])
    read, bounds, out_shape = _reduced_read(a, axes, keepdims)
    expr: Any = cast(read, a.dtype, acc_dtype)
    if bounds:
        expr = Reduce(op, expr, bounds)
    expr = cast(expr, acc_dtype, out_dtype)
    return IndexLambda(expr, out_shape, out_dtype, {"_in0": a})


def sum(a: ArrayLike, axis: AxisLike = None, dtype: Any = None,
        keepdims: bool = False) -> Result:
    """Sum of the elements over *axis* (None: all). As in numpy, bools and
    small integers accumulate in int64, small unsigned integers in uint64."""
    if is_scalar(a):
        return np.sum(a, axis=axis, dtype=dtype, keepdims=keepdims)
    a = asarray(a)
    acc = _sum_dtype(a.dtype, "sum") if dtype is None else normalize_dtype(dtype)
    return _reduction(lambda v: np.sum(v, dtype=acc), "sum", a, axis, keepdims,
                      acc)


def prod(a: ArrayLike, axis: AxisLike = None, dtype: Any = None,
         keepdims: bool = False) -> Result:
    """Product of the elements over *axis* (None: all), in numpy's dtype."""
    if is_scalar(a):
        return np.prod(a, axis=axis, dtype=dtype, keepdims=keepdims)
    a = asarray(a)
    acc = _sum_dtype(a.dtype, "prod") if dtype is None else normalize_dtype(dtype)
    return _reduction(lambda v: np.prod(v, dtype=acc), "product", a, axis,
                      keepdims, acc)


def _initial_value(initial: Any, dtype: np.dtype, what: str) -> np.generic:
    """*initial* converted to *dtype* as numpy's reductions convert it (a
    Python number out of the dtype's range is an :class:`OverflowError`)."""
    if not is_scalar(initial):
        raise TypeError(f"{what}: initial must be a scalar, got "
                        f"{type(initial).__name__}")
    with np.errstate(over="ignore"):
        return np.asarray(dtype.type(initial))[()]


def _identity(op: str, dtype: np.dtype) -> np.generic:
    """The identity of ``max``/``min`` (*op*) for *dtype*: what an empty
    reduction starts from."""
    largest = op == "max"
    if dtype.kind == "b":
        return np.bool_(not largest)
    if dtype.kind == "f":
        return dtype.type(-np.inf if largest else np.inf)
    info = np.iinfo(dtype)
    return dtype.type(info.min if largest else info.max)


def _extremum_with_initial(op: str, a: Array, axis: AxisLike, keepdims: bool,
                           initial: Any) -> Result:
    """``amax``/``amin`` (*op* ``"max"``/``"min"``) of *a* and *initial*
    over *axis*: ``maximum(reduce_max(a), initial)``, where the reduction
    starts from its identity (``-inf``, the integer minimum), so that an
    empty axis gives *initial*, as in numpy. A reduced axis that may be
    empty runs one step more, a step that contributes the identity: the
    reduction never runs over no step (which max and min refuse), and code
    generation turns the step's guard into the loop's bound."""
    from ftlazy.ops.creation import full
    from ftlazy.ops.elementwise import maximum, minimum
    what = "amax" if op == "max" else "amin"
    init = _initial_value(initial, a.dtype, what)
    axes = normalize_axes(axis, a.ndim, ufunc_quirk=True)
    extremum = maximum if op == "max" else minimum
    if not axes:  # nothing reduced: the elementwise extremum
        return extremum(a, init)
    value = constant_value(a)
    if value is not None:
        np_fn = np.amax if op == "max" else np.amin
        return asarray(np.asarray(np_fn(value, axis=axes, keepdims=keepdims,
                                        initial=init)))
    read, bounds, out_shape = _reduced_read(a, axes, keepdims)
    if builtins.any(hi == 0 for _, _, hi in bounds):
        return full(out_shape, init, a.dtype)  # statically empty
    identity = _identity(op, a.dtype)
    steps, guards = [], []
    for name, lo, hi in bounds:
        if sh.prove_le(1, hi):
            steps.append((name, lo, hi))
        else:
            steps.append((name, lo, sh.add(hi, 1)))
            guards.append(prim.Comparison(prim.Variable(name), "<", hi))
    if guards:
        read = prim.If(guards[0] if len(guards) == 1
                       else prim.LogicalAnd(tuple(guards)), read, identity)
    result = IndexLambda(Reduce(op, read, tuple(steps)), out_shape, a.dtype,
                         {"_in0": a})
    if init == identity:  # (NaN is no identity)
        return result
    return extremum(result, init)


def amax(a: ArrayLike, axis: AxisLike = None, keepdims: bool = False,
         initial: Any = None) -> Result:
    """Largest element over *axis* (None: all); NaN propagates. With
    *initial* (a scalar, converted to *a*'s dtype), the largest of it and the
    elements, so that an empty axis gives *initial*; without, an axis of
    length 0 is a :class:`ValueError` (at run time for a symbolic one)."""
    if is_scalar(a):
        return np.amax(a, axis=axis, keepdims=keepdims,
                       **({} if initial is None else {"initial": initial}))
    a = asarray(a)
    if initial is not None:
        return _extremum_with_initial("max", a, axis, keepdims, initial)
    return _reduction(np.amax, "max", a, axis, keepdims, a.dtype)


def amin(a: ArrayLike, axis: AxisLike = None, keepdims: bool = False,
         initial: Any = None) -> Result:
    """Smallest element over *axis* (None: all); NaN propagates. With
    *initial* (a scalar, converted to *a*'s dtype), the smallest of it and
    the elements, so that an empty axis gives *initial*; without, an axis of
    length 0 is a :class:`ValueError` (at run time for a symbolic one)."""
    if is_scalar(a):
        return np.amin(a, axis=axis, keepdims=keepdims,
                       **({} if initial is None else {"initial": initial}))
    a = asarray(a)
    if initial is not None:
        return _extremum_with_initial("min", a, axis, keepdims, initial)
    return _reduction(np.amin, "min", a, axis, keepdims, a.dtype)


max = amax
min = amin


def any(a: ArrayLike, axis: AxisLike = None, keepdims: bool = False) -> Result:
    """Whether any element over *axis* (None: all) is non-zero, as bool."""
    if is_scalar(a):
        return np.any(a, axis=axis, keepdims=keepdims)
    return _reduction(np.any, "any", a, axis, keepdims, np.dtype(bool))


def all(a: ArrayLike, axis: AxisLike = None, keepdims: bool = False) -> Result:
    """Whether every element over *axis* (None: all) is non-zero, as bool."""
    if is_scalar(a):
        return np.all(a, axis=axis, keepdims=keepdims)
    return _reduction(np.all, "all", a, axis, keepdims, np.dtype(bool))


# {{{ mean and var

def _mean_dtypes(dtype: np.dtype, requested: Any) -> tuple[np.dtype, np.dtype]:
    """``(accumulation dtype, result dtype)`` as numpy's mean chooses them:
    integers and bools average in float64, float16 in float32."""
    if requested is not None:
        requested = normalize_dtype(requested)
        acc = np.dtype(np.float32) if requested == np.float16 else requested
        return acc, requested
    if dtype.kind in "biu":
        return np.dtype(np.float64), np.dtype(np.float64)
    if dtype == np.float16:
        return np.dtype(np.float32), dtype
    return dtype, dtype


def _count_expr(components: list[Any]) -> Any:
    """The product of shape components: an int when they are all ints,
    else an int64 body expression of the size parameters."""
    const = 1
    factors: list[Any] = []
    for c in components:
        form = sh.to_affine(c)
        if form.is_constant:
            const *= form.const
            continue
        terms: list[Any] = [prim.Product((np.int64(v), prim.Variable(k)))
                            if v != 1 else prim.Variable(k)
                            for k, v in sorted(form.coeffs.items())]
        if form.const:
            terms.append(np.int64(form.const))
        factors.append(terms[0] if len(terms) == 1 else prim.Sum(tuple(terms)))
    if not factors:
        return const
    if const != 1:
        factors.insert(0, np.int64(const))
    return factors[0] if len(factors) == 1 else prim.Product(tuple(factors))


def mean(a: ArrayLike, axis: AxisLike = None, dtype: Any = None,
         keepdims: bool = False) -> Result:
    """Arithmetic mean over *axis* (None: all) with numpy's dtypes: float64
    for integer input, float16 averaged in float32. An empty reduction gives
    NaN, as in numpy."""
    if is_scalar(a):
        return np.mean(a, axis=axis, dtype=dtype, keepdims=keepdims)
    a = asarray(a)
    acc, out = _mean_dtypes(a.dtype, dtype)
    return _mean(a, axis, keepdims, acc, out)


def _mean(a: Array, axis: AxisLike, keepdims: bool, acc: np.dtype,
          out: np.dtype) -> Array:
    axes = normalize_axes(axis, a.ndim)
    total = sum(a, axis=axes, dtype=acc, keepdims=keepdims)
    count = _count_expr([a.shape[i] for i in axes])
    divisor = (np.asarray(count).astype(acc)[()] if isinstance(count, int)
               else TypeCast(acc, count))
    result = IndexLambda(prim.Quotient(_read_all(total), divisor),
                         total.shape, acc, {"_in0": total})
    return result.astype(out) if result.dtype != out else result


def _read_all(a: Array) -> Any:
    if not a.shape:
        return prim.Variable("_in0")
    return prim.Subscript(prim.Variable("_in0"),
                          tuple(index_var(i) for i in range(a.ndim)))


def var(a: ArrayLike, axis: AxisLike = None, dtype: Any = None, ddof: int = 0,
        keepdims: bool = False) -> Result:
    """Variance ``mean(|a - mean(a)|**2)`` over *axis*, divided by
    ``count - ddof`` (at least 0), with numpy's dtypes (real for complex
    input)."""
    if is_scalar(a):
        return np.var(a, axis=axis, dtype=dtype, ddof=ddof, keepdims=keepdims)
    return _spread("var", a, axis, dtype, ddof, keepdims)


def std(a: ArrayLike, axis: AxisLike = None, dtype: Any = None, ddof: int = 0,
        keepdims: bool = False) -> Result:
    """Standard deviation: the square root of :func:`var` (same arguments
    and dtypes)."""
    if is_scalar(a):
        return np.std(a, axis=axis, dtype=dtype, ddof=ddof, keepdims=keepdims)
    return _spread("std", a, axis, dtype, ddof, keepdims)


def _spread(what: str, a: ArrayLike, axis: AxisLike, dtype: Any, ddof: int,
            keepdims: bool) -> Array:
    """The variance (*what* ``"var"``) or its square root (``"std"``),
    computed in the accumulation dtype, then cast to numpy's result
    dtype."""
    from ftlazy.ops import elementwise as ew
    if isinstance(ddof, (bool, np.bool_)) or not isinstance(ddof, (int, np.integer)):
        raise TypeError(f"{what}: ddof must be an int, got {type(ddof).__name__}")
    ddof = int(ddof)
    a = asarray(a)
    acc, out = _mean_dtypes(a.dtype, dtype)
    axes = normalize_axes(axis, a.ndim)
    centered = ew.subtract(a, _mean(a, axes, True, acc, acc))
    if centered.dtype.kind == "c":
        squared = ew.real(ew.multiply(centered, ew.conj(centered)))
    else:
        squared = ew.multiply(centered, centered)
    real_acc = squared.dtype
    total = sum(squared, axis=axes, keepdims=keepdims)
    count = _count_expr([a.shape[i] for i in axes])
    if isinstance(count, int):
        divisor: Any = np.asarray(builtins.max(count - ddof, 0)).astype(
            real_acc)[()]
    else:
        if ddof:
            count = prim.Max((prim.Sum((count, np.int64(-ddof))), np.int64(0)))
        divisor = TypeCast(real_acc, count)
    result = IndexLambda(prim.Quotient(_read_all(total), divisor), total.shape,
                         real_acc, {"_in0": total})
    if what == "std":
        result = ew.sqrt(result)
    out_real = np.empty((), out).real.dtype
    return result.astype(out_real) if result.dtype != out_real else result

# }}}
