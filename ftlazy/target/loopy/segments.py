# SPDX-License-Identifier: MIT
"""Loop nests for reductions over a data-dependent range (segment
reductions over the elements of a FractalTensor, see :mod:`.ranges`):
``out[i, k...] = op_{r in range(i)} f(i, k..., r)``.

* CPU (``l.0`` on axis 0, one work item per row ``i``): the trailing axes
  ``k...`` are a private accumulator; the range loop runs outside the
  loops over them, so each step reads a contiguous row of the packed data
  that the OpenCL compiler vectorizes, and the range's bounds are loaded
  once per row.
* GPU (``l.0`` on the last axis): a work group per row ``i``, its work
  items over the contiguous last axis (coalesced reads), each running the
  range loop; for ``(n, m)`` results with ``m`` within one group, the
  range is shared among lanes of work items on ``l.1`` (the plan's
  ``block``), combined in local memory.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import loopy as lp
import pymbolic.primitives as prim
from loopy.symbolic import Reduction

from ftlazy.array import IndexLambda
from ftlazy.node import Node
from ftlazy.target.loopy.plan import ArrayPlan
from ftlazy.target.loopy.ranges import data_dependent_range, element_rows
from ftlazy.target.loopy.scopes import Scope, StoreContext

if TYPE_CHECKING:
    from ftlazy.target.loopy.kernel import KernelBuilder


def emit_segment_reduction(kb: KernelBuilder, node: IndexLambda, name: str,
                           scope: Scope, array_plan: ArrayPlan
                           ) -> tuple[list[Any], set[Node]]:
    """Instructions computing *node* (see the module docs) into *name*."""
    if array_plan.l0_axis == 0:
        return _emit_accumulated(kb, node, name, scope, array_plan.vector_width)
    return _emit_columns_on_l0(kb, node, name, scope, array_plan.local_size,
                               array_plan.block[0] if array_plan.block else 1)


def _emit_accumulated(kb: KernelBuilder, node: IndexLambda, name: str,
                      scope: Scope, lanes: int) -> tuple[list[Any], set[Node]]:
    found = data_dependent_range(node.expr, node.bindings)
    assert found is not None
    reduction, ranges = found
    (rname, _, _), = reduction.bounds
    rng = ranges[rname]
    inames0, index0 = kb.loop_nest(node.shape[:1], scope, cheap=False)
    ctx = StoreContext(scope, inames0, index0, None)
    outer_map = {"_0": index0[0]}
    translated = kb.translate_range(rng, node, outer_map, ctx)
    j = kb.ranged_iname(translated, ctx)
    trailing = tuple(node.shape[1:])
    roles: dict[str, list[str]] = {}
    for role in ("init", "store"):
        roles[role] = [kb.parts.fresh("_ft_sk") for _ in trailing]
        kb.parts.add_domain(roles[role], list(trailing))
        kb.parts.priorities.extend(zip(roles[role], roles[role][1:]))
    # the step's loops over the trailing axes (the last one split into
    # vector lanes for the math calls, see KernelBuilder._vector_calls)
    update: list[str] = []
    update_index: list[Any] = []
    for d, extent in enumerate(trailing):
        names, idx = kb.sequential_axis(d + 1, extent,
                                        lanes if d == len(trailing) - 1 else 1)
        kb.parts.priorities.extend((a, b) for a in update for b in names)
        update += names
        update_index.append(idx)
    if update:
        kb.parts.priorities.extend((j, v) for v in update)
    acc_name = kb.parts.private_array("_ft_acc", node.dtype, trailing or (1,))

    def acc(role: str) -> Any:
        idx = (tuple(update_index) if role == "update" else
               tuple(prim.Variable(v) for v in roles[role])) or (0,)
        return prim.Subscript(prim.Variable(acc_name), idx)

    index_map = dict(outer_map)
    index_map.update({f"_{d + 1}": idx for d, idx in enumerate(update_index)})
    index_map[rname] = prim.Variable(j)
    ctx.inames = list(inames0) + [j] + update
    # (the range's own element is known for the packed rows it reads)
    known = element_rows(translated, j)
    kb.element_rows.extend(known)
    try:
        term = kb.translate_expr(reduction.inner, node, index_map, ctx)
    finally:
        del kb.element_rows[len(kb.element_rows) - len(known):]
    if lanes > 1:
        kb._row_width = lanes
        term = kb._vector_calls(term, ctx, node.dtype)
    roles["update"] = update
    outer = frozenset(scope.outer_inames) | frozenset(inames0)
    init_id = kb.parts.fresh(name + "_init")
    upd_id = kb.parts.fresh(name + "_upd")
    update_inames = outer | {j} | frozenset(roles["update"])
    insns = list(ctx.pending)
    deps = frozenset(ctx.deps) | {init_id}
    op = reduction.op
    if op in ("max", "min"):
        # the step's value once (the select below reads it twice)
        value = kb.parts.private_array("_ft_sv", node.dtype, ())
        value_id = value + "_insn"
        insns.append(lp.Assignment(
            prim.Variable(value), term, id=value_id,
            within_inames=update_inames, within_inames_is_final=True,
            depends_on=frozenset(ctx.deps)))
        deps |= {value_id}
        v = prim.Variable(value)
        keep: Any = prim.Comparison(acc("update"), ">=" if op == "max" else "<=", v)
        if node.dtype.kind == "f":  # the first NaN wins, as in numpy
            keep = prim.LogicalOr((keep, prim.Comparison(
                acc("update"), "!=", acc("update"))))
        combined: Any = prim.If(keep, acc("update"), v)
    elif op == "sum":
        combined = acc("update") + term
    else:
        combined = acc("update") * term
    from ftlazy.target.loopy.lowering import neutral_element
    insns += [
        lp.Assignment(acc("init"), neutral_element(op, node.dtype), id=init_id,
                      within_inames=outer | frozenset(roles["init"]),
                      within_inames_is_final=True),
        lp.Assignment(acc("update"), combined, id=upd_id,
                      within_inames=update_inames, within_inames_is_final=True,
                      depends_on=deps),
        lp.Assignment(
            prim.Subscript(prim.Variable(name), tuple(index0) + tuple(
                prim.Variable(v) for v in roles["store"])),
            acc("store"), id=kb.parts.fresh(name + "_store"),
            within_inames=outer | frozenset(roles["store"]),
            within_inames_is_final=True, depends_on=frozenset({upd_id}))]
    return insns, ctx.reads


def _emit_columns_on_l0(kb: KernelBuilder, node: IndexLambda, name: str,
                        scope: Scope, size: int, lanes: int
                        ) -> tuple[list[Any], set[Node]]:
    shape = node.shape
    group = kb.parts.fresh("_ft_sg")
    kb.parts.add_domain([group], [shape[0]])
    kb.parts.iname_tags[group] = "g.0"
    inames = [group]
    index: list[Any] = [prim.Variable(group)]
    for d in range(1, len(shape) - 1):
        names, idx = kb.sequential_axis(d, shape[d], 1)
        inames += names
        index.append(idx)
    last = shape[-1]
    if isinstance(last, int) and last <= size:
        item = kb.parts.fresh("_ft_sl")
        kb.parts.add_domain([item], [last])
        kb.parts.iname_tags[item] = "l.0"
        inames.append(item)
        index.append(prim.Variable(item))
    else:
        outer, item = kb.parts.fresh("_ft_so"), kb.parts.fresh("_ft_sl")
        kb.parts.add_split_domain(outer, item, size, last)
        kb.parts.iname_tags[item] = "l.0"
        inames += [outer, item]
        index.append(prim.Variable(outer) * size + prim.Variable(item))
    ctx = StoreContext(scope, inames, tuple(index), None)
    index_map = {f"_{d}": idx for d, idx in enumerate(index)}
    if lanes > 1:
        expr = _row_lanes_reduction(kb, node, index_map, ctx, lanes)
    else:
        expr = kb.translate_expr(node.expr, node, index_map, ctx)
    store = lp.Assignment(
        prim.Subscript(prim.Variable(name), tuple(index)), expr,
        id=kb.parts.fresh(name + "_store"),
        within_inames=frozenset(scope.outer_inames) | frozenset(inames),
        within_inames_is_final=True, depends_on=frozenset(ctx.deps))
    return ctx.pending + [store], ctx.reads


def _row_lanes_reduction(kb: KernelBuilder, node: IndexLambda,
                         index_map: dict[str, Any], ctx: StoreContext,
                         lanes: int) -> Any:
    """*node*'s reduction over its element's rows (a
    :func:`~.ranged_lanes.laned_ranged_reduction`) shared among *lanes*
    work items on ``l.1``: lane ``k`` takes rows ``lo + lanes*t + k``, and
    loopy combines the lanes' shares in local memory, as
    :func:`~.gpu_reductions.emit_group_reduction` combines its items'."""
    from ftlazy.target.loopy.gpu_reductions import _loopy_op
    from ftlazy.target.loopy.ranged_lanes import laned_ranged_reduction

    reduction, ranges = laned_ranged_reduction(node)
    (rname, _, _), = reduction.bounds
    lane, step = kb.parts.fresh("_ft_sk"), kb.parts.fresh("_ft_st")
    kb.parts.add_domain([lane], [lanes])
    kb.parts.iname_tags[lane] = "l.1"
    # (each lane computes the range's bounds: loopy wants every statement
    # of the kernel on all its local axes)
    ctx.inames = list(ctx.inames) + [lane]
    translated = kb.translate_range(ranges[rname], node, index_map, ctx)
    lo = kb.range_bound("_ft_lo", translated.lower, prim.Max, ctx)
    hi = kb.range_bound("_ft_hi", translated.upper, prim.Min, ctx)
    (lo_str, lo_params), (hi_str, hi_params) = (
        kb.domain_bound(b) for b in (lo, hi))
    # (the lane's domain apart: loopy refuses parallel inames in a domain
    # with bounds read from data; the steps' domain is nested in it)
    kb.parts.domains.append(
        f"[{', '.join(sorted(lo_params | hi_params | {lane}))}] -> {{ [{step}]: "
        f"0 <= {step} and {lo_str} + {lanes}*{step} + {lane} < {hi_str} }}")
    position = lo + prim.Variable(step) * lanes + prim.Variable(lane)
    # (the range's own element is known for the packed rows it reads)
    known = element_rows(translated, position)
    kb.element_rows.extend(known)
    try:
        inner = kb.translate_expr(reduction.inner, node,
                                  {**index_map, rname: position}, ctx)
    finally:
        del kb.element_rows[len(kb.element_rows) - len(known):]
    ctx.inames.remove(lane)
    op = _loopy_op(reduction)
    return Reduction(op, (lane,), Reduction(op, (step,), inner))


__all__ = ["emit_segment_reduction"]
