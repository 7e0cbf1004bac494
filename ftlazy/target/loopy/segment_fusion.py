# SPDX-License-Identifier: MIT
"""Per-segment fusion of a map over a FractalTensor's elements (CPU plans).

A map body lowers to stored arrays of two kinds (see
:mod:`ftlazy.transform.jagged_lowering`):

* *segment reductions* (``(n, ...)``, row ``e`` reduces element ``e``'s
  packed rows, see :mod:`.segments`);
* *row arrays* (``(rows, ...)``, packed: row ``t`` belongs to the element
  its segment id ``seg[t]`` names).

Separately, each is a kernel of its own, and a softmax reads and writes the
whole batch several times. :func:`plan_segment_groups` groups the stored
arrays of one element structure (same offsets) into a
:class:`SegmentGroup`, emitted as ONE kernel with one work item per element
(:func:`emit_segment_group`): the work item computes the members in order,
each over its own element's rows ``[start(e), start(e) + extent(e))``. A
segment is small, so the passes after the first read it from cache. Members
are written and read by the same work item only, so no barrier is needed:
their instructions are declared free of global synchronization among
themselves.

Row arrays of a group that are cheap (no reduction, few operations), read
only by members and no output are not stored at all: their readers
recompute them (a store and a load of the whole batch cost more than a
second ``exp``).

GPU plans keep the separate kernels (the rows of one element would be one
work item's serial loop there).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import loopy as lp
import pymbolic.primitives as prim

from ftlazy import shapes as sh
from ftlazy.array import IndexLambda, Placeholder
from ftlazy.fractal import LoopResult, Scan
from ftlazy.node import Node, iter_children
from ftlazy.scalar_expr import index_var, iter_subexpressions
from ftlazy.tags import ImplStored, Named, PrefixNamed
from ftlazy.target.loopy.padding import padding_bounds
from ftlazy.target.loopy.ranges import (
    DataRange, ElementRows, data_dependent_range, element_rows, linear_form,
    parse_segment_ids_binding)
from ftlazy.target.loopy.scopes import Scope, StoreContext
from ftlazy.target.loopy.storage import _expr_cost, has_reduce

if TYPE_CHECKING:
    from ftlazy.target.loopy.kernel import KernelBuilder
    from ftlazy.target.loopy.plan import KernelPlan

#: the form of a group member with one row per element (an array read at
#: the element, as a segment reduction's result)
ELEMENT = (1, 0)

#: a row array whose inlined body costs at most this (see
#: :func:`~.storage._expr_cost`: a call counts 9, so one call and a few
#: arithmetic operations and reads) is recomputed by its
#: readers in a group instead of stored
RECOMPUTE_COST = 32


@dataclass(eq=False)
class SegmentGroup:
    """Stored arrays computed by one work item per element of *offsets*.

    :attr members: in emission (topological) order.
    :attr forms: member -> ``(const, coeff)`` of its rows' extent
        ``const + coeff*L`` (row arrays), None for segment reductions.
    :attr recomputed: row arrays of the body its readers recompute.
    """

    offsets: Node
    #: the number of elements (the segment reductions' first axis)
    elements: Any = None
    members: list[Node] = field(default_factory=list)
    forms: dict[Node, tuple[int, int] | None] = field(default_factory=dict)
    recomputed: list[Node] = field(default_factory=list)

    def emit(self, kb: KernelBuilder, scope: Scope,
             out_names: dict[Node, str]) -> None:
        emit_segment_group(kb, self, scope, out_names)

    def describe(self, names: dict[Node, str]) -> str:
        return describe_fused(
            f"one work item per element of {_name(self.offsets, names)}",
            self.members, self.recomputed, names)


def describe_fused(unit: str, members: list[Node], recomputed: list[Node],
                   names: dict[Node, str]) -> str:
    """The plan's line for a fused group: who computes what (*unit*), its
    members by name, and how many arrays its readers recompute."""
    text = f"{unit}: " + ", ".join(_name(m, names) for m in members)
    if recomputed:
        text += f" ({len(recomputed)} array(s) recomputed by their readers)"
    return text


def _name(node: Node, names: dict[Node, str]) -> str:
    return names.get(node) or getattr(node, "name", None) or "?"


# {{{ planning

def _element_offsets(node: IndexLambda) -> Node | None:
    """The offsets node whose element ``_0`` a segment reduction reduces."""
    found = data_dependent_range(node.expr, node.bindings)
    if found is None:
        return None
    (rng,) = found[1].values()
    for rows in element_rows(rng, "_r"):
        if rows.element == index_var(0):
            return node.bindings.get(rows.offsets)
    return None


def _row_layout(node: IndexLambda, stored: set[Node],
                known: dict[Node, tuple[Node, tuple[int, int]]]
                ) -> tuple[Node, tuple[int, int]] | None:
    """``(offsets node, form)`` of a packed row array: its body, or an array
    inlined into it at its own rows, reads the segment ids of its own rows
    (``seg[_0]``), or a stored row array of *known* layout at its own row,
    all of one layout."""
    layouts = set()
    seen: set[Node] = set()
    stack = [node]
    while stack:
        n = stack.pop()
        if n in seen:
            continue
        seen.add(n)
        for e in iter_subexpressions(n.expr):
            if not (isinstance(e, prim.Subscript)
                    and isinstance(e.aggregate, prim.Variable)):
                continue
            b = n.bindings.get(e.aggregate.name)
            parsed = parse_segment_ids_binding(e.aggregate.name)
            if parsed is None:
                # (an array inlined at this row reads its segment ids too)
                own_row = e.index_tuple[:1] == (index_var(0),)
                if isinstance(b, IndexLambda) and b not in stored and own_row:
                    stack.append(b)
                elif b in known and own_row and sh.prove_equal(
                        b.shape[0], node.shape[0]):
                    layouts.add(known[b])
                continue
            if e.index_tuple != (index_var(0),):
                return None
            form, offsets = parsed
            if offsets not in n.bindings:
                return None
            layouts.add((n.bindings[offsets], form))
    return layouts.pop() if len(layouts) == 1 else None


def _stored_deps(node: Node, stored: set[Node]) -> set[Node]:
    """The stored arrays, loops and inputs *node*'s loop nest reads (through
    the arrays inlined into it)."""
    found: set[Node] = set()
    seen: set[Node] = set()
    stack = list(iter_children(node))
    while stack:
        n = stack.pop()
        if n in seen:
            continue
        seen.add(n)
        if isinstance(n, IndexLambda) and n not in stored:
            stack.extend(iter_children(n))
        else:
            found.add(n)
    return found


def plan_segment_groups(plan: KernelPlan, order: list[Node],
                        outputs: set[Node]) -> None:
    """Fill ``plan.segment_groups`` (see the module docs); the arrays a group
    recomputes leave ``plan.storage.stored`` and ``plan.arrays``."""
    from ftlazy.target.loopy.plan import ArrayPlan
    storage = plan.storage
    candidates: dict[Node, SegmentGroup] = {}
    element_arrays: list[IndexLambda] = []
    layouts: dict[Node, tuple[Node, tuple[int, int]]] = {}
    for n in order:
        array_plan = plan.arrays.get(n)
        if array_plan is None or not isinstance(n, IndexLambda):
            continue
        if array_plan.strategy == "segment_reduction" and array_plan.l0_axis == 0:
            offsets, form = _element_offsets(n), None
        elif (array_plan.strategy == "loop_nest" and n.ndim >= 1
              and padding_bounds(n) is None
              and (layout := _row_layout(n, storage.stored, layouts))
              is not None):
            offsets, form = layouts[n] = layout
        elif array_plan.strategy == "loop_nest" and n.ndim >= 1:
            element_arrays.append(n)
            continue
        else:
            continue
        if offsets is None or not isinstance(offsets, Placeholder):
            continue
        group = candidates.setdefault(offsets, SegmentGroup(offsets))
        if form is None:
            if group.elements is None:
                group.elements = n.shape[0]
            elif not sh.prove_equal(group.elements, n.shape[0]):
                continue
        group.members.append(n)
        group.forms[n] = form
    for group in candidates.values():
        if len(group.members) < 2 or all(f is not None for f in group.forms.values()):
            continue  # nothing to fuse, or no reduction to share a pass with
        element_arrays = _add_element_arrays(group, element_arrays, order,
                                             storage.stored)
        for m in unstore_cheap_members(
                plan, [m for m in group.members
                       if group.forms[m] not in (None, ELEMENT)],
                set(group.members), order, outputs):
            group.members.remove(m)
            del group.forms[m]
            group.recomputed.append(m)
        if any(plan.arrays[m].strategy not in ("segment_reduction", "loop_nest")
               for m in group.members):
            continue
        if len(group.members) >= 2:
            plan.segment_groups.append(group)
    for group in plan.segment_groups:
        for m in group.members:
            if group.forms[m] is not None:
                p = plan.arrays[m]
                strategy = ("segment_element" if group.forms[m] == ELEMENT
                            else "segment_rows")
                plan.arrays[m] = ArrayPlan(strategy, p.shape, p.dtype, 1, 0,
                                           p.vector_width)


def unstore_cheap_members(plan: KernelPlan, candidates: list[Node],
                          members: set[Node], order: list[Node],
                          outputs: set[Node], calls: bool = True
                          ) -> list[Node]:
    """The *candidates* (members of a fused group of *members*) that are no
    longer stored: cheap (no reduction inlined, a body costing at most
    :data:`RECOMPUTE_COST`, and calling no function unless *calls*), no
    output, not tagged to be stored, and read by members only, whose loop
    nests now inline them (their plans are remade)."""
    from ftlazy.target.loopy.plan import _plan_array, inlined_nodes
    storage = plan.storage
    members = set(members)
    recomputed = []
    for m in candidates:
        if m in outputs or any(isinstance(t, (ImplStored, Named, PrefixNamed))
                               for t in m.tags):
            continue
        closure = inlined_nodes(m, storage)
        if (any(has_reduce(c.expr) or c in storage.private for c in closure)
                or sum(_expr_cost(c.expr) for c in closure) > RECOMPUTE_COST
                or (not calls and any(isinstance(e, prim.Call) for c in closure
                                      for e in iter_subexpressions(c.expr)))):
            continue
        readers = [r for r in order if r in storage.stored and r is not m
                   and m in _stored_deps(r, storage.stored)]
        if not readers or not all(r in members for r in readers):
            continue
        storage.stored.discard(m)
        del plan.arrays[m]
        members.discard(m)
        recomputed.append(m)
        for r in readers:  # their loop nests now inline m
            plan.arrays[r] = _plan_array(r, plan.profile, storage, None)
    return recomputed


def _add_element_arrays(group: SegmentGroup, arrays: list[IndexLambda],
                        order: list[Node], stored: set[Node]
                        ) -> list[IndexLambda]:
    """Adds to *group* the arrays with a row per element (``(n, ...)``,
    no segment reduction) that read one of its members: computed at the
    work item's own element. Returns the other *arrays* (an array joins
    one group at most)."""
    if group.elements is None:
        return arrays
    members = set(group.members)
    position = {n: i for i, n in enumerate(order)}
    rest = []
    for a in arrays:  # (in order: an array reading one added joins too)
        if (sh.prove_equal(a.shape[0], group.elements)
                and _stored_deps(a, stored) & members):
            group.members.append(a)
            group.forms[a] = ELEMENT
            members.add(a)
        else:
            rest.append(a)
    group.members.sort(key=position.__getitem__)
    return rest


def fused_order(order: list[Node], plan: KernelPlan) -> list[Node] | None:
    """*order* with each fused group's members consecutive (segment groups
    and :mod:`.row_fusion`'s row groups), or None if some group cannot be
    (an array outside it depends on one member and is read by another):
    emit without fusion then."""
    groups = plan.fused_groups()
    group_of = {m: g for g in groups for m in g.members}
    if not group_of:
        return order
    stored = plan.storage.stored
    units = [n for n in order if n in stored or isinstance(n, (Scan, LoopResult))]
    unit_set = set(units)
    key_of = {n: group_of.get(n, n) for n in units}
    deps: dict[Any, set[Any]] = {}
    for n in units:
        key = key_of[n]
        deps.setdefault(key, set())
        for d in _stored_deps(n, stored):
            if d in unit_set and key_of[d] is not key:
                deps[key].add(key_of[d])
    position = {}
    for i, n in enumerate(units):
        position.setdefault(key_of[n], i)
    done: set[Any] = set()
    result: list[Node] = [n for n in order if n not in unit_set]
    visiting: set[Any] = set()

    def visit(key: Any) -> bool:
        if key in done:
            return True
        if key in visiting:
            return False  # a cycle through the group
        visiting.add(key)
        for d in sorted(deps[key], key=position.__getitem__):
            if not visit(d):
                return False
        visiting.discard(key)
        done.add(key)
        if key in groups:
            result.extend(key.members)
        else:
            result.append(key)
        return True

    for key in sorted(deps, key=position.__getitem__):
        if not visit(key):
            return None
    return result

# }}}


# {{{ emission

class NotElementLocal(Exception):
    """A member reads another member outside its own element (emit the
    kernel without fusion)."""


def emit_in_program_order(
        kb: KernelBuilder, members: list[Node], scope: Scope,
        out_names: dict[Node, str],
        emit_member: Callable[[Node, str], tuple[list[Any], set[Node], Any]]
        ) -> list[tuple[list[Any], Any]]:
    """Emit the *members* of a fused group (``emit_member(node, name) ->
    (instructions, nodes read, anything)``), each after the previous ones
    within the work item, and append them to ``kb.parts.instructions`` as
    one kernel whose instructions need no global synchronization among
    themselves. Returns each member's instructions and third value, for
    the caller's locality check (run before the kernel is built)."""
    member_set = set(members)
    prefix = kb.parts.fresh("_ft_fused") + "_"
    insns: list[Any] = []
    level = 1
    previous: frozenset[str] = frozenset()
    emitted = []
    for n in members:
        name = out_names.get(n) or kb.storage_name(n)
        kb.plan.names[n] = name
        if n not in out_names:
            kb.parts.global_temporary(name, n.shape, n.dtype)
        mine, reads, extra = emit_member(n, name)
        # program order within the work item: after the previous members
        mine = [i.copy(depends_on=i.depends_on | previous) for i in mine]
        previous = frozenset(i.id for i in mine)
        level = max([level] + [1 + kb.level[r] for r in reads
                               if r not in member_set])
        scope.names[n] = name
        insns += mine
        emitted.append((mine, extra))
    for n in members:
        kb.level[n] = level
    kb.nosync_prefixes.append(prefix)
    kb.parts.instructions.extend(((level, "~" + prefix), i)
                                 for i in _prefixed(insns, prefix))
    return emitted


def emit_segment_group(kb: KernelBuilder, group: SegmentGroup, scope: Scope,
                       out_names: dict[Node, str]) -> None:
    """Instructions of every member of *group* in one kernel (one work item
    per element), appended to ``kb.parts.instructions``."""
    from ftlazy.target.loopy.segments import emit_segment_reduction

    def emit_member(n: Node, name: str) -> tuple[list[Any], set[Node], Any]:
        form = group.forms[n]
        if form is None:
            mine, reads = emit_segment_reduction(kb, n, name, scope,
                                                 kb.plan.arrays[n])
            return mine, reads, _element_of(mine, name)
        return _emit_rows(kb, n, name, scope, group, form)

    emitted = emit_in_program_order(kb, group.members, scope, out_names,
                                    emit_member)
    stores = {kb.plan.names[m]: group.forms[m] for m in group.members}
    offsets_name = scope.names[group.offsets]
    for mine, element in emitted:
        _check_element_local(mine, element, stores, offsets_name)


def _emit_rows(kb: KernelBuilder, node: IndexLambda, name: str, scope: Scope,
               group: SegmentGroup, form: tuple[int, int]
               ) -> tuple[list[Any], set[Node], Any]:
    """A row array's store over one element's rows per work item."""
    const, coeff = form
    offsets_name = scope.names[group.offsets]
    known: list[ElementRows] = []
    elements: list[Any] = []

    def nest(lanes: int) -> StoreContext:
        inames, index0 = kb.loop_nest((group.elements,), scope, cheap=False)
        ctx = StoreContext(scope, list(inames), (), node.shape)
        element = index0[0]
        elements.append(element)
        off = prim.Variable(offsets_name)
        start: Any = 0
        extent: Any = 0
        if coeff:
            start = off[element] if coeff == 1 else coeff * off[element]
            extent = coeff * (off[element + 1] - off[element])
        if const:
            start = const * element + start if coeff else const * element
            extent = const + extent if coeff else const
        if form == ELEMENT:  # one row: the element's own
            rows, index = [], [element]
        else:
            j = kb.ranged_iname(DataRange((0,), (extent,)), ctx)
            rows, index = [j], [start + prim.Variable(j)]
            known.extend(element_rows(DataRange((0,), (extent,)), j))
            kb.element_rows.extend(known)
        trailing: list[str] = []
        for d in range(1, node.ndim):
            names, idx = kb.sequential_axis(
                d, node.shape[d], lanes if d == node.ndim - 1 else 1)
            kb.parts.priorities.extend((a, b) for a in rows + trailing
                                       for b in names)
            trailing += names
            index.append(idx)
        ctx.inames += rows + trailing
        ctx.index = tuple(index)
        return ctx

    try:
        insns, reads = kb.emit_store(node, name, scope, nest=nest)
    finally:
        del kb.element_rows[len(kb.element_rows) - len(known):]
    return insns, reads, elements[0]


def _element_of(insns: list[Any], name: str) -> Any:
    """The element index a segment reduction's store writes."""
    for insn in insns:
        if (isinstance(insn, lp.Assignment)
                and isinstance(insn.assignee, prim.Subscript)
                and insn.assignee.aggregate.name == name):
            return insn.assignee.index_tuple[0]
    return None


def _check_element_local(insns: list[Any], element: Any,
                         stores: dict[str, tuple[int, int] | None],
                         offsets: str) -> None:
    """Raise :class:`NotElementLocal` unless every read of a member in
    *insns* stays in the work item's own *element*: a segment reduction's
    row ``element``, a row array's rows ``start(element) + j (+ c)``."""
    if element is None:
        raise NotElementLocal("no element")
    own = linear_form(element)
    if own is None:
        raise NotElementLocal("element")
    off_key = ("sub", offsets, (frozenset(own.items()),))
    for insn in insns:
        for e in _reads(insn):
            name = e.aggregate.name
            if name not in stores:
                continue
            got = linear_form(e.index_tuple[0])
            if got is None:
                raise NotElementLocal(name)
            form = stores[name]
            if form is None:
                if got != own:
                    raise NotElementLocal(name)
                continue
            const, coeff = form
            rest = dict(got)
            rest[off_key] = rest.get(off_key, 0) - coeff
            for k, v in own.items():
                rest[k] = rest.get(k, 0) - const * v
            rest.pop((), None)
            # the element's first row (plus a constant), or a row an iname
            # of a range within the element steps through
            rest = {k: v for k, v in rest.items() if v}
            if rest and (len(rest) != 1 or list(rest.values()) != [1]
                         or next(iter(rest))[0] != "atom"):
                raise NotElementLocal(name)


def _reads(insn: Any) -> list[prim.Subscript]:
    if not isinstance(insn, lp.Assignment):
        return []
    return [e for e in iter_subexpressions(insn.expression)
            if isinstance(e, prim.Subscript)
            and isinstance(e.aggregate, prim.Variable)]


def _prefixed(insns: list[Any], prefix: str) -> list[Any]:
    """*insns* with ids starting with *prefix* (so that
    :func:`~.scan.declare_scan_nosync` covers them)."""
    ids = {i.id for i in insns}
    return [i.copy(id=prefix + i.id, depends_on=frozenset(
        prefix + d if d in ids else d for d in i.depends_on)) for i in insns]

# }}}


__all__ = ["SegmentGroup", "plan_segment_groups", "fused_order",
           "emit_segment_group", "NotElementLocal"]
