# SPDX-License-Identifier: MIT
"""A document's sentence read at a fixed index inside a map over documents
(``ft.map(lambda doc: f(doc[0]), docs)``), rebuilt as a map over the
document's sentences and a gather.

``doc[k]`` has a length known only per document, defined in the map's body
from the document's offsets, which compiled programs do not lower (see
:mod:`ftlazy.target.loopy.host_loops`). Where the body uses the sentence
only through arrays of a static shape (``g(doc[k])``: its sum, its
encoding by an RNN), :func:`sentence_reads_result` rebuilds the map as
``ft.gather(ft.map(g, doc), k)``: ``g`` runs on every sentence of every
document (as maps over sentences compile) and each document picks its
``k``-th result, checked at run time (an :class:`IndexError` for a document
with too few sentences, as ``doc[k]`` raises; negative ``k`` counts from
the end). Both evaluators give the same values; it costs ``g`` on the
sentences no document picks. Bodies that use the sentence otherwise (its
rows in a result, with the rest of the document) keep the read.

.. autofunction:: sentence_reads_result
"""

from __future__ import annotations

from typing import Any

from ftlazy import shapes as sh
from ftlazy.array import Array
from ftlazy.fractal import Body, BodyParam
from ftlazy.fractal_access import DerivedSize, element_read
from ftlazy.node import Node, iter_children, topological_order
from ftlazy.transform.jagged_element_reads import BodyReplay

__all__ = ["sentence_reads_result"]


def _names(n: Node) -> set[str]:
    return {name for c in getattr(n, "shape", ()) for name in sh.size_param_names(c)}


def _frontiers(body: Body, symbols: frozenset[str]
               ) -> tuple[dict[Array, Array], dict[Array, list[Array]]] | None:
    """The sentence reads of *body* (a map over documents: parameters the
    document's values and offsets, then captured arrays) at a captured
    index -> that index's parameter; and per read, the nodes computed from
    it alone, of a static shape, that the rest of the body reads. None
    where there is no such read, or the rest reads a read otherwise."""
    values, offsets = body.params[0], body.params[1]
    reads: dict[Array, Array] = {}
    order = topological_order(list(body.outputs))
    for n in order:
        found = element_read(n) if isinstance(n, Array) else None
        if (found is not None and found[0] is values and found[1] is offsets
                and isinstance(found[2], BodyParam) and found[2].index >= 2):
            reads[n] = found[2]
    if not reads:
        return None
    lengths = {r.shape[0].name: r for r in reads}
    of_read: dict[Node, frozenset] = {}
    other: dict[Node, bool] = {}
    for n in order:
        if n in reads:
            of_read[n], other[n] = frozenset([n]), False
            continue
        if isinstance(n, DerivedSize) and n.name in lengths:
            # (the read's length: part of the read)
            of_read[n], other[n] = frozenset([lengths[n.name]]), False
            continue
        children = list(iter_children(n))
        of_read[n] = frozenset().union(
            *(of_read[c] for c in children),
            (lengths[name] for name in _names(n) if name in lengths))
        other[n] = (n is values or n is offsets or bool(_names(n) & symbols)
                    or any(other[c] for c in children))
    consumers: dict[Node, list[Node]] = {}
    for n in order:
        for c in iter_children(n):
            consumers.setdefault(c, []).append(n)
    frontiers: dict[Array, list[Array]] = {r: [] for r in reads}
    for n in order:
        if len(of_read[n]) != 1 or other[n]:
            continue
        if not (n in body.outputs or any(
                other[c] or len(of_read[c]) > 1 for c in consumers.get(n, ()))):
            continue
        if not isinstance(n, Array) or _names(n) & (set(lengths) | symbols):
            return None     # (the sentence's rows, or its length, read on)
        (read,) = of_read[n]
        frontiers[read].append(n)
    if not any(frontiers.values()):
        return None
    return reads, {r: f for r, f in frontiers.items() if f}


def sentence_reads_result(docs: Any, body: Body, captured: list[Array],
                          symbols: tuple[str, ...], structure: Any,
                          what: str) -> Any:
    """The result of the map over the depth-3 FractalTensor *docs* whose
    body (results the leaves of *structure*, all arrays) was traced as
    *body* with *captured* arrays and element sizes *symbols*, rebuilt as
    described in the module docs; None where it does not apply."""
    from ftlazy.fractal import tree_unflatten
    from ftlazy.fractal_tensor import jagged_map
    found = _frontiers(body, frozenset(symbols))
    if found is None:
        return None
    reads, frontiers = found
    outer = dict(zip(body.params[2:], captured))

    def per_document(doc: Any) -> Any:
        from ftlazy.fractal import gather
        picks: dict[Node, Any] = {}
        for read, frontier in frontiers.items():
            def per_sentence(s: Any, read: Any = read,
                             frontier: Any = frontier) -> tuple:
                replay = BodyReplay({read: s, **outer},
                                 {read.shape[0].name: s.shape[0].name})
                return tuple(replay(f) for f in frontier)
            encoded = jagged_map(per_sentence, doc, what=what)
            index = outer[reads[read]]
            picks.update((f, gather(e, index))
                         for f, e in zip(frontier, encoded))
        replay = BodyReplay({body.params[0]: doc.values,
                          body.params[1]: doc.offsets[0], **outer, **picks}, {})
        return tree_unflatten([replay(o) for o in body.outputs], structure)

    return jagged_map(per_document, docs, what=what)
