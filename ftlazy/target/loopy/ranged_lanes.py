# SPDX-License-Identifier: MIT
"""Reductions over a data-dependent range in independent lanes (CPUs).

The softmax of attention within a sequence reduces each row of the
``(L, L)`` scores over ``k < L_e``, a range read from the offsets
(:mod:`.ranges`). loopy runs such a reduction as one chain of dependent
steps: a sum waits for the adder's latency at every step, a NaN-aware
maximum for a compare and a select. :func:`laned_ranged_reduction` plans
it in ``lanes`` private accumulators instead, and
:func:`emit_laned_ranged_reduction` emits

- ``count = max(hi - lo, 0)``, ``full = count // lanes`` (private scalars,
  once per position of the loop nest);
- a loop over the ``full`` whole groups of ``lanes`` steps, lane ``v`` of
  group ``g`` taking step ``lo + lanes*g + v``: no guard and no clamp in
  its body, so the OpenCL compiler may run the lanes as one vector;
- the ``count - lanes*full`` last steps, one per lane, each guarded;
- the lanes combined into the result (for float maxima and minima with
  numpy's NaN propagation, as :func:`~.contractions.emit_split_reduction`).

The loop over whole groups has a domain of its own, parameterised by
``full`` alone: coupled with the store's other ranges in one domain, an
empty group loop would empty theirs too.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import loopy as lp
import numpy as np
import pymbolic.primitives as prim
from loopy.symbolic import Reduction

from ftlazy.array import IndexLambda
from ftlazy.scalar_expr import Reduce, iter_subexpressions
from ftlazy.target.loopy.expressions import _Maximum, _Minimum, extremum_step
from ftlazy.target.loopy.padding import padding_bounds
from ftlazy.target.loopy.ranges import data_dependent_range, tighten_to_guards

if TYPE_CHECKING:
    from ftlazy.target.loopy.kernel import KernelBuilder
    from ftlazy.target.loopy.scopes import StoreContext

__all__ = ["laned_ranged_reduction", "emit_laned_ranged_reduction",
           "lane_combine"]

#: the reductions that split into lanes (their combination is associative)
LANED_OPS = ("sum", "max", "min")


def _top_reduction(node: IndexLambda) -> Any:
    """*node*'s expression without its unread padding guard, if that is a
    reduction; else None."""
    padding = padding_bounds(node)
    expr = padding[0] if padding is not None else node.expr
    return expr if isinstance(expr, Reduce) else None


def laned_ranged_reduction(node: IndexLambda) -> Any:
    """``(reduction, ranges)`` (see :func:`~.ranges.data_dependent_range`)
    if *node* computes, at each position, one sum, maximum or minimum over
    one variable whose range is read from data, of a summand without
    reductions, in an integer or float dtype; else None."""
    expr = _top_reduction(node)
    if (expr is None or len(expr.bounds) != 1 or expr.op not in LANED_OPS
            or node.dtype.kind not in "iuf"
            or any(isinstance(e, Reduce) for e in iter_subexpressions(expr.inner))):
        return None
    found = data_dependent_range(tighten_to_guards(expr), node.bindings)
    if found is None or set(found[1]) != {expr.bounds[0][0]}:
        return None
    return found


def lane_combine(op: str, dtype: np.dtype) -> tuple[Any, Any]:
    """``(step, final)`` of a reduction *op* in lanes: ``step(acc, value)``
    is one lane's update, *final* the loopy reduction operation combining
    the lanes (float maxima and minima propagate NaN, as numpy's do:
    loopy's ``max`` and ``min`` would drop it)."""
    floating = dtype.kind == "f"
    step = {"sum": lambda a, b: a + b, "product": lambda a, b: a * b,
            "max": lambda a, b: (extremum_step(True, a, b, True) if floating
                                 else prim.Max((a, b))),
            "min": lambda a, b: (extremum_step(False, a, b, True) if floating
                                 else prim.Min((a, b)))}[op]
    final: Any = op
    if floating and op in ("max", "min"):
        final = _Maximum() if op == "max" else _Minimum()
    return step, final


def emit_laned_ranged_reduction(kb: KernelBuilder, node: IndexLambda,
                                index_map: dict[str, Any], ctx: StoreContext,
                                lanes: int) -> Any:
    """*node*'s reduction (:func:`laned_ranged_reduction`) at the loop
    nest's position *index_map*, in *lanes* accumulators (see the module
    docs): its instructions join ``ctx.pending``, and the private scalar
    holding the result is returned."""
    from ftlazy.target.loopy.lowering import neutral_element

    reduction, ranges = laned_ranged_reduction(node)
    (rname, _, _), = reduction.bounds
    translator = kb.translator(node, index_map, ctx)
    rng = ranges[rname]
    lo = kb.range_bound("_ft_lo", tuple(translator.rec(b) for b in rng.lower),
                        prim.Max, ctx)
    hi = kb.range_bound("_ft_hi", tuple(translator.rec(b) for b in rng.upper),
                        prim.Min, ctx)
    outer = frozenset(ctx.scope.outer_inames) | frozenset(ctx.inames)
    int64 = np.dtype(np.int64)

    def private_scalar(prefix: str, dtype: np.dtype, value: Any) -> prim.Variable:
        name = kb.parts.private_array(prefix, dtype, ())
        ctx.pending.append(lp.Assignment(
            prim.Variable(name), value, id=name + "_insn", within_inames=outer,
            within_inames_is_final=True, depends_on=frozenset(ctx.deps)))
        ctx.deps.add(name + "_insn")
        return prim.Variable(name)

    width = hi - lo
    # (a select, not max(): OpenCL's max of a long and an int is ambiguous)
    count = private_scalar("_ft_cnt", int64, prim.If(
        prim.Comparison(width, ">", 0), width, np.int64(0)))
    full = private_scalar("_ft_full", int64, prim.FloorDiv(count, lanes))

    group = kb.parts.fresh("_ft_rg")
    kb.parts.domains.append(f"[{full.name}] -> {{ [{group}]: 0 <= {group} < {full.name} }}")
    lane = {role: kb.parts.fresh("_ft_lane") for role in ("init", "update", "tail", "final")}
    for role, iname in lane.items():
        kb.parts.add_domain([iname], [lanes])
        if role != "final":
            kb.parts.iname_tags[iname] = "ilp" if role == "update" else "unr"
    kb.parts.priorities.append((group, lane["update"]))

    def term(position: Any) -> Any:
        return kb.translate_expr(reduction.inner, node,
                                 {**index_map, rname: position}, ctx)
    step, final = lane_combine(reduction.op, node.dtype)
    acc = kb.parts.private_array("_ft_acc", node.dtype, (lanes,))

    def at(role: str) -> Any:
        return prim.Subscript(prim.Variable(acc), (prim.Variable(lane[role]),))
    init_id, upd_id, tail_id = (kb.parts.fresh(acc + s) for s in ("_init", "_upd", "_tail"))
    update = term(lo + prim.Variable(group) * lanes + prim.Variable(lane["update"]))
    tail = term(lo + full * lanes + prim.Variable(lane["tail"]))
    deps = frozenset(ctx.deps)
    ctx.pending += [
        lp.Assignment(at("init"), neutral_element(reduction.op, node.dtype),
                      id=init_id, within_inames=outer | {lane["init"]},
                      within_inames_is_final=True, depends_on=deps),
        lp.Assignment(at("update"), step(at("update"), update), id=upd_id,
                      within_inames=outer | {group, lane["update"]},
                      within_inames_is_final=True, depends_on=deps | {init_id}),
        lp.Assignment(at("tail"), step(at("tail"), tail), id=tail_id,
                      within_inames=outer | {lane["tail"]},
                      within_inames_is_final=True, depends_on=deps | {upd_id},
                      predicates=frozenset({prim.Comparison(
                          full * lanes + prim.Variable(lane["tail"]), "<", count)}))]
    ctx.deps.add(tail_id)
    return private_scalar("_ft_red", node.dtype, Reduction(
        final, (lane["final"],), at("final")))
