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

**Rolled chains.** The layers of a stacked RNN are copies of one scan:
the scans of the chain share their body, and their inputs differ only in
the layer's parameters, slices ``W[c + s*k]`` of one array at the layer's
index ``k``, and in the ragged input the chain links (the first scan's
own input, then each scan's the results of the one before). Such a chain
(:class:`RolledChain`) is emitted as one scan's loop inside a loop over
the layers: each layer reads its parameters at the layer index, and its
input from the results the layer before wrote. Those results are written
in place: a step reads only its own row of its ragged input, before it
writes its result there. The generated code is then one layer's, however
many layers there are, which cuts code generation and the OpenCL
compiler's work by the number of layers.
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from typing import TYPE_CHECKING

import numpy as np
import pymbolic.primitives as prim

from ftlazy import shapes as sh
from ftlazy.array import Array, IndexLambda
from ftlazy.fractal import LoopResult, Scan
from ftlazy.fractal_tensor import RaggedScan
from ftlazy.node import Node, iter_children, topological_order
from ftlazy.scalar_expr import index_var

if TYPE_CHECKING:
    from ftlazy.target.loopy.plan import KernelPlan, ScanPlan

__all__ = ["RolledChain", "rolled_chain", "plan_scan_chains"]


@dataclasses.dataclass(frozen=True)
class RolledChain:
    """How the scans of a chain differ (see the module docs): the first
    scan's inputs that are layer slices, each with the sliced array ``W``
    and the index ``c + s*k`` it reads for layer ``k`` as ``(W, c, s)``; the
    position of the ragged input the chain links, and which result of the
    scan before each later scan reads there."""

    layers: int
    slices: tuple[tuple[Node, tuple[Array, int, int]], ...]
    linked_input: int
    linked_result: int


def _layer_slice(a: Node) -> tuple[Array, int] | None:
    """``(W, c)`` where *a* is the slice ``W[c]`` (an
    :class:`~ftlazy.array.IndexLambda` reading its one binding at the
    constant ``c`` and then its own indices in order), else None."""
    if not isinstance(a, IndexLambda) or len(a.bindings) != 1:
        return None
    (name, w), = a.bindings.items()
    expr = a.expr
    if not (isinstance(expr, prim.Subscript)
            and isinstance(expr.aggregate, prim.Variable)
            and expr.aggregate.name == name and w.ndim == a.ndim + 1):
        return None
    index = expr.index if isinstance(expr.index, tuple) else (expr.index,)
    first = index[0]
    if (not isinstance(first, (int, np.integer))
            or index[1:] != tuple(index_var(k) for k in range(a.ndim))
            or not sh.shapes_equal(w.shape[1:], a.shape)):
        return None
    return w, int(first)


def rolled_chain(chain: tuple[Scan, ...]) -> RolledChain | None:
    """The :class:`RolledChain` of *chain* if its scans are copies of one
    scan over layers (see the module docs), else None."""
    first = chain[0]
    if len(chain) < 2 or any(
            s.body is not first.body or s.keep_all != first.keep_all
            or len(s.inputs) != len(first.inputs) for s in chain):
        return None
    nc, nr = first.num_carries, first.num_ragged
    slices: dict[Node, tuple[Array, int, int]] = {}
    linked: tuple[int, int] | None = None
    varying: set[Node] = set()
    for p, a in enumerate(first.inputs):
        column = [s.inputs[p] for s in chain]
        if all(b is a for b in column):
            continue
        varying.add(a)
        later = column[1:]
        if (nc <= p < nc + nr and linked is None
                and all(isinstance(b, LoopResult) and b.loop is chain[k]
                        and b.index == later[0].index
                        for k, b in enumerate(later))):
            linked = (p, later[0].index)
            continue
        found = [_layer_slice(b) for b in column]
        if any(f is None or f[0] is not found[0][0] for f in found):
            return None
        c, step = found[0][1], found[1][1] - found[0][1]
        if any(f[1] != c + step * k for k, f in enumerate(found)):
            return None
        if slices.setdefault(a, (found[0][0], c, step)) != (found[0][0], c, step):
            return None
    if linked is None:
        return None
    # each varying input is read at one position only (the emitter reads
    # it for the layer by node)
    if sum(1 for b in first.inputs if b in varying) != len(varying):
        return None
    return RolledChain(len(chain), tuple(slices.items()), *linked)


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


def plan_scan_chains(plan: KernelPlan, order: list[Node],
                     outputs: set[Node] = frozenset()) -> None:
    """Find the chains among the scans of *order* (the outer DAG) and
    record them in *plan* (see the module docs); a chain is rolled only if
    no result of its scans but the last is in *outputs* (the layers write
    their results in place)."""
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
        rolled = rolled_chain(tuple(chain))
        if rolled is not None and not any(
                LoopResult(s, k) in outputs for s in chain[:-1]
                for k in range(s.num_outputs)):
            plan.rolled_chains[tuple(chain)] = rolled
            for member in chain:
                plan.scans[member] = dataclasses.replace(
                    plan.scans[member], rolled_layers=rolled.layers)
