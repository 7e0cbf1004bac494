# SPDX-License-Identifier: MIT
"""From a lowered DAG (IndexLambdas over placeholders and size params, plus
Scans) to one loopy translation unit.

* Every stored array (see :mod:`.storage`) becomes an assignment in its own
  loop nest, with its readers' inlined bodies substituted in.
* Stored arrays are grouped into segments by dependency level and grid
  shape; a global barrier between segments lets loopy split them into OpenCL
  kernels, all launched by one executor call.
* A :class:`~ftlazy.fractal.Scan` becomes a sequential loop over its length
  in a kernel of its own, run by one work group: the carries live in a
  two-slot global buffer (read slot ``t % 2``, write slot ``(t+1) % 2``), the
  body's stored arrays are computed inside the loop with work-group barriers
  between dependency levels and at the end of each step. Loop priorities pin
  the time loop outermost.
* Inames are created pre-split and tagged for the device in a single
  ``tag_inames`` call.
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any, Callable

import islpy as isl
import loopy as lp
import numpy as np
import pymbolic.primitives as prim
from loopy.symbolic import Reduction

from ftlazy import shapes as sh
from ftlazy.array import Array, IndexLambda, Placeholder, SizeParam
from ftlazy.fractal import BodyParam, LoopResult, Scan
from ftlazy.node import Node, topological_order
from ftlazy.scalar_expr import Reduce, index_var
from ftlazy.tags import Named, PrefixNamed
from ftlazy.target.loopy.expressions import (
    C_FUNCTIONS, Translator, register_builtins, storage_dtype)
from ftlazy.target.loopy.storage import (
    StoragePlan, decide_storage, has_reduce, identity_read_bindings)
from ftlazy.target.loopy.vectorize import VECTOR_WIDTH, simd_safe, vector_view

#: work-group size for the axis a scan body parallelizes over
SCAN_LOCAL_SIZE = 256
#: work items per work group along axis 0 outside scans, on CPUs and GPUs
CPU_LOCAL_SIZE = 2
GPU_LOCAL_SIZE = 64
#: work items per work group for one-dimensional arrays on CPUs (PoCL
#: vectorizes across the work items of a group)
CPU_FLAT_LOCAL_SIZE = 64


@dataclass(frozen=True)
class ArgSpec:
    """A kernel argument as the host sees it."""

    name: str
    shape: tuple
    dtype: np.dtype


@dataclass
class _Scope:
    """Where an array is being computed: the outer DAG or a scan body."""

    plan: StoragePlan
    names: dict[Node, str]
    #: BodyParam index -> reader of that parameter at an index tuple
    params: dict[int, Callable[[tuple], Any]] = field(default_factory=dict)
    #: inames every instruction of the scope lies in (the time loop)
    outer_inames: tuple[str, ...] = ()
    #: 'global' (work groups) or 'local' (one work group)
    parallel: str = "global"
    #: in a scan whose rows are independent: (row count, rows per group);
    #: each work group then runs the time loop for its own rows
    batch: tuple | None = None


@dataclass
class _StoreContext:
    """Per stored array: its inames, the arrays it reads, private statements."""

    scope: _Scope
    inames: list[str]
    index: tuple
    #: the shape the loop nest spans (None: not a plain loop nest)
    shape: tuple | None = None
    reads: set = field(default_factory=set)
    deps: set = field(default_factory=set)
    privates: dict = field(default_factory=dict)
    pending: list = field(default_factory=list)


class KernelBuilder:
    """Builds the loopy kernel for a canonical, lowered DAG."""

    def __init__(self, outputs: dict[str, Array], device_kind: str = "cpu") -> None:
        self.outputs = outputs
        self.device_kind = device_kind
        self.order = topological_order(list(outputs.values()))
        _check_dtypes(self.order)
        self.domains: list[str] = []
        self.instructions: list[tuple[float, Any]] = []
        self.temporaries: dict[str, Any] = {}
        self.iname_tags: dict[str, str] = {}
        self.priorities: list[tuple[str, str]] = []
        self.scan_prefixes: list[str] = []
        self.vector_length: int | None = None
        #: arguments passed as (n / VECTOR_WIDTH, VECTOR_WIDTH) views
        self.vector_args: list[str] = []
        self.level: dict[Node, float] = {}
        self.params: set[str] = set()
        self._counter = 0

    # {{{ names and domains

    def _fresh(self, prefix: str) -> str:
        self._counter += 1
        return f"{prefix}{self._counter}"

    def _add_domain(self, inames: list[str], bounds: list[Any]) -> None:
        if not inames:
            return
        params: set[str] = set()
        for b in bounds:
            params |= sh.size_param_names(b)
        self.params |= params
        conds = " and ".join(
            f"0 <= {i} < {sh.to_affine(b).to_isl()}" for i, b in zip(inames, bounds))
        self.domains.append(
            f"[{', '.join(sorted(params))}] -> {{ [{', '.join(inames)}]: {conds} }}")

    def _add_split_domain(self, outer: str, inner: str, size: int, bound: Any) -> None:
        params = sorted(sh.size_param_names(bound))
        self.params |= set(params)
        self.domains.append(
            f"[{', '.join(params)}] -> {{ [{outer}, {inner}]: 0 <= {inner} < {size}"
            f" and 0 <= {size}*{outer} + {inner} < {sh.to_affine(bound).to_isl()} }}")

    def _fresh_reduction_iname(self, upper: Any) -> str:
        name = self._fresh("_ft_r")
        self._add_domain([name], [upper])
        return name

    def _storage_name(self, n: Array) -> str:
        for t in n.tags:
            if isinstance(t, (Named, PrefixNamed)):
                chosen = t.name if isinstance(t, Named) else t.prefix
                if chosen in OPENCL_RESERVED or chosen.startswith(("get_", "atomic_")):
                    raise ValueError(
                        f"{type(t).__name__}({chosen!r}): {chosen!r} is an OpenCL C "
                        "keyword, type or builtin and cannot name an array")
            if isinstance(t, Named):
                if t.name in self.temporaries:
                    raise ValueError(f"two arrays are tagged Named({t.name!r})")
                return t.name
            if isinstance(t, PrefixNamed):
                return self._fresh(t.prefix + "_")
        return self._fresh("_ft_t")

    def _global_temporary(self, name: str, shape: tuple, dtype: np.dtype) -> None:
        self.temporaries[name] = lp.TemporaryVariable(
            name, storage_dtype(dtype), shape=tuple(shape) or (1,),
            address_space=lp.AddressSpace.GLOBAL)

    # }}}

    # {{{ expressions

    def _read(self, node: Array, index: tuple, ctx: _StoreContext) -> Any:
        scope = ctx.scope
        if isinstance(node, SizeParam):
            return prim.Variable(node.name)
        if isinstance(node, BodyParam):
            return scope.params[node.index](index)
        if node in self.packed:
            return self._packed_read(node, index)
        if node in scope.names:
            ctx.reads.add(node)
            ref = prim.Subscript(prim.Variable(scope.names[node]), index or (0,))
            # (only when the array spans the loop nest: else the read may be
            # guarded by a condition the hoisted load would escape)
            if (index and index == ctx.index and ctx.shape is not None
                    and self.vector_length is None
                    and sh.shapes_equal(node.shape, ctx.shape)):
                return self._load_once(node, ref, ctx)
            return ref
        if node in scope.plan.private:
            return self._private(node, ctx)
        if isinstance(node, IndexLambda):
            return self._translate(node, index, ctx)
        raise AssertionError(f"unexpected node in code generation: {node!r}")

    def _packed_read(self, node: Placeholder, index: tuple) -> Any:
        pack, offset = self.packed[node]
        flat: Any = offset
        stride = 1
        for extent, idx in reversed(list(zip(node.shape, index))):
            flat = flat + idx * stride if stride != 1 else flat + idx
            stride *= extent
        return prim.Subscript(prim.Variable(pack), (flat,))

    def _translate(self, node: IndexLambda, index: tuple, ctx: _StoreContext) -> Any:
        index_map = {f"_{i}": idx for i, idx in enumerate(index)}
        translator = Translator(index_map, node.bindings,
                                lambda b, idx: self._read(b, idx, ctx),
                                self._fresh_reduction_iname)
        return translator(node.expr)

    def _load_once(self, node: Array, ref: Any, ctx: _StoreContext) -> Any:
        """An element read at the loop nest's own index, loaded into a
        private variable once per loop nest (keeps long chains that read one
        array many times short in the source)."""
        key = ("load", node)
        if key not in ctx.privates:
            self._private_statement(key, "_ft_v", node.dtype, ref, set(), ctx)
        name, insn_id = ctx.privates[key]
        ctx.deps.add(insn_id)
        return prim.Variable(name)

    def _private_statement(self, key: Any, prefix: str, dtype: np.dtype,
                           expr: Any, deps: set[str], ctx: _StoreContext) -> str:
        """``private = expr`` in the loop nest of *ctx*, remembered under
        *key*; returns the statement's id."""
        name = self._fresh(prefix)
        insn_id = name + "_insn"
        self.temporaries[name] = lp.TemporaryVariable(
            name, storage_dtype(dtype), shape=(),
            address_space=lp.AddressSpace.PRIVATE)
        ctx.pending.append(lp.Assignment(
            prim.Variable(name), expr, id=insn_id,
            within_inames=frozenset(ctx.scope.outer_inames) | frozenset(ctx.inames),
            within_inames_is_final=True, depends_on=frozenset(deps)))
        ctx.privates[key] = (name, insn_id)
        return insn_id

    def _reachable_privates(self, node: IndexLambda, scope: _Scope
                            ) -> list[IndexLambda]:
        """Private statements *node* inlines, in post-order (iterative)."""
        order: list[IndexLambda] = []
        seen: set[Node] = set()
        stack: list[tuple[Node, bool]] = [(node, False)]
        while stack:
            n, done = stack.pop()
            if done:
                if n in scope.plan.private:
                    order.append(n)
                continue
            if n in seen:
                continue
            seen.add(n)
            stack.append((n, True))
            for b in n.bindings.values():
                if (isinstance(b, IndexLambda) and b not in scope.names
                        and b not in seen):
                    stack.append((b, False))
        return order

    def _private(self, node: IndexLambda, ctx: _StoreContext) -> Any:
        if node in ctx.privates:
            name, insn_id = ctx.privates[node]
            ctx.deps.add(insn_id)
            return prim.Variable(name)
        outer_deps, ctx.deps = ctx.deps, set()
        expr = self._translate(node, ctx.index, ctx)
        insn_id = self._private_statement(node, "_ft_p", node.dtype, expr,
                                          ctx.deps, ctx)
        ctx.deps = outer_deps | {insn_id}
        return prim.Variable(ctx.privates[node][0])

    # }}}

    # {{{ loop nests

    def _loop_nest(self, shape: tuple, scope: _Scope, cheap: bool = True
                   ) -> tuple[list[str], tuple]:
        """Inames over *shape* and the index expressions of its axes.

        Every loop nest of a kernel must use the same hardware axes, so axis 0
        is always split into a work-group part and a work-item part: for the
        outer DAG ``(g.0, l.0)``, in a scan (one work group)
        ``(sequential, l.0)``. On CPUs work groups are small and each work
        item runs the contiguous last axis as a sequential loop that the
        compiler vectorizes; cheap one-dimensional arrays get larger groups
        (*cheap*: elements are not reductions). A 0-d
        array gets extent-1 hardware inames, so one work item computes it.
        """
        local = scope.parallel == "local"
        size = self._local_size(shape, scope, cheap)
        inames: list[str] = []
        index: list[Any] = []
        if scope.batch is not None:
            return self._batched_loop_nest(shape, scope)
        if not shape:
            group, item = self._fresh("_ft_z"), self._fresh("_ft_z")
            self._add_domain([group, item], [1, 1])
            self.iname_tags[item] = "l.0"
            if local:
                self.priorities.extend((t, group) for t in scope.outer_inames)
            else:
                self.iname_tags[group] = "g.0"
            return [group, item], ()
        if self.vector_length is not None and not local:
            group, item, lane = (self._fresh(p) for p in ("_ft_o", "_ft_l", "_ft_v"))
            groups = shape[0] // VECTOR_WIDTH
            self.domains.append(
                f"{{ [{group}, {item}, {lane}]: 0 <= {item} < {size} and "
                f"0 <= {lane} < {VECTOR_WIDTH} and "
                f"0 <= {size}*{group} + {item} < {groups} }}")
            self.iname_tags.update({group: "g.0", item: "l.0", lane: "vec"})
            flat = ((prim.Variable(group) * size + prim.Variable(item)) * VECTOR_WIDTH
                    + prim.Variable(lane))
            return [group, item, lane], (flat,)
        for d, extent in enumerate(shape):
            if d == 0:
                if isinstance(extent, int):
                    size = max(1, min(size, extent))
                outer, inner = self._fresh("_ft_o"), self._fresh("_ft_l")
                self._add_split_domain(outer, inner, size, extent)
                inames += [outer, inner]
                index.append(prim.Variable(outer) * size + prim.Variable(inner))
                self.iname_tags[inner] = "l.0"
                if local:
                    self.priorities.extend((t, outer) for t in scope.outer_inames)
                else:
                    self.iname_tags[outer] = "g.0"
            else:
                name = self._fresh(f"_ft_i{d}_")
                self._add_domain([name], [extent])
                inames.append(name)
                index.append(prim.Variable(name))
                self.priorities.extend((t, name) for t in scope.outer_inames)
        return inames, tuple(index)

    def _emit_row_blocked_cpu(self, node: IndexLambda, name: str, scope: _Scope,
                              reduction: Any) -> tuple[list[Any], set[Node]]:
        """``out[b, j] = sum_k f(b, j, k)`` in a row-partitioned scan on a CPU:
        the group's single work item keeps a ``rows x columns`` accumulator
        and runs ``for k: for row: for j: acc[row, j] += f(row, j, k)``, whose
        contiguous innermost loop the OpenCL compiler vectorizes, and which
        reads each weight row once per group and step."""
        rows, per_group = scope.batch
        (rname, _, kext), = reduction.bounds
        ncols = node.shape[1]
        group, item, k = (self._fresh(p) for p in ("_ft_bg", "_ft_z", "_ft_k"))
        self._add_domain([group], [sh.exact_divide(sh.to_affine(rows), per_group,
                                                   "rows").to_expr()])
        self._add_domain([item], [1])
        self._add_domain([k], [kext])
        self.iname_tags[group] = "g.0"
        self.iname_tags[item] = "l.0"
        loops = {}
        for role in ("init", "update", "store"):
            r, j = self._fresh("_ft_rr"), self._fresh("_ft_jj")
            self._add_domain([r, j], [per_group, ncols])
            loops[role] = (r, j)
            self.priorities.extend((t, r) for t in scope.outer_inames)
            self.priorities.append((r, j))
        self.priorities.extend([(t, k) for t in scope.outer_inames]
                               + [(k, loops["update"][0])])

        def row(role):
            return prim.Variable(group) * per_group + prim.Variable(loops[role][0])

        def at(role):
            return prim.Subscript(prim.Variable(acc), tuple(
                prim.Variable(v) for v in loops[role]))
        col = {role: prim.Variable(loops[role][1]) for role in loops}
        ctx = _StoreContext(scope, [group, item], (row("update"), col["update"]))
        translator = Translator({"_0": row("update"), "_1": col["update"],
                                 rname: prim.Variable(k)},
                                node.bindings, lambda b, idx: self._read(b, idx, ctx),
                                self._fresh_reduction_iname)
        term = translator(reduction.inner)
        acc = self._fresh("_ft_acc")
        self.temporaries[acc] = lp.TemporaryVariable(
            acc, storage_dtype(node.dtype), shape=(per_group, ncols),
            address_space=lp.AddressSpace.PRIVATE)
        base = frozenset(scope.outer_inames) | {group, item}
        init_id, upd_id = self._fresh(name + "_init"), self._fresh(name + "_upd")
        insns = [
            lp.Assignment(at("init"), node.dtype.type(0), id=init_id,
                          within_inames=base | set(loops["init"]),
                          within_inames_is_final=True),
            lp.Assignment(at("update"), at("update") + term, id=upd_id,
                          within_inames=base | {k, *loops["update"]},
                          within_inames_is_final=True,
                          depends_on=frozenset(ctx.deps) | {init_id}),
            lp.Assignment(prim.Subscript(prim.Variable(name),
                                         (row("store"), col["store"])),
                          at("store"), id=self._fresh(name + "_store"),
                          within_inames=base | set(loops["store"]),
                          within_inames_is_final=True,
                          depends_on=frozenset({upd_id}))]
        return ctx.pending + insns, ctx.reads

    def _emit_row_blocked(self, node: IndexLambda, name: str, scope: _Scope,
                          reduction: Any) -> tuple[list[Any], set[Node]]:
        """``out[b, j] = sum_k f(b, j, k)`` in a row-partitioned scan: each
        work item (a column ``j``) accumulates its group's rows in private
        memory inside the ``k`` loop, so each loaded ``f`` operand that does
        not depend on the row (a weight) is read once per group and step."""
        rows, per_group = scope.batch
        (rname, _, kext), = reduction.bounds
        ncols = node.shape[1]
        group = self._fresh("_ft_bg")
        self._add_domain([group], [sh.exact_divide(sh.to_affine(rows), per_group,
                                                   "rows").to_expr()])
        self.iname_tags[group] = "g.0"
        size = (min(SCAN_LOCAL_SIZE, ncols) if isinstance(ncols, int)
                else SCAN_LOCAL_SIZE)
        jo, jl = self._fresh("_ft_o"), self._fresh("_ft_l")
        self._add_split_domain(jo, jl, size, ncols)
        self.iname_tags[jl] = "l.0"
        k = self._fresh("_ft_k")
        self._add_domain([k], [kext])
        lanes = {}
        for role in ("init", "update", "store"):
            lanes[role] = self._fresh("_ft_rr")
            self._add_domain([lanes[role]], [per_group])
            self.iname_tags[lanes[role]] = "ilp" if role == "update" else "unr"
        t_inames = scope.outer_inames
        self.priorities.extend([(t, jo) for t in t_inames] + [(t, k) for t in t_inames]
                               + [(jo, k), (k, lanes["update"])])
        col = prim.Variable(jo) * size + prim.Variable(jl)

        def row(role):
            return prim.Variable(group) * per_group + prim.Variable(lanes[role])

        ctx = _StoreContext(scope, [group, jo, jl], (row("update"), col))
        translator = Translator({"_0": row("update"), "_1": col,
                                 rname: prim.Variable(k)},
                                node.bindings, lambda b, idx: self._read(b, idx, ctx),
                                self._fresh_reduction_iname)
        term = translator(reduction.inner)
        acc = self._fresh("_ft_acc")
        self.temporaries[acc] = lp.TemporaryVariable(
            acc, storage_dtype(node.dtype), shape=(per_group,),
            address_space=lp.AddressSpace.PRIVATE)

        def at(role):
            return prim.Subscript(prim.Variable(acc), (prim.Variable(lanes[role]),))
        base = frozenset(t_inames) | {group, jo, jl}
        init_id, upd_id = self._fresh(name + "_init"), self._fresh(name + "_upd")
        insns = [
            lp.Assignment(at("init"), node.dtype.type(0), id=init_id,
                          within_inames=base | {lanes["init"]},
                          within_inames_is_final=True),
            lp.Assignment(at("update"), at("update") + term, id=upd_id,
                          within_inames=base | {k, lanes["update"]},
                          within_inames_is_final=True,
                          depends_on=frozenset(ctx.deps) | {init_id}),
            lp.Assignment(prim.Subscript(prim.Variable(name), (row("store"), col)),
                          at("store"), id=self._fresh(name + "_store"),
                          within_inames=base | {lanes["store"]},
                          within_inames_is_final=True,
                          depends_on=frozenset({upd_id}))]
        return ctx.pending + insns, ctx.reads

    def _batched_loop_nest(self, shape: tuple, scope: _Scope
                           ) -> tuple[list[str], tuple]:
        """A loop nest in a row-partitioned scan: axis 0 (the rows) splits
        into the work group (g.0) and a sequential loop over its rows; the
        last axis is spread over the group's work items (l.0)."""
        rows, per_group = scope.batch
        group, row = self._fresh("_ft_bg"), self._fresh("_ft_br")
        self._add_split_domain(group, row, per_group, rows)
        self.iname_tags[group] = "g.0"
        inames = [group, row]
        index: list[Any] = [prim.Variable(group) * per_group + prim.Variable(row)]
        sequential = [row]
        cpu = self.device_kind == "cpu"
        for d, extent in enumerate(shape[1:], start=1):
            if d == len(shape) - 1 and not cpu:
                size = (min(SCAN_LOCAL_SIZE, extent) if isinstance(extent, int)
                        else SCAN_LOCAL_SIZE)
                outer, inner = self._fresh("_ft_o"), self._fresh("_ft_l")
                self._add_split_domain(outer, inner, max(size, 1), extent)
                self.iname_tags[inner] = "l.0"
                inames += [outer, inner]
                index.append(prim.Variable(outer) * max(size, 1)
                             + prim.Variable(inner))
                sequential.append(outer)
            else:
                name = self._fresh(f"_ft_i{d}_")
                self._add_domain([name], [extent])
                inames.append(name)
                index.append(prim.Variable(name))
                sequential.append(name)
        if len(shape) == 1 or cpu:
            # one work item per group on CPUs: its contiguous loops vectorize
            item = self._fresh("_ft_z")
            self._add_domain([item], [1])
            self.iname_tags[item] = "l.0"
            inames.append(item)
        self.priorities.extend((t, i) for t in scope.outer_inames for i in sequential)
        return inames, tuple(index)

    def _vector_length(self, plan: StoragePlan, placeholders: list) -> int | None:
        """The common length n if the kernel is elementwise over (n,) with n
        divisible by the vector width (see :mod:`.vectorize`), else None."""
        if self.device_kind != "cpu" or plan.private:
            return None
        lengths = set()
        for n in self.order:
            if isinstance(n, (Scan, LoopResult, BodyParam)):
                return None
            if isinstance(n, Placeholder):
                if n.ndim == 1:
                    if n.dtype.kind != "f":
                        return None
                    lengths.add(n.shape[0])
                elif n.ndim > 1:
                    return None
                continue
            if not isinstance(n, IndexLambda):
                continue
            if n.ndim != 1 or n.dtype.kind != "f" or not simd_safe(n.expr):
                return None
            lengths.add(n.shape[0])
            ident = identity_read_bindings(n)
            if any(b.ndim and name not in ident for name, b in n.bindings.items()):
                return None
        if len(lengths) != 1:
            return None
        (length,) = lengths
        if not isinstance(length, int) or length % VECTOR_WIDTH or length < 4096:
            return None
        stored = [n for n in self.order if n in plan.stored]
        if len(stored) != len(set(self.outputs.values())):
            return None  # temporaries would need vector views too
        return length

    def _local_size(self, shape: tuple, scope: _Scope, cheap: bool) -> int:
        """Work items per group along axis 0 (see :meth:`_loop_nest`)."""
        if scope.parallel == "local":
            return SCAN_LOCAL_SIZE
        if self.device_kind != "cpu":
            return GPU_LOCAL_SIZE
        # PoCL vectorizes cheap one-dimensional work across a group's items;
        # rows, and elements that are reductions, run best one per item
        return CPU_FLAT_LOCAL_SIZE if len(shape) == 1 and cheap else CPU_LOCAL_SIZE

    def _grid_key(self, node: IndexLambda, scope: _Scope) -> str:
        """Arrays can share one kernel's grid when their work groups have the
        same size and axis 0 has the same symbolic extent (for concrete
        extents loopy takes the maximum)."""
        size = self._local_size(node.shape, scope, not has_reduce(node.expr))
        shape = node.shape
        if not shape or isinstance(shape[0], int):
            return str(size)
        return f"{size}:{shape[0]}"

    def _emit_store(self, node: IndexLambda, name: str, scope: _Scope,
                    extra_deps: frozenset = frozenset(), index_prefix: tuple = ()
                    ) -> tuple[list[Any], set[Node]]:
        """Assignments computing *node* into array *name* (whose leading
        indices are *index_prefix*); returns them and the stored arrays read."""
        inames, index = self._loop_nest(node.shape, scope,
                                        cheap=not has_reduce(node.expr))
        ctx = _StoreContext(scope, inames, index, node.shape)
        # private statements first, children before users, so that
        # translating one never recurses into the next (deep chains)
        for private in self._reachable_privates(node, scope):
            self._private(private, ctx)
        expr = self._translate(node, index, ctx)
        lhs_index = index_prefix + index
        lhs = prim.Subscript(prim.Variable(name), lhs_index or (0,))
        ctx.pending.append(lp.Assignment(
            lhs, expr, id=self._fresh(name + "_store"),
            within_inames=frozenset(scope.outer_inames) | frozenset(inames),
            within_inames_is_final=True,
            depends_on=frozenset(ctx.deps) | extra_deps))
        return ctx.pending, ctx.reads

    def _emit_blocked_contraction(self, node: IndexLambda, name: str,
                                  scope: _Scope, reduction: Any, ti: int, tj: int
                                  ) -> tuple[list[Any], set[Node]]:
        """``out[i, j] = sum_k f(i, j, k)`` (a matrix product) with register
        blocking: each work item accumulates a ``ti x tj`` block of outputs in
        private memory over a sequential ``k`` loop, so each loaded operand
        element is reused ``ti`` or ``tj`` times."""
        (rname, _, kext), = reduction.bounds
        ni, nj = node.shape
        io, jo, k = (self._fresh(p) for p in ("_ft_bi", "_ft_bj", "_ft_bk"))
        self._add_domain([io, jo], [ni // ti, nj // tj])
        self._add_domain([k], [kext])
        blocks = {}
        for role in ("init", "update", "store"):
            ii, jj = self._fresh("_ft_ii"), self._fresh("_ft_jj")
            self._add_domain([ii, jj], [ti, tj])
            self.iname_tags[ii] = "ilp"
            self.iname_tags[jj] = "ilp"
            blocks[role] = (ii, jj)
        self.iname_tags[io] = "g.1"
        self.iname_tags[jo] = "g.0"
        ii, jj = blocks["update"]
        self.priorities.extend([(k, ii), (k, jj), (ii, jj)])

        def rows_cols(role):
            bi, bj = blocks[role]
            return (prim.Variable(io) * ti + prim.Variable(bi),
                    prim.Variable(jo) * tj + prim.Variable(bj))

        ctx = _StoreContext(scope, [io, jo], rows_cols("update"))
        row, col = rows_cols("update")
        translator = Translator({"_0": row, "_1": col, rname: prim.Variable(k)},
                                node.bindings, lambda b, idx: self._read(b, idx, ctx),
                                self._fresh_reduction_iname)
        term = translator(reduction.inner)
        acc = self._fresh("_ft_acc")
        self.temporaries[acc] = lp.TemporaryVariable(
            acc, storage_dtype(node.dtype), shape=(ti, tj),
            address_space=lp.AddressSpace.PRIVATE)

        def acc_at(role):
            return prim.Subscript(prim.Variable(acc), tuple(
                prim.Variable(v) for v in blocks[role]))
        init_id, update_id = self._fresh(name + "_init"), self._fresh(name + "_upd")
        insns = [
            lp.Assignment(acc_at("init"), node.dtype.type(0), id=init_id,
                          within_inames=frozenset([io, jo, *blocks["init"]]),
                          within_inames_is_final=True),
            lp.Assignment(acc_at("update"), acc_at("update") + term, id=update_id,
                          within_inames=frozenset([io, jo, k, *blocks["update"]]),
                          within_inames_is_final=True,
                          depends_on=frozenset(ctx.deps) | {init_id}),
            lp.Assignment(prim.Subscript(prim.Variable(name), rows_cols("store")),
                          acc_at("store"), id=self._fresh(name + "_store"),
                          within_inames=frozenset([io, jo, *blocks["store"]]),
                          within_inames_is_final=True,
                          depends_on=frozenset({update_id}))]
        return ctx.pending + insns, ctx.reads

    def _emit_split_reduction(self, node: IndexLambda, name: str, scope: _Scope,
                              reduction: Any) -> tuple[list[Any], set[Node]]:
        """``out[...] = op_r f(..., r)`` with :data:`REDUCTION_LANES`
        independent private accumulators (lane ``v`` takes ``r = 8*ro + v``),
        combined at the end: one dependent chain of adds is latency-bound,
        several keep a core's floating-point units and memory busy."""
        (rname, _, kext), = reduction.bounds
        lanes = REDUCTION_LANES
        inames, index = self._loop_nest(node.shape, scope, cheap=False)
        ctx = _StoreContext(scope, inames, index, node.shape)
        ro = self._fresh("_ft_ro")
        self._add_domain([ro], [kext // lanes])
        lane = {}
        for role in ("init", "update", "final"):
            lane[role] = self._fresh("_ft_lane")
            self._add_domain([lane[role]], [lanes])
        self.iname_tags[lane["init"]] = "unr"
        self.iname_tags[lane["update"]] = "ilp"
        self.priorities.append((ro, lane["update"]))
        position = prim.Variable(ro) * lanes + prim.Variable(lane["update"])
        index_map = {f"_{i}": idx for i, idx in enumerate(index)}
        index_map[rname] = position
        translator = Translator(index_map, node.bindings,
                                lambda b, idx: self._read(b, idx, ctx),
                                self._fresh_reduction_iname)
        term = translator(reduction.inner)
        dtype = storage_dtype(node.dtype)
        acc = self._fresh("_ft_acc")
        self.temporaries[acc] = lp.TemporaryVariable(
            acc, dtype, shape=(lanes,), address_space=lp.AddressSpace.PRIVATE)

        def at(role):
            return prim.Subscript(prim.Variable(acc), (prim.Variable(lane[role]),))
        combine = {"sum": lambda a, b: a + b, "product": lambda a, b: a * b,
                   "max": lambda a, b: prim.Max((a, b)),
                   "min": lambda a, b: prim.Min((a, b))}[reduction.op]
        from ftlazy.target.loopy.lowering import neutral_element
        outer = frozenset(scope.outer_inames) | frozenset(inames)
        init_id, upd_id = self._fresh(name + "_init"), self._fresh(name + "_upd")
        insns = [
            lp.Assignment(at("init"), neutral_element(reduction.op, node.dtype),
                          id=init_id, within_inames=outer | {lane["init"]},
                          within_inames_is_final=True),
            lp.Assignment(at("update"), combine(at("update"), term), id=upd_id,
                          within_inames=outer | {ro, lane["update"]},
                          within_inames_is_final=True,
                          depends_on=frozenset(ctx.deps) | {init_id}),
            lp.Assignment(prim.Subscript(prim.Variable(name), index or (0,)),
                          Reduction(reduction.op, (lane["final"],), at("final")),
                          id=self._fresh(name + "_store"), within_inames=outer,
                          within_inames_is_final=True,
                          depends_on=frozenset({upd_id}))]
        return ctx.pending + insns, ctx.reads

    def _emit_copy(self, src: Callable[[tuple], Any], dst: str, shape: tuple,
                   scope: _Scope, deps: frozenset, dst_prefix: tuple = ()
                   ) -> list[Any]:
        inames, index = self._loop_nest(shape, scope)
        return [lp.Assignment(
            prim.Subscript(prim.Variable(dst), (dst_prefix + index) or (0,)),
            src(index), id=self._fresh(dst + "_copy"),
            within_inames=frozenset(scope.outer_inames) | frozenset(inames),
            within_inames_is_final=True,
            depends_on=deps)]

    # }}}

    def build(self) -> tuple[lp.TranslationUnit, list[ArgSpec], list[ArgSpec]]:
        """The translation unit, its input and its output arguments.
        :attr:`packs` then tells which inputs travel packed in one argument."""
        roots = list(self.outputs.values())
        plan = decide_storage(roots, self.order)
        scope = _Scope(plan, {})
        inputs: list[ArgSpec] = []
        placeholders = [n for n in self.order if isinstance(n, Placeholder)]
        self.packs = _plan_packing(placeholders)
        self.packed = {ph: (pack, offset) for pack, members in self.packs.items()
                       for ph, offset in members}
        for pack, members in self.packs.items():
            size = sum(int(np.prod(ph.shape)) for ph, _ in members)
            inputs.append(ArgSpec(pack, (size,), members[0][0].dtype))
        for n in self.order:
            if isinstance(n, Placeholder):
                self.level[n] = 0
                if n not in self.packed:
                    scope.names[n] = n.name
                    inputs.append(ArgSpec(n.name, n.shape, n.dtype))
            elif isinstance(n, SizeParam):
                self.params.add(n.name)
        self.vector_length = self._vector_length(plan, placeholders)
        out_names = {a: name for name, a in reversed(list(self.outputs.items()))}
        outputs = [ArgSpec(name, a.shape, a.dtype) for name, a in self.outputs.items()]
        for n in self.order:
            if isinstance(n, Scan):
                self._emit_scan(n, scope, out_names)
            elif isinstance(n, IndexLambda) and n in plan.stored:
                name = out_names.get(n) or self._storage_name(n)
                if n not in out_names:
                    self._global_temporary(name, n.shape, n.dtype)
                if 0 in n.shape:  # statically empty: nothing to compute
                    scope.names[n] = name
                    self.level[n] = 0
                    continue
                blocked = _blockable_contraction(n)
                split = _splittable_reduction(n) if blocked is None else None
                if split is not None:
                    insns, reads = self._emit_split_reduction(n, name, scope, split)
                    grid_key = self._grid_key(n, scope)
                elif blocked is not None:
                    insns, reads = self._emit_blocked_contraction(
                        n, name, scope, *blocked)
                    grid_key = f"~{name}"  # a kernel of its own
                else:
                    insns, reads = self._emit_store(n, name, scope)
                    grid_key = self._grid_key(n, scope)
                self.level[n] = 1 + max((self.level[r] for r in reads), default=0)
                scope.names[n] = name
                segment = (self.level[n], grid_key)
                self.instructions.extend((segment, i) for i in insns)
            elif isinstance(n, LoopResult):
                self.level[n] = self.level[n.loop]
        self._add_barriers()
        return self._make_kernel(inputs, outputs), inputs, outputs

    # {{{ scans

    def _emit_scan(self, scan: Scan, outer: _Scope, out_names: dict) -> None:
        body = scan.body
        if any(isinstance(n, (Scan, LoopResult))
               for n in topological_order(list(body.outputs))):
            raise NotImplementedError("code generation for a scan nested in a "
                                      "scan body is not supported yet")
        t = self._fresh("_ft_t")
        length = scan.length
        self._add_domain([t], [length])
        tvar = prim.Variable(t)
        # the scan runs in a kernel of its own: a level no other array shares
        level = 1 + max((self.level[a] for a in scan.inputs
                         if a in self.level), default=0) + 0.5
        nc, ns = scan.num_carries, scan.num_scanned
        carry_names = [self._fresh("_ft_carry") for _ in range(nc)]
        for name, init in zip(carry_names, scan.inits):
            self._global_temporary(name, (2,) + init.shape, init.dtype)

        body_plan = decide_storage(list(body.outputs))
        batch = _independent_rows(scan, body_plan)
        local = _Scope(body_plan, {}, {}, (t,), "local", batch)
        prologue_scope = _Scope(outer.plan, outer.names, {}, (), "local", batch)

        def outer_reader(a: Array) -> Callable[[tuple], Any]:
            if isinstance(a, SizeParam):
                return lambda idx: prim.Variable(a.name)
            if a in self.packed:
                return lambda idx: self._packed_read(a, idx)
            name = outer.names[a]
            return lambda idx: prim.Subscript(prim.Variable(name), idx or (0,))

        for k, name in enumerate(carry_names):
            local.params[k] = (lambda idx, name=name: prim.Subscript(
                prim.Variable(name), (prim.Remainder(tvar, 2),) + idx))
        for j, xs in enumerate(scan.scanned):
            read = outer_reader(xs)
            local.params[nc + j] = (lambda idx, read=read: read((tvar,) + idx))
        for c, captured in enumerate(scan.captured):
            local.params[nc + ns + c] = outer_reader(captured)

        insns: list[Any] = []
        pro_ids: set[str] = set()
        for name, init in zip(carry_names, scan.inits):
            read = outer_reader(init)
            new = self._emit_copy(read, name, init.shape, prologue_scope,
                                  frozenset(), (0,))
            insns += new
            pro_ids |= {i.id for i in new}
        pro_barrier = self._local_barrier(pro_ids, ())
        insns.append(pro_barrier)

        # the body, level by level, inside the time loop
        body_level: dict[Node, int] = {}
        stored = [n for n in topological_order(list(body.outputs))
                  if isinstance(n, IndexLambda) and n in local.plan.stored]
        body_insns: dict[int, list[Any]] = defaultdict(list)
        for n in stored:
            name = self._storage_name(n)
            self._global_temporary(name, n.shape, n.dtype)
            reduction = (_row_blockable(n, batch) if batch is not None else None)
            if reduction is not None and self.device_kind == "cpu":
                new, reads = self._emit_row_blocked_cpu(n, name, local, reduction)
            elif reduction is not None:
                new, reads = self._emit_row_blocked(n, name, local, reduction)
            else:
                new, reads = self._emit_store(n, name, local)
            lev = 1 + max((body_level[r] for r in reads if r in body_level),
                          default=0)
            body_level[n] = lev
            local.names[n] = name
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
            barrier = self._local_barrier(ids, (t,))
            insns.append(barrier)
            barrier_id = barrier.id
        # new carries (and the history for scan results)
        final_ids: set[str] = set()
        results = {}
        for k, (name, out) in enumerate(zip(carry_names, body.outputs)):
            src_name = local.names[out]

            def src(idx, src_name=src_name):
                return prim.Subscript(prim.Variable(src_name), idx or (0,))
            new = self._emit_copy(src, name, out.shape, local,
                                  frozenset({barrier_id}),
                                  (prim.Remainder(tvar + 1, 2),))
            if scan.keep_all:
                result_name = self._scan_result_name(scan, k, out_names)
                new += self._emit_copy(src, result_name, out.shape, local,
                                       frozenset({barrier_id}), (tvar,))
                results[k] = result_name
            insns += new
            final_ids |= {i.id for i in new}
        end_barrier = self._local_barrier(final_ids | step_ids, (t,))
        insns.append(end_barrier)
        if not scan.keep_all:
            for k, (name, init) in enumerate(zip(carry_names, scan.inits)):
                result_name = self._scan_result_name(scan, k, out_names)
                parity = prim.Remainder(length, 2)

                def src(idx, name=name, parity=parity):
                    return prim.Subscript(prim.Variable(name), (parity,) + idx)
                insns += self._emit_copy(src, result_name, init.shape,
                                         prologue_scope,
                                         frozenset({end_barrier.id, pro_barrier.id}))
                results[k] = result_name
        # mark the group (by id prefix) for _declare_scan_nosync
        prefix = self._fresh("_ft_scan") + "_"
        self.scan_prefixes.append(prefix)
        renames = {i.id: prefix + i.id for i in insns}
        insns = [i.copy(id=renames[i.id], depends_on=frozenset(
            renames.get(d, d) for d in i.depends_on)) for i in insns]
        self.instructions.extend(((level, prefix), i) for i in insns)
        self.level[scan] = level
        for k, name in results.items():
            outer.names[LoopResult(scan, k)] = name

    def _scan_result_name(self, scan: Scan, k: int, out_names: dict) -> str:
        result = LoopResult(scan, k)
        name = out_names.get(result)
        if name is None:
            name = self._storage_name(result)
            self._global_temporary(name, result.shape, result.dtype)
        return name

    def _local_barrier(self, deps: set[str], inames: tuple) -> Any:
        return lp.BarrierInstruction(
            id=self._fresh("_ft_lbarrier"), synchronization_kind="local",
            mem_kind="global", depends_on=frozenset(deps),
            within_inames=frozenset(inames), within_inames_is_final=True)

    # }}}

    def _add_barriers(self) -> None:
        """Order the kernel segments (dependency level, then grid shape) and
        put a global barrier between consecutive ones: loopy makes each
        segment an OpenCL kernel, whose grid must not depend on two
        different symbolic extents."""
        segments = sorted({seg for seg, _ in self.instructions})
        barrier_before: dict[Any, str] = {}
        previous_barrier = None
        for prev, seg in zip(segments, segments[1:]):
            deps = {i.id for sg, i in self.instructions if sg == prev}
            if previous_barrier:
                deps.add(previous_barrier)
            bid = self._fresh("_ft_gbarrier")
            barrier_before[seg] = previous_barrier = bid
            self.instructions.append((seg, lp.BarrierInstruction(
                id=bid, synchronization_kind="global",
                depends_on=frozenset(deps), within_inames=frozenset(),
                within_inames_is_final=True)))
        result = []
        for seg, insn in self.instructions:
            if seg in barrier_before and insn.id != barrier_before[seg]:
                insn = insn.copy(depends_on=insn.depends_on | {barrier_before[seg]})
            result.append(insn)
        self.final_instructions = result

    def _make_kernel(self, inputs: list[ArgSpec], outputs: list[ArgSpec]
                     ) -> lp.TranslationUnit:
        args: list[Any] = []
        for a in inputs:
            args.append(lp.GlobalArg(a.name, storage_dtype(a.dtype),
                                     shape=tuple(a.shape) or (1,), is_input=True,
                                     is_output=False))
        for a in outputs:
            args.append(lp.GlobalArg(a.name, storage_dtype(a.dtype),
                                     shape=tuple(a.shape) or (1,), is_input=False,
                                     is_output=True))
        for p in sorted(self.params):
            args.append(lp.ValueArg(p, np.int64))
        args.extend(self.temporaries.values())
        domains = [isl.BasicSet(d) for d in self.domains] or ["{ : }"]
        knl = lp.make_kernel(
            domains, self.final_instructions, args, lang_version=(2018, 2),
            name="ftlazy_kernel", seq_dependencies=False,
            silenced_warnings=["v1_scheduler_fallback",
                               "insn_count_subdomains_order", "write_race*"],
            options=lp.Options(return_dict=True, no_numpy=False))
        knl = register_builtins(knl)
        if self.iname_tags:
            knl = lp.tag_inames(knl, self.iname_tags)
        if self.scan_prefixes:
            knl = _declare_scan_nosync(knl, self.scan_prefixes)
        if self.vector_length is not None:
            self.vector_args = [a.name for a in inputs + outputs
                                if a.shape == (self.vector_length,)
                                and a.name not in self.packs]
            knl = vector_view(knl, self.vector_args)
        if self.priorities:
            entry = knl.default_entrypoint
            knl = knl.with_kernel(entry.copy(loop_priority=entry.loop_priority
                                             | frozenset(self.priorities)))
        return knl


#: register block of a blocked matrix product (rows x columns per work item)
BLOCK_ROWS, BLOCK_COLS = 8, 8


def _blockable_contraction(node: IndexLambda) -> tuple[Any, int, int] | None:
    """The reduction and block sizes if *node* is a 2-D sum over one index
    (``out[i, j] = sum_k f(i, j, k)``) of concrete, block-divisible shape
    with a reduction long enough to pay for blocking."""
    expr = node.expr
    if (node.ndim != 2 or not isinstance(expr, Reduce) or expr.op != "sum"
            or len(expr.bounds) != 1 or has_reduce(expr.inner)):
        return None
    ni, nj = node.shape
    kext = expr.bounds[0][2]
    if not (isinstance(ni, int) and isinstance(nj, int) and isinstance(kext, int)):
        return None
    if ni % BLOCK_ROWS or nj % BLOCK_COLS or kext < 16 or ni * nj < 4096:
        return None
    return expr, BLOCK_ROWS, BLOCK_COLS


#: inputs of at most this many elements are packed into one argument per
#: dtype when there are at least PACK_MIN_COUNT of them (OpenCL devices cap
#: the size of kernel parameters, and each argument costs host time)
PACK_MAX_SIZE = 64
PACK_MIN_COUNT = 16


def _plan_packing(placeholders: list[Placeholder]
                  ) -> dict[str, list[tuple[Placeholder, int]]]:
    """Packed argument name -> its members and their offsets."""
    small: dict[np.dtype, list[Placeholder]] = defaultdict(list)
    for ph in placeholders:
        if all(isinstance(d, int) for d in ph.shape) and (
                int(np.prod(ph.shape)) <= PACK_MAX_SIZE):
            small[ph.dtype].append(ph)
    packs = {}
    for dtype, members in small.items():
        if len(members) < PACK_MIN_COUNT:
            continue
        offset, entries = 0, []
        for ph in members:
            entries.append((ph, offset))
            offset += int(np.prod(ph.shape))
        packs[f"_ft_pack_{dtype.name}"] = entries
    return packs


#: independent accumulators of a split reduction
REDUCTION_LANES = 8


def _splittable_reduction(node: IndexLambda) -> Any:
    """The reduction if *node* is ``op_r f(..., r)`` over one concrete axis
    that splits evenly into :data:`REDUCTION_LANES` lanes."""
    expr = node.expr
    if (node.ndim == 0 or not isinstance(expr, Reduce)
            or expr.op not in ("sum", "product", "max", "min")
            or len(expr.bounds) != 1 or has_reduce(expr.inner)
            or node.dtype.kind not in "iuf"
            # float max/min must propagate NaN, which Max/Min do not
            or (node.dtype.kind == "f" and expr.op in ("max", "min"))):
        return None
    kext = expr.bounds[0][2]
    if (not isinstance(kext, int) or kext % REDUCTION_LANES
            or kext < 8 * REDUCTION_LANES):
        return None
    return expr


#: names generated code must not use for arrays (C and OpenCL C keywords,
#: types, qualifiers and the builtin functions ftlazy calls)
OPENCL_RESERVED = frozenset("""
    auto break case char const continue default do double else enum extern float
    for goto if inline int long register restrict return short signed sizeof
    static struct switch typedef union unsigned void volatile while bool half
    uchar ushort uint ulong size_t ptrdiff_t intptr_t uintptr_t kernel __kernel
    global __global local __local constant __constant private __private
    read_only write_only read_write image2d_t image3d_t sampler_t event_t
    barrier true false NULL INFINITY NAN MAXFLOAT HUGE_VAL M_PI M_E
    select vload vstore convert_int as_int min max clamp mix sign dot length
    """.split()) | frozenset(C_FUNCTIONS.values()) | frozenset({
        "fabs", "fmin", "fmax", "pow", "copysign", "rsqrt", "cbrt", "expm1",
        "log1p", "erf", "isfinite", "lid", "gid"})


def _check_dtypes(order: list[Node]) -> None:
    """float16 needs an OpenCL extension this target does not enable: say so
    before building, for stored and inlined arrays, in loop bodies too."""
    stack = [order]
    while stack:
        for n in stack.pop():
            if getattr(n, "dtype", None) == np.float16:
                raise TypeError(
                    f"float16 arrays are not supported by the OpenCL target "
                    f"({n!r}); numpy gives float16 for some operations on bool "
                    "and int8 arrays, e.g. sqrt: cast to float32 first")
            if isinstance(n, Scan):
                stack.append(topological_order(list(n.body.outputs)))


def _independent_rows(scan: Scan, plan: StoragePlan) -> tuple | None:
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
                n in plan.stored
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
    # enough groups for the cores, enough rows per group to reuse weights
    per_group = 1
    if isinstance(rows, int):
        per_group = next((p for p in (8, 4, 2) if rows % p == 0 and rows >= 2 * p), 1)
    return rows, per_group


def _row_blockable(node: IndexLambda, batch: tuple) -> Any:
    """The reduction if *node* is ``sum_k f(b, j, k)`` over rows ``b`` of a
    row-partitioned scan (see :meth:`KernelBuilder._emit_row_blocked`), with
    a concrete number of columns (a private accumulator's size)."""
    expr = node.expr
    ncols = node.shape[1] if node.ndim == 2 else None
    if (node.ndim != 2 or not isinstance(expr, Reduce) or expr.op != "sum"
            or len(expr.bounds) != 1 or has_reduce(expr.inner)
            or batch[1] == 1 or not isinstance(ncols, int)
            or ncols * batch[1] > MAX_PRIVATE_ACCUMULATOR):
        return None
    return expr


#: elements of a private accumulator block (doubles: 32 KiB)
MAX_PRIVATE_ACCUMULATOR = 4096


def _subexpressions(expr: Any) -> list[Any]:
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


def _declare_scan_nosync(knl: lp.TranslationUnit, prefixes: list[str]
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
