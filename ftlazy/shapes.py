# SPDX-License-Identifier: MIT
"""Affine shape expressions over size parameters.

A shape component is a non-negative Python ``int`` or an affine pymbolic
expression with integer coefficients over :class:`~pymbolic.primitives.Variable`
names of size parameters (``2*n + 1``). Components are kept in a canonical
form (constant first, then variables sorted by name), so structurally equal
shapes compare equal. Facts about components (equality, bounds) are decided
with islpy over all non-negative values of the size parameters.
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import Any, Mapping, Union

import islpy as isl
import numpy as np
import pymbolic.primitives as prim

ShapeComponent = Union[int, prim.ExpressionNode]
Shape = tuple[ShapeComponent, ...]


class NonAffineError(ValueError):
    """A shape computation would need a non-affine expression."""


# {{{ affine forms

class AffineForm:
    """``const + sum(coeffs[name] * name)`` with integer coefficients."""

    __slots__ = ("coeffs", "const")

    def __init__(self, coeffs: Mapping[str, int], const: int) -> None:
        self.coeffs = {k: v for k, v in coeffs.items() if v != 0}
        self.const = const

    def __add__(self, other: AffineForm) -> AffineForm:
        coeffs = dict(self.coeffs)
        for k, v in other.coeffs.items():
            coeffs[k] = coeffs.get(k, 0) + v
        return AffineForm(coeffs, self.const + other.const)

    def scale(self, factor: int) -> AffineForm:
        return AffineForm({k: v * factor for k, v in self.coeffs.items()},
                          self.const * factor)

    @property
    def is_constant(self) -> bool:
        return not self.coeffs

    def to_expr(self) -> ShapeComponent:
        if not self.coeffs:
            return self.const
        terms: list[Any] = []
        for name in sorted(self.coeffs):
            c = self.coeffs[name]
            v = prim.Variable(name)
            terms.append(v if c == 1 else prim.Product((c, v)))
        if self.const:
            terms.append(self.const)
        return terms[0] if len(terms) == 1 else prim.Sum(tuple(terms))

    def to_isl(self) -> str:
        parts = [f"{c}*{n}" for n, c in sorted(self.coeffs.items())]
        parts.append(str(self.const))
        return " + ".join(parts)


def _int_const(value: Any) -> int | None:
    if isinstance(value, (bool, np.bool_)):
        return None
    if isinstance(value, (int, np.integer)):
        return int(value)
    return None


def to_affine(expr: Any) -> AffineForm:
    """Parse *expr* into an :class:`AffineForm`; raises :class:`NonAffineError`
    or :class:`TypeError` if it is not an integer affine expression. (The
    forms of expressions are kept: callers never modify a form.)"""
    c = _int_const(expr)
    if c is not None:
        return AffineForm({}, c)
    if isinstance(expr, prim.ExpressionNode):
        return _expression_affine(expr)
    if isinstance(expr, (float, np.floating)):
        raise TypeError(f"shape entries must be integers, got float {expr!r}")
    raise TypeError(f"shape entries must be integers or affine expressions "
                    f"of size parameters, got {type(expr).__name__} {expr!r}")


@lru_cache(maxsize=4096)
def _expression_affine(expr: prim.ExpressionNode) -> AffineForm:
    """:func:`to_affine` of a pymbolic expression (kept: shapes are parsed
    at every call of a program on inputs of new shapes)."""
    if isinstance(expr, prim.Variable):
        return AffineForm({expr.name: 1}, 0)
    if isinstance(expr, prim.Sum):
        result = AffineForm({}, 0)
        for child in expr.children:
            result = result + to_affine(child)
        return result
    if isinstance(expr, prim.Product):
        result = AffineForm({}, 1)
        for child in expr.children:
            factor = to_affine(child)
            if factor.is_constant:
                result = result.scale(factor.const)
            elif result.is_constant:
                result = factor.scale(result.const)
            else:
                raise NonAffineError(
                    f"shape expression '{expr}' is a product of size parameters,"
                    " which is not affine")
        return result
    if isinstance(expr, prim.FloorDiv):
        num, den = to_affine(expr.numerator), to_affine(expr.denominator)
        if den.is_constant and den.const > 0:
            return exact_divide(num, den.const, str(expr))
        raise NonAffineError(f"shape expression '{expr}' is not affine")
    raise NonAffineError(f"shape expression '{expr}' is not affine")


def exact_divide(form: AffineForm, divisor: int, what: str) -> AffineForm:
    """*form* divided by *divisor*, when every coefficient divides exactly."""
    if divisor <= 0 or form.const % divisor or any(
            c % divisor for c in form.coeffs.values()):
        raise NonAffineError(f"'{what}' is not an affine expression: "
                             f"{form.to_expr()} is not divisible by {divisor}")
    return AffineForm({k: v // divisor for k, v in form.coeffs.items()},
                      form.const // divisor)

# }}}


# {{{ normalization

def normalize_component(value: Any) -> ShapeComponent:
    """Canonical form of one shape component; arrays built from size
    parameters (``2*n + 1`` with ``n`` a :class:`~ftlazy.array.SizeParam`)
    become affine expressions. Raises :class:`ValueError` for a provably
    negative component, :class:`TypeError` for a non-integer."""
    from ftlazy.array import Array, array_to_size_expr
    if isinstance(value, Array):
        value = array_to_size_expr(value)
    form = to_affine(value)
    if form.is_constant and form.const < 0:
        raise ValueError(f"negative dimension {form.const} in shape")
    return form.to_expr()


def normalize_shape(shape: Any) -> Shape:
    """Canonical tuple form of a user-given shape (an int or a sequence)."""
    if type(shape) is tuple and all(type(c) is int and c >= 0 for c in shape):
        return shape  # the common case, already canonical
    from ftlazy.array import Array
    if _int_const(shape) is not None or isinstance(shape, (Array, prim.ExpressionNode)):
        shape = (shape,)
    try:
        entries = tuple(shape)
    except TypeError:
        raise TypeError(f"shape must be an int or a sequence of ints, "
                        f"got {type(shape).__name__} {shape!r}") from None
    try:
        return tuple(normalize_component(c) for c in entries)
    except ValueError as e:
        raise type(e)(f"invalid shape {shape_str(entries)}: {e}") from None
    except TypeError as e:
        raise TypeError(f"invalid shape {shape_str(entries)}: {e}") from None


def shape_str(shape: Any) -> str:
    """``(n, 2*n + 1)``-style rendering of a shape for messages."""
    entries = [str(c) for c in shape]
    if len(entries) == 1:
        return f"({entries[0]},)"
    return "(" + ", ".join(entries) + ")"


def size_param_names(component: ShapeComponent) -> frozenset[str]:
    """Names of the size parameters that *component* refers to."""
    if isinstance(component, int):
        return frozenset()
    return frozenset(to_affine(component).coeffs)


def shape_size_param_names(shape: Any) -> frozenset[str]:
    """Names of the size parameters that the components of *shape* refer
    to."""
    return frozenset().union(*(size_param_names(c) for c in shape))

# }}}


# {{{ proofs with islpy

@lru_cache(maxsize=8192)
def _is_empty(names: tuple[str, ...], condition: str) -> bool:
    params = ", ".join(names)
    nonneg = " and ".join(f"{n} >= 0" for n in names) or "true"
    s = isl.BasicSet(f"[{params}] -> {{ [] : {nonneg} and {condition} }}") \
        if " or " not in condition else \
        isl.Set(f"[{params}] -> {{ [] : {nonneg} and ({condition}) }}")
    return s.is_empty()


def _diff(a: ShapeComponent, b: ShapeComponent) -> AffineForm:
    return to_affine(a) + to_affine(b).scale(-1)


def _prove(form: AffineForm, relation: str) -> bool:
    """Whether ``form <relation> 0`` holds for all non-negative size params."""
    if form.is_constant:
        return {">=": form.const >= 0, "==": form.const == 0,
                ">": form.const > 0}[relation]
    negation = {">=": "< 0", "==": "!= 0", ">": "<= 0"}[relation]
    expr = form.to_isl()
    if relation == "==":
        condition = f"({expr} < 0 or {expr} > 0)"
    else:
        condition = f"{expr} {negation}"
    return _is_empty(tuple(sorted(form.coeffs)), condition)


def prove_equal(a: ShapeComponent, b: ShapeComponent) -> bool:
    """Whether *a* == *b* for every non-negative value of the size params."""
    if a == b:
        return True
    return _prove(_diff(a, b), "==")


def prove_different(a: ShapeComponent, b: ShapeComponent) -> bool:
    """Whether *a* != *b* for every non-negative value of the size params."""
    d = _diff(a, b)
    if d.is_constant:
        return d.const != 0
    expr = d.to_isl()
    return _is_empty(tuple(sorted(d.coeffs)), f"{expr} = 0")


def prove_le(a: ShapeComponent, b: ShapeComponent) -> bool:
    """Whether *a* <= *b* for every non-negative value of the size params."""
    return _prove(_diff(b, a), ">=")


def prove_lt(a: ShapeComponent, b: ShapeComponent) -> bool:
    """Whether *a* < *b* for every non-negative value of the size params."""
    return _prove(_diff(b, a), ">")


def prove_index_in_range(i: ShapeComponent, length: ShapeComponent) -> bool:
    """Whether index *i* (an int, negative ones counting from the end, or
    a non-negative affine expression) lies within an axis of *length* for
    all sizes."""
    position = add(length, i) if isinstance(i, int) and i < 0 else i
    return prove_le(0, position) and prove_lt(position, length)


def shapes_equal(a: Shape, b: Shape) -> bool:
    """Whether two shapes are provably equal."""
    return len(a) == len(b) and all(prove_equal(x, y) for x, y in zip(a, b))


def broadcast_shapes(*shapes: Shape) -> Shape:
    """numpy broadcasting of symbolic shapes. A dimension broadcasts only
    where it is the integer 1; other pairs must be provably equal."""
    ndim = max((len(s) for s in shapes), default=0)
    result: list[ShapeComponent] = [1] * ndim
    for s in shapes:
        offset = ndim - len(s)
        for i, c in enumerate(s):
            cur = result[offset + i]
            if c == 1 or (isinstance(c, int) and c == cur):
                continue
            if cur == 1:
                result[offset + i] = c
            elif not prove_equal(cur, c):
                others = [shape_str(x) for x in shapes]
                raise ValueError(
                    "operands could not be broadcast together with shapes "
                    + " ".join(others) + f": dimension {cur} vs {c} "
                    + ("differ" if prove_different(cur, c)
                       else "cannot be proven equal")
                    + internal_sizes_note(cur, c))
    return tuple(result)


#: what the size names ftlazy makes mean, for messages (prefix -> words)
_INTERNAL_SIZES = (
    ("_ft_elem", "a size of the element of the FractalTensor a loop runs "
                 "over (_L: its length; _m, _T: its numbers of lists and of "
                 "leaves)"),
    ("_ft_dyn", "a size computed from the data at run time (the length of "
                "xs[i], of a slice or of a filter of a FractalTensor; of a "
                "slice clamped against a symbolic length, x[:5]; of a "
                "diagonal; the number of strided windows)"),
)


def internal_sizes_note(*components: Any) -> str:
    """For a message about *components* (shape components or shapes): a
    note saying what the size names ftlazy made among them mean, or
    ``''`` where there are none."""
    names: set[str] = set()
    for c in components:
        for part in (c if isinstance(c, tuple) else (c,)):
            if not isinstance(part, int):
                names |= size_param_names(part)
    notes = []
    for prefix, meaning in _INTERNAL_SIZES:
        found = sorted(n for n in names if n.startswith(prefix))
        if found:
            notes.append(f"{', '.join(found)}: {meaning}")
    return f" ({'; '.join(notes)})" if notes else ""


def product(components: Any) -> ShapeComponent:
    """The product of shape components; raises :class:`NonAffineError` when
    two of them are symbolic."""
    result = AffineForm({}, 1)
    symbolic = None
    for c in components:
        f = to_affine(c)
        if f.is_constant:
            result = result.scale(f.const)
        elif result.is_constant:
            symbolic = c
            result = f.scale(result.const)
        else:
            raise NonAffineError(
                f"the product {symbolic} * {c} of size parameters is not affine")
    return result.to_expr()


def size_factors(shape: Any) -> tuple[int, list]:
    """``prod(shape)`` as an integer times a sorted list of primitive
    symbolic affine factors (``2*n + 2`` counts as ``2 * (n + 1)``), so that
    products of symbolic sizes can be compared without multiplying out."""
    const, rest = 1, []
    for c in shape:
        form = to_affine(c)
        if form.is_constant:
            const *= form.const
            continue
        g = math.gcd(form.const, *form.coeffs.values())
        const *= g
        rest.append(AffineForm({k: v // g for k, v in form.coeffs.items()},
                               form.const // g).to_expr())
    return const, sorted(rest, key=str)


def sizes_equal(a: Shape, b: Shape) -> bool:
    """Whether two shapes provably have the same number of elements (also
    when the products are not affine, e.g. ``(n, m)`` and ``(m, n)``)."""
    try:
        return prove_equal(product(a), product(b))
    except NonAffineError:
        pass
    ca, fa = size_factors(a)
    cb, fb = size_factors(b)
    return (ca == cb == 0) or (ca == cb and fa == fb)


def size_expr(shape: Shape) -> Any:
    """The number of elements: an int, an affine expression, or a pymbolic
    product (possibly non-affine) for shapes with several symbolic axes."""
    try:
        return product(shape)
    except NonAffineError:
        return prim.flattened_product(shape)


def add(a: ShapeComponent, b: ShapeComponent) -> ShapeComponent:
    return (to_affine(a) + to_affine(b)).to_expr()


def sub(a: ShapeComponent, b: ShapeComponent) -> ShapeComponent:
    return (to_affine(a) + to_affine(b).scale(-1)).to_expr()


def mul(a: ShapeComponent, b: int) -> ShapeComponent:
    return to_affine(a).scale(b).to_expr()

# }}}


# {{{ evaluation

def evaluate_component(c: ShapeComponent, env: Mapping[str, int]) -> int:
    """The integer value of *c* for size parameter values *env*."""
    if isinstance(c, int):
        return c
    form = to_affine(c)
    try:
        return form.const + sum(v * int(env[k]) for k, v in form.coeffs.items())
    except KeyError as e:
        raise ValueError(f"size parameter '{e.args[0]}' is not bound") from None


def evaluate_shape(shape: Shape, env: Mapping[str, int]) -> tuple[int, ...]:
    return tuple(evaluate_component(c, env) for c in shape)


def solve_component(c: ShapeComponent, value: int,
                    env: dict[str, int]) -> str | None:
    """If *c* has exactly one size parameter not yet in *env*, bind it so that
    ``c == value`` and return its name. Raises :class:`ValueError` if no
    integer value solves it."""
    if isinstance(c, int):
        return None
    form = to_affine(c)
    unknown = [k for k in form.coeffs if k not in env]
    if len(unknown) != 1:
        return None
    name = unknown[0]
    rest = form.const + sum(v * env[k] for k, v in form.coeffs.items()
                            if k != name)
    coeff = form.coeffs[name]
    if (value - rest) % coeff or (value - rest) // coeff < 0:
        raise ValueError(f"no non-negative integer value of size parameter "
                         f"'{name}' makes {c} equal {value}")
    env[name] = (value - rest) // coeff
    return name

# }}}
