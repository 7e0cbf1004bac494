# SPDX-License-Identifier: MIT
"""Loop nests for contractions: register-blocked matrix products and
reductions with independent accumulator lanes."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import loopy as lp
import pymbolic.primitives as prim
from loopy.symbolic import Reduction

from ftlazy import shapes as sh
from ftlazy.array import IndexLambda
from ftlazy.node import Node
from ftlazy.target.loopy.ranged_lanes import lane_combine
from ftlazy.target.loopy.plan import partial_last_block
from ftlazy.target.loopy.scopes import Scope, StoreContext

if TYPE_CHECKING:
    from ftlazy.target.loopy.kernel import KernelBuilder


def emit_blocked_contraction(kb: KernelBuilder, node: IndexLambda, name: str,
                             scope: Scope, ti: int, tj: int
                             ) -> tuple[list[Any], set[Node]]:
    """``out[i, j] = sum_k f(i, j, k)`` (a matrix product) with register
    blocking: each work item accumulates a ``ti x tj`` block of outputs in
    private memory over a sequential ``k`` loop, so each loaded operand
    element is reused ``ti`` or ``tj`` times. Where the row count may not
    be a multiple of ``ti`` (symbolic rows), the last row block reads its
    missing rows at the last row (an unrolled block keeps no branch in its
    update) and stores only its present rows."""
    reduction = node.expr
    (rname, _, kext), = reduction.bounds
    ni, nj = node.shape
    partial = partial_last_block(ni, ti)
    io, jo, k = (kb.parts.fresh(p) for p in ("_ft_bi", "_ft_bj", "_ft_bk"))
    kb.parts.add_blocks_domain(io, ti, ni)
    kb.parts.add_domain([jo], [nj // tj])
    kb.parts.add_domain([k], [kext])
    blocks = {}
    for role in ("init", "update", "store"):
        ii, jj = kb.parts.fresh("_ft_ii"), kb.parts.fresh("_ft_jj")
        kb.parts.add_domain([ii, jj], [ti, tj])
        tag = "ilp" if role == "update" else "unr"
        kb.parts.iname_tags[ii] = tag
        kb.parts.iname_tags[jj] = tag
        blocks[role] = (ii, jj)
    kb.parts.iname_tags[io] = "g.1"
    kb.parts.iname_tags[jo] = "g.0"
    ii, jj = blocks["update"]
    kb.parts.priorities.extend([(k, ii), (k, jj), (ii, jj)])
    # rows outer, columns inner in the zeroing and the store too: the OpenCL
    # compiler then keeps each row of the block in vector registers (storing
    # column by column made W2 4x slower on PoCL)
    kb.parts.priorities.extend(tuple(blocks[role]) for role in ("init", "store"))

    def rows_cols(role):
        bi, bj = blocks[role]
        return (prim.Variable(io) * ti + prim.Variable(bi),
                prim.Variable(jo) * tj + prim.Variable(bj))

    last_row = sh.to_affine(ni).to_expr() - 1

    def present(role):
        if not partial:
            return frozenset()
        return frozenset({prim.Comparison(rows_cols(role)[0], "<",
                                          sh.to_affine(ni).to_expr())})

    row, col = rows_cols("update")
    if partial:
        row = prim.If(prim.Comparison(row, "<", last_row), row, last_row)
    ctx = StoreContext(scope, [io, jo], (row, col))
    term = kb.translate_expr(
        reduction.inner, node, {"_0": row, "_1": col, rname: prim.Variable(k)},
        ctx)
    acc = kb.parts.private_array("_ft_acc", node.dtype, (ti, tj))

    def acc_at(role):
        return prim.Subscript(prim.Variable(acc), tuple(
            prim.Variable(v) for v in blocks[role]))
    init_id, update_id = kb.parts.fresh(name + "_init"), kb.parts.fresh(name + "_upd")
    insns = [
        lp.Assignment(acc_at("init"), node.dtype.type(0), id=init_id,
                      within_inames=frozenset([io, jo, *blocks["init"]]),
                      within_inames_is_final=True),
        lp.Assignment(acc_at("update"), acc_at("update") + term, id=update_id,
                      within_inames=frozenset([io, jo, k, *blocks["update"]]),
                      within_inames_is_final=True,
                      depends_on=frozenset(ctx.deps) | {init_id}),
        lp.Assignment(prim.Subscript(prim.Variable(name), rows_cols("store")),
                      acc_at("store"), id=kb.parts.fresh(name + "_store"),
                      within_inames=frozenset([io, jo, *blocks["store"]]),
                      within_inames_is_final=True,
                      depends_on=frozenset({update_id}),
                      predicates=present("store"))]
    return ctx.pending + insns, ctx.reads

def emit_split_reduction(kb: KernelBuilder, node: IndexLambda, name: str,
                         scope: Scope, lanes: int) -> tuple[list[Any], set[Node]]:
    """``out[...] = op_r f(..., r)`` with *lanes* independent private
    accumulators (lane ``v`` takes ``r = lanes*ro + v``), combined at the
    end: one dependent chain of adds is latency-bound, several keep a
    core's floating-point units and memory busy."""
    reduction = node.expr
    (rname, _, kext), = reduction.bounds
    inames, index = kb.loop_nest(node.shape, scope, cheap=False)
    ctx = StoreContext(scope, inames, index, node.shape)
    ro = kb.parts.fresh("_ft_ro")
    kb.parts.add_domain([ro], [kext // lanes])
    lane = {}
    for role in ("init", "update", "final"):
        lane[role] = kb.parts.fresh("_ft_lane")
        kb.parts.add_domain([lane[role]], [lanes])
    kb.parts.iname_tags[lane["init"]] = "unr"
    kb.parts.iname_tags[lane["update"]] = "ilp"
    kb.parts.priorities.append((ro, lane["update"]))
    position = prim.Variable(ro) * lanes + prim.Variable(lane["update"])
    index_map = {f"_{i}": idx for i, idx in enumerate(index)}
    index_map[rname] = position
    term = kb.translate_expr(reduction.inner, node, index_map, ctx)
    acc = kb.parts.private_array("_ft_acc", node.dtype, (lanes,))

    def at(role):
        return prim.Subscript(prim.Variable(acc), (prim.Variable(lane[role]),))
    combine, final_op = lane_combine(reduction.op, node.dtype)
    from ftlazy.target.loopy.lowering import neutral_element
    outer = frozenset(scope.outer_inames) | frozenset(inames)
    init_id, upd_id = kb.parts.fresh(name + "_init"), kb.parts.fresh(name + "_upd")
    insns = [
        lp.Assignment(at("init"), neutral_element(reduction.op, node.dtype),
                      id=init_id, within_inames=outer | {lane["init"]},
                      within_inames_is_final=True),
        lp.Assignment(at("update"), combine(at("update"), term), id=upd_id,
                      within_inames=outer | {ro, lane["update"]},
                      within_inames_is_final=True,
                      depends_on=frozenset(ctx.deps) | {init_id}),
        lp.Assignment(prim.Subscript(prim.Variable(name), index or (0,)),
                      Reduction(final_op, (lane["final"],), at("final")),
                      id=kb.parts.fresh(name + "_store"), within_inames=outer,
                      within_inames_is_final=True,
                      depends_on=frozenset({upd_id}))]
    return ctx.pending + insns, ctx.reads
