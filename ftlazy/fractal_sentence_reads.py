# SPDX-License-Identifier: MIT
"""A document's sentence read at a fixed index inside a map over documents
(``ft.map(lambda doc: f(doc[0]), docs)``), rebuilt as a map over the
document's sentences and a gather, or as a gather of sentences and a map
over them.

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
sentences no document picks.

Where every result is computed from the sentence alone, its rows included
(``ft.map(lambda doc: ft.tanh(doc[k] @ W), docs)``, a FractalTensor of
the picked sentences' lengths), :func:`picked_sentence_result` picks the
sentences first: each document's position ``k`` is checked against its
number of sentences (``ft.gather(ft.arange(n), k)`` in a map over the
documents, so an :class:`IndexError` names it), added to the document's
first sentence, and ``ft.gather`` selects those sentences from the list of
all sentences; the body then runs as a map over them. Bodies that use the
sentence otherwise (its rows with the rest of the document, two sentences
in one node) keep the read.

.. autofunction:: sentence_reads_result
.. autofunction:: picked_sentence_result
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ftlazy import shapes as sh
from ftlazy.array import Array, SizeParam
from ftlazy.fractal import Body, BodyParam
from ftlazy.fractal_access import DerivedSize, element_read
from ftlazy.node import Node, iter_children, topological_order
from ftlazy.transform.jagged_element_reads import BodyReplay

__all__ = ["picked_sentence_result", "sentence_reads_result"]


def _names(n: Node) -> frozenset[str]:
    return sh.shape_size_param_names(getattr(n, "shape", ()))


def _read_dependencies(values: Node, offsets: Node, outputs: Any,
                       symbols: frozenset[str],
                       is_index: Callable[[Node], bool]) -> tuple | None:
    """The sentence reads of a map over documents (*values* and *offsets*:
    the document's parameters; *outputs*: the nodes its body returns) at an
    index that *is_index* accepts -> that index; the reads by their
    length's name; the body's nodes in order; per node, the reads it is
    computed from, and whether it also reads the document otherwise. None
    where there is no such read."""
    reads: dict[Array, Array] = {}
    order = topological_order(list(outputs))
    for n in order:
        found = element_read(n) if isinstance(n, Array) else None
        if (found is not None and found[0] is values and found[1] is offsets
                and is_index(found[2])):
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
    return reads, lengths, order, of_read, other


def _captured_param(index: Node) -> bool:
    return isinstance(index, BodyParam) and index.index >= 2


def _frontiers(body: Body, symbols: frozenset[str]
               ) -> tuple[dict[Array, Array], dict[Array, list[Array]]] | None:
    """The sentence reads of *body* at a captured index -> that index's
    parameter (see :func:`_read_dependencies`); and per read, the nodes
    computed from it alone, of a static shape, that the rest of the body
    reads. None where there is no such read, or the rest reads a read
    otherwise."""
    found = _read_dependencies(body.params[0], body.params[1], body.outputs,
                               symbols, _captured_param)
    if found is None:
        return None
    reads, lengths, order, of_read, other = found
    consumers: dict[Node, list[Node]] = {}
    for n in order:
        for c in iter_children(n):
            consumers.setdefault(c, []).append(n)
    frontiers: dict[Array, list[Array]] = {r: [] for r in reads}
    # (sizes computed in the body, doc[0][:2]'s: such a node has no static
    # shape either)
    local = {n.name for n in order if isinstance(n, DerivedSize)}
    for n in order:
        if len(of_read[n]) != 1 or other[n]:
            continue
        if not (n in body.outputs or any(
                other[c] or len(of_read[c]) > 1 for c in consumers.get(n, ()))):
            continue
        if not isinstance(n, Array) or _names(n) & (set(lengths) | symbols
                                                    | local):
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


def picked_sentence_result(docs: Any, values: Node, offsets: Node,
                           outputs: list[Any], symbols: tuple[str, ...],
                           structure: Any, what: str) -> Any:
    """The result of the map over the depth-3 FractalTensor *docs* whose
    results (the leaves of *structure*, all arrays, of the sentence's
    length or computed from it) are all computed from one sentence read at
    a fixed index alone, rebuilt as a map over the picked sentences (see
    the module docs); None where it does not apply.

    :arg values: the document's values in the body as it was traced.
    :arg offsets: the document's offsets in the body as it was traced.
    :arg outputs: the nodes the traced body returns; they read captured
        arrays themselves, and so may the index (not the document).
    """
    from ftlazy.fractal import gather, tree_unflatten
    from ftlazy.fractal_tensor import Jagged, jagged_map
    from ftlazy.ops import arange
    if not all(isinstance(o, Array) for o in outputs):
        return None
    doc_symbols = frozenset(symbols)

    def fixed_index(index: Node) -> bool:
        return not any(n is values or n is offsets or (
            isinstance(n, SizeParam) and n.name in doc_symbols)
            for n in topological_order([index]))

    found = _read_dependencies(values, offsets, outputs, doc_symbols,
                               fixed_index)
    if found is None:
        return None
    reads, _, _, of_read, other = found
    sources = {of_read[o] for o in outputs}
    if (len(sources) != 1 or any(other[o] for o in outputs)
            or len(next(iter(sources))) != 1):
        return None
    (read,) = next(iter(sources))
    index = reads[read]
    position = jagged_map(lambda doc: gather(arange(doc.length), index), docs,
                          what=what)
    sentences = Jagged(docs.values, (docs.offsets[1],))
    picked = gather(sentences, docs.offsets[0][:-1] + position)

    def per_sentence(s: Any) -> Any:
        replay = BodyReplay({read: s}, {read.shape[0].name: s.shape[0].name})
        return tree_unflatten([replay(o) for o in outputs], structure)

    return jagged_map(per_sentence, picked, what=what)
