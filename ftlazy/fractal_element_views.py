# SPDX-License-Identifier: MIT
"""A map's element read through one view (a slice: ``ft.map(lambda doc:
f(doc[1:]), docs)``; a filter of its elements: ``f(ft.filter(p, doc))``;
its leaves: ``ft.map(lambda doc: ft.filter(p, doc.values), docs)``),
rebuilt as a map over the views, computed outside the map.

``doc[a:b]`` on a document in a map over documents has lengths known only
per document (its numbers of sentences and tokens, defined in the body
from the document's offsets), and lists counted from a whole document's
tokens have no lowering over depth 3; compiled programs run such maps on
the host (see :mod:`ftlazy.target.loopy.host_loops`). Where the body reads
the document through one slice alone, or one join of slices of it
(``ft.join(doc[:1], doc[2:])``, see :mod:`ftlazy.fractal_slice_views`),
:func:`sliced_element_result` slices every document outside the map first
(:func:`~ftlazy.fractal_slice_views.element_slices`: each document's slice
bounds from its length, the new offsets by a running sum, the picked
sentences by :func:`ftlazy.fractal_access.gather`'s selection) and maps
the body over the sliced documents. A filter of the document's
sentences, ``ft.filter(p, doc)``, is a view too:
:func:`filtered_element_result` runs ``p`` over all sentences of all
documents, filters them as one list, and gives each document those of its
range (:func:`element_filtered`); a predicate that captured arrays of a
static shape computed from the document (its mean token) gets them per
document first, a row per sentence; one that read the document's tokens
gets its mask computed per document, by a map over the documents. Views
chain: the map rebuilt over one
view replays the body, and takes a filter or slice of the view, replayed,
as its own view (``ft.filter(p, doc[1:])``, ``ft.filter(p, doc)[1:]``).
Where a body with counted
results reads only the document's leaves (``doc.values``, its number of
tokens), :func:`leaves_result` maps it over each document's leaves as one
list (:func:`element_leaves`, a FractalTensor of depth 2). Arrays of a
static shape that the body computes from the rest of the document (its
first sentence's encoding next to ``doc[1:]``, its sentence count) are
computed first by a map over the documents and zipped in, a row per
document. Maps over depth 4 (books of documents), which have no lowering
of their own, also take the leaves view whatever their results;
:func:`nested_map_result` maps a body that returns one map over its
element's elements (``ft.map(lambda book: ft.map(g, book), books)``) as
``g`` mapped over the elements of all elements, nested per element
(where ``g`` captured arrays of a static shape computed from the book, its
token sum, those per book first, a row per document:
:func:`_replayed_over_all`); and
:func:`inner_rows_result` a body that reads such maps' rows of a static
shape (a fold over a book's document encodings, which
:mod:`ftlazy.fractal_fold_split` makes of a fold over its documents) as
those maps over all documents, grouped per book into FractalTensors of
depth 2 over which the rest of the body is mapped (at depth 3 too, where
the body's results are lists counted from them: a filter of a document's
sentence encodings). The
rebuilt maps compile as maps of one depth less do, and both evaluators run
the rebuilt graph. Bodies that read the document otherwise (a shape of its
sizes next to the view, two different views) are left as they are.

.. autofunction:: element_filtered
.. autofunction:: element_leaves
.. autofunction:: sliced_element_result
.. autofunction:: filtered_element_result
.. autofunction:: leaves_result
.. autofunction:: nested_map_result
.. autofunction:: inner_rows_result
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pymbolic.primitives as prim

from ftlazy import shapes as sh
from ftlazy.array import Array, IndexLambda, SizeParam
from ftlazy.fractal_slice_views import element_slices, element_views
from ftlazy.fractal_tensor import Jagged, is_element, jagged_parts
from ftlazy.node import LeakedArrayError, Node, iter_children, topological_order
from ftlazy.scalar_expr import get_variable_names, index_var

__all__ = ["element_filtered", "element_leaves", "filtered_element_result",
           "inner_rows_result", "leaves_result", "nested_map_result",
           "sliced_element_result"]

_INT64 = np.dtype(np.int64)
#: the binding key prefix that keeps a size used by name reachable (see
#: :mod:`ftlazy.fractal_access`)
SIZE_BINDING = "_ft_size_"


def _element_params(params: Any, depths: list[int], k: int) -> list[Any]:
    """The flat parameters of input *k* among *params*, laid out as
    :func:`ftlazy.fractal_tensor.element_views` reads them (which cannot
    be called once the body is closed: it builds Jaggeds of them)."""
    pos = sum(d - 1 if d >= 3 else 1 for d in depths[:k])
    return list(params[pos:pos + (depths[k] - 1 if depths[k] >= 3 else 1)])


def _slices(parts: list[Array], element: list[Any],
            symbols: tuple[str, ...]) -> list[tuple]:
    """The slice views of the traced *element* (its flat parameters) that
    the result *parts* read (see
    :func:`.fractal_slice_views.element_views`): each one's pieces, its
    parts by part number, and the renames of its sizes to the element's
    *symbols* (those whose sizes are names)."""
    found = []
    for pieces, view_parts in element_views(parts, element).items():
        renames = _part_renames(view_parts, symbols)
        if renames is not None:
            found.append((pieces, view_parts, renames))
    return found


def _part_renames(view_parts: dict[Array, int], symbols: tuple[str, ...]
                  ) -> dict[str, str] | None:
    """The renames of the sizes of a view's parts (part 0 its values, ``k +
    1`` its offsets level ``k``) to the element's *symbols* (its offsets
    levels' counts, then its number of leaves): the view's element has
    them. None where a part's size is not a name."""
    renames = {}
    for n, part in view_parts.items():
        size = n.shape[0] if part == 0 else sh.sub(n.shape[0], 1)
        if not isinstance(size, prim.Variable):
            return None
        renames[size.name] = symbols[part - 1]
    return renames


class _Skipped:
    """The nodes that a walk over a body's results treats as the view: the
    *view* nodes, and the derived sizes named in *names* (its lengths)."""

    def __init__(self, view: set[Node], names: set[str]) -> None:
        from ftlazy.fractal_access import DerivedSize
        self.view, self.names, self.derived = view, names, DerivedSize

    def __contains__(self, n: Node) -> bool:
        return n in self.view or (isinstance(n, self.derived)
                                  and n.name in self.names)


def _frontier(parts: list[Node], view: set[Node], view_names: set[str],
              element: list[Any], symbols: set[str]) -> list[Array] | None:
    """The arrays of the body's results *parts* computed from its element
    (the flat parameters *element*, the sizes *symbols*) but not from the
    *view* (nodes, and the derived sizes *view_names*), that results or
    nodes computed from the view read: each document's title encoding next
    to its other sentences, its sentence count. None where the element is
    read otherwise: such an array of an element-dependent shape, or a node
    computed from the view whose own shape or expression uses the
    element's sizes."""
    skip = _Skipped(view, view_names)
    order = topological_order(parts, skip=skip)
    reads_view: dict[Node, bool] = {}
    reads_element: dict[Node, bool] = {}
    for n in order:
        children = list(iter_children(n))
        reads_view[n] = any(c in skip or reads_view[c] for c in children)
        reads_element[n] = (any(n is e for e in element)
                            or (isinstance(n, SizeParam) and n.name in symbols)
                            or any(c not in skip and reads_element[c]
                                   for c in children))
    # (sizes defined in the body: the element's, those computed from it)
    local = symbols | {n.name for n in order if reads_element[n]
                       and isinstance(n, skip.derived)}
    frontier: dict[Node, None] = {}
    for n in order:
        if reads_view[n]:
            if _names_used(n) & local:
                return None
            frontier.update((c, None) for c in iter_children(n)
                            if c not in skip and reads_element[c]
                            and not reads_view[c])
    frontier.update((p, None) for p in parts
                    if p not in skip and reads_element[p] and not reads_view[p])
    for n in frontier:
        if (not isinstance(n, Array) or isinstance(n, skip.derived)
                or any(n is e for e in element)
                or _names(n) & (local | view_names)):
            return None
    return list(frontier)


def _names(n: Node) -> frozenset[str]:
    return sh.shape_size_param_names(getattr(n, "shape", ()))


def _names_used(n: Node) -> set[str]:
    """The sizes *n* uses by name: in its shape, in its expression, and the
    size parameters it binds to keep them reachable (``_ft_size_<name>``).
    A size parameter bound as an operand (``x * doc.length``) is a value,
    which a frontier array can replace."""
    names = _names(n)
    if isinstance(n, IndexLambda):
        names |= get_variable_names(n.expr)
        names |= {key[len(SIZE_BINDING):] for key in n.bindings
                  if key.startswith(SIZE_BINDING)}
    return names


def element_leaves(xs: Jagged) -> Jagged:
    """The leaves of each element of the FractalTensor *xs* (depth ``>=
    3``) as one list: a FractalTensor of depth 2 over the same values."""
    from ftlazy.fractal_access import _lam
    if xs.depth < 3:
        raise ValueError(f"element_leaves needs a FractalTensor of depth >= 3, "
                         f"got {xs!r}")
    entry: Any = index_var(0)
    bindings = {}
    for level, offsets in enumerate(xs.offsets):
        name = f"_in{level}"
        entry = prim.Variable(name)[entry]
        bindings[name] = offsets
    return Jagged(xs.values, (_lam(entry, xs.offsets[0].shape, _INT64,
                                   bindings),))


def _single_element(params: Any, leaves: list[Any], depths: list[int]
                    ) -> tuple[int, list[Any], list[Node]] | None:
    """For a map over inputs of *depths* with one FractalTensor of depth
    ``>= 3`` (the others dense): its position, its element's flat
    parameters among *params*, and the arrays of the result *leaves*.
    None for other maps."""
    jagged = [k for k, d in enumerate(depths) if d >= 2]
    if len(jagged) != 1 or depths[jagged[0]] < 3:
        return None
    k = jagged[0]
    return k, _element_params(params, depths, k), _result_parts(leaves)


def _result_parts(leaves: list[Any]) -> list[Node]:
    return [a for leaf in leaves for a in jagged_parts(leaf)
            if isinstance(a, Node)]


def _computed_per_element(xs: list[Any], elements: list[list[Any]],
                          arrays: list[Array], what: str) -> tuple:
    """The *arrays* (of a static shape, computed in a map's body from its
    *elements*, the flat parameters of each input) computed by a new map
    over *xs*: a row per element each."""
    from ftlazy.fractal_tensor import jagged_map
    from ftlazy.transform.jagged_element_reads import BodyReplay

    def computed(*new: Any) -> tuple:
        replay = BodyReplay({old: part for olds, e in zip(elements, new)
                             for old, part in zip(olds, jagged_parts(e))})
        return tuple(replay(a) for a in arrays)

    return jagged_map(computed, *xs, what=what)


def _replayed_map(xs: list[Any], k: int, view: Jagged | Array | list,
                  params: Any, leaves: list[Any], depths: list[int],
                  structure: Any, what: str, replacements: Any,
                  frontier: list[Array], rows: tuple | None = None) -> Any:
    """The map over *xs* with input *k* replaced by *view* (or by the
    zipped views of a list), whose function replays the traced *leaves*
    (of *structure*) with the nodes and size names that
    ``replacements(*view_elements)`` gives (a dict of nodes and one of
    renames) and the other inputs' old parameters replaced by their new
    elements. The *frontier* arrays are zipped in, a row per element:
    *rows*, or where None computed first by a map over *xs* itself."""
    from ftlazy.fractal import tree_unflatten
    from ftlazy.fractal_tensor import jagged_map
    from ftlazy.ops import asarray
    from ftlazy.transform.jagged_element_reads import BodyReplay
    dense = [(old, j) for j in range(len(depths)) if j != k
             for old in _element_params(params, depths, j)]
    per_element = rows if rows is not None else _computed_per_element(
        xs, [_element_params(params, depths, j) for j in range(len(xs))],
        frontier, what) if frontier else ()

    views = view if isinstance(view, list) else [view]
    # (the new inputs: those before k, the views, those after k, the
    # frontier; new position of old input j)
    position = {j: j if j < k else j + len(views) - 1
                for j in range(len(xs)) if j != k}

    filters = _filters_of_views(leaves, _element_params(params, depths, k))

    def per_view(*elements: Any) -> Any:
        from ftlazy.fractal_access import traced_filters
        replace, renames = replacements(*elements[k:k + len(views)])
        replace.update((old, elements[position[j]]) for old, j in dense)
        replace.update(zip(frontier, elements[len(xs) + len(views) - 1:]))
        replay = BodyReplay(replace, renames)

        def leaf_of(leaf: Any) -> Any:
            if isinstance(leaf, Jagged):
                return Jagged(replay(leaf.values),
                              tuple(replay(o) for o in leaf.offsets))
            return replay(asarray(leaf))

        result = tree_unflatten([leaf_of(leaf) for leaf in leaves], structure)
        # (a filter of the view, replayed, is a filter of the new element:
        # the new map takes it as its own view)
        traced_filters.extend((pred, leaf_of(seq), leaf_of(kept), leaf_of(mask))
                              for pred, seq, kept, mask in filters)
        return result

    new_xs = list(xs[:k]) + views + list(xs[k + 1:])
    return jagged_map(per_view, *new_xs, *per_element, what=what)


def _filters_of_views(leaves: list[Any], element: list[Any]) -> list[tuple]:
    """The filters traced in the body (``(pred, seq, kept)``, see
    :data:`ftlazy.fractal_access.traced_filters`) that the result *leaves*
    read, of lists computed from the *element* (a slice of it, a filter of
    it), not of the element itself."""
    from ftlazy.fractal_access import traced_filters
    reached = _reached(_result_parts(leaves))
    return [entry for entry in traced_filters
            if not is_element(entry[1], element)
            and any(a in reached for a in jagged_parts(entry[2]))]


def sliced_element_result(xs: list[Any], params: Any, leaves: list[Any],
                          depths: list[int], symbols: tuple[str, ...],
                          structure: Any, what: str) -> Any:
    """The result of the map over *xs* (one FractalTensor of depth
    ``>= 3``, dense arrays besides) whose function, traced with the flat
    *params* and the element sizes *symbols*, returned *leaves* (of
    *structure*) that read its element through one slice alone, rebuilt as
    a map over the sliced elements (see the module docs); None where it
    does not apply."""
    single = _single_element(params, leaves, depths)
    if single is None:
        return None
    k, element, parts = single
    # (one view as the new map's element; what the body computes from the
    # others, in arrays of a static shape, by a map over the elements
    # first, whose body reads one view less)
    for pieces, view_parts, renames in _slices(parts, element, symbols):
        result = _element_view_result(
            xs, k, element, parts, view_parts, renames,
            lambda pieces=pieces: element_slices(
                xs[k], *(slice(*p) for p in pieces)),
            params, leaves, depths, symbols, structure, what)
        if result is not None:
            return result
    return None


def _element_view_result(xs: list[Any], k: int, element: list[Any],
                         parts: list[Node], view_parts: dict[Array, int],
                         renames: dict[str, str], view: Any, params: Any,
                         leaves: list[Any], depths: list[int],
                         symbols: tuple[str, ...], structure: Any,
                         what: str) -> Any:
    """The map over *xs* rebuilt over ``view()`` (a FractalTensor of the
    depth of input *k*, an element per element), where the traced result
    *parts* read the *element* through the nodes *view_parts* (by part
    number) of one view alone, whose sizes *renames* gives the element's
    names, and through arrays of a static shape computed from the rest of
    it (zipped in); None where they read it otherwise."""
    from ftlazy.fractal_access import _DERIVED
    # (the view's sizes computed with, as ``ft.maximum(doc[1:].length, 1)``
    # does: the view's element's, which has the same symbols)
    sizes = {derived.value: SizeParam(renames[name])
             for name in renames
             if (derived := _DERIVED.get(name)) is not None}
    frontier = _frontier(parts, set(view_parts) | set(sizes), set(renames),
                         element, set(symbols))
    if frontier is None:
        return None

    def replacements(viewed: Jagged) -> tuple[dict, dict]:
        new_parts = [viewed.values, *viewed.offsets]
        replace: dict[Node, Any] = {n: new_parts[part]
                                    for n, part in view_parts.items()}
        replace.update(sizes)
        return replace, renames

    return _replayed_map(xs, k, view(), params, leaves, depths, structure,
                         what, replacements, frontier)


def element_filtered(xs: Jagged, mask: Array) -> Jagged:
    """Every element of the FractalTensor *xs* (depth ``>= 3``) keeping
    its elements where *mask* (1-D bool, one entry per element of an
    element, all elements in order) holds: a FractalTensor of the same
    depth. The elements of all elements are filtered as one list, in
    order, and element ``i`` keeps those of its own range: its new offsets
    are the running count of kept entries at its old offsets."""
    from ftlazy.fractal_access import _kept, _lam
    if xs.depth < 3:
        raise ValueError(f"element_filtered needs a FractalTensor of depth "
                         f">= 3, got {xs!r}")
    kept, running = _kept(Jagged(xs.values, xs.offsets[1:]), mask)
    p = index_var(0)
    offsets = _lam(prim.Variable("_in0")[prim.Variable("_in1")[p]],
                   xs.offsets[0].shape, _INT64,
                   {"_in0": running, "_in1": xs.offsets[0]})
    return Jagged(kept.values, (offsets,) + kept.offsets)


def filtered_element_result(xs: list[Any], params: Any, leaves: list[Any],
                            depths: list[int], symbols: tuple[str, ...],
                            structure: Any, what: str) -> Any:
    """The result of the map over *xs* (as for
    :func:`sliced_element_result`) whose *leaves* read the element
    through one filter of it alone (``ft.filter(p, doc)``, kept sentences),
    rebuilt as a map over the filtered elements: ``p`` over the elements of
    all elements first (:func:`element_filtered`); None where it does not
    apply, or where ``p`` captures what the function computed from its
    element."""
    from ftlazy.fractal_access import traced_filters
    single = _single_element(params, leaves, depths)
    if single is None:
        return None
    k, element, parts = single
    reached = _reached(parts)
    filters = [(pred, kept, mask) for pred, seq, kept, mask in traced_filters
               if is_element(seq, element)
               and any(a in reached for a in jagged_parts(kept))]
    if len(filters) != 1:
        return None
    pred, kept, traced_mask = filters[0]
    view_parts = {a: part for part, a in enumerate(jagged_parts(kept))
                  if a in reached}
    renames = _part_renames(view_parts, symbols)
    if renames is None:
        return None
    mask = _called_again(pred, Jagged(xs[k].values, xs[k].offsets[1:]),
                         "filter")
    if mask is None:
        # (the predicate captured what the body computed from the element)
        mask = _mask_with_element_data(xs[k], traced_mask, element, symbols)
        if mask is None:
            return None
    return _element_view_result(
        xs, k, element, parts, view_parts, renames,
        lambda: element_filtered(xs[k], mask), params, leaves, depths,
        symbols, structure, what)


def _mask_with_element_data(xs: Jagged, traced_mask: Array,
                            element: list[Any], symbols: tuple[str, ...]
                            ) -> Array | None:
    """The mask of a filter of the *element* (traced as *traced_mask*, a
    map over the element's elements) whose predicate captured arrays the
    body computed from the element, over all elements of all elements of
    *xs*: where those are of a static shape, a map over all of them with
    those zipped in, a row each (:func:`_replayed_over_all`); where they
    are of the element's size (its tokens, ``s @ doc.values.T``), the
    mask computed per element by a map over *xs* (a map over each
    element's elements that reads the element, which compiles as any
    such), its values in order. None where neither builds."""
    masks = _replayed_over_all(xs, [traced_mask], element, symbols, "filter")
    if masks is not None:
        return masks[0]
    (per_element,) = _computed_per_element([xs], [element], [traced_mask],
                                           "filter")
    return per_element.values if isinstance(per_element, Jagged) else None


def _replayed_over_all(xs: Jagged, traced: list[Any], element: list[Any],
                       symbols: tuple[str, ...], what: str
                       ) -> list[Array] | None:
    """The results *traced* (dense results of one map over the *element*
    of a map over *xs*, traced in its body: a filter's predicate per
    sentence) over all elements of all elements of *xs*, where that map
    captured arrays of a static shape that the body computed from its
    element (each sentence compared with its document's mean token; each
    document scaled by its book's token sum): those arrays computed per
    element first, a row per element of an element by its element's index,
    zipped into a map over all elements of all elements that replays the
    map's body. None where the map captured arrays of the element's sizes,
    or the results are not such."""
    from ftlazy.fractal import LoopResult
    from ftlazy.fractal_access import _host, _rows
    from ftlazy.fractal_tensor import JaggedMap, _map_nesting, jagged_map
    from ftlazy.transform.jagged_element_reads import BodyReplay
    loops = {r.loop for r in traced if isinstance(r, LoopResult)}
    if len(loops) != 1 or len(traced) != sum(
            isinstance(r, LoopResult) for r in traced):
        return None
    loop = loops.pop()
    if not (isinstance(loop, JaggedMap) and len(loop.depths) == 1
            and not loop.counted):
        return None
    captured = list(loop.captured)
    found = _frontier(captured, set(), set(), element, set(symbols))
    if not found:
        return None
    per_element = [c for c in captured if c in set(found)]
    values = _computed_per_element([xs], [element], per_element, what)
    all_elements = Jagged(xs.values, xs.offsets[1:])
    # (each element of an element's element: the segment ids of the
    # elements' offsets, one per element of all elements)
    owner = _host("segment_ids", xs.offsets[0], (all_elements.length,))
    rows = {c: _rows(v, owner) for c, v in zip(per_element, values)}
    params = loop.body.params
    n_element = len(params) - len(captured)

    def replayed(e: Any, *zipped: Any) -> tuple:
        replace = dict(zip(params[:n_element], jagged_parts(e)))
        replace.update(
            (p, zipped[per_element.index(c)] if c in rows else c)
            for p, c in zip(params[n_element:], captured))
        new_symbols = (e.shape[0].name,) if isinstance(e, Array) else (
            *[sh.sub(o.shape[0], 1).name for o in e.offsets],
            e.values.shape[0].name)
        replay = BodyReplay(replace, dict(zip(loop.symbols[0], new_symbols)))
        return tuple(replay(loop.body.outputs[r.index]) for r in traced)

    _map_nesting[0] += 1
    try:
        return list(jagged_map(replayed, all_elements, *rows.values(),
                               what=what))
    finally:
        _map_nesting[0] -= 1


def _reached(parts: list[Node]) -> set[Node]:
    """The nodes *parts* are computed from, themselves included (loop
    bodies not entered)."""
    return set(topological_order(parts))


def leaves_result(xs: list[Any], params: Any, leaves: list[Any],
                  depths: list[int], symbols: tuple[str, ...],
                  structure: Any, what: str) -> Any:
    """The result of the map over *xs* (as for
    :func:`sliced_element_result`) whose *leaves* read the element only
    through its leaves (``doc.values``, and their number), rebuilt as a
    map over each element's leaves (see the module docs); None where it
    does not apply."""
    single = _single_element(params, leaves, depths)
    if single is None:
        return None
    k, element, parts = single
    # (the element's values, and its number of leaves, the last symbol)
    frontier = _frontier(parts, {element[0]}, set(), element[1:],
                         set(symbols[:-1]))
    if frontier is None:
        return None

    def replacements(tokens: Array) -> tuple[dict, dict]:
        return {element[0]: tokens}, {symbols[-1]: tokens.shape[0].name}

    return _replayed_map(xs, k, element_leaves(xs[k]), params, leaves,
                         depths, structure, what, replacements, frontier)


def _called_again(f: Any, elements: Jagged, what: str) -> Any:
    """``jagged_map(f, elements)`` for a function *f* that a map's body
    called over its own element, now called outside the body over the
    elements of all elements: at the body's nesting level, so that its
    element sizes have the names they had (a function that replays traced
    nodes keeps them); None where *f* captured what the body computed from
    its element."""
    from ftlazy.fractal_tensor import _map_nesting, jagged_map
    _map_nesting[0] += 1
    try:
        return jagged_map(f, elements, what=what)
    except LeakedArrayError:
        return None
    finally:
        _map_nesting[0] -= 1


def nested_map_result(xs: list[Any], params: Any, leaves: list[Any],
                      depths: list[int], symbols: tuple[str, ...],
                      structure: Any, what: str) -> Any:
    """The result of the map over *xs* (one FractalTensor of depth ``>=
    4`` alone) whose function returned results of one map over its
    element (``ft.map(lambda book: ft.map(g, book), books)``), rebuilt as
    that map over the elements of all elements, nested per element (the
    same values; where ``g`` captured arrays of a static shape computed
    from its element, those per element first, see
    :func:`_replayed_over_all`); None where it does not apply."""
    from ftlazy.fractal import tree_flatten, tree_unflatten
    from ftlazy.fractal_tensor import traced_maps
    if len(depths) != 1 or depths[0] < 4:
        return None
    element = _element_params(params, depths, 0)
    call = next((c for c in reversed(traced_maps)
                 if leaves and any(leaves[0] is r for r in c[3])), None)
    if call is None:
        return None
    inner_f, inner_xs, inner_what, inner_leaves = call
    if not (len(inner_xs) == 1 and isinstance(inner_xs[0], Jagged)
            and is_element(inner_xs[0], element)
            and all(any(leaf is r for r in inner_leaves) for leaf in leaves)):
        return None
    outer = xs[0].offsets[0]
    flat = _called_again(inner_f, Jagged(xs[0].values, xs[0].offsets[1:]),
                         inner_what)
    if flat is not None:
        flat_leaves = tree_flatten(flat, "map")[0]
    else:
        # (g captured what the function computed from its element: dense
        # results only)
        flat_leaves = _replayed_over_all(xs[0], list(inner_leaves), element,
                                         symbols, inner_what)
        if flat_leaves is None:
            return None

    def nested(leaf: Any) -> Jagged:
        r = flat_leaves[next(k for k, r in enumerate(inner_leaves)
                             if r is leaf)]
        return (Jagged(r.values, (outer,) + r.offsets)
                if isinstance(r, Jagged) else Jagged(r, (outer,)))

    return tree_unflatten([nested(leaf) for leaf in leaves], structure)


def inner_rows_result(xs: list[Any], params: Any, leaves: list[Any],
                      depths: list[int], symbols: tuple[str, ...],
                      structure: Any, what: str) -> Any:
    """The result of the map over *xs* (one FractalTensor of depth ``>=
    3`` alone) whose function reads its element through maps over the
    element's elements with results of a static shape per element, one
    row each (``ft.map(lambda book: ft.fold(step, ft.map(g, book), h),
    books)``, ``ft.map(lambda doc: ft.filter(p, ft.map(encode, doc)),
    docs)``), and through arrays of a static shape computed from the rest
    of it, rebuilt: each such map runs over the elements of all elements,
    its rows grouped per element into a FractalTensor of depth 2, and the
    function over those, zipped (see the module docs); None where it does
    not apply."""
    from ftlazy.fractal import tree_flatten
    from ftlazy.fractal_tensor import traced_maps
    if len(depths) != 1 or depths[0] < 3:
        return None
    element = _element_params(params, depths, 0)
    count = symbols[0]
    calls = [c for c in traced_maps
             if len(c[1]) == 1 and isinstance(c[1][0], Jagged)
             and is_element(c[1][0], element)]
    rows = [r for c in calls for r in c[3]]
    if not rows or not all(
            isinstance(r, Array) and r.shape[:1] == (prim.Variable(count),)
            and not sh.shape_size_param_names(r.shape[1:])
            for r in rows):
        return None
    parts = _result_parts(leaves)
    frontier = _frontier(parts, set(rows), {count}, element,
                         set(symbols) - {count})
    if frontier is None:
        return None
    outer = xs[0].offsets[0]
    all_elements = Jagged(xs[0].values, xs[0].offsets[1:])
    views = []
    for f, _, inner_what, _ in calls:
        flat = _called_again(f, all_elements, inner_what)
        if flat is None:
            return None
        views += [Jagged(r, (outer,)) for r in tree_flatten(flat, "map")[0]]
    if len(views) != len(rows):
        return None

    def replacements(*elements: Any) -> tuple[dict, dict]:
        return (dict(zip(rows, elements)),
                {count: elements[0].shape[0].name})

    return _replayed_map(xs, 0, views, params, leaves, depths, structure,
                         what, replacements, frontier)
