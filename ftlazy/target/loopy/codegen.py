# SPDX-License-Identifier: MIT
"""From a lowered DAG (IndexLambdas over placeholders and size params, plus
Scans) to one loopy translation unit.

Decisions, in order:

1. *Materialization* (:func:`decide_storage`): which arrays are stored in
   global memory (outputs, reductions, ``ImplStored``/``Named`` arrays, scan
   inputs, costly arrays with several users); everything else is inlined into
   its readers, giving one fused loop nest per stored array.
2. *Private statements*: an inlined array read at exactly its reader's own
   indices may become a private scalar statement in the same loop nest. This
   is used for common subexpressions and to cut deep chains (a 1,000-step
   Horner chain would otherwise nest beyond the OpenCL compiler's limit).
3. *Kernel structure*: stored arrays are grouped by dependency level; a
   global barrier between levels lets loopy split levels into kernels.
4. *Parallelization*: inames are created pre-split and tagged for the
   device (one ``tag_inames`` call for the whole kernel).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

import islpy as isl
import loopy as lp
import numpy as np
import pymbolic.primitives as prim

from ftlazy import shapes as sh
from ftlazy.array import Array, IndexLambda, Placeholder, SizeParam
from ftlazy.fractal import BodyParam, LoopResult, Scan
from ftlazy.node import Node, iter_children, topological_order
from ftlazy.scalar_expr import Reduce, index_var
from ftlazy.tags import ImplInlined, ImplStored, Named, PrefixNamed
from ftlazy.target.loopy.expressions import Translator, storage_dtype

#: an inlined chain deeper than this is cut into private statements
MAX_INLINE_DEPTH = 24
#: arrays with several users whose body has more operations are stored
RECOMPUTE_COST_LIMIT = 12


# {{{ analysis of the lowered DAG

def _expr_cost(expr: Any) -> int:
    """Operation count of a body, calls weighted as expensive."""
    cost, stack = 0, [expr]
    while stack:
        e = stack.pop()
        if isinstance(e, prim.Call):
            cost += 8
        if isinstance(e, Reduce):
            cost += 100
        if isinstance(e, prim.ExpressionNode):
            cost += 1
            for child in e.__getinitargs__():
                if isinstance(child, tuple):
                    stack.extend(c for c in child if isinstance(c, prim.ExpressionNode))
                elif isinstance(child, prim.ExpressionNode):
                    stack.append(child)
    return cost


def _has_reduce(expr: Any) -> bool:
    stack = [expr]
    while stack:
        e = stack.pop()
        if isinstance(e, Reduce):
            return True
        if isinstance(e, prim.ExpressionNode):
            for child in e.__getinitargs__():
                if isinstance(child, tuple):
                    stack.extend(c for c in child if isinstance(c, prim.ExpressionNode))
                elif isinstance(child, prim.ExpressionNode):
                    stack.append(child)
    return False


def identity_read_bindings(node: IndexLambda) -> set[str]:
    """Names of bindings that *node* reads only at its own output indices
    (``b[_0, ..., _k]`` with equal shapes), outside any reduction."""
    ident = tuple(index_var(i) for i in range(node.ndim))
    good: set[str] = set()
    bad: set[str] = set()
    stack: list[tuple[Any, bool]] = [(node.expr, False)]
    while stack:
        e, in_reduce = stack.pop()
        if isinstance(e, prim.Subscript):
            name = e.aggregate.name
            b = node.bindings[name]
            if (not in_reduce and e.index_tuple == ident
                    and sh.shapes_equal(b.shape, node.shape)):
                good.add(name)
            else:
                bad.add(name)
            stack.extend((i, in_reduce) for i in e.index_tuple)
            continue
        if isinstance(e, prim.Variable):
            if e.name in node.bindings:
                (good if node.ndim == 0 and not in_reduce else bad).add(e.name)
            continue
        if isinstance(e, Reduce):
            stack.append((e.inner, True))
            continue
        if isinstance(e, prim.ExpressionNode):
            for child in e.__getinitargs__():
                if isinstance(child, tuple):
                    stack.extend((c, in_reduce) for c in child
                                 if isinstance(c, prim.ExpressionNode))
                elif isinstance(child, prim.ExpressionNode):
                    stack.append((child, in_reduce))
    return good - bad


@dataclass
class StoragePlan:
    """Which arrays are stored globally and which are private statements."""

    stored: set[Node] = field(default_factory=set)
    private: set[Node] = field(default_factory=set)


def decide_storage(roots: list[Array], order: list[Node] | None = None
                   ) -> StoragePlan:
    """Materialization decisions for the DAG of *roots* (see module doc)."""
    order = order if order is not None else topological_order(roots)
    plan = StoragePlan()
    users: dict[Node, int] = defaultdict(int)
    identity_users: dict[Node, int] = defaultdict(int)
    for n in order:
        if isinstance(n, IndexLambda):
            ident = identity_read_bindings(n)
            for name, b in n.bindings.items():
                users[b] += 1
                if name in ident:
                    identity_users[b] += 1
        else:
            # loops read their inputs from memory
            for c in iter_children(n):
                users[c] += 1
                if isinstance(c, IndexLambda):
                    plan.stored.add(c)
    root_set = set(roots)
    depth: dict[Node, int] = {}
    has_private: dict[Node, bool] = {}
    for n in order:
        if not isinstance(n, IndexLambda):
            continue
        tags = n.tags
        inlined_tag = any(isinstance(t, ImplInlined) for t in tags)
        if n in root_set or (not inlined_tag and (
                any(isinstance(t, (ImplStored, Named, PrefixNamed)) for t in tags)
                or _has_reduce(n.expr)
                or (users[n] > 1 and _expr_cost(n.expr) > RECOMPUTE_COST_LIMIT))):
            plan.stored.add(n)
        ident = identity_read_bindings(n)
        d, priv = 0, False
        for name, b in n.bindings.items():
            if b in plan.stored or not isinstance(b, IndexLambda):
                continue
            if has_private.get(b) and name not in ident:
                # a private statement must be read at its own indices
                plan.stored.add(b)
                plan.private.discard(b)
                continue
            d = max(d, depth[b] + 1)
            priv = priv or has_private[b]
        if n in plan.stored:
            depth[n], has_private[n] = 0, False
            continue
        all_identity = identity_users[n] == users[n]
        if all_identity and (d > MAX_INLINE_DEPTH or users[n] > 1):
            plan.private.add(n)
            depth[n], has_private[n] = 0, True
        elif d > MAX_INLINE_DEPTH:
            plan.stored.add(n)
            depth[n], has_private[n] = 0, False
        else:
            depth[n], has_private[n] = d, priv
    return plan

# }}}


# {{{ kernel construction

@dataclass(frozen=True)
class ArgSpec:
    """A kernel argument as the host sees it."""

    name: str
    shape: tuple
    dtype: np.dtype


class KernelBuilder:
    """Builds the loopy kernel for a canonical, lowered DAG."""

    def __init__(self, outputs: dict[str, Array], device_kind: str = "cpu") -> None:
        self.outputs = outputs
        self.device_kind = device_kind
        self.order = topological_order(list(outputs.values()))
        self.plan = decide_storage(list(outputs.values()), self.order)
        self.names: dict[Node, str] = {}
        self.domains: list[str] = []
        self.instructions: list[Any] = []
        self.temporaries: dict[str, Any] = {}
        self.iname_tags: dict[str, str] = {}
        self.level: dict[Node, int] = {}
        self.params: set[str] = set()
        self._counter = 0

    # {{{ names and domains

    def _fresh(self, prefix: str) -> str:
        self._counter += 1
        return f"{prefix}{self._counter}"

    def _add_domain(self, inames: list[str], bounds: list[Any]) -> None:
        if not inames:
            return
        for b in bounds:
            self.params |= sh.size_param_names(b)
        params = sorted(set().union(*[sh.size_param_names(b) for b in bounds]))
        conds = " and ".join(
            f"0 <= {i} < {sh.to_affine(b).to_isl()}" for i, b in zip(inames, bounds))
        self.domains.append(
            f"[{', '.join(params)}] -> {{ [{', '.join(inames)}]: {conds} }}")

    def _fresh_reduction_iname(self, upper: Any) -> str:
        name = self._fresh("_ft_r")
        self._add_domain([name], [upper])
        return name

    # }}}

    def _storage_name(self, n: Array, index: int) -> str:
        for t in n.tags:
            if isinstance(t, Named):
                return t.name
            if isinstance(t, PrefixNamed):
                return self._fresh(t.prefix + "_")
        return f"_ft_t{index}"

    def _read(self, node: Array, index: tuple, ctx: _StoreContext) -> Any:
        if isinstance(node, SizeParam):
            return prim.Variable(node.name)
        if node in self.names:
            ctx.reads.add(node)
            return prim.Subscript(prim.Variable(self.names[node]), index or (0,))
        if node in self.plan.private:
            return self._private(node, ctx)
        if isinstance(node, IndexLambda):
            return self._translate(node, index, ctx)
        raise AssertionError(f"unexpected node in codegen: {node!r}")

    def _translate(self, node: IndexLambda, index: tuple, ctx: _StoreContext) -> Any:
        index_map = {f"_{i}": idx for i, idx in enumerate(index)}
        translator = Translator(index_map, node.bindings,
                                lambda b, idx: self._read(b, idx, ctx),
                                self._fresh_reduction_iname)
        return translator(node.expr)

    def _private(self, node: IndexLambda, ctx: _StoreContext) -> Any:
        if node in ctx.privates:
            name, insn_id = ctx.privates[node]
            ctx.deps.add(insn_id)
            return prim.Variable(name)
        outer_deps = ctx.deps
        ctx.deps = set()
        expr = self._translate(node, ctx.index, ctx)
        name = self._fresh("_ft_p")
        insn_id = name + "_insn"
        self.temporaries[name] = lp.TemporaryVariable(
            name, storage_dtype(node.dtype), shape=(),
            address_space=lp.AddressSpace.PRIVATE)
        ctx.pending.append(lp.Assignment(
            prim.Variable(name), expr, id=insn_id,
            within_inames=frozenset(ctx.inames),
            depends_on=frozenset(ctx.deps)))
        ctx.deps = outer_deps | {insn_id}
        ctx.privates[node] = (name, insn_id)
        return prim.Variable(name)

    def build(self) -> tuple[lp.TranslationUnit, list[ArgSpec], list[ArgSpec]]:
        inputs: list[ArgSpec] = []
        for n in self.order:
            if isinstance(n, Placeholder):
                self.names[n] = n.name
                inputs.append(ArgSpec(n.name, n.shape, n.dtype))
            elif isinstance(n, SizeParam):
                self.params.add(n.name)
            elif isinstance(n, Scan):
                raise NotImplementedError("scan code generation is not there yet")

        outputs: list[ArgSpec] = []
        out_names = {}
        for i, (name, a) in enumerate(self.outputs.items()):
            out_names.setdefault(a, f"_ft_out{i}")
        stored = [n for n in self.order
                  if isinstance(n, IndexLambda) and n in self.plan.stored]
        level_insns: dict[int, list[str]] = defaultdict(list)
        for k, n in enumerate(stored):
            name = out_names.get(n) or self._storage_name(n, k)
            if n in out_names:
                outputs.append(ArgSpec(name, n.shape, n.dtype))
            else:
                self.temporaries[name] = lp.TemporaryVariable(
                    name, storage_dtype(n.dtype),
                    shape=tuple(n.shape) or (1,),
                    address_space=lp.AddressSpace.GLOBAL)
            insn_ids = self._emit_store(n, name)
            self.names[n] = name
            level_insns[self.level[n]].extend(insn_ids)
        for n, name in out_names.items():
            if not isinstance(n, IndexLambda):
                raise AssertionError("outputs must be IndexLambdas after lowering")
        self._add_barriers(level_insns)
        return self._make_kernel(inputs, outputs), inputs, outputs

    def _emit_store(self, node: IndexLambda, name: str) -> list[str]:
        inames = [self._fresh(f"_ft_i{d}_") for d in range(node.ndim)]
        self._add_domain(inames, list(node.shape))
        ctx = _StoreContext(inames=inames,
                            index=tuple(prim.Variable(i) for i in inames))
        expr = self._translate(node, ctx.index, ctx)
        insn_id = name + "_store"
        lhs = prim.Subscript(prim.Variable(name), ctx.index or (0,))
        self.level[node] = 1 + max((self.level.get(r, 0) for r in ctx.reads),
                                   default=0)
        ctx.pending.append(lp.Assignment(
            lhs, expr, id=insn_id, within_inames=frozenset(inames),
            depends_on=frozenset(ctx.deps)))
        for insn in ctx.pending:
            self.instructions.append((self.level[node], insn))
        self._tag_parallel(inames, node.shape)
        return [insn.id for insn in ctx.pending]

    def _tag_parallel(self, inames: list[str], shape: tuple) -> None:
        if not inames:
            return
        # on CPUs, parallelize the outermost axis over work groups and keep
        # the contiguous axis a sequential loop the compiler vectorizes
        if self.device_kind == "cpu" or len(inames) == 1:
            self.iname_tags[inames[0]] = "g.0"
        else:
            self.iname_tags[inames[-1]] = "l.0"
            self.iname_tags[inames[0]] = "g.0"

    def _add_barriers(self, level_insns: dict[int, list[str]]) -> None:
        """Group instructions by level; a global barrier separates levels."""
        barrier_before: dict[int, str] = {}
        for lev in sorted(level_insns)[1:]:
            prev = [i for lv, ids in level_insns.items() if lv < lev for i in ids]
            bid = f"_ft_gbarrier{lev}"
            barrier_before[lev] = bid
            self.instructions.append((lev, lp.BarrierInstruction(
                id=bid, synchronization_kind="global",
                depends_on=frozenset(prev), within_inames=frozenset())))
        result = []
        for lev, insn in self.instructions:
            if (lev in barrier_before and not isinstance(insn, lp.BarrierInstruction)):
                insn = insn.copy(depends_on=insn.depends_on | {barrier_before[lev]})
            result.append(insn)
        self.instructions = result

    def _make_kernel(self, inputs: list[ArgSpec], outputs: list[ArgSpec]
                     ) -> lp.TranslationUnit:
        def arg_shape(shape):
            return tuple(shape) or (1,)
        args: list[Any] = []
        for a in inputs:
            args.append(lp.GlobalArg(a.name, storage_dtype(a.dtype),
                                     shape=arg_shape(a.shape), is_input=True,
                                     is_output=False))
        for a in outputs:
            args.append(lp.GlobalArg(a.name, storage_dtype(a.dtype),
                                     shape=arg_shape(a.shape), is_input=False,
                                     is_output=True))
        for p in sorted(self.params):
            args.append(lp.ValueArg(p, np.int64))
        args.extend(self.temporaries.values())
        domains = self.domains or ["{ : }"]
        knl = lp.make_kernel(
            [isl.BasicSet(d) for d in domains] if self.domains else domains,
            self.instructions, args, lang_version=(2018, 2),
            name="ftlazy_kernel", seq_dependencies=False,
            silenced_warnings=["v1_scheduler_fallback", "insn_count_subdomains_order"],
            options=lp.Options(return_dict=True, no_numpy=False))
        if self.iname_tags:
            knl = lp.tag_inames(knl, self.iname_tags)
        return knl


@dataclass
class _StoreContext:
    """Per stored array: its inames, the arrays it reads, private statements."""

    inames: list[str]
    index: tuple
    reads: set = field(default_factory=set)
    deps: set = field(default_factory=set)
    privates: dict = field(default_factory=dict)
    pending: list = field(default_factory=list)

# }}}
