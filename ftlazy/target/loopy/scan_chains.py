# SPDX-License-Identifier: MIT
"""Chains of ragged scans run in one kernel: a stacked RNN over the
sequences of a FractalTensor.

A fold over layers whose carry is the batch of sequences unrolls into one
:class:`~ftlazy.fractal_tensor.RaggedScan` per layer, each scanning the
packed results of the one before (its input products sunk into its step
by :mod:`ftlazy.transform.sink_scans`). Where each work group runs the time
loop for its own block of elements (``row_blocked``, on CPUs one work item
per group) and both scans block the same elements over the same offsets,
the second reads at its step only rows that the same group wrote in the
first scan's loop: element ``i``'s row ``start_i + t``. So the group can
run the first scan for its elements and then the second, in one kernel
with no synchronization between groups. A link ``(P, S)`` is made where:

* both are such scans (the same row count, block size, offsets, form
  and order of the elements in the blocks,
  one work item per group, each group's loop bounded by its own block);
* ``S`` reads ``P``'s results only as ragged scanned inputs, and its other
  inputs do not depend on ``P``;
* nothing but ``S`` reads ``P``'s results (they may be outputs).

A chain is a maximal run of links; the planner records it in
:attr:`~.plan.KernelPlan.scan_chains` and marks the later scans' plans
(``print(f.plan)``), and the emitter runs its scans one after the other
in one kernel (:func:`~.scan.emit_scan_chain`).
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from typing import TYPE_CHECKING

from ftlazy import shapes as sh
from ftlazy.fractal import LoopResult, Scan
from ftlazy.fractal_tensor import RaggedScan
from ftlazy.node import Node, iter_children, topological_order

if TYPE_CHECKING:
    from ftlazy.target.loopy.plan import KernelPlan, ScanPlan

__all__ = ["plan_scan_chains"]


def _blocked(p: ScanPlan) -> bool:
    return (p.flavour == "row_blocked" and p.single_item_groups
            and p.block_bounded)


def _same_blocks(a: RaggedScan, pa: ScanPlan, b: RaggedScan, pb: ScanPlan
                 ) -> bool:
    return (_blocked(pa) and _blocked(pb) and a.offsets is b.offsets
            and a.form == b.form and pa.rows_per_group == pb.rows_per_group
            and sh.prove_equal(pa.rows, pb.rows)
            and pa.sorted_rows == pb.sorted_rows
            and (not pa.sorted_rows or a.order == b.order))


def _reads_only_as_ragged(prev: Scan, scan: RaggedScan) -> bool:
    """Whether *scan* reads *prev*'s results only as ragged scanned inputs
    (at least one), and its other inputs do not depend on *prev*."""
    nc, nr = scan.num_carries, scan.num_ragged
    ragged, others = [], []
    for k, a in enumerate(scan.inputs):
        if isinstance(a, LoopResult) and a.loop is prev:
            ragged.append(nc <= k < nc + nr)
        else:
            others.append(a)
    return (bool(ragged) and all(ragged)
            and prev not in topological_order(others))


def plan_scan_chains(plan: KernelPlan, order: list[Node]) -> None:
    """Find the chains among the scans of *order* (the outer DAG) and
    record them in *plan* (see the module docs)."""
    readers: dict[Node, set[Node]] = defaultdict(set)
    for n in order:
        for c in iter_children(n):
            readers[c].add(n)
    after: dict[Scan, Scan] = {}
    for scan in order:
        if type(scan) is not RaggedScan:
            continue
        feeding = {c.loop for c in iter_children(scan)
                   if isinstance(c, LoopResult)}
        if len(feeding) != 1:
            continue
        prev, = feeding
        if (type(prev) is RaggedScan and prev not in after.values()
                and _same_blocks(prev, plan.scans[prev], scan, plan.scans[scan])
                and _reads_only_as_ragged(prev, scan)
                and all(readers[r] <= {scan} for r in readers[prev])):
            after[scan] = prev
    for scan in after:
        plan.scans[scan] = dataclasses.replace(plan.scans[scan], chained=True)
    # the chains, first scan first
    for scan in order:
        if scan in after or scan not in after.values():
            continue
        chain = [scan]
        nxt = {p: s for s, p in after.items()}
        while chain[-1] in nxt:
            chain.append(nxt[chain[-1]])
        for member in chain:
            plan.scan_chains[member] = tuple(chain)
