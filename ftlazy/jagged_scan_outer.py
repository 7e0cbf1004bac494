# SPDX-License-Identifier: MIT
""":func:`~ftlazy.scan`, :func:`~ftlazy.fold` and :func:`~ftlazy.reduce`
over the outer list of a FractalTensor.

Step ``i`` calls ``f(carry, xs[i])``, where ``xs[i]`` is element ``i`` of
the FractalTensor: an array ``(L_i, *elem_shape)`` at depth 2, a
FractalTensor one level shallower from depth 3 on. The body is traced once, as the body of a
:func:`~ftlazy.fractal_tensor.jagged_map` is: the element's sizes are size
parameters of the body (named with
:data:`~ftlazy.fractal_tensor.ELEMENT_SIZE_PREFIX`), bound per element at
run time from the offsets, so ``s.shape[0]`` is the element's length.
Carries are arrays (or bundles of arrays) of a shape that does not depend
on the element. Dense arrays zipped along are read row by row; their length
must be the number of elements (checked at run time, a :class:`ValueError`
naming both inputs). ``fold`` and ``reduce`` give the last carry (the init
for an empty list), ``scan`` every carry stacked ``(n, *carry)``.

The reference evaluator runs the body per element
(:func:`ftlazy.target.jagged_outer_scan.evaluate_jagged_scan`); compiled
programs lower the loop to a dense scan over padded elements, at depth 3
after computing the step's work that does not use the carry for all
documents at once (:mod:`ftlazy.transform.jagged_outer_scan`).

.. autoclass:: JaggedScan
.. autofunction:: jagged_scan
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from ftlazy import shapes as sh
from ftlazy.array import Array
from ftlazy.fractal import (
    Body, CarryLoop, LoopResult, _trace, check_carries, tree_flatten,
    tree_leaves_like, tree_unflatten)
from ftlazy.fractal_tensor import (
    Jagged, _element_params, _map_nesting, element_symbols, element_views)
from ftlazy.node import node
from ftlazy.shapes import Shape, ShapeComponent

__all__ = ["JaggedScan", "jagged_scan", "has_jagged_sequence"]


@node(children=("inputs",), bodies=("body",))
class JaggedScan(CarryLoop):
    """A sequential loop over the outer list of FractalTensors.

    :attr:`inputs` hold the :attr:`num_carries` initial carries, then, for
    each scanned input in order, its arrays (a dense array read along axis
    0; a FractalTensor's values then its offsets, outermost first), then
    the captured arrays. :attr:`depths` gives each scanned input's depth (1:
    dense). :attr:`symbols` names the body's size parameters of one element,
    shared by zipped FractalTensors: ``(L,)`` at depth 2 (its length),
    ``(m, T)`` at depth 3 (its number of sequences and of leaves; see
    :func:`~ftlazy.fractal_tensor.element_symbols`). Body parameters: the
    carries, the element of each scanned input (its values, then from depth
    3 on its rebased offsets; a dense input's row), then the
    captured arrays; the body's outputs are the new carries, of static
    shape. With :attr:`keep_all` result ``k`` stacks carry ``k`` after each
    step (``scan``), else it is the last carry (``fold``, ``reduce``)."""

    body: Body
    inputs: tuple[Array, ...]
    num_carries: int
    depths: tuple[int, ...]
    symbols: tuple[str, ...]
    keep_all: bool = True
    #: the operation, for messages (``fold over a FractalTensor``)
    what: str = "fold over a FractalTensor"

    def __post_init__(self) -> None:
        object.__setattr__(self, "inputs", tuple(self.inputs))
        object.__setattr__(self, "depths", tuple(self.depths))
        object.__setattr__(self, "symbols", tuple(self.symbols))
        if not any(d > 1 for d in self.depths):
            raise ValueError(f"{self.what}: no FractalTensor is scanned")
        if len(self.body.outputs) != self.num_carries:
            raise ValueError(f"{self.what}: the body returns "
                             f"{len(self.body.outputs)} arrays for "
                             f"{self.num_carries} carries")
        symbols = frozenset(self.symbols)
        for k, (init, new) in enumerate(zip(self.inits, self.body.outputs)):
            if any(symbols & sh.size_param_names(c) for c in new.shape):
                raise ValueError(
                    f"{self.what}: the body returns carry {k} of shape "
                    f"{sh.shape_str(new.shape)}, which depends on the "
                    "element's lengths; a carry must keep the static shape "
                    f"{sh.shape_str(init.shape)} of its init (reduce over the "
                    "element inside the body)")
        check_carries(self.inits, self.body.outputs, self.what)
        from ftlazy.fractal import check_captured_params
        check_captured_params(self.body, self.captured, self.what)

    def mapped_parts(self) -> list[tuple[int, tuple[Array, ...]]]:
        """``(depth, arrays)`` of each scanned input."""
        result, pos = [], self.num_carries
        for d in self.depths:
            result.append((d, self.inputs[pos:pos + d]))
            pos += d
        return result

    @property
    def captured(self) -> tuple[Array, ...]:
        return self.inputs[self.num_carries + sum(self.depths):]

    @property
    def length(self) -> ShapeComponent:
        """The number of elements of the first scanned FractalTensor."""
        for depth, arrays in self.mapped_parts():
            if depth > 1:
                return sh.sub(arrays[1].shape[0], 1)
        raise AssertionError("no FractalTensor is scanned")


def has_jagged_sequence(xs: Any) -> bool:
    """Whether the bundle *xs* holds a FractalTensor of depth >= 2."""
    leaves, _ = tree_flatten(xs)
    return any(isinstance(leaf, Jagged) for leaf in leaves)


def jagged_scan(f: Callable, xs: Any, init: Any, keep_all: bool,
                what: str) -> Any:
    """``carry = f(carry, x)`` over the elements of *xs*, a bundle holding
    at least one FractalTensor (depth >= 2) and possibly dense arrays
    zipped along (see the module docs). *what* (``"fold"``, ``"scan"``,
    ``"reduce"``) names the operation in messages. Returns the last carry
    (or, with *keep_all*, the stacked carries) with *init*'s structure."""
    from ftlazy.fractal import _as_arrays
    from ftlazy.ops import asarray
    full_what = f"{what} over a FractalTensor"
    init_leaves, init_structure = tree_flatten(init, f"{what} initial carries")
    if any(isinstance(leaf, Jagged) for leaf in init_leaves):
        # (a FractalTensor carry whose structure the body keeps: its values)
        from ftlazy.fractal_carry import outer_list_carry_loop
        return outer_list_carry_loop(f, xs, init, keep_all, what)
    inits = _as_arrays(init_leaves, f"{what} initial carries")
    x_leaves, x_structure = tree_flatten(xs, f"{what} sequences")
    level = _map_nesting[0]
    inputs: list[Array] = list(inits)
    depths: list[int] = []
    params: list[tuple[Shape, np.dtype]] = []
    first: Jagged | None = None
    symbols: tuple[str, ...] = ()
    for leaf in x_leaves:
        if isinstance(leaf, Jagged):
            if first is None:
                first = leaf
                symbols = element_symbols(leaf.depth, level)
            elif leaf.depth != first.depth:
                raise ValueError(f"{full_what} zips FractalTensors of different "
                                 f"depths: {first!r} and {leaf!r}")
            inputs += [leaf.values, *leaf.offsets]
            depths.append(leaf.depth)
            params += _element_params(leaf.depth, leaf.values, symbols)
        else:
            try:
                a = asarray(leaf)
            except TypeError:
                raise TypeError(f"{what} sequences must be arrays or "
                                f"FractalTensors, got {type(leaf).__name__} "
                                f"{leaf!r}") from None
            if a.ndim == 0:
                raise ValueError(f"{full_what}: a dense sequence zipped with the "
                                 f"FractalTensor must have at least one axis, "
                                 f"got a 0-d array {a!r}")
            inputs.append(a)
            depths.append(1)
            params.append((a.shape[1:], a.dtype))
    if first is None:
        raise ValueError(f"{full_what}: no FractalTensor among the sequences")
    nc = len(inits)

    def traced(*flat: Any) -> tuple:
        carry = tree_unflatten(list(flat[:nc]), init_structure)
        elements = element_views(flat[nc:], depths)
        new = f(carry, tree_unflatten(elements, x_structure))
        # (dicts are matched by key, then put in init's key order)
        leaves = tree_leaves_like(new, init_structure, what, "init",
                                  "the carry the body returns")
        for k, leaf in enumerate(leaves):
            if isinstance(leaf, Jagged):
                raise ValueError(
                    f"{full_what}: the body returns a FractalTensor "
                    f"{leaf!r} as carry {k}, whose init is an array of shape "
                    f"{sh.shape_str(inits[k].shape)}; carries have a static "
                    "shape")
        return tuple(leaves)

    leaf_structure = tree_flatten(0)[1]
    all_params = [(a.shape, a.dtype) for a in inits] + params
    _map_nesting[0] += 1
    try:
        body, captured, _ = _trace(traced, [[p] for p in all_params],
                                   [leaf_structure] * len(all_params), what,
                                   local_sizes=frozenset(symbols))
    finally:
        _map_nesting[0] -= 1
    from ftlazy.fractal_tensor import sizes_per_element
    if ((level > 0 and set(depths) <= {1, 2, 3}) or max(depths) >= 4
            or sizes_per_element(body, frozenset(symbols))):
        # (in a body, or over depth 4, which has no loop of its own, or
        # with sizes computed from the element, s[:2], which the padded
        # lowering does not take: a loop over sequences whose step encodes
        # each one first, then folds the encodings, as two loops; see the
        # module)
        from ftlazy.fractal_fold_split import split_sequence_loop
        split = split_sequence_loop(body, inits, x_leaves, captured, symbols,
                                    keep_all, what)
        if split is not None:
            return tree_unflatten(split, init_structure)
    loop = JaggedScan(body, tuple(inputs) + tuple(captured), nc, tuple(depths),
                      symbols, keep_all, full_what)
    return tree_unflatten([LoopResult(loop, k) for k in range(nc)],
                          init_structure)
