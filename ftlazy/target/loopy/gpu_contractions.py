# SPDX-License-Identifier: MIT
"""Matrix products on GPUs with local-memory tiles (the
``tiled_contraction`` plan): ``out[i, j] = sum_k A(i, k) * B(k, j)``, where
``A`` and ``B`` are any expressions of their indices (``a[i, k]``,
``exp(a[i, k])``, a transposed read). A result with more axes whose
factor ``B`` reads only the last one (``out[t, b, j] = sum_k x[t, b, k] *
u[k, j]``, a product hoisted out of a scan) is the same product over its
leading axes flattened into rows.

A work group of ``items x items`` work items computes a ``tile x tile``
block of the output, each item ``(l1, l0)`` the ``block x block`` outputs
at rows ``l1 + items*r`` and columns ``l0 + items*c`` (``tile = items *
block``), kept in private accumulators. The ``k`` axis runs in steps of
``depth``: the group loads ``A``'s ``tile x depth`` and ``B``'s ``depth x
tile`` pieces into local memory (consecutive work items load consecutive
addresses of both), waits at a barrier, adds their products, and waits
again before the next step overwrites them. Each loaded element is then
read ``block`` times from registers and ``tile / block`` times from local
memory instead of ``tile`` times from global memory. Rows, columns and
steps past the array's end load zeros and store nothing, so any size
(symbolic too) works.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import loopy as lp
import pymbolic.primitives as prim
from loopy.symbolic import WalkMapper, get_dependencies

from ftlazy import shapes as sh
from ftlazy.array import IndexLambda
from ftlazy.node import Node
from ftlazy.scalar_expr import (
    Reduce, get_variable_names, index_var, iter_subexpressions)
from ftlazy.target.loopy.scopes import StoreContext

if TYPE_CHECKING:
    from ftlazy.target.loopy.kernel import KernelBuilder
    from ftlazy.target.loopy.scopes import Scope

__all__ = ["product_operands", "emit_tiled_contraction"]


def product_operands(node: IndexLambda) -> tuple[Any, Any] | None:
    """``(A, B)`` if *node* is ``sum_k A(rows..., k) * B(k, j)``: its summand
    a product of two factors, one reading the leading axes and ``k`` only,
    the other ``k`` and the last axis only, each reading some array; its
    leading axes after the first concrete (their flattened count is then
    affine); else None."""
    expr = node.expr
    if (node.ndim < 2 or not isinstance(expr, Reduce) or expr.op != "sum"
            or len(expr.bounds) != 1 or node.dtype.kind not in "iuf"
            or not all(isinstance(d, int) for d in node.shape[1:-1])):
        return None
    (rname, lo, _), = expr.bounds
    inner = expr.inner
    if lo != 0 or not isinstance(inner, prim.Product) or len(inner.children) != 2:
        return None
    rows = {index_var(d).name for d in range(node.ndim - 1)}
    col = index_var(node.ndim - 1).name
    found: dict[str, Any] = {}
    for factor in inner.children:
        names = get_variable_names(factor)
        subexpressions = list(iter_subexpressions(factor))
        if any(isinstance(e, Reduce) for e in subexpressions):
            return None
        if (not any(isinstance(e, prim.Subscript) for e in subexpressions)
                or rname not in names):
            return None
        if col not in names:
            found.setdefault("A", factor)
        elif not rows & names:
            found.setdefault("B", factor)
    if set(found) != {"A", "B"}:
        return None
    return found["A"], found["B"]


def _unravel(row: Any, leading: tuple) -> tuple:
    """The indices of the leading axes (*leading*, those after the first
    concrete) of flattened row *row*."""
    indices = []
    for extent in leading[:0:-1]:
        indices.append(prim.Remainder(row, extent))
        row = prim.FloorDiv(row, extent)
    return (row, *indices[::-1])


class _LastIndices(WalkMapper):
    """The last index of every subscript of a loopy expression."""

    def __init__(self) -> None:
        super().__init__()
        self.found: list[Any] = []

    def map_subscript(self, expr: prim.Subscript, *args: Any) -> None:
        if expr.index_tuple:
            self.found.append(expr.index_tuple[-1])
        super().map_subscript(expr, *args)


def _contiguous_along(value: Any, first: str, second: str) -> bool:
    """Whether the global reads of *value* (a translated operand) have the
    iname *first* in their last index and never *second*: consecutive items
    should then go along *first*."""
    walker = _LastIndices()
    walker(value)
    deps = [get_dependencies(i) for i in walker.found]
    return (any(first in d for d in deps)
            and not any(second in d for d in deps))


def emit_tiled_contraction(kb: KernelBuilder, node: IndexLambda, name: str,
                           scope: Scope, items: int, block: int
                           ) -> tuple[list[Any], set[Node]]:
    """Instructions computing *node* (see the module docs) into *name*. The
    ``k`` step is the group's side *items*: each item loads one element of
    a step's row or column of each tile piece."""
    depth = items
    (rname, _, kext), = node.expr.bounds
    a_part, b_part = product_operands(node)
    leading, nj = node.shape[:-1], node.shape[-1]
    ni: Any = leading[0]
    for extent in leading[1:]:
        ni = sh.mul(ni, extent)
    col_name = index_var(node.ndim - 1).name
    tile = items * block
    parts = kb.parts
    gi, gj, li, lj, kt = (parts.fresh(p) for p in
                          ("_ft_ti", "_ft_tj", "_ft_li", "_ft_lj", "_ft_kt"))
    parts.add_blocks_domain(gi, tile, ni)
    parts.add_blocks_domain(gj, tile, nj)
    parts.add_domain([li, lj], [items, items])
    parts.add_blocks_domain(kt, depth, kext)
    parts.iname_tags.update({gi: "g.1", gj: "g.0", li: "l.1", lj: "l.0"})
    hardware = frozenset({gi, gj, li, lj})
    v = prim.Variable
    limit = {d: sh.to_affine(e).to_expr() for d, e in
             (("i", ni), ("j", nj), ("k", kext))}

    def inside(*conditions: tuple[Any, str]) -> Any:
        tests = [prim.Comparison(x, "<", limit[d]) for x, d in conditions]
        return tests[0] if len(tests) == 1 else prim.LogicalAnd(tuple(tests))

    ctx = StoreContext(scope, [gi, gj, li, lj], (v(gi), v(gj)), None)
    dtype = node.dtype
    a_loc = parts.fresh("_ft_atile")
    b_loc = parts.fresh("_ft_btile")
    for local_name, shape in ((a_loc, (tile, depth)), (b_loc, (depth, tile))):
        parts.temporaries[local_name] = lp.TemporaryVariable(
            local_name, dtype, shape=shape, address_space=lp.AddressSpace.LOCAL)
    # loads: item (l1, l0) loads rows (or columns) l1 + items*s of a tile
    # piece at its step index l0, or the other way round (s < block)
    sa, sb = parts.fresh("_ft_sa"), parts.fresh("_ft_sb")
    parts.add_domain([sa, sb], [block, block])
    parts.iname_tags.update({sa: "unr", sb: "unr"})
    # consecutive items (l.0) go along the operand's contiguous index: the
    # last index of its global reads once inlined (a transposed read has
    # its row or column index last, not k)
    def a_at(first: str, second: str) -> tuple[Any, Any, Any]:
        row = v(gi) * tile + v(first) + items * v(sa)
        k = v(kt) * depth + v(second)
        rows = {index_var(d).name: i
                for d, i in enumerate(_unravel(row, leading))}
        return row, k, kb.translate_expr(a_part, node, {**rows, rname: k}, ctx)

    def b_at(first: str, second: str) -> tuple[Any, Any, Any]:
        k = v(kt) * depth + v(first)
        col = v(gj) * tile + v(second) + items * v(sb)
        return k, col, kb.translate_expr(
            b_part, node, {col_name: col, rname: k}, ctx)
    a_first, a_second = li, lj
    a_row, a_k, a_value = a_at(a_first, a_second)
    if _contiguous_along(a_value, a_first, a_second):
        a_first, a_second = lj, li
        a_row, a_k, a_value = a_at(a_first, a_second)
    b_first, b_second = li, lj
    b_k, b_col, b_value = b_at(b_first, b_second)
    if _contiguous_along(b_value, b_first, b_second):
        b_first, b_second = lj, li
        b_k, b_col, b_value = b_at(b_first, b_second)
    zero = dtype.type(0)
    barrier_after_loads = parts.fresh("_ft_tload_barrier")
    barrier_after_step = parts.fresh("_ft_tstep_barrier")
    load_a = lp.Assignment(
        prim.Subscript(v(a_loc), (v(a_first) + items * v(sa), v(a_second))),
        prim.If(inside((a_row, "i"), (a_k, "k")), a_value, zero),
        id=parts.fresh(name + "_load_a"),
        within_inames=hardware | {kt, sa}, within_inames_is_final=True,
        depends_on=frozenset(ctx.deps))
    load_b = lp.Assignment(
        prim.Subscript(v(b_loc), (v(b_first), v(b_second) + items * v(sb))),
        prim.If(inside((b_k, "k"), (b_col, "j")), b_value, zero),
        id=parts.fresh(name + "_load_b"),
        within_inames=hardware | {kt, sb}, within_inames_is_final=True,
        depends_on=frozenset(ctx.deps))
    # accumulators: init, each step's products summed apart (a step's sum
    # is short, so the running total takes ceil(k / depth) roundings
    # instead of k: float32 sums over a long k stay near a BLAS's accuracy),
    # the step's sum added, store
    acc = parts.private_array("_ft_acc", dtype, (block, block))
    step_acc = parts.private_array("_ft_sacc", dtype, (block, block))
    blocks = {}
    for role in ("init", "step_init", "update", "add", "store"):
        r, c = parts.fresh("_ft_br"), parts.fresh("_ft_bc")
        parts.add_domain([r, c], [block, block])
        tag = "ilp" if role == "update" else "unr"
        parts.iname_tags.update({r: tag, c: tag})
        blocks[role] = (r, c)
    kk = parts.fresh("_ft_kk")
    parts.add_domain([kk], [depth])
    r, c = blocks["update"]
    parts.priorities.extend([(kt, kk), (kk, r), (r, c), (kt, sa), (kt, sb)])

    def at(array: str, role: str) -> Any:
        return prim.Subscript(v(array), tuple(v(x) for x in blocks[role]))
    init_id = parts.fresh(name + "_init")
    step_init_id = parts.fresh(name + "_sinit")
    update_id = parts.fresh(name + "_upd")
    add_id = parts.fresh(name + "_add")
    loads = frozenset({load_a.id, load_b.id})
    out_row = v(gi) * tile + v(li) + items * v(blocks["store"][0])
    out_col = v(gj) * tile + v(lj) + items * v(blocks["store"][1])
    insns = [
        lp.Assignment(at(acc, "init"), zero, id=init_id,
                      within_inames=hardware | set(blocks["init"]),
                      within_inames_is_final=True),
        load_a, load_b,
        lp.BarrierInstruction(
            id=barrier_after_loads, synchronization_kind="local",
            mem_kind="local", depends_on=loads,
            within_inames=frozenset({kt}), within_inames_is_final=True),
        lp.Assignment(at(step_acc, "step_init"), zero, id=step_init_id,
                      within_inames=hardware | {kt} | set(blocks["step_init"]),
                      within_inames_is_final=True,
                      depends_on=frozenset({barrier_after_loads})),
        lp.Assignment(
            at(step_acc, "update"), at(step_acc, "update") + prim.Subscript(
                v(a_loc), (v(li) + items * v(r), v(kk))) * prim.Subscript(
                v(b_loc), (v(kk), v(lj) + items * v(c))),
            id=update_id, within_inames=hardware | {kt, kk, r, c},
            within_inames_is_final=True,
            depends_on=frozenset({step_init_id, barrier_after_loads})),
        lp.Assignment(
            at(acc, "add"), at(acc, "add") + at(step_acc, "add"), id=add_id,
            within_inames=hardware | {kt} | set(blocks["add"]),
            within_inames_is_final=True,
            depends_on=frozenset({init_id, update_id})),
        lp.BarrierInstruction(
            id=barrier_after_step, synchronization_kind="local",
            mem_kind="local", depends_on=frozenset({update_id}),
            within_inames=frozenset({kt}), within_inames_is_final=True),
        lp.Assignment(
            prim.Subscript(v(name), (*_unravel(out_row, leading), out_col)),
            at(acc, "store"),
            id=parts.fresh(name + "_store"),
            within_inames=hardware | set(blocks["store"]),
            within_inames_is_final=True, depends_on=frozenset({add_id}),
            predicates=frozenset({inside((out_row, "i"), (out_col, "j"))}))]
    return ctx.pending + insns, ctx.reads
