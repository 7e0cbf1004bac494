# SPDX-License-Identifier: MIT
"""Maps over depth-3 FractalTensors, rewritten as two maps over depth 2, for
:mod:`ftlazy.transform.jagged_lowering`.

A map over documents (a depth-3 FractalTensor: documents of sentences of
tokens) whose body maps a function ``g`` over each document's sentences,
then combines the per-sentence results with ``h``, is the same as

1. one map of ``g`` over *all* sentences: the depth-2 FractalTensor
   ``(values, offsets1)`` of every document's sentences, whose dense
   results ``(num_sentences, ...)`` are
2. regrouped by document with ``offsets0``, a depth-2 FractalTensor over
   which ``h`` is mapped, each element the ``(m, ...)`` per-sentence
   results of one document.

:func:`flatten_document_map` performs this rewrite on the map's body. It
applies when the document element is read only by maps over its sentences
whose results have a static shape and whose captured arrays do not depend
on the document (parameters of the map, or constants); anything else
raises :class:`NotImplementedError` naming what is not supported
(``ft.evaluate_numpy`` evaluates it).

.. autofunction:: flatten_document_map
"""

from __future__ import annotations


from ftlazy import shapes as sh
from ftlazy.array import Array, SizeParam
from ftlazy.fractal import Body, BodyParam, LoopResult
from ftlazy.fractal_tensor import JaggedMap
from ftlazy.node import Node, iter_children, topological_order
from ftlazy.transform.mappers import CopyMapper

__all__ = ["flatten_document_map"]


def _refuse(what: str) -> NotImplementedError:
    return NotImplementedError(
        f"compiling a map over a FractalTensor of depth 3 whose body {what} is "
        "not supported yet (only bodies that map over each document's "
        "sentences and combine the per-sentence results compile; "
        "ft.evaluate_numpy evaluates it)")


class _Rebuilder(CopyMapper):
    """Copies the body's nodes with some replaced; nested bodies (their own
    scopes) are kept as they are."""

    def __init__(self, replace: dict[Node, Array]) -> None:
        super().__init__()
        self.replace = replace

    def map_loop_result(self, expr: LoopResult) -> Node:
        if expr in self.replace:
            return self.replace[expr]
        return self.map_node(expr)

    def map_body_param(self, expr: BodyParam) -> Node:
        return self.replace.get(expr, expr)

    def map_body(self, body: Node) -> Node:
        return body


def flatten_document_map(jmap: JaggedMap) -> list[Array]:
    """The results of *jmap* (a map over depth-3 FractalTensors, see the
    module docs) computed by maps over depth-2 FractalTensors only."""
    parts = jmap.mapped_parts()
    if [d for d, _ in parts].count(3) != 1 or any(d == 2 for d, _ in parts):
        raise _refuse("zips several FractalTensors")
    body = jmap.body
    doc_index = next(k for k, (d, _) in enumerate(parts) if d == 3)
    # the body's parameter numbers of each mapped input
    first_param = []
    pos = 0
    for d, _ in parts:
        first_param.append(pos)
        pos += 2 if d == 3 else 1
    num_mapped_params = pos
    values, offsets0, offsets1 = parts[doc_index][1]
    doc_values = first_param[doc_index]
    doc_params = {doc_values, doc_values + 1}
    symbols = jmap.symbols[doc_index]        # (m, T)
    order = topological_order(list(body.outputs))
    nested: list[JaggedMap] = []
    for node in order:
        if isinstance(node, BodyParam) or not isinstance(node, Array):
            continue
        reads_doc = [c for c in iter_children(node)
                     if isinstance(c, BodyParam) and c.index in doc_params]
        if isinstance(node, LoopResult) and isinstance(node.loop, JaggedMap):
            continue
        if reads_doc:
            raise _refuse(f"reads the document directly ({type(node).__name__})")
        if isinstance(node, SizeParam) and node.name == symbols[1]:
            raise _refuse("uses the document's number of tokens")
    for node in order:
        if isinstance(node, JaggedMap) and any(
                isinstance(a, BodyParam) and a.index in doc_params
                for a in node.inputs):
            if not (len(node.depths) == 1 and node.depths[0] == 2
                    and isinstance(node.inputs[0], BodyParam)
                    and node.inputs[0].index == doc_values
                    and isinstance(node.inputs[1], BodyParam)
                    and node.inputs[1].index == doc_values + 1):
                raise _refuse("maps over its document zipped with other data")
            if any(node.is_jagged_output(k) for k in range(node.num_outputs)):
                raise _refuse("maps over sentences with results of the "
                              "sentence's length")
            nested.append(node)
    if not nested:
        raise _refuse("does not map over the document's sentences")

    # the outer array of each captured body parameter
    outer_input = {num_mapped_params + k: a for k, a in enumerate(jmap.captured)}
    # 1. each map over sentences, over all sentences of all documents
    sentence_results: dict[Node, Array] = {}
    for inner in nested:
        captured = []
        for a in inner.captured:
            if isinstance(a, BodyParam) and a.index >= num_mapped_params:
                captured.append(outer_input[a.index])
            elif isinstance(a, BodyParam) or _depends_on_params(a):
                raise _refuse("maps over sentences with data computed from the "
                              "document")
            else:
                captured.append(a)
        flat = JaggedMap(inner.body, (values, offsets1) + tuple(captured),
                         inner.depths, inner.symbols, inner.what)
        for k in range(inner.num_outputs):
            sentence_results[LoopResult(inner, k)] = LoopResult(flat, k)
    # 2. the rest of the body, over documents of per-sentence results
    new_params: list[BodyParam] = []
    inputs: list[Array] = []
    depths: list[int] = []
    new_symbols: list[tuple[str, ...]] = []
    replace: dict[Node, Array] = {}
    m = symbols[0]
    for old, result in sentence_results.items():
        param = BodyParam(len(new_params), old.shape, old.dtype)
        new_params.append(param)
        replace[old] = param
        inputs += [result, offsets0]
        depths.append(2)
        new_symbols.append((m,))
    for k, (d, arrays) in enumerate(parts):
        if d == 1:
            old = BodyParam(first_param[k], arrays[0].shape[1:], arrays[0].dtype)
            param = BodyParam(len(new_params), old.shape, old.dtype)
            new_params.append(param)
            replace[old] = param
            inputs.append(arrays[0])
            depths.append(1)
            new_symbols.append(())
    for index in range(num_mapped_params, len(body.params)):
        old = body.params[index]
        param = BodyParam(len(new_params), old.shape, old.dtype)
        new_params.append(param)
        replace[old] = param
        inputs.append(outer_input[index])
    rebuild = _Rebuilder(replace)
    outputs = tuple(rebuild(o) for o in body.outputs)
    regrouped = JaggedMap(Body(tuple(new_params), outputs), tuple(inputs),
                          tuple(depths), tuple(new_symbols), jmap.what)
    for k in range(regrouped.num_outputs):
        if not sh.shapes_equal(regrouped.output_shape(k), jmap.output_shape(k)):
            raise _refuse(f"gives result {k} a shape that depends on the "
                          "document's tokens")
    return [LoopResult(regrouped, k) for k in range(regrouped.num_outputs)]


def _depends_on_params(a: Array) -> bool:
    return any(isinstance(n, BodyParam) for n in topological_order([a]))
