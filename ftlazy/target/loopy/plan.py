# SPDX-License-Identifier: MIT
"""Planning: how each stored array of a lowered DAG is computed.

:func:`plan_kernel` reads a :class:`~.profile.DeviceProfile` and decides,
for every stored array, its strategy (a plain loop nest, a flat vector
kernel, a split reduction, a register-blocked contraction, a scan and its
flavour), its vector width, its blocking and its work-group shape. The
result, a :class:`KernelPlan`, is plain data: users print it, tests assert
on it, and :mod:`.kernel` emits loopy statements from it without deciding
anything itself.

Every rule that depends on the device lives here. A strategy for a new
device is a new rule in this module plus its emitter.
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pymbolic.primitives as prim

from ftlazy import shapes as sh
from ftlazy.array import Array, IndexLambda, Placeholder
from ftlazy.fractal import BodyParam, LoopResult, Scan
from ftlazy.node import Node, topological_order
from ftlazy.scalar_expr import (
    Reduce, get_variable_names, index_var, iter_subexpressions)
from ftlazy.target.loopy.balance import block_bounded
from ftlazy.target.loopy.expressions import C_FUNCTIONS
from ftlazy.target.loopy.gpu_contractions import product_operands
from ftlazy.target.loopy.gpu_reductions import contiguous_reduction
from ftlazy.target.loopy.padding import (
    PADDED_BLOCK, padded_contraction, padding_bounds)
from ftlazy.target.loopy.profile import DeviceProfile
from ftlazy.target.loopy.ranged_lanes import laned_ranged_reduction
from ftlazy.target.loopy.ranges import data_dependent_range
from ftlazy.target.loopy.storage import (
    StoragePlan, cap_nest_cost, decide_storage, has_reduce,
    identity_read_bindings)
from ftlazy.target.loopy.vectorize import has_vector_calls, simd_safe


@dataclass(frozen=True)
class ArrayPlan:
    """How one stored array is computed.

    :attr strategy: ``"loop_nest"``, ``"flat_vector"``, ``"split_reduction"``,
        ``"blocked_contraction"``, ``"segment_reduction"`` (a reduction over
        a data-dependent range, see :mod:`.segments`), ``"segment_rows"``
        and ``"segment_element"`` (a FractalTensor element's packed rows, or
        its row of an array with one per element, one work item per
        element, see :mod:`.segment_fusion`), ``"group_reduction"`` (GPUs:
        a work group per output element, its items over the reduced axis,
        see :mod:`.gpu_reductions`), ``"tiled_contraction"`` (GPUs: a
        matrix product in local-memory tiles, see :mod:`.gpu_contractions`;
        ``block`` is ``(items, register block, k step)``),
        ``"padded_contraction"``
        (a register-blocked contraction over axes bounded by data, see
        :mod:`.padding`), ``"row_blocked_product"``
        (in a scan whose rows are independent), ``"one_item_product"`` (the
        same accumulation over all rows, in a whole-group scan one work
        item runs) or ``"empty"`` (statically empty: nothing runs).
    :attr local_size: work items per work group along the parallel axis.
    :attr l0_axis: the array axis whose consecutive indices go to
        consecutive work items (``l.0``); ``None`` when a work item computes
        a whole block (register-blocked contractions, CPU scan row blocks)
        or when :attr:`l0_reduction` says ``l.0`` is on the reduced axis.
    :attr vector_width: elements per vector in the innermost loop (1: scalar).
    :attr block: the register block of a contraction ``(rows, columns)``,
        the accumulators of a split reduction ``(lanes,)``, the private
        accumulator of a CPU segment reduction ``(elements,)``, the lanes of
        work items on ``l.1`` sharing a GPU segment reduction's rows
        ``(lanes,)``, or the rows per
        group (one-item products: all rows, one for a vector) and reduction
        unroll of a row-blocked product.
    """

    strategy: str
    shape: tuple
    dtype: np.dtype
    local_size: int
    l0_axis: int | None
    vector_width: int = 1
    block: tuple[int, ...] = ()
    #: consecutive work items read consecutive indices of the reduced axis
    l0_reduction: bool = False
    #: independent accumulators of each position's reduction over a range
    #: read from data (1: one chain; see :mod:`.ranged_lanes`)
    ranged_lanes: int = 1

    def __str__(self) -> str:
        l0 = (f"l.0 on axis {self.l0_axis}" if self.l0_axis is not None
              else "l.0 on the reduced axis" if self.l0_reduction
              else "l.0 on no axis")
        parts = [self.strategy, f"shape {_fmt_shape(self.shape)}",
                 f"{self.dtype}", f"local size {self.local_size}", l0]
        if self.vector_width > 1:
            parts.append(f"vectors of {self.vector_width}")
        if self.block:
            parts.append("block " + "x".join(map(str, self.block)))
        if self.ranged_lanes > 1:
            parts.append(f"ranged reduction in {self.ranged_lanes} lanes")
        return ", ".join(parts)


@dataclass(frozen=True)
class ScanPlan:
    """How a scan runs: always a sequential time loop in a kernel of its own.

    :attr flavour: ``"whole_group"`` (one work group runs the loop; body
        arrays spread over its work items, or on CPUs one work item runs it
        all) or ``"row_blocked"`` (the carries' rows evolve independently:
        each group runs the loop for its own block of rows, with no
        synchronization between groups).
    :attr rows: the carries' common row count (row-blocked scans).
    :attr rows_per_group: rows of each work group's block; the last
        group's block may be partial (see :attr:`partial_last_block`).
    :attr single_item_groups: groups are single work items (CPUs): program
        order replaces work-group barriers, and each item's loops over
        contiguous last axes vectorize (a whole-group scan's products then
        accumulate all their rows at once: ``"one_item_product"``).
    :attr block_bounded: each group's time loop stops at the longest
        element of its own block of rows (a row-blocked ragged scan, see
        :mod:`.balance`), not at the scan's length.
    :attr sorted_rows: the blocks take the elements by descending extent
        (the scan's :attr:`~ftlazy.fractal_tensor.RaggedScan.order`), not
        in element order, so that a block's elements run about as many
        steps as each other (see :mod:`.balance`).
    """

    length: Any
    flavour: str
    rows: Any = None
    rows_per_group: int = 1
    single_item_groups: bool = False
    block_bounded: bool = False
    sorted_rows: bool = False
    #: runs in the kernel of the scan before it, each group's after that
    #: scan's loop for the same rows (see :mod:`.scan_chains`)
    chained: bool = False
    #: the layers of the rolled chain it is part of (one scan's loop inside
    #: a loop over the layers, see :mod:`.scan_chains`), else 0
    rolled_layers: int = 0
    storage: StoragePlan = field(default_factory=StoragePlan, repr=False,
                                 compare=False)

    @property
    def batch(self) -> tuple | None:
        """``(rows, rows per group)`` of a row-blocked scan, else None."""
        return ((self.rows, self.rows_per_group)
                if self.flavour == "row_blocked" else None)

    @property
    def partial_last_block(self) -> bool:
        """Whether the row count may not be a multiple of the block: the
        emitters then guard the last group's rows."""
        return (self.flavour == "row_blocked"
                and partial_last_block(self.rows, self.rows_per_group))

    def __str__(self) -> str:
        text = f"scan over {self.length} steps, {self.flavour}"
        if self.flavour == "row_blocked":
            text += (f", {self.rows} rows in blocks of {self.rows_per_group}"
                     + (" (the last partial)" if self.partial_last_block else "")
                     + (", one work item per group" if self.single_item_groups
                        else "")
                     + (", each group's loop bounded by its block's longest "
                        "element" if self.block_bounded else "")
                     + (", elements blocked by descending length"
                        if self.sorted_rows else "")
                     + (", in one kernel after the scan before it, each "
                        "group after its own rows' loop there" if self.chained
                        else "")
                     + (f", the {self.rolled_layers} scans of its chain rolled "
                        "into one loop over the layers" if self.rolled_layers
                        else ""))
        elif self.single_item_groups:
            text += ", one work item"
        return text


@dataclass
class KernelPlan:
    """The plan of one translation unit (see the module docstring).

    :attr arrays: stored array (outer DAG or scan body) -> its plan.
    :attr scans: scan -> its plan.
    :attr vector_length: the common length of a flat vector kernel (every
        array one-dimensional of this length), else None.
    :attr vector_width: elements per vector of a flat vector kernel.
    :attr packs: packed argument name -> its members and their offsets.
    """

    profile: DeviceProfile
    storage: StoragePlan
    arrays: dict[Node, ArrayPlan] = field(default_factory=dict)
    scans: dict[Scan, ScanPlan] = field(default_factory=dict)
    vector_length: Any = None
    vector_width: int = 1
    packs: dict[str, list[tuple[Placeholder, int]]] = field(default_factory=dict)
    #: stored array -> its name in generated code, filled in by the emitter
    names: dict[Node, str] = field(default_factory=dict)
    #: stored arrays one work item per element computes in one kernel
    #: (CPU maps over FractalTensors, see :mod:`.segment_fusion`)
    segment_groups: list[Any] = field(default_factory=list)
    #: dense arrays one work item per row computes in one kernel (CPU
    #: reductions over rows and their elementwise readers, see
    #: :mod:`.row_fusion`)
    row_groups: list[Any] = field(default_factory=list)
    #: scan -> the chain of scans run in one kernel that it is part of
    #: (see :mod:`.scan_chains`)
    scan_chains: dict[Scan, tuple[Scan, ...]] = field(default_factory=dict)
    #: chain -> how its scans differ, where they are copies of one scan
    #: over layers (emitted as one loop, see :mod:`.scan_chains`)
    rolled_chains: dict[tuple[Scan, ...], Any] = field(default_factory=dict)

    def __str__(self) -> str:
        lines = [f"plan for {self.profile.kind} ({self.profile.description})"]
        if self.vector_length is not None:
            lines.append(f"  flat vector kernel over {self.vector_length} "
                         f"elements, vectors of {self.vector_width}")
        for pack, members in self.packs.items():
            lines.append(f"  {pack}: {len(members)} small inputs packed")
        for node, scan_plan in self.scans.items():
            lines.append(f"  {self.names.get(node, 'scan')}: {scan_plan}")
        for node, array_plan in self.arrays.items():
            lines.append(f"  {self.names.get(node, '?')}: {array_plan}")
        for group in self.fused_groups():
            lines.append("  fused: " + group.describe(self.names))
        return "\n".join(lines)

    def fused_groups(self) -> list[Any]:
        """The segment groups and row groups: each is emitted as one kernel
        with one work item per element or row."""
        return self.segment_groups + self.row_groups

    def strategies(self) -> dict[str, str]:
        """Array name -> strategy, for tests and people."""
        return {self.names.get(n, "?"): p.strategy for n, p in self.arrays.items()}


def _fmt_shape(shape: tuple) -> str:
    inner = ", ".join(str(s) for s in shape)
    return f"({inner},)" if len(shape) == 1 else f"({inner})"


# {{{ rules

def local_size(profile: DeviceProfile, shape: tuple, cheap: bool,
               parallel: str = "global") -> int:
    """Work items per group along axis 0 of a loop nest over *shape*
    (*cheap*: the elements are not reductions; *parallel*: ``"local"`` in a
    scan's single group)."""
    if parallel == "local":
        return profile.scan_local_size
    if profile.kind != "cpu":
        return profile.gpu_local_size
    # PoCL vectorizes cheap one-dimensional work across a group's items;
    # rows, and elements that are reductions, run best one per item
    return (profile.flat_local_size if len(shape) == 1 and cheap
            else profile.row_local_size)


def called_builtins(expr: Any) -> frozenset[str]:
    """The OpenCL builtins a body calls (by their OpenCL names)."""
    return frozenset(C_FUNCTIONS.get(e.function.name, e.function.name)
                     for e in iter_subexpressions(expr)
                     if isinstance(e, prim.Call))


def blockable_contraction(node: IndexLambda, profile: DeviceProfile
                          ) -> tuple[Any, int, int] | None:
    """The reduction and register block if *node* is a 2-D sum over one index
    (``out[i, j] = sum_k f(i, j, k)``) with a reduction long enough to pay
    for blocking, its columns concrete and block-divisible, and its rows
    either concrete and block-divisible or symbolic (a jagged batch's
    tokens: the last row block is then partial, see
    :func:`partial_last_block`)."""
    expr = node.expr
    if (node.ndim != 2 or not isinstance(expr, Reduce) or expr.op != "sum"
            or len(expr.bounds) != 1 or has_reduce(expr.inner)):
        return None
    ni, nj = node.shape
    kext = expr.bounds[0][2]
    if not (isinstance(nj, int) and isinstance(kext, int)):
        return None
    rows, cols = profile.matmul_block
    if nj % cols or kext < 16:
        return None
    if isinstance(ni, int) and (ni % rows or ni * nj < 4096):
        return None
    if not _reuses_operands(expr):
        return None
    return expr, rows, cols


def _reuses_operands(reduction: Reduce) -> bool:
    """Whether some array read of *reduction*'s summand ignores the row
    index and some the column index (``a[i, k] * b[k, j]``): only then does
    a register block reuse the elements it loads."""
    reads = [e for e in iter_subexpressions(reduction.inner)
             if isinstance(e, prim.Subscript)]
    names = [set().union(*(get_variable_names(i) for i in r.index_tuple))
             for r in reads]
    return (any("_0" not in n for n in names)
            and any("_1" not in n for n in names))


def splittable_reduction(node: IndexLambda, profile: DeviceProfile) -> Any:
    """The reduction if *node* is ``op_r f(..., r)`` over one concrete axis
    that splits evenly into the profile's reduction lanes."""
    expr = node.expr
    lanes = profile.reduction_lanes
    if (node.ndim == 0 or not isinstance(expr, Reduce)
            or expr.op not in ("sum", "product", "max", "min")
            or len(expr.bounds) != 1 or has_reduce(expr.inner)
            or node.dtype.kind not in "iuf"):
        return None
    kext = expr.bounds[0][2]
    if not isinstance(kext, int) or kext % lanes or kext < 8 * lanes:
        return None
    return expr


def segment_reduction(node: IndexLambda, profile: DeviceProfile,
                      storage: StoragePlan) -> Any:
    """The reduction if *node* is ``op_{r in range(i)} f(i, k..., r)`` over
    one variable whose range depends on data (a segment reduction, see
    :mod:`.ranges`) and on the row ``i`` only, with no other reduction and
    no private statement inlined; on CPUs the trailing axes must be
    concrete and fit a private accumulator."""
    expr = node.expr
    if (node.ndim == 0 or not isinstance(expr, Reduce) or len(expr.bounds) != 1
            or expr.op not in ("sum", "product", "max", "min")
            or node.dtype.kind not in "iuf" or has_reduce(expr.inner)):
        return None
    found = data_dependent_range(expr, node.bindings)
    if found is None:
        return None
    (rng,) = found[1].values()
    trailing = {f"_{d}" for d in range(1, node.ndim)}
    if any(get_variable_names(b) & trailing for b in rng.lower + rng.upper):
        return None
    if inlines_private(node, storage):
        return None
    if profile.kind == "cpu":
        rest = node.shape[1:]
        if not all(isinstance(d, int) for d in rest) or (
                int(np.prod(rest)) > profile.max_private_accumulator):
            return None
    elif node.ndim < 2:
        return None  # a plain loop nest puts l.0 on the rows
    return found[0]


def segment_vector_width(node: IndexLambda, profile: DeviceProfile,
                         storage: StoragePlan) -> int:
    """Vector width for the math calls of a CPU segment reduction's step
    (computed lane by lane on a private vector over its contiguous last
    axis, as in :func:`row_vector_width`), 1 for none."""
    if node.dtype.kind != "f" or node.ndim < 2:
        return 1
    reduction, _ = data_dependent_range(node.expr, node.bindings)
    bodies = [reduction.inner] + [n.expr for n in inlined_nodes(node, storage)[1:]]
    if any(n.dtype != node.dtype for n in inlined_nodes(node, storage)[1:]):
        return 1
    if not any(has_vector_calls(b) for b in bodies) or not all(
            has_vector_calls(b) or not called_builtins(b) for b in bodies):
        return 1
    builtins = frozenset().union(*(called_builtins(b) for b in bodies))
    width = profile.vector_width(node.dtype, builtins)
    last = node.shape[-1]
    if width == 1 or not isinstance(last, int) or last % width:
        return 1
    return width


def inlined_nodes(node: IndexLambda, storage: StoragePlan) -> list[IndexLambda]:
    """*node* (first) and the arrays inlined into its loop nest."""
    found: list[IndexLambda] = []
    seen: set[Node] = set()
    stack: list[Node] = [node]
    while stack:
        n = stack.pop()
        if n in seen or not isinstance(n, IndexLambda):
            continue
        seen.add(n)
        found.append(n)
        stack.extend(b for b in n.bindings.values() if b not in storage.stored)
    return found


def inlines_private(node: IndexLambda, storage: StoragePlan) -> bool:
    """Whether a private statement is inlined into *node*'s loop nest (the
    strategies that build their own nests cannot place one)."""
    return any(n in storage.private for n in inlined_nodes(node, storage)[1:])


def inlined_builtins(node: IndexLambda, storage: StoragePlan) -> frozenset[str]:
    """The builtins *node*'s loop nest calls: its own and those of the arrays
    inlined into it."""
    return frozenset().union(*(called_builtins(n.expr)
                               for n in inlined_nodes(node, storage)))


def row_vector_width(node: IndexLambda, profile: DeviceProfile,
                     storage: StoragePlan, bounded: bool = False) -> int:
    """Vector width for the math calls of a CPU row loop (its contiguous last
    axis computes calls lane by lane on a private vector), 1 for none.
    *bounded*: a last axis bounded by data (:mod:`.padding`) may have any
    length (the lanes past its bound repeat its last element)."""
    if profile.kind != "cpu" or node.dtype.kind != "f" or not node.shape:
        return 1
    inlined = inlined_nodes(node, storage)
    if any(n in storage.private for n in inlined[1:]):
        return 1  # private statements: the lanes would need vectors too
    # every inlined body must qualify (calls of the loop nest's dtype, no
    # casts or reductions), and one must call a builtin
    if not any(has_vector_calls(n.expr) for n in inlined) or not all(
            n.dtype == node.dtype and (has_vector_calls(n.expr)
                                       or not called_builtins(n.expr))
            and not has_reduce(n.expr) for n in inlined):
        return 1
    width = profile.vector_width(node.dtype, inlined_builtins(node, storage))
    last = node.shape[-1]
    padding = padding_bounds(node) if bounded else None
    if padding is not None and node.ndim - 1 in padding[1]:
        return width
    if width == 1 or not isinstance(last, int) or last % width:
        return 1
    return width


def flat_vector_plan(order: list[Node], storage: StoragePlan,
                     outputs: dict[str, Array], profile: DeviceProfile
                     ) -> tuple[Any, int]:
    """``(n, width)`` if the kernel is elementwise over ``(n,)`` with n a
    concrete multiple of a vector width the device runs every builtin of the
    kernel at, else ``(None, 1)``."""
    if profile.kind != "cpu":
        return None, 1
    if (len(storage.private) > profile.vector_max_private_statements
            and not storage.repeating_chains):
        return None, 1  # see DeviceProfile.vector_max_private_statements
    lengths = set()
    builtins: set[str] = set()
    dtypes: set[np.dtype] = set()
    for n in order:
        if isinstance(n, (Scan, LoopResult, BodyParam)):
            return None, 1
        if isinstance(n, Placeholder):
            if n.ndim == 1:
                if n.dtype.kind != "f":
                    return None, 1
                lengths.add(n.shape[0])
                dtypes.add(n.dtype)
            elif n.ndim > 1:
                return None, 1
            continue
        if not isinstance(n, IndexLambda):
            continue
        if n.ndim != 1 or n.dtype.kind != "f" or not simd_safe(n.expr):
            return None, 1
        lengths.add(n.shape[0])
        dtypes.add(n.dtype)
        builtins |= called_builtins(n.expr)
        ident = identity_read_bindings(n)
        if any(b.ndim and name not in ident for name, b in n.bindings.items()):
            return None, 1
    if len(lengths) != 1:
        return None, 1
    (length,) = lengths
    width = min((profile.vector_width(d, builtins) for d in dtypes), default=1)
    if (width == 1 or not isinstance(length, int) or length % width
            or length < profile.vector_min_length):
        return None, 1
    stored = [n for n in order if n in storage.stored]
    if len(stored) != len(set(outputs.values())):
        return None, 1  # temporaries would need vector views too
    return length, width


def plan_packing(placeholders: list[Placeholder], profile: DeviceProfile
                 ) -> dict[str, list[tuple[Placeholder, int]]]:
    """Packed argument name -> its members and their offsets (see
    :attr:`DeviceProfile.pack_max_size`)."""
    small: dict[np.dtype, list[Placeholder]] = defaultdict(list)
    for ph in placeholders:
        if all(isinstance(d, int) for d in ph.shape) and (
                int(np.prod(ph.shape)) <= profile.pack_max_size):
            small[ph.dtype].append(ph)
    packs = {}
    for dtype, members in small.items():
        if len(members) < profile.pack_min_count:
            continue
        offset, entries = 0, []
        for ph in members:
            entries.append((ph, offset))
            offset += int(np.prod(ph.shape))
        packs[f"_ft_pack_{dtype.name}"] = entries
    return packs


def independent_rows(scan: Scan, storage: StoragePlan,
                     profile: DeviceProfile) -> tuple | None:
    """``(rows, rows per work group)`` if the scan's carries share a leading
    axis whose rows evolve independently (a batch): every body array that
    depends on a carry, and every stored body array, has that leading axis
    and is read only at the reader's own row ``_0``. Then work groups can
    each run the time loop for their own rows with no synchronization
    between groups."""
    inits = scan.inits
    if not inits or any(a.ndim == 0 for a in inits):
        return None
    rows = inits[0].shape[0]
    if not all(sh.prove_equal(a.shape[0], rows) for a in inits):
        return None
    body = scan.body
    order = topological_order(list(body.outputs))
    tracked: set[Node] = set(body.params[:scan.num_carries])
    for n in order:
        if isinstance(n, IndexLambda) and (
                n in storage.stored
                or any(b in tracked for b in n.bindings.values())):
            tracked.add(n)
    for n in order:
        if not isinstance(n, IndexLambda):
            continue
        if n in tracked and (n.ndim == 0 or not sh.prove_equal(n.shape[0], rows)):
            return None
        for e in _subexpressions(n.expr):
            if isinstance(e, prim.Variable) and n.bindings.get(e.name) in tracked:
                return None
            if (isinstance(e, prim.Subscript)
                    and n.bindings[e.aggregate.name] in tracked
                    and e.index_tuple[0] != index_var(0)):
                return None
    products = any(isinstance(n, IndexLambda) and n in storage.stored
                   and isinstance(n.expr, Reduce) for n in order)
    return rows, rows_per_group(rows, profile, products)


def rows_per_group(rows: Any, profile: DeviceProfile,
                   products: bool = True) -> int:
    """Rows of each work group's block in a row-blocked scan: enough groups
    for the compute units first, then enough rows to reuse each weight
    loaded (a block's product reads a weight row once for all its rows). A
    concrete row count takes the first
    :attr:`~.profile.DeviceProfile.scan_rows_per_group` that divides it and
    leaves a group for each compute unit (at least two). Where the body has
    *products* (stored reductions) to reuse weights in, an indivisible count
    takes the first that leaves as many, and a symbolic one (a jagged
    batch's sequences) the first, the last group's block partial; without,
    or where no choice leaves enough groups, one row per group. (On an
    H100's 132 SMs, W6's 32 rows in blocks of 8, 4, 2 and 1 took 5.59,
    2.79, 1.76 and 1.39 ms: a group's step is serial work.)"""
    choices = profile.scan_rows_per_group
    if not isinstance(rows, int):
        return choices[0] if choices and products else 1
    groups = max(2, profile.compute_units)
    return next((p for p in choices if rows % p == 0 and rows >= groups * p),
                next((p for p in choices if rows >= groups * p and products),
                     1))


def partial_last_block(rows: Any, per_group: int) -> bool:
    """Whether the last group of a row-blocked scan with blocks of
    *per_group* rows may hold fewer (its rows are then guarded)."""
    if per_group == 1:
        return False
    try:
        sh.exact_divide(sh.to_affine(rows), per_group, "rows")
    except sh.NonAffineError:
        return True
    return False


def _subexpressions(expr: Any) -> list[Any]:
    """Every sub-expression of *expr*, variables and index tuples included."""
    result, stack = [], [expr]
    while stack:
        e = stack.pop()
        result.append(e)
        if isinstance(e, prim.Subscript):
            stack.extend(e.index_tuple)
        elif isinstance(e, prim.ExpressionNode) and not isinstance(e, prim.Variable):
            for f in dataclasses.fields(e):
                value = getattr(e, f.name)
                stack.extend(v for v in (value if isinstance(value, tuple)
                                         else (value,))
                             if isinstance(v, prim.ExpressionNode))
    return result


def row_blockable(node: IndexLambda, scan_plan: ScanPlan,
                  profile: DeviceProfile) -> tuple[Any, int] | None:
    """The reduction and the accumulator's rows if *node* is
    ``sum_k f(b, j, k)`` over rows ``b`` of a row-blocked scan, with a
    concrete number of columns (a private accumulator's size), or, in a whole-group scan one work item runs,
    ``sum_k f(j, k)`` or ``sum_k f(b, j, k)`` over concrete rows (the
    item's accumulator holds them all)."""
    expr = node.expr
    if scan_plan.flavour == "row_blocked" and node.ndim == 2:
        rows = scan_plan.rows_per_group
        if rows == 1:
            return None  # no weight to reuse across rows
    elif (scan_plan.flavour == "whole_group" and scan_plan.single_item_groups
          and node.ndim in (1, 2)):
        rows = node.shape[0] if node.ndim == 2 else 1
    else:
        return None
    ncols = node.shape[-1]
    if (not isinstance(expr, Reduce) or expr.op != "sum"
            or len(expr.bounds) != 1 or has_reduce(expr.inner)
            or not isinstance(rows, int) or not isinstance(ncols, int)
            or ncols * rows > profile.max_private_accumulator):
        return None
    return expr, rows

# }}}


# {{{ planning

def _plan_array(node: IndexLambda, profile: DeviceProfile, storage: StoragePlan,
                scan_plan: ScanPlan | None) -> ArrayPlan:
    if 0 in node.shape:
        return ArrayPlan("empty", node.shape, node.dtype, 1, None)
    if scan_plan is not None:
        blocked = row_blockable(node, scan_plan, profile)
        if blocked is not None:
            rows = blocked[1]
            if profile.kind == "cpu":
                kext = node.expr.bounds[0][2]
                unroll = (profile.scan_k_unroll if isinstance(kext, int)
                          and kext % profile.scan_k_unroll == 0 else 1)
                strategy = ("row_blocked_product" if scan_plan.batch
                            else "one_item_product")
                return ArrayPlan(strategy, node.shape, node.dtype,
                                 1, None, 1, (rows, unroll))
            size = (min(profile.scan_local_size, node.shape[1])
                    if isinstance(node.shape[1], int) else profile.scan_local_size)
            return ArrayPlan("row_blocked_product", node.shape, node.dtype,
                             size, 1, 1, (rows, 1))
        cheap = not has_reduce(node.expr)
        if scan_plan.flavour == "row_blocked" or scan_plan.single_item_groups:
            gpu_columns = not scan_plan.single_item_groups and node.ndim > 1
            last = node.shape[-1] if node.shape else 1
            columns = (min(profile.scan_local_size, last) if isinstance(last, int)
                       else profile.scan_local_size)
            return ArrayPlan("loop_nest", node.shape, node.dtype,
                             max(columns, 1) if gpu_columns else 1,
                             node.ndim - 1 if gpu_columns else None,
                             row_vector_width(node, profile, scan_plan.storage))
        return ArrayPlan("loop_nest", node.shape, node.dtype,
                         local_size(profile, node.shape, cheap, "local"),
                         0 if node.shape else None,
                         row_vector_width(node, profile, scan_plan.storage))
    if (segment_reduction(node, profile, storage) is not None
            and not _scalar_rows_in_lanes(node, profile)):
        if profile.kind == "cpu":
            # one work item per row, its columns a private accumulator
            return ArrayPlan("segment_reduction", node.shape, node.dtype,
                             local_size(profile, node.shape, False), 0,
                             segment_vector_width(node, profile, storage),
                             (int(np.prod(node.shape[1:])),))
        last = node.shape[-1]
        size = (min(profile.gpu_local_size, last) if isinstance(last, int)
                else profile.gpu_local_size)
        # (two axes only: around a loop over a middle axis or over column
        # blocks, the lanes' barriers would sit inside a loop, which
        # devices whose probe failed such kernels build unoptimized)
        lanes = (min(profile.gpu_segment_row_lanes, profile.gpu_local_size // size)
                 if node.ndim == 2 and isinstance(last, int) and last <= size
                 and laned_ranged_reduction(node) is not None else 1)
        return ArrayPlan("segment_reduction", node.shape, node.dtype, size,
                         node.ndim - 1, block=(lanes,) if lanes > 1 else ())
    if profile.kind == "cpu" and padded_contraction(node, storage) is not None:
        return ArrayPlan("padded_contraction", node.shape, node.dtype,
                         local_size(profile, node.shape, False), 0, 1,
                         (*PADDED_BLOCK, profile.vector_width(node.dtype)))
    if (profile.kind == "gpu" and product_operands(node) is not None
            and not inlines_private(node, storage)):
        items = profile.gpu_matmul_items
        return ArrayPlan("tiled_contraction", node.shape, node.dtype,
                         items * items, node.ndim - 1, 1,
                         (items, profile.gpu_matmul_block, items))
    blocked = blockable_contraction(node, profile)
    if blocked is not None:
        return ArrayPlan("blocked_contraction", node.shape, node.dtype, 1, None,
                         1, blocked[1:])
    cheap = not has_reduce(node.expr)
    if group_reduction(node, profile, storage):
        extent = node.expr.bounds[0][2]
        size = (min(profile.gpu_local_size, extent) if isinstance(extent, int)
                else profile.gpu_local_size)
        return ArrayPlan("group_reduction", node.shape, node.dtype, size, None,
                         l0_reduction=True)
    if splittable_reduction(node, profile) is not None:
        return ArrayPlan("split_reduction", node.shape, node.dtype,
                         local_size(profile, node.shape, False), 0, 1,
                         (profile.reduction_lanes,))
    axis = coalesced_axis(node, profile)
    if axis is not None:
        extent = node.shape[axis]
        size = (min(profile.gpu_local_size, extent) if isinstance(extent, int)
                else profile.gpu_local_size)
        return ArrayPlan("loop_nest", node.shape, node.dtype, size, axis)
    width = row_vector_width(node, profile, storage, bounded=True)
    return ArrayPlan("loop_nest", node.shape, node.dtype,
                     local_size(profile, node.shape, cheap),
                     0 if node.shape else None, width,
                     ranged_lanes=(profile.reduction_lanes
                                   if profile.kind == "cpu" and width == 1
                                   and laned_ranged_reduction(node) is not None
                                   else 1))


def _scalar_rows_in_lanes(node: IndexLambda, profile: DeviceProfile) -> bool:
    """Whether a CPU segment reduction of one value per row runs as a loop
    nest with its range in lanes instead (a private accumulator of one
    column would be one dependent chain)."""
    return (profile.kind == "cpu" and int(np.prod(node.shape[1:])) == 1
            and laned_ranged_reduction(node) is not None)


def group_reduction(node: IndexLambda, profile: DeviceProfile,
                    storage: StoragePlan) -> bool:
    """Whether *node* is a GPU work-group reduction over a contiguous axis
    (:func:`.gpu_reductions.contiguous_reduction`) with no private
    statement inlined into it."""
    if profile.kind != "gpu" or contiguous_reduction(node) is None:
        return False
    return not inlines_private(node, storage)


#: on GPUs, a last axis at least this long goes on ``l.0`` (a warp's width:
#: shorter rows read by neighbouring work items are already dense)
MIN_COALESCED_LAST_AXIS = 32


def last_axis_not_one(shape: tuple) -> int:
    """The last axis of *shape* whose extent is not 1 (axis 0 where all
    are): the one a coalesced GPU nest puts on ``l.0``."""
    axis = len(shape) - 1
    while axis > 0 and isinstance(shape[axis], int) and shape[axis] == 1:
        axis -= 1
    return axis


def coalesced_axis(node: IndexLambda, profile: DeviceProfile) -> int | None:
    """The axis a GPU loop nest over *node* puts on ``l.0`` (consecutive
    work items at consecutive addresses), the two axes before it on ``g.1``
    and ``g.2``: the last axis whose extent is not 1 (a ``keepdims``
    reduction's ``(n, m, 1)`` is coalesced on ``m``), for arrays of two or
    more axes where that is not axis 0 and is symbolic or at least
    :data:`MIN_COALESCED_LAST_AXIS` long; else None. An array bounded by
    data (:mod:`.padding`, attention's ``(L, L)`` scores) spans its whole
    padded box, each statement guarded by the element's extents
    (``KernelBuilder._padding_guards``): a work item per element, as CPU
    plans run it, left 32 work items of an H200 doing all of J7's
    attention (1.7 s)."""
    if profile.kind != "gpu" or node.ndim < 2:
        return None
    axis = last_axis_not_one(node.shape)
    extent = node.shape[axis]
    if axis == 0 or (isinstance(extent, int) and extent < MIN_COALESCED_LAST_AXIS):
        return None
    return axis


def vector_math_storage(roots: list[Node], storage: StoragePlan,
                        profile: DeviceProfile) -> StoragePlan:
    """*storage* with its private statements stored instead, where that
    lets a CPU row loop that calls math builtins run them on vectors (a row
    loop with private statements computes its calls lane by lane, see
    :func:`row_vector_width`), else *storage*. For scan bodies of
    row-blocked scans: the stored statement is a row block in cache, and a
    private statement two arrays read is then computed once, not twice."""
    if profile.kind != "cpu" or not storage.private:
        return storage
    trial = StoragePlan(stored=storage.stored | storage.private, private=set(),
                        repeating_chains=False)
    order = topological_order(list(roots))
    nests = [n for n in order if isinstance(n, IndexLambda)
             and n in trial.stored and n.shape]
    if not any(row_vector_width(n, profile, trial) > 1
               and row_vector_width(n, profile, storage) == 1
               and n not in storage.private for n in nests):
        return storage
    return trial


def plan_scan(scan: Scan, profile: DeviceProfile, nested: bool = False
              ) -> ScanPlan:
    """The flavour of *scan* (see :class:`ScanPlan`). A scan *nested* in a
    scan body, and one whose body holds a scan, run in one work group."""
    storage = decide_storage(list(scan.body.outputs))
    # on CPUs one work item runs a whole-group scan: barriers cost more
    # than the parallelism of one step gains, and its loops vectorize
    whole_group = ScanPlan(scan.length, "whole_group",
                           single_item_groups=profile.kind == "cpu",
                           storage=storage)
    if nested or any(isinstance(n, Scan)
                     for n in topological_order(list(scan.body.outputs))):
        return whole_group
    batch = independent_rows(scan, storage, profile)
    if batch is None:
        return whole_group
    vector_storage = vector_math_storage(list(scan.body.outputs), storage,
                                         profile)
    if (vector_storage is not storage
            and independent_rows(scan, vector_storage, profile) == batch):
        storage = vector_storage
    bounded = block_bounded(scan, "row_blocked", batch[0], nested)
    return ScanPlan(scan.length, "row_blocked", batch[0], batch[1],
                    profile.kind == "cpu", bounded,
                    sorted_rows=(bounded and batch[1] > 1
                                 and profile.sort_ragged_rows
                                 and scan.order is not None),
                    storage=storage)


def _plan_scan_nest(plan: KernelPlan, scan: Scan, profile: DeviceProfile,
                    nested: bool = False) -> None:
    """Plans of *scan*, its body's stored arrays and the scans nested in it."""
    scan_plan = plan_scan(scan, profile, nested)
    plan.scans[scan] = scan_plan
    for b in topological_order(list(scan.body.outputs)):
        if isinstance(b, Scan):
            _plan_scan_nest(plan, b, profile, nested=True)
        elif isinstance(b, IndexLambda) and b in scan_plan.storage.stored:
            plan.arrays[b] = _plan_array(b, profile, scan_plan.storage,
                                         scan_plan)


def plan_kernel(outputs: dict[str, Array], profile: DeviceProfile,
                order: list[Node] | None = None, fuse_segments: bool = True
                ) -> KernelPlan:
    """The plan for the lowered DAG of *outputs* on a device of *profile*
    (*fuse_segments*: group the arrays of maps over FractalTensors per
    element, see :mod:`.segment_fusion`, and reductions over dense rows
    with their readers per row, see :mod:`.row_fusion`)."""
    order = order if order is not None else topological_order(list(outputs.values()))
    gpu = profile.kind == "gpu"
    storage = decide_storage(
        list(outputs.values()), order, mixed_steps=gpu,
        recompute_limit=profile.gpu_recompute_cost_limit if gpu else 0)
    if profile.kind == "gpu":
        storage = cap_nest_cost(storage, order, profile.gpu_max_nest_cost)
    placeholders = [n for n in order if isinstance(n, Placeholder)]
    length, width = flat_vector_plan(order, storage, outputs, profile)
    plan = KernelPlan(profile, storage, vector_length=length, vector_width=width,
                      packs=plan_packing(placeholders, profile))
    for n in order:
        if isinstance(n, Scan):
            _plan_scan_nest(plan, n, profile)
        elif isinstance(n, IndexLambda) and n in storage.stored:
            if length is not None:
                plan.arrays[n] = ArrayPlan(
                    "flat_vector", n.shape, n.dtype, profile.flat_local_size, 0,
                    width)
            else:
                plan.arrays[n] = _plan_array(n, profile, storage, None)
    from ftlazy.target.loopy.scan_chains import plan_scan_chains
    plan_scan_chains(plan, order, set(outputs.values()))
    if profile.kind == "cpu" and length is None and fuse_segments:
        from ftlazy.target.loopy.row_fusion import plan_row_groups
        from ftlazy.target.loopy.segment_fusion import plan_segment_groups
        plan_segment_groups(plan, order, set(outputs.values()))
        plan_row_groups(plan, order, set(outputs.values()))
    return plan

# }}}
