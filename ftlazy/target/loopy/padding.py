# SPDX-License-Identifier: MIT
"""Padded axes whose padding nobody reads: loops bounded by data.

A body array of a map over a FractalTensor with an element's length after
its first axis (the ``(L, L)`` scores of attention within a sequence) is
stored padded to the largest extent over all elements
(:mod:`ftlazy.transform.jagged_lowering`). Its expression is

    ``If(_k < extent(_0) and ..., value, 0)``

and every consumer reads it only inside the element's own extent. The
lowering tags such arrays :class:`UnreadPadding`; :func:`padding_bounds`
finds the guards, so that a stored array's loop over axis ``k`` runs over
``[0, extent(_0))`` (a domain parameterised by a private scalar loaded once
per row of axis 0) and leaves the padding unwritten: the work is
``sum_i L_i**2``, not ``n * max(L)**2``.
On CPUs a contraction over a concrete axis whose last two axes are bounded
(``scores[e, h, q, k] = sum_r x[q, h, r] * x[k, h, r]``) is register-blocked
(:func:`emit_padded_contraction`): each work item (an element) runs over
``PADDED_BLOCK`` blocks of ``(q, k)`` inside the element's extents, each
block's accumulators private over a sequential ``r`` loop, so the sums are
independent chains (one chain per output is bound by the adder's latency)
and each loaded operand is reused by a row or a column of the block. Where
the summand is a row factor times a column factor and the vector width
divides the reduction, each output accumulates a vector of lanes over
contiguous reduction steps (lane ``v`` sums ``r = w*ro + v``), added up
at the store.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import loopy as lp
import numpy as np
import pymbolic.primitives as prim

from ftlazy import shapes as sh
from ftlazy.array import IndexLambda
from ftlazy.node import Node
from ftlazy.scalar_expr import (
    Reduce, get_variable_names, index_var, iter_subexpressions)
from ftlazy.tags import UniqueTag, tag_dataclass
from ftlazy.target.loopy.ranges import _conjuncts, reads_arrays
from ftlazy.target.loopy.scopes import Scope, StoreContext
from ftlazy.target.loopy.storage import StoragePlan
from ftlazy.target.loopy.vector_values import (
    LANE, OP_PREFIX, gather_name, vector_dtype)

if TYPE_CHECKING:
    from ftlazy.target.loopy.kernel import KernelBuilder

#: (rows, columns) of the register block of a padded contraction (J7's
#: scores on a 2-core Xeon: 4x4 beat 2x8, 4x8 and 8x4 with scalar
#: accumulators, and 2x4, 4x2, 2x2 and 1x4 with vectors of 8)
PADDED_BLOCK = (4, 4)


@tag_dataclass
class UnreadPadding(UniqueTag):
    """The array's positions where its outermost ``If`` guard is false are
    never read: code generation need not compute them."""


def padding_bounds(node: IndexLambda) -> tuple[Any, dict[int, Any]] | None:
    """``(expression, bounds)`` for an :class:`UnreadPadding` array whose
    guard bounds some axes ``k >= 1`` by an integer expression that reads
    arrays at axis 0's index only (``_k < extent(_0)``): *expression* is
    the array's without those guards, *bounds* maps each such axis to its
    (exclusive) bound. None for other arrays."""
    if not any(isinstance(t, UnreadPadding) for t in node.tags):
        return None
    expr = node.expr
    if not (isinstance(expr, prim.If) and expr.else_ == 0):
        return None
    axes = {index_var(k).name: k for k in range(1, node.ndim)}
    bounds: dict[int, Any] = {}
    rest = []
    for c in _conjuncts(expr.condition):
        k = (axes.get(c.left.name) if isinstance(c, prim.Comparison)
             and c.operator == "<" and isinstance(c.left, prim.Variable)
             else None)
        if (k is None or k in bounds or not reads_arrays(c.right)
                or get_variable_names(c.right) & set(axes)
                or any(isinstance(e, Reduce) for e in iter_subexpressions(c.right))):
            rest.append(c)
            continue
        bounds[k] = c.right
    if not bounds:
        return None
    if not rest:
        return expr.then, bounds
    cond = rest[0] if len(rest) == 1 else prim.LogicalAnd(tuple(rest))
    return prim.If(cond, expr.then, 0), bounds



def padded_contraction(node: IndexLambda, storage: StoragePlan) -> Any:
    """The reduction of *node* (without its padding guard) if it is
    ``sum_r f(..., q, k, r)`` over one concrete axis, with its last two axes
    bounded by :func:`padding_bounds`, the second to last not axis 0, some
    operand ignoring ``q`` and some ``k`` (a block reuses them) and no
    private statement of *storage* inlined into it (those are assigned per
    element, not per block); else None."""
    found = padding_bounds(node)
    if found is None or node.ndim < 3:
        return None
    expr, bounds = found
    rows, cols = node.ndim - 2, node.ndim - 1
    if (not isinstance(expr, Reduce) or expr.op != "sum" or len(expr.bounds) != 1
            or not isinstance(expr.bounds[0][2], int)
            or any(isinstance(e, Reduce) for e in iter_subexpressions(expr.inner))
            or not {rows, cols} <= set(bounds)):
        return None
    names = [set().union(*(get_variable_names(i) for i in e.index_tuple))
             for e in iter_subexpressions(expr.inner)
             if isinstance(e, prim.Subscript)]
    q, k = index_var(rows).name, index_var(cols).name
    if not (any(q not in n for n in names) and any(k not in n for n in names)):
        return None
    seen: set[Node] = set()
    stack = list(node.bindings.values())
    while stack:
        b = stack.pop()
        if b in storage.private:
            return None
        if b not in seen and b not in storage.stored and isinstance(b, IndexLambda):
            seen.add(b)
            stack.extend(b.bindings.values())
    return expr


def bound_scalars(bounds: dict[int, Any], kb: KernelBuilder) -> dict[int, str]:
    """A fresh private int64 scalar per axis of *bounds* (assigned by
    :func:`assign_bounds`)."""
    return {d: kb.parts.private_array("_ft_hi", np.dtype(np.int64), ())
            for d in sorted(bounds)}


def bounded_axis(kb: KernelBuilder, d: int, extent: Any, hi: str, lanes: int
                 ) -> tuple[list[str], Any]:
    """Inames and index of the loop over axis *d* of a loop nest, bounded by
    the scalar *hi* and the axis's *extent*; with *lanes* > 1 split into
    ``lanes * outer + lane`` (for vector math calls), the lanes past *hi*
    at ``hi - 1`` (they recompute and store its value)."""
    params = {hi} | sh.size_param_names(extent)
    kb.parts.params |= sh.size_param_names(extent)
    ext = sh.to_affine(extent).to_isl()
    name = kb.parts.fresh(f"_ft_i{d}_")
    if lanes == 1:
        kb.parts.domains.append(f"[{', '.join(sorted(params))}] -> {{ [{name}]: "
                                f"0 <= {name} < {hi} and {name} < {ext} }}")
        return [name], prim.Variable(name)
    kb.parts.domains.append(
        f"[{', '.join(sorted(params))}] -> {{ [{name}]: 0 <= {name} and "
        f"{lanes}*{name} < {hi} and {lanes}*{name} < {ext} }}")
    lane = kb.parts.fresh("_ft_lane")
    kb.parts.add_domain([lane], [lanes])
    kb.parts.iname_tags[lane] = "unr"
    # (its stores are clamped per lane: as a loop the compiler ran them
    # 1.4x slower than unrolled, so they stay unrolled)
    kb.clamped_lanes.add(lane)
    kb.parts.priorities.append((name, lane))
    return [name, lane], _at_most_last(
        prim.Variable(name) * lanes + prim.Variable(lane), prim.Variable(hi))


def assign_bounds(kb: KernelBuilder, node: IndexLambda, bounds: dict[int, Any],
                  his: dict[int, str], inames: list[str], index: tuple,
                  ctx: StoreContext) -> None:
    """Assign each scalar of *his* (:func:`bound_scalars`) per index of
    axis 0 (*inames*' first two, the group and the item) from its axis's
    bound read there; the assignments join *ctx* (first) and its
    dependencies."""
    row = StoreContext(ctx.scope, inames[:2], index[:1], None)
    for d, hi in his.items():
        row.pending.append(lp.Assignment(
            prim.Variable(hi),
            kb.translate_expr(bounds[d], node, {"_0": index[0]}, row),
            id=hi + "_insn", within_inames=frozenset(ctx.scope.outer_inames)
            | frozenset(inames[:2]), within_inames_is_final=True,
            depends_on=frozenset(row.deps)))
        ctx.deps.add(hi + "_insn")
    ctx.pending[:0] = row.pending
    ctx.reads |= row.reads


def _at_most_last(i: Any, extent: Any) -> Any:
    """``min(i, extent - 1)`` (as a select: OpenCL's ``min`` of an ``int``
    and a ``long`` is ambiguous)."""
    return prim.If(prim.Comparison(i, "<", extent), i, extent - 1)


def emit_padded_contraction(kb: KernelBuilder, node: IndexLambda, name: str,
                            scope: Scope, ti: int, tj: int, lanes: int = 1
                            ) -> tuple[list[Any], set[Node]]:
    """Instructions computing *node* (see :func:`padded_contraction` and
    the module docs) into *name*: blocks of ``ti x tj`` outputs over the
    element's extents; a partial block reads its missing rows and columns
    at the last ones (the unrolled update keeps no branch) and stores only
    its present outputs. With *lanes* > 1 dividing the reduction's extent,
    a summand that is a row factor times a column factor runs on vectors
    (:func:`_emit_lanes`)."""
    reduction = padded_contraction(node, kb.plan.storage)
    _, bounds = padding_bounds(node)
    (rname, _, kext), = reduction.bounds
    rows, cols = node.ndim - 2, node.ndim - 1
    inames, index = kb.loop_nest(node.shape[:rows], scope, cheap=False)
    ctx = StoreContext(scope, inames, index, None)
    his = bound_scalars({rows: bounds[rows], cols: bounds[cols]}, kb)
    assign_bounds(kb, node, bounds, his, inames, index, ctx)
    hq, hk = prim.Variable(his[rows]), prim.Variable(his[cols])
    bq, bk = kb.parts.fresh("_ft_bq"), kb.parts.fresh("_ft_bk")
    kb.parts.domains.append(
        f"[{his[rows]}, {his[cols]}] -> {{ [{bq}, {bk}]: 0 <= {bq} and "
        f"{ti}*{bq} < {his[rows]} and 0 <= {bk} and {tj}*{bk} < {his[cols]} }}")
    if len(inames) > 2:
        kb.parts.priorities.append((inames[-1], bq))
    kb.parts.priorities.append((bq, bk))
    outer = frozenset(scope.outer_inames) | frozenset(inames) | {bq, bk}
    split = _row_and_column_factors(reduction.inner, f"_{rows}", f"_{cols}")
    if (lanes > 1 and split is not None and kext % lanes == 0
            and vector_dtype(node.dtype, lanes) is not None):
        return _emit_lanes(kb, node, name, ctx, index, outer, (rows, cols),
                           (bq, bk), (hq, hk), (ti, tj, lanes), rname, kext,
                           split)
    k = kb.parts.fresh("_ft_bk")
    kb.parts.add_domain([k], [kext])
    blocks = {}
    for role in ("init", "update", "store"):
        ii, jj = kb.parts.fresh("_ft_ii"), kb.parts.fresh("_ft_jj")
        kb.parts.add_domain([ii, jj], [ti, tj])
        kb.parts.iname_tags[ii] = kb.parts.iname_tags[jj] = (
            "ilp" if role == "update" else "unr")
        kb.parts.priorities.append((ii, jj))
        blocks[role] = (ii, jj)
    ii, jj = blocks["update"]
    kb.parts.priorities.extend([(k, ii), (k, jj)])

    def at(role: str) -> tuple[Any, Any]:
        bi, bj = blocks[role]
        return (prim.Variable(bq) * ti + prim.Variable(bi),
                prim.Variable(bk) * tj + prim.Variable(bj))

    row, col = at("update")
    index_map = {f"_{d}": idx for d, idx in enumerate(index)}
    index_map.update({f"_{rows}": _at_most_last(row, hq),
                      f"_{cols}": _at_most_last(col, hk), rname: prim.Variable(k)})
    term = kb.translate_expr(reduction.inner, node, index_map, ctx)
    acc = kb.parts.private_array("_ft_acc", node.dtype, (ti, tj))

    def acc_at(role: str) -> Any:
        return prim.Subscript(prim.Variable(acc), tuple(
            prim.Variable(v) for v in blocks[role]))
    init_id, upd_id = kb.parts.fresh(name + "_init"), kb.parts.fresh(name + "_upd")
    row_s, col_s = at("store")
    insns = ctx.pending + [
        lp.Assignment(acc_at("init"), node.dtype.type(0), id=init_id,
                      within_inames=outer | set(blocks["init"]),
                      within_inames_is_final=True, depends_on=frozenset(ctx.deps)),
        lp.Assignment(acc_at("update"), acc_at("update") + term, id=upd_id,
                      within_inames=outer | {k, *blocks["update"]},
                      within_inames_is_final=True,
                      depends_on=frozenset(ctx.deps) | {init_id}),
        lp.Assignment(prim.Subscript(prim.Variable(name),
                                     tuple(index) + (row_s, col_s)),
                      acc_at("store"), id=kb.parts.fresh(name + "_store"),
                      within_inames=outer | set(blocks["store"]),
                      within_inames_is_final=True, depends_on=frozenset({upd_id}),
                      predicates=frozenset({prim.Comparison(row_s, "<", hq),
                                            prim.Comparison(col_s, "<", hk)}))]
    return insns, ctx.reads


def _row_and_column_factors(inner: Any, q: str, k: str) -> tuple[Any, Any] | None:
    """``(a, b)`` with ``inner == a * b``, *a* not reading the column index
    *k* and *b* not reading the row index *q*; None if there is no such
    split with both factors reading the reduction's operands."""
    factors = inner.children if isinstance(inner, prim.Product) else (inner,)
    a = [f for f in factors if k not in get_variable_names(f)]
    b = [f for f in factors if k in get_variable_names(f)]
    if not a or not b or any(q in get_variable_names(f) for f in b):
        return None
    return (prim.Product(tuple(a)) if len(a) > 1 else a[0],
            prim.Product(tuple(b)) if len(b) > 1 else b[0])


def _emit_lanes(kb: KernelBuilder, node: IndexLambda, name: str,
                ctx: StoreContext, index: tuple, outer: frozenset,
                axes: tuple[int, int], blocks: tuple[str, str],
                his: tuple[Any, Any], sizes: tuple[int, int, int], rname: str,
                kext: int, split: tuple[Any, Any]) -> tuple[list[Any], set[Node]]:
    """The block of :func:`emit_padded_contraction` with vectors of *lanes*
    accumulators, OpenCL vector values (:mod:`.vector_values`): per step of
    ``lanes`` reduction steps each row and column factor's vector is built
    by one statement from its lanes (the reduction index substituted by
    each constant; a lane loop unrolled by loopy cost an isl pass per
    lane), each output's accumulator vector adds their lane-wise product,
    and the store adds its lanes up."""
    rows, cols = axes
    bq, bk = blocks
    hq, hk = his
    ti, tj, lanes = sizes
    ro = kb.parts.fresh("_ft_ro")
    kb.parts.add_domain([ro], [kext // lanes])
    vec = vector_dtype(node.dtype, lanes)
    gather = gather_name(node.dtype, lanes)
    add, mul = OP_PREFIX + "add", OP_PREFIX + "mul"
    kb.vector_callables |= {gather, add, mul, LANE}

    def unrolled(counts: list[int]) -> list[str]:
        names = [kb.parts.fresh("_ft_lb") for _ in counts]
        kb.parts.add_domain(names, counts)
        for n in names:
            kb.parts.iname_tags[n] = "unr"
        kb.parts.priorities.extend(zip(names, names[1:]))
        return names

    vectors, insns, ids = [], list(ctx.pending), set()
    for factor, count, axis, block, hi in ((split[0], ti, rows, bq, hq),
                                           (split[1], tj, cols, bk, hk)):
        vectors.append(kb.parts.private_array("_ft_fv", vec, (count,)))
        i, = unrolled([count])
        kb.parts.priorities.append((ro, i))
        index_map = {f"_{d}": idx for d, idx in enumerate(index)}
        index_map[f"_{axis}"] = _at_most_last(
            prim.Variable(block) * count + prim.Variable(i), hi)
        lane_values = tuple(
            kb.translate_expr(factor, node, {
                **index_map, rname: prim.Variable(ro) * lanes + n}, ctx)
            for n in range(lanes))
        insn_id = vectors[-1] + "_load"
        insns.append(lp.Assignment(
            prim.Variable(vectors[-1])[prim.Variable(i)],
            prim.Call(prim.Variable(gather), lane_values), id=insn_id,
            within_inames=outer | {ro, i}, within_inames_is_final=True,
            depends_on=frozenset(ctx.deps)))
        ids.add(insn_id)
    acc = kb.parts.private_array("_ft_acc", vec, (ti, tj))
    ii0, jj0 = unrolled([ti, tj])
    ii, jj = unrolled([ti, tj])
    iis, jjs = unrolled([ti, tj])
    kb.parts.priorities.append((ro, ii))
    a, b = (prim.Variable(x) for x in vectors)
    A = prim.Variable(acc)
    zero = node.dtype.type(0)
    init_id, upd_id = kb.parts.fresh(name + "_init"), kb.parts.fresh(name + "_upd")
    row = prim.Variable(bq) * ti + prim.Variable(iis)
    col = prim.Variable(bk) * tj + prim.Variable(jjs)
    here = A[prim.Variable(ii), prim.Variable(jj)]
    insns += [
        lp.Assignment(A[prim.Variable(ii0), prim.Variable(jj0)],
                      prim.Call(prim.Variable(gather), (zero,) * lanes),
                      id=init_id, within_inames=outer | {ii0, jj0},
                      within_inames_is_final=True, depends_on=frozenset(ctx.deps)),
        lp.Assignment(
            here, prim.Call(prim.Variable(add), (here, prim.Call(
                prim.Variable(mul), (a[prim.Variable(ii)], b[prim.Variable(jj)])))),
            id=upd_id, within_inames=outer | {ro, ii, jj},
            within_inames_is_final=True, depends_on=frozenset(ids) | {init_id}),
        lp.Assignment(
            prim.Subscript(prim.Variable(name), tuple(index) + (row, col)),
            prim.Sum(tuple(
                prim.Call(prim.Variable(LANE),
                          (A[prim.Variable(iis), prim.Variable(jjs)], n))
                for n in range(lanes))),
            id=kb.parts.fresh(name + "_store"),
            within_inames=outer | {iis, jjs}, within_inames_is_final=True,
            depends_on=frozenset({upd_id}),
            predicates=frozenset({prim.Comparison(row, "<", hq),
                                  prim.Comparison(col, "<", hk)}))]
    return insns, ctx.reads


__all__ = ["UnreadPadding", "PADDED_BLOCK", "padding_bounds", "padded_contraction",
           "bound_scalars", "bounded_axis", "assign_bounds",
           "emit_padded_contraction"]
