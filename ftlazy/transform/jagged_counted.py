# SPDX-License-Identifier: MIT
"""Map results whose length per element is computed in the body, as zips.

A map over a depth-2 FractalTensor whose body makes a list of a length
that is not affine in the element's sizes (``ft.filter`` of the element's
rows, ``ft.product`` of two zipped elements) defines that length per
element inside the body (a :class:`~ftlazy.fractal_access.DerivedSize`,
and for ``ft.filter`` host index arrays), which a compiled program cannot
compute. :func:`zip_counted_lists` rewrites such a map, before anything
else is lowered, in two phases:

1. per element, the list's length (a count) is computed over all elements
   at once: a map returning the count (its length is then ``offsets[n]``
   of their running sum; a count of the element's lengths alone, ``min(5,
   L)`` of ``s[:5]``, is an array over the lengths instead, which the host
   computes from the offsets, :func:`_from_lengths`), or for a selection
   (``segment_ids`` of the running sum of per-row lengths, as
   ``ft.filter`` builds it) a map returning the per-row lengths packed
   over all elements, whose global
   running sum ``G`` gives each element's offsets ``G[start_e]`` and the
   selected rows (the segment ids of ``G``, made relative to their
   element);
2. the list becomes one more mapped input of the map, a FractalTensor with
   those offsets whose element length is a symbol of its own, ``C``
   (``_C<k>``): the body's selected row indices are that element (for a
   plain count, an element of no data), ``C`` replaces the length in
   every shape, and :mod:`ftlazy.transform.jagged_lowering` lowers the map
   as a zip (packed along the new rows, reductions over their ranges).
   A returned list whose length is an expression of such sizes
   (``ft.concatenate([s[:2], s[-1:]])``: ``min(2, L) + min(1, L)``) is
   counted by its own list of no data, and its first axis relabelled to
   that list's length.

A count of another FractalTensor's element that the body reads at an
index (``ys[i][-2:]``, ``ys[i]`` returned, a fold whose carry has its
length) waits for that read to be zipped in
(:mod:`ftlazy.transform.jagged_element_reads`, done here where nothing
else can be zipped; the map's counted outputs stay counted), and is then
an expression of the zipped element's length.

Zipping a list can make another one zippable: a selection of selected
rows, a predicate or a count reading the selected rows, reads the zipped
list's element once the first selection is zipped, so the rewrite repeats
until no list is left (each round adds a map to phase 1). A count that
reads another size computed in the body from the element
(``ft.repeat(s, k)``, ``k`` an element of a zipped array) reads that size's
value; the number of rows a filter keeps (the last entry of a running sum
of the per-row lengths) is their sum. A size defined outside the body (a
size parameter, a captured 0-d array) is each element's count as the body
returns it.

At run time the maps of phase 1 run first, on the device
(:mod:`ftlazy.target.loopy.jagged_first_phase`), with the running sums of
their counts (or per-row lengths), the totals and the segment ids of the
zipped rows; the host reads back the totals, data-dependent sizes that
size the packed results; then the program runs phase 2, the rewritten
map. A map over documents (depth 3) whose body makes such lists of its
own lists (``ft.map(encode, d)[:2]``, ``ft.flatten(d)[-3:]``) is first
flattened into maps over depth 2
(:func:`~ftlazy.transform.jagged_nesting.flatten_document_map`), which are
then zipped; one that does not flatten, or whose lists no round can zip,
is left as it is (compiling it is refused naming it). A map over
documents that only maps over each document's sentences is built by
``ft.map`` as that sentence map over all sentences
(``fractal_tensor._sentence_map_result``), a map over depth 2.

.. autofunction:: zip_counted_lists
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import pymbolic.primitives as prim

from ftlazy import shapes as sh
from ftlazy.array import Array, IndexLambda, SizeParam
from ftlazy.fractal import Body, BodyParam, LoopResult
from ftlazy.fractal_access import (
    DERIVED_SIZE_PREFIX, DerivedSize, HostIndexArray, _offsets_of)
from ftlazy.fractal_tensor import JaggedMap, segment_lengths, sizes_per_element
from ftlazy.node import Node, topological_order
from ftlazy.scalar_expr import ExprIdentityMapper, get_variable_names, index_var
from ftlazy.target.loopy.canonical import _RenameSizes
from ftlazy.target.loopy.host_loops import describe_loop
from ftlazy.transform.jagged_element_reads import (
    _BodyRewriter, _element_reads, _zipped as _zipped_reads)
from ftlazy.transform.mappers import CopyMapper

__all__ = ["zip_counted_lists"]

_INT64 = np.dtype(np.int64)


def _host_nodes(roots: Any, kinds: Any = (DerivedSize, HostIndexArray)
                ) -> list[Node]:
    """The data-dependent sizes and host index arrays that *roots* read
    (not inside nested loop bodies)."""
    return [n for n in topological_order(list(roots)) if isinstance(n, kinds)]


def _over_elements(jmap: JaggedMap, *outputs: Array) -> list[LoopResult]:
    """*outputs* (arrays of *jmap*'s body, reading no host index array)
    computed by a map over the same elements."""
    loop = JaggedMap(Body(jmap.body.params, outputs), jmap.inputs,
                     jmap.depths, jmap.symbols, jmap.what)
    return [LoopResult(loop, k) for k in range(len(outputs))]


def _selections(body: Body, element_symbols: frozenset[str]
                ) -> list[HostIndexArray]:
    """The selections of *body*: segment ids of the running sum of per-row
    lengths whose number of rows is affine in the element's sizes."""
    found = []
    for n in topological_order(list(body.outputs)):
        if not (isinstance(n, HostIndexArray) and n.op == "segment_ids"):
            continue
        (offsets,) = n.args
        if not (isinstance(offsets, HostIndexArray) and offsets.op == "offsets"
                and isinstance(n.shape[0], prim.Variable)):
            continue
        (lengths,) = offsets.args
        if (lengths.ndim == 1 and not sh.size_param_names(lengths.shape[0])
                - element_symbols):
            found.append(n)
    return found


def _zip_selection(jmap: JaggedMap, selection: HostIndexArray, name: str
                   ) -> tuple[Array, Array, DerivedSize] | None:
    """The values and offsets of the FractalTensor whose element ``e`` is
    *selection* (the body's selected row indices) of element ``e``, and
    its total, the data-dependent size *name*; None where the per-row
    lengths read host index arrays."""
    (offsets,) = selection.args
    (lengths,) = offsets.args
    if _host_nodes([lengths]):
        return None
    packed, = _over_elements(jmap, lengths)
    starts = packed.loop.output_offsets(0)
    if packed.ndim == 2:
        # rows of an array of a static number of rows (a captured table):
        # the map stacks them, (n, R); their lengths in element order
        rows_each = packed.shape[1]
        i = index_var(0)
        packed = IndexLambda(
            prim.Variable("_in0")[prim.FloorDiv(i, rows_each),
                                  prim.Remainder(i, rows_each)],
            (sh.mul(packed.shape[0], rows_each),), packed.dtype,
            {"_in0": packed})
    every = _offsets_of(packed)
    total = DerivedSize(name, _last(every))
    rows = prim.Variable(name)
    kept = HostIndexArray("segment_ids", (every,), (rows,))
    elements = HostIndexArray("segment_ids", (starts,), packed.shape)
    q = prim.Variable("_in0")[index_var(0)]
    values = IndexLambda(
        q - prim.Variable("_in1")[prim.Variable("_in2")[q]], (rows,), _INT64,
        {"_in0": kept, "_in1": starts, "_in2": elements,
         f"_ft_size_{name}": total})
    new_offsets = IndexLambda(
        prim.Variable("_in0")[prim.Variable("_in1")[index_var(0)]],
        starts.shape, _INT64, {"_in0": every, "_in1": starts})
    return values, new_offsets, total


def _zip_count(jmap: JaggedMap, count: Array, name: str,
               local: set[str]) -> tuple[Array, Array, DerivedSize] | None:
    """The values (no data) and offsets of a FractalTensor whose element
    ``e`` has *count* (a 0-d array of the body) rows, and its total, the
    data-dependent size *name*; None where *count* reads host index
    arrays, or arrays of the sizes *local* the body computes (the rows a
    filter of ``s[:6]`` selects from: zipped in a later round)."""
    count = _Inline()(count)
    if _host_nodes([count]) or any(
            local & sh.shape_size_param_names(getattr(n, "shape", ()))
            for n in topological_order([count])):
        return None
    # (on the host: it derives the segment ids of the rows from them)
    counts = _from_lengths(jmap, count)
    if counts is None:
        counts = _over_elements(jmap, count)[0]
    offsets = _offsets_of(counts, describe_loop(jmap))
    total = DerivedSize(name, _last(offsets))
    values = IndexLambda(0, (prim.Variable(name),), np.dtype(np.int8),
                         {f"_ft_size_{name}": total})
    return values, offsets, total


def _from_lengths(jmap: JaggedMap, count: Array) -> Array | None:
    """*count* (a 0-d array of *jmap*'s body, inlined) for every element at
    once, an array ``(n,)`` over the lengths of the mapped FractalTensors,
    where it reads nothing of the element but its lengths (``min(5, L)``
    of ``s[:5]``): the host computes it from the offsets, with no first
    phase on the device. None where it reads anything else."""
    lengths: dict[str, Array] = {}
    n_elements = None
    for (depth, arrays), symbols in zip(jmap.mapped_parts(), jmap.symbols):
        if depth == 2:
            lengths[symbols[0]] = segment_lengths(arrays[1])
            n_elements = lengths[symbols[0]].shape[0]
    converted: dict[Array, tuple[Array, bool]] = {}
    for a in topological_order([count]):
        if isinstance(a, SizeParam):
            converted[a] = ((lengths[a.name], True) if a.name in lengths
                            else (a, False))
            continue
        if not (isinstance(a, IndexLambda) and a.ndim == 0):
            return None
        bindings, per_element = {}, set()
        for key, b in a.bindings.items():
            if isinstance(b, SizeParam) and b.name in lengths:
                continue    # (a length the expression names: below)
            bindings[key], along = converted[b]
            if along:
                per_element.add(key)
        renames = {}
        for k, name in enumerate(sorted(get_variable_names(a.expr)
                                        & set(lengths))):
            key = f"_ft_len{k}"
            bindings[key] = lengths[name]
            per_element.add(key)
            renames[name] = key
        if not per_element:
            converted[a] = (a, False)
            continue
        expr = _PerElement(per_element, renames)(a.expr)
        converted[a] = (IndexLambda(expr, (n_elements,), a.dtype, bindings),
                        True)
    result, along = converted[count]
    return result if along else None


class _PerElement(ExprIdentityMapper):
    """A 0-d array's expression read at element ``_0``: its per-element
    bindings *along* and the lengths (*renames*: size name -> binding)."""

    def __init__(self, along: set[str], renames: dict[str, str]) -> None:
        super().__init__()
        self.along = along
        self.renames = renames

    def map_variable(self, expr: prim.Variable) -> Any:
        name = self.renames.get(expr.name, expr.name)
        if name in self.along:
            return prim.Variable(name)[index_var(0)]
        return expr

    def map_subscript(self, expr: prim.Subscript) -> Any:
        if (isinstance(expr.aggregate, prim.Variable)
                and expr.aggregate.name in self.along
                and expr.index_tuple == ()):
            return expr.aggregate[index_var(0)]
        return super().map_subscript(expr)


class _Inline(CopyMapper):
    """Expressions reading a data-dependent size read its value instead (a
    0-d array bound under the size's binding name), and the total of a
    running sum of lengths is their sum, so that a count that depends on
    one (``ft.repeat(s, c)`` for a 0-d array ``c`` of the element, or for
    the number of rows an ``ft.filter`` keeps) is an array expression over
    the elements."""

    def map_index_lambda(self, expr: IndexLambda) -> Node:
        offsets = last_entry_of(expr)
        if offsets is not None:
            from ftlazy.ops import sum as total
            return total(self.rec(offsets.args[0]))
        renames, bindings = {}, {}
        for key, a in expr.bindings.items():
            if isinstance(a, DerivedSize) and key == f"_ft_size_{a.name}":
                renames[a.name] = key
                a = a.value
            bindings[key] = self.rec(a)
        if not renames:
            return self.map_node(expr)
        return expr.copy(expr=_RenameSizes(renames)(expr.expr),
                         bindings=bindings)


def _last(array: Array) -> IndexLambda:
    """The last entry of the 1-D int64 *array*, 0-d."""
    last = sh.to_affine(sh.sub(array.shape[0], 1)).to_expr()
    return IndexLambda(prim.Variable("_in0")[last], (), _INT64,
                       {"_in0": array})


def last_entry_of(value: Array) -> HostIndexArray | None:
    """The ``offsets`` host index array whose last entry (the total of its
    lengths) the 0-d *value* is, else None."""
    if not (isinstance(value, IndexLambda) and value.ndim == 0
            and isinstance(value.expr, prim.Subscript)
            and isinstance(value.expr.aggregate, prim.Variable)):
        return None
    offsets = value.bindings.get(value.expr.aggregate.name)
    # (the other bindings name the sizes the index reads)
    if not (isinstance(offsets, HostIndexArray) and offsets.op == "offsets"
            and all(k.startswith("_ft_size_") for k in value.bindings
                    if k != value.expr.aggregate.name)):
        return None
    last = sh.sub(offsets.shape[0], 1)
    index = sh.normalize_component(value.expr.index)
    return offsets if sh.prove_equal(index, last) else None


_NAMES = itertools.count()


def _counted_sizes(jmap: JaggedMap) -> dict[str, tuple[int, str]]:
    """Each size of *jmap*'s counted outputs -> its count output and the
    name of its total. A total whose outputs all have a length that is an
    expression of sizes (``s[:5][1:]``: ``_ft_dyn0 - 1``), or a size from
    outside the body, is keyed by its own name: the list zipped for it is their count, and they are
    relabelled to its length (:func:`_relabel`)."""
    counted: dict[str, tuple[int, str]] = {}
    # (a size from outside the body, ys_nnz of a captured list returned
    # whole, also shapes the captured arrays: not renamed, relabelled)
    local = {n.name for n in _host_nodes(jmap.body.outputs, (DerivedSize,))}
    for k, count, name in jmap.counted:
        c = jmap.body.outputs[k].shape[0]
        if isinstance(c, prim.Variable) and c.name in local:
            counted.setdefault(c.name, (count, name))
    named = {name for _, name in counted.values()}
    for k, count, name in jmap.counted:
        if name not in named:
            named.add(name)
            counted[name] = (count, name)
    return counted


def _relabel(a: Array, length: str) -> Array:
    """*a* with its first axis called *length* (equal at run time: the
    count zipped for it is *a*'s length per element)."""
    own = tuple(index_var(k) for k in range(a.ndim))
    return IndexLambda(prim.Variable("_in0")[own],
                       (prim.Variable(length),) + a.shape[1:], a.dtype,
                       {"_in0": a})


def _zips(jmap: JaggedMap) -> dict[str, tuple]:
    """Body-local size name -> ``(values, offsets, total, replaced)`` of
    the FractalTensor zipped in for it (*replaced*: the body node its
    element replaces, or None), for each list of *jmap* whose length is
    computed in the body and that can be zipped now (a selection of
    selected rows once the first selection is zipped)."""
    symbols = frozenset(s for g in jmap.symbols for s in g)
    counted = _counted_sizes(jmap)
    sizes = _host_nodes(jmap.body.outputs, (DerivedSize,))
    per_element = sizes_per_element(jmap.body, symbols)
    zips: dict[str, tuple] = {}
    for selection in _selections(jmap.body, symbols):
        size = selection.shape[0].name
        if size in zips:
            continue  # (two selections of one size: the second stays)
        name = counted.get(size, (0, f"{DERIVED_SIZE_PREFIX}sel{next(_NAMES)}"))[1]
        made = _zip_selection(jmap, selection, name)
        if made is not None:
            zips[size] = made + (selection,)
    # (a selection's total is zipped with its selection, in a later round
    # where the rows it selects from are a count zipped in this one: a
    # filter of s[:5])
    totals = {size.name for size in sizes
              if last_entry_of(size.value) is not None}
    for size in sizes:
        if (size.name in per_element and size.name not in zips
                and size.name not in {*counted, *totals}):
            # (a length the body only reads, x[:5] of the element: a list
            # of no data whose element has that many rows)
            made = _zip_count(jmap, size.value,
                              f"{DERIVED_SIZE_PREFIX}cnt{next(_NAMES)}",
                              per_element)
            if made is not None:
                zips[size.name] = made + (None,)
    deferred = totals if zips else set()
    for size, (count, name) in counted.items():
        if size not in zips and size not in deferred:
            # (the body's count output: the size's value, or a size
            # defined outside the body, the same for every element)
            made = _zip_count(jmap, jmap.body.outputs[count], name,
                              per_element)
            if made is not None:
                zips[size] = made + (None,)
    return zips


def _zipped(jmap: JaggedMap, zips: dict[str, tuple]) -> JaggedMap:
    """*jmap* with the lists of *zips* zipped in (see the module docs); its
    other counted outputs stay counted."""
    n_elements = len(jmap.depths)
    n_mapped = sum(len(arrays) for _, arrays in jmap.mapped_parts())
    prefix = jmap.symbols[jmap.depths.index(2)][0].rsplit("_", 1)[0]
    sizes = list(zips)
    # (numbered after the symbols of lists zipped in before)
    renames = {size: f"{prefix}_C{n_elements + k}"
               for k, size in enumerate(sizes)}
    new_params = [BodyParam(n_elements + k, (prim.Variable(renames[s]),),
                            zips[s][0].dtype) for k, s in enumerate(sizes)]
    replaced = {zips[s][3]: p for s, p in zip(sizes, new_params)
                if zips[s][3] is not None}
    rewriter = _BodyRewriter(replaced, len(sizes), n_elements, renames)
    body_params = [rewriter(p) for p in jmap.body.params]
    body_params[n_elements:n_elements] = new_params
    outputs = [rewriter(o) for o in jmap.body.outputs]
    # (counted outputs of an expression of sizes: that many rows of the
    # list zipped for their total)
    symbol_of_total = {zips[s][2].name: renames[s] for s in sizes}
    for k, _, name in jmap.counted:
        first = jmap.body.outputs[k].shape[0]
        if name in symbol_of_total and not (
                isinstance(first, prim.Variable) and first.name in renames):
            outputs[k] = _relabel(outputs[k], symbol_of_total[name])
    body = Body(tuple(body_params), tuple(outputs))
    zipped = tuple(a for s in sizes for a in zips[s][:2])
    names = {zips[s][2].name for s in sizes}
    return JaggedMap(body, jmap.inputs[:n_mapped] + zipped + jmap.captured,
                     jmap.depths + (2,) * len(sizes),
                     jmap.symbols + tuple((renames[s],) for s in sizes),
                     jmap.what, tuple(c for c in jmap.counted
                                      if c[2] not in names))


class _Zipper(CopyMapper):
    def __init__(self, host: Any = None) -> None:
        super().__init__()
        #: counted totals -> their definition as the zipped list's total
        self.totals: dict[str, DerivedSize] = {}
        #: where flattened maps over documents record their host derivations
        self.host = host
        #: maps over documents -> their results by maps over depth 2 (None
        #: where flattening refuses)
        self.flattened: dict[JaggedMap, list[Array] | None] = {}

    def map_loop_result(self, expr: LoopResult) -> Node:
        flat = self._by_maps_over_depth_2(expr.loop)
        if flat is None:
            return self.map_node(expr)
        return self.rec(flat[expr.index])

    def _by_maps_over_depth_2(self, loop: Any) -> list[Array] | None:
        """The results of a map over documents whose body makes lists of a
        computed length (``ft.map(encode, d)[:2]``, ``ft.flatten(d)[:3]``)
        by maps over depth 2, which are then zipped; None for other loops
        and where flattening refuses (the map is then left as it is)."""
        if not (self.host is not None and isinstance(loop, JaggedMap)
                and 3 in loop.depths and _host_nodes(loop.body.outputs)):
            return None
        if loop not in self.flattened:
            from ftlazy.transform.jagged_nesting import flatten_document_map
            try:
                self.flattened[loop] = flatten_document_map(loop, self.host)
            except (NotImplementedError, ValueError):
                # (a rebuilt map may have a counted size after its first
                # axis, d[0][:2].T read per sentence: refused as a view)
                self.flattened[loop] = None
        return self.flattened[loop]

    def map_jagged_map(self, expr: JaggedMap) -> Node:
        jmap = self.map_node(expr)
        if set(jmap.depths) - {1, 2} or not (
                jmap.counted or _host_nodes(jmap.body.outputs)):
            return jmap
        rewritten, totals, reads_zipped = jmap, {}, False
        # (zipping a selection can make another one zippable: a selection
        # of its selected rows)
        while rewritten.counted or _host_nodes(rewritten.body.outputs):
            zips = _zips(rewritten)
            if not zips and not reads_zipped:
                # (a count of another list's element read in the body,
                # ys[i][-2:] or ys[i] returned, once that read is zipped in)
                reads = _element_reads(rewritten)
                if reads:
                    rewritten = _zipped_reads(rewritten, reads)
                    reads_zipped = True
                    continue
            if not zips:
                if rewritten.counted or rewritten is jmap:
                    return jmap  # (refused when compiled, naming it)
                break   # (what is left is refused when compiled)
            totals.update({t.name: t for _, _, t, _ in zips.values()})
            rewritten, reads_zipped = _zipped(rewritten, zips), False
        self.totals.update(totals)
        return rewritten

    def map_derived_size(self, expr: DerivedSize) -> Node:
        # (its value reaches the map first: a counted total is then known)
        value = self.rec(expr.value)
        if expr.name in self.totals:
            return self.totals[expr.name]
        return expr if value is expr.value else DerivedSize(expr.name, value)

def zip_counted_lists(roots: dict[str, Any], host: Any = None
                      ) -> dict[str, Any]:
    """*roots* with every map over a depth-2 FractalTensor whose body makes
    lists of a length computed in the body rewritten as a zip with those
    lists (see the module docs). Given *host* (the
    :class:`~ftlazy.transform.jagged_lowering.HostDerivations` of the
    lowering), such maps over depth 3 are first flattened into maps over
    depth 2 (:func:`~ftlazy.transform.jagged_nesting.flatten_document_map`),
    which record their derivations there."""
    zipper = _Zipper(host)
    return {name: zipper(a) for name, a in roots.items()}
