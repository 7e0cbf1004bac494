# SPDX-License-Identifier: MIT
"""Load balance of row-blocked ragged scans: each work group's time loop
runs only as many steps as the longest element of its own block of rows.

A :class:`~ftlazy.fractal_tensor.RaggedScan` runs ``T = max_i extent_i``
steps, and each element's carry is gated by ``t < extent_i``. Where its
rows evolve independently (the ``row_blocked`` flavour, see
:class:`~.plan.ScanPlan`), every work group runs the loop for its own block
of rows, so a group whose elements are short need not run to ``T``: with
one sequence of 20,000 rows among a thousand of at most 32, the time loops
would otherwise cost ``n * T`` steps instead of about ``sum_i extent_i``.

Each group loads its block's longest extent from the offsets into a private
scalar before the loop, and the loop's domain is bounded by it
(``[e] -> {[t]: 0 <= t < e}``, as :mod:`.ranges` bounds segment
reductions). Elements that end before their block's last step keep their
carries through the gate, so after the loop every row's last carry is in
the slot of the block's own step count, where a fold's result is read.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

import loopy as lp
import numpy as np
import pymbolic.primitives as prim

from ftlazy import shapes as sh
from ftlazy.fractal_tensor import RaggedScan

if TYPE_CHECKING:
    from ftlazy.target.loopy.kernel import KernelBuilder
    from ftlazy.target.loopy.plan import ScanPlan

__all__ = ["block_bounded", "block_extent", "BlockBoundedLoop"]


def block_bounded(scan: Any, flavour: str, rows: Any, nested: bool) -> bool:
    """Whether each work group of *scan*'s loop stops at its own block's
    longest element: a ragged scan of the outer DAG whose rows evolve
    independently (*flavour* ``row_blocked``) and are its elements (not the
    packed rows of a carry of the element's length)."""
    return (isinstance(scan, RaggedScan) and flavour == "row_blocked"
            and not nested
            and sh.prove_equal(rows, sh.sub(scan.offsets.shape[0], 1)))


def block_extent(scan: RaggedScan, rows: Any, per_group: int, block: Any,
                 read_offsets: Callable[[tuple], Any]) -> Any:
    """The longest extent among rows ``per_group*block + r`` (``r <
    per_group``, those below *rows*) of *scan*, read from its offsets;
    0 for a block of empty elements."""
    const, coeff = scan.form

    def extent(row: Any) -> Any:
        return const + coeff * (read_offsets((row + 1,)) - read_offsets((row,)))
    if per_group == 1:
        return extent(block)
    limit = sh.to_affine(rows).to_expr()
    terms = []
    for r in range(per_group):
        row = block * per_group + r
        terms.append(extent(row) if r == 0 else
                     prim.If(prim.Comparison(row, "<", limit), extent(row), 0))
    return prim.Max(tuple(terms))


class BlockBoundedLoop:
    """The time loop *t* of a block-bounded scan (see the module docs): its
    domain, the instruction loading each group's step count, and the carry
    slot its rows' last carries are in."""

    def __init__(self, kb: KernelBuilder, scan: RaggedScan,
                 scan_plan: ScanPlan, read_offsets: Callable[[tuple], Any],
                 t: str) -> None:
        self.scan, self.plan, self.read_offsets = scan, scan_plan, read_offsets
        self.steps = kb.parts.private_array("_ft_steps", np.dtype(np.int64), ())
        kb.parts.domains.append(
            f"[{self.steps}] -> {{ [{t}]: 0 <= {t} < {self.steps} }}")
        group, item = kb.parts.fresh("_ft_bg"), kb.parts.fresh("_ft_z")
        kb.parts.add_blocks_domain(group, scan_plan.rows_per_group,
                                   scan_plan.rows)
        # every work item of the group loads it (the loop bound is private)
        items = 1 if scan_plan.single_item_groups else kb.profile.scan_local_size
        kb.parts.add_domain([item], [items])
        kb.parts.iname_tags.update({group: "g.0", item: "l.0"})
        self.instruction = lp.Assignment(
            prim.Variable(self.steps),
            block_extent(scan, scan_plan.rows, scan_plan.rows_per_group,
                         prim.Variable(group), read_offsets),
            id=self.steps + "_insn", within_inames=frozenset({group, item}),
            within_inames_is_final=True)

    def last_slot(self, index: tuple) -> Any:
        """The carry slot holding row ``index[0]``'s last carry."""
        per_group = self.plan.rows_per_group
        block = index[0] if per_group == 1 else prim.FloorDiv(index[0], per_group)
        steps = block_extent(self.scan, self.plan.rows, per_group, block,
                             self.read_offsets)
        return prim.BitwiseAnd((steps, 1))
