# SPDX-License-Identifier: MIT
"""Reductions whose range depends on data.

A reduction over a jagged element (see
:mod:`ftlazy.transform.jagged_lowering`) is written in the lowered DAG as

    ``Reduce(op, If(r < extent(e), f(r), neutral), ((r, 0, max_extent),))``

with ``extent(e)`` read from the offsets: its bounds stay affine in size
parameters (as every pass that reads reduction bounds requires), and the
guard says which steps count. :func:`data_dependent_range` finds such
guards: comparisons of a reduction variable with an integer expression that
reads arrays, in a conjunction guarding the whole summand, whose other
branch is the reduction's neutral element. Then the reduction equals the
one over ``[max(lo, lower bounds), min(hi, upper bounds))`` of the rest of
the summand, which the emitter runs over a domain parameterised by private
scalars (``[s, e] -> {[j]: s <= j < e}``) instead of masking every step up
to the largest extent.

Reduction bounds that themselves read arrays are found the same way.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np
import pymbolic.primitives as prim

from ftlazy.scalar_expr import Reduce, get_variable_names, iter_subexpressions

_FLIP = {"<": ">", "<=": ">=", ">": "<", ">=": "<="}


@dataclass(frozen=True)
class DataRange:
    """The data-dependent range of one reduction variable: the step runs
    for ``max(lower) <= r < min(upper)`` (each list non-empty)."""

    lower: tuple[Any, ...]
    upper: tuple[Any, ...]


def reads_arrays(expr: Any) -> bool:
    """Whether *expr* reads an array (so it is no affine bound)."""
    return any(isinstance(e, prim.Subscript) for e in iter_subexpressions(expr))


def is_neutral(op: str, value: Any) -> bool:
    """Whether the constant *value* is the identity of reduction *op*."""
    if not isinstance(value, (bool, int, float, np.generic)):
        return False
    v = np.asarray(value)
    if v.dtype.kind not in "biuf":
        return False
    if op in ("sum", "any"):
        return bool(v == 0)
    if op in ("product", "all"):
        return bool(v == 1)
    if op in ("max", "min"):
        if v.dtype.kind == "f":
            return bool(v == (-np.inf if op == "max" else np.inf))
        if v.dtype.kind == "b":
            return bool(v == (op == "min"))
        info = np.iinfo(v.dtype)
        return bool(v == (info.min if op == "max" else info.max))
    return False


def _conjuncts(cond: Any) -> list[Any]:
    if isinstance(cond, prim.LogicalAnd):
        return [c for child in cond.children for c in _conjuncts(child)]
    return [cond]


def data_dependent_range(expr: Reduce, bindings: Mapping[str, Any]
                         ) -> tuple[Reduce, dict[str, DataRange]] | None:
    """``(reduction, ranges)`` if some variable of *expr* is bounded by data
    (see the module docs): *reduction* is *expr* without those guards (the
    rest of the guard stays), *ranges* the range of each such variable,
    the reduction's own bounds included. None when there is none.
    *bindings* gives the dtypes of the arrays the expressions read."""
    from ftlazy.target.loopy.expressions import expr_dtype

    names = {name for name, _, _ in expr.bounds}
    lower: dict[str, list[Any]] = {n: [] for n in names}
    upper: dict[str, list[Any]] = {n: [] for n in names}
    found = False
    for name, lo, hi in expr.bounds:
        if reads_arrays(lo) or reads_arrays(hi):
            found = True

    def take(c: Any) -> bool:
        bound = _range_bound(c, names, bindings, expr_dtype)
        if bound is None:
            return False
        name, side, value = bound
        (lower if side == "lower" else upper)[name].append(value)
        return True

    inner = _strip_guards(expr.op, expr.inner, take)
    found = found or inner is not expr.inner
    if not found:
        return None
    ranges = {}
    bounds = []
    for name, lo, hi in expr.bounds:
        if lower[name] or upper[name] or reads_arrays(lo) or reads_arrays(hi):
            ranges[name] = DataRange((lo, *lower[name]), (hi, *upper[name]))
            # (the emitter makes its iname from the range; 0 keeps the
            # reduction well-formed for code that expects affine bounds)
            bounds.append((name, 0, hi if not reads_arrays(hi) else 1))
        else:
            bounds.append((name, lo, hi))
    return Reduce(expr.op, inner, tuple(bounds)), ranges


def tighten_to_guards(expr: Reduce) -> Reduce:
    """*expr* with each guard ``r < b`` of its summand (``If(guards, f,
    neutral)``, possibly nested) made the upper bound of ``r`` where *b* is
    affine in size parameters and provably at most that bound: the steps
    past *b* only contribute the neutral element (``amax(x, initial=v)``
    runs one such step more over an axis that may be empty), so the loop
    need not run them nor select on each step."""
    from ftlazy import shapes as sh
    from ftlazy.scalar_expr import is_index_name
    bounds = {name: (lo, hi) for name, lo, hi in expr.bounds}

    def take(c: Any) -> bool:
        if not (isinstance(c, prim.Comparison) and c.operator == "<"
                and isinstance(c.left, prim.Variable) and c.left.name in bounds
                and not reads_arrays(c.right) and not _has_reduce(c.right)
                and not any(is_index_name(n) or n in bounds
                            for n in get_variable_names(c.right))):
            return False
        lo, hi = bounds[c.left.name]
        try:
            if not sh.prove_le(c.right, hi):
                return False
        except sh.NonAffineError:
            return False
        bounds[c.left.name] = (lo, c.right)
        return True

    inner = _strip_guards(expr.op, expr.inner, take)
    if inner is expr.inner:
        return expr
    return Reduce(expr.op, inner, tuple((name, *bounds[name])
                                        for name, _, _ in expr.bounds))


def _strip_guards(op: str, inner: Any, take: Any) -> Any:
    """*inner* without the conjuncts *take* accepts (and records) of its
    guards: ``If(guards, f, neutral)`` with *op*'s neutral element, nested
    (a jagged element's mask around a guard of the body). *inner* itself
    when *take* accepts none."""
    while isinstance(inner, prim.If) and is_neutral(op, inner.else_):
        conds = _conjuncts(inner.condition)
        rest = [c for c in conds if not take(c)]
        if len(rest) == len(conds):
            break
        if rest:
            cond = rest[0] if len(rest) == 1 else prim.LogicalAnd(tuple(rest))
            return prim.If(cond, inner.then, inner.else_)
        inner = inner.then
    return inner


def _range_bound(cond: Any, names: set[str], bindings: Mapping[str, Any],
                 expr_dtype: Any) -> tuple[str, str, Any] | None:
    """``(variable, "lower" or "upper", bound)`` if *cond* compares a
    reduction variable with an integer expression that reads arrays and
    involves no reduction variable of this reduction; the bound is
    inclusive for "lower", exclusive for "upper"."""
    if not isinstance(cond, prim.Comparison) or cond.operator not in _FLIP:
        return None
    left, op, right = cond.left, cond.operator, cond.right
    if not (isinstance(left, prim.Variable) and left.name in names):
        left, op, right = right, _FLIP[op], left
    if not (isinstance(left, prim.Variable) and left.name in names):
        return None
    if (get_variable_names(right) & names or not reads_arrays(right)
            or _has_reduce(right)):
        return None
    dtype = expr_dtype(right, bindings)
    if dtype is None or dtype.kind not in "iu":
        return None
    if op == "<":
        return left.name, "upper", right
    if op == "<=":
        return left.name, "upper", prim.Sum((right, 1))
    if op == ">=":
        return left.name, "lower", right
    return left.name, "lower", prim.Sum((right, 1))


def _has_reduce(expr: Any) -> bool:
    return any(isinstance(e, Reduce) for e in iter_subexpressions(expr))


# {{{ packed rows of a known element

def segment_ids_binding(form: tuple[int, int], offsets: str) -> str:
    """The binding name under which a packed array reads the segment ids of
    its rows: extent ``const + coeff*L`` of the element length whose
    offsets it binds as *offsets* (see :func:`parse_segment_ids_binding`)."""
    const, coeff = (f"m{-v}" if v < 0 else str(v) for v in form)
    return f"_ft_seg_{const}_{coeff}_{offsets}"


def parse_segment_ids_binding(name: str) -> tuple[tuple[int, int], str] | None:
    """``(form, offsets binding)`` of a :func:`segment_ids_binding` name,
    None for other names."""
    if not name.startswith("_ft_seg_"):
        return None
    parts = name[len("_ft_seg_"):].split("_", 2)
    if len(parts) != 3:
        return None
    try:
        form = tuple(-int(p[1:]) if p.startswith("m") else int(p)
                     for p in parts[:2])
    except ValueError:
        return None
    return (form[0], form[1]), parts[2]


def linear_form(expr: Any) -> dict[Any, int] | None:
    """*expr* (a translated integer index) as ``{atom: coefficient}``
    (key ``()`` for the constant), so that sums written in another order
    compare equal; subscripts are atoms keyed by their linear indices.
    None for what is not an integer-linear combination of atoms."""
    if isinstance(expr, (bool, np.bool_)):
        return None
    if isinstance(expr, (int, np.integer)):
        return {(): int(expr)} if expr else {}
    if isinstance(expr, prim.Sum):
        out: dict[Any, int] = {}
        for child in expr.children:
            part = linear_form(child)
            if part is None:
                return None
            for k, v in part.items():
                out[k] = out.get(k, 0) + v
        return {k: v for k, v in out.items() if v}
    if isinstance(expr, prim.Product):
        scale, rest = 1, None
        for child in expr.children:
            if isinstance(child, (int, np.integer)) and not isinstance(child, bool):
                scale *= int(child)
            elif rest is None:
                rest = child
            else:
                return None
        if rest is None:
            return {(): scale} if scale else {}
        part = linear_form(rest)
        return None if part is None else {k: scale * v for k, v in part.items()
                                          if scale * v}
    if isinstance(expr, prim.Subscript) and isinstance(expr.aggregate, prim.Variable):
        index = tuple(linear_form(i) for i in expr.index_tuple)
        if any(i is None for i in index):
            return None
        return {("sub", expr.aggregate.name,
                 tuple(frozenset(i.items()) for i in index)): 1}
    try:
        hash(expr)
    except TypeError:
        return None
    return {("atom", expr): 1}


@dataclass(frozen=True)
class ElementRows:
    """A reduction variable *iname* (or an affine expression of several, a
    row shared among lanes ``lanes*t + k``) known to run within
    ``[0, const + coeff*(offsets[e+1] - offsets[e]))``: packed rows
    ``const*e + coeff*offsets[e] + iname`` of that extent belong to
    element *e* (a translated expression, *element_form* its
    :func:`linear_form`)."""

    offsets: str
    element: Any
    element_form: frozenset
    form: tuple[int, int]
    iname: str | Any


def element_rows(rng: DataRange, iname: str | Any) -> list[ElementRows]:
    """What a translated range of *iname* says about packed rows: one entry
    per upper bound of the form ``const + coeff*(O[e+1] - O[e])`` (an
    element's extent) when some lower bound is a non-negative constant."""
    if not any(isinstance(b, (int, np.integer)) and b >= 0 for b in rng.lower):
        return []
    found = []
    for bound in rng.upper:
        form = linear_form(bound)
        if form is None:
            continue
        const = form.pop((), 0)
        subs = [(k, v) for k, v in form.items() if k[0] == "sub" and len(k[2]) == 1]
        if len(subs) != 2 or len(form) != 2:
            continue
        (hi, a), (lo, b) = sorted(subs, key=lambda kv: -kv[1])
        if a <= 0 or a != -b or hi[1] != lo[1]:
            continue
        step = dict(hi[2][0])
        for k, v in lo[2][0]:
            step[k] = step.get(k, 0) - v
        if {k: v for k, v in step.items() if v} != {(): 1}:
            continue
        element = _subscript_index(bound, lo)
        if element is not None:
            found.append(ElementRows(lo[1], element, lo[2][0], (const, a), iname))
    return found


def _subscript_index(expr: Any, key: Any) -> Any:
    """The index of the subscript in *expr* whose atom key is *key*."""
    for e in iter_subexpressions(expr):
        if isinstance(e, prim.Subscript):
            form = linear_form(e)
            if form is not None and set(form) == {key}:
                return e.index_tuple[0]
    return None


def known_element(rows: list[ElementRows], form: tuple[int, int],
                  offsets: str, index: Any) -> Any:
    """The element whose packed row of extent *form* (placed by *offsets*,
    the storage name) is *index*, if some entry of *rows* proves it
    (``index == const*e + coeff*offsets[e] + iname``); else None."""
    got = linear_form(index)
    if got is None:
        return None
    for r in rows:
        if r.offsets != offsets or r.form != form:
            continue
        const, coeff = form
        position = (prim.Variable(r.iname) if isinstance(r.iname, str)
                    else r.iname)
        want: dict[Any, int] = dict(linear_form(position) or {})
        for k, v in r.element_form:
            want[k] = want.get(k, 0) + const * v
        key = ("sub", offsets, (r.element_form,))
        want[key] = want.get(key, 0) + coeff
        if {k: v for k, v in want.items() if v} == got:
            return r.element
    return None

# }}}
