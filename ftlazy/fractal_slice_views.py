# SPDX-License-Identifier: MIT
"""Slices of a map's element, and joins of them: views that a map's body
reads its element through, which
:func:`ftlazy.fractal_element_views.sliced_element_result` computes for
every element outside the map.

A view is a list of *pieces*, each a slice ``(start, stop, step)`` of the
element's list (Python ints, clamped per element as Python does): ``doc[1:]``
is one piece; ``ft.join(doc[:1], doc[2:])`` (every sentence but the
second) two; ``ft.join(doc, doc)`` two whole ones. :func:`ftlazy.fractal_access.getitem`
marks the parts of a slice of a traced element with :class:`ElementSlice`
(:func:`mark_element_slice`); :func:`ftlazy.fractal_access.join` builds a
join of two such views of one element as one selection of the element,
marked with the joined pieces (:func:`joined_element_slices`), whose
sizes are names, as a slice's are (a concatenation's would be sums).
:func:`element_views` finds the views of an element that a body's
results read, and :func:`element_slices` selects one from every element
of a FractalTensor.

.. autoclass:: ElementSlice
.. autofunction:: mark_element_slice
.. autofunction:: joined_element_slices
.. autofunction:: element_views
.. autofunction:: element_slices
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pymbolic.primitives as prim
from pymbolic.mapper import IdentityMapper
from pytools.tag import UniqueTag, tag_dataclass

from ftlazy.array import Array
from ftlazy.fractal_tensor import Jagged
from ftlazy.node import Node, iter_children
from ftlazy.scalar_expr import index_var

__all__ = ["ElementSlice", "element_slices", "element_views",
           "joined_element_slices", "mark_element_slice"]

_INT64 = np.dtype(np.int64)
#: a slice of a list: ``(start, stop, step)``
Piece = tuple[int | None, int | None, int]
#: the whole list
WHOLE: Piece = (None, None, 1)


@tag_dataclass
class ElementSlice(UniqueTag):
    """Marks a part of a view of a list traced in a loop body (see the
    module docs): the slices :attr:`pieces` of it, joined in order;
    :attr:`part` 0 its values, ``k + 1`` its offsets level ``k``."""

    pieces: tuple[Piece, ...]
    part: int


def _piece(index: slice) -> Piece:
    # (equal slices, written alike or not, are one view)
    return (None if index.start is None else int(index.start),
            None if index.stop is None else int(index.stop),
            1 if index.step is None else int(index.step))


def _marked(result: Jagged, pieces: tuple[Piece, ...]) -> Jagged:
    parts = [result.values, *result.offsets]
    marked = [p.tagged(ElementSlice(pieces, k)) for k, p in enumerate(parts)]
    return Jagged(marked[0], tuple(marked[1:]))


def _in_a_body(xs: Jagged) -> bool:
    """Whether *xs* is a traced element (its values a parameter of the body
    being traced) or a list in a body (a filter of the element, whose map
    is rebuilt over the filtered elements: there, it is the element)."""
    from ftlazy.fractal import BodyParam, _TraceParam
    from ftlazy.fractal_tensor import _map_nesting
    return isinstance(xs.values, (BodyParam, _TraceParam)) or bool(
        _map_nesting[0])


def mark_element_slice(xs: Jagged, index: slice, result: Jagged) -> Jagged:
    """*result*, the slice *index* of *xs*, with its parts marked
    :class:`ElementSlice` where *xs* is a list in a body (see
    :func:`_in_a_body`)."""
    return _marked(result, (_piece(index),)) if _in_a_body(xs) else result


def _sliced_source(node: Array) -> Array | None:
    """The array of the sliced FractalTensor that a part *node* of a view
    reads (its values or one offsets level; see
    :func:`ftlazy.fractal_access.getitem`)."""
    from ftlazy.fractal_access import HostIndexArray
    if isinstance(node, HostIndexArray):    # (offsets of a stepped slice)
        node = node.args[0]
    return getattr(node, "bindings", {}).get("_in0")


def _view_of(x: Any) -> tuple[Jagged, tuple[Piece, ...]] | None:
    """``(list, pieces)`` where *x* is a marked view of a list, or a list
    in a body itself (one whole piece); else None."""
    if not isinstance(x, Jagged):
        return None
    parts = [x.values, *x.offsets]
    tags = [next(iter(p.tags_of_type(ElementSlice)), None) for p in parts]
    if all(t is not None for t in tags) and len({t.pieces for t in tags}) == 1:
        sources = [_sliced_source(p) for p in parts]
        if any(s is None for s in sources):
            return None
        return Jagged(sources[0], tuple(sources[1:])), tags[0].pieces
    return (x, (WHOLE,)) if _in_a_body(x) else None


class _Int64Literals(IdentityMapper):
    # (a kernel that reads the view computes min(1, n) of an int64 size n:
    # OpenCL's min(int, long) is ambiguous)
    def map_constant(self, expr: Any) -> Any:
        if isinstance(expr, int) and not isinstance(expr, bool):
            return np.int64(expr)
        return expr


def _pieces_source(length: Any, j: Any, pieces: tuple[Piece, ...]
                   ) -> tuple[Any, Any]:
    """The number of entries of the view *pieces* of a list of *length*
    entries, and the entry of the list that its entry *j* is (expressions
    with int64 literals)."""
    from ftlazy.fractal_access import _slice_bounds
    bounds = [_slice_bounds(length, slice(*p)) for p in pieces]
    count = sum((c for _, c, _ in bounds[1:]), bounds[0][1])
    before = [0]
    for _, c, _ in bounds[:-1]:
        before.append(before[-1] + c)
    start, _, step = bounds[-1]
    source = start + step * (j - before[-1])
    for (start, _, step), first, end in zip(bounds[-2::-1], before[-2::-1],
                                            before[:0:-1]):
        source = prim.If(prim.Comparison(j, "<", end),
                         start + step * (j - first), source)
    typed = _Int64Literals()
    return typed(count), typed(source)


def joined_element_slices(xs: Any, ys: Any) -> Jagged | None:
    """``ft.join(xs, ys)`` where both are views of one list in a body (a
    traced element, or slices or joins of it): the list's entries of the
    joined pieces, selected as one view and marked (see the module docs);
    None for other joins."""
    from ftlazy.fractal_access import _lam, _select, derived_size
    first, second = _view_of(xs), _view_of(ys)
    if first is None or second is None:
        return None
    (source, a), (other, b) = first, second
    if not (source.depth >= 2 and len(source.offsets) == len(other.offsets)
            and source.values is other.values
            and all(o is p for o, p in zip(source.offsets, other.offsets))):
        return None
    if isinstance(source.length, int):
        return None     # (a list of a known length: joined as any list)
    pieces = a + b
    count, entry = _pieces_source(source.length, index_var(0), pieces)
    # (a name, as a slice's count is: the view's element gets its own)
    n = derived_size(_lam(count, (), _INT64, {}))
    return _marked(_select(source, _lam(entry, (n,), _INT64, {})), pieces)


def element_views(parts: list[Node], element: list[Any]
                  ) -> dict[tuple[Piece, ...], dict[Array, int]]:
    """The views of the traced *element* (its flat parameters) that the
    result *parts* read: each one's pieces -> its parts (by part number,
    see :class:`ElementSlice`), in the order first found."""
    found: dict[tuple[Piece, ...], dict[Array, int]] = {}
    stack, seen = list(parts), set()
    while stack:
        n = stack.pop()
        if n in seen:
            continue
        seen.add(n)
        tag = next(iter(n.tags_of_type(ElementSlice)), None) if isinstance(
            n, Array) else None
        if tag is not None and _sliced_source(n) is element[tag.part]:
            found.setdefault(tag.pieces, {})[n] = tag.part
            continue
        stack.extend(iter_children(n))
    return found


def element_slices(xs: Jagged, *indices: slice) -> Jagged:
    """Every element of the FractalTensor *xs* (depth ``>= 3``) sliced by
    each of *indices* (Python ints, clamped per element as Python does),
    the slices joined: a FractalTensor of the same depth."""
    from ftlazy.fractal_access import _entry, _host, _lam, _offsets_of, _select
    if xs.depth < 3:
        raise ValueError(f"element_slices needs a FractalTensor of depth >= 3, "
                         f"got {xs!r}")
    if not indices:
        raise ValueError("element_slices needs at least one slice")
    pieces = tuple(_piece(index) for index in indices)
    offsets = prim.Variable("_in0")

    def length(element: Any) -> Any:
        return offsets[element + 1] - offsets[element]

    p = index_var(0)
    count, _ = _pieces_source(length(p), 0, pieces)
    counts = _lam(count, (xs.length,), _INT64, {"_in0": xs.offsets[0]})
    new_offsets = _offsets_of(counts)
    total = _entry(new_offsets, xs.length)
    element = prim.Variable("_in1")[p]
    _, entry = _pieces_source(length(element),
                              p - prim.Variable("_in2")[element], pieces)
    source = _lam(offsets[element] + entry, (total,), _INT64,
                  {"_in0": xs.offsets[0],
                   "_in1": _host("segment_ids", new_offsets, (total,)),
                   "_in2": new_offsets})
    picked = _select(Jagged(xs.values, xs.offsets[1:]), source)
    return Jagged(picked.values, (new_offsets,) + picked.offsets)
