# SPDX-License-Identifier: MIT
"""Slices that Python clamps, on axes of symbolic length.

``x[:5]`` of an axis of length ``n`` has ``min(5, n)`` rows, ``x[-2:]``
starts at ``max(n - 2, 0)`` and ``x[::2]`` has ``ceil(n / 2)``: none of
these is affine in ``n``, so :func:`clamped_slice` makes the number of rows
a data-dependent size (:func:`~ftlazy.fractal_access.derived_size`,
computed before the launch, or per element in a map over a FractalTensor)
and reads ``x[start + step*i]`` with the start written inline as
conditional expressions (it is never a shape).

The count is written in one canonical form of the function ``n -> len(
range(*s.indices(n)))`` (:func:`_canonical_count`), so that slices with
equal counts (``x[:2]`` and ``x[-2:]``) get the same size and their
results combine (``x[:2] + x[-2:]``); for bounds or steps beyond 64 it is
Python's clamping written out (``x[:10**6]`` and ``x[-10**6:]`` do not
combine).

.. autofunction:: clamped_slice
"""

from __future__ import annotations

from typing import Any, Callable

import pymbolic.primitives as prim
from pymbolic.mapper import IdentityMapper

from ftlazy import shapes as sh
from ftlazy.array import Array
from ftlazy.scalar_expr import index_var

__all__ = ["clamped_slice"]


class _ClampsAsConditions(IdentityMapper):
    """``max``/``min`` of index expressions as conditional expressions
    (OpenCL's ``min`` is ambiguous on mixed int and long operands)."""

    def _chosen(self, expr: Any, op: str) -> Any:
        chosen, *rest = [self.rec(c) for c in expr.children]
        for c in rest:
            chosen = prim.If(prim.Comparison(c, op, chosen), c, chosen)
        return chosen

    def map_max(self, expr: prim.Max) -> Any:
        return self._chosen(expr, ">")

    def map_min(self, expr: prim.Min) -> Any:
        return self._chosen(expr, "<")


#: slice bounds beyond this are the same as infinite ones for every length
#: an array can have
_FAR = 2**62

#: the largest bound and step whose counts are written canonically (the
#: canonical form tabulates the lengths below twice the bounds)
_TABULATED = 64


def _far_form(count: Any, far: int, step: int) -> tuple[int, int]:
    """``(b, k)`` with ``count(n) == (n + b) // k`` from *far* on, or
    ``(value, 0)`` where the count is a constant there."""
    values = [count(far + d) for d in range(step + 1)]
    if values[-1] == values[0]:
        return values[0], 0
    # (count grows by one every |step| rows: the smallest b that fits)
    for b in range(values[0] * step - far - step, values[0] * step - far + step):
        if all((far + d + b) // step == v for d, v in enumerate(values)):
            return b, step
    raise AssertionError("a slice's count neither settles nor grows")


def _canonical_count(n: Any, s: slice) -> Any:
    """``len(range(*s.indices(n)))`` for a symbolic length *n* (an
    expression, ``n >= 0``) of Python-int slice bounds, in the form of
    :func:`canonical_length`."""
    def count(m: int) -> int:
        return len(range(*s.indices(m)))

    far = 2 * max([abs(v) for v in (s.start, s.stop) if v is not None] + [0]) + 1
    return canonical_length(n, count, far, abs(s.step or 1))


def canonical_length(n: Any, count: Callable[[int], int], far: int,
                     step: int) -> Any:
    """*count* (a function of a length ``m >= 0``, such as a clamped
    slice's or a strided window's count) as an expression of *n*, given
    that from *far* on it is a constant or ``(m + b) // step``: there that
    form; below, runs of a constant or of ``m + c``. Equal functions give
    equal expressions, so that lengths computed in different ways (``s[::2]``
    and ``ft.slide(s, 1, stride=2)``) are one size."""
    b, k = _far_form(count, far, step)

    def settled(m: int) -> bool:
        return count(m) == (b if k == 0 else (m + b) // k)

    first = far
    while first > 0 and settled(first - 1):
        first -= 1
    expr = b if k == 0 else (prim.FloorDiv(n + b, k) if k > 1 else n + b)
    runs: list[tuple[int, int, Any]] = []
    m = 0
    while m < first:
        v = count(m)
        slope = 1 if m + 1 < first and count(m + 1) == v + 1 else 0
        end = m + 1
        while end < first and count(end) == v + slope * (end - m):
            end += 1
        runs.append((end, v - slope * m, slope))
        m = end
    for end, c, slope in reversed(runs):
        expr = prim.If(prim.Comparison(n, "<", end),
                       (n + c if c else n) if slope else c,
                       expr)
    return expr


def clamped_slice(a: Array, axis: int, s: slice) -> Array:
    """``a[..., s, ...]`` with *s* (Python-int bounds) on *axis*, of
    symbolic length, clamped as Python does (see the module docs). The
    reads are guarded: in range by construction, which loopy's bounds
    check cannot prove."""
    from ftlazy.fractal_access import _guarded, _lam, _size, _slice_bounds
    s = slice(*(None if v is None else max(-_FAR, min(_FAR, int(v)))
                for v in (s.start, s.stop, s.step)))
    length = sh.to_affine(a.shape[axis]).to_expr()
    start, count, step = _slice_bounds(a.shape[axis], s)
    if max(abs(v) for v in (s.start or 0, s.stop or 0, step)) <= _TABULATED:
        count = _canonical_count(length, s)
    count = _size(_ClampsAsConditions()(count))
    indices = [index_var(k) for k in range(a.ndim)]
    row = _ClampsAsConditions()(start) + step * indices[axis]
    indices[axis] = row
    read = _guarded(prim.Variable("_in0")[tuple(indices)], row, a.shape[axis],
                    a.dtype)
    shape = a.shape[:axis] + (count,) + a.shape[axis + 1:]
    return _lam(read, shape, a.dtype, {"_in0": a})
