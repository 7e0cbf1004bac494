# SPDX-License-Identifier: MIT
"""Lowering of a scan, fold or reduce over the outer list of a FractalTensor
(a :class:`~ftlazy.jagged_scan_outer.JaggedScan`) for compiled programs,
called by :mod:`ftlazy.transform.jagged_lowering`.

The loop becomes a dense :class:`~ftlazy.fractal.Scan` of ``n`` steps (one
per element, in order). Its scanned inputs are each element's first row
``offsets[t]`` and length ``L_t`` (and the rows of dense arrays zipped
along); the packed values are captured whole. In the body of step ``t``:

* an array whose extent along some axis is affine in the element's length
  (``c + a*L``) is stored padded to the largest such extent over all
  elements, a size the host derives from the offsets
  (:meth:`~ftlazy.transform.jagged_lowering.HostDerivations.max_extent_for`).
  Positions past element ``t``'s own extent are computed as 0 and never
  read: the element itself reads ``values[offsets[t] + j]`` only for
  ``j < L_t``;
* a count of ``L`` alone (``min(2, L)`` of ``s[:2]``, the rows of
  ``s[-3:]`` or ``s[::2]``: :func:`counts_of_length`) is padded the same
  way, to its largest value over all elements, which the host computes
  from the offsets (a
  :class:`~ftlazy.transform.jagged_lowering.CountForm`); positions past
  element ``t``'s own count are masked as above;
* ``L`` itself (``s.shape[0]``, index arithmetic) is ``L_t``;
* rows read by index from such an array (``s[-1]``, ``ft.gather(s, idx)``)
  count negative indices from element ``t``'s own extent and are checked
  against it at run time (an :class:`IndexError`, never a read of the
  padding);
* a reduction over an extent that involves ``L`` runs to the largest extent
  and masks the steps past element ``t``'s own extent with the reduction's
  neutral element; a max or min over an empty extent is refused at call
  time, as numpy refuses it.

* a scan in the body over the element's rows (``c + a*L`` steps, an RNN
  over the sequence) runs the largest extent of steps over its padded
  scanned arrays, a scanned step mask keeping its carries once element
  ``t``'s steps are done; a scan that does not involve ``L`` is kept as it
  is. (The OpenCL code generator does not emit scans nested in a scan body
  yet: such programs are refused there.)

The carries have static shapes, so the results need no unpadding.

A fold over documents (depth 3: each step gets a document of sentences)
is first split in two. The nodes of the step that read the document but
not the carries run first, for all documents at once, as one map over the
documents (whose maps over sentences run over all sentences at once, see
:mod:`ftlazy.transform.jagged_nesting`); the fold then runs over the
documents with their per-sentence results ``(m, ...)`` as depth-2
FractalTensors over the documents' offsets (padded to the most sentences
as above) and their per-document results as dense rows. A step whose part
with the carry reads the document's tokens (a fold over them: an RNN
through every token of every document) gets the tokens as the fold's
element instead, a depth-2 FractalTensor over ``offsets1[offsets0]``.
Zipped documents are mapped together by that map (which checks their
structure at run time). Costs: the per-sentence results are stored (one
row per sentence), and each step pads to the longest document's number of
sentences (or tokens). A step whose part with the carry maps or folds over
the document's sentences, or reads both its per-sentence results and its
tokens, is refused.

What is not lowered raises :class:`NotImplementedError`: an extent that
is not affine in ``L`` or a count of it, or mixes it with other sizes, a scan
over the element's rows whose carries or captured arrays have the element's
length or whose body uses it, and other loops in the body (a map over a
FractalTensor) whose shapes involve ``L``.

.. autofunction:: lower_jagged_scan
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pymbolic.primitives as prim

from ftlazy import shapes as sh
from ftlazy.array import Array, DataWrapper, IndexLambda, Placeholder, SizeParam
from ftlazy.fractal import Body, BodyParam, Gather, LoopResult, Scan
from ftlazy.fractal_access import DerivedSize
from ftlazy.fractal_tensor import segment_lengths
from ftlazy.node import Node, iter_children, topological_order
from ftlazy.scalar_expr import (
    ExprIdentityMapper, Reduce, get_variable_names, index_var, substitute)
from ftlazy.transform.mappers import CopyMapper

__all__ = ["lower_jagged_scan", "counts_of_length"]

_INT64 = np.dtype(np.int64)
#: the binding names of the element's length and first row in rewritten
#: IndexLambdas of the body
_LEN, _START, _VALUES = "_ft_elem_len", "_ft_elem_start", "_ft_elem_values"


def _read(name: str, index: tuple) -> Any:
    var = prim.Variable(name)
    return prim.Subscript(var, index) if index else var


def _rows(array: Array, n: Any) -> IndexLambda:
    """*array* seen as ``(n, ...)`` (its length checked equal on the host)."""
    idx = tuple(index_var(k) for k in range(array.ndim))
    return IndexLambda(_read("_in0", idx), (n,) + array.shape[1:], array.dtype,
                       {"_in0": array})


def _count_expr(value: Array, symbol: str) -> Any:
    """The expression in the size *symbol* alone of *value* (a 0-d integer
    array: ``min(2, L)``), or None where it reads anything else."""
    if isinstance(value, SizeParam):
        return prim.Variable(value.name) if value.name == symbol else None
    if not (isinstance(value, IndexLambda) and value.ndim == 0
            and value.dtype.kind in "iu"):
        return None
    mapping = {}
    for key, b in value.bindings.items():
        mapping[key] = _count_expr(b, symbol)
        if mapping[key] is None:
            return None
    expr = substitute(value.expr, mapping)
    return expr if get_variable_names(expr) <= {symbol} else None


def counts_of_length(body: Body, symbol: str) -> dict[str, Any]:
    """The data-dependent sizes that *body* (not its nested loops) defines
    as counts of the element's length *symbol* alone (``min(2, L)`` of
    ``s[:2]``), as expressions in it: the padded lowering sizes them by
    their largest value (see :class:`_Padding`)."""
    counts = {}
    for n in topological_order(list(body.outputs)):
        if isinstance(n, DerivedSize):
            expr = _count_expr(n.value, symbol)
            if expr is not None:
                counts[n.name] = expr
    return counts


class _Padding:
    """Rewrites the body of one JaggedScan for the dense scan (see the
    module docs). *counts*: the body's counts of the element's length
    (:func:`counts_of_length`), extents padded as the length is."""

    def __init__(self, symbol: str, offsets: Array, host: Any,
                 length: BodyParam, counts: dict[str, Any], what: str) -> None:
        self.symbol = symbol
        #: the loop, for messages (``"fold over a FractalTensor 'xs'"``)
        self.what = what
        self.offsets = offsets
        self.host = host
        self.length = length
        self.counts = counts
        #: the sizes padded: the length and its counts
        self.names = frozenset({symbol, *counts})

    def form_of(self, c: Any) -> Any:
        """``(const, coeff)`` of extent *c* if it involves the element's
        length, a :class:`~ftlazy.transform.jagged_lowering.CountForm` if
        it involves a count of it (``min(2, L)``), else None."""
        names = sh.size_param_names(c)
        counted = names & set(self.counts)
        if self.symbol not in names and not counted:
            return None
        if counted:
            c = substitute(c, {n: self.counts[n] for n in counted})
        try:
            form = sh.to_affine(c)
        except (sh.NonAffineError, TypeError):
            form = None
        if form is not None and set(form.coeffs) == {self.symbol}:
            return (form.const, form.coeffs[self.symbol])
        if counted and get_variable_names(c) == {self.symbol}:
            from ftlazy.transform.jagged_lowering import CountForm
            lengths = segment_lengths(self.offsets)
            per_element = substitute(c, {self.symbol: _read("_in0", (
                index_var(0),))})
            return CountForm(c, IndexLambda(per_element, lengths.shape, _INT64,
                                            {"_in0": lengths}))
        raise NotImplementedError(
            f"compiling a fold over a FractalTensor whose body has an extent "
            f"{c}, not of the form c + a*L in the element's length L, is "
            "not supported (ft.evaluate_numpy evaluates it)")

    def max_name(self, form: Any) -> str:
        return self.host.max_extent_for(self.offsets, form)

    def padded_shape(self, shape: tuple) -> tuple[tuple, list]:
        """The padded shape, and ``(axis, form)`` of each padded axis."""
        new, padded = [], []
        for k, c in enumerate(shape):
            form = self.form_of(c)
            if form is None:
                new.append(c)
            else:
                new.append(prim.Variable(self.max_name(form)))
                padded.append((k, form))
        return tuple(new), padded

    def extent(self, form: Any) -> Any:
        """Extent *form* of the element in step ``t`` (an expression in
        its length, bound as ``_LEN``)."""
        if isinstance(form, tuple):
            const, coeff = form
            return const + coeff * prim.Variable(_LEN)
        return substitute(form.expr, {self.symbol: prim.Variable(_LEN)})

    def element(self, values: BodyParam, start: BodyParam, shape: tuple
                ) -> IndexLambda:
        """The padded element ``(max L, *elem)``: rows ``j < L_t`` read
        ``values[start_t + j]``, the others are 0."""
        new_shape, _ = self.padded_shape(shape)
        rest = tuple(index_var(k) for k in range(1, len(shape)))
        expr = prim.If(prim.Comparison(index_var(0), "<", prim.Variable(_LEN)),
                       _read(_VALUES, (prim.Variable(_START) + index_var(0),)
                             + rest), 0)
        return IndexLambda(expr, new_shape, values.dtype,
                           {_VALUES: values, _START: start, _LEN: self.length})

    def gather_rows(self, array: Array, indices: Array,
                    form: Any, indices_padded: list) -> IndexLambda:
        """Rows *indices* of padded *array* (axis 0 of extent *form* in the
        element's length: ``s[-1]``, ``ft.gather(s, idx)``), as numpy
        takes them from the element's own extent: negative ones count from
        its end, and each is checked at run time against it
        (:class:`~ftlazy.target.loopy.lowering.ElementRowsChecked`), never
        reading the padding or beyond. *indices_padded*: ``(axis, form)``
        of the indices' own padded axes (``s[ft.arange(L)]``), whose
        positions past element ``t``'s extent are neither checked nor
        read."""
        from ftlazy.transform.jagged_lowering import checked_rows
        valid = tuple(prim.Comparison(index_var(k), "<", self.extent(f))
                      for k, f in indices_padded)
        # (a padded position holds index 0, checked against extent 1)
        extent: Any = self.extent(form)
        if valid:
            extent = prim.If(prim.LogicalAnd(valid), extent, 1)
        extents = IndexLambda(extent, indices.shape, _INT64, {_LEN: self.length})
        return checked_rows(array, indices, extents, conditions=valid,
                            bindings={_LEN: self.length})

    def index_lambda(self, node: IndexLambda, bindings: dict[str, Array]
                     ) -> IndexLambda:
        rewriter = _ExprPadder(self, bindings)
        expr = rewriter(node.expr)
        new_shape, padded = self.padded_shape(node.shape)
        if padded:
            inside = [prim.Comparison(index_var(k), "<", self.extent(form))
                      for k, form in padded]
            expr = prim.If(inside[0] if len(inside) == 1
                           else prim.LogicalAnd(tuple(inside)), expr, 0)
        if padded or rewriter.used:
            bindings = dict(bindings)
            bindings[_LEN] = self.length
            bindings.update({f"_ft_size_{name}": SizeParam(name)
                             for name in sorted(rewriter.sizes)})
        return node.copy(expr=expr, shape=new_shape, bindings=bindings)


class _ExprPadder(ExprIdentityMapper):
    """``L`` as the element's length; reductions over extents in ``L`` run
    to the largest extent, masked past the element's own."""

    def __init__(self, padding: _Padding, bindings: dict[str, Array]) -> None:
        self.padding = padding
        self.dtype_of = bindings
        #: whether the expression reads the element's length
        self.used = False
        #: the host-derived sizes the expression uses
        self.sizes: set[str] = set()

    def map_variable(self, expr: prim.Variable) -> Any:
        if expr.name == self.padding.symbol:
            self.used = True
            return prim.Variable(_LEN)
        if expr.name in self.padding.counts:
            # (a count used as a number: s[:2].shape[0])
            self.used = True
            return substitute(self.padding.counts[expr.name],
                              {self.padding.symbol: prim.Variable(_LEN)})
        return expr

    def map_reduce(self, expr: Reduce) -> Any:
        inner = self.rec(expr.inner)
        bounds, masks = [], []
        for name, lo, hi in expr.bounds:
            if self.padding.names & sh.size_param_names(lo):
                raise NotImplementedError(
                    "compiling a fold over a FractalTensor whose body reduces "
                    f"from {lo}, which depends on the element's length, is not "
                    "supported")
            form = self.padding.form_of(hi)
            if form is None:
                bounds.append((name, lo, hi))
                continue
            max_name = self.padding.max_name(form)
            self.sizes.add(max_name)
            self.used = True
            if expr.op in ("max", "min"):
                self.padding.host.nonempty.append(
                    (self.padding.offsets, form, expr.op, None,
                     self.padding.what))
            bounds.append((name, lo, prim.Variable(max_name)))
            masks.append(prim.Comparison(prim.Variable(name), "<",
                                         self.padding.extent(form)))
        if masks:
            from ftlazy.target.loopy.expressions import expr_dtype
            from ftlazy.target.loopy.lowering import neutral_element
            dtype = expr_dtype(expr.inner, self.dtype_of) or np.dtype(np.float64)
            cond = masks[0] if len(masks) == 1 else prim.LogicalAnd(tuple(masks))
            inner = prim.If(cond, inner, neutral_element(expr.op, dtype))
        return Reduce(expr.op, inner, tuple(bounds))


def _in_shape(names: frozenset[str], array: Array) -> bool:
    return any(names & sh.size_param_names(c) for c in array.shape)


def _body_involves(names: frozenset[str], body: Body) -> bool:
    """Whether *body* uses a size of *names* anywhere (nested bodies
    included)."""
    from ftlazy.fractal import Loop, _own_size_names
    stack = [body]
    while stack:
        for m in topological_order(list(stack.pop().outputs)):
            if ((isinstance(m, Array) and _in_shape(names, m))
                    or names & _own_size_names(m)):
                return True
            if isinstance(m, Loop):
                stack.append(m.body)
    return False


def _scan_involves(names: frozenset[str], scan: Scan) -> bool:
    """Whether a scan in the body has inputs of a shape in a size of
    *names*, or uses one anywhere in its body."""
    return (any(_in_shape(names, a) for a in scan.inputs)
            or _body_involves(names, scan.body))


def _scan_over_rows(padding: _Padding, scan: Scan, form: Any,
                    inputs: list[Array]) -> Scan:
    """A scan of the body over ``c + a*L`` steps (the element's rows) as a
    dense scan of the largest such extent: its scanned arrays are padded,
    and a scanned step mask keeps each carry once the element's steps are
    done (the steps past them change nothing). Its stacked results are
    padded as any array of that extent. Its body must not use ``L``."""
    from ftlazy.transform.jagged_scans import _Substituter
    names = padding.names
    nc, ns = scan.num_carries, scan.num_scanned
    if (any(_in_shape(names, a) for a in scan.inits + scan.captured)
            or any(padding.form_of(a.shape[0]) != form
                   or any(names & sh.size_param_names(c) for c in a.shape[1:])
                   for a in scan.scanned)
            or _body_involves(names, scan.body)):
        raise NotImplementedError(
            "compiling a scan over an element's rows inside a fold over a "
            "FractalTensor is supported where only its scanned arrays have "
            "the element's length and its body does not use it")
    steps = prim.Variable(padding.max_name(form))
    mask = IndexLambda(prim.Comparison(index_var(0), "<", padding.extent(form)),
                       (steps,), np.dtype(np.bool_), {_LEN: padding.length})
    new_inputs = inputs[:nc + ns] + [mask] + inputs[nc + ns:]
    params = {p.index: BodyParam(p.index + (p.index >= nc + ns), p.shape,
                                 p.dtype) for p in scan.body.params}
    substituter = _Substituter(params)
    mask_param = BodyParam(nc + ns, (), np.dtype(np.bool_))
    outputs = []
    for k, out in enumerate(scan.body.outputs):
        idx = tuple(index_var(j) for j in range(out.ndim))
        outputs.append(IndexLambda(
            prim.If(prim.Variable("_mask"), _read("_new", idx), _read("_old", idx)),
            out.shape, out.dtype,
            {"_mask": mask_param, "_new": substituter(out), "_old": params[k]}))
    body_params = sorted(list(params.values()) + [mask_param],
                         key=lambda p: p.index)
    return Scan(Body(tuple(body_params), tuple(outputs)), tuple(new_inputs),
                nc, ns + 1, scan.keep_all)


class _Replacing(CopyMapper):
    """Copies a body's nodes with some replaced (each node in *replace* by
    its value, not entered); nested bodies, their own scopes, are kept."""

    def __init__(self, replace: dict[Node, Array]) -> None:
        super().__init__()
        self._cache.update(replace)

    def map_body(self, body: Node) -> Node:
        return body


def _refuse_documents(what: str, why: str) -> NotImplementedError:
    return NotImplementedError(
        f"compiling a {what} of depth 3 whose step {why} is not supported "
        "(the part of a step that does not use the carry is computed first, "
        "for all documents at once; the part that uses the carry may read "
        "its per-document and per-sentence results, not the document; "
        "ft.evaluate_numpy evaluates it)")


def _split_documents(jscan: Any, inputs: list[Array], host: Any) -> Any:
    """A fold over documents (depth 3) as a fold over depth 2: the step's
    nodes that read the document but not the carries are computed first by
    one map over the documents (lowered by
    :func:`~ftlazy.transform.jagged_nesting.flatten_document_map`: its maps
    over sentences run over all sentences at once). Its per-document results
    of shape ``(m, ...)`` (per sentence) are zipped into the fold as
    depth-2 FractalTensors over the documents' offsets, the others as dense
    arrays ``(n, ...)``. Returns that :class:`JaggedScan` over *inputs*,
    the lowered inputs of *jscan*, and the pre-map's lowered results."""
    from ftlazy.fractal import Loop, _own_size_names
    from ftlazy.fractal_tensor import JaggedMap
    from ftlazy.jagged_scan_outer import JaggedScan
    from ftlazy.transform.jagged_lowering import _JaggedMapLowerer
    what, body, nc = jscan.what, jscan.body, jscan.num_carries
    parts = jscan.mapped_parts()
    m, tokens = jscan.symbols
    # where each scanned input's body parameters and lowered arrays start
    first_param, first_input = [], []
    param_pos = input_pos = nc
    for d, _ in parts:
        first_param.append(param_pos)
        first_input.append(input_pos)
        param_pos += 2 if d == 3 else 1
        input_pos += d
    # (zipped documents: the map over them checks their structure equal)
    doc_index = next(k for k, (d, _) in enumerate(parts) if d == 3)
    sentence_offsets = {first_param[k] + 1 for k, (d, _) in enumerate(parts)
                        if d == 3}
    doc = sentence_offsets | {i - 1 for i in sentence_offsets}
    offsets0, offsets1 = inputs[first_input[doc_index] + 1:
                                first_input[doc_index] + 3]

    order = topological_order(list(body.outputs))
    uses_carry: set[Node] = set()
    uses_doc: set[Node] = set()
    for node in order:
        if isinstance(node, BodyParam):
            if node.index < nc:
                uses_carry.add(node)
            elif node.index in doc:
                uses_doc.add(node)
            continue
        children = list(iter_children(node))
        if any(c in uses_carry for c in children):
            uses_carry.add(node)
        if (any(c in uses_doc for c in children)
                or {m, tokens} & _own_size_names(node)):
            uses_doc.add(node)
    # nodes that read the document but not the carries, used by nodes that
    # read the carries (or results): the per-document part's results
    read_with_carry = {c: user for user in order if user in uses_carry
                       for c in iter_children(user)}
    per_doc = [node for node in order if node in uses_doc
               and node not in uses_carry
               and (node in read_with_carry or node in body.outputs)]

    # 1. the map over the documents (its parameters: the scan's, less the
    # carries)
    renumber = {p: BodyParam(p.index - nc, p.shape, p.dtype)
                for p in body.params[nc:]}
    # (per-document results with one row per sentence or one per token: the
    # fold's element, of length m or T)
    jagged: dict[str, list[Node]] = {m: [], tokens: []}
    dense = []
    for node in per_doc:
        shape = node.shape
        reader = read_with_carry.get(node)
        if isinstance(node, BodyParam) and isinstance(reader, Loop) and (
                isinstance(reader, JaggedMap) or node.index in sentence_offsets):
            # (a loop over the tokens, with the carry, runs in the fold)
            raise _refuse_documents(
                what, f"runs a {type(reader).__name__} over the document's "
                "sentences that uses the carry")
        first = [s for s in (m, tokens)
                 if shape and s in sh.size_param_names(shape[0])]
        if any({m, tokens} & sh.size_param_names(c) for c in shape[1:]) or (
                first and not sh.prove_equal(shape[0], prim.Variable(first[0]))):
            raise _refuse_documents(
                what, f"uses an array of shape {sh.shape_str(shape)} "
                "together with the carry (per-document results must have one "
                "row per sentence or one per token)")
        (jagged[first[0]] if first else dense).append(node)
    if jagged[m] and jagged[tokens]:
        raise _refuse_documents(
            what, "uses per-sentence results and the document's tokens "
            "together with the carry (one of the two compiles)")
    symbol, other = (tokens, m) if jagged[tokens] else (m, tokens)
    offsets = offsets0 if symbol == m else IndexLambda(   # (first tokens)
        prim.Variable("_in1")[prim.Variable("_in0")[index_var(0)]],
        offsets0.shape, _INT64, {"_in0": offsets0, "_in1": offsets1})
    lowered: dict[Node, Array] = {}
    if per_doc:
        rebuild = _Replacing(renumber)
        pre = JaggedMap(Body(tuple(renumber.values()),
                             tuple(rebuild(node) for node in per_doc)),
                        tuple(inputs[nc:]), jscan.depths,
                        tuple((m, tokens) if d == 3 else () for d in jscan.depths),
                        what)
        lowerer = _JaggedMapLowerer(host)
        try:
            lowered = {node: lowerer(LoopResult(pre, k))
                       for k, node in enumerate(per_doc)}
        except NotImplementedError as err:
            raise NotImplementedError(
                f"compiling a {what} of depth 3: the part of its step that "
                f"does not use the carry is a map over the documents: {err}"
            ) from err

    # 2. the fold over the per-document results
    params: list[BodyParam] = list(body.params[:nc])
    new_inputs: list[Array] = list(inputs[:nc])
    depths: list[int] = []
    replace: dict[Node, Array] = {}

    def add(old: Array | None, array: Array, depth: int, shape: tuple,
            dtype: np.dtype) -> None:
        param = BodyParam(len(params), shape, dtype)
        params.append(param)
        if old is not None:
            replace[old] = param
        new_inputs.extend([array, offsets] if depth == 2 else [array])
        depths.append(depth)

    for node in jagged[symbol]:
        add(node, lowered[node], 2, node.shape, node.dtype)
    if not jagged[symbol]:
        # (the fold needs one FractalTensor over the documents' sentences:
        # the lengths of the sentences)
        add(None, segment_lengths(offsets1), 2, (prim.Variable(m),), _INT64)
    for node in dense:
        add(node, lowered[node], 1, node.shape, node.dtype)
    for (d, _), param, first in zip(parts, first_param, first_input):
        if d == 1:
            old = body.params[param]
            add(old, inputs[first], 1, old.shape, old.dtype)
    for old, array in zip(body.params[param_pos:], inputs[input_pos:]):
        param = BodyParam(len(params), old.shape, old.dtype)
        params.append(param)
        replace[old] = param
        new_inputs.append(array)
    rebuild = _Replacing(replace)
    outputs = tuple(rebuild(o) for o in body.outputs)
    for node in topological_order(list(outputs)):
        if other in _own_size_names(node):
            raise _refuse_documents(
                what, "uses the document's number of "
                f"{'tokens' if other == tokens else 'sentences'} together "
                "with the carry and its "
                f"{'tokens' if symbol == tokens else 'per-sentence results'}")
        if isinstance(node, BodyParam) and node not in params:
            raise AssertionError("a document parameter left in the fold")
    return JaggedScan(Body(tuple(params), outputs), tuple(new_inputs), nc,
                      tuple(depths), (symbol,), jscan.keep_all, what)


def lower_jagged_scan(jscan: Any, inputs: list[Array], host: Any) -> list[Array]:
    """The results of the :class:`~ftlazy.jagged_scan_outer.JaggedScan`
    *jscan* as dense nodes: a :class:`~ftlazy.fractal.Scan` over the
    elements (see the module docs). *inputs* are its lowered inputs, in
    order; *host* (a
    :class:`~ftlazy.transform.jagged_lowering.HostDerivations`) collects
    what the host computes at call time."""
    from ftlazy.target.loopy.host_loops import describe_loop
    from ftlazy.transform.batch import MapBatcher
    from ftlazy.transform.jagged_lowering import _LowererKeepingGathers
    parts = jscan.mapped_parts()
    if any(d > 3 for d, _ in parts):
        raise NotImplementedError(
            f"compiling a {jscan.what} of depth "
            f"{max(d for d, _ in parts)} is not supported yet "
            "(ft.evaluate_numpy evaluates it)")
    if any(d == 3 for d, _ in parts):
        flat = _split_documents(jscan, inputs, host)
        return lower_jagged_scan(flat, list(flat.inputs), host)
    nc = jscan.num_carries
    inits = inputs[:nc]
    pos = nc
    offsets_nodes: list[Array] = []
    values_nodes: list[Array] = []
    dense: list[Array] = []
    for depth, _ in parts:
        new = inputs[pos:pos + depth]
        pos += depth
        if depth == 1:
            dense.append(new[0])
        else:
            values_nodes.append(new[0])
            offsets_nodes.append(new[1])
    captured = inputs[pos:]
    offsets = offsets_nodes[0]
    n = sh.sub(offsets.shape[0], 1)
    # (arrays the lowering made with one row per element need no check)
    distinct = tuple(dict.fromkeys(offsets_nodes))
    unproven = tuple(a for a in dense if not sh.prove_equal(a.shape[0], n))
    if len(distinct) > 1 or unproven:
        host.zipped.append((jscan.what, distinct, unproven))
    (symbol,) = jscan.symbols

    # the dense scan's inputs: carries; scanned first rows, lengths and
    # dense rows; captured values and the body's own captures
    starts = IndexLambda(prim.Variable("_off")[index_var(0)], (n,), _INT64,
                         {"_off": offsets})
    scanned = [starts, segment_lengths(offsets)] + [
        a if sh.prove_equal(a.shape[0], n) else _rows(a, n) for a in dense]
    outer = list(captured) + values_nodes
    new_inputs = list(inits) + scanned + outer
    params = [BodyParam(k, a.shape if k < nc or k >= nc + len(scanned)
                        else a.shape[1:], a.dtype)
              for k, a in enumerate(new_inputs)]
    carry_params = params[:nc]
    start_param, length_param = params[nc], params[nc + 1]
    dense_params = params[nc + 2:nc + len(scanned)]
    captured_params = params[nc + len(scanned):nc + len(scanned) + len(captured)]
    values_params = params[nc + len(scanned) + len(captured):]
    padding = _Padding(symbol, offsets, host, length_param,
                       counts_of_length(jscan.body, symbol),
                       describe_loop(jscan))

    # the old body's parameters: carries, elements (one per scanned input),
    # captured
    old_params: list[Array] = list(carry_params)
    jagged_k = dense_k = 0
    for depth, arrays in parts:
        if depth == 1:
            old_params.append(dense_params[dense_k])
            dense_k += 1
        else:
            old_params.append(padding.element(
                values_params[jagged_k], start_param,
                (prim.Variable(symbol),) + arrays[0].shape[1:]))
            jagged_k += 1
    old_params += captured_params

    outputs = [_LowererKeepingGathers()(MapBatcher()(o))
               for o in jscan.body.outputs]
    values: dict[Node, Array] = {}
    for node in topological_order(outputs):
        if isinstance(node, BodyParam):
            values[node] = old_params[node.index]
        elif isinstance(node, SizeParam) and node.name == symbol:
            values[node] = length_param
        elif isinstance(node, IndexLambda):
            values[node] = padding.index_lambda(
                node, {name: values[b] for name, b in node.bindings.items()})
        elif isinstance(node, Gather):
            if node.axis != 0 or any(padding.form_of(c) is not None
                                     for c in node.array.shape[1:]):
                raise NotImplementedError(
                    f"compiling a gather inside a {jscan.what} is only "
                    "supported along axis 0 of an array whose other axes do "
                    "not depend on the element")
            form = padding.form_of(node.array.shape[0])
            if form is None:
                values[node] = Gather(values[node.array], values[node.indices], 0)
            else:
                values[node] = padding.gather_rows(
                    values[node.array], values[node.indices], form,
                    padding.padded_shape(node.indices.shape)[1])
        elif isinstance(node, DerivedSize) and node.name in padding.counts:
            values[node] = IndexLambda(
                padding.extent(padding.form_of(prim.Variable(node.name))), (),
                _INT64, {_LEN: length_param})
        elif isinstance(node, (Placeholder, DataWrapper, SizeParam)):
            values[node] = node
        elif isinstance(node, LoopResult) and isinstance(node.loop, Scan):
            values[node] = LoopResult(values[node.loop], node.index)
        elif isinstance(node, Scan) and not _scan_involves(padding.names, node):
            values[node] = node.copy(
                inputs=tuple(values[a] for a in node.inputs))
        elif isinstance(node, Scan) and padding.form_of(node.length) is not None:
            values[node] = _scan_over_rows(
                padding, node, padding.form_of(node.length),
                [values[a] for a in node.inputs])
        else:
            raise NotImplementedError(
                f"compiling a {type(node).__name__} whose shapes or body use "
                f"the element's length inside a {jscan.what} is not "
                "supported (ft.evaluate_numpy evaluates it)")
    body = Body(tuple(params), tuple(values[o] for o in outputs))
    scan = Scan(body, tuple(new_inputs), nc, len(scanned), jscan.keep_all)
    return [LoopResult(scan, k) for k in range(nc)]
