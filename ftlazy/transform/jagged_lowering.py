# SPDX-License-Identifier: MIT
"""Lowering of maps over FractalTensors to dense nodes over packed data.

A :class:`~ftlazy.fractal_tensor.JaggedMap` over depth-2 FractalTensors is
replaced by its body evaluated on all elements at once, as
:mod:`ftlazy.transform.batch` does for dense maps, but without padding:

* a body array whose first axis has a length ``f(L) = c + a*L`` affine in
  the element's length ``L`` is stored *packed*: ``(sum_i f(L_i), ...)``,
  element ``i``'s rows starting at ``c*i + a*offsets[i]``. Its flat row
  ``p`` belongs to element ``seg_f[p]`` (segment ids computed on the host
  from the offsets when the program is called) at local row
  ``p - start_f(seg_f[p])``: one work item per packed row (token-parallel);
* a body array whose shape does not involve ``L`` but that depends on an
  element becomes ``(n, ...)``, element ``i`` in row ``i``
  (segment-parallel);
* ``L`` itself reads ``offsets[i+1] - offsets[i]``;
* a reduction over an extent that involves ``L`` runs to the largest
  extent over all elements (a size computed on the host) and masks the
  steps past element ``i``'s own extent with the reduction's neutral
  element.

* a scan or fold in the body runs for all elements at once
  (:mod:`ftlazy.transform.jagged_scans`): over an element's rows it takes
  as many steps as the longest element, each element's carry gated by a
  step mask.

* an axis after the first whose extent involves ``L`` (the ``(L, L)``
  scores of attention within a sequence) is stored padded to the largest
  extent: the array's expression is guarded by ``index < extent`` and
  reductions over the axis are masked, so no padding is ever read. Such
  arrays are tagged :class:`~ftlazy.target.loopy.padding.UnreadPadding`:
  code generation runs their loops over each element's own extent only
  and leaves the padding unwritten (work ``sum L_i**2``, not
  ``n * max(L)**2``).

* a lookup (``ft.gather``, ``table[ids]`` with one index array) keeps its
  run-time index check: from an array the body does not compute it stays a
  :class:`~ftlazy.fractal.Gather` batched through its indices; from an
  array the body computes it is a guarded read tagged
  :class:`~ftlazy.target.loopy.lowering.IndicesChecked` (the gathered
  axis then has one extent for all elements).

A map may have several element length symbols: zipped FractalTensors
share one (their offsets are checked equal at run time), but another
FractalTensor whose element the body reads at the map's own index is
zipped in with a length ``M`` of its own
(:mod:`ftlazy.transform.jagged_element_reads`). Each packed kind then
names its symbol, and its rows, segment ids, ranged reductions, padded
axes and scans over rows use that symbol's offsets; the element ``i`` is
the same for all (the host checks that every offsets has ``n + 1``
entries).

A map over depth-3 FractalTensors (documents of sentences) is first
rewritten as maps over depth 2 (:mod:`ftlazy.transform.jagged_nesting`).
What this does not lower raises :class:`NotImplementedError` naming it.
(Map results with ``L`` after their first axis are refused when the map is
built.)

.. autofunction:: lower_jagged_maps
.. autoclass:: HostDerivations
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pymbolic.primitives as prim
from pymbolic.mapper import UnsupportedExpressionError
from pymbolic.mapper.flattener import flatten

from ftlazy import shapes as sh
from ftlazy.array import AdvancedIndex, Array, IndexLambda, Placeholder, SizeParam
from ftlazy.fractal import BodyParam, Gather, LoopResult, Map, Scan, Scatter
from ftlazy.fractal_tensor import JaggedMap, segment_lengths
from ftlazy.node import Node, topological_order
from ftlazy.tags import ShapeRequirement
from ftlazy.scalar_expr import (
    ExprIdentityMapper, Reduce, TypeCast, get_variable_names, index_var,
    linear_combination)
from ftlazy.target.loopy.padding import UnreadPadding
from ftlazy.target.loopy.ranges import segment_ids_binding
from ftlazy.transform.batch import MapBatcher
from ftlazy.transform.jagged_inner_maps import lower_inner_map
from ftlazy.transform.jagged_nesting import flatten_document_map
from ftlazy.transform.jagged_scans import lower_scan, unroll_element_scans
from ftlazy.transform.lower import IndexLambdaLowerer
from ftlazy.transform.mappers import CopyMapper
from ftlazy.target.loopy.host_loops import describe_loop

__all__ = ["lower_jagged_maps", "HostDerivations", "CountForm", "copied_source"]

_INT64 = np.dtype(np.int64)


def copied_source(node: Array) -> Array:
    """*node*, or the array it copies if its body reads one at its own
    indices only (followed down a chain of such copies): the offsets of a
    map's result that are its input's, for instance."""
    while (isinstance(node, IndexLambda) and node.ndim == 1
           and len(node.bindings) == 1):
        (name, source), = node.bindings.items()
        try:
            body = flatten(node.expr)
        except UnsupportedExpressionError:  # (casts, reductions, ...)
            break
        if (body != prim.Subscript(prim.Variable(name), index_var(0))
                or source.dtype != node.dtype
                or not sh.shapes_equal(source.shape, node.shape)):
            break
        node = source
    return node


@dataclass(frozen=True)
class CountForm:
    """An extent per element that is a count of its length alone
    (``min(2, L)`` of ``s[:2]``), where a derivation takes an affine form
    ``(const, coeff)``: *expr* in the length's symbol, and *counts*, its
    value for every element (an array ``(n,)`` computed from the offsets,
    which the host evaluates)."""

    expr: Any
    counts: Array


@dataclass
class HostDerivations:
    """Inputs of the lowered DAG that the host computes from the offsets at
    call time. Each entry: ``(offsets node, (const, coeff))`` for the extent
    ``const + coeff*L`` of each element."""

    #: placeholder name -> segment ids of the packed rows of that extent
    segment_ids: dict[str, tuple[Array, tuple[int, int]]] = field(
        default_factory=dict)
    #: size parameter name -> the largest extent over all elements
    max_extents: dict[str, tuple[Array, tuple[int, int]]] = field(
        default_factory=dict)
    #: size parameter name -> the steps of a scan over the elements' rows:
    #: the largest extent, 0 where no element has a row (unlike
    #: :attr:`max_extents`, which is at least 1 to size padded axes)
    step_counts: dict[str, tuple[Array, tuple[int, int]]] = field(
        default_factory=dict)
    #: placeholder name -> ``(2, n)``: the elements by descending extent,
    #: then each element's place in that order (see ``RaggedScan.order``)
    row_orders: dict[str, tuple[Array, tuple[int, int]]] = field(
        default_factory=dict)
    #: (offsets node, extent) -> what an operation requires of the
    #: elements whose arrays of that extent would have negative rows
    #: (:class:`~ftlazy.tags.ShapeRequirement`), for the message
    requirements: dict[tuple[Array, tuple[int, int]], str] = field(
        default_factory=dict)
    #: (offsets node, extent, reduction op): max/min reductions that need
    #: every element's extent to be positive
    #: (and the name of the segment ids whose entries pick the elements
    #: that read them, or None for all: ``_MapLowering.repeats``; and the
    #: loop, for the message: ``"fold over a FractalTensor 'xs'"``)
    nonempty: list[tuple[Array, Any, str, str | None, str]] = field(
        default_factory=list)
    #: (what zips them, for messages; groups of offsets nodes of zipped
    #: FractalTensors that must be equal; the dense arrays mapped along)
    zipped: list[tuple[str, tuple[Array, ...], tuple[Array, ...]]] = field(
        default_factory=list)
    #: (what zips them, offsets node, offsets node): zipped FractalTensors
    #: whose elements have lengths of their own (another FractalTensor's
    #: element read at the map's index), with equal numbers of elements
    same_count: list[tuple[str, Array, Array]] = field(default_factory=list)

    def segment_ids_for(self, offsets: Array, form: tuple[int, int]) -> Placeholder:
        return _seg_placeholder(_name_for(self.segment_ids, "_ft_seg",
                                          offsets, form))

    def max_extent_for(self, offsets: Array, form: tuple[int, int]) -> str:
        return _name_for(self.max_extents, "_ft_maxlen", offsets, form)

    def step_count_for(self, offsets: Array, form: tuple[int, int]) -> str:
        return _name_for(self.step_counts, "_ft_steps", offsets, form)

    def row_order_for(self, offsets: Array, form: tuple[int, int]
                      ) -> Placeholder:
        # (one order for the copies of the same offsets: the layers of a
        # stacked RNN run their elements in the same blocks, see
        # ftlazy.target.loopy.scan_chains)
        name = _name_for(self.row_orders, "_ft_order", offsets, form)
        return Placeholder(name, (2, sh.sub(offsets.shape[0], 1)), _INT64)

    @property
    def names(self) -> set[str]:
        """The names of the arrays and sizes derived at each call."""
        return (set(self.segment_ids) | set(self.max_extents)
                | set(self.step_counts) | set(self.row_orders)
                | {f"{name}_rows" for name in self.segment_ids})

    @property
    def empty(self) -> bool:
        return not (self.segment_ids or self.max_extents or self.step_counts
                    or self.row_orders
                    or self.nonempty
                    or self.zipped or self.same_count)


def _name_for(table: dict[str, tuple[Array, tuple[int, int]]], prefix: str,
              offsets: Array, form: tuple[int, int]) -> str:
    """The name *table* gives the derivation from *offsets* and *form*
    (a new one, numbered after *prefix*, the first time). Copies of the
    same offsets (the offsets of a map's result that are its input's, as in
    each layer of a stacked RNN) share it."""
    offsets = copied_source(offsets)
    for name, (o, f) in table.items():
        if o == offsets and f == form:
            return name
    name = f"{prefix}{len(table)}"
    table[name] = (offsets, form)
    return name


def _total(offsets: Array, form: tuple[int, int], nnz: Any) -> Any:
    const, coeff = form
    n = sh.sub(offsets.shape[0], 1)
    return sh.add(sh.mul(n, const), sh.mul(nnz, coeff))


def _seg_placeholder(name: str) -> Placeholder:
    """Segment ids of packed rows, their number bound from the data."""
    return Placeholder(name, (prim.Variable(name + "_rows"),), _INT64)


# {{{ one map

@dataclass(frozen=True)
class _Kind:
    """How a body array is batched: 'hoisted' (as it is), 'dense'
    (``(n, ...)``) or 'packed' (first axis ``const + coeff*L``, *L* the
    element length :attr:`symbol`, whose offsets place the rows)."""

    what: str
    form: tuple[int, int] = (0, 0)
    symbol: str = ""


_HOISTED = _Kind("hoisted")
_DENSE = _Kind("dense")


class _BatchRewriter(ExprIdentityMapper):
    """Rewrites a body IndexLambda's expression for all elements at once."""

    def __init__(self, lowering: _MapLowering, kinds: dict[str, _Kind],
                 out_kind: _Kind, dtype_of: dict[str, np.dtype]) -> None:
        self.lowering = lowering
        self.kinds = kinds
        self.out_kind = out_kind
        self.dtype_of = dtype_of
        #: size parameters the rewritten expression uses (bound, unread, so
        #: that the program's inputs include them)
        self.sizes: set[str] = set()
        #: the element length symbols whose offsets it reads
        self.symbols: set[str] = set()
        #: binding name -> the element index arrays it reads (see
        #: ``_MapLowering.repeats``)
        self.index_arrays: dict[str, Array] = {}
        if out_kind.what == "packed":
            self.element = prim.Variable(self.segment_ids_name())[index_var(0)]
        else:
            self.element = index_var(0)

    def segment_ids_name(self) -> str:
        """The binding of the segment ids of a packed output's rows (its
        name says which extent and offsets, so that code generation can
        drop lookups whose element it knows)."""
        return segment_ids_binding(self.out_kind.form,
                                   self.lowering.offsets_name(self.out_kind.symbol))

    def offsets(self, symbol: str) -> prim.Variable:
        """The offsets of the element length *symbol*, as the expression
        reads them."""
        self.symbols.add(symbol)
        return prim.Variable(self.lowering.offsets_name(symbol))

    def element_of(self, symbol: str) -> Any:
        """The element of *symbol*'s offsets that the element reads (the
        outer element of an inner one, see ``_MapLowering.repeats``)."""
        repeats = self.lowering.repeats.get(symbol)
        if repeats is None:
            return self.element
        if isinstance(repeats, int):
            return prim.FloorDiv(self.element, repeats)
        name = self.lowering.element_index_name(symbol)
        self.index_arrays[name] = self.lowering.outer(repeats)
        return prim.Variable(name)[self.element]

    def start(self, form: tuple[int, int], symbol: str) -> Any:
        """First packed row of the element for extent *form* of *symbol*."""
        const, coeff = form
        element = self.element_of(symbol)
        off = self.offsets(symbol)[element]
        return linear_combination([(const, element), (coeff, off)])

    def length(self, symbol: str) -> Any:
        off = self.offsets(symbol)
        element = self.element_of(symbol)
        return off[element + 1] - off[element]

    def extent(self, form: tuple[int, int], symbol: str) -> Any:
        const, coeff = form
        return const + coeff * self.length(symbol)

    def map_variable(self, expr: prim.Variable) -> Any:
        name = expr.name
        if name in self.lowering.segments:
            return self.length(name)
        m = _index_number(name)
        if m is not None:
            if self.out_kind.what == "dense":
                return index_var(m + 1)
            if m == 0 and self.out_kind.what == "packed":
                return index_var(0) - self.start(self.out_kind.form,
                                                 self.out_kind.symbol)
            return expr
        kind = self.kinds.get(name)
        if kind is not None and kind.what == "dense":
            return prim.Subscript(expr, (self.element,))
        return expr

    def map_subscript(self, expr: prim.Subscript) -> Any:
        index = tuple(self.rec(i) for i in expr.index_tuple)
        name = expr.aggregate.name
        kind = self.kinds.get(name)
        if kind is None or kind.what == "hoisted":
            return prim.Subscript(expr.aggregate, index)
        if kind.what == "dense":
            return prim.Subscript(expr.aggregate, (self.element,) + index)
        row = _same_row(expr.index_tuple[0], kind, self.out_kind)
        if row is not None:
            return prim.Subscript(expr.aggregate, (row,) + index[1:])
        return prim.Subscript(
            expr.aggregate,
            (self.start(kind.form, kind.symbol) + index[0],) + index[1:])

    def map_reduce(self, expr: Reduce) -> Any:
        inner = self.rec(expr.inner)
        bounds = []
        masks = []
        for name, lo, hi in expr.bounds:
            extent = self.lowering.extent_of(hi)
            if extent is None:
                bounds.append((name, lo, hi))
                continue
            if lo != 0:
                raise NotImplementedError("reductions must start at 0")
            symbol, form = extent
            offsets = self.lowering.offsets_of(symbol)
            max_name = self.lowering.host.max_extent_for(offsets, form)
            self.sizes.add(max_name)
            if expr.op in ("max", "min"):
                picked = self.lowering.repeats.get(symbol)
                self.lowering.host.nonempty.append((
                    offsets, form, expr.op,
                    picked.name if isinstance(picked, Placeholder) else None,
                    describe_loop(self.lowering.jmap)))
            bounds.append((name, 0, prim.Variable(max_name)))
            masks.append(prim.Comparison(prim.Variable(name), "<",
                                         self.extent(form, symbol)))
        if masks:
            from ftlazy.target.loopy.expressions import expr_dtype
            from ftlazy.target.loopy.lowering import neutral_element
            dtype = expr_dtype(expr.inner, self.dtype_of) or np.dtype(np.float64)
            cond = masks[0] if len(masks) == 1 else prim.LogicalAnd(tuple(masks))
            inner = prim.If(cond, inner, neutral_element(expr.op, dtype))
        return Reduce(expr.op, inner, tuple(bounds))


def _same_row(local: Any, kind: _Kind, out_kind: _Kind) -> Any:
    """The packed row of a read at local row *local* (``_0`` or ``_0 + c``)
    of an array of *kind* from a packed array of *out_kind* of the same
    extent: the output's own packed row (``_0``, plus ``c``): the element's
    first row cancels, so the read needs no segment id, also where a reader
    inlines the array at a row of its own; else None."""
    if out_kind.what != "packed" or kind != out_kind:
        return None
    if local == index_var(0):
        return index_var(0)
    if isinstance(local, prim.Sum):
        rest = [c for c in local.children if c != index_var(0)]
        if (len(rest) == len(local.children) - 1
                and all(isinstance(c, (int, np.integer)) for c in rest)):
            return prim.Sum((index_var(0), *rest))
    return None


def _index_number(name: str) -> int | None:
    if name.startswith("_") and name[1:].isdigit():
        return int(name[1:])
    return None


def _of_length(array: Array, n: Any) -> Array:
    """*array*, zipped with FractalTensors of *n* elements, as an array of
    *n* rows: its own where the two are provably equal, else a view whose
    reads are guarded (the run-time check of the zip makes them equal, but
    loopy's bounds check cannot see it: a static 3 against a symbolic
    ``n``)."""
    if sh.prove_equal(array.shape[0], n):
        return array
    row = index_var(0)
    rest = tuple(index_var(k) for k in range(1, array.ndim))
    bound = (array.shape[0] if isinstance(array.shape[0], int)
             else sh.to_affine(array.shape[0]).to_expr())
    read = prim.If(prim.Comparison(row, "<", bound),
                   prim.Variable("_in0")[(row,) + rest],
                   np.zeros((), array.dtype)[()])
    return IndexLambda(read, (n,) + tuple(array.shape[1:]), array.dtype,
                       {"_in0": array})


class _MapLowering:
    """Batches the body of one :class:`JaggedMap` (see the module docs)."""

    def __init__(self, jmap: JaggedMap, inputs: list[Array],
                 host: HostDerivations) -> None:
        self.jmap = jmap
        self.host = host
        parts = jmap.mapped_parts()
        if any(d > 2 for d, _ in parts):
            raise NotImplementedError(
                "compiling a map over a FractalTensor of depth "
                f"{max(d for d, _ in parts)} is not supported yet "
                "(ft.evaluate_numpy evaluates it)")
        # the new arrays of each mapped input, in the order of the old ones;
        # zipped FractalTensors of the same element length symbol must have
        # equal offsets, others (another FractalTensor's element read at the
        # map's index) only as many elements
        pos = 0
        self.params: list[tuple[Array, _Kind]] = []
        #: element length symbol -> (offsets, number of packed rows)
        self.segments: dict[str, tuple[Array, Any]] = {}
        zipped: dict[str, list[Array]] = {}
        dense_mapped = []
        for (depth, _), symbols in zip(parts, jmap.symbols):
            new = inputs[pos:pos + depth]
            pos += depth
            if depth == 1:
                self.params.append((new[0], _DENSE))
                dense_mapped.append(new[0])
            else:
                (symbol,) = symbols
                self.params.append((new[0], _Kind("packed", (0, 1), symbol)))
                self.segments.setdefault(symbol, (new[1], new[0].shape[0]))
                zipped.setdefault(symbol, []).append(new[1])
        self.params += [(a, _HOISTED) for a in inputs[pos:]]
        #: element length symbol -> K where element ``i`` reads element
        #: ``i // K`` of its offsets (inner maps reading their outer
        #: element: :mod:`ftlazy.transform.jagged_inner_maps`), or an
        #: ``(n,)`` array where it reads element ``index[i]`` (a sentence
        #: its document's tokens, ``JaggedMap.element_index``); arrays of
        #: that length are read, not computed
        self.repeats: dict[str, Any] = {
            symbol: inputs[position] for symbol, position in jmap.element_index}
        #: the first FractalTensor's length symbol and offsets
        self.symbol = next(iter(self.segments))
        self.offsets = self.segments[self.symbol][0]
        self.n = sh.sub(self.offsets.shape[0], 1)
        self.params = [(_of_length(a, self.n), kind) if kind is _DENSE
                       else (a, kind) for a, kind in self.params]
        first, *others = (group for symbol, group in zipped.items()
                          if symbol not in self.repeats)
        if len(first) > 1 or dense_mapped:
            host.zipped.append((jmap.what, tuple(first), tuple(dense_mapped)))
        for group in others:
            if len(group) > 1:
                host.zipped.append((jmap.what, tuple(group), ()))
            host.same_count.append((jmap.what, self.offsets, group[0]))

    def offsets_of(self, symbol: str) -> Array:
        """The offsets of the elements whose length is *symbol*."""
        return self.segments[symbol][0]

    def offsets_name(self, symbol: str) -> str:
        """The name under which a batched expression reads them."""
        k = list(self.segments).index(symbol)
        return "_ft_off" if k == 0 else f"_ft_off{k}"

    def element_index_name(self, symbol: str) -> str:
        """The name under which a batched expression reads the element
        index array of *symbol* (see :attr:`repeats`)."""
        return f"_ft_eix{list(self.segments).index(symbol)}"

    def extent_of(self, c: Any) -> tuple[str, tuple[int, int]] | None:
        """``(symbol, (const, coeff))`` of extent *c* if it involves an
        element's length *symbol*, else None."""
        names = set(self.segments) & sh.size_param_names(c)
        if not names:
            return None
        form = sh.to_affine(c)
        if set(form.coeffs) != names:
            raise NotImplementedError(
                f"an extent {c} mixes an element's length with other sizes")
        if len(names) > 1:
            return self._mixed_extent(form), (0, 1)
        (symbol,) = names
        return symbol, (form.const, form.coeffs[symbol])

    def _mixed_extent(self, form: Any) -> str:
        """A symbol for an extent affine in several element lengths (``T -
        m`` of a document's tokens and sentences): an element length of
        its own, whose offsets are the running sums of the extent (the
        same affine function of the lengths' offsets)."""
        key = f"_ft_mixed({form.to_expr()})"
        if key not in self.segments:
            if set(form.coeffs) & set(self.repeats):
                raise NotImplementedError(
                    f"an extent {form.to_expr()} mixes an outer element's "
                    "length with other element lengths")
            terms: list[tuple[int, Any]] = [(form.const, index_var(0))]
            nnz: Any = sh.mul(self.n, form.const)
            bindings = {}
            for k, (name, coeff) in enumerate(sorted(form.coeffs.items())):
                offsets, rows = self.segments[name]
                bindings[f"_in{k}"] = offsets
                terms.append((coeff, prim.Variable(f"_in{k}")[index_var(0)]))
                nnz = sh.add(nnz, sh.mul(rows, coeff))
            expr = linear_combination(terms)
            self.segments[key] = (IndexLambda(
                expr, (sh.add(self.n, 1),), _INT64, bindings), nnz)
        return key

    def kind_of_shape(self, shape: tuple) -> _Kind | None:
        extent = self.extent_of(shape[0]) if shape else None
        if extent is not None and extent[0] in self.repeats:
            raise NotImplementedError(
                "compiling a map over a FractalTensor inside a map over a "
                "FractalTensor whose body computes an array of the outer "
                f"element's length {sh.shape_str(shape)} per inner element "
                "(or scans over its rows) is not supported (it may read the "
                "outer element's arrays and reduce over them)")
        return None if extent is None else _Kind("packed", extent[1], extent[0])

    def padded_axes(self, shape: tuple
                    ) -> list[tuple[int, str, tuple[int, int]]]:
        """``(axis, symbol, form)`` of the axes after the first whose
        extent involves an element's length: they are stored padded to the
        largest extent over all elements."""
        return [(k, *extent) for k, c in enumerate(shape) if k > 0
                for extent in [self.extent_of(c)] if extent is not None]

    def batched_shape(self, shape: tuple, kind: _Kind) -> tuple:
        shape = list(shape)
        for k, symbol, form in self.padded_axes(shape):
            shape[k] = prim.Variable(self.host.max_extent_for(
                self.offsets_of(symbol), form))
        if kind.what == "dense":
            return (self.n,) + tuple(shape)
        if kind.what == "packed":
            offsets, nnz = self.segments[kind.symbol]
            return (_total(offsets, kind.form, nnz),) + tuple(shape[1:])
        return tuple(shape)

    def run(self) -> list[Array]:
        body = self.jmap.body
        batcher = MapBatcher()
        lowerer = _LowererKeepingGathers()
        # (maps first: a scan inside a map over the element's rows becomes a
        # batched scan over a static axis, which the unrolling then sees)
        outputs = [lowerer(o) for o in unroll_element_scans(
            [batcher(o) for o in body.outputs], set(self.segments))]
        values = self.lower_nodes(outputs, lambda p: self.params[p.index])
        results = []
        for k, out in enumerate(outputs):
            value, kind = values[out]
            if kind.what == "hoisted":
                value, kind = self._broadcast(value), _DENSE
            results.append(value)
        return results

    def outer(self, node: Array) -> Array:
        """*node*, an array outside the body (offsets, segment ids), as the
        lowered nodes read it: the node itself here; a captured parameter
        in a scan body (:mod:`ftlazy.transform.jagged_scans`)."""
        return node

    def lower_nodes(self, outputs: list[Array], param_value: Any
                    ) -> dict[Node, tuple[Array, _Kind]]:
        """The batched value and kind of every node of a lowered body with
        *outputs*; ``param_value(p)`` gives those of body parameter *p*."""
        values: dict[Node, tuple[Array, _Kind]] = {}
        for node in topological_order(outputs):
            if isinstance(node, BodyParam):
                values[node] = param_value(node)
            elif isinstance(node, SizeParam) and node.name in self.segments:
                values[node] = (self.outer(self._lengths(node.name)), _DENSE)
            elif isinstance(node, IndexLambda):
                values[node] = self._index_lambda(node, values)
                self._note_requirement(node, values[node][1])
            elif isinstance(node, Gather):
                values[node] = self._gather(node, values)
            elif isinstance(node, Scatter):
                values[node] = self._scatter(node, values)
            elif isinstance(node, Scan):
                self.kind_of_shape((node.length,))
                values[node] = lower_scan(self, node,
                                          [values[a] for a in node.inputs])
            elif isinstance(node, JaggedMap):
                values[node] = lower_inner_map(self, node,
                                               [values[a] for a in node.inputs])
            elif isinstance(node, LoopResult) and isinstance(
                    node.loop, (Scan, JaggedMap)):
                values[node] = values[node.loop][node.index]
            elif isinstance(node, (LoopResult, Map)):
                raise NotImplementedError(
                    f"compiling a {type(node).__name__} inside a map over a "
                    "FractalTensor is not supported")
            else:
                values[node] = (node, _HOISTED)
        return values

    def _note_requirement(self, node: IndexLambda, kind: _Kind) -> None:
        """Records what the operation that built *node* requires of the
        elements (see :attr:`HostDerivations.requirements`)."""
        for tag in node.tags_of_type(ShapeRequirement):
            if kind.what == "packed":
                self.host.requirements[(self.offsets_of(kind.symbol),
                                        kind.form)] = tag.message

    def _lengths(self, symbol: str) -> Array:
        """Each element's length *symbol* (``(n,)``)."""
        lengths = segment_lengths(self.offsets_of(symbol))
        repeats = self.repeats.get(symbol)
        if repeats is None:
            return lengths
        if not isinstance(repeats, int):
            return IndexLambda(
                prim.Variable("_in0")[prim.Variable("_in1")[index_var(0)]],
                (self.n,), lengths.dtype, {"_in0": lengths, "_in1": repeats})
        return IndexLambda(
            prim.Variable("_in0")[prim.FloorDiv(index_var(0), repeats)],
            (self.n,), lengths.dtype, {"_in0": lengths})

    def _gather(self, node: Gather, values: dict) -> tuple[Array, _Kind]:
        """A lookup in a table the body does not compute (an embedding)
        stays a :class:`~ftlazy.fractal.Gather` (along any axis), batched
        through its indices, so that its run-time index check is kept; a
        lookup in an array the body computes is batched as a guarded read
        marked for the same check."""
        array, array_kind = values[node.array]
        indices, kind = values[node.indices]
        if array_kind.what != "hoisted":
            return self._gather_from_body_array(node, values)
        if kind.what == "hoisted":
            return Gather(array, indices, node.axis), kind
        if (kind.what == "packed" and node.axis) or self.padded_axes(
                node.indices.shape):
            # (the element's length would land after the first axis: padded,
            # and padded indices are never written)
            raise NotImplementedError(
                "compiling a gather inside a map over a FractalTensor whose "
                "indices have the element's length is only supported along "
                f"axis 0 (got axis {node.axis}, indices of shape "
                f"{sh.shape_str(node.indices.shape)})")
        gather = Gather(array, indices, node.axis)
        if node.axis == 0:
            return gather, kind
        # (axes before the gathered one come first in the gather: the
        # batched indices' first axis is moved to the front)
        a = node.axis
        out = [index_var(k) for k in range(gather.ndim)]
        read = out[1:a + 1] + [out[0]] + out[a + 1:]
        shape = (gather.shape[a],) + gather.shape[:a] + gather.shape[a + 1:]
        return IndexLambda(prim.Variable("_in0")[tuple(read)], shape,
                           gather.dtype, {"_in0": gather}), kind

    def _gather_from_body_array(self, node: Gather, values: dict
                                ) -> tuple[Array, _Kind]:
        """A gather from an array the body computes: its guarded read,
        batched as the body's arrays are, marked so that its indices are
        checked at run time against the axis' extent, which must be the
        same for every element."""
        from ftlazy.target.loopy.lowering import IndicesChecked
        from ftlazy.transform.lower import to_index_lambda
        extent = node.array.shape[node.axis]
        if (self.extent_of(extent) is not None and node.axis == 0
                and values[node.array][1].what == "packed"
                and not self.padded_axes(node.array.shape)
                and not self.padded_axes(node.indices.shape)):
            return self._gather_element_rows(node, values)
        if self.extent_of(extent) is not None or self.padded_axes(
                node.indices.shape):
            raise NotImplementedError(
                "compiling a gather inside a map over a FractalTensor from an "
                "array the body computes is only supported along an axis of "
                "the same extent for every element, or along axis 0 of the "
                "element's rows, with indices without the element's length "
                "after their first axis, from an array whose later axes are "
                f"not of the element's length (got axis "
                f"{node.axis} of {sh.shape_str(node.array.shape)}, indices "
                f"{sh.shape_str(node.indices.shape)})")
        read = to_index_lambda(node)
        for b in read.bindings.values():
            values.setdefault(b, (b, _HOISTED))
        (name,) = [k for k, b in read.bindings.items() if b is node.indices]
        value, kind = self._index_lambda(read, values)
        return value.copy(tags=value.tags | {IndicesChecked(
            name, extent, node.axis)}), kind

    def _scatter(self, node: Scatter, values: dict) -> tuple[Array, _Kind]:
        """A scatter in the body: its lowering (see
        :func:`ftlazy.transform.lower.to_index_lambda`) batched, where the
        node that reads the indices is marked so that they are checked at
        run time against the extent of the scattered rows: the same for
        every element, or each element's own."""
        from ftlazy.target.loopy.lowering import ElementRowsChecked, IndicesChecked
        from ftlazy.transform.lower import to_index_lambda
        lowered = to_index_lambda(node)
        extent = node.x.shape[0]
        per_element = self.extent_of(extent) is not None
        for n in topological_order([lowered]):
            if n in values:
                continue
            value, kind = self._index_lambda(n, values)
            names = [name for name, b in n.bindings.items() if b is node.indices]
            if names:
                if per_element:
                    indices, indices_kind = values[node.indices]
                    if indices_kind.what == "hoisted":
                        indices, indices_kind = self._broadcast(indices), _DENSE
                    extents = self._element_extents(indices, indices_kind,
                                                    values[node.x][1])
                    value = value.copy(
                        bindings={**value.bindings, "_ft_extents": extents,
                                  "_ft_checked": indices},
                        tags=value.tags | {ElementRowsChecked(
                            "_ft_checked", "_ft_extents", "scatter")})
                else:
                    value = value.copy(tags=value.tags | {IndicesChecked(
                        names[0], extent, 0, "scatter")})
            values[n] = (value, kind)
        return values[lowered]

    def _element_rows_at(self, kind: _Kind, array_kind: _Kind
                         ) -> tuple[Any, Any, dict[str, Array]]:
        """For batched indices of *kind*: the extent and the first packed
        row of the rows of an array of *array_kind* (the element's length)
        of each entry's own element, as expressions, and the bindings they
        read."""
        rewriter = _BatchRewriter(self, {}, kind, {})
        bindings: dict[str, Array] = {}
        if kind.what == "packed":
            bindings[rewriter.segment_ids_name()] = self.outer(
                self.host.segment_ids_for(self.offsets_of(kind.symbol),
                                          kind.form))
        extent = rewriter.extent(array_kind.form, array_kind.symbol)
        start = rewriter.start(array_kind.form, array_kind.symbol)
        for symbol in rewriter.symbols:
            bindings[self.offsets_name(symbol)] = self.outer(
                self.offsets_of(symbol))
        bindings.update(rewriter.index_arrays)
        return extent, start, bindings

    def _element_extents(self, indices: Array, kind: _Kind,
                         array_kind: _Kind) -> IndexLambda:
        """For batched *indices* of *kind*, the extent of the rows of an
        array of *array_kind* of each entry's own element."""
        extent, _, bindings = self._element_rows_at(kind, array_kind)
        return IndexLambda(extent, indices.shape, _INT64, bindings)

    def _gather_element_rows(self, node: Gather, values: dict
                             ) -> tuple[Array, _Kind]:
        """Rows of an array of the element's length (the element itself,
        ``s * 2``) at indices the body gives (``ft.gather(s, idx)``,
        ``s[idx]``): each index is wrapped and bounded by its own element's
        extent, an array of its own (``_x``) that the run-time check
        compares the indices (``_v``) with (:class:`ElementRowsChecked`);
        indices the same for every element are read per element."""
        array, array_kind = values[node.array]
        indices, kind = values[node.indices]
        if kind.what == "hoisted":
            indices, kind = self._broadcast(indices), _DENSE
        extent, start, bindings = self._element_rows_at(kind, array_kind)
        extents = IndexLambda(extent, indices.shape, _INT64, dict(bindings))
        return checked_rows(array, indices, extents, start=start,
                            bindings=bindings), kind

    def _broadcast(self, value: Array) -> IndexLambda:
        idx = tuple(index_var(k + 1) for k in range(value.ndim))
        expr = prim.Variable("_in0")[idx] if idx else prim.Variable("_in0")
        return IndexLambda(expr, (self.n,) + value.shape, value.dtype,
                           {"_in0": value})

    def _index_lambda(self, node: IndexLambda, values: dict
                      ) -> tuple[Array, _Kind]:
        kinds = {}
        bindings = {}
        for name, b in node.bindings.items():
            bindings[name], kinds[name] = values[b]
        out_kind = self.kind_of_shape(node.shape)
        padded = self.padded_axes(node.shape)
        if out_kind is None:
            if all(k.what == "hoisted" for k in kinds.values()) and \
                    not set(self.segments) & _free_names(node) and not padded:
                return node.copy(bindings=bindings), _HOISTED
            out_kind = _DENSE
        bindings["_ft_off"] = self.outer(self.offsets)
        dtype_of = {name: b for name, b in node.bindings.items()}
        rewriter = _BatchRewriter(self, kinds, out_kind, dtype_of)
        if out_kind.what == "packed":
            bindings[rewriter.segment_ids_name()] = self.outer(
                self.host.segment_ids_for(self.offsets_of(out_kind.symbol),
                                          out_kind.form))
        expr = rewriter(node.expr)
        if padded:
            # positions past the element's own extent: never read by a
            # consumer (reductions over the axis are masked); where they are
            # computed at all (code generation skips them, see UnreadPadding)
            # they are 0, so that they read nothing past the element
            first = 1 if out_kind.what == "dense" else 0
            inside = [prim.Comparison(index_var(k + first), "<",
                                      rewriter.extent(form, symbol))
                      for k, symbol, form in padded]
            expr = prim.If(inside[0] if len(inside) == 1
                           else prim.LogicalAnd(tuple(inside)), expr, 0)
        for symbol in self.segments:
            if symbol != self.symbol and symbol in rewriter.symbols:
                bindings[self.offsets_name(symbol)] = self.outer(
                    self.offsets_of(symbol))
        bindings.update(rewriter.index_arrays)
        bindings.update({f"_ft_size_{name}": SizeParam(name)
                         for name in sorted(rewriter.sizes)})
        # (code generation then computes only the element's own extent)
        tags = frozenset({UnreadPadding()}) if padded else frozenset()
        return (IndexLambda(expr, self.batched_shape(node.shape, out_kind),
                            node.dtype, bindings, tags=tags), out_kind)


class _LowererKeepingGathers(IndexLambdaLowerer):
    """Lowers a map's body, keeping its gathers (and advanced indexing by
    one index array, ``table[ids]``, as a gather) as nodes: batched through
    their indices they keep their run-time index checks."""

    map_gather = IndexLambdaLowerer.map_node
    map_scatter = IndexLambdaLowerer.map_node

    def map_advanced_index(self, expr: AdvancedIndex) -> Node:
        gather = _as_gather(expr)
        if gather is None:
            return super().map_advanced_index(_with_checked_indices(expr))
        return self.rec(gather)


def _with_checked_indices(expr: AdvancedIndex) -> AdvancedIndex:
    """*expr*, indexing by several arrays (``s[idx, -1]``, ``s[i, j]``),
    with each index array ``I`` of an axis of length ``L`` read through
    ``ft.arange(L)[I]``, a gather (as numpy: the same positions, negative
    ones counted from the end) whose batched form checks each index at run
    time against its own element's ``L``; the lowered read that the other
    indices share would only guard it. Constant indices proven in range
    stay as they are."""
    from ftlazy.ops.creation import _created
    arrays = list(expr.index_arrays)
    for spec, length in zip(expr.indices, expr.array.shape):
        if isinstance(spec, int) and not _constant_in_range(arrays[spec],
                                                            length):
            # (the positions as index arithmetic: this node is made after
            # the body's typed arithmetic was prepared)
            positions = _created(index_var(0), (length,), np.dtype(np.int64))
            arrays[spec] = Gather(positions, arrays[spec], 0)
    return AdvancedIndex(expr.array, expr.indices, tuple(arrays))


def _constant_in_range(indices: Array, length: Any) -> bool:
    """Whether *indices* is a constant index (``x[2, -1]``'s ``-1``) proven
    within an axis of *length*."""
    return (isinstance(indices, IndexLambda) and not indices.bindings
            and indices.ndim == 0
            and isinstance(indices.expr, (int, np.integer))
            and sh.prove_index_in_range(int(indices.expr), length))


def _as_gather(expr: AdvancedIndex) -> Gather | None:
    """*expr* as the :class:`~ftlazy.fractal.Gather` it is where it reads
    one index array and whole other axes (numpy's ``take``), else None."""
    if len(expr.index_arrays) != 1:
        return None
    axis = None
    for k, (index, extent) in enumerate(zip(expr.indices, expr.array.shape)):
        if isinstance(index, int):
            axis = k
        elif not (index.step == 1 and index.start == 0
                  and sh.prove_equal(index.length, extent)):
            return None
    return Gather(expr.array, expr.index_arrays[0], axis)


def checked_rows(array: Array, indices: Array, extents: Array,
                 start: Any = 0, conditions: tuple = (),
                 bindings: dict[str, Array] | None = None) -> IndexLambda:
    """Rows ``start + i`` of *array* for each entry ``i`` of *indices*, as
    numpy takes them from an extent of its own (the same entry of
    *extents*): negative indices count back from it, and the run-time
    check (:class:`~ftlazy.target.loopy.lowering.ElementRowsChecked`)
    refuses indices outside it; such entries, and those where one of
    *conditions* fails, read nothing (0). *bindings*: those *start*,
    *conditions* and *extents* name."""
    from ftlazy.target.loopy.lowering import ElementRowsChecked
    position = tuple(index_var(k) for k in range(indices.ndim))
    rest = tuple(index_var(indices.ndim + k) for k in range(array.ndim - 1))
    v = prim.Variable("_v")[position] if position else prim.Variable("_v")
    if indices.dtype == np.uint64:
        # (uint64 mixed with the int64 extents would promote to float64;
        # entries past int64's range read as negative, which the check
        # refuses as it refuses a uint64 index past the extent)
        v = TypeCast(_INT64, v)
    x = prim.Variable("_x")[position] if position else prim.Variable("_x")
    wrapped = prim.If(prim.Comparison(v, "<", 0), v + x, v)
    inside = (prim.Comparison(wrapped, ">=", 0),
              prim.Comparison(wrapped, "<", x)) + tuple(conditions)
    row = start + wrapped if start != 0 else wrapped
    return IndexLambda(
        prim.If(prim.LogicalAnd(inside), prim.Variable("_a")[(row,) + rest],
                array.dtype.type(0)),
        indices.shape + array.shape[1:], array.dtype,
        {**(bindings or {}), "_v": indices, "_x": extents, "_a": array},
        tags=frozenset({ElementRowsChecked("_v", "_x")}))


def _free_names(node: IndexLambda) -> set[str]:
    # (ftlazy's walk: pymbolic's DependencyMapper cannot read TypeCast)
    names = get_variable_names(node.expr)
    for e in _reductions(node.expr):
        for _, lo, hi in e.bounds:
            names |= sh.size_param_names(lo) | sh.size_param_names(hi)
    return names


def _reductions(expr: Any) -> list[Reduce]:
    from ftlazy.scalar_expr import iter_subexpressions
    return [e for e in iter_subexpressions(expr) if isinstance(e, Reduce)]

# }}}


class _JaggedMapLowerer(CopyMapper):
    def __init__(self, host: HostDerivations) -> None:
        super().__init__()
        self.host = host
        self._done: dict[JaggedMap, list[Array]] = {}

    def map_jagged_map(self, expr: JaggedMap) -> Node:
        # (its results are lowered in map_loop_result; its body is not
        # copied here: maps nested in it would be lowered out of context)
        return expr

    # (the same for folds over a FractalTensor's outer list)
    map_jagged_scan = map_jagged_map

    def map_loop_result(self, expr: LoopResult) -> Node:
        from ftlazy.jagged_scan_outer import JaggedScan
        if isinstance(expr.loop, JaggedScan):
            # a scan, fold or reduce over a FractalTensor's outer list
            from ftlazy.transform.jagged_outer_scan import lower_jagged_scan
            if expr.loop not in self._done:
                self._done[expr.loop] = lower_jagged_scan(
                    expr.loop, [self.rec(a) for a in expr.loop.inputs], self.host)
            return self._done[expr.loop][expr.index]
        if not isinstance(expr.loop, JaggedMap):
            return self.map_node(expr)
        jmap = expr.loop
        if jmap not in self._done:
            if sh.prove_equal(jmap.length, 0):
                # (a map over a list of no elements, ft.gather(xs, []):
                # empty results, as long as the lists' rows, which are
                # none; the inputs stay bound for the sizes of the shapes)
                inputs = {f"_ft_in{k}": self.rec(a)
                          for k, a in enumerate(jmap.inputs)}
                self._done[jmap] = [
                    IndexLambda(jmap.output_dtype(k).type(0),
                                jmap.output_shape(k), jmap.output_dtype(k), inputs)
                    for k in range(jmap.num_outputs)]
            elif 3 in jmap.depths:
                # documents of sentences: maps over depth 2 (jagged_nesting)
                self._done[jmap] = [self.rec(r) for r in
                                    flatten_document_map(jmap, self.host)]
            else:
                inputs = [self.rec(a) for a in jmap.inputs]
                self._done[jmap] = _MapLowering(jmap, inputs, self.host).run()
        return self._done[jmap][expr.index]


def lower_jagged_maps(roots: dict[str, Array],
                      host: HostDerivations | None = None
                      ) -> tuple[dict[str, Array], HostDerivations]:
    """*roots* with every :class:`~ftlazy.fractal_tensor.JaggedMap` replaced
    by dense nodes over the packed data, and what the host must compute at
    call time for them (see the module docs), added to *host* if given."""
    host = HostDerivations() if host is None else host
    lowerer = _JaggedMapLowerer(host)
    return {name: lowerer(a) for name, a in roots.items()}, host
