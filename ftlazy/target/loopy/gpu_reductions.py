# SPDX-License-Identifier: MIT
"""Work-group reductions on GPUs (the ``group_reduction`` plan):
``out[i...] = op_r f(i..., r)`` over a contiguous axis ``r``.

One work group computes one output element. Its work items stride over
``r`` (item ``l`` takes ``r = size*s + l`` at step ``s``), so that
consecutive items read consecutive addresses, each accumulates its share
in a private variable, and loopy combines the items' shares in a tree in
local memory (a reduction over an ``l.0`` iname). The output's last axis
is on ``g.0``, the axes before it on ``g.1`` and ``g.2``; further axes are
sequential loops in each group.

A 0-d output (a full reduction of a vector) is one group: the lowering
already reduces an array of several axes one axis at a time, so the last
stage sums one group's worth of partial results, not the whole input.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import loopy as lp
import pymbolic.primitives as prim
from loopy.symbolic import Reduction

from ftlazy import shapes as sh
from ftlazy.array import IndexLambda
from ftlazy.node import Node
from ftlazy.scalar_expr import Reduce, get_variable_names, iter_subexpressions
from ftlazy.target.loopy.expressions import _Maximum, _Minimum
from ftlazy.target.loopy.scopes import StoreContext

if TYPE_CHECKING:
    from ftlazy.target.loopy.kernel import KernelBuilder
    from ftlazy.target.loopy.scopes import Scope

__all__ = ["contiguous_reduction", "emit_group_reduction", "MIN_GROUP_REDUCTION"]

#: a concrete reduction shorter than this stays a sequential loop per output
MIN_GROUP_REDUCTION = 64


def contiguous_reduction(node: IndexLambda) -> Reduce | None:
    """*node*'s reduction if it is ``op_r f(..., r)`` over one variable that
    is long enough to share among a work group's items (any length for a
    0-d result), whose every read
    that depends on ``r`` has it in its last index only (neighbouring items
    then read neighbouring addresses), with no reduction nested in it."""
    expr = node.expr
    if (not isinstance(expr, Reduce) or len(expr.bounds) != 1
            or expr.op not in ("sum", "product", "max", "min")
            or node.dtype.kind not in "iuf"):
        return None
    (rname, lo, hi), = expr.bounds
    # (a 0-d result is one group whatever the length: its tree also keeps
    # a float sum's chain of roundings short)
    shortest = MIN_GROUP_REDUCTION if node.ndim else 2
    if lo != 0 or (isinstance(hi, int) and hi < shortest):
        return None
    reads_r = False
    for e in iter_subexpressions(expr.inner):
        if isinstance(e, Reduce):
            return None
        if isinstance(e, prim.Subscript):
            index = e.index_tuple
            if any(rname in get_variable_names(i) for i in index[:-1]):
                return None
            reads_r = reads_r or (bool(index)
                                  and rname in get_variable_names(index[-1]))
    return expr if reads_r else None


def _loopy_op(reduction: Reduce) -> Any:
    if reduction.op in ("max", "min"):
        # (numpy's NaN-propagating extrema with a neutral element for every
        # integer width, see .expressions)
        return _Maximum() if reduction.op == "max" else _Minimum()
    return reduction.op


def emit_group_reduction(kb: KernelBuilder, node: IndexLambda, name: str,
                         scope: Scope, size: int
                         ) -> tuple[list[Any], set[Node]]:
    """Instructions computing *node* (see the module docs) into *name*, with
    work groups of *size* items."""
    reduction = node.expr
    (rname, _, extent), = reduction.bounds
    inames, index = kb.coalesced_nest(node.shape, None)
    inames = list(inames)
    if not node.shape:
        group = kb.parts.fresh("_ft_g")
        kb.parts.add_domain([group], [1])
        kb.parts.iname_tags[group] = "g.0"
        inames.append(group)
    item, step = kb.parts.fresh("_ft_l"), kb.parts.fresh("_ft_s")
    params = sorted(sh.size_param_names(extent))
    kb.parts.params |= set(params)
    kb.parts.domains.append(
        f"[{', '.join(params)}] -> {{ [{item}, {step}]: 0 <= {item} < {size} "
        f"and 0 <= {step} and {size}*{step} + {item} < "
        f"{sh.to_affine(extent).to_isl()} }}")
    kb.parts.iname_tags[item] = "l.0"
    # (no shape: a read at the output's own index stays in the reduction,
    # not a private load outside the items' l.0 loop, which loopy refuses)
    ctx = StoreContext(scope, inames, tuple(index))
    index_map = {f"_{d}": i for d, i in enumerate(index)}
    index_map[rname] = prim.Variable(step) * size + prim.Variable(item)
    inner = kb.translate_expr(reduction.inner, node, index_map, ctx)
    op = _loopy_op(reduction)
    value = Reduction(op, (item,), Reduction(op, (step,), inner))
    ctx.pending.append(lp.Assignment(
        prim.Subscript(prim.Variable(name), tuple(index) or (0,)), value,
        id=kb.parts.fresh(name + "_store"),
        within_inames=frozenset(scope.outer_inames) | frozenset(inames),
        within_inames_is_final=True, depends_on=frozenset(ctx.deps)))
    return ctx.pending, ctx.reads
