# SPDX-License-Identifier: MIT
"""A scan or fold over the sequences of a FractalTensor, inside the body of
a map or scan, split into a map over the sequences and a scan over its
results.

A hierarchical RNN encodes each sentence of a document, then runs a
recurrence over the sentence encodings: ``ft.map(lambda doc:
ft.fold(lambda h, s: cell(h, encode(s)), doc, h0), docs)``. The step reads
the sentence ``s`` (an array of its own length) only through
``encode(s)``, which does not use the carry. :func:`split_sequence_loop`
finds that part of the traced step (the nodes that read the element but
not the carry, up to where carry-dependent nodes read them) and rebuilds
the loop as ``ft.fold(lambda h, e: cell(h, e), ft.map(encode, doc), h0)``:
the encodings of all sentences are one map over a FractalTensor (run over
all sentences of all documents at once when compiled), and the loop that
remains scans rows of a static shape. Both evaluators give the same
values; only compiled programs depend on the split (a loop over a
document's sentences inside a map over documents is otherwise not
lowered, see :mod:`ftlazy.target.loopy.host_loops`).

The split applies where every part of the step that uses the carry has a
static shape and reads the element only through the carry-independent
part; otherwise the loop is kept as traced. The elements may be
sequences or documents (a fold over a book's documents inside a map over
books: the map over the documents is then one over depth 3). A loop over
a FractalTensor of depth 4 or more, which has no lowering of its own, is
split at the top level too (its map over the books then compiles through
:mod:`ftlazy.fractal_element_views`), and so is one whose step computes
sizes from the element (``ft.sum(s[:2], axis=0)``, a filter of its rows),
which the padded lowering of :mod:`ftlazy.transform.jagged_outer_scan`
does not take: such sizes count as the element's, so arrays of them stay
in the map.

.. autofunction:: split_sequence_loop
"""

from __future__ import annotations

from typing import Any

from ftlazy import shapes as sh
from ftlazy.array import Array, SizeParam
from ftlazy.fractal import Body, Loop
from ftlazy.node import Node, iter_children, topological_order

__all__ = ["split_sequence_loop"]


def _reads_symbols(n: Node, symbols: frozenset[str]) -> bool:
    """Whether node *n* (or, for a loop, a node of its body) has a size
    among *symbols* in its shape or is such a size parameter."""
    if isinstance(n, SizeParam) and n.name in symbols:
        return True
    if any(symbols & sh.size_param_names(c) for c in getattr(n, "shape", ())):
        return True
    if isinstance(n, Loop):
        return any(_reads_symbols(m, symbols)
                   for m in topological_order(list(n.body.outputs)))
    return False


def _carry_free_frontier(body: Body, num_carries: int, num_elements: int,
                         symbols: frozenset[str]) -> list[Array] | None:
    """The nodes of *body* that read the element (its parameters
    ``num_carries .. num_carries + num_elements``, or its sizes *symbols*)
    but not the carries, and that a node using the carries (or the body's
    result) reads; None where a node using the carries reads the element
    otherwise, or one of them has a shape of the element's sizes."""
    carries = {p for p in body.params[:num_carries]}
    elements = set(body.params[num_carries:num_carries + num_elements])
    order = topological_order(list(body.outputs))
    uses_carry: set[Node] = set()
    uses_element: set[Node] = set()
    for n in order:
        children = list(iter_children(n))
        if n in carries or any(c in uses_carry for c in children):
            uses_carry.add(n)
        if (n in elements or any(c in uses_element for c in children)
                or _reads_symbols(n, symbols)):
            uses_element.add(n)
    frontier: dict[Array, None] = {}
    for n in order:
        if n not in uses_carry:
            continue
        if _reads_symbols(n, symbols):
            return None
        for c in iter_children(n):
            if c in uses_element and c not in uses_carry:
                if not isinstance(c, Array):
                    return None
                frontier[c] = None
    for out in body.outputs:
        if out in uses_element and out not in uses_carry:
            frontier[out] = None
    if any(_reads_symbols(f, symbols) and not isinstance(f, SizeParam)
           for f in frontier):
        # (the element itself, or arrays of its length; the length alone,
        # c + s.shape[0], is a value per element)
        return None
    return list(frontier) or None


def _replayed(nodes: list[Array], given: dict[Node, Any]) -> list[Any]:
    """*nodes* of a traced body rebuilt with the nodes of *given* (its
    parameters, or parts of it) replaced by their values (new traced
    arrays, or outer arrays)."""
    from ftlazy.transform.jagged_element_reads import BodyReplay
    replay = BodyReplay(given)
    return [replay(n) for n in nodes]


def split_sequence_loop(body: Body, inits: list[Array], x_leaves: list[Any],
                        captured: list[Array], symbols: tuple[str, ...],
                        keep_all: bool, what: str) -> list[Any] | None:
    """The results (one per carry) of the loop over the elements of the
    FractalTensors and dense arrays *x_leaves* (depth 3, 2 or 1) whose
    step was traced as *body* (parameters: the carries, the flat
    parameters of each element of *x_leaves*, then one per array of
    *captured*), rebuilt as a map of the
    step's carry-independent part over the elements and a dense scan over
    its results (see the module docs); None where the step does not split.
    *what* (``"fold"``, ``"scan"``, ``"reduce"``) names the loop in
    messages."""
    from ftlazy.fractal import _scan_node
    from ftlazy.fractal_tensor import Jagged, jagged_map, jagged_parts
    nc = len(inits)
    ne = sum(x.depth - 1 if isinstance(x, Jagged) and x.depth >= 3 else 1
             for x in x_leaves)
    from ftlazy.fractal_tensor import sizes_per_element
    # (sizes computed from the element, s[:2]'s count, are the element's
    # sizes too: arrays of them stay in the map)
    symbols = frozenset(symbols) | sizes_per_element(body, frozenset(symbols))
    frontier = _carry_free_frontier(body, nc, ne, symbols)
    if frontier is None:
        return None
    outer = dict(zip(body.params[nc + ne:], captured))

    def per_element(*elements: Any) -> tuple:
        # (an element of a depth-3 FractalTensor: its values and offsets)
        params = [p for e in elements for p in jagged_parts(e)]
        return tuple(_replayed(frontier, {
            **outer, **dict(zip(body.params[nc:nc + ne], params))}))

    encoded = jagged_map(per_element, *x_leaves,
                         what=f"{what} over a FractalTensor")

    def step(carry: tuple, rows: tuple) -> tuple:
        return tuple(_replayed(list(body.outputs), {
            **outer, **dict(zip(body.params[:nc], carry)),
            **dict(zip(frontier, rows))}))

    return list(_scan_node(step, tuple(encoded), tuple(inits), keep_all, what))
