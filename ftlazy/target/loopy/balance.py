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
                 read_offsets: Callable[[tuple], Any],
                 element_at: Callable[[Any], Any] | None = None) -> Any:
    """The longest extent among the elements at positions
    ``per_group*block + r`` (``r < per_group``, those below *rows*) of
    *scan*, read from its offsets; 0 for a block of empty elements. The
    element at a position is *element_at* of it (default: the position)."""
    const, coeff = scan.form

    def extent(position: Any) -> Any:
        row = position if element_at is None else element_at(position)
        return const + coeff * (read_offsets((row + 1,)) - read_offsets((row,)))
    if per_group == 1:
        return extent(block)
    limit = sh.to_affine(rows).to_expr()
    terms = []
    for r in range(per_group):
        position = block * per_group + r
        terms.append(extent(position) if r == 0 else
                     prim.If(prim.Comparison(position, "<", limit),
                             extent(position), 0))
    return prim.Max(tuple(terms))


def _block_of_group(group: Any, scan_plan: ScanPlan) -> Any:
    """The block of sorted elements that work group *group* runs: the
    longest and shortest whole blocks alternate (``0, B-1, 1, B-2, ...`` of
    ``B`` whole blocks), so that any contiguous range of groups that a
    device hands one core holds about as many steps as another. A partial
    last block stays with the last group, whose rows the emitters guard."""
    per_group = scan_plan.rows_per_group
    whole = prim.FloorDiv(sh.to_affine(scan_plan.rows).to_expr(), per_group)
    half = prim.FloorDiv(group, 2)
    # (not ``group & 1 == 0``: loopy 2025.2 prints that without parentheses,
    # which C reads as ``group & (1 == 0)``)
    alternate = prim.If(prim.Comparison(prim.Remainder(group, 2), "==", 0),
                        half, whole - 1 - half)
    return prim.If(prim.Comparison(group, "<", whole), alternate, group)


class BlockBoundedLoop:
    """The time loop *t* of a block-bounded scan (see the module docs): its
    domain, the instructions loading each group's step count (and, where
    the plan sorts the elements, the elements of its block), and the carry
    slot its rows' last carries are in.

    With ``sorted_rows``, position ``p`` of the blocks runs element
    ``order[0, p]`` (*read_order* reads the scan's
    :attr:`~ftlazy.fractal_tensor.RaggedScan.order`). Each group loads its
    block's elements once into a private table before the loop: every
    ``(n, ...)`` array is then indexed through a private load, which the
    compiler need not repeat after each store to global memory, as it
    would a load of *order*."""

    def __init__(self, kb: KernelBuilder, scan: RaggedScan,
                 scan_plan: ScanPlan, read_offsets: Callable[[tuple], Any],
                 t: str, read_order: Callable[[tuple], Any] | None = None
                 ) -> None:
        self.scan, self.plan, self.read_offsets = scan, scan_plan, read_offsets
        self.read_order = read_order
        per_group = scan_plan.rows_per_group
        self.steps = kb.parts.private_array("_ft_steps", np.dtype(np.int64), ())
        kb.parts.domains.append(
            f"[{self.steps}] -> {{ [{t}]: 0 <= {t} < {self.steps} }}")
        group, item = kb.parts.fresh("_ft_bg"), kb.parts.fresh("_ft_z")
        kb.parts.add_blocks_domain(group, per_group, scan_plan.rows)
        # every work item of the group loads them (loop bounds and indices
        # are private)
        items = 1 if scan_plan.single_item_groups else kb.profile.scan_local_size
        kb.parts.add_domain([item], [items])
        kb.parts.iname_tags.update({group: "g.0", item: "l.0"})
        block = (prim.Variable(group) if read_order is None
                 else _block_of_group(prim.Variable(group), scan_plan))
        self.instructions = [lp.Assignment(
            prim.Variable(self.steps),
            block_extent(scan, scan_plan.rows, per_group, block,
                         read_offsets, self._global_element),
            id=self.steps + "_insn", within_inames=frozenset({group, item}),
            within_inames_is_final=True)]
        self.elements: str | None = None
        if read_order is not None:
            self.elements = kb.parts.private_array(
                "_ft_elements", np.dtype(np.int64), (per_group,))
            r = kb.parts.fresh("_ft_er")
            kb.parts.add_domain([r], [per_group])
            kb.parts.iname_tags[r] = "unr"
            position = (_block_of_group(prim.Variable(group), scan_plan)
                        * per_group + prim.Variable(r))
            value = read_order((0, position))
            if scan_plan.partial_last_block:
                # (positions past the last element run no element)
                value = prim.If(prim.Comparison(
                    position, "<", sh.to_affine(scan_plan.rows).to_expr()),
                    value, 0)
            self.instructions.append(lp.Assignment(
                prim.Subscript(prim.Variable(self.elements), (prim.Variable(r),)),
                value, id=self.elements + "_insn",
                within_inames=frozenset({group, item, r}),
                within_inames_is_final=True))

    @property
    def instruction_ids(self) -> set[str]:
        return {i.id for i in self.instructions}

    def _global_element(self, position: Any) -> Any:
        return (position if self.read_order is None
                else self.read_order((0, position)))

    def element_at(self, group: Any, row: Any) -> Any:
        """The element at row *row* of group *group*'s block, from the
        group's private table (sorted rows only: see ``Scope.element_at``
        for element order)."""
        return prim.Subscript(prim.Variable(self.elements), (row,))

    def last_slot(self, index: tuple) -> Any:
        """The carry slot holding row ``index[0]``'s last carry."""
        per_group = self.plan.rows_per_group
        position = (index[0] if self.read_order is None
                    else self.read_order((1, index[0])))
        block = position if per_group == 1 else prim.FloorDiv(position, per_group)
        steps = block_extent(self.scan, self.plan.rows, per_group, block,
                             self.read_offsets, self._global_element)
        return prim.BitwiseAnd((steps, 1))
