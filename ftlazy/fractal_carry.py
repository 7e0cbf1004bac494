# SPDX-License-Identifier: MIT
"""Scans and folds whose carry holds a FractalTensor.

FractalTensor writes a stacked RNN as a fold over the layers whose carry is
the whole jagged batch: ``ft.fold(layer, params, init=batch)``, each
``layer`` mapping a scan over every sequence. A carry that is a
:class:`~ftlazy.fractal_tensor.Jagged` node cannot itself be one array of a
:class:`~ftlazy.fractal.Scan`; two ways run it:

* **The body keeps the carry's structure** (leaf-wise operations, a map
  whose results have each element's own lengths, such as a scan over each
  sequence): every step's carry has the init's offsets, so the carry is
  just its packed values ``(nnz, *elem_shape)``. The loop is an ordinary
  scan (or a scan over the outer list of a FractalTensor) whose carry is
  the values; its body views them as a FractalTensor with the init's
  offsets (captured). Whether the body keeps the offsets is decided when
  it is traced (:func:`same_offsets`). This runs over any number of steps,
  symbolic ones included.
* **Unrolled**: the body is called once per step when the loop is built,
  as ``jax.lax.fori_loop`` with ``unroll`` does, each step its own DAG;
  the lengths may then change from step to step. This needs a static
  number of steps, at most :data:`MAX_UNROLLED_STEPS`; a body changing
  the lengths over more or a symbolic number of steps, or over the outer
  list of a FractalTensor, is a :class:`NotImplementedError` naming the
  carry leaf and offsets level.

A loop over a static number of steps (at most :data:`MAX_UNROLLED_STEPS`)
is always unrolled: the layers of a stacked RNN are then separate maps,
which the compiler may fuse into one kernel. The others keep the structure
(compiled, a map over the carry in the scan's body is lowered as
:mod:`ftlazy.transform.scan_body_maps` describes).

``ft.fold`` returns the last carry (the init for zero steps). ``ft.scan``
returns every step's carry: a FractalTensor carry of depth ``d`` gives a
FractalTensor of depth ``d + 1`` whose outer list has one element per step
(empty for zero steps). With kept offsets its values are the stacked
values ``(T, nnz, ...)`` read in order, and its offsets those of ``T``
copies of the init (:func:`stacked_carries`); unrolled steps are joined.

Each step's carry must have the init's structure; its FractalTensors must
keep their depth, element shape and dtype, else a :class:`ValueError` or
:class:`TypeError` names the carry leaf.

.. autofunction:: has_jagged_leaf
.. autofunction:: fractal_carry_loop
.. autofunction:: outer_list_carry_loop
.. autofunction:: kept_structure_loop
.. autofunction:: same_offsets
.. autofunction:: stacked_carries
.. autofunction:: unrolled_fold
"""

from __future__ import annotations

import functools
from typing import Any, Callable

import numpy as np
import pymbolic.primitives as prim

from ftlazy import shapes as sh
from ftlazy.array import Array, IndexLambda
from ftlazy.fractal import tree_flatten, tree_leaves_like, tree_unflatten
from ftlazy.fractal_tensor import Jagged, preferring_offsets
from ftlazy.scalar_expr import index_var

__all__ = ["MAX_UNROLLED_STEPS", "has_jagged_leaf", "fractal_carry_loop",
           "outer_list_carry_loop", "kept_structure_loop", "same_offsets",
           "stacked_carries", "unrolled_fold"]

#: the most steps a loop with a FractalTensor carry is unrolled to
MAX_UNROLLED_STEPS = 256

_INT64 = np.dtype(np.int64)
_ONE = np.int64(1)


def has_jagged_leaf(tree: Any) -> bool:
    """Whether the bundle *tree* holds a :class:`~ftlazy.Jagged` leaf."""
    leaves, _ = tree_flatten(tree)
    return any(isinstance(leaf, Jagged) for leaf in leaves)


class StructureChanged(Exception):
    """The traced body returns a FractalTensor carry whose offsets are not
    provably the init's (the body changes its lengths)."""

    def __init__(self, leaf: int, level: int) -> None:
        super().__init__(leaf, level)
        self.leaf = leaf
        self.level = level

    def describe(self) -> str:
        return (f"the body changes the lengths of carry leaf {self.leaf} (its "
                f"offsets of level {self.level} are not provably the init's: "
                "other lengths)")


# {{{ checks

def _same_kind(new: Any, old: Any, k: int, what: str) -> None:
    if isinstance(old, Jagged):
        if not isinstance(new, Jagged):
            raise TypeError(f"{what}: carry leaf {k} is a FractalTensor, but the "
                            f"body returns {type(new).__name__} {new!r}")
        if new.depth != old.depth or \
                not sh.shapes_equal(new.elem_shape, old.elem_shape):
            raise ValueError(
                f"{what}: the body changes carry leaf {k} from a FractalTensor "
                f"of depth {old.depth} and elem_shape "
                f"{sh.shape_str(old.elem_shape)} to depth {new.depth} and "
                f"elem_shape {sh.shape_str(new.elem_shape)}")
        if new.dtype != old.dtype:
            raise TypeError(
                f"{what}: the body changes the dtype of carry leaf {k}, a "
                f"FractalTensor, from {old.dtype} to {new.dtype}")
        return
    if isinstance(new, Jagged):
        raise TypeError(f"{what}: carry leaf {k} is an array, but the body "
                        f"returns a FractalTensor {new!r}")
    from ftlazy.ops import asarray
    new_array = asarray(new)
    old_array = asarray(old)
    if not sh.shapes_equal(new_array.shape, old_array.shape):
        raise ValueError(
            f"{what}: the body changes the shape of carry leaf {k} from "
            f"{sh.shape_str(old_array.shape)} to "
            f"{sh.shape_str(new_array.shape)}")
    if new_array.dtype != old_array.dtype:
        raise TypeError(f"{what}: the body changes the dtype of carry leaf {k} "
                        f"from {old_array.dtype} to {new_array.dtype}")


def _is_zero(expr: Any) -> bool:
    if isinstance(expr, prim.Product):
        return any(_is_zero(c) for c in expr.children)
    return not isinstance(expr, prim.ExpressionNode) and expr == 0


def _identity_read(expr: Any) -> str | None:
    """The binding name ``b`` where *expr* is ``b[_0]`` up to terms times
    zero and factors one (``0*_0 + 1*b[_0]``, as maps write offsets)."""
    if isinstance(expr, prim.Subscript):
        index = expr.index if isinstance(expr.index, tuple) else (expr.index,)
        if isinstance(expr.aggregate, prim.Variable) and index == (index_var(0),):
            return expr.aggregate.name
        return None
    if isinstance(expr, prim.Sum):
        terms = [c for c in expr.children if not _is_zero(c)]
        return _identity_read(terms[0]) if len(terms) == 1 else None
    if isinstance(expr, prim.Product):
        factors = [c for c in expr.children
                   if isinstance(c, prim.ExpressionNode) or c != 1]
        if len(factors) == 1 and not _is_zero(expr):
            return _identity_read(factors[0])
    return None


def same_offsets(new: Array, old: Array) -> bool:
    """Whether the offsets array *new* provably equals *old*: the same node
    (structurally), or an :class:`~ftlazy.IndexLambda` of *old*'s length
    that reads a binding of equal offsets at its own index (the offsets a
    map over a FractalTensor gives results of each element's length)."""
    while True:
        if new is old:
            return True
        if not isinstance(new, IndexLambda) or \
                not sh.shapes_equal(new.shape, old.shape):
            return False
        name = _identity_read(new.expr)
        if name is None or name not in new.bindings:
            return False
        new = new.bindings[name]

# }}}


# {{{ loops whose FractalTensor carries keep their structure

def kept_structure_loop(run: Callable[[Callable, Any], Any], f: Callable,
                        init: Any, keep_all: bool, what: str,
                        refusal: str) -> Any:
    """The loop ``carry = f(carry, x)`` whose FractalTensor carries (leaves
    of *init*) keep their structure, built by *run* (``run(g, values_init)``
    builds the loop of a body *g* over *init* with each FractalTensor
    replaced by its values). If the traced body returns other offsets for
    a FractalTensor carry, :class:`NotImplementedError` names it, *what*
    and *refusal* (what the loop needs instead). The result has *init*'s
    structure: FractalTensors with the init's offsets for a fold, stacked
    (:func:`stacked_carries`) with *keep_all*."""
    init_leaves, structure = tree_flatten(init, f"{what} initial carries")
    jagged = {k: leaf for k, leaf in enumerate(init_leaves)
              if isinstance(leaf, Jagged)}
    values_init = tree_unflatten(
        [jagged[k].values if k in jagged else leaf
         for k, leaf in enumerate(init_leaves)], structure)

    def body(carry: Any, x: Any) -> Any:
        leaves, _ = tree_flatten(carry)
        viewed = [Jagged(leaf, jagged[k].offsets) if k in jagged else leaf
                  for k, leaf in enumerate(leaves)]
        with preferring_offsets([jagged[k].offsets for k in jagged]):
            new = f(tree_unflatten(viewed, structure), x)
        new_leaves = tree_leaves_like(new, structure, what, "init",
                                      "the carry the body returns")
        out = []
        for k, leaf in enumerate(new_leaves):
            _same_kind(leaf, init_leaves[k], k, what)
            if k in jagged:
                for level, (a, b) in enumerate(zip(leaf.offsets,
                                                   jagged[k].offsets)):
                    if not same_offsets(a, b):
                        raise StructureChanged(k, level)
                leaf = leaf.values
            out.append(leaf)
        return tree_unflatten(out, structure)

    try:
        results, _ = tree_flatten(run(body, values_init))
    except StructureChanged as changed:
        raise NotImplementedError(f"{what} with a FractalTensor carry: "
                                  f"{changed.describe()}; {refusal}") from None
    return tree_unflatten(
        [result if k not in jagged
         else stacked_carries(jagged[k], result) if keep_all
         else Jagged(result, jagged[k].offsets)
         for k, result in enumerate(results)], structure)


def stacked_carries(init: Jagged, stacked: Array) -> Jagged:
    """The FractalTensor of depth ``init.depth + 1`` whose ``T`` elements
    are the carries with *init*'s offsets and the values ``stacked[t]``
    (*stacked* is ``(T, nnz, *elem_shape)``, as a scan stacks them)."""
    from ftlazy.fractal_access import _lam, _level_total, _scalar_expr, _size
    steps = _scalar_expr(stacked.shape[0])
    p = index_var(0)

    def split(count: Any) -> tuple[Any, Any]:
        # entry p of T back-to-back copies of a list of count entries: copy
        # p // count, entry p % count (max(count, 1): no copy is empty of
        # entries but the last, which is the single entry of an empty list)
        count = _scalar_expr(count)
        m = max(count, 1) if isinstance(count, int) else prim.Max((count, _ONE))
        return prim.FloorDiv(p, m), prim.Remainder(p, m)

    levels = [_lam(_scalar_expr(init.length) * p, (sh.add(stacked.shape[0], 1),),
                   _INT64, {})]
    for level, offsets in enumerate(init.offsets):
        count = sh.sub(offsets.shape[0], 1)
        copy, entry = split(count)
        total = _scalar_expr(_level_total(init, level))
        levels.append(_lam(
            copy * total + prim.Variable("_in0")[entry],
            (_size(steps * _scalar_expr(count) + 1),), _INT64,
            {"_in0": offsets}))
    copy, entry = split(init.values.shape[0])
    rest = tuple(index_var(k + 1) for k in range(len(init.elem_shape)))
    values = _lam(prim.Variable("_in0")[(copy, entry) + rest],
                  (_size(steps * _scalar_expr(init.values.shape[0])),)
                  + init.elem_shape, init.dtype, {"_in0": stacked})
    return Jagged(values, tuple(levels))

# }}}


# {{{ unrolled loops

def _row(array: Array, t: int) -> IndexLambda:
    rest = tuple(index_var(k) for k in range(array.ndim - 1))
    var = prim.Variable("_in0")
    return IndexLambda(prim.Subscript(var, (t,) + rest), array.shape[1:],
                       array.dtype, {"_in0": array})


def _steps(xs: Any, what: str) -> tuple[list[Array], Any, Any]:
    """The arrays of the bundle *xs*, its structure and their length."""
    from ftlazy.fractal import _as_arrays, _check_lengths
    x_leaves, x_structure = tree_flatten(xs, f"{what} sequences")
    scanned = _as_arrays(x_leaves, f"{what} sequences")
    if not scanned:
        raise ValueError(f"{what} needs at least one sequence")
    return scanned, x_structure, _check_lengths(tuple(scanned), what)


def _unrolled(f: Callable, xs: Any, init: Any, what: str) -> list[Any]:
    """The carries after each of the static number of steps of *xs*."""
    _, init_structure = tree_flatten(init, f"{what} initial carries")
    scanned, x_structure, length = _steps(xs, what)
    if not isinstance(length, int) or length > MAX_UNROLLED_STEPS:
        raise AssertionError("unrolled over a static length at most "
                             f"{MAX_UNROLLED_STEPS}, got {length}")
    carry, carries = init, []
    for t in range(length):
        x = tree_unflatten([_row(a, t) for a in scanned], x_structure)
        new = f(carry, x)
        new_leaves = tree_leaves_like(new, init_structure, what, "init",
                                      "the carry the body returns")
        old_leaves, _ = tree_flatten(carry)
        for k, (n, o) in enumerate(zip(new_leaves, old_leaves)):
            _same_kind(n, o, k, what)
        carry = tree_unflatten(new_leaves, init_structure)
        carries.append(carry)
    return carries


def unrolled_fold(f: Callable, xs: Any, init: Any, what: str) -> Any:
    """``carry = f(carry, x)`` over the rows of the bundle *xs* (arrays of
    one static length, at most :data:`MAX_UNROLLED_STEPS`), starting from
    *init*, whose leaves may be FractalTensors; the last carry (see the
    module docs). *what* names the caller in errors."""
    carries = _unrolled(f, xs, init, what)
    return carries[-1] if carries else init


def _unrolled_scan(f: Callable, xs: Any, init: Any, what: str) -> Any:
    """Every carry of the unrolled loop, each leaf stacked: arrays along a
    new axis 0, FractalTensors into a list one level deeper (their values
    stacked where every step keeps the init's offsets, else joined)."""
    from ftlazy.fractal_access import _lift, join
    from ftlazy.ops import asarray, stack, zeros
    init_leaves, structure = tree_flatten(init)
    steps = [tree_flatten(c)[0] for c in _unrolled(f, xs, init, what)]
    stacked = []
    for k, leaf in enumerate(init_leaves):
        carries = [s[k] for s in steps]
        if not isinstance(leaf, Jagged):
            leaf = asarray(leaf)
            stacked.append(stack(carries) if carries
                           else zeros((0,) + leaf.shape, leaf.dtype))
        elif all(same_offsets(a, b) for c in carries
                 for a, b in zip(c.offsets, leaf.offsets)):
            values = (stack([c.values for c in carries]) if carries else
                      zeros((0,) + leaf.values.shape, leaf.dtype))
            stacked.append(stacked_carries(leaf, values))
        else:
            stacked.append(functools.reduce(join, [_lift(c) for c in carries]))
    return tree_unflatten(stacked, structure)

# }}}


def fractal_carry_loop(f: Callable, xs: Any, init: Any, keep_all: bool,
                       what: str) -> Any:
    """``ft.scan`` (*keep_all*) or ``ft.fold`` over the dense bundle *xs*
    with a carry *init* holding FractalTensors (see the module docs for
    which loop runs it). *what* names the caller in errors."""
    from ftlazy.fractal import _scan_node
    _, _, length = _steps(xs, what)
    if isinstance(length, int) and length <= MAX_UNROLLED_STEPS:
        return (_unrolled_scan if keep_all else unrolled_fold)(f, xs, init, what)
    return kept_structure_loop(
        lambda body, values: _scan_node(body, xs, values, keep_all, what),
        f, init, keep_all, what,
        f"a body that changes the lengths is unrolled, which needs a static "
        f"number of steps, at most {MAX_UNROLLED_STEPS} (got {length})")


def outer_list_carry_loop(f: Callable, xs: Any, init: Any, keep_all: bool,
                          what: str) -> Any:
    """``ft.scan`` (*keep_all*) or ``ft.fold`` over the outer list of the
    FractalTensors in *xs* with a carry *init* holding FractalTensors, which
    the body must keep the structure of (see the module docs)."""
    from ftlazy.jagged_scan_outer import jagged_scan
    return kept_structure_loop(
        lambda body, values: jagged_scan(body, xs, values, keep_all, what),
        f, init, keep_all, f"{what} over a FractalTensor",
        "only a body that keeps the carry's structure runs over the elements "
        "of a FractalTensor")
