# SPDX-License-Identifier: MIT
"""Folds whose carry holds a FractalTensor.

FractalTensor writes a stacked RNN as a fold over the layers whose carry is
the whole jagged batch: ``ft.fold(layer, params, init=batch)``, each
``layer`` mapping a scan over every sequence. A carry that is a
:class:`~ftlazy.fractal_tensor.Jagged` node cannot be one array of a
:class:`~ftlazy.fractal.Scan`: its packed size and offsets are those of the
data. Since the layers are a static list, such a fold is unrolled when it is
built: the body is called once per step on the previous step's carry, as
``jax.lax.fori_loop`` with ``unroll`` does. The result is an ordinary DAG
that both ``evaluate_numpy`` and ``compile`` run.

Each step's carry must have the init's structure; its FractalTensors must
keep their depth, element shape and dtype (their lengths may change from
step to step: each step is its own map). The sequence must have a static
length, at most :data:`MAX_UNROLLED_STEPS`.

.. autofunction:: has_jagged_leaf
.. autofunction:: unrolled_fold
"""

from __future__ import annotations

from typing import Any, Callable

from ftlazy import shapes as sh
from ftlazy.array import Array, IndexLambda
from ftlazy.fractal import tree_flatten, tree_leaves_like, tree_unflatten
from ftlazy.fractal_tensor import Jagged
from ftlazy.scalar_expr import index_var

__all__ = ["MAX_UNROLLED_STEPS", "has_jagged_leaf", "unrolled_fold"]

#: the most steps a fold with a FractalTensor carry is unrolled to
MAX_UNROLLED_STEPS = 256


def has_jagged_leaf(tree: Any) -> bool:
    """Whether the bundle *tree* holds a :class:`~ftlazy.Jagged` leaf."""
    leaves, _ = tree_flatten(tree)
    return any(isinstance(leaf, Jagged) for leaf in leaves)


def _row(array: Array, t: int) -> IndexLambda:
    import pymbolic.primitives as prim
    rest = tuple(index_var(k) for k in range(array.ndim - 1))
    var = prim.Variable("_in0")
    return IndexLambda(prim.Subscript(var, (t,) + rest), array.shape[1:],
                       array.dtype, {"_in0": array})


def _same_kind(new: Any, old: Any, k: int, what: str) -> None:
    if isinstance(old, Jagged):
        if not isinstance(new, Jagged):
            raise TypeError(f"{what}: carry leaf {k} is a FractalTensor, but the "
                            f"body returns {type(new).__name__} {new!r}")
        if (new.depth, new.dtype) != (old.depth, old.dtype) or \
                not sh.shapes_equal(new.elem_shape, old.elem_shape):
            raise ValueError(
                f"{what}: the body changes carry leaf {k} from a FractalTensor "
                f"of depth {old.depth}, elem_shape {sh.shape_str(old.elem_shape)} "
                f"and dtype {old.dtype} to depth {new.depth}, elem_shape "
                f"{sh.shape_str(new.elem_shape)} and dtype {new.dtype}")
        return
    from ftlazy.ops import asarray
    new_array = asarray(new)
    old_array = asarray(old)
    if not sh.shapes_equal(new_array.shape, old_array.shape) or \
            new_array.dtype != old_array.dtype:
        raise ValueError(
            f"{what}: the body changes carry leaf {k} from shape "
            f"{sh.shape_str(old_array.shape)} and dtype {old_array.dtype} to "
            f"{sh.shape_str(new_array.shape)} and {new_array.dtype}")


def unrolled_fold(f: Callable, xs: Any, init: Any, what: str) -> Any:
    """``carry = f(carry, x)`` over the rows of the bundle *xs* (arrays of
    one static length), starting from *init*, whose leaves may be
    FractalTensors; the last carry (see the module docs). *what* names the
    caller in errors."""
    from ftlazy.fractal import _as_arrays, _check_lengths
    _, init_structure = tree_flatten(init, f"{what} initial carries")
    x_leaves, x_structure = tree_flatten(xs, f"{what} sequences")
    scanned = _as_arrays(x_leaves, f"{what} sequences")
    if not scanned:
        raise ValueError(f"{what} needs at least one sequence")
    length = _check_lengths(tuple(scanned), what)
    if not isinstance(length, int):
        raise NotImplementedError(
            f"{what} with a FractalTensor carry needs a sequence of static "
            f"length (it is unrolled), got length {length}")
    if length > MAX_UNROLLED_STEPS:
        raise NotImplementedError(
            f"{what} with a FractalTensor carry is unrolled, at most "
            f"{MAX_UNROLLED_STEPS} steps; got {length}")
    carry = init
    for t in range(length):
        x = tree_unflatten([_row(a, t) for a in scanned], x_structure)
        new = f(carry, x)
        new_leaves = tree_leaves_like(new, init_structure, what, "init",
                                      "the carry the body returns")
        old_leaves, _ = tree_flatten(carry)
        for k, (n, o) in enumerate(zip(new_leaves, old_leaves)):
            _same_kind(n, o, k, what)
        carry = tree_unflatten(new_leaves, init_structure)
    return carry
