# SPDX-License-Identifier: MIT
"""From a lowered DAG (IndexLambdas over placeholders and size params, plus
Scans) to one loopy translation unit.

* :func:`build_kernel` plans first (:mod:`.plan`: a strategy per stored
  array, from the device profile), then :class:`KernelBuilder` emits loopy
  statements from the plan; it decides nothing about the device itself.
* Every stored array (see :mod:`.storage`) becomes an assignment in its own
  loop nest, with its readers' inlined bodies substituted in.
* Stored arrays are grouped into segments by dependency level and grid
  shape; a global barrier between segments lets loopy split them into OpenCL
  kernels, all launched by one executor call.
* A :class:`~ftlazy.fractal.Scan` becomes a sequential loop in a kernel of
  its own (:mod:`.scan`); matrix products and reductions get special loop
  nests (:mod:`.contractions`); flat elementwise kernels run on vectors
  (:mod:`.vectorize`).
* Inames are created pre-split and tagged for the device in a single
  ``tag_inames`` call.
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from typing import Any, Callable, Iterator

import islpy as isl
import loopy as lp
import numpy as np
import pymbolic.primitives as prim

from ftlazy import shapes as sh
from ftlazy.array import Array, IndexLambda, Placeholder, SizeParam
from ftlazy.fractal import BodyParam, LoopResult, Scan
from ftlazy.node import Node, topological_order
from ftlazy.scalar_expr import (
    ExprIdentityMapper, TypeCast, get_variable_names, iter_subexpressions,
    substitute)
from ftlazy.tags import Named, PrefixNamed
from ftlazy.target.loopy.device import kernel_build_options
from ftlazy.target.loopy.division_probe import divide_constants_in_double
from ftlazy.target.loopy.probe import LANES
from ftlazy.target.loopy.expressions import (
    C_FUNCTIONS, Translator, plain_index_arithmetic, register_builtins,
    storage_dtype)
from ftlazy.target.loopy.storage import MAX_STEP_KINDS, has_reduce
import ftlazy.target.loopy.condition_sets  # noqa: F401  (patches loopy once)
import ftlazy.target.loopy.c_precedence  # noqa: F401  (patches loopy once)
import ftlazy.target.loopy.grid_axes  # noqa: F401  (patches loopy once)
from ftlazy.target.loopy.vectorize import ELEMENTWISE_BUILTINS, vector_view
from ftlazy.target.loopy.vector_values import (
    LANE, MATH_PREFIX, gather_name, register_vector_callables, vector_dtype)
from ftlazy.target.loopy.scopes import ArgSpec, KernelParts, Scope, StoreContext
from ftlazy.target.loopy.scan import (
    batched_loop_nest, declare_scan_nosync, emit_scan_chain,
    flat_row_block_nest)
from ftlazy.target.loopy.rolling import MIN_RUN, roll_repeated_statements
from ftlazy.target.loopy.target import FtlazyOpenCLTarget
from ftlazy.target.loopy.gpu_contractions import emit_tiled_contraction
from ftlazy.target.loopy.gpu_reductions import emit_group_reduction
from ftlazy.target.loopy.contractions import (
    emit_blocked_contraction, emit_split_reduction)
from ftlazy.target.loopy.plan import (
    KernelPlan, last_axis_not_one, local_size, plan_kernel)
from ftlazy.target.loopy.ranges import (
    DataRange, ElementRows, data_dependent_range, element_rows, known_element,
    parse_segment_ids_binding, reads_arrays, tighten_to_guards)
from ftlazy.target.loopy.profile import DeviceProfile
from ftlazy.target.loopy.segments import emit_segment_reduction
from ftlazy.target.loopy.segment_fusion import (
    NotElementLocal, fused_order)
from ftlazy.target.loopy.ranged_lanes import emit_laned_ranged_reduction
from ftlazy.target.loopy.padding import (
    assign_bounds, bound_scalars, bounded_axis, emit_padded_contraction,
    padding_bounds)


class RangeTranslator(Translator):
    """A :class:`~.expressions.Translator` that runs reductions over a
    data-dependent range (:func:`~.ranges.data_dependent_range`) over an
    iname from *ranged_iname* instead of masking every step up to the
    static bound. The range's bounds are translated in the context around
    the reduction; where they involve an enclosing reduction's variable
    (no private scalar can hold them), the reduction stays masked."""

    def __init__(self, *args: Any, ranged_iname: Callable[[DataRange], str],
                 rows: list[ElementRows],
                 storage: Callable[[Any], str | None], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.ranged_iname = ranged_iname
        #: ranges known to run over one element's packed rows (shared by
        #: the translators of one store, see :func:`~.ranges.known_element`)
        self.rows = rows
        self.storage = storage
        self.plain_iname = self.fresh_iname
        #: variables of the reductions being translated (outermost first)
        self.enclosing: list[str] = []

    def map_reduce(self, expr: Any) -> Any:
        expr = tighten_to_guards(expr)
        found = data_dependent_range(expr, self.bindings)
        names = [name for name, _, _ in expr.bounds]
        if found is not None:
            stripped, ranges = found
            used: set[str] = set()
            for rng in ranges.values():
                for b in rng.lower + rng.upper:
                    used |= get_variable_names(b)
            if not used & set(self.enclosing):
                inames = {}
                known = []
                for name, rng in ranges.items():
                    translated = DataRange(
                        tuple(plain_index_arithmetic(self.rec(b)) for b in rng.lower),
                        tuple(plain_index_arithmetic(self.rec(b)) for b in rng.upper))
                    inames[name] = self.ranged_iname(translated)
                    known += element_rows(translated, inames[name])
                self.rows.extend(known)
                try:
                    return self._reduce(stripped, names, inames)
                finally:
                    del self.rows[len(self.rows) - len(known):]
        return self._reduce(expr, names, {})

    def map_subscript(self, expr: Any) -> Any:
        # a segment id of a packed row that a ranged reduction over one
        # element reads: that element, without the indirect load
        seg = parse_segment_ids_binding(expr.aggregate.name) if self.rows else None
        if seg is not None and len(expr.index_tuple) == 1:
            form, offsets = seg
            name = self.storage(self.bindings.get(offsets))
            if name is not None:
                outer, self.in_index = self.in_index, True
                try:
                    index = plain_index_arithmetic(self.rec(expr.index_tuple[0]))
                finally:
                    self.in_index = outer
                element = known_element(self.rows, form, name, index)
                if element is not None:
                    return element
        return super().map_subscript(expr)

    def _reduce(self, expr: Any, names: list[str], inames: dict[str, str]
                ) -> Any:
        pending = iter(names)

        def fresh(upper: Any) -> str:
            name = next(pending)
            return inames[name] if name in inames else self.plain_iname(upper)
        self.fresh_iname = fresh
        self.enclosing.extend(names)
        try:
            return super().map_reduce(expr)
        finally:
            self.fresh_iname = self.plain_iname
            del self.enclosing[len(self.enclosing) - len(names):]


class KernelBuilder:
    """Emits the loopy kernel for a canonical, lowered DAG from its
    :class:`~ftlazy.target.loopy.plan.KernelPlan`."""

    def __init__(self, outputs: dict[str, Array], plan: KernelPlan,
                 order: list[Node]) -> None:
        self.outputs = outputs
        self.plan = plan
        #: id of a store's context -> (the context, index in the domains,
        #: parameters, inames, constraints) of its data-dependent ranges
        self._ranged_domains: dict[int, tuple[Any, int, set, list, list]] = {}
        self.profile = plan.profile
        self.order = order
        #: the loopy kernel under construction
        self.parts = KernelParts()
        self.vector_length = plan.vector_length
        #: arguments passed as (n / width, width) views (flat vector kernels)
        self.vector_args: list[str] = []
        #: vector width of the row loop being emitted (1: none)
        self._row_width = 1
        #: lane inames whose stores clamp each lane's index (bounded axes,
        #: see :func:`~.padding.bounded_axis`): never a loop over the lanes
        self.clamped_lanes: set[str] = set()
        #: stored array -> dependency level (its kernel launch)
        self.level: dict[Node, float] = {}
        #: private statements left in straight-line code (after rolling)
        self.private_statements = 0
        #: the :mod:`.vector_values` callables the kernel calls
        self.vector_callables: set[str] = set()
        #: while a row group is emitted (see :mod:`.row_fusion`): its
        #: members' axis-0 hardware inames by (extent, group size), shared
        self.shared_rows: dict[tuple[str, int], tuple[str, str]] | None = None
        #: ranges over one element's packed rows being translated
        self.element_rows: list[ElementRows] = []
        #: id prefixes of fused groups' instructions (one work item writes
        #: and reads their arrays: no global synchronization among them)
        self.nosync_prefixes: list[str] = []

    # {{{ names and domains

    def storage_name(self, n: Array) -> str:
        for t in n.tags:
            if isinstance(t, (Named, PrefixNamed)):
                chosen = t.name if isinstance(t, Named) else t.prefix
                if chosen in OPENCL_RESERVED or chosen.startswith(("get_", "atomic_")):
                    raise ValueError(
                        f"{type(t).__name__}({chosen!r}): {chosen!r} is an OpenCL C "
                        "keyword, type or builtin and cannot name an array")
            if isinstance(t, Named):
                if t.name in self.parts.temporaries:
                    raise ValueError(f"two arrays are tagged Named({t.name!r})")
                self.plan.names[n] = t.name
                return t.name
            if isinstance(t, PrefixNamed):
                self.plan.names[n] = name = self.parts.fresh(t.prefix + "_")
                return name
        self.plan.names[n] = name = self.parts.fresh("_ft_t")
        return name

    # }}}

    # {{{ expressions

    def _read(self, node: Array, index: tuple, ctx: StoreContext) -> Any:
        scope = ctx.scope
        if isinstance(node, SizeParam):
            return prim.Variable(node.name)
        if isinstance(node, BodyParam):
            return scope.params[node.index](index)
        if node in self.packed:
            return self.packed_read(node, index)
        if node in scope.names:
            ctx.reads.add(node)
            ref = prim.Subscript(prim.Variable(scope.names[node]), index or (0,))
            # (only when the array spans the loop nest: else the read may be
            # guarded by a condition the hoisted load would escape)
            if (index and index == ctx.index and ctx.shape is not None
                    and self.vector_length is None
                    and not any(i.startswith("_ft_lane") for i in ctx.inames)
                    and sh.shapes_equal(node.shape, ctx.shape)):
                return self._load_once(node, ref, ctx)
            return ref
        if node in scope.plan.private:
            return self._private(node, ctx)
        if isinstance(node, IndexLambda):
            padding = padding_bounds(node)
            if padding is not None:
                # (inlined: its readers read only inside each element's
                # extent, where the guard of its padding holds)
                return self.translate_expr(
                    padding[0], node,
                    {f"_{i}": idx for i, idx in enumerate(index)}, ctx)
            return self._translate(node, index, ctx)
        raise AssertionError(f"unexpected node in code generation: {node!r}")

    def read_in(self, node: Array, index: tuple, scope: Scope) -> Any:
        """*node* at *index* in *scope*, outside any loop nest's context (a
        loop input that its loop computes where it reads it)."""
        return self._read(node, index, StoreContext(scope, [], index))

    def packed_read(self, node: Placeholder, index: tuple) -> Any:
        pack, offset = self.packed[node]
        flat: Any = offset
        stride = 1
        for extent, idx in reversed(list(zip(node.shape, index))):
            flat = flat + idx * stride if stride != 1 else flat + idx
            stride *= extent
        return prim.Subscript(prim.Variable(pack), (flat,))

    def _translate(self, node: IndexLambda, index: tuple, ctx: StoreContext) -> Any:
        index_map = {f"_{i}": idx for i, idx in enumerate(index)}
        return self.translate_expr(node.expr, node, index_map, ctx)

    def translate_expr(self, expr: Any, node: IndexLambda,
                       index_map: dict[str, Any], ctx: StoreContext) -> Any:
        """*expr* (part of *node*'s body) as a loopy expression, with the
        variables of *index_map* substituted and bindings read via
        :meth:`_read` in *ctx*."""
        return self.translator(node, index_map, ctx)(expr)

    def translate_range(self, rng: DataRange, node: IndexLambda,
                        index_map: dict[str, Any], ctx: StoreContext) -> DataRange:
        """*rng*'s bounds (parts of *node*'s body) translated as
        :meth:`translate_expr` does, in plain index arithmetic."""
        def bounds(values: tuple) -> tuple:
            return tuple(plain_index_arithmetic(
                self.translate_expr(b, node, index_map, ctx)) for b in values)
        return DataRange(bounds(rng.lower), bounds(rng.upper))

    def translator(self, node: IndexLambda, index_map: dict[str, Any],
                   ctx: StoreContext) -> RangeTranslator:
        """The translator of :meth:`translate_expr`."""
        return RangeTranslator(
            index_map, node.bindings, lambda b, idx: self._read(b, idx, ctx),
            self.parts.fresh_reduction_iname, self.parts.params.add,
            ranged_iname=lambda rng: self.ranged_iname(rng, ctx),
            rows=self.element_rows,
            storage=lambda b: ctx.scope.names.get(b) if b is not None else None)

    def range_bound(self, prefix: str, values: tuple, combine: type,
                    ctx: StoreContext) -> Any:
        """The bound of a data-dependent range given by (translated)
        *values*, combined by *combine* (``prim.Max`` for a lower bound,
        ``prim.Min`` for an upper one): an integer or an affine expression
        of size parameters where it reads no array, else a private int64
        scalar assigned in the loop nest of *ctx*."""
        consts = [v for v in values if isinstance(v, (int, np.integer))]
        others = [v for v in values if not isinstance(v, (int, np.integer))]
        if consts:
            best = (max if combine is prim.Max else min)(int(c) for c in consts)
            if not others:
                return best
            others.append(best)
        value = others[0] if len(others) == 1 else combine(tuple(others))
        if not reads_arrays(value) and not isinstance(value, combine):
            return value  # affine in size parameters: a domain bound
        name = self.parts.private_array(prefix, np.dtype(np.int64), ())
        insn_id = name + "_insn"
        ctx.pending.append(lp.Assignment(
            prim.Variable(name), value, id=insn_id,
            within_inames=frozenset(ctx.scope.outer_inames)
            | frozenset(ctx.inames),
            within_inames_is_final=True, depends_on=frozenset(ctx.deps)))
        ctx.deps.add(insn_id)
        return prim.Variable(name)

    def domain_bound(self, bound: Any) -> tuple[str, set[str]]:
        """A bound from :meth:`range_bound` as isl text, and the domain
        parameters it needs: its private scalar, or its size parameters
        (which the kernel then declares)."""
        if isinstance(bound, (int, np.integer)):
            return str(int(bound)), set()
        if isinstance(bound, prim.Variable) and bound.name.startswith(
                ("_ft_lo", "_ft_hi")):
            return bound.name, {bound.name}
        names = sh.size_param_names(bound)
        self.parts.params |= names
        return (str(bound) if isinstance(bound, prim.Variable)
                else sh.to_affine(bound).to_isl()), names

    def ranged_iname(self, rng: DataRange, ctx: StoreContext) -> str:
        """A reduction iname over a data-dependent range (bounds already
        translated): its bounds that read arrays go to private int64
        scalars assigned in the loop nest of *ctx* (:meth:`range_bound`),
        and the iname's domain is parameterised by them (``[s, e] ->
        {[j]: s <= j < e}``)."""
        low = self.range_bound("_ft_lo", rng.lower, prim.Max, ctx)
        high = self.range_bound("_ft_hi", rng.upper, prim.Min, ctx)
        iname = self.parts.fresh("_ft_rj")
        (lo_str, lo_params), (hi_str, hi_params) = (
            self.domain_bound(b) for b in (low, high))
        params = lo_params | hi_params
        # every ranged iname of one store goes into one domain: sibling
        # domains would need a branch in loopy's domain tree
        key = id(ctx)
        if key in self._ranged_domains and self._ranged_domains[key][0] is ctx:
            _, index, old_params, inames, clauses = self._ranged_domains[key]
        else:
            index, old_params, inames, clauses = len(self.parts.domains), set(), [], []
            self.parts.domains.append("")
        params = old_params | params
        inames = inames + [iname]
        clauses = clauses + [f"{lo_str} <= {iname} < {hi_str}"]
        # (the context is kept so that its id is not reused by another)
        self._ranged_domains[key] = (ctx, index, params, inames, clauses)
        self.parts.domains[index] = (
            f"[{', '.join(sorted(params))}] -> {{ [{', '.join(inames)}]: "
            f"{' and '.join(clauses)} }}")
        return iname

    def _load_once(self, node: Array, ref: Any, ctx: StoreContext) -> Any:
        """An element read at the loop nest's own index, loaded into a
        private variable once per loop nest (keeps long chains that read one
        array many times short in the source)."""
        key = ("load", node)
        if key not in ctx.privates:
            self._private_statement(key, "_ft_v", node.dtype, ref, set(), ctx)
        name, insn_id = ctx.privates[key]
        ctx.deps.add(insn_id)
        return self._private_ref(name, ctx)

    def _vector_lane(self, ctx: StoreContext) -> str | None:
        """The loop nest's ``vec`` iname, if it runs on vectors."""
        lane = ctx.inames[-1] if ctx.inames else None
        return lane if self.parts.iname_tags.get(lane) == "vec" else None

    def _private_ref(self, name: str, ctx: StoreContext) -> Any:
        """A private statement's value: a scalar, or on vector loop nests
        this lane of a vector."""
        lane = self._vector_lane(ctx)
        if lane is None:
            return prim.Variable(name)
        return prim.Subscript(prim.Variable(name), (prim.Variable(lane),))

    def _private_statement(self, key: Any, prefix: str, dtype: np.dtype,
                           expr: Any, deps: set[str], ctx: StoreContext) -> str:
        """``private = expr`` in the loop nest of *ctx*, remembered under
        *key*; returns the statement's id."""
        if self._vector_lane(ctx) is None:
            name = self.parts.private_array(prefix, dtype, ())
        else:
            name = self.parts.private_array(
                prefix, dtype, (self.plan.vector_width,), "vec")
        insn_id = name + "_insn"
        self.private_statements += 1
        ctx.pending.append(lp.Assignment(
            self._private_ref(name, ctx), expr, id=insn_id,
            within_inames=frozenset(ctx.scope.outer_inames) | frozenset(ctx.inames),
            within_inames_is_final=True, depends_on=frozenset(deps)))
        ctx.privates[key] = (name, insn_id)
        return insn_id

    def _reachable_privates(self, node: IndexLambda, scope: Scope
                            ) -> list[IndexLambda]:
        """Private statements *node* inlines, in post-order (iterative)."""
        order: list[IndexLambda] = []
        seen: set[Node] = set()
        stack: list[tuple[Node, bool]] = [(node, False)]
        while stack:
            n, done = stack.pop()
            if done:
                if n in scope.plan.private:
                    order.append(n)
                continue
            if n in seen:
                continue
            seen.add(n)
            stack.append((n, True))
            for b in n.bindings.values():
                if (isinstance(b, IndexLambda) and b not in scope.names
                        and b not in seen):
                    stack.append((b, False))
        return order

    def _private(self, node: IndexLambda, ctx: StoreContext) -> Any:
        if node in ctx.privates:
            name, insn_id = ctx.privates[node]
            ctx.deps.add(insn_id)
            return self._private_ref(name, ctx)
        outer_deps, ctx.deps = ctx.deps, set()
        expr = self._translate(node, ctx.index, ctx)
        insn_id = self._private_statement(node, "_ft_p", node.dtype, expr,
                                          ctx.deps, ctx)
        ctx.deps = outer_deps | {insn_id}
        return self._private_ref(ctx.privates[node][0], ctx)

    # }}}

    # {{{ loop nests

    def loop_nest(self, shape: tuple, scope: Scope, cheap: bool = True,
                  lanes: int = 1, bounded: dict[int, str] | None = None
                  ) -> tuple[list[str], tuple]:
        """Inames over *shape* and the index expressions of its axes.

        Every loop nest of a kernel must use the same hardware axes, so axis 0
        is always split into a work-group part and a work-item part: for the
        outer DAG ``(g.0, l.0)``, in a scan (one work group)
        ``(sequential, l.0)``. On CPUs work groups are small and each work
        item runs the contiguous last axis as a sequential loop that the
        compiler vectorizes; cheap one-dimensional arrays get larger groups
        (*cheap*: elements are not reductions). A 0-d
        array gets extent-1 hardware inames, so one work item computes it.
        The axes of *bounded* run below the private scalar it names for them
        (:func:`.padding.bounded_axis`).
        """
        local = scope.parallel == "local"
        bounded = bounded or {}
        size = self._local_size(shape, scope, cheap)
        inames: list[str] = []
        index: list[Any] = []
        if scope.batch is not None or scope.single_item_groups:
            # row blocks, or a scan one work item runs (CPUs)
            return batched_loop_nest(self, shape, scope, lanes)
        if not shape:
            group, item = self.parts.fresh("_ft_z"), self.parts.fresh("_ft_z")
            self.parts.add_domain([group, item], [1, 1])
            self.parts.iname_tags[item] = "l.0"
            if local:
                self.parts.priorities.extend((t, group) for t in scope.outer_inames)
            else:
                self.parts.iname_tags[group] = "g.0"
            return [group, item], ()
        if self.vector_length is not None and not local:
            width = self.plan.vector_width
            group, item, lane = (self.parts.fresh(p)
                                 for p in ("_ft_o", "_ft_l", "_ft_v"))
            groups = shape[0] // width
            self.parts.domains.append(
                f"{{ [{group}, {item}, {lane}]: 0 <= {item} < {size} and "
                f"0 <= {lane} < {width} and "
                f"0 <= {size}*{group} + {item} < {groups} }}")
            self.parts.iname_tags.update({group: "g.0", item: "l.0", lane: "vec"})
            flat = ((prim.Variable(group) * size + prim.Variable(item)) * width
                    + prim.Variable(lane))
            return [group, item, lane], (flat,)
        for d, extent in enumerate(shape):
            if d == 0:
                if isinstance(extent, int):
                    size = max(1, min(size, extent))
                outer, inner = self._row_inames(extent, size)
                inames += [outer, inner]
                index.append(prim.Variable(outer) * size + prim.Variable(inner))
                self.parts.iname_tags[inner] = "l.0"
                if local:
                    self.parts.priorities.extend((t, outer) for t in scope.outer_inames)
                else:
                    self.parts.iname_tags[outer] = "g.0"
            elif d in bounded:
                names, idx = bounded_axis(
                    self, d, extent, bounded[d],
                    lanes if d == len(shape) - 1 else 1)
                # the sequential axes in order (a bounded axis's domain is a
                # separate one, which loopy would otherwise nest freely)
                if d > 1:
                    self.parts.priorities.append((inames[-1], names[0]))
                inames += names
                index.append(idx)
            else:
                names, idx = self.sequential_axis(
                    d, extent, lanes if d == len(shape) - 1 else 1)
                if bounded and d > 1:
                    self.parts.priorities.append((inames[-1], names[0]))
                inames += names
                index.append(idx)
                self.parts.priorities.extend((t, n) for t in scope.outer_inames
                                       for n in names)
        return inames, tuple(index)

    def _row_inames(self, extent: Any, size: int) -> tuple[str, str]:
        """The work-group and work-item inames of axis 0 (of *extent*, in
        groups of *size*) of a loop nest: new ones, or, in a row group,
        those its members share (one pair of hardware inames, not one per
        member: loopy's code generation reasons over all the hardware
        inames of a launch at once, in time growing steeply with their
        number)."""
        key = (str(extent), size)
        if self.shared_rows is not None and key in self.shared_rows:
            return self.shared_rows[key]
        outer, inner = self.parts.fresh("_ft_o"), self.parts.fresh("_ft_l")
        self.parts.add_split_domain(outer, inner, size, extent)
        if self.shared_rows is not None:
            self.shared_rows[key] = (outer, inner)
        return outer, inner

    def sequential_axis(self, d: int, extent: Any, lanes: int
                        ) -> tuple[list[str], Any]:
        """Inames and index of a sequential axis; with *lanes* > 1 (a CPU's
        contiguous axis whose length that vector width divides) split into
        ``lanes * outer + lane``, for :meth:`_vector_calls`."""
        if lanes > 1 and isinstance(extent, int) and extent % lanes == 0:
            outer, lane = self.parts.fresh(f"_ft_i{d}_"), self.parts.fresh("_ft_lane")
            self.parts.add_domain([outer, lane], [extent // lanes, lanes])
            self.parts.iname_tags[lane] = "unr"
            self.parts.priorities.append((outer, lane))
            index = prim.Variable(outer) * lanes + prim.Variable(lane)
            return [outer, lane], index
        name = self.parts.fresh(f"_ft_i{d}_")
        self.parts.add_domain([name], [extent])
        return [name], prim.Variable(name)

    def _vector_calls(self, expr: Any, ctx: StoreContext, dtype: np.dtype) -> Any:
        """*expr* with each call of an elementwise math builtin computed on a
        vector of the row loop's width of consecutive elements: the arguments
        are gathered into a private vector, the call runs once on the vector
        (PoCL's vector builtins are several times faster per element than
        the scalar ones), and *expr* reads its lane of the result. The loop
        nest's last axis must come from :meth:`sequential_axis` with lanes.

        For float dtypes the vectors are OpenCL vector values built by one
        instruction each (:mod:`.vector_values`); otherwise the arguments
        are gathered lane by lane in an unrolled loop."""
        lane = next((i for i in ctx.inames if i.startswith("_ft_lane")), None)
        if lane is None:
            return expr
        base = frozenset(ctx.scope.outer_inames) | frozenset(
            i for i in ctx.inames if i != lane)
        if vector_dtype(dtype, self._row_width) is not None:
            expr = self._vector_value_calls(expr, ctx, dtype, lane, base)
            if (self.profile.builtin_width(dtype, LANES) >= self._row_width
                    and lane not in self.clamped_lanes
                    and ctx.scope.outer_inames
                    and np.dtype(dtype) == np.float32):
                # in a scan's step, where the device reads a vector's lanes
                # at a run-time index (see the probe), a loop over the
                # lanes, not loopy's unrolling them statement by statement
                # (an isl pass each): J10's float32 kernel ran as fast, and
                # its code generation took 0.17 s less. Measured slower as
                # loops on PoCL, so unrolled: float64 (W6's scan step 3%,
                # a row softmax outside scans 15%)
                self.parts.iname_tags.pop(lane, None)
            return expr
        builder = self

        class _Calls(ExprIdentityMapper):
            def map_call(self, e: prim.Call) -> Any:
                params = [self.rec(p) for p in e.parameters]
                if e.function.name not in ELEMENTWISE_BUILTINS:
                    return prim.Call(e.function, tuple(params))
                arg_ids, vectors = set(), []
                for p in params:
                    vec = builder._vector_temporary(dtype)
                    insn_id = vec + "_lanes"
                    # a lane loop of its own: loopy enters each loop once
                    arg_lane = builder.parts.fresh("_ft_al")
                    builder.parts.add_domain([arg_lane], [builder._row_width])
                    builder.parts.iname_tags[arg_lane] = "unr"
                    p = substitute(p, {lane: prim.Variable(arg_lane)})
                    ctx.pending.append(lp.Assignment(
                        prim.Subscript(prim.Variable(vec), (prim.Variable(arg_lane),)),
                        p, id=insn_id, within_inames=base | {arg_lane},
                        within_inames_is_final=True,
                        depends_on=frozenset(ctx.deps)))
                    arg_ids.add(insn_id)
                    vectors.append(vec)
                result = builder._vector_temporary(dtype)
                vv = builder.parts.fresh("_ft_vv")
                builder.parts.add_domain([vv], [builder._row_width])
                builder.parts.iname_tags[vv] = "vec"
                call_id = result + "_call"
                ctx.pending.append(lp.Assignment(
                    prim.Subscript(prim.Variable(result), (prim.Variable(vv),)),
                    prim.Call(e.function, tuple(
                        prim.Subscript(prim.Variable(v), (prim.Variable(vv),))
                        for v in vectors)),
                    id=call_id, within_inames=base | {vv},
                    within_inames_is_final=True, depends_on=frozenset(arg_ids)))
                ctx.deps.add(call_id)
                return prim.Subscript(prim.Variable(result), (prim.Variable(lane),))

        return _Calls()(expr)

    def _vector_value_calls(self, expr: Any, ctx: StoreContext, dtype: np.dtype,
                            lane: str, base: frozenset) -> Any:
        """:meth:`_vector_calls` with OpenCL vector values: per call, one
        instruction per argument builds its vector from the lanes (the lane
        iname substituted by each constant), one applies the builtin, and
        *expr* reads the component of its lane."""
        builder = self
        width = self._row_width
        vec = vector_dtype(dtype, width)

        def vector_scalar(prefix: str, value: Any, deps: frozenset) -> str:
            name = builder.parts.private_array(prefix, vec, ())
            ctx.pending.append(lp.Assignment(
                prim.Variable(name), value, id=name + "_insn",
                within_inames=base, within_inames_is_final=True,
                depends_on=deps))
            return name

        class _Calls(ExprIdentityMapper):
            def map_call(self, e: prim.Call) -> Any:
                params = [self.rec(p) for p in e.parameters]
                if e.function.name not in ELEMENTWISE_BUILTINS:
                    return prim.Call(e.function, tuple(params))
                gather = gather_name(dtype, width)
                builder.vector_callables.add(gather)
                vectors = [vector_scalar("_ft_vg", prim.Call(prim.Variable(gather), tuple(
                    substitute(p, {lane: k}) for k in range(width))),
                    frozenset(ctx.deps)) for p in params]
                math = MATH_PREFIX + e.function.name
                builder.vector_callables |= {math, LANE}
                result = vector_scalar(
                    "_ft_vr", prim.Call(prim.Variable(math), tuple(
                        prim.Variable(v) for v in vectors)),
                    frozenset(v + "_insn" for v in vectors))
                ctx.deps.add(result + "_insn")
                return prim.Call(prim.Variable(LANE),
                                 (prim.Variable(result), prim.Variable(lane)))

        return _Calls()(expr)

    def _vector_temporary(self, dtype: np.dtype) -> str:
        return self.parts.private_array("_ft_vec", dtype, (self._row_width,), "vec")


    def _local_size(self, shape: tuple, scope: Scope, cheap: bool) -> int:
        """Work items per group along axis 0 (see :meth:`loop_nest`)."""
        return local_size(self.profile, shape, cheap, scope.parallel)

    def _coalesced(self, node: IndexLambda, scope: Scope) -> bool:
        """Whether *node*'s plan puts its last axis that is not 1 long on
        ``l.0`` in the outer DAG (GPUs, see :func:`~.plan.coalesced_axis`)."""
        array_plan = self.plan.arrays.get(node)
        return (array_plan is not None and array_plan.strategy == "loop_nest"
                and node.ndim >= 2 and array_plan.l0_axis is not None
                and array_plan.l0_axis >= 1
                and array_plan.l0_axis == last_axis_not_one(node.shape)
                and scope.parallel == "global" and scope.batch is None
                and not scope.single_item_groups)

    def coalesced_nest(self, shape: tuple, size: int | None
                       ) -> tuple[list[str], tuple]:
        """A GPU loop nest whose last axis that is not 1 long is split into
        ``(g.0, l.0)`` groups of *size* work items (with *size* None: on
        ``g.0`` alone, a work group per index), the axis before it on
        ``g.1`` and the one before that on ``g.2``; earlier axes are
        sequential loops in each work item, and the 1-long axes after it
        are trivial ones."""
        inames: list[str] = []
        index: list[Any] = []
        sequential: list[str] = []
        axis = last_axis_not_one(shape)
        hardware = {axis: "g.0", axis - 1: "g.1", axis - 2: "g.2"}
        for d, extent in enumerate(shape):
            if d == axis and size is not None:
                outer, inner = self.parts.fresh("_ft_o"), self.parts.fresh("_ft_l")
                self.parts.add_split_domain(outer, inner, size, extent)
                self.parts.iname_tags.update({outer: "g.0", inner: "l.0"})
                inames += [outer, inner]
                index.append(prim.Variable(outer) * size + prim.Variable(inner))
                continue
            name = self.parts.fresh(f"_ft_i{d}_")
            self.parts.add_domain([name], [extent])
            if d in hardware:
                self.parts.iname_tags[name] = hardware[d]
            else:
                sequential.append(name)
            inames.append(name)
            index.append(prim.Variable(name))
        self.parts.priorities.extend(zip(sequential, sequential[1:]))
        return inames, tuple(index)

    def _grid_key(self, node: IndexLambda, scope: Scope) -> str:
        """Arrays can share one kernel's grid when their work groups have the
        same size and axis 0 has the same symbolic extent (for concrete
        extents loopy takes the maximum); last-axis GPU nests also need the
        same symbolic extents on ``g.1`` and ``g.2``."""
        if self._coalesced(node, scope):
            return f"c{self.plan.arrays[node].local_size}:" + _grid_extents(
                node.shape[:last_axis_not_one(node.shape) + 1]) + (
                    f":{node.ndim}" if node.shape[-1] == 1 else "")
        size = self._local_size(node.shape, scope, not has_reduce(node.expr))
        shape = node.shape
        if not shape or isinstance(shape[0], int):
            return str(size)
        return f"{size}:{shape[0]}"

    def emit_store(self, node: IndexLambda, name: str, scope: Scope,
                   extra_deps: frozenset = frozenset(), index_prefix: tuple = (),
                   nest: Callable[[int], StoreContext] | None = None
                   ) -> tuple[list[Any], set[Node]]:
        """Assignments computing *node* into array *name* (whose leading
        indices are *index_prefix*); returns them and the stored arrays read.
        *nest* makes the loop nest's context (given the vector lanes) instead
        of :meth:`loop_nest`."""
        array_plan = self.plan.arrays.get(node)
        lanes = array_plan.vector_width if array_plan is not None else 1
        self._row_width = lanes
        padding = (padding_bounds(node) if scope.batch is None and not index_prefix
                   and scope.parallel != "local" and self.vector_length is None
                   and nest is None else None)
        guards: frozenset = frozenset()
        if nest is None and self._coalesced(node, scope):
            inames, index = self.coalesced_nest(node.shape, array_plan.local_size)
            ctx = StoreContext(scope, inames, index, node.shape)
            if padding is not None:
                guards = self._padding_guards(node, padding[1], inames, index, ctx)
        elif nest is not None:
            ctx = nest(lanes)
            inames, index = ctx.inames, ctx.index
        else:
            bounds = padding[1] if padding is not None else {}
            his = bound_scalars(bounds, self)
            inames, index = self.loop_nest(node.shape, scope,
                                            cheap=not has_reduce(node.expr),
                                            lanes=lanes, bounded=his)
            ctx = StoreContext(scope, inames, index, node.shape)
            if his:
                assign_bounds(self, node, bounds, his, inames, index, ctx)
        # private statements first, children before users, so that
        # translating one never recurses into the next (deep chains)
        for private in self._reachable_privates(node, scope):
            self._private(private, ctx)
        ranged_lanes = array_plan.ranged_lanes if array_plan is not None else 1
        if (ranged_lanes > 1 and lanes == 1 and nest is None and not index_prefix
                and scope.batch is None and self.vector_length is None):
            expr = emit_laned_ranged_reduction(
                self, node, {f"_{i}": idx for i, idx in enumerate(index)}, ctx,
                ranged_lanes)
        elif padding is not None:
            expr = self.translate_expr(
                padding[0], node, {f"_{i}": idx for i, idx in enumerate(index)},
                ctx)
        else:
            expr = self._translate(node, index, ctx)
        if lanes > 1:
            expr = self._vector_calls(expr, ctx, node.dtype)
        lhs_index = index_prefix + index
        lhs = prim.Subscript(prim.Variable(name), lhs_index or (0,))
        ctx.pending.append(lp.Assignment(
            lhs, expr, id=self.parts.fresh(name + "_store"),
            within_inames=frozenset(scope.outer_inames) | frozenset(inames),
            within_inames_is_final=True,
            depends_on=frozenset(ctx.deps) | extra_deps))
        insns = self._roll(ctx)
        if guards:
            insns = [i if i.id in ctx.unguarded
                     else i.copy(predicates=i.predicates | guards) for i in insns]
        return insns, ctx.reads

    def _padding_guards(self, node: IndexLambda, bounds: dict[int, Any],
                        inames: list[str], index: tuple, ctx: StoreContext
                        ) -> frozenset:
        """The predicates ``index[k] < bound`` that keep a GPU nest over
        the whole padded box of an :class:`~.padding.UnreadPadding` array
        inside each element's extents (the bounds assigned to private
        scalars first, in *ctx*): its statements, and loopy's reductions
        in them, then run, read and store only there, as the CPU nest's
        data-bounded loops do. The statements before them are recorded in
        ``ctx.unguarded``."""
        his = bound_scalars(bounds, self)
        outer = frozenset(ctx.scope.outer_inames) | frozenset(inames)
        for d, hi in his.items():
            value = self.translate_expr(bounds[d], node, {"_0": index[0]}, ctx)
            ctx.pending.append(lp.Assignment(
                prim.Variable(hi), value, id=hi + "_insn", within_inames=outer,
                within_inames_is_final=True, depends_on=frozenset(ctx.deps)))
            ctx.deps.add(hi + "_insn")
        ctx.unguarded = frozenset(i.id for i in ctx.pending)
        return frozenset(prim.Comparison(index[d], "<", prim.Variable(hi))
                         for d, hi in his.items())

    def _roll(self, ctx: StoreContext) -> list[Any]:
        """*ctx*'s instructions with repeated private statements rolled into
        loops (see :mod:`.rolling`)."""
        if len(ctx.privates) < MIN_RUN:
            return ctx.pending
        lane = self._vector_lane(ctx)
        sequential = list(ctx.scope.outer_inames) + [
            i for i in ctx.inames if i not in self.parts.iname_tags]

        def new_loop(count: int) -> str:
            name = self.parts.fresh("_ft_k")
            self.parts.add_domain([name], [count])
            self.parts.priorities.extend((i, name) for i in sequential)
            if lane is not None:
                self.parts.priorities.append((name, lane))
            return name

        def new_table(values: np.ndarray) -> str:
            name = self.parts.fresh("_ft_steps")
            self.parts.temporaries[name] = lp.TemporaryVariable(
                name, values.dtype, shape=values.shape,
                address_space=lp.AddressSpace.GLOBAL, initializer=values,
                read_only=True)
            return name

        names = {name for name, _ in ctx.privates.values()}
        insns, unused = roll_repeated_statements(
            ctx.pending, names, new_loop, new_table,
            max_kinds=MAX_STEP_KINDS if self.plan.storage.mixed_chains else 1)
        for name in unused:
            del self.parts.temporaries[name]
        self.private_statements -= len(unused)
        return insns


    def emit_copy(self, src: Callable[[tuple], Any], dst: str, shape: tuple,
                  scope: Scope, deps: frozenset, dst_prefix: tuple = ()
                  ) -> list[Any]:
        return self.emit_copies(src, [(dst, dst_prefix)], shape, scope, deps)

    def emit_copies(self, src: Callable[[tuple], Any],
                    destinations: list[tuple[str, Any]], shape: tuple,
                    scope: Scope, deps: frozenset) -> list[Any]:
        """Copy *src* to each ``(array, where)`` of *destinations* in one
        loop nest: *where* is a tuple of leading indices, or a function of
        the loop nest's index giving ``(index, condition or None)``."""
        # (a destination chosen per row takes a loop over rows: its
        # condition is then hoisted out of the contiguous loop)
        flat = (None if any(callable(where) for _, where in destinations)
                else flat_row_block_nest(self, shape, scope))
        inames, index = flat or self.loop_nest(shape, scope)
        insns = []
        for dst, where in destinations:
            if callable(where):
                dst_index, condition = where(index)
            else:
                dst_index, condition = where + index, None
            insns.append(lp.Assignment(
                prim.Subscript(prim.Variable(dst), dst_index or (0,)),
                src(index), id=self.parts.fresh(dst + "_copy"),
                within_inames=frozenset(scope.outer_inames) | frozenset(inames),
                within_inames_is_final=True, depends_on=deps,
                predicates=(frozenset() if condition is None
                            else frozenset({condition}))))
        return insns

    # }}}

    def build(self) -> tuple[lp.TranslationUnit, list[ArgSpec], list[ArgSpec]]:
        """The translation unit, its input and its output arguments.
        :attr:`packs` then tells which inputs travel packed in one argument."""
        plan = self.plan
        scope = Scope(plan.storage, {})
        inputs: list[ArgSpec] = []
        self.packs = plan.packs
        self.packed = {ph: (pack, offset) for pack, members in self.packs.items()
                       for ph, offset in members}
        for pack, members in self.packs.items():
            size = sum(int(np.prod(ph.shape)) for ph, _ in members)
            inputs.append(ArgSpec(pack, (size,), members[0][0].dtype))
        for n in self.order:
            if isinstance(n, Placeholder):
                self.level[n] = 0
                if n not in self.packed:
                    scope.names[n] = n.name
                    inputs.append(ArgSpec(n.name, n.shape, n.dtype))
            elif isinstance(n, SizeParam):
                self.parts.params.add(n.name)
        out_names: dict[Array, str] = {}
        for name, a in self.outputs.items():
            if out_names.setdefault(a, name) != name:
                raise AssertionError(f"outputs {out_names[a]} and {name} are one "
                                     f"node {a!r}: the second would not be written")
        outputs = [ArgSpec(name, a.shape, a.dtype) for name, a in self.outputs.items()]
        group_of = {m: g for g in plan.fused_groups() for m in g.members}
        for n in self.order:
            if isinstance(n, Scan):
                # (a chain of scans is emitted at its last scan)
                chain = plan.scan_chains.get(n, (n,))
                if n is chain[-1]:
                    emit_scan_chain(self, chain, scope, out_names)
            elif n in group_of:
                if n is group_of[n].members[0]:
                    group_of[n].emit(self, scope, out_names)
            elif isinstance(n, IndexLambda) and n in plan.storage.stored:
                name = out_names.get(n) or self.storage_name(n)
                plan.names[n] = name
                if n not in out_names:
                    self.parts.global_temporary(name, n.shape, n.dtype)
                if plan.arrays[n].strategy == "empty":  # nothing to compute
                    scope.names[n] = name
                    self.level[n] = 0
                    continue
                insns, reads, grid_key = self.emit_array(n, name, scope)
                self.level[n] = 1 + max((self.level[r] for r in reads), default=0)
                scope.names[n] = name
                segment = (self.level[n], grid_key)
                self.parts.instructions.extend((segment, i) for i in insns)
            elif isinstance(n, LoopResult) and n.loop in self.level:
                self.level[n] = self.level[n.loop]
        self._add_barriers()
        # (an input no statement reads, such as segment ids where a fused
        # plan finds the rows from the offsets, is no argument: a call may
        # leave it out)
        read = set().union(*(i.read_dependency_names()
                             for i in self.final_instructions))
        inputs = [a for a in inputs if a.name in read]
        return self._make_kernel(inputs, outputs), inputs, outputs

    def emit_array(self, n: IndexLambda, name: str, scope: Scope
                   ) -> tuple[list[Any], set[Node], str]:
        """The instructions storing stored array *n* into *name* by its
        plan's strategy, the nodes they read, and their grid key (arrays of
        one dependency level and grid key share an OpenCL kernel)."""
        array_plan = self.plan.arrays[n]
        if array_plan.strategy == "group_reduction":
            insns, reads = emit_group_reduction(
                self, n, name, scope, array_plan.local_size)
            grid_key = f"r{array_plan.local_size}:" + _grid_extents(n.shape)
        elif array_plan.strategy == "split_reduction":
            insns, reads = emit_split_reduction(
                self, n, name, scope, array_plan.block[0])
            grid_key = self._grid_key(n, scope)
        elif array_plan.strategy == "segment_reduction":
            insns, reads = emit_segment_reduction(
                self, n, name, scope, array_plan)
            grid_key = (self._grid_key(n, scope)
                        if array_plan.l0_axis == 0 else f"~{name}")
        elif array_plan.strategy == "padded_contraction":
            insns, reads = emit_padded_contraction(
                self, n, name, scope, *array_plan.block)
            grid_key = self._grid_key(n, scope)
        elif array_plan.strategy == "tiled_contraction":
            items, block, _ = array_plan.block  # (k step: items)
            insns, reads = emit_tiled_contraction(
                self, n, name, scope, items, block)
            grid_key = f"~{name}"  # a kernel of its own
        elif array_plan.strategy == "blocked_contraction":
            insns, reads = emit_blocked_contraction(
                self, n, name, scope, *array_plan.block)
            grid_key = f"~{name}"  # a kernel of its own
        else:
            insns, reads = self.emit_store(n, name, scope)
            grid_key = self._grid_key(n, scope)
        return insns, reads, grid_key

    def _add_barriers(self) -> None:
        """Order the kernel segments (dependency level, then grid shape) and
        put a global barrier between consecutive ones: loopy makes each
        segment an OpenCL kernel, whose grid must not depend on two
        different symbolic extents."""
        segments = sorted({seg for seg, _ in self.parts.instructions})
        barrier_before: dict[Any, str] = {}
        previous_barrier = None
        for prev, seg in zip(segments, segments[1:]):
            deps = {i.id for sg, i in self.parts.instructions if sg == prev}
            if previous_barrier:
                deps.add(previous_barrier)
            bid = self.parts.fresh("_ft_gbarrier")
            barrier_before[seg] = previous_barrier = bid
            self.parts.instructions.append((seg, lp.BarrierInstruction(
                id=bid, synchronization_kind="global",
                depends_on=frozenset(deps), within_inames=frozenset(),
                within_inames_is_final=True)))
        result = []
        for seg, insn in self.parts.instructions:
            if seg in barrier_before and insn.id != barrier_before[seg]:
                insn = insn.copy(depends_on=insn.depends_on | {barrier_before[seg]})
            result.append(insn)
        self.final_instructions = without_in_place_writers(
            result, self.parts.in_place)

    def _shared_arrays(self) -> tuple[str, ...]:
        """Global arrays written inside a scan: its work items exchange them
        through barriers, so they must not be declared ``__restrict__``."""
        names: set[str] = set()
        for insn in self.final_instructions:
            if insn.id.startswith(tuple(self.parts.scan_prefixes)):
                names |= set(insn.assignee_var_names())
        return tuple(sorted(n for n in names if n not in self.parts.temporaries
                            or self.parts.temporaries[n].address_space
                            == lp.AddressSpace.GLOBAL))

    def _make_kernel(self, inputs: list[ArgSpec], outputs: list[ArgSpec]
                     ) -> lp.TranslationUnit:
        args: list[Any] = []
        for a in inputs:
            args.append(lp.GlobalArg(a.name, storage_dtype(a.dtype),
                                     shape=tuple(a.shape) or (1,), is_input=True,
                                     is_output=False))
        for a in outputs:
            args.append(lp.GlobalArg(a.name, storage_dtype(a.dtype),
                                     shape=tuple(a.shape) or (1,), is_input=False,
                                     is_output=True))
        # (sizes of the arguments' and temporaries' shapes are arguments
        # too, also where no statement reads them: an empty output's, an
        # input's read only indirectly, the rows of a list of no data)
        in_shapes = set().union(*(
            sh.size_param_names(d) for a in inputs + outputs for d in a.shape
        ), *(get_variable_names(d) for t in self.parts.temporaries.values()
             for d in t.shape or () if not isinstance(d, (int, np.integer))))
        params = set(self.parts.params) | in_shapes
        for p in sorted(params):
            args.append(lp.ValueArg(p, np.int64))
        args.extend(self.parts.temporaries.values())
        complex_dtype = _complex_dtype_computed(self.order)
        if complex_dtype is not None and not any(
                getattr(a.dtype, "involves_complex", lambda: False)()
                for a in args):
            # (loopy emits complex arithmetic, cdouble_mul(a, b) for a * b,
            # only in kernels with a complex argument or temporary: real
            # inputs and outputs, imag(x * 2j), get one that nothing reads)
            args.append(lp.TemporaryVariable(
                "_ft_complex_arithmetic", complex_dtype, shape=(),
                address_space=lp.AddressSpace.PRIVATE))
        domains = [_with_nonnegative_sizes(isl.BasicSet(d), params)
                   for d in self.parts.domains] or [isl.BasicSet("{ : }")]
        # (sizes in no array's shape, x[n:]'s n, are non-negative for the
        # bounds check of an index n + i in a domain without n; sizes in
        # shapes stay out of the assumptions, which would put them in the
        # space of every check: see _with_nonnegative_sizes)
        instructions = self.final_instructions
        if (self.profile.kind == "gpu"
                and self.profile.float32_constant_division_in_double):
            instructions = divide_constants_in_double(instructions)
        knl = lp.make_kernel(
            domains, instructions, args, lang_version=(2018, 2),
            assumptions=_sorted_assumptions(domains, params - in_shapes),
            name="ftlazy_kernel", seq_dependencies=False,
            target=FtlazyOpenCLTarget(
                () if self.profile.restrict_shared_arrays
                else self._shared_arrays()),
            silenced_warnings=["v1_scheduler_fallback",
                               "insn_count_subdomains_order", "write_race*"],
            options=lp.Options(
                return_dict=True, no_numpy=False,
                build_options=kernel_build_options(
                    self.profile.correctly_rounded_divide_sqrt),
                # loopy's access-bounds proof costs an isl map per array
                # access: keep it as a safety net for ordinary DAGs, skip it
                # where compile time dominates (generated indices are in
                # bounds by construction; data-dependent reads are guarded)
                enforce_array_accesses_within_bounds=(
                    True if len(self.order) <= self.profile.bounds_check_max_nodes
                    else "no_check")))
        knl = register_builtins(knl)
        knl = register_vector_callables(knl, self.vector_callables)
        if self.parts.iname_tags:
            knl = lp.tag_inames(knl, self.parts.iname_tags)
        if self.parts.scan_prefixes or self.nosync_prefixes:
            knl = declare_scan_nosync(
                knl, self.parts.scan_prefixes + self.nosync_prefixes)
        if self.vector_length is not None:
            self.vector_args = [a.name for a in inputs + outputs
                                if a.shape == (self.vector_length,)
                                and a.name not in self.packs]
            knl = vector_view(knl, self.vector_args, self.plan.vector_width)
        if self.parts.priorities:
            entry = knl.default_entrypoint
            knl = knl.with_kernel(entry.copy(loop_priority=entry.loop_priority
                                             | frozenset(self.parts.priorities)))
        return knl


def _with_loop_bodies(order: list[Node]) -> Iterator[Node]:
    """The nodes of *order*, then those of the loop bodies they run (each
    body once, nested ones too)."""
    from ftlazy.fractal import Loop
    stack, seen = [order], set()
    while stack:
        for n in stack.pop():
            yield n
            if isinstance(n, Loop) and n.body not in seen:
                seen.add(n.body)
                stack.append(topological_order(list(n.body.outputs)))


def _complex_dtype_computed(order: list[Node]) -> np.dtype | None:
    """The dtype of a complex array among *order* or the loop bodies they
    run, else None."""
    return next((np.dtype(n.dtype) for n in _with_loop_bodies(order)
                 if getattr(n, "dtype", None) is not None
                 and np.dtype(n.dtype).kind == "c"), None)


def without_in_place_writers(instructions: list[Any], in_place: set[str]
                             ) -> list[Any]:
    """*instructions* where those that read an array of *in_place* have
    their dependencies final: loopy's single-writer heuristic would make
    such a reader depend on the array's writer, which in a loop that reads
    a row before it writes it in place depends on the reader (a cycle).
    What the heuristic would add for their other reads is added here."""
    if not in_place:
        return instructions
    writers: dict[str, set[str]] = defaultdict(set)
    for insn in instructions:
        for name in insn.assignee_var_names():
            writers[name].add(insn.id)
    result = []
    for insn in instructions:
        reads = insn.read_dependency_names()
        if reads & in_place and not insn.depends_on_is_final:
            auto = {w for name in reads - in_place
                    if len(writers.get(name, ())) == 1
                    for w in writers[name]} - {insn.id}
            insn = insn.copy(depends_on=insn.depends_on | auto,
                             depends_on_is_final=True)
        result.append(insn)
    return result


def _sorted_assumptions(domains: list[isl.BasicSet],
                        nonnegative: set[str]) -> isl.BasicSet:
    """The sizes *nonnegative* are non-negative, over them and the domains'
    outer parameters in sorted order. Loopy's default orders them as a set
    iterates, which differs between processes (string hashing is
    randomized); the order is part of the kernel's persistent hash, so its
    on-disk caches would never hit for a kernel with several data-dependent
    bounds."""
    from loopy.kernel.tools import get_outer_params
    # (only the sizes said non-negative where there are some: with the
    # domains' other parameters, loopy's bounds check would see every
    # array's shape in every check's space, and refuse accesses it used
    # to skip, a vector tail bounded by a temporary)
    names = sorted(nonnegative or get_outer_params(domains))
    constraints = " and ".join(f"{n} >= 0" for n in sorted(nonnegative))
    return isl.BasicSet.read_from_str(
        domains[0].get_ctx(), "[{}] -> {{ : {} }}".format(", ".join(names),
                                                         constraints))


def _with_nonnegative_sizes(domain: isl.BasicSet, sizes: set[str]
                            ) -> isl.BasicSet:
    """*domain* where its parameters among *sizes* (size parameters,
    checked non-negative at each call) are non-negative: the read
    ``x[n + i]`` of ``x[n:]`` is then provably in bounds. (Per domain, not
    as kernel-wide assumptions, which would put every size in the space of
    every instruction's bounds check.)"""
    names = [domain.get_dim_name(isl.dim_type.param, k)
             for k in range(domain.dim(isl.dim_type.param))]
    constraints = " and ".join(f"{n} >= 0" for n in names if n in sizes)
    if not constraints:
        return domain
    return domain.intersect_params(isl.BasicSet.read_from_str(
        domain.get_ctx(), "[{}] -> {{ : {} }}".format(", ".join(names),
                                                      constraints)))


def _grid_extents(shape: tuple) -> str:
    """The symbolic extents of the axes a GPU nest over *shape* puts on
    ``g.0``, ``g.1`` and ``g.2`` (its last three, last first), for a grid
    key: concrete ones are ``#`` (loopy takes their maximum)."""
    return ",".join("#" if isinstance(e, int) else str(e)
                    for e in shape[::-1][:3])


def build_kernel(outputs: dict[str, Array], profile: DeviceProfile
                 ) -> tuple[KernelBuilder, lp.TranslationUnit, list[ArgSpec],
                            list[ArgSpec]]:
    """Plan, then emit the kernel for *outputs*; returns the builder (for its
    plan, packing and vector views), the translation unit and the argument
    specs."""
    order = topological_order(list(outputs.values()))
    check_float16(order)
    builder, (t_unit, inputs, outs) = _fused_build(outputs, profile, order)
    if (builder.vector_length is not None and builder.private_statements
            > profile.vector_max_private_statements):
        # rolling left long straight-line code: vectors would compile slowly
        scalar = dataclasses.replace(profile, vectorize=False)
        builder, (t_unit, inputs, outs) = _fused_build(outputs, scalar, order)
    return builder, t_unit, inputs, outs


def _fused_build(outputs: dict[str, Array], profile: DeviceProfile,
                 order: list[Node]) -> tuple[KernelBuilder, tuple]:
    """The builder and the result of :meth:`KernelBuilder.build` for the
    plan of *outputs*, its fused groups (see :mod:`.segment_fusion`)
    emitted where they can be, else none."""
    plan = plan_kernel(outputs, profile, order)
    fused = fused_order(order, plan) if plan.fused_groups() else order
    if fused is not None:
        builder = KernelBuilder(outputs, plan, fused)
        try:
            return builder, builder.build()
        except NotElementLocal:
            pass  # a member reads another element's rows: no fusion
    builder = KernelBuilder(
        outputs, plan_kernel(outputs, profile, order, fuse_segments=False), order)
    return builder, builder.build()


#: names generated code must not use for arrays (C and OpenCL C keywords,
#: types, qualifiers and the builtin functions ftlazy calls)
OPENCL_RESERVED = frozenset("""
    auto break case char const continue default do double else enum extern float
    for goto if inline int long register restrict return short signed sizeof
    static struct switch typedef union unsigned void volatile while bool half
    uchar ushort uint ulong size_t ptrdiff_t intptr_t uintptr_t kernel __kernel
    global __global local __local constant __constant private __private
    read_only write_only read_write image2d_t image3d_t sampler_t event_t
    barrier true false NULL INFINITY NAN MAXFLOAT HUGE_VAL M_PI M_E
    select vload vstore convert_int as_int min max clamp mix sign dot length
    """.split()) | frozenset(C_FUNCTIONS.values()) | frozenset({
        "fabs", "fmin", "fmax", "pow", "copysign", "rsqrt", "cbrt", "expm1",
        "log1p", "erf", "isfinite", "lid", "gid"})


def _computes_float16(expr: Any) -> bool:
    """Whether an IndexLambda body has float16 constants or casts (a bool
    comparison of float16 values)."""
    return any(isinstance(e, np.float16)
               or (isinstance(e, TypeCast) and e.dtype == np.float16)
               for e in iter_subexpressions(expr))


def check_float16(order: list[Node]) -> None:
    """float16 needs an OpenCL extension this target does not enable: say so
    before building, for stored and inlined arrays, in loop bodies too."""
    for n in _with_loop_bodies(order):
        if getattr(n, "dtype", None) == np.float16 or (
                isinstance(n, IndexLambda) and _computes_float16(n.expr)):
            raise TypeError(
                f"float16 values are not supported by the OpenCL target "
                f"({n!r}); numpy gives float16 for some operations on bool "
                "and int8 arrays and float16 scalars (sqrt, a comparison "
                "with np.float16(1)): cast to float32 first")

