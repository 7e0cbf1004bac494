# SPDX-License-Identifier: MIT
"""Another FractalTensor's element read in a map's body, as a zip.

FractalTensor's per-pair zip of two lists whose elements have different
lengths (a source and its target) is written as a map over one of them
zipped with the pair index, whose body reads the other's element at that
index::

    dec = ft.map(lambda y, i: f(y, enc[i]), trgs, ft.arange(n))

``enc[i]`` has a data-dependent length, defined in the body per element,
which a compiled program cannot compute. :func:`zip_element_reads` rewrites
such a map, before anything else is lowered, into a map that zips a list
of the read elements with its inputs: that list becomes one more mapped
input whose element length is a symbol of its own, ``M`` (the body's
``enc[i]`` is that input's element, and ``M`` replaces its length in every
shape of the body and of the loops nested in it).
:mod:`ftlazy.transform.jagged_lowering` then lowers it with the list's own
offsets: arrays of length ``M_i`` are packed along its rows, reductions
over them run over its own ranges, and axes of extent ``M_i`` are padded
to the longest.

One mechanism serves every index. The list is ``enc`` itself where the
index is the map's own (at run time ``enc`` must then have as many
elements as the map: :class:`ValueError` naming both); for any other index
computed in the body (a neighbour ``ft.maximum(i - 1, 0)``, a count of the
element's rows), it is ``ft.gather(enc, J)``, ``J`` the index computed by a
map over the same elements (run first on the device,
:mod:`ftlazy.target.loopy.jagged_first_phase`) and checked on the host: an
index out of range raises :class:`IndexError` as the reference does, before
any kernel reads.

A read is recognized when it is ``xs[j]`` as
:func:`~ftlazy.fractal_access.getitem` builds it
(:func:`~ftlazy.fractal_access.element_read`), ``xs`` a depth-2
FractalTensor the body closes over. Reads whose index is loop-invariant in
a loop nested in the body are built outside that loop when it is traced;
reads whose index changes with a nested loop's steps, and indices that
themselves read another element's size, stay as they are, and compiling
them is refused naming them.

.. autofunction:: zip_element_reads
"""

from __future__ import annotations

from typing import Any

import pymbolic.primitives as prim

from ftlazy.array import Array, IndexLambda, SizeParam
from ftlazy.fractal import Body, BodyParam, LoopResult
from ftlazy.fractal_access import (
    DerivedSize, HostIndexArray, element_read, element_read_length,
    elements_at)
from ftlazy.fractal_tensor import Jagged, JaggedMap
from ftlazy.node import Node, topological_order
from ftlazy.scalar_expr import TypeCast, index_var
from ftlazy.target.loopy.canonical import _rename_value, _RenameSizes
from ftlazy.transform.mappers import CopyMapper

__all__ = ["BodyReplay", "captured_element_reads", "zip_element_reads"]

#: a read FractalTensor: the body parameters of its values and offsets, and
#: the index node of a read at another index than the map's own (else None)
_Source = tuple[int, int, Any]


def _is_own_index(array: Array) -> bool:
    """Whether the mapped dense *array* is ``arange(n)``: element ``i`` is
    ``i`` (converted to its integer dtype)."""
    if not (isinstance(array, IndexLambda) and array.ndim == 1
            and array.dtype.kind in "iu"):
        return False
    expr = array.expr
    while isinstance(expr, TypeCast) and expr.dtype.kind in "iu":
        expr = expr.child
    return expr == index_var(0)


def _element_reads(jmap: JaggedMap) -> dict[Array, _Source]:
    """The reads in *jmap*'s body of an element of a FractalTensor it
    closes over: node -> the body parameters of its values and offsets, and
    its index node where that is not the map's own index (else None)."""
    params = jmap.body.params
    n_elements = len(jmap.depths)
    index_params = {params[k] for k, (depth, arrays)
                    in enumerate(jmap.mapped_parts())
                    if depth == 1 and _is_own_index(arrays[0])}
    return {node: (values.index, offsets.index,
                   None if index in index_params else index)
            for node, (values, offsets, index) in captured_element_reads(
                jmap.body, n_elements).items()}


def captured_element_reads(body: Body, first_captured: int
                           ) -> dict[Array, tuple[BodyParam, BodyParam, Array]]:
    """The reads in *body* (its top scope) of an element of a depth-2
    FractalTensor captured as parameters from *first_captured* on, at an
    index that reads no size or index array the body computes: node ->
    ``(values, offsets, index)``."""
    captured = set(body.params[first_captured:])
    reads = {}
    for node in topological_order(list(body.outputs)):
        found = element_read(node) if isinstance(node, Array) else None
        if found is None:
            continue
        values, offsets, index = found
        if values in captured and offsets in captured and not _reads_host_values(
                index):
            reads[node] = found
    return reads


def _reads_host_values(index: Array) -> bool:
    """Whether computing *index* needs a size or index array computed on
    the host in the body (an index read from another element)."""
    return any(isinstance(n, (DerivedSize, HostIndexArray))
               for n in topological_order([index]))


class _BodyRewriter(CopyMapper):
    """Copies a map's body with its element reads replaced by new element
    parameters, its captured parameters renumbered after them, and the
    reads' lengths renamed to the new element symbols (nested bodies
    too)."""

    def __init__(self, reads: dict[Array, BodyParam], shift: int,
                 first_captured: int, renames: dict[str, str]) -> None:
        super().__init__()
        self.reads = reads
        self.shift = shift
        self.first_captured = first_captured
        self.renames = renames
        self.expr_mapper = _RenameSizes(renames)
        self.top = True

    def _reset_for_body(self) -> None:
        super()._reset_for_body()
        self.top = False

    def map_body_param(self, expr: BodyParam) -> BodyParam:
        index = expr.index
        if self.top and index >= self.first_captured:
            index += self.shift
        return BodyParam(index, _rename_value(expr.shape, self.expr_mapper),
                         expr.dtype)

    def map_derived_size(self, expr: DerivedSize) -> Node:
        if expr.name in self.renames:
            return SizeParam(self.renames[expr.name])
        return self.map_node(expr)

    def map_size_param(self, expr: SizeParam) -> Node:
        return SizeParam(self.renames.get(expr.name, expr.name), tags=expr.tags,
                         axes=expr.axes)

    def map_node(self, expr: Node) -> Node:
        if self.top and expr in self.reads:
            return self.reads[expr]
        changes = self.mapped_fields(expr)
        skip = set(expr._child_fields) | set(expr._body_fields)
        for name in expr._init_fields:
            if name not in skip:
                old = getattr(expr, name)
                new = _rename_value(old, self.expr_mapper)
                if new is not old and new != old:
                    changes[name] = new
        return expr.copy(**changes) if changes else expr


class BodyReplay(_BodyRewriter):
    """A traced body's nodes rebuilt in a new trace (a rewrite that calls
    ``ft.map`` or ``ft.scan`` again with parts of an old body): the nodes
    and parameters of *replace* (its top scope) become their values (new
    traced arrays, or outer arrays), and the size parameters of *renames*
    (an old element length) the new names, nested bodies too."""

    def __init__(self, replace: dict[Node, Any],
                 renames: dict[str, str] | None = None) -> None:
        super().__init__({k: v for k, v in replace.items()
                          if not isinstance(k, BodyParam)}, 0, 0, renames or {})
        self.params = {k: v for k, v in replace.items()
                       if isinstance(k, BodyParam)}
        # (a replaced node is a leaf of the replay: what it was computed
        # from is not copied, as it may read the old parameters)
        self._cache.update(self.reads)

    def map_body_param(self, expr: BodyParam) -> Any:
        if self.top and expr in self.params:
            return self.params[expr]
        return super().map_body_param(expr)


def _zipped(jmap: JaggedMap, reads: dict[Array, _Source]) -> JaggedMap:
    """*jmap* with each FractalTensor whose element it reads zipped in as
    one more mapped input (see the module docs)."""
    parts = jmap.mapped_parts()
    n_elements = len(parts)
    n_mapped = sum(len(arrays) for _, arrays in parts)
    sources = list(dict.fromkeys(reads.values()))
    prefix = jmap.symbols[jmap.depths.index(2)][0].rsplit("_", 1)[0]
    symbols = [f"{prefix}_M{k}" for k in range(len(sources))]
    params = jmap.body.params
    new_params: dict[Array, BodyParam] = {}
    renames: dict[str, str] = {}
    lengths: dict[Array, Array] = {}
    for read, source in reads.items():
        k = sources.index(source)
        renames[read.shape[0].name] = symbols[k]
        new_params[read] = BodyParam(
            n_elements + k, (prim.Variable(symbols[k]),) + read.shape[1:],
            read.dtype)
        # (its length used as a value, ys[i].shape[0]: the new symbol)
        value = element_read_length(read)
        if value is not None:
            lengths[value] = SizeParam(symbols[k])
    rewriter = _BodyRewriter({**new_params, **lengths}, len(sources),
                             n_elements, renames)
    body_params = [rewriter(p) for p in params]
    body_params[n_elements:n_elements] = list(dict.fromkeys(new_params.values()))
    body = Body(tuple(body_params),
                tuple(rewriter(o) for o in jmap.body.outputs))

    def outer(param_index: int) -> Array:
        return jmap.inputs[n_mapped + param_index - n_elements]

    # (the indices of reads at other indices than the map's own, computed
    # by one map over the same elements)
    indices = [index for _, _, index in sources if index is not None]
    computed = dict(zip(indices, _over_elements(jmap, indices)))
    zipped = [a for values, offsets, index in sources
              for a in _read_list(outer(values), outer(offsets),
                                  computed.get(index))]
    return JaggedMap(
        body, jmap.inputs[:n_mapped] + tuple(zipped) + jmap.captured,
        jmap.depths + (2,) * len(sources),
        jmap.symbols + tuple((s,) for s in symbols), jmap.what, jmap.counted)


def _over_elements(jmap: JaggedMap, outputs: list[Array]) -> list[LoopResult]:
    """*outputs* (arrays of *jmap*'s body) computed by one map over the
    same elements. Each also binds (unread) the first element's length,
    so that the map reads the mapped offsets, which give the number of
    elements, even where an index reads no element (``perm[i]``)."""
    length = SizeParam(jmap.symbols[jmap.depths.index(2)][0])
    outputs = [IndexLambda(prim.Variable("_in0"), (), o.dtype,
                           {"_in0": o, "_ft_length": length})
               for o in outputs]
    loop = JaggedMap(Body(jmap.body.params, tuple(outputs)), jmap.inputs,
                     jmap.depths, jmap.symbols, jmap.what)
    return [LoopResult(loop, k) for k in range(len(outputs))]


def _read_list(values: Array, offsets: Array, indices: Array | None
               ) -> tuple[Array, Array]:
    """The values and offsets of the FractalTensor whose element ``i`` the
    body reads as element ``i`` of the map: the read FractalTensor itself
    at the map's own index (*indices* None), else its elements at
    *indices* (checked at run time: :class:`IndexError` as the reference
    raises it)."""
    if indices is None:
        return values, offsets
    picked = elements_at(Jagged(values, (offsets,)), indices)
    return picked.values, picked.offsets[0]


class _Zipper(CopyMapper):
    def map_jagged_map(self, expr: JaggedMap) -> Node:
        jmap = self.map_node(expr)
        if 3 in jmap.depths:
            return jmap
        reads = _element_reads(jmap)
        return _zipped(jmap, reads) if reads else jmap


def zip_element_reads(roots: dict[str, Any]) -> dict[str, Any]:
    """*roots* with every map over FractalTensors that reads another
    FractalTensor's element at its own index rewritten as a zip with it
    (see the module docs)."""
    zipper = _Zipper()
    return {name: zipper(a) for name, a in roots.items()}

