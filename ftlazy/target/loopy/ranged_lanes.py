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
- the ``count - lanes*full`` last steps, one per lane, each guarded
  (each of these is a loop over the lanes, which the OpenCL compiler
  unrolls);
- the lanes combined into the result (for float maxima and minima with
  numpy's NaN propagation, as :func:`~.contractions.emit_split_reduction`).

The loop over whole groups has a domain of its own, parameterised by
``full`` alone: coupled with the store's other ranges in one domain, an
empty group loop would empty theirs too.

For sums of float32 and float64 where the device's probe passed vector
arithmetic at that many lanes, the accumulator is one OpenCL vector value
(:mod:`.vector_values`): each whole group adds one vector built of its
steps, the tail one vector whose lanes past ``count`` hold the neutral
element, and the lanes are combined by scalar statements. No loop is
unrolled lane by lane, which costs loopy's code generation tens of
milliseconds per lane.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import loopy as lp
import numpy as np
import pymbolic.primitives as prim
from loopy.symbolic import Reduction

from ftlazy.array import IndexLambda
from ftlazy.scalar_expr import Reduce, iter_subexpressions
from ftlazy.target.loopy.expressions import (
    _Maximum,
    _Minimum,
    complex_extremum_step,
    extremum_step,
)
from ftlazy.target.loopy.padding import padding_bounds
from ftlazy.target.loopy.ranges import data_dependent_range, tighten_to_guards
from ftlazy.target.loopy.vector_values import (
    LANE, OP_PREFIX, gather_name, vector_dtype)

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
    floating = dtype.kind in "fc"

    def extremum(largest: bool, a: Any, b: Any) -> Any:
        if dtype.kind == "c":
            return complex_extremum_step(largest, a, b, dtype)
        if floating or dtype.itemsize < 4 or dtype == np.uint32:
            # (OpenCL's max(c, d) of char and short values, whose sum C
            # computes in int, and of uint values against loopy's unsigned
            # long literals, is an ambiguous overload: a select)
            return extremum_step(largest, a, b, floating)
        return prim.Max((a, b)) if largest else prim.Min((a, b))

    step = {"sum": lambda a, b: a + b, "product": lambda a, b: a * b,
            "max": lambda a, b: extremum(True, a, b),
            "min": lambda a, b: extremum(False, a, b)}[op]
    final: Any = op
    if op in ("max", "min"):
        # (loopy's own max and min drop NaNs and have no neutral element
        # for char and short values, nor one it can type for unsigned ones)
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

    def term(position: Any) -> Any:
        return kb.translate_expr(reduction.inner, node,
                                 {**index_map, rname: position}, ctx)
    step, final = lane_combine(reduction.op, node.dtype)
    neutral = neutral_element(reduction.op, node.dtype)
    if _vector_sum_is_safe(kb, reduction.op, node.dtype, lanes):
        return _vector_accumulator(kb, node, ctx, lanes, term, step,
                                   neutral, lo, count, full, group, outer)
    # (the lane loops stay loops: the OpenCL compiler unrolls and vectorizes
    # them as well as loopy's unrolled lanes ran, which cost loopy's code
    # generation an isl pass per lane)
    lane = {role: kb.parts.fresh("_ft_lane") for role in ("init", "update", "tail", "final")}
    for iname in lane.values():
        kb.parts.add_domain([iname], [lanes])
    kb.parts.priorities.append((group, lane["update"]))
    acc = kb.parts.private_array("_ft_acc", node.dtype, (lanes,))

    def at(role: str) -> Any:
        return prim.Subscript(prim.Variable(acc), (prim.Variable(lane[role]),))
    init_id, upd_id, tail_id = (kb.parts.fresh(acc + s) for s in ("_init", "_upd", "_tail"))
    update = term(lo + prim.Variable(group) * lanes + prim.Variable(lane["update"]))
    tail = term(lo + full * lanes + prim.Variable(lane["tail"]))
    deps = frozenset(ctx.deps)
    ctx.pending += [
        lp.Assignment(at("init"), neutral,
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


def _vector_sum_is_safe(kb: KernelBuilder, op: str, dtype: np.dtype,
                        lanes: int) -> bool:
    """Whether a sum runs on an OpenCL vector accumulator: float32 or
    float64, vectors allowed, and vector arithmetic at *lanes* lanes passed
    the device's probe. (Maxima and minima keep the lanes in a private
    array: their NaN-propagating vector form, select() of fmax() and
    isnan(), is not probed, and LLVM 14 aborts on it for double8 on
    AVX-512: "Cannot emit physreg copy instruction".)"""
    return (op == "sum" and vector_dtype(dtype, lanes) is not None
            and kb.profile.vectorize
            and kb.profile.builtin_width(dtype, "arith") >= lanes)


def _vector_accumulator(kb: KernelBuilder, node: IndexLambda, ctx: StoreContext,
                        lanes: int, term: Any, step: Any, neutral: Any,
                        lo: Any, count: Any, full: prim.Variable, group: str,
                        outer: frozenset) -> prim.Variable:
    """The vector path of :func:`emit_laned_ranged_reduction` for sums
    (:func:`_vector_sum_is_safe`): the lanes are one OpenCL vector value
    (see the module docs); the private scalar holding the result is
    returned."""
    vec = vector_dtype(node.dtype, lanes)
    gather = gather_name(node.dtype, lanes)
    combine = OP_PREFIX + "add"
    kb.vector_callables |= {gather, combine, LANE}

    def assign(name: str, value: Any, inames: frozenset, deps: frozenset) -> str:
        insn_id = kb.parts.fresh(name + "_insn")
        ctx.pending.append(lp.Assignment(
            prim.Variable(name), value, id=insn_id, within_inames=inames,
            within_inames_is_final=True, depends_on=deps))
        return insn_id

    def vector(*values: Any) -> prim.Call:
        return prim.Call(prim.Variable(gather), values)

    def add_to(acc: str, name: str) -> prim.Call:
        return prim.Call(prim.Variable(combine), (prim.Variable(acc), prim.Variable(name)))

    acc = kb.parts.private_array("_ft_vacc", vec, ())
    steps = kb.parts.private_array("_ft_vstep", vec, ())
    tail = kb.parts.private_array("_ft_vtail", vec, ())
    result = kb.parts.private_array("_ft_red", node.dtype, ())
    deps = frozenset(ctx.deps)
    init = assign(acc, vector(*[neutral] * lanes), outer, deps)
    # one group: its steps as a vector, then added to the accumulator
    first = lo + prim.Variable(group) * lanes
    steps_id = assign(steps, vector(*[term(first + k) for k in range(lanes)]),
                      outer | {group}, deps | {init})
    update = assign(acc, add_to(acc, steps), outer | {group}, deps | {init, steps_id})
    # the tail: lanes past the count hold the neutral element (and read
    # nothing: the select is C's ?:, which evaluates one side)
    start = lo + full * lanes
    tail_id = assign(tail, vector(*[
        prim.If(prim.Comparison(full * lanes + k, "<", count), term(start + k), neutral)
        for k in range(lanes)]), outer, deps | {update})
    last = assign(acc, add_to(acc, tail), outer, deps | {tail_id})
    # the lanes, combined in order by scalar statements
    for k in range(lanes):
        lane_value = prim.Call(prim.Variable(LANE), (prim.Variable(acc), k))
        value = lane_value if k == 0 else step(prim.Variable(result), lane_value)
        last = assign(result, value, outer, deps | {last})
    ctx.deps.add(last)
    return prim.Variable(result)
