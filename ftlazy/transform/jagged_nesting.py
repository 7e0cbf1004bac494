# SPDX-License-Identifier: MIT
"""Maps over depth-3 FractalTensors, rewritten as maps over depth 2, for
:mod:`ftlazy.transform.jagged_lowering`.

A map over documents (a depth-3 FractalTensor: documents of sentences of
tokens) reads each document through two views:

* **its sentences.** A body that maps a function ``g`` over each
  document's sentences, then combines the per-sentence results with ``h``,
  is the same as

  1. one map of ``g`` over *all* sentences: the depth-2 FractalTensor
     ``(values, offsets1)`` of every document's sentences, whose dense
     results ``(num_sentences, ...)`` are
  2. regrouped by document with ``offsets0``, a depth-2 FractalTensor over
     which ``h`` is mapped, each element the ``(m, ...)`` per-sentence
     results of one document.

  A result of ``g`` whose length is affine in the sentence's (``s[1:]``,
  a scan over the sentence) returned by the body as it is (a
  FractalTensor result of the map, nested one level deeper) is the result
  of step 1 as it is: the packed rows of all sentences, in document order;
* **its tokens.** What reads neither the document's sentence structure
  (its rebased offsets, its number of sentences ``m``) nor maps over its
  sentences (leaf-wise operations, ``ft.flatten(doc)``) is a map over each
  document's tokens: the depth-2 FractalTensor ``(values,
  offsets1[offsets0])``. Per-sentence results with one row per token (a
  scan over each sentence) are aligned with the tokens: they are zipped
  into that map from step 1. A whole result computed so is a result of
  that map; a part of a result that also uses the sentence view (a sum
  over the tokens plus a sum over per-sentence results) is computed there
  with one row per document and zipped into the map of step 2.

Reads ``P[e]`` of a document's rebased sentence offsets ``P`` (``(m +
1,)``: ``ft.lengths(doc)``, the offsets of ``ft.join``) become reads of
its ends ``E = P[1:]``, one per sentence (``0 if e == 0 else E[e - 1]``):
``E`` over all documents is ``offsets1[j + 1] - offsets1[offsets0[d]]``
for sentence ``j`` of document ``d``, mapped along the per-sentence
results of step 2.

What reads the tokens together with the sentence structure in one node
(the tokens scaled by ``m``) is computed in the map of step 2, the
documents' tokens zipped in as an element of their own length ``T``
(offsets ``offsets1[offsets0]``). A per-sentence
result of ``c + a*L`` rows but not the sentence's (``s[1:]``, a scan over
it) gives each document ``c*m + a*T`` rows, starting at ``c*offsets0[d] +
a*offsets1[offsets0[d]]`` in the rows of all sentences: the map of step 2
captures those whole and maps the documents' first rows along (an extent
that mixes ``m`` and ``T`` gets offsets of its own in the lowering).

A map over sentences that captures per-document data computed in the body
(the document's mean token subtracted from each sentence, a context vector
from the sentences, a dense value zipped along) gets it as a mapped input
of step 1, one row per sentence: the data is computed for all documents
first (by the same rewrite, recursively), then read at each sentence's
document, whose index the host derives from ``offsets0`` (segment ids).
Per-sentence rows the document computes (``(m, ...)``, from an earlier
map over its sentences) zipped with its sentences are, over all
documents, the rows of all sentences in order: computed first the same
way, they are mapped along step 1.

A map over sentences that captures data of the document's sizes computed
from its tokens alone (the tokens themselves, ``tokens @ W``, their
transpose: each sentence attending to its whole document) computes it in
its body instead, from arrays of a row per token: the tokens, or what the
document computes from them (by a map over each document's tokens). Those
are zipped into step 1 as a FractalTensor over documents whose element
each sentence reads at its own document (``JaggedMap.element_index``:
offsets ``offsets1[offsets0]``, read at the sentence's segment id). A map
over the lists an earlier sentence map returned (one per sentence) maps
over that map's result over all sentences.

:func:`flatten_document_map` performs this rewrite on the map's body.
Zipped depth-3 FractalTensors are mapped together in each view; their
structure is checked at run time, level by level, as the reference
evaluator does. What the views do not express raises
:class:`NotImplementedError` naming it (``ft.evaluate_numpy`` evaluates
it): maps over sentences that capture data of the document's sizes that
reads its sentence structure, zipped with other data than the document's
sentences and per-sentence rows, or whose results have counted lengths;
sentence offsets read other than by index.

.. autofunction:: flatten_document_map
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pymbolic.primitives as prim

from ftlazy import shapes as sh
from ftlazy.array import Array, IndexLambda, SizeParam
from ftlazy.fractal import Body, BodyParam, LoopResult
from ftlazy.fractal_tensor import JaggedMap, segment_lengths
from ftlazy.node import Node, iter_children, topological_order
from ftlazy.scalar_expr import ExprIdentityMapper, index_var, linear_combination
from ftlazy.transform.lower import LOWERABLE, to_index_lambda
from ftlazy.transform.mappers import CopyMapper

__all__ = ["flatten_document_map"]


def _refuse(what: str) -> NotImplementedError:
    return NotImplementedError(
        f"compiling a map over a FractalTensor of depth 3 whose body {what} is "
        "not supported yet (bodies that read the document through maps over "
        "its sentences, its tokens, its number of sentences and its sentence "
        "offsets by index compile; ft.evaluate_numpy evaluates it)")


class _Rebuilder(CopyMapper):
    """Copies the body's nodes with some replaced (what they read is not
    visited); nested bodies (their own scopes) are kept as they are."""

    def __init__(self, replace: dict[Node, Array]) -> None:
        super().__init__()
        self._cache.update(replace)

    def map_body(self, body: Node) -> Node:
        return body


class _EndsReads(ExprIdentityMapper):
    """Rewrites reads ``P[e]`` of the bindings *names* (rebased sentence
    offsets, ``(m + 1,)``) as reads of their ends ``E = P[1:]``, ``(m,)``:
    ``0 if e == 0 else E[e - 1]``; another use of them is :attr:`opaque`."""

    def __init__(self, names: set[str]) -> None:
        self.names = names
        self.opaque = False

    def map_variable(self, expr: prim.Variable) -> Any:
        self.opaque = self.opaque or expr.name in self.names
        return expr

    def map_subscript(self, expr: prim.Subscript) -> Any:
        name = getattr(expr.aggregate, "name", None)
        if name not in self.names:
            return super().map_subscript(expr)
        if len(expr.index_tuple) != 1:
            self.opaque = True
            return expr
        e = self.rec(expr.index_tuple[0])
        # (the read is clamped too: loopy proves reads in bounds)
        last = prim.Max((e - np.int64(1), np.int64(0)))
        return prim.If(prim.Comparison(e, "==", 0), np.int64(0),
                       prim.Subscript(expr.aggregate, last))


class _OffsetsRewriter(_Rebuilder):
    """Copies the body's nodes (but those of *keep*) with the
    IndexLambdas that read rebased sentence offsets (*ends*: offsets
    parameter -> a stand-in for its ends) reading their ends instead."""

    def __init__(self, ends: dict[Node, Array], keep: Any) -> None:
        super().__init__({n: n for n in keep})
        self.ends = ends

    def __call__(self, root: Array) -> Any:
        if root in self.ends:       # (the offsets returned as they are)
            root = IndexLambda(prim.Variable("_in0")[index_var(0)], root.shape,
                               root.dtype, {"_in0": root})
        return super().__call__(root)

    def map_array(self, expr: Array) -> Node:
        if isinstance(expr, LOWERABLE) and any(
                c in self.ends for c in iter_children(expr)):
            # (a slice, a gather, ... of the offsets: as it reads them)
            return self.map_index_lambda(to_index_lambda(expr))
        return self.map_node(expr)

    def map_index_lambda(self, expr: IndexLambda) -> Node:
        names = {n for n, a in expr.bindings.items() if a in self.ends}
        if not names:
            return self.map_node(expr)
        reads = _EndsReads(names)
        new = reads(expr.expr)
        if reads.opaque:
            raise _refuse("reads the document's sentence offsets other than "
                          "by index (P[i])")
        return expr.copy(expr=new, bindings={
            n: self.ends[a] if n in names else self.rec(a)
            for n, a in expr.bindings.items()})


class _DocumentMap:
    """The parameters of a map over depth-3 FractalTensors *jmap*: which
    body parameters hold each document's values and rebased offsets."""

    def __init__(self, jmap: JaggedMap, host: Any = None) -> None:
        self.jmap = jmap
        self.host = host
        #: per-document data captured by maps over sentences -> its rows
        #: over all sentences
        self.sentence_rows: dict[Node, Array] = {}
        self.parts = jmap.mapped_parts()
        if any(d == 2 for d, _ in self.parts):
            raise _refuse("zips FractalTensors of depth 2")
        #: the body's first parameter of each mapped input
        self.first_param = []
        pos = 0
        for d, _ in self.parts:
            self.first_param.append(pos)
            pos += 2 if d == 3 else 1
        self.num_mapped_params = pos
        self.docs = [k for k, (d, _) in enumerate(self.parts) if d == 3]
        #: body parameter number -> mapped input, of the values and offsets
        self.values_params = {self.first_param[k]: k for k in self.docs}
        self.offsets_params = {self.first_param[k] + 1: k for k in self.docs}
        self.m, self.T = jmap.symbols[self.docs[0]]
        #: the outer array of each captured body parameter
        self.outer_input = {self.num_mapped_params + k: a
                            for k, a in enumerate(jmap.captured)}

    def views(self, outputs: list[Array], per_sentence: Any, sources: Any
              ) -> dict[Node, tuple[bool, bool]]:
        """For each node of the body's *outputs* (not entering the results
        *per_sentence* of maps over sentences): whether it reads the
        documents' sentence structure (their rebased offsets or their
        number of sentences, also through a map over their sentences), and
        whether it reads their tokens (their values or number of tokens,
        or the per-sentence results *sources*, one row per token)."""
        result: dict[Node, tuple[bool, bool]] = {
            node: (node not in sources, node.loop.is_jagged_output(node.index))
            for node in per_sentence}
        for node in topological_order(outputs, skip=per_sentence):
            sizes = _sizes(node)
            structure = self.m in sizes or (isinstance(node, BodyParam)
                                           and node.index in self.offsets_params)
            tokens = self.T in sizes or (isinstance(node, BodyParam)
                                         and node.index in self.values_params)
            for c in iter_children(node):
                structure = structure or result[c][0]
                tokens = tokens or result[c][1]
            result[node] = (structure, tokens)
        return result

    def rows_per_sentence(self, a: Array) -> Array:
        """The per-document array *a* that the body computes (no axis of the
        document's sizes), for each sentence of all documents its
        document's: ``(num_sentences, ...)``."""
        if a not in self.sentence_rows:
            if {self.m, self.T} & set().union(
                    *(sh.size_param_names(c) for c in a.shape)):
                raise _refuse(
                    "maps over sentences capturing data of the document's "
                    f"sizes (shape {sh.shape_str(a.shape)}; capture "
                    "per-document data with a static shape)")
            per_document = _flatten(self, [a])[0]
            rest = tuple(index_var(k) for k in range(1, a.ndim + 1))
            read = prim.Variable("_in0")[
                (prim.Variable("_seg")[index_var(0)],) + rest]
            self.sentence_rows[a] = IndexLambda(
                read, (self.num_sentences,) + a.shape, a.dtype,
                {"_in0": per_document, "_seg": self.sentence_documents(
                    "maps over sentences capturing per-document data")})
        return self.sentence_rows[a]

    def document_tokens(self, rows: Array) -> tuple[Array, Array]:
        """The values and offsets of the FractalTensor over documents whose
        element is *rows*, a row per token of the document: its tokens (the
        values parameter), or an array the body computes from them (by a
        map over each document's tokens)."""
        _, offsets0, offsets1 = self.parts[self.docs[0]][1]
        if isinstance(rows, BodyParam) and rows.index in self.values_params:
            values = self.parts[self.values_params[rows.index]][1][0]
        else:
            values = _flatten(self, [rows])[0]
        return values, _token_offsets(offsets0, offsets1)

    @property
    def num_sentences(self) -> Any:
        return sh.sub(self.parts[self.docs[0]][1][2].shape[0], 1)

    def sentence_documents(self, what: str) -> Array:
        """Each sentence's document ``(num_sentences,)``: segment ids of
        the documents' sentences, computed on the host (for *what*)."""
        if self.host is None:
            raise _refuse(f"{what} (without host derivations)")
        return self.host.segment_ids_for(self.parts[self.docs[0]][1][1], (0, 1))

    def sentence_ends(self) -> IndexLambda:
        """``P[j + 1]`` of each sentence ``j`` of all documents, ``P`` its
        document's rebased sentence offsets: ``(num_sentences,)``."""
        _, offsets0, offsets1 = self.parts[self.docs[0]][1]
        o0, o1 = prim.Variable("_off0"), prim.Variable("_off1")
        j = index_var(0)
        seg = prim.Variable("_seg")[j]
        return IndexLambda(o1[j + 1] - o1[o0[seg]], (self.num_sentences,),
                           np.dtype(np.int64), {
                               "_off0": offsets0, "_off1": offsets1,
                               "_seg": self.sentence_documents(
                                   "reads the rebased sentence offsets")})

    def rebuilt_map(self, outputs: list[Array], mapped: list[tuple],
                    captured: list[tuple[Array, Array]] = ()) -> JaggedMap:
        """A map of the body's *outputs* over *mapped* (per new mapped
        input: the body node it replaces, or None; its arrays, its depth,
        its symbols), then the old dense mapped inputs and captured
        arrays, then *captured* (the body node each replaces, the
        array)."""
        new_params: list[BodyParam] = []
        inputs: list[Array] = []
        depths: list[int] = []
        symbols: list[tuple[str, ...]] = []
        replace: dict[Node, Array] = {}

        def param(old: Array, arrays: tuple) -> None:
            new = BodyParam(len(new_params), old.shape, old.dtype)
            new_params.append(new)
            replace[old] = new
            inputs.extend(arrays)

        for old, arrays, depth, syms in mapped:
            if old is None:     # (an element the body does not read)
                old = BodyParam(-1, (prim.Variable(syms[0]),)
                                + arrays[0].shape[1:], arrays[0].dtype)
            param(old, arrays)
            depths.append(depth)
            symbols.append(syms)
        for k, (d, arrays) in enumerate(self.parts):
            if d == 1:
                param(BodyParam(self.first_param[k], arrays[0].shape[1:],
                                arrays[0].dtype), arrays)
                depths.append(1)
                symbols.append(())
        body = self.jmap.body
        for index in range(self.num_mapped_params, len(body.params)):
            param(body.params[index], (self.outer_input[index],))
        for old, array in captured:
            param(old, (array,))
        rebuild = _Rebuilder(replace)
        return JaggedMap(Body(tuple(new_params),
                              tuple(rebuild(o) for o in outputs)),
                         tuple(inputs), tuple(depths), tuple(symbols),
                         self.jmap.what)


def _token_offsets(offsets0: Array, offsets1: Array) -> IndexLambda:
    """``offsets1[offsets0]``: each document's first token."""
    read = prim.Variable("_in1")[prim.Variable("_in0")[index_var(0)]]
    return IndexLambda(read, offsets0.shape, np.dtype(np.int64),
                       {"_in0": offsets0, "_in1": offsets1})


def _token_map(doc: _DocumentMap, outputs: list[Array],
               sources: dict[Node, Array]) -> JaggedMap:
    """The map of *outputs* over each document's tokens, and over the
    per-sentence results *sources* of the sentence's length (body node ->
    its rows over all sentences), which are token-aligned."""
    mapped = []
    tokens = []
    for k in doc.docs:
        values, offsets0, offsets1 = doc.parts[k][1]
        tokens.append(_token_offsets(offsets0, offsets1))
        old = doc.jmap.body.params[doc.first_param[k]]
        mapped.append((old, (values, tokens[-1]), 2, (doc.T,)))
    mapped += [(old, (new, tokens[0]), 2, (doc.T,))
               for old, new in sources.items()]
    return doc.rebuilt_map(outputs, mapped)


def _token_pieces(doc: _DocumentMap, outputs: list[Array],
                  views: dict[Node, tuple[bool, bool]], per_sentence: Any
                  ) -> list[Array]:
    """The largest parts of *outputs* (which read the sentence structure)
    that read the documents' tokens but not their structure, and that have
    one row per document (no axis of the document's number of tokens): a
    map over the tokens computes them."""
    pieces: dict[Node, None] = {}
    for node in topological_order(outputs, skip=per_sentence):
        if not views[node][0]:
            continue
        for c in iter_children(node):
            if (views[c] == (False, True) and isinstance(c, Array)
                    and not any(doc.T in sh.size_param_names(x) for x in c.shape)):
                pieces[c] = None
    return list(pieces)


def _sentence_maps(doc: _DocumentMap, outputs: list[Array]
                   ) -> dict[Node, Array]:
    """Each map over the documents' sentences that *outputs* read, over
    all sentences of all documents: its results in the body -> theirs."""
    doc_params = set(doc.values_params) | set(doc.offsets_params)
    per_sentence: dict[Node, Array] = {}
    for inner in topological_order(outputs):
        if not isinstance(inner, JaggedMap) or not any(
                (isinstance(a, BodyParam) and a.index in doc_params)
                or _sentence_lists(a, per_sentence) is not None
                for a in inner.inputs):
            continue
        flat = _flat_sentence_map(doc, inner, per_sentence)
        for k in range(inner.num_outputs):
            per_sentence[LoopResult(inner, k)] = LoopResult(flat, k)
    return per_sentence


def _sentence_lists(values: Any, per_sentence: dict[Node, Array]
                    ) -> tuple[Array, Array] | None:
    """Where *values* is the packed result, a list per sentence, of a map
    over the document's sentences already over all sentences (in
    *per_sentence*): that result's values and offsets over all
    sentences."""
    flat = per_sentence.get(values)
    if flat is None or not values.loop.is_jagged_output(values.index):
        return None
    return flat, flat.loop.output_offsets(flat.index)


def _flat_sentence_map(doc: _DocumentMap, inner: JaggedMap,
                       per_sentence: dict[Node, Array]) -> JaggedMap:
    """The map over the sentences of the document, *inner*, over all
    sentences of all documents. What it captures from the document's
    computations (per-document data) is mapped along, one row per
    sentence."""
    inputs: list[Array] = []
    for depth, arrays in inner.mapped_parts():
        if depth == 1 and arrays[0].shape and sh.prove_equal(
                arrays[0].shape[0], prim.Variable(doc.m)):
            # (per-sentence data the document computes, one row per
            # sentence: its rows over all sentences, in order)
            inputs.append(_flatten(doc, [arrays[0]])[0])
            continue
        lists = (_sentence_lists(arrays[0], per_sentence) if depth == 2
                 else None)
        if lists is not None and arrays[1] == arrays[0].loop.output_offsets(
                arrays[0].index):
            # (the lists an earlier map over the sentences returned, one per
            # sentence: that map's result over all sentences)
            inputs += list(lists)
            continue
        if not (depth == 2 and all(isinstance(a, BodyParam) for a in arrays)
                and arrays[0].index in doc.values_params
                and arrays[1].index == arrays[0].index + 1):
            raise _refuse("maps over its document's sentences zipped with "
                          "other data than per-sentence rows")
        values, _, offsets1 = doc.parts[doc.values_params[arrays[0].index]][1]
        inputs += [values, offsets1]
    num_mapped = len(inner.depths)      # (one parameter per sentence)
    captured = list(zip(inner.body.params[num_mapped:], inner.captured))
    kept: list[tuple[BodyParam, Array]] = []
    along: list[tuple[BodyParam, Array]] = []
    #: captured data of the document's sizes, computed in the sentence
    #: map's body instead, from the document's token rows: those are
    #: zipped in as a FractalTensor over documents that each sentence
    #: reads at its own document (``JaggedMap.element_index``)
    computed: dict[BodyParam, Array] = {}
    tokens: dict[BodyParam, BodyParam] = {}     # doc values param -> stand-in
    outer: dict[BodyParam, BodyParam] = {}      # doc captured param -> stand-in
    for p, a in captured:
        if isinstance(a, BodyParam) and a.index >= doc.num_mapped_params:
            kept.append((p, doc.outer_input[a.index]))
        elif _reads_document(doc, a) and _document_sized(doc, a):
            for leaf in _token_leaves(doc, a):
                table = (outer if isinstance(leaf, BodyParam)
                         and leaf.index not in doc.values_params else tokens)
                table.setdefault(leaf, BodyParam(-1 - len(tokens) - len(outer),
                                                 leaf.shape, leaf.dtype))
            computed[p] = a
        elif _reads_document(doc, a):
            along.append((p, doc.rows_per_sentence(a)))
        else:
            kept.append((p, a))
    kept += [(stand_in, doc.outer_input[leaf.index])
             for leaf, stand_in in outer.items()]
    body = inner.body
    if along or computed:
        # (the mapped parameters come first: renumbered)
        order = (list(body.params[:num_mapped]) + list(tokens.values())
                 + [p for p, _ in along + kept])
        replace: dict[Node, Array] = {
            p: BodyParam(k, p.shape, p.dtype) for k, p in enumerate(order)}
        leaves = {leaf: replace[stand_in]
                  for leaf, stand_in in {**tokens, **outer}.items()}
        replace.update((p, _Rebuilder(dict(leaves))(a))
                       for p, a in computed.items())
        rebuild = _Rebuilder(replace)
        body = Body(tuple(replace[p] for p in order),
                    tuple(rebuild(o) for o in body.outputs))
    element_index: tuple = ()
    index_input: list[Array] = []
    if tokens:
        element_index = ((doc.T, len(inputs) + 2 * len(tokens) + len(along)
                          + len(kept)),)
        index_input = [doc.sentence_documents(
            "maps over sentences reading their document's tokens")]
    return JaggedMap(body, tuple(inputs)
                     + tuple(x for leaf in tokens
                             for x in doc.document_tokens(leaf))
                     + tuple(a for _, a in along + kept) + tuple(index_input),
                     inner.depths + (2,) * len(tokens) + (1,) * len(along),
                     inner.symbols + ((doc.T,),) * len(tokens)
                     + ((),) * len(along), inner.what,
                     element_index=element_index)


def _reads_document(doc: _DocumentMap, a: Array) -> bool:
    """Whether *a* reads the document: its parameters or sizes."""
    return any(isinstance(n, BodyParam) or (
        isinstance(n, SizeParam) and n.name in (doc.m, doc.T))
        for n in topological_order([a]))


def _document_sized(doc: _DocumentMap, a: Array) -> bool:
    """Whether *a* has an axis of the document's sizes."""
    return bool({doc.m, doc.T} & set().union(
        *(sh.size_param_names(c) for c in a.shape)))


def _token_leaves(doc: _DocumentMap, a: Array) -> list[Array]:
    """What *a* (of the document's sizes, to be computed per sentence)
    reads of the document: arrays of a row per token that read nothing of
    its sentence structure (its tokens, or computed from them: zipped in
    over all documents) and its captured arrays; refused where it reads
    the sentence structure or runs a loop."""
    leaves: dict[Array, None] = {}
    seen: set[Node] = set()
    stack: list[Node] = [a]
    while stack:
        n = stack.pop()
        if n in seen:
            continue
        seen.add(n)
        if _is_structure(doc, n):
            raise _refuse(
                "maps over sentences capturing data of the document's sizes "
                "that reads its sentence structure or runs a loop (shape "
                f"{sh.shape_str(a.shape)})")
        if isinstance(n, BodyParam):
            leaves[n] = None
        elif (isinstance(n, Array) and _token_rows(doc, n)
              and not _reads_structure(doc, n)):
            leaves[n] = None
        else:
            stack.extend(iter_children(n))
    return list(leaves)


def _token_rows(doc: _DocumentMap, a: Array) -> bool:
    """Whether *a* has a row per token of the document and no other axis
    of the document's sizes."""
    return (bool(a.shape) and sh.prove_equal(a.shape[0], prim.Variable(doc.T))
            and not any({doc.m, doc.T} & sh.size_param_names(c)
                        for c in a.shape[1:]))


def _is_structure(doc: _DocumentMap, n: Node) -> bool:
    """Whether *n* is the document's sentence structure (its sentence
    offsets or number of sentences) or a loop."""
    from ftlazy.fractal import Loop
    return (isinstance(n, (Loop, LoopResult))
            or (isinstance(n, BodyParam) and n.index in doc.offsets_params)
            or (isinstance(n, SizeParam) and n.name == doc.m))


def _reads_structure(doc: _DocumentMap, a: Array) -> bool:
    """Whether *a* reads the document's sentence structure or runs a
    loop."""
    return any(_is_structure(doc, n) for n in topological_order([a]))


def _document_rows(doc: _DocumentMap, outputs: list[Array], skip: Any,
                   per_sentence: dict[Node, Array], sources: Any
                   ) -> dict[Node, tuple[Array, list[tuple]]]:
    """Each per-sentence result that *outputs* read whose length per
    sentence is ``c + a*L`` but not the sentence's (``s[1:]``: ``L - 1``)
    -> its stand-in in *outputs* (each document's ``c*m + a*T`` rows, read
    from the rows of all sentences at the document's first row) and what
    the map over documents gets for it: ``(stand-in parameter, array,
    depth)`` (the rows of all sentences captured whole, the documents'
    first rows mapped along)."""
    read = {c for n in topological_order(outputs, skip=skip)
            for c in iter_children(n)
            if c in per_sentence and c not in sources
            and c.loop.is_jagged_output(c.index)}
    _, offsets0, offsets1 = doc.parts[doc.docs[0]][1]
    result: dict[Node, tuple[Array, list[tuple]]] = {}
    for k, old in enumerate(read):
        inner = old.loop
        form = sh.to_affine(inner.body.outputs[old.index].shape[0])
        if any(i == old.index for i, _, _ in inner.counted) or set(
                form.coeffs) - {inner.symbols[0][0]}:
            raise _refuse("combines per-sentence results of a length that is "
                          "not affine in the sentence's in the document")
        c, a = form.const, form.coeffs.get(inner.symbols[0][0], 0)
        o0, o1 = prim.Variable("_off0"), prim.Variable("_off1")
        first = o0[index_var(0)]
        starts = IndexLambda(linear_combination([(c, first), (a, o1[first])]),
                             (doc.jmap.length,), np.dtype(np.int64),
                             {"_off0": offsets0, "_off1": offsets1})
        rows = per_sentence[old]
        start_param = BodyParam(-1000 - 2 * k, (), starts.dtype)
        rows_param = BodyParam(-1001 - 2 * k, rows.shape, rows.dtype)
        rest = tuple(index_var(i) for i in range(1, old.ndim))
        chunk = IndexLambda(
            prim.Variable("_in0")[(prim.Variable("_start") + index_var(0),)
                                  + rest],
            old.shape, old.dtype, {"_in0": rows_param, "_start": start_param})
        result[old] = (chunk, [(start_param, starts, 1),
                               (rows_param, rows, 0)])
    return result


def _check_sentence_view(doc: _DocumentMap, outputs: list[Array],
                         skip: Any) -> None:
    """The documents are read by *outputs* only through maps over their
    sentences and their dense results, their ends and their tokens (but in
    the nodes of *skip*)."""
    for node in topological_order(outputs, skip=skip):
        if not isinstance(node, Array) or isinstance(node, BodyParam):
            continue
        if any(isinstance(c, BodyParam) and c.index in doc.offsets_params
               for c in iter_children(node)):
            raise _refuse("reads the document's sentence offsets other than "
                          f"by index, as ft.lengths and ft.join do "
                          f"({type(node).__name__})")
        if any(isinstance(c, LoopResult) and c in skip
               and c.loop.is_jagged_output(c.index) for c in iter_children(node)):
            raise _refuse("combines per-sentence results of another length "
                          "than the sentence's (s[1:]) in the document")


def _token_reads(doc: _DocumentMap, outputs: list[Array], skip: Any,
                 sources: dict[Node, Array]) -> dict[Node, Array]:
    """What *outputs* (but the nodes of *skip*) read of the documents'
    tokens: body node (a document's values, a per-sentence result of
    *sources*) -> its rows over all tokens; empty if they do not."""
    nodes = topological_order(outputs, skip=skip)
    read = {c for n in nodes for c in iter_children(n) if c in sources}
    read.update(n for n in nodes if isinstance(n, BodyParam)
                and n.index in doc.values_params)
    if not read and not any(doc.T in _sizes(n) for n in nodes):
        return {}
    values = {doc.jmap.body.params[p]: doc.parts[k][1][0]
              for p, k in doc.values_params.items()}
    result = {n: values[n] if n in values else sources[n] for n in read}
    # (the number of tokens read: a tokens element, read or not)
    return result or {None: values[doc.jmap.body.params[doc.first_param[
        doc.docs[0]]]]}


def _regrouped(doc: _DocumentMap, outputs: list[Array],
               per_sentence: dict[Node, Array], pieces: dict[Node, Array],
               ends: list[Array], tokens: dict[Any, Array],
               more: list[tuple]) -> JaggedMap:
    """The map of *outputs* over documents of the dense *per_sentence*
    results and of the sentence offsets' *ends* (stand-ins in *outputs*),
    zipped with the *pieces* the tokens give (body node -> its values
    ``(n, ...)``) and with the *tokens* the outputs read (body node -> its
    rows over all tokens: the documents' tokens are an element of their
    own length ``T``), and *more* (``(stand-in, array, depth)``: 1 mapped
    along, 0 captured)."""
    _, offsets0, offsets1 = doc.parts[doc.docs[0]][1]
    mapped = [(old, (new, offsets0), 2, (doc.m,))
              for old, new in per_sentence.items()
              if not old.loop.is_jagged_output(old.index)]
    if ends:
        # (zipped documents have equal offsets: the same ends)
        sentence_ends = doc.sentence_ends()
        mapped += [(e, (sentence_ends, offsets0), 2, (doc.m,)) for e in ends]
    if not mapped:
        # (the number of sentences is read, but no per-sentence result)
        mapped.append((None, (segment_lengths(offsets1), offsets0), 2, (doc.m,)))
    if tokens:
        first_tokens = _token_offsets(offsets0, offsets1)
        mapped += [(old, (new, first_tokens), 2, (doc.T,))
                   for old, new in tokens.items()]
    mapped += [(old, (new,), 1, ()) for old, new in pieces.items()]
    mapped += [(old, (new,), 1, ()) for old, new, depth in more if depth]
    return doc.rebuilt_map(outputs, mapped, [
        (old, new) for old, new, depth in more if not depth])


def flatten_document_map(jmap: JaggedMap, host: Any = None) -> list[Array]:
    """The results of *jmap* (a map over depth-3 FractalTensors, see the
    module docs) computed by maps over depth-2 FractalTensors only. Where
    *jmap* zips several inputs, a run-time check of their structure, level
    by level, is added to *host* (a
    :class:`~ftlazy.transform.jagged_lowering.HostDerivations`)."""
    doc = _DocumentMap(jmap, host)
    if host is not None and len(doc.parts) > 1:
        host.zipped.append((jmap.what,
                            tuple(tuple(doc.parts[k][1][1:]) for k in doc.docs),
                            tuple(a[0] for d, a in doc.parts if d == 1)))
    results = _flatten(doc, list(jmap.body.outputs))
    for k, r in enumerate(results):
        if not sh.shapes_equal(r.shape, jmap.output_shape(k)):
            raise _refuse(f"gives result {k} a shape that its view of the "
                          "document does not give")
    return results


def _flatten(doc: _DocumentMap, outputs: list[Array]) -> list[Array]:
    """The map of the body's *outputs* over the documents (see
    :func:`flatten_document_map`), by maps over depth 2."""
    # 1. the maps over sentences, over all sentences
    per_sentence = _sentence_maps(doc, outputs)
    # (their results of the sentence's length are token-aligned)
    sources = {old: new for old, new in per_sentence.items()
               if old.loop.is_jagged_output(old.index)
               and sh.prove_equal(old.shape[0], prim.Variable(doc.T))}
    views = doc.views(outputs, per_sentence, sources)
    results: list[Any] = [None] * len(outputs)
    for k, o in enumerate(outputs):
        if o in per_sentence and o.loop.is_jagged_output(o.index):
            # returned as it is: packed over all sentences in document
            # order, the map's result
            results[k] = per_sentence[o]
    tokens = [k for k, o in enumerate(outputs)
              if results[k] is None and not views[o][0]]
    sentences = [k for k, o in enumerate(outputs)
                 if results[k] is None and views[o][0]]
    pieces = _token_pieces(doc, [outputs[k] for k in sentences], views,
                           per_sentence)
    # 2. what reads the tokens, by a map over each document's tokens
    piece_values: dict[Node, Array] = {}
    if tokens or pieces:
        used = set(topological_order([outputs[k] for k in tokens] + pieces))
        token_map = _token_map(doc, [outputs[k] for k in tokens] + pieces,
                               {o: n for o, n in sources.items() if o in used})
        for j, k in enumerate(tokens):
            results[k] = LoopResult(token_map, j)
        piece_values = {p: LoopResult(token_map, len(tokens) + j)
                        for j, p in enumerate(pieces)}
    # 3. the rest, over documents of per-sentence results
    if sentences:
        skip = {**piece_values, **per_sentence}
        rest = [outputs[k] for k in sentences]
        # (the rebased sentence offsets, read by index: one end per sentence)
        read = set(topological_order(rest, skip=skip))
        ends = {p: BodyParam(-2 - k, (prim.Variable(doc.m),), p.dtype)
                for p in doc.jmap.body.params
                if p.index in doc.offsets_params and p in read
                for k in [doc.offsets_params[p.index]]}
        if ends:
            rewrite = _OffsetsRewriter(ends, skip)
            rest = [rewrite(o) for o in rest]
        # (per-sentence results of other lengths: each document's rows)
        chunks = _document_rows(doc, rest, skip, per_sentence, sources)
        if chunks:
            rewrite = _Rebuilder({**{n: n for n in skip},
                                  **{old: c for old, (c, _) in chunks.items()}})
            rest = [rewrite(o) for o in rest]
        _check_sentence_view(doc, rest, skip)
        regrouped = _regrouped(doc, rest, per_sentence, piece_values,
                               list(ends.values()),
                               _token_reads(doc, rest, skip, sources),
                               [m for _, more in chunks.values() for m in more])
        for j, k in enumerate(sentences):
            results[k] = LoopResult(regrouped, j)
    return results


def _sizes(node: Node) -> frozenset[str]:
    """The size parameters *node* has in its shape, or is."""
    if isinstance(node, SizeParam):
        return frozenset([node.name])
    if isinstance(node, Array):
        return frozenset().union(*(sh.size_param_names(c) for c in node.shape))
    return frozenset()
