# SPDX-License-Identifier: MIT
"""Row fusion of dense arrays (CPU plans): a reduction over each row and
the arrays that read it at their own row share one kernel.

A softmax over the rows of ``x`` (``m = max(x, axis=1)``, ``e = exp(x -
m)``, ``s = sum(e, axis=1)``, ``e / s``) lowers to four stored arrays, each
a kernel that passes over the whole batch: ``x`` is read from memory twice
and ``e`` written once and read twice. On a CPU each of these loop nests
already runs one row per work item (``l.0`` on axis 0, one item per group),
so the work item that computes row ``i`` of ``m`` can go on with row ``i``
of ``e``, ``s`` and the result while the row is still in its cache.

:func:`plan_row_groups` groups such stored arrays into a :class:`RowGroup`:
arrays planned as loop nests or split reductions over the same first axis,
one row per work item, connected by reads at their own row (first index
``_0``, through the arrays inlined into them too), with at least one
reduction among them (else there is no pass to share). Members that are
cheap arithmetic (no function call), no output and read only by members
are not stored at all: their readers recompute them (as in
:mod:`.segment_fusion`). :func:`emit_row_group` emits the members' usual
loop nests in program order within the work item, in one kernel; as each
member writes and reads only its own rows, they need no barrier.

GPU plans keep separate kernels (a row there is a work group's, see
:mod:`.gpu_reductions`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import loopy as lp
import pymbolic.primitives as prim

from ftlazy import shapes as sh
from ftlazy.array import IndexLambda
from ftlazy.node import Node
from ftlazy.scalar_expr import index_var, iter_subexpressions
from ftlazy.target.loopy.padding import padding_bounds
from ftlazy.target.loopy.segment_fusion import (
    NotElementLocal, _reads, _stored_deps, describe_fused,
    emit_in_program_order, unstore_cheap_members)
from ftlazy.target.loopy.storage import has_reduce

if TYPE_CHECKING:
    from ftlazy.target.loopy.kernel import KernelBuilder
    from ftlazy.target.loopy.plan import KernelPlan
    from ftlazy.target.loopy.scopes import Scope

__all__ = ["RowGroup", "plan_row_groups", "emit_row_group"]

#: the strategies of arrays whose loop nests run one row per work item
ROW_STRATEGIES = ("loop_nest", "split_reduction")


@dataclass(eq=False)
class RowGroup:
    """Stored dense arrays computed by one work item per row (of their
    first axis, of extent :attr:`rows`) in one kernel.

    :attr members: in emission (topological) order.
    :attr recomputed: arrays of the group its readers recompute.
    """

    rows: Any
    members: list[Node] = field(default_factory=list)
    recomputed: list[Node] = field(default_factory=list)

    def emit(self, kb: KernelBuilder, scope: Scope,
             out_names: dict[Node, str]) -> None:
        emit_row_group(kb, self, scope, out_names)

    def describe(self, names: dict[Node, str]) -> str:
        return describe_fused(f"one work item per row of {self.rows}",
                              self.members, self.recomputed, names)


# {{{ planning

def _one_row_per_item(n: Node, plan: KernelPlan) -> bool:
    """Whether *n*'s planned loop nest runs one row (of its first axis)
    per work item."""
    p = plan.arrays.get(n)
    return (isinstance(n, IndexLambda) and p is not None and n.ndim >= 1
            and p.strategy in ROW_STRATEGIES and p.l0_axis == 0
            and p.local_size == 1 and padding_bounds(n) is None)


def _reads_own_rows(node: IndexLambda, members: set[Node],
                    stored: set[Node]) -> bool:
    """Whether *node*'s loop nest reads *members* at its own row only: each
    read of a member, and of an array inlined on the way to one, has first
    index ``_0`` (the inlined array's row is then the reader's)."""
    own = index_var(0)
    seen: set[Node] = set()
    stack = [node]
    while stack:
        n = stack.pop()
        if n in seen:
            continue
        seen.add(n)
        # (each subscript's aggregate is a variable too: a member named
        # more often than subscripted is read whole)
        whole: dict[str, int] = {}
        for e in iter_subexpressions(n.expr):
            if isinstance(e, prim.Variable) and n.bindings.get(e.name) in members:
                whole[e.name] = whole.get(e.name, 0) + 1
            if not (isinstance(e, prim.Subscript)
                    and isinstance(e.aggregate, prim.Variable)):
                continue
            whole[e.aggregate.name] = whole.get(e.aggregate.name, 0) - 1
            b = n.bindings.get(e.aggregate.name)
            at_own_row = bool(e.index_tuple) and e.index_tuple[0] == own
            if b in members:
                if not at_own_row:
                    return False
            elif isinstance(b, IndexLambda) and b not in stored:
                if at_own_row:
                    stack.append(b)
                elif _stored_deps(b, stored) & members:
                    return False
        if any(count > 0 for count in whole.values()):
            return False
    return True


def _find(parent: dict[Node, Node], n: Node) -> Node:
    while parent[n] is not n:
        parent[n] = parent[parent[n]]
        n = parent[n]
    return n


def plan_row_groups(plan: KernelPlan, order: list[Node],
                    outputs: set[Node]) -> None:
    """Fill ``plan.row_groups`` (see the module docs); the arrays a group
    recomputes leave ``plan.storage.stored`` and ``plan.arrays``."""
    storage = plan.storage
    in_segments = {m for g in plan.segment_groups for m in g.members}
    candidates = [n for n in order
                  if n not in in_segments and _one_row_per_item(n, plan)]
    parent = {n: n for n in candidates}
    candidate_set = set(candidates)
    for n in candidates:
        deps = {d for d in _stored_deps(n, storage.stored) & candidate_set
                if sh.prove_equal(d.shape[0], n.shape[0])}
        if deps and _reads_own_rows(n, deps, storage.stored):
            for d in deps:
                parent[_find(parent, d)] = _find(parent, n)
    by_root: dict[Node, list[Node]] = {}
    for n in candidates:
        by_root.setdefault(_find(parent, n), []).append(n)
    for members in by_root.values():
        if len(members) < 2 or not any(has_reduce(m.expr) for m in members):
            continue  # nothing to fuse, or no reduction to share a pass with
        group = RowGroup(members[0].shape[0], list(members))
        # (without calls: a dense row is long, and a second exp per element
        # costs more than the pass it saves, as measured on PoCL)
        group.recomputed = unstore_cheap_members(
            plan, [m for m in members if not has_reduce(m.expr)],
            set(members), order, outputs, calls=False)
        kept = [m for m in members if m not in group.recomputed]
        # (a reader remade to inline a recomputed member must still run one
        # row per item and read the others at its own row)
        group.members = [m for m in kept if _one_row_per_item(m, plan)
                         and _reads_own_rows(m, set(kept) - {m}, storage.stored)]
        if len(group.members) >= 2:
            plan.row_groups.append(group)

# }}}


# {{{ emission

def _store_row(insns: list[Any], name: str) -> Any:
    """The first index of every store of *insns* into *name* (the work
    item's row), or None if they differ."""
    rows = {insn.assignee.index_tuple[0] for insn in insns
            if isinstance(insn, lp.Assignment)
            and isinstance(insn.assignee, prim.Subscript)
            and insn.assignee.aggregate.name == name}
    return rows.pop() if len(rows) == 1 else None


def _check_row_local(insns: list[Any], row: Any, names: set[str]) -> None:
    """Raise :class:`~.segment_fusion.NotElementLocal` unless every read of
    a member (named in *names*) in *insns* is at the work item's *row*."""
    if row is None:
        raise NotElementLocal("no row")
    for insn in insns:
        for e in _reads(insn):
            if e.aggregate.name in names and e.index_tuple[0] != row:
                raise NotElementLocal(e.aggregate.name)


def emit_row_group(kb: KernelBuilder, group: RowGroup, scope: Scope,
                   out_names: dict[Node, str]) -> None:
    """Instructions of every member of *group* in one kernel (one work item
    per row), appended to ``kb.parts.instructions``."""
    def emit_member(n: Node, name: str) -> tuple[list[Any], set[Node], Any]:
        mine, reads, _ = kb.emit_array(n, name, scope)
        return mine, reads, name

    kb.shared_rows = {}
    try:
        emitted = emit_in_program_order(kb, group.members, scope, out_names,
                                        emit_member)
    finally:
        kb.shared_rows = None
    names = {kb.plan.names[m] for m in group.members}
    for mine, name in emitted:
        _check_row_local(mine, _store_row(mine, name), names)

# }}}
