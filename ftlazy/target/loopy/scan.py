# SPDX-License-Identifier: MIT
"""Scans in the kernel: a sequential time loop in a kernel of its own.

The carries live in a two-slot global buffer (read slot ``t % 2``, write
slot ``(t+1) % 2``); the body's stored arrays are computed inside the loop
with work-group barriers between dependency levels and at the end of each
step, all instructions state their inames, and loop priorities keep the time
loop outermost. The scan's flavour comes from its plan
(:class:`~ftlazy.target.loopy.plan.ScanPlan`): one work group runs the loop
(on CPUs a single work item, whose loops vectorize and need no barriers),
or, where the carry rows evolve independently, each group runs it for its
own block of rows.

A scan in a scan body is one unit of a dependency level of that body: its
time loop runs inside the enclosing one, in the same work group (such
nests are planned whole-group), with two-slot carries that each enclosing
step resets from its initial values and its stacked or last results in
temporaries the enclosing step reads. Nests of any depth recurse the same
way.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Callable

import loopy as lp
import pymbolic.primitives as prim

from ftlazy import shapes as sh
from ftlazy.array import Array, IndexLambda, SizeParam
from ftlazy.fractal import BodyParam, LoopResult, Scan
from ftlazy.fractal_tensor import RaggedScan
from ftlazy.node import Node, topological_order
from ftlazy.target.loopy.balance import BlockBoundedLoop
from ftlazy.target.loopy.plan import partial_last_block
from ftlazy.target.loopy.scan_chains import RolledChain
from ftlazy.target.loopy.scopes import Scope, StoreContext

if TYPE_CHECKING:
    from ftlazy.target.loopy.kernel import KernelBuilder


def _emit_row_blocked_cpu(kb: KernelBuilder, node: IndexLambda, name: str,
                          scope: Scope, reduction: Any
                          ) -> tuple[list[Any], set[Node]]:
    """``out[b, j] = sum_k f(b, j, k)`` in a scan whose groups are single
    work items (CPUs): the item keeps a ``rows x columns`` accumulator and
    runs ``for k: for row: for j: acc[row, j] += f(row, j, k)``, whose
    contiguous innermost loop the OpenCL compiler vectorizes, and which
    reads each weight row once per group and step. In a row-partitioned
    scan the rows are the group's block; in a whole-group scan the item
    owns every row (``out[j] = sum_k f(j, k)`` is one row)."""
    if scope.batch is not None:
        rows, per_group = scope.batch
        group: str | None = kb.parts.fresh("_ft_bg")
        kb.parts.add_blocks_domain(group, per_group, rows)
        kb.parts.iname_tags[group] = "g.0"
    else:
        rows = per_group = node.shape[0] if node.ndim == 2 else 1
        group = None
    (rname, _, kext), = reduction.bounds
    ncols = node.shape[-1]
    # k steps summed per accumulator update: fewer loads and stores of
    # the accumulator per multiply-add
    unroll = kb.plan.arrays[node].block[1]
    item, k = kb.parts.fresh("_ft_z"), kb.parts.fresh("_ft_k")
    kb.parts.add_domain([item], [1])
    kb.parts.add_domain([k], [kext // unroll if unroll > 1 else kext])
    kb.parts.iname_tags[item] = "l.0"
    loops = {}
    # zeroing and storing the block run over it as one flat loop (the
    # group's rows are contiguous in the row-major result)
    block = per_group * ncols
    partial = group is not None and partial_last_block(rows, per_group)

    def rows_and_columns() -> tuple[str, str]:
        """A row loop over the group's rows, each row's columns inside."""
        r, j = kb.parts.fresh("_ft_rr"), kb.parts.fresh("_ft_jj")
        if partial:
            # the last group's rows stop at the row count
            kb.parts.add_guarded_domain([r, j], [per_group, ncols],
                                        f"{per_group}*{group} + {r}", rows,
                                        (group,))
        else:
            kb.parts.add_domain([r, j], [per_group, ncols])
        kb.parts.priorities.extend([(t, r) for t in scope.outer_inames]
                                   + [(r, j)])
        return r, j
    r, j = loops["update"] = rows_and_columns()
    kb.parts.priorities.extend([(t, k) for t in scope.outer_inames] + [(k, r)])
    # (sorted elements: the block's rows are not contiguous in the result,
    # so the store runs a row loop, each row's columns contiguous)
    sorted_store = group is not None and scope.element_at is not None
    if sorted_store:
        loops["store"] = rows_and_columns()
    for role in ("init", "store"):
        if role == "store" and sorted_store:
            continue
        flat = kb.parts.fresh("_ft_ff")
        if partial and role == "store":
            kb.parts.add_guarded_domain(
                [flat], [block], f"{block}*{group} + {flat}",
                sh.to_affine(rows).scale(ncols).to_expr(),
                (group,))
        else:
            kb.parts.add_domain([flat], [block])
        loops[role] = (flat,)
        kb.parts.priorities.extend((t, flat) for t in scope.outer_inames)

    def element(row: Any, col: Any) -> tuple:
        # (a one-dimensional result is a single row)
        if node.ndim != 2:
            return (col,)
        if group is None:
            return (row, col)
        return (scope.element_row(prim.Variable(group), row), col)

    def split(flat: Any) -> tuple:
        return (flat // ncols, flat % ncols) if per_group > 1 else (0, flat)

    def at(role):
        if len(loops[role]) == 2:
            return prim.Subscript(prim.Variable(acc), tuple(
                prim.Variable(i) for i in loops[role]))
        return prim.Subscript(prim.Variable(acc),
                              split(prim.Variable(loops[role][0])))
    here = element(prim.Variable(r), prim.Variable(j))
    hardware = [i for i in (group, item) if i is not None]
    ctx = StoreContext(scope, hardware, here)
    terms = tuple(
        kb.translate_expr(
            reduction.inner, node,
            {**{f"_{d}": i for d, i in enumerate(here)},
             rname: (prim.Variable(k) * unroll + step if unroll > 1
                     else prim.Variable(k))}, ctx)
        for step in range(unroll))
    acc = kb.parts.private_array("_ft_acc", node.dtype, (per_group, ncols))
    base = frozenset(scope.outer_inames) | set(hardware)
    init_id, upd_id = kb.parts.fresh(name + "_init"), kb.parts.fresh(name + "_upd")
    stored = (tuple(prim.Variable(i) for i in loops["store"])
              if sorted_store else split(prim.Variable(loops["store"][0])))
    insns = [
        lp.Assignment(at("init"), node.dtype.type(0), id=init_id,
                      within_inames=base | set(loops["init"]),
                      within_inames_is_final=True),
        lp.Assignment(at("update"), prim.Sum((at("update"), *terms)), id=upd_id,
                      within_inames=base | {k, *loops["update"]},
                      within_inames_is_final=True,
                      depends_on=frozenset(ctx.deps) | {init_id}),
        lp.Assignment(prim.Subscript(prim.Variable(name), element(*stored)),
                      at("store"), id=kb.parts.fresh(name + "_store"),
                      within_inames=base | set(loops["store"]),
                      within_inames_is_final=True,
                      depends_on=frozenset({upd_id}))]
    return ctx.pending + insns, ctx.reads

def _emit_row_blocked(kb: KernelBuilder, node: IndexLambda, name: str,
                      scope: Scope, reduction: Any
                      ) -> tuple[list[Any], set[Node]]:
    """``out[b, j] = sum_k f(b, j, k)`` in a row-partitioned scan: each
    work item (a column ``j``) accumulates its group's rows in private
    memory inside the ``k`` loop, so each loaded ``f`` operand that does
    not depend on the row (a weight) is read once per group and step."""
    rows, per_group = scope.batch
    (rname, _, kext), = reduction.bounds
    ncols = node.shape[1]
    group = kb.parts.fresh("_ft_bg")
    kb.parts.add_blocks_domain(group, per_group, rows)
    kb.parts.iname_tags[group] = "g.0"
    size = kb.plan.arrays[node].local_size
    jo, jl = kb.parts.fresh("_ft_o"), kb.parts.fresh("_ft_l")
    kb.parts.add_split_domain(jo, jl, size, ncols)
    kb.parts.iname_tags[jl] = "l.0"
    k = kb.parts.fresh("_ft_k")
    kb.parts.add_domain([k], [kext])
    lanes = {}
    for role in ("init", "update", "store"):
        lanes[role] = kb.parts.fresh("_ft_rr")
        kb.parts.add_domain([lanes[role]], [per_group])
        kb.parts.iname_tags[lanes[role]] = "ilp" if role == "update" else "unr"
    t_inames = scope.outer_inames
    kb.parts.priorities.extend([(t, jo) for t in t_inames] + [(t, k) for t in t_inames]
                           + [(jo, k), (k, lanes["update"])])
    col = prim.Variable(jo) * size + prim.Variable(jl)

    def position(role):
        return prim.Variable(group) * per_group + prim.Variable(lanes[role])

    def row(role):
        return scope.element_row(prim.Variable(group), prim.Variable(lanes[role]))

    def present(role):
        # the lanes are unrolled: the last group's missing rows are masked
        if not partial_last_block(rows, per_group):
            return frozenset()
        return frozenset({prim.Comparison(position(role), "<",
                                          sh.to_affine(rows).to_expr())})

    ctx = StoreContext(scope, [group, jo, jl], (row("update"), col))
    term = kb.translate_expr(
        reduction.inner, node,
        {"_0": row("update"), "_1": col, rname: prim.Variable(k)}, ctx)
    acc = kb.parts.private_array("_ft_acc", node.dtype, (per_group,))

    def at(role):
        return prim.Subscript(prim.Variable(acc), (prim.Variable(lanes[role]),))
    base = frozenset(t_inames) | {group, jo, jl}
    init_id, upd_id = kb.parts.fresh(name + "_init"), kb.parts.fresh(name + "_upd")
    insns = [
        lp.Assignment(at("init"), node.dtype.type(0), id=init_id,
                      within_inames=base | {lanes["init"]},
                      within_inames_is_final=True),
        lp.Assignment(at("update"), at("update") + term, id=upd_id,
                      within_inames=base | {k, lanes["update"]},
                      within_inames_is_final=True,
                      depends_on=frozenset(ctx.deps) | {init_id},
                      predicates=present("update")),
        lp.Assignment(prim.Subscript(prim.Variable(name), (row("store"), col)),
                      at("store"), id=kb.parts.fresh(name + "_store"),
                      within_inames=base | {lanes["store"]},
                      within_inames_is_final=True,
                      depends_on=frozenset({upd_id}),
                      predicates=present("store"))]
    return ctx.pending + insns, ctx.reads

def flat_row_block_nest(kb: KernelBuilder, shape: tuple, scope: Scope
                        ) -> tuple[list[str], tuple] | None:
    """For copies in a row-partitioned scan on a CPU: one flat loop over
    the group's block of a 2-D array (its rows are contiguous), or None
    where that does not apply."""
    if (scope.batch is None or not scope.single_item_groups or len(shape) != 2
            or not isinstance(shape[1], int) or scope.element_at is not None):
        # (sorted elements: the block's rows are not contiguous, and a row
        # loop keeps each row's contiguous loop free of the element lookup)
        return None
    rows, per_group = scope.batch
    ncols = shape[1]
    group, item, flat = (kb.parts.fresh(p) for p in ("_ft_bg", "_ft_z", "_ft_ff"))
    kb.parts.add_blocks_domain(group, per_group, rows)
    kb.parts.add_domain([item], [1])
    block = per_group * ncols
    if partial_last_block(rows, per_group):
        # the last group's block ends at the last row
        kb.parts.add_guarded_domain([flat], [block], f"{block}*{group} + {flat}",
                                    sh.to_affine(rows).scale(ncols).to_expr(),
                                    (group,))
    else:
        kb.parts.add_domain([flat], [block])
    kb.parts.iname_tags.update({group: "g.0", item: "l.0"})
    kb.parts.priorities.extend((t, flat) for t in scope.outer_inames)
    f = prim.Variable(flat)
    return [group, item, flat], (
        scope.element_row(prim.Variable(group), f // ncols),
        f % ncols)

def batched_loop_nest(kb: KernelBuilder, shape: tuple, scope: Scope,
                      lanes: int = 1) -> tuple[list[str], tuple]:
    """A loop nest in a scan whose work groups are row blocks or single
    work items. In a row-partitioned scan axis 0 (the rows) splits into the
    work group (g.0) and a sequential loop over its rows; in a whole-group
    scan one work item runs (CPUs) every axis is a sequential loop. The
    last axis is spread over the group's work items (l.0, GPUs) or, with one
    work item per group (CPUs), a sequential loop whose *lanes* run math
    calls on vectors."""
    inames: list[str] = []
    index: list[Any] = []
    sequential: list[str] = []
    first = 0
    if scope.batch is not None:
        rows, per_group = scope.batch
        group, row = kb.parts.fresh("_ft_bg"), kb.parts.fresh("_ft_br")
        kb.parts.add_split_domain(group, row, per_group, rows)
        kb.parts.iname_tags[group] = "g.0"
        inames += [group, row]
        index.append(scope.element_row(prim.Variable(group),
                                       prim.Variable(row)))
        sequential.append(row)
        first = 1
    # one work item per group (CPUs): its contiguous loops vectorize
    cpu = scope.single_item_groups
    for d, extent in enumerate(shape[first:], start=first):
        if d == len(shape) - 1 and not cpu:
            scan_size = kb.profile.scan_local_size
            size = (min(scan_size, extent) if isinstance(extent, int)
                    else scan_size)
            outer, inner = kb.parts.fresh("_ft_o"), kb.parts.fresh("_ft_l")
            kb.parts.add_split_domain(outer, inner, max(size, 1), extent)
            kb.parts.iname_tags[inner] = "l.0"
            inames += [outer, inner]
            index.append(prim.Variable(outer) * max(size, 1)
                         + prim.Variable(inner))
            sequential.append(outer)
        else:
            names, idx = kb.sequential_axis(
                d, extent, lanes if cpu and d == len(shape) - 1 else 1)
            inames += names
            index.append(idx)
            sequential.extend(names)
    if len(shape) == 1 or cpu:
        item = kb.parts.fresh("_ft_z")
        kb.parts.add_domain([item], [1])
        kb.parts.iname_tags[item] = "l.0"
        inames.append(item)
    kb.parts.priorities.extend((t, i) for t in scope.outer_inames for i in sequential)
    # rows outside, the contiguous last axis innermost
    kb.parts.priorities.extend(zip(sequential, sequential[1:]))
    return inames, tuple(index)

class _RaggedRows:
    """Where the rows of a :class:`~ftlazy.fractal_tensor.RaggedScan` are:
    element ``row``'s step ``t`` is packed row ``start(row) + t``, present
    while ``t < extent(row)``."""

    def __init__(self, scan: RaggedScan, read_offsets: Callable[[tuple], Any],
                 t: Any) -> None:
        self.const, self.coeff = scan.form
        self.off = read_offsets
        self.t = t

    def start(self, row: Any) -> Any:
        return self.const * row + self.coeff * self.off((row,))

    def present(self, row: Any) -> Any:
        extent = self.const + self.coeff * (self.off((row + 1,)) - self.off((row,)))
        return prim.Comparison(self.t, "<", extent)

    def reader(self, read: Callable[[tuple], Any]) -> Callable[[tuple], Any]:
        """Step rows of a packed scanned array. Past an element's end it
        reads packed row 0 (there is one whenever a step runs): the load is
        unconditional, so a row's loads vectorize, and the value reaches no
        result, as the element's carries are gated and its stacked rows
        written only while it runs."""
        return lambda idx: read((prim.If(self.present(idx[0]),
                                         self.start(idx[0]) + self.t, 0),)
                                + tuple(idx[1:]))

    def packed_row(self, idx: tuple) -> tuple[tuple, Any]:
        """Where a stacked result's step row goes, and when."""
        return ((self.start(idx[0]) + self.t,) + tuple(idx[1:]),
                self.present(idx[0]))


def _ragged_rows(scan: Scan, outer_reader: Callable, t: Any) -> _RaggedRows | None:
    if not isinstance(scan, RaggedScan):
        return None
    return _RaggedRows(scan, outer_reader(scan.offsets), t)


def _parity(step: Any) -> Any:
    """The carry slot of *step*: ``step & 1``. (loopy writes ``step % 2``
    as ``step - 2*(step/2)``, and with that form PoCL 3.0's optimizer
    dropped every carry store of a whole-group scan whose loop runs a
    run-time number of steps; ``test_codegen_jagged_scans`` has the case.)"""
    return prim.BitwiseAnd((step, 1))


def _input_level(kb: KernelBuilder, a: Array) -> float:
    """The dependency level of loop input *a*: its own, or for an input the
    loop computes where it reads it, that of the arrays it reads."""
    if a in kb.level:
        return kb.level[a]
    if isinstance(a, IndexLambda):
        return max((_input_level(kb, b) for b in a.bindings.values()),
                   default=0)
    return 0


def emit_scan_chain(kb: KernelBuilder, chain: tuple[Scan, ...], outer: Scope,
                    out_names: dict) -> None:
    """The scans of *chain* (of the outer DAG: one scan, or a chain, see
    :mod:`.scan_chains`) one after the other in a kernel of their own:
    each group runs a scan's loop for its rows after the one before
    (program order in its single work item); their results named in
    *outer* (outputs take their *out_names*)."""
    members = set(chain)
    # the kernel's level: after every input from outside the chain, and one
    # no other array shares
    level = 1 + max((_input_level(kb, a) for s in chain for a in s.inputs
                     if not (isinstance(a, LoopResult) and a.loop in members)),
                    default=0) + 0.5
    def record(scan: Scan, results: dict[int, str]) -> None:
        # (before the next scan of the chain reads them)
        for k, name in results.items():
            outer.names[LoopResult(scan, k)] = name
            kb.level[LoopResult(scan, k)] = level

    for scan in chain:
        kb.level[scan] = level
    insns: list[Any] = []
    rolled = kb.plan.rolled_chains.get(chain)
    if rolled is not None:
        # (only the last scan's results are read outside the chain)
        insns, results = _emit_rolled_chain(kb, chain, rolled, outer, out_names)
        record(chain[-1], results)
    else:
        done: frozenset[str] = frozenset()
        for scan in chain:
            new, results = _emit_loop(kb, scan, outer, out_names)
            record(scan, results)
            insns += [i.copy(depends_on=i.depends_on | done) for i in new]
            if scan is not chain[-1]:
                # the next scan's loop follows this one's
                join = lp.NoOpInstruction(
                    id=kb.parts.fresh("_ft_chain"),
                    depends_on=frozenset(i.id for i in new),
                    within_inames=frozenset(), within_inames_is_final=True)
                insns.append(join)
                done = frozenset({join.id})
    # mark the group (by id prefix) for _declare_scan_nosync
    prefix = kb.parts.fresh("_ft_scan") + "_"
    kb.parts.scan_prefixes.append(prefix)
    renames = {i.id: prefix + i.id for i in insns}
    kb.parts.instructions.extend(((level, prefix), i.copy(
        id=renames[i.id], depends_on=frozenset(renames.get(d, d)
                                               for d in i.depends_on)))
        for i in insns)


def _emit_rolled_chain(kb: KernelBuilder, chain: tuple[Scan, ...],
                       rolled: RolledChain, outer: Scope, out_names: dict
                       ) -> tuple[list[Any], dict[int, str]]:
    """The first scan of *chain*'s loop inside a loop over its layers (see
    :mod:`.scan_chains`): layer ``l`` reads its parameter slices at index
    ``c + s*l``, and its linked ragged input from the first scan's own at
    ``l == 0``, else from the results, which every layer writes in place
    to the last scan's; returns the instructions and those results' names."""
    layer = kb.parts.fresh("_ft_layer")
    kb.parts.add_domain([layer], [rolled.layers])
    lvar = prim.Variable(layer)
    read_outer = _reader(kb, outer)
    first, last = chain[0], chain[-1]
    final = {k: _scan_result_name(kb, last, k, out_names)
             for k in range(last.num_carries)}
    readers: dict[Node, Callable[[tuple], Any]] = {}
    for node, (w, c, step) in rolled.slices:
        readers[node] = (lambda idx, read=read_outer(w), c=c, step=step:
                         read((c + step * lvar,) + tuple(idx)))
    linked = first.inputs[rolled.linked_input]
    written = final[rolled.linked_result]
    kb.parts.in_place.add(written)
    read_linked = read_outer(linked)
    readers[linked] = lambda idx: prim.If(
        prim.Comparison(lvar, "==", 0), read_linked(idx),
        prim.Subscript(prim.Variable(written), tuple(idx)))
    scope = Scope(outer.plan, outer.names, outer.params,
                  outer.outer_inames + (layer,), outer.parallel, outer.batch,
                  outer.single_item_groups, outer.element_at)
    return _emit_loop(kb, first, scope,
                      {LoopResult(first, k): name for k, name in final.items()},
                      readers)


def _reader(kb: KernelBuilder, scope: Scope,
            readers: Mapping[Node, Callable[[tuple], Any]] | None = None
            ) -> Callable[[Array], Callable[[tuple], Any]]:
    """Readers of the arrays a loop of *scope* takes as inputs: arrays
    stored in it, its body parameters (a scan nested in a scan body) and
    size parameters; *readers* replaces those of some (a rolled chain's
    layer inputs)."""
    def read(a: Array) -> Callable[[tuple], Any]:
        if readers is not None and a in readers:
            return readers[a]
        if isinstance(a, SizeParam):
            return lambda idx: prim.Variable(a.name)
        if isinstance(a, BodyParam):
            return scope.params[a.index]
        if a in kb.packed:
            return lambda idx: kb.packed_read(a, idx)
        if isinstance(a, IndexLambda) and a not in scope.names:
            # computed where it is read (storage.loop_computable: it reads
            # only inputs, which need no dependency)
            return lambda idx: kb.read_in(a, idx, scope)
        name = scope.names[a]
        return lambda idx: prim.Subscript(prim.Variable(name), idx or (0,))
    return read


def _emit_loop(kb: KernelBuilder, scan: Scan, outer: Scope, out_names: dict,
               readers: Mapping[Node, Callable[[tuple], Any]] | None = None
               ) -> tuple[list[Any], dict[int, str]]:
    """The instructions of *scan*'s time loop, run inside *outer*'s loops
    (none for a scan of the outer DAG; the enclosing time loops for a scan
    nested in a scan body, whose carries and body arrays are then reused
    by every step of the enclosing loops; the layer loop of a rolled
    chain), and its results' names. *readers* replaces the readers of
    some of its inputs (see :func:`_reader`)."""
    body = scan.body
    t = kb.parts.fresh("_ft_t")
    length = scan.length
    scan_plan = kb.plan.scans[scan]
    outer_reader = _reader(kb, outer, readers)
    bounded = (BlockBoundedLoop(kb, scan, scan_plan,
                                outer_reader(scan.offsets), t,
                                outer_reader(scan.order)
                                if scan_plan.sorted_rows else None)
               if scan_plan.block_bounded else None)
    element_at = (bounded.element_at if scan_plan.sorted_rows else None)
    if bounded is None:
        kb.parts.add_domain([t], [length])
    tvar = prim.Variable(t)
    around = outer.outer_inames
    inside = around + (t,)
    # keep the time loops nested in order
    kb.parts.priorities.extend((a, t) for a in around)
    nc, ns = scan.num_carries, scan.num_scanned
    carry_names = [kb.parts.fresh("_ft_carry") for _ in range(nc)]
    for name, init in zip(carry_names, scan.inits):
        kb.parts.global_temporary(name, (2,) + init.shape, init.dtype)

    body_plan = scan_plan.storage
    batch = scan_plan.batch
    single = scan_plan.single_item_groups
    local = Scope(body_plan, {}, {}, inside, "local", batch, single,
                  element_at)
    prologue_scope = Scope(outer.plan, outer.names, outer.params, around,
                           "local", batch, single, element_at)

    for k, name in enumerate(carry_names):
        local.params[k] = (lambda idx, name=name: prim.Subscript(
            prim.Variable(name), (_parity(tvar),) + idx))
    ragged = _ragged_rows(scan, outer_reader, tvar)
    for j, xs in enumerate(scan.scanned):
        read = outer_reader(xs)
        if ragged is not None and j < scan.num_ragged:
            local.params[nc + j] = ragged.reader(read)
        else:
            local.params[nc + j] = (lambda idx, read=read: read((tvar,) + idx))
    for c, captured in enumerate(scan.captured):
        local.params[nc + ns + c] = outer_reader(captured)

    insns: list[Any] = []
    pro_ids: set[str] = set()
    if bounded is not None:
        insns += bounded.instructions
        pro_ids |= bounded.instruction_ids
    for name, init in zip(carry_names, scan.inits):
        read = outer_reader(init)
        # (after the block's elements are loaded, where sorted)
        new = kb.emit_copy(read, name, init.shape, prologue_scope,
                           frozenset(pro_ids), (0,))
        insns += new
        pro_ids |= {i.id for i in new}
    pro_barrier = _local_barrier(kb, pro_ids, around, single)
    insns.append(pro_barrier)

    # the body, level by level, inside the time loop; a scan in the body
    # is one unit of a level (its loop has barriers of its own)
    body_level: dict[Node, int] = {}
    body_insns: dict[int, list[Any]] = defaultdict(list)
    for n in topological_order(list(body.outputs)):
        if isinstance(n, Scan):
            new, results = _emit_loop(kb, n, local, {})
            reads: set[Node] = set(n.inputs)
        elif isinstance(n, IndexLambda) and n in local.plan.stored:
            name = kb.storage_name(n)
            kb.parts.global_temporary(name, n.shape, n.dtype)
            if kb.plan.arrays[n].strategy in ("row_blocked_product",
                                              "one_item_product"):
                emit = _emit_row_blocked_cpu if single else _emit_row_blocked
                new, reads = emit(kb, n, name, local, n.expr)
            else:
                new, reads = kb.emit_store(n, name, local)
            results = {None: name}
        else:
            continue
        lev = 1 + max((body_level[r] for r in reads if r in body_level),
                      default=0)
        for k, name in results.items():
            done = n if k is None else LoopResult(n, k)
            body_level[done] = lev
            local.names[done] = name
        body_insns[lev].extend(new)
    barrier_id = pro_barrier.id
    step_ids: set[str] = set()
    for lev in sorted(body_insns):
        ids = set()
        for insn in body_insns[lev]:
            insn = insn.copy(depends_on=insn.depends_on | {barrier_id})
            insns.append(insn)
            ids.add(insn.id)
        step_ids |= ids
        barrier = _local_barrier(kb, ids, inside, single)
        insns.append(barrier)
        barrier_id = barrier.id
    # new carries (and the history for scan results)
    final_ids: set[str] = set()
    results = {}
    for k, (name, out) in enumerate(zip(carry_names, body.outputs)):
        src = _reader(kb, local)(out)
        destinations = [(name, (_parity(tvar + 1),))]
        if scan.keep_all:
            result_name = _scan_result_name(kb, scan, k, out_names)
            destinations.append((result_name, (tvar,) if ragged is None
                                 else ragged.packed_row))
            results[k] = result_name
        new = kb.emit_copies(src, destinations, out.shape, local,
                                frozenset({barrier_id}))
        insns += new
        final_ids |= {i.id for i in new}
    end_barrier = _local_barrier(kb, final_ids | step_ids, inside, single)
    insns.append(end_barrier)
    if not scan.keep_all:
        for k, (name, init) in enumerate(zip(carry_names, scan.inits)):
            result_name = _scan_result_name(kb, scan, k, out_names)
            def last(idx, name=name):
                slot = (_parity(length) if bounded is None
                        else bounded.last_slot(idx))
                return prim.Subscript(prim.Variable(name), (slot,) + idx)
            insns += kb.emit_copy(last, result_name, init.shape,
                                     prologue_scope,
                                     frozenset({end_barrier.id, pro_barrier.id}))
            results[k] = result_name
    return insns, results

def _scan_result_name(kb: KernelBuilder, scan: Scan, k: int, out_names: dict
                      ) -> str:
    result = LoopResult(scan, k)
    name = out_names.get(result)
    if name is None:
        name = kb.storage_name(result)
        kb.parts.global_temporary(name, result.shape, result.dtype)
    return name

def _local_barrier(kb: KernelBuilder, deps: set[str], inames: tuple,
                   single_item_groups: bool) -> Any:
    """A work-group barrier after *deps*; where every group of the scan
    is a single work item (row blocks on CPUs), program order already
    orders its accesses, and the barrier is only a point to depend on
    (barriers in loops cost PoCL's kernel compiler time)."""
    if single_item_groups:
        return lp.NoOpInstruction(
            id=kb.parts.fresh("_ft_lbarrier"), depends_on=frozenset(deps),
            within_inames=frozenset(inames), within_inames_is_final=True)
    return lp.BarrierInstruction(
        id=kb.parts.fresh("_ft_lbarrier"), synchronization_kind="local",
        mem_kind="global", depends_on=frozenset(deps),
        within_inames=frozenset(inames), within_inames_is_final=True)


def declare_scan_nosync(knl: lp.TranslationUnit, prefixes: list[str]
                         ) -> lp.TranslationUnit:
    """A scan runs in one work group, whose barriers order its accesses to
    global memory; loopy cannot know that, so declare the scan's
    instructions (including those that realizing its reductions creates)
    free of global synchronization among themselves."""
    knl = lp.preprocess_program(knl)
    entry = knl.default_entrypoint
    groups = {p: [i.id for i in entry.instructions if i.id.startswith(p)]
              for p in prefixes}
    new_insns = []
    for insn in entry.instructions:
        group = next((ids for p, ids in groups.items() if insn.id.startswith(p)),
                     None)
        if group is not None and not isinstance(insn, lp.BarrierInstruction):
            insn = insn.copy(no_sync_with=insn.no_sync_with | frozenset(
                (other, "global") for other in group if other != insn.id))
        new_insns.append(insn)
    return knl.with_kernel(entry.copy(instructions=new_insns))
