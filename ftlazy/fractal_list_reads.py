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
time), and rebuilds the map with them zipped in, a row per document. A
body that returns one map over its document's sentences which reads the
question whole (each sentence attending to the question's tokens) becomes
that map over all sentences of all documents, each sentence reading the
question at its document's index (a read that maps over depth 2 compile,
see above), nested per document (:func:`_read_by_each_sentence`; its
results a row per sentence or per token). Both evaluators run the rebuilt
graph. Other bodies (a question read besides such a map, two lists read)
stay as they are.

.. autofunction:: list_read_result
"""

from __future__ import annotations

from typing import Any

import pymbolic.primitives as prim

from ftlazy import shapes as sh
from ftlazy.array import Array
from ftlazy.fractal_tensor import Jagged, jagged_parts
from ftlazy.node import Node, iter_children, topological_order

__all__ = ["list_read_result"]


def _outer(node: Array, params: set[int]) -> bool:
    """Whether *node* reads none of the traced *params* (ids)."""
    return not any(id(n) in params for n in topological_order([node]))


def _list_reads(parts: list[Node], params: set[int]) -> dict[Array, tuple]:
    """The element reads among *parts*' nodes of a depth-2 FractalTensor
    computed outside the map (reading none of its *params*) at an index
    computed per element: node -> ``(values, offsets, index)``. (A read at
    an index from outside, ``ys[1]``, is the same for every element.)"""
    from ftlazy.fractal_access import element_read
    reads = {}
    for n in topological_order(parts):
        found = element_read(n) if isinstance(n, Array) else None
        if found is not None and _outer(found[0], params) and _outer(
                found[1], params) and not _outer(found[2], params):
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
    from ftlazy.fractal_access import is_static_row
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
    if any(f in reads or not is_static_row(f) for f in frontier):
        return None
    return list(frontier)


def _read_list(xs: list[Any], elements: list[list[Any]], depths: list[int],
               values: Array, offsets: Array, index: Array,
               what: str) -> Jagged:
    """The list whose element ``i`` the map's element ``i`` reads as the
    element *index* of the FractalTensor of *values* and *offsets*."""
    from ftlazy.fractal_access import elements_at
    from ftlazy.fractal_element_views import _computed_per_element
    from ftlazy.transform.jagged_element_reads import _is_own_index
    listed = Jagged(values, (offsets,))
    n = next(x for x in xs if isinstance(x, Jagged)).length
    own = any(depth == 1 and index is e[0] and _is_own_index(x)
              for x, e, depth in zip(xs, elements, depths))
    if own and sh.prove_equal(listed.length, n):
        return listed
    (indices,) = _computed_per_element(xs, elements, [index], what)
    return elements_at(listed, indices)


def list_read_result(xs: list[Any], params: Any, leaves: list[Any],
                     depths: list[int], symbols: tuple[str, ...],
                     structure: Any, what: str) -> Any:
    """The result of the map over *xs* (one FractalTensor of depth ``>=
    3``, dense arrays besides), traced with the flat *params* and the
    element sizes *symbols*, whose *leaves* (of *structure*) read another
    list's element through arrays of a static shape alone, rebuilt with
    those computed first (see the module docs); None where it does not
    apply."""
    from ftlazy.fractal_access import read_replacements
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
    elements = [_element_params(params, depths, j) for j in range(len(xs))]
    rows = _read_rows(parts, reads, element, set(symbols))
    if not rows:
        return _read_by_each_sentence(xs, k, elements, depths, symbols,
                                      leaves, reads, structure, what)
    read_list = _read_list(xs, elements, depths, *next(iter(reads.values())),
                           what)
    dense = [(j, e[0]) for j, e in enumerate(elements) if j != k]

    def computed(read: Array, *inputs: Any) -> tuple:
        replace: dict[Any, Any] = {old: new for (_, old), new
                                   in zip(dense, inputs)}
        read_replace, renames = read_replacements(reads, read)
        replace.update(read_replace)
        replay = BodyReplay(replace, renames)
        return tuple(replay(a) for a in rows)

    per_element = jagged_map(computed, read_list, *(xs[j] for j, _ in dense),
                             what=what)

    def replacements(new: Any) -> tuple[dict, dict]:
        return dict(zip(element, jagged_parts(new))), {}

    return _replayed_map(xs, k, xs[k], params, leaves, depths, structure,
                         what, replacements, rows, tuple(per_element))


def _read_by_each_sentence(xs: list[Any], k: int, elements: list[list[Any]],
                           depths: list[int], symbols: tuple[str, ...],
                           leaves: list[Any], reads: dict[Array, tuple],
                           structure: Any, what: str) -> Any:
    """The map over *xs* (its FractalTensor of depth 3) whose results
    *leaves* are those of one map over its element's elements (a
    document's sentences: a row per sentence, or rows of its length) that
    captured the *reads* whole or arrays computed from them alone (each
    sentence attending to its document's question), rebuilt as that map
    over all sentences of all documents, each reading the list's element
    at its document's index (a read in a map over depth 2, which
    compiles), nested per document; None where the results or the map's
    captured arrays are otherwise."""
    from ftlazy.fractal import tree_unflatten
    from ftlazy.fractal_access import _host, getitem, read_replacements
    from ftlazy.fractal_element_views import _names_used
    from ftlazy.fractal_tensor import JaggedMap, _map_nesting, jagged_map
    from ftlazy.transform.jagged_element_reads import BodyReplay
    if depths[k] != 3:
        return None
    element, outer = elements[k], xs[k].offsets[0]
    results = [_sentence_map_result(leaf, element) for leaf in leaves]
    loops = {r.loop for r in results if r is not None}
    if len(loops) != 1 or None in results:
        return None
    loop = loops.pop()
    if not (isinstance(loop, JaggedMap) and len(loop.depths) == 1
            and not loop.counted
            and all(a is e for a, e in zip(loop.mapped_parts()[0][1],
                                           element))):
        return None
    # (what the map captured: outer arrays, or computed from the reads
    # alone, ys[i].T: computed again in the new map from its read)
    params = {id(p) for e in elements for p in e}
    read_nodes = set(reads) | set(_length_values(reads).values())
    for c in loop.captured:
        for n in topological_order([c], skip=read_nodes):
            if id(n) in params or _names_used(n) & set(symbols):
                return None
    values, offsets, index = next(iter(reads.values()))
    read_list = _read_list(xs, elements, depths, values, offsets, index, what)
    sentences = Jagged(xs[k].values, xs[k].offsets[1:])
    # (each sentence's element: the segment ids of the elements' offsets)
    owner = _host("segment_ids", outer, (sentences.length,))
    body = loop.body
    n_element = len(body.params) - len(loop.captured)

    def replayed(sentence: Array, j: Array) -> tuple:
        new_reads, read_renames = read_replacements(
            reads, getitem(read_list, j))
        captured = BodyReplay(new_reads, read_renames)
        replace: dict[Any, Any] = {body.params[0]: sentence}
        replace.update((p, captured(c)) for p, c in
                       zip(body.params[n_element:], loop.captured))
        replay = BodyReplay(replace, {loop.symbols[0][0]:
                                      sentence.shape[0].name, **read_renames})
        return tuple(replay(body.outputs[r.index]) for r in results)

    _map_nesting[0] += 1
    try:
        # (element i of the read list is element i's: each sentence's is
        # at its element's index)
        flat = jagged_map(replayed, sentences, owner, what=what)
    finally:
        _map_nesting[0] -= 1
    return tree_unflatten([Jagged(r.values, (outer,) + r.offsets)
                           if isinstance(r, Jagged) else Jagged(r, (outer,))
                           for r in flat], structure)


def _sentence_map_result(leaf: Any, element: list[Any]) -> Any:
    """The result of a map over the *element*'s elements that *leaf* is:
    itself (a row per element of the element), or the values of a
    FractalTensor over the element's own offsets (rows of each element's
    length); else None."""
    from ftlazy.array import IndexLambda
    from ftlazy.fractal import LoopResult
    from ftlazy.scalar_expr import index_var
    if isinstance(leaf, LoopResult):
        return leaf
    if not (isinstance(leaf, Jagged) and len(leaf.offsets) == 1
            and isinstance(leaf.values, LoopResult) and len(element) == 2):
        return None
    offsets = leaf.offsets[0]
    if offsets is element[1] or (
            isinstance(offsets, IndexLambda)
            and isinstance(offsets.expr, prim.Subscript)
            and offsets.expr.index == index_var(0)
            and offsets.bindings.get(offsets.expr.aggregate.name) is element[1]):
        return leaf.values
    return None
