# SPDX-License-Identifier: MIT
"""Materialization: which arrays of a lowered DAG are stored in memory and
which are computed inside their readers.

* Stored: outputs, reductions, ``ImplStored``/``Named``/``PrefixNamed``
  arrays, loop inputs, and arrays with several users whose recomputation is
  costly. Everything else is inlined into its readers, giving one fused loop
  nest per stored array. ``ImplInlined`` overrides the heuristics.
* *Private statements*: an inlined array read at exactly its reader's own
  indices may become a private scalar statement in the same loop nest. This
  is used for common subexpressions and to cut deep chains (a 1,000-step
  Horner chain would otherwise nest beyond the OpenCL compiler's limit).
"""

from __future__ import annotations

from functools import lru_cache
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pymbolic.primitives as prim

from ftlazy import shapes as sh
from ftlazy.array import Array, IndexLambda
from ftlazy.node import Node, iter_children, topological_order
from ftlazy.scalar_expr import (
    ExprIdentityMapper, Reduce, expression_children, index_var,
    iter_subexpressions)
from ftlazy.tags import ImplInlined, ImplStored, Named, PrefixNamed

#: an inlined chain deeper than this is cut into private statements
MAX_INLINE_DEPTH = 64
#: extra depth a function call adds: loopy resolves each call by expanding
#: and hashing its whole argument, so nested calls cost it quadratically
CALL_DEPTH = 3
#: arrays with several users whose body has more operations are stored
RECOMPUTE_COST_LIMIT = 12
#: GPUs: a deep chain that repeats no step but takes its steps from at most
#: this many kinds is cut at every step, for :mod:`.rolling` to turn into
#: one loop over a table of the steps' kinds
MAX_STEP_KINDS = 4


# {{{ analysis of the lowered DAG

@lru_cache(maxsize=2**16)
def _expr_cost(expr: Any) -> int:
    """Operation count of a body, calls weighted as expensive."""
    return sum(1 + 8 * isinstance(e, prim.Call) + 100 * isinstance(e, Reduce)
               for e in iter_subexpressions(expr)
               if isinstance(e, prim.ExpressionNode))


def _computed_part(n: IndexLambda) -> Any:
    """*n*'s expression without the guard of its unread padding (see
    :func:`~ftlazy.target.loopy.padding.padding_bounds`: readers read only
    inside each element's extent, so a reader inlining it pays for the
    computation alone, as the code it gets inlined shows)."""
    from ftlazy.target.loopy.padding import padding_bounds
    found = padding_bounds(n)
    return n.expr if found is None else found[0]


@lru_cache(maxsize=2**16)
def has_reduce(expr: Any) -> bool:
    return any(isinstance(e, Reduce) for e in iter_subexpressions(expr))


@lru_cache(maxsize=2**16)
def identity_read_bindings(node: IndexLambda) -> frozenset[str]:
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
            stack.extend((c, in_reduce) for c in expression_children(e))
    return frozenset(good - bad)


@dataclass
class StoragePlan:
    """Which arrays are stored globally and which are private statements."""

    stored: set[Node] = field(default_factory=set)
    private: set[Node] = field(default_factory=set)
    #: whether some chain was cut into statements that repeat a step (so
    #: that :mod:`.rolling` can turn them into a loop)
    repeating_chains: bool = False
    #: whether some chain was cut at every step, each of a few kinds (see
    #: :data:`MAX_STEP_KINDS`)
    mixed_chains: bool = False


#: the most operations (see :func:`_expr_cost`) of a loop input that its
#: loop computes where it reads it instead of reading it from memory
LOOP_COMPUTABLE_COST = 4


@lru_cache(maxsize=2**16)
def loop_computable(node: IndexLambda) -> bool:
    """Whether a loop (a scan) reading *node* computes it where it reads
    it, so that no kernel of its own stores it first: a cheap body with no
    reduction that reads only inputs (placeholders, or a scan body's
    parameters), each at the node's own last index in its last position
    (a slice along leading axes such as a layer's weights ``w[d]``, which
    keeps the loop's contiguous reads contiguous; a transpose is stored),
    or nothing at all (zeros, an arange)."""
    from ftlazy.array import Placeholder
    from ftlazy.fractal import BodyParam
    if has_reduce(node.expr) or _expr_cost(node.expr) > LOOP_COMPUTABLE_COST:
        return False
    for b in node.bindings.values():
        if not (isinstance(b, (Placeholder, BodyParam))
                or (isinstance(b, IndexLambda) and not b.bindings
                    and loop_computable(b))):
            return False
    last = index_var(node.ndim - 1) if node.ndim else None
    uses: dict[str, int] = defaultdict(int)
    for e in iter_subexpressions(node.expr):
        if isinstance(e, prim.Subscript) and e.aggregate.name in node.bindings:
            uses[e.aggregate.name] -= 1
            if last is None or not e.index_tuple or e.index_tuple[-1] != last:
                return False
        elif isinstance(e, prim.Variable) and e.name in node.bindings:
            uses[e.name] += 1
    # (an array read whole, not at an index, is not a slice)
    return not any(count > 0 and node.bindings[name].ndim
                   for name, count in uses.items())


@lru_cache(maxsize=2**16)
def _reads_directly(n: IndexLambda) -> bool:
    """Whether *n* reads its bindings at indices computed from its own
    (no index read from an array: a gather, a jagged element's rows) and
    has no padding guard: what a reader can compute again where it
    stands."""
    from ftlazy.target.loopy.padding import padding_bounds
    if padding_bounds(n) is not None:
        return False
    return not any(
        isinstance(e, prim.Subscript) and any(
            isinstance(i, prim.Subscript) for idx in e.index_tuple
            for i in iter_subexpressions(idx))
        for e in iter_subexpressions(n.expr))


def decide_storage(roots: list[Array], order: list[Node] | None = None,
                   mixed_steps: bool = False, recompute_limit: int = 0
                   ) -> StoragePlan:
    """Materialization decisions for the DAG of *roots* (see module doc).
    With *mixed_steps*, a deep chain that repeats no step but has at most
    :data:`MAX_STEP_KINDS` kinds of step is cut at every step. With
    *recompute_limit* (GPUs, whose kernels wait on memory), an array that
    several readers read, of at most that cost with what is inlined into
    it and reading no index from an array (:func:`_reads_directly`), is
    recomputed by each reader: neither stored (``exp(x - max)`` of a
    softmax, read by its sum and its quotient) nor a private statement
    (``x - mean`` of a layer norm, squared and divided), which a reduction
    over it could not inline."""
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
            # loops read their inputs from memory, except those they can
            # compute where they read them (constants, aranges, slices)
            for c in iter_children(n):
                users[c] += 1
                if isinstance(c, IndexLambda) and not loop_computable(c):
                    plan.stored.add(c)
    root_set = set(roots)
    depth: dict[Node, int] = {}
    has_private: dict[Node, bool] = {}
    #: the inlined binding a node's depth comes from (the chain's spine)
    deepest: dict[Node, Node] = {}
    #: the depth at which a chain is cut, once tuned to its period
    chain_limit: dict[Node, int | None] = {}
    #: the operations a reader repeats where it computes an array again,
    #: the arrays inlined into it included (with *recompute_limit* only)
    inlined_cost: dict[Node, int] = {}
    for n in order:
        if not isinstance(n, IndexLambda):
            continue
        recomputed = False
        if recompute_limit:
            inlined_cost[n] = _expr_cost(_computed_part(n)) + sum(
                inlined_cost.get(b, 0) for b in n.bindings.values()
                if b not in plan.stored)
            recomputed = (inlined_cost[n] <= recompute_limit
                          and _reads_directly(n))
        tags = n.tags
        inlined_tag = any(isinstance(t, ImplInlined) for t in tags)
        if n in root_set or (not inlined_tag and (
                any(isinstance(t, (ImplStored, Named, PrefixNamed)) for t in tags)
                or has_reduce(n.expr)
                or (users[n] > 1
                    and _expr_cost(_computed_part(n)) > RECOMPUTE_COST_LIMIT
                    and not recomputed))):
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
            if depth[b] + _depth_weight(n.expr) > d:
                d, deepest[n] = depth[b] + _depth_weight(n.expr), b
            priv = priv or has_private[b]
        if n in plan.stored:
            depth[n], has_private[n] = 0, False
            continue
        limit = chain_limit.get(deepest.get(n))
        if limit is None:
            limit = MAX_INLINE_DEPTH
        if n in deepest and deepest[n] in chain_limit:
            chain_limit[n] = chain_limit[deepest[n]]
        all_identity = identity_users[n] == users[n]
        if all_identity and (d > limit or (
                users[n] > 1 and not recomputed)):
            plan.private.add(n)
            depth[n], has_private[n] = 0, True
            if d > limit and n not in chain_limit:
                signatures = _spine_signatures(n, deepest, depth)
                chain_limit[n] = _period_aligned_limit(signatures)
                plan.repeating_chains |= chain_limit[n] is not None
                if (chain_limit[n] is None and mixed_steps
                        and len(set(signatures)) <= MAX_STEP_KINDS):
                    chain_limit[n] = 0
                    plan.mixed_chains = True
        elif d > limit:
            plan.stored.add(n)
            depth[n], has_private[n] = 0, False
        else:
            depth[n], has_private[n] = d, priv
    return plan


def cap_nest_cost(plan: StoragePlan, order: list[Node], max_cost: int
                  ) -> StoragePlan:
    """*plan* with arrays stored wherever the code of one loop nest (its
    stored array's body, the arrays inlined into it and its private
    statements, see :func:`_expr_cost`) would cost more than *max_cost*
    operations: straight-line code that repeats no step (which
    :mod:`.rolling` cannot turn into a loop) is then cut into kernels of a
    bounded size, for GPU compilers whose time grows faster than the
    code (NVIDIA's took 59 s on 2,000 operations). Chains that repeat a
    step, or take their steps from a few kinds, are left to rolling."""
    if plan.repeating_chains or plan.mixed_chains:
        return plan
    stored, private = set(plan.stored), set(plan.private)
    cost: dict[Node, int] = {}
    for n in order:
        if not isinstance(n, IndexLambda):
            continue
        total = _expr_cost(_computed_part(n)) + sum(
            cost.get(b, 0) for b in set(n.bindings.values())
            if isinstance(b, IndexLambda) and b not in stored)
        if n in stored:
            cost[n] = 0
        elif total > max_cost:
            # (its readers read it from memory: a new nest starts here)
            stored.add(n)
            private.discard(n)
            cost[n] = 0
        else:
            cost[n] = total
    if stored == plan.stored:
        return plan
    return StoragePlan(stored=stored, private=private,
                       repeating_chains=plan.repeating_chains,
                       mixed_chains=plan.mixed_chains)


class _AbstractConstants(ExprIdentityMapper):
    """A body with each floating-point constant replaced by its dtype: steps
    of an unrolled loop often differ only in such constants (``p * x +
    0.37``), which rolling reads from a table."""

    def map_constant(self, expr: Any) -> Any:
        if isinstance(expr, (float, np.floating)):
            return prim.Variable(f"_ft_constant_{np.asarray(expr).dtype}")
        return expr

    map_numpy_scalar = map_constant


@lru_cache(maxsize=2**16)
def _abstract_constants(expr: Any) -> Any:
    return _AbstractConstants()(expr)


def _step_signature(n: IndexLambda, spine: Node | None) -> tuple:
    """What a node of a chain looks like, up to which inputs it reads and
    the values of its floating-point constants."""
    return (_abstract_constants(n.expr), n.shape, n.dtype, n.tags, tuple(sorted(
        (name, "spine" if b is spine else (type(b).__name__, b.shape, b.dtype))
        for name, b in n.bindings.items())))


def _spine_signatures(n: IndexLambda, deepest: dict[Node, Node],
                      depth: dict[Node, int]) -> list[tuple]:
    """The step signatures of the chain ending at *n*, from *n* down its
    spine (the path of deepest inlined bindings) to its first stored or
    private node."""
    signatures = []
    node: Node | None = n
    while isinstance(node, IndexLambda):
        below = deepest.get(node)
        signatures.append(_step_signature(node, below))
        if below is None or depth.get(below, 0) == 0:
            break
        node = below
    return signatures


def _period_aligned_limit(signatures: list[tuple]) -> int | None:
    """Cut depth for the chain of step *signatures* (see
    :func:`_spine_signatures`, cut for the first time), or None if the
    chain does not repeat a step.

    A chain that repeats a step of P nodes (an unrolled loop) is cut every
    multiple of P nodes, so that all its private statements but the first
    and last are the same expression and can be rolled into a loop (see
    :mod:`.rolling`). The bottom of the chain may differ."""
    length = len(signatures)
    for period in range(1, length // 2 + 1):
        matching = 0
        while (matching + period < length
               and signatures[matching] == signatures[matching + period]):
            matching += 1
        if matching >= max(2 * period, length // 2):
            # the depth one step adds (nodes weighted as in decide_storage)
            step = sum(_depth_weight(sig[0]) for sig in signatures[:period])
            return step * max(1, (MAX_INLINE_DEPTH + 1) // step) - 1
    return None


@lru_cache(maxsize=2**16)
def _depth_weight(expr: Any) -> int:
    """The depth a node with body *expr* adds to an inlined chain."""
    calls = sum(isinstance(e, prim.Call) for e in iter_subexpressions(expr))
    return 1 + CALL_DEPTH * calls

# }}}
