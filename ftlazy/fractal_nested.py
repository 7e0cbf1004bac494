# SPDX-License-Identifier: MIT
"""Results of :func:`ftlazy.map` over a FractalTensor that are themselves
FractalTensors: they nest one level deeper.

A body that returns a FractalTensor of depth ``d`` per element (the
document's sentences transformed leaf-wise, a map over the document's
sentences with results of each sentence's length, ``ft.product(x, W)`` of
an element and a dense table) gives a map result of depth ``d + 1``: the
per-element values concatenated, an outer offsets level counting each
element's lists, then the element's own levels over all elements.

The body's FractalTensor is returned to the map as plain arrays:

* its values, a map result like any other (packed where the first axis is
  affine in the element's sizes, else stacked and then reshaped);
* for each offsets level, either a closed form or its lengths. A level
  has a closed form where its offsets are ``c*j`` (lists of ``c`` rows,
  as ``ft.product(x, table)`` makes) or, at level 0 with one list per
  sentence, ``c*j + a*P[j]`` for ``P`` the rebased sentence offsets of a
  depth-3 element (``P`` itself for a leaf-wise result, the offsets of a
  map over the sentences): over all elements they are ``c*j`` and ``c*j
  + a*offsets1[j]`` of the input, computed from the input's offsets
  without running the map. Other levels (``ft.join`` of two lists) return
  their lengths ``(k,)`` from the body (a packed map result), and their
  offsets are the running sum of those lengths over all elements
  (:func:`running_offsets`, a scan).

The outer level is the running sum of each element's number of lists
(:meth:`~ftlazy.fractal_tensor.JaggedMap.extent_offsets` where it is an
affine function of the element's sizes).

A size that is not affine in the element's sizes (computed inside the body
by ``ft.repeat``, ``ft.product`` of two elements or a slice of the
element's lists; or a captured FractalTensor's) is *counted*: the body
also returns it per element as a 0-d integer, the output is packed, and
its total is a data-dependent size (``_ft_dynmap<k>``) summing those
counts (:attr:`~ftlazy.fractal_tensor.JaggedMap.counted`); a level whose
number of lists is counted gets its offsets from the lengths. So does an
array the body returns whose first axis is such a size computed from the
element (``ft.filter`` of the element's rows, :func:`counted_array`): the
map's result is a FractalTensor of one list per element. One computed
outside the body (``ys[1]`` of a captured FractalTensor) is the same for
every element, and such results stack. The reference evaluator runs these; compiled, a
map over depth-2 FractalTensors gets the counted lists zipped in
(:mod:`ftlazy.transform.jagged_counted`), others are refused
(:func:`check_no_counted_results`).

.. autoclass:: NestedLeaf
.. autofunction:: counted_array
.. autofunction:: split_nested_leaf
.. autofunction:: nested_result
.. autofunction:: running_offsets
.. autofunction:: check_no_counted_results
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any

import numpy as np
import pymbolic.primitives as prim

from ftlazy import shapes as sh
from ftlazy.array import Array, IndexLambda, SizeParam
from ftlazy.fractal import LoopResult
from ftlazy.fractal_tensor import Jagged, JaggedMap, segment_lengths
from ftlazy.node import topological_order
from ftlazy.scalar_expr import ExprIdentityMapper, index_var, linear_combination
from ftlazy.shapes import ShapeComponent

__all__ = ["NestedLeaf", "counted_array", "split_nested_leaf", "nested_result",
           "running_offsets", "check_no_counted_results"]

_INT64 = np.dtype(np.int64)


@dataclass(frozen=True)
class NestedLeaf:
    """How one FractalTensor of a map body's result comes back: body
    output :attr:`values` holds its values; :attr:`outer` says how many
    lists each element has: ``("extent", c)`` (``c`` affine in the
    element's sizes) or ``("counts", i)`` (body output ``i``); each entry
    of :attr:`levels` says how the offsets of that level are made over all
    elements: ``("form", c, a, k, lists)`` (``c*j + a*offsets1[j]`` of
    mapped input ``k``, ``k`` -1 where ``a`` is 0, over ``lists`` lists per
    element) or ``("lengths", i)`` (body output ``i`` holds the level's
    lengths). :attr:`counted` lists the outputs whose first axis is not
    affine in the element's sizes (see
    :attr:`~ftlazy.fractal_tensor.JaggedMap.counted`)."""

    values: int
    outer: tuple
    levels: tuple[tuple, ...]
    counted: tuple[tuple[int, int, str], ...]


# {{{ in the body

class _SentenceOffsets(ExprIdentityMapper):
    """Replaces reads ``P[_0]`` of rebased sentence offsets by a variable
    ``_ft_P<k>`` (*names*: binding name -> mapped input ``k``); any other
    read of them makes the expression :attr:`opaque`."""

    def __init__(self, names: dict[str, int]) -> None:
        self.names = names
        self.used: set[int] = set()
        self.opaque = False

    def map_variable(self, expr: prim.Variable) -> Any:
        if expr.name in self.names:
            self.opaque = True
        return expr

    def map_subscript(self, expr: prim.Subscript) -> Any:
        name = getattr(expr.aggregate, "name", None)
        if name in self.names and expr.index_tuple == (index_var(0),):
            self.used.add(self.names[name])
            return prim.Variable(f"_ft_P{self.names[name]}")
        return super().map_subscript(expr)


def _closed_form(offsets: Array, sentence_offsets: dict[Array, int]
                 ) -> tuple | None:
    """``("form", c, a, k)`` where *offsets* is ``c*j + a*P_k[j]`` for
    ``P_k`` in *sentence_offsets* (the rebased sentence offsets of mapped
    input ``k``) over all of ``P_k`` (one list per sentence), else None."""
    count = sh.sub(offsets.shape[0], 1)
    sentence_offsets = {
        p: k for p, k in sentence_offsets.items()
        if sh.prove_equal(sh.sub(p.shape[0], 1), count)}
    if offsets in sentence_offsets:
        return ("form", 0, 1, sentence_offsets[offsets])
    if not isinstance(offsets, IndexLambda):
        return None
    names = {name: sentence_offsets[a] for name, a in offsets.bindings.items()
             if a in sentence_offsets}
    mapper = _SentenceOffsets(names)
    expr = mapper(offsets.expr)
    if mapper.opaque or len(mapper.used) > 1:
        return None
    try:
        form = sh.to_affine(expr)
    except (sh.NonAffineError, TypeError):
        return None
    k = next(iter(mapper.used), -1)
    allowed = {"_0", f"_ft_P{k}"}
    if form.const != 0 or set(form.coeffs) - allowed:
        return None
    a = form.coeffs.get(f"_ft_P{k}", 0)
    return ("form", form.coeffs.get("_0", 0), a, k if a else -1)


def counted_array(leaf: Array, params: Any = (),
                  symbols: frozenset[str] = frozenset()) -> bool:
    """Whether the first axis of *leaf*, an array a map body returns, is a
    size computed in the body from the element (``ft.filter`` of the
    element; the element is the traced *params* and its sizes *symbols*):
    the map's result is then a FractalTensor of one list per element (see
    :func:`split_nested_leaf`). A size computed outside the body
    (``ys[i]`` of a captured FractalTensor) is the same for every element:
    the map stacks such results."""
    from ftlazy.fractal_access import sizes_computed_from
    if leaf.ndim == 0 or isinstance(leaf.shape[0], int):
        return False
    ids = {id(p) for p in params}
    return bool(sh.size_param_names(leaf.shape[0]) & sizes_computed_from(
        [leaf], symbols, lambda m: id(m) in ids))


def split_nested_leaf(leaf: Jagged | Array, first_output: int,
                      sentence_offsets: dict[Array, int],
                      element_symbols: frozenset[str],
                      counts: dict | None = None
                      ) -> tuple[list[Array], NestedLeaf]:
    """The body outputs (numbered from *first_output*) that return the
    FractalTensor *leaf* of a map body's result, and how the map rebuilds
    it (see the module docs); an array *leaf* must be a
    :func:`counted_array` (the map's result has depth 2).
    *sentence_offsets* maps the rebased sentence offsets parameters of
    depth-3 elements to their mapped input. *counts* (one dict per traced
    body, updated) maps each counted size to its count output and name, so
    that outputs of one size share them."""
    outputs: list[Array] = []
    counts = {} if counts is None else counts
    counted: list[tuple[int, int, str]] = []

    def affine(c: ShapeComponent) -> bool:
        return not sh.size_param_names(c) - element_symbols

    def add(array: Array) -> int:
        index = first_output + len(outputs)
        outputs.append(array)
        if not affine(array.shape[0]):
            if array.shape[0] not in counts:
                counts[array.shape[0]] = (
                    index + 1, f"{_counted_prefix()}{next(_COUNTER)}")
                outputs.append(_size_array(array.shape[0], array))
            counted.append((index,) + counts[array.shape[0]])
        return index

    if not isinstance(leaf, Jagged):
        # an array whose first axis is a size computed in the body
        # (ft.filter of the element): a list per element, counted
        values = add(leaf)
        return outputs, NestedLeaf(values, ("counts", counted[0][1]), (),
                                   tuple(counted))
    values = add(leaf.values)
    levels = []
    for level, offsets in enumerate(leaf.offsets):
        lists = sh.sub(offsets.shape[0], 1)
        # (the sentence offsets index the element's first level)
        form = _closed_form(offsets, sentence_offsets if level == 0 else {}
                            ) if affine(lists) else None
        if form is None:
            levels.append(("lengths", add(segment_lengths(offsets))))
        else:
            levels.append(form + (lists,))
    lists = sh.sub(leaf.offsets[0].shape[0], 1)
    outer = (("extent", lists) if affine(lists) else
             ("counts", next(c for k, c, _ in counted if k == levels[0][1])))
    return outputs, NestedLeaf(values, outer, tuple(levels), tuple(counted))


_COUNTER = itertools.count()


def _counted_prefix() -> str:
    from ftlazy.fractal_access import DERIVED_SIZE_PREFIX
    return f"{DERIVED_SIZE_PREFIX}map"


def _size_array(c: ShapeComponent, array: Array) -> IndexLambda:
    """The size *c* of *array* (an expression of size parameters, some of
    them data-dependent sizes that *array* reads) as a 0-d int64 array."""
    from ftlazy.fractal_access import DerivedSize
    names = sh.size_param_names(c)
    derived = {n.name: n for n in topological_order([array])
               if isinstance(n, DerivedSize) and n.name in names}
    return IndexLambda(sh.to_affine(c).to_expr(), (), _INT64, {
        f"_ft_size_{name}": derived.get(name, SizeParam(name))
        for name in sorted(names)})

# }}}


# {{{ after the map

def running_offsets(lengths: Array) -> Array:
    """Offsets ``(k + 1,)`` of the int64 *lengths* ``(k,)``: their running
    sum after a 0 (a scan, so that it runs on the device when compiled)."""
    from ftlazy.fractal import scan
    from ftlazy.ops import concatenate, zeros
    sums = scan(lambda total, x: total + x, lengths, zeros((), _INT64))
    return concatenate([zeros((1,), _INT64), sums])


def _packed(loop: JaggedMap, index: int) -> Array:
    """Output *index* of *loop* with the elements' rows back to back."""
    result = LoopResult(loop, index)
    rest = tuple(index_var(k) for k in range(1, result.ndim))
    for k, count, name in loop.counted:
        if k == index:
            # (its total number of rows, bound to the size it names)
            from ftlazy.fractal_access import defined_size
            from ftlazy.ops import sum as total
            size = defined_size(name, total(LoopResult(loop, count)))
            return IndexLambda(prim.Variable("_in0")[(index_var(0),) + rest],
                               result.shape, result.dtype,
                               {"_in0": result, f"_ft_size_{name}": size})
    if loop.is_jagged_output(index):
        return result
    # a static number of rows per element: (n, R, ...) -> (n*R, ...)
    rows = result.shape[1]
    p = index_var(0)
    expr: Any = 0
    if rows != 0:
        expr = prim.Variable("_in0")[(prim.FloorDiv(p, rows),
                                      prim.Remainder(p, rows)) + rest[:-1]]
    return IndexLambda(expr, (sh.mul(loop.length, rows),) + result.shape[2:],
                       result.dtype, {"_in0": result})


def _closed_offsets(loop: JaggedMap, form: tuple) -> IndexLambda:
    """``c*j + a*offsets1[j]`` over the lists of all elements."""
    _, c, a, k, lists = form
    j = index_var(0)
    # (the mapped arrays, read or not, tell the sizes of the shape)
    bindings = {f"_ft_mapped{i}": x for i, x in enumerate(
        x for _, arrays in loop.mapped_parts() for x in arrays)}
    terms = [(c, j)]
    if a:
        bindings["_in0"] = loop.mapped_parts()[k][1][2]
        terms.append((a, prim.Variable("_in0")[j]))
    expr = linear_combination(terms)
    total = loop.extent_total(lists, "the number of lists")
    return IndexLambda(expr, (sh.add(total, 1),), _INT64, bindings)


def nested_result(loop: JaggedMap, leaf: NestedLeaf) -> Jagged:
    """The FractalTensor, one level deeper than the body's, of the map
    *loop* for the body's FractalTensor described by *leaf*."""
    kind, how = leaf.outer
    offsets = [loop.extent_offsets(how) if kind == "extent"
               else running_offsets(LoopResult(loop, how))]
    for level in leaf.levels:
        if level[0] == "form":
            offsets.append(_closed_offsets(loop, level))
        else:
            offsets.append(running_offsets(_packed(loop, level[1])))
    return Jagged(_packed(loop, leaf.values), tuple(offsets))

# }}}


def check_no_counted_results(roots: list[Array]) -> None:
    """:class:`NotImplementedError` if a map over a FractalTensor among
    *roots* (or in a loop body they run) returns a FractalTensor whose
    sizes are not affine in the element's sizes (not compiled yet)."""
    from ftlazy.fractal import Loop
    stack = [topological_order(roots)]
    seen: set = set()
    while stack:
        for n in stack.pop():
            if isinstance(n, JaggedMap) and n.counted:
                raise NotImplementedError(
                    "compiling a map over a FractalTensor whose function "
                    "returns lists with sizes that are not affine in the "
                    "element's sizes is supported where the map is over "
                    "depth-2 FractalTensors and each such size counts a "
                    "selection of rows (ft.filter of the element's rows, of "
                    "kept rows or of a captured array's rows) or is computed "
                    "per element (ft.repeat by a size, a 0-d array or a kept "
                    "count; ft.product of two elements), also such sentence "
                    "maps of a map over documents that read nothing else of "
                    "the document; not for this one (lists counted from a "
                    "whole document, a captured FractalTensor's lists, ...): "
                    "ft.evaluate_numpy evaluates it")
            if isinstance(n, Loop) and n.body not in seen:
                seen.add(n.body)
                stack.append(topological_order(list(n.body.outputs)))
