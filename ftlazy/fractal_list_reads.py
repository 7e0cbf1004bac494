# SPDX-License-Identifier: MIT
"""A map over documents that reads another list's element at each
document's index, through arrays of a static shape computed from it.

Question answering pairs each document with a question, a list of tokens
of its own length::

    ft.map(lambda doc, i: score(doc, encode(questions[i])), docs,
           ft.arange(docs.length))

Maps over FractalTensors of depth 2 zip such reads at compile time
(:mod:`ftlazy.transform.jagged_element_reads`); maps over depth 3 have no
lowering for them (a compiled program would run the map on the host).
Where the body uses the read element only through arrays of a static
shape computed from it and from the map's dense inputs (the question's
encoding ``encode(questions[i])``, its token count),
:func:`list_read_result` computes those first, by a map over the read
elements (``questions`` itself at the map's own index, else ``ft.gather``
of the elements at the index each document computes, checked at run
time), and rebuilds the map with them zipped in, a row per document. Both
evaluators run the rebuilt graph. Bodies that use the read element
otherwise (each sentence attending to the question's tokens), or read two
lists, stay as they are.

.. autofunction:: list_read_result
"""

from __future__ import annotations

from typing import Any

from ftlazy import shapes as sh
from ftlazy.array import Array, SizeParam
from ftlazy.fractal_tensor import Jagged, jagged_parts
from ftlazy.node import Node, iter_children, topological_order

__all__ = ["list_read_result"]


def _outer(node: Array, params: set[int]) -> bool:
    """Whether *node* reads none of the traced *params* (ids)."""
    return not any(id(n) in params for n in topological_order([node]))


def _list_reads(parts: list[Node], params: set[int]) -> dict[Array, tuple]:
    """The element reads among *parts*' nodes of a depth-2 FractalTensor
    computed outside the map (reading none of its *params*): node ->
    ``(values, offsets, index)``."""
    from ftlazy.fractal_access import element_read
    reads = {}
    for n in topological_order(parts):
        found = element_read(n) if isinstance(n, Array) else None
        if found is not None and _outer(found[0], params) and _outer(
                found[1], params):
            reads[n] = found
    return reads


def _length_values(reads: dict[Array, tuple]) -> dict[Array, Array]:
    """Each read's length as the array a body computes with
    (``ys[i].shape[0]``), where it has one."""
    from ftlazy.fractal_access import element_read_length
    found = {read: element_read_length(read) for read in reads}
    return {read: value for read, value in found.items() if value is not None}


def _read_rows(parts: list[Node], reads: dict[Array, tuple],
               element: list[Any], symbols: set[str]) -> list[Array] | None:
    """The arrays computed from the *reads* (and the map's other inputs,
    but not from its FractalTensor's *element* or *symbols*) that nodes
    computed from the element, or the results *parts*, read: each of a
    static shape. None where the element side reads a read otherwise (the
    read itself, its length)."""
    from ftlazy.fractal_access import DERIVED_SIZE_PREFIX, DerivedSize
    from ftlazy.fractal_element_views import _names_used
    own = {id(e) for e in element}
    lengths = {read.shape[0].name for read in reads}
    # (the reads, and their lengths used as values)
    sources = set(reads) | set(_length_values(reads).values())
    order = topological_order(parts)
    from_read: dict[Node, bool] = {}
    from_element: dict[Node, bool] = {}
    for n in order:
        children = list(iter_children(n))
        from_read[n] = n in sources or any(from_read[c] for c in children)
        from_element[n] = (id(n) in own or bool(_names_used(n) & symbols)
                           or any(from_element[c] for c in children))
        if from_element[n] and _names_used(n) & lengths:
            return None
    frontier: dict[Node, None] = {}
    for n in order:
        if from_element[n]:
            frontier.update((c, None) for c in iter_children(n)
                            if from_read[c] and not from_element[c])
    frontier.update((p, None) for p in parts
                    if from_read[p] and not from_element[p])
    for f in frontier:
        if (f in reads or not isinstance(f, Array)
                or isinstance(f, DerivedSize)
                or any(name.startswith(DERIVED_SIZE_PREFIX)
                       for name in sh.shape_size_param_names(f.shape))):
            return None
    return list(frontier)


def _read_list(xs: list[Any], elements: list[list[Any]], depths: list[int],
               values: Array, offsets: Array, index: Array,
               what: str) -> Jagged:
    """The list whose element ``i`` the map's element ``i`` reads as the
    element *index* of the FractalTensor of *values* and *offsets*."""
    from ftlazy.fractal_access import _checked, _select
    from ftlazy.fractal_element_views import _computed_per_element
    from ftlazy.transform.jagged_element_reads import _is_own_index
    listed = Jagged(values, (offsets,))
    n = next(x for x in xs if isinstance(x, Jagged)).length
    own = any(depth == 1 and index is e[0] and _is_own_index(x)
              for x, e, depth in zip(xs, elements, depths))
    if own and sh.prove_equal(listed.length, n):
        return listed
    (indices,) = _computed_per_element(xs, elements, [index], what)
    return _select(listed, _checked(indices, listed.length,
                                    "FractalTensor index"))


def list_read_result(xs: list[Any], params: Any, leaves: list[Any],
                     depths: list[int], symbols: tuple[str, ...],
                     structure: Any, what: str) -> Any:
    """The result of the map over *xs* (one FractalTensor of depth ``>=
    3``, dense arrays besides), traced with the flat *params* and the
    element sizes *symbols*, whose *leaves* (of *structure*) read another
    list's element through arrays of a static shape alone, rebuilt with
    those computed first (see the module docs); None where it does not
    apply."""
    from ftlazy.fractal_element_views import (
        _element_params, _replayed_map, _result_parts)
    from ftlazy.fractal_tensor import jagged_map
    from ftlazy.transform.jagged_element_reads import BodyReplay
    jagged = [k for k, d in enumerate(depths) if d >= 2]
    if len(jagged) != 1 or depths[jagged[0]] < 3:
        return None
    k = jagged[0]
    parts = _result_parts(leaves)
    reads = _list_reads(parts, {id(p) for p in params})
    if len(set(reads.values())) != 1:
        return None
    element = _element_params(params, depths, k)
    rows = _read_rows(parts, reads, element, set(symbols))
    if not rows:
        return None
    elements = [_element_params(params, depths, j) for j in range(len(xs))]
    read_list = _read_list(xs, elements, depths, *next(iter(reads.values())),
                           what)
    dense = [(j, e[0]) for j, e in enumerate(elements) if j != k]

    def computed(read: Array, *inputs: Any) -> tuple:
        replace: dict[Any, Any] = {old: new for (_, old), new
                                   in zip(dense, inputs)}
        replace.update((r, read) for r in reads)
        length = read.shape[0].name
        replace.update((value, SizeParam(length))
                       for value in _length_values(reads).values())
        replay = BodyReplay(replace, {r.shape[0].name: length for r in reads})
        return tuple(replay(a) for a in rows)

    per_element = jagged_map(computed, read_list, *(xs[j] for j, _ in dense),
                             what=what)

    def replacements(new: Any) -> tuple[dict, dict]:
        return dict(zip(element, jagged_parts(new))), {}

    return _replayed_map(xs, k, xs[k], params, leaves, depths, structure,
                         what, replacements, rows, tuple(per_element))
