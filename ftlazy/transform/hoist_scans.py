# SPDX-License-Identifier: MIT
"""Hoisting of carry-independent work out of scan bodies, for code
generation.

In the body of a :class:`~ftlazy.fractal.Scan`, a node that depends on the
step's scanned inputs but on no carry computes the same function at every
step, of another row: ``x_t @ W`` is row ``t`` of ``xs @ W``. Such work
need not wait for the previous step. :func:`hoist_scans` moves it out of
the body, where a cost model (*pays*) says that it pays:

* each *step-dependent* node that a carry-dependent node (or the body's
  result) reads, and whose own computation includes a reduction (a matrix
  product, a sum), is computed for all steps at once, and the scan reads
  the result as a new scanned input. For a scan, the sub-DAG that computes
  it becomes the body of a :class:`~ftlazy.fractal.Map` over the scanned
  inputs, batched right away into whole-array nodes (``xs @ W`` for
  ``x_t @ W``) by :mod:`ftlazy.transform.batch`. For a
  :class:`~ftlazy.fractal_tensor.RaggedScan` (a scan over the rows of a
  FractalTensor's elements, see :mod:`ftlazy.transform.jagged_scans`),
  whose step reads row ``t`` of every element, a sub-DAG that computes
  each element's row from that element's rows only (every step-dependent
  read at the element's own row ``_0``) is evaluated over the packed rows
  instead: one dense product over the flat values of all elements. Where
  hoisting a node would not pay (its sub-DAG has no reduction, or it is
  larger per step than the reductions it holds, e.g. a broadcast after the
  product), the step-dependent nodes it reads are considered instead;
* each *loop-invariant* node (of captured arrays only) whose computation
  includes a reduction and that the remaining body reads is computed once,
  outside the scan, and captured.

Nothing is hoisted whose sub-DAG holds a loop (a nested scan is left in the
body, its own body hoisted in turn) or that would be quadratic per step (a
per-step shape that involves the scan's length). The pass runs on lowered
DAGs (IndexLambdas) after the kernel's run-time checks became outputs of
their own (:func:`~ftlazy.target.loopy.lowering.insert_kernel_checks`), so
a hoisted gather keeps its check. Every hoisted value is the one the body
computed (up to the rounding of a float reduction evaluated in another
order); the values of the DAG are unchanged.

.. autofunction:: hoist_scans
"""

from __future__ import annotations

from typing import Any, Callable, TypeVar

import numpy as np
import pymbolic.primitives as prim

from ftlazy import shapes as sh
from ftlazy.array import Array, Einsum, IndexLambda
from ftlazy.fractal import Body, BodyParam, Loop, LoopResult, Scan
from ftlazy.fractal_tensor import RaggedScan
from ftlazy.node import Node, iter_children, topological_order
from ftlazy.scalar_expr import Reduce, index_var, iter_subexpressions
from ftlazy.transform.batch import _batch_body, _broadcast_batch
from ftlazy.transform.lower import lower_to_index_lambdas
from ftlazy.transform.mappers import CopyMapper

__all__ = ["hoist_scans", "Pays"]

K = TypeVar("K")

#: ``pays(scan, where)``: whether hoisting from *scan* pays, where *where*
#: is ``"top"`` (outside loop bodies), ``"map"`` (in a map's body, to be
#: batched) or ``"scan"`` (in a scan's body)
Pays = Callable[[Scan, str], bool]

#: what a body node depends on: nothing but captured arrays, the step's
#: scanned inputs, or a carry
_INVARIANT, _STEP, _CARRY = 0, 1, 2


# {{{ what a node costs

def _reduced_extent(node: Node) -> Any:
    """The number of terms of *node*'s reductions: an int, a symbolic size,
    or None if it reduces nothing."""
    extents: list[Any] = []
    if isinstance(node, Einsum):
        ins, out = node.spec.split("->")
        sizes = node.index_sizes()
        extents = [sizes[c] for c in sorted(set(ins.replace(",", "")) - set(out))]
    elif isinstance(node, IndexLambda):
        extents = [sh.sub(hi, lo) for e in iter_subexpressions(node.expr)
                   if isinstance(e, Reduce) for _, lo, hi in e.bounds]
    if not extents:
        return None
    total: Any = 1
    for e in extents:
        total = sh.mul(total, e)
    return total


def _size(shape: sh.Shape) -> int | None:
    """The number of elements of *shape*, None where it is symbolic."""
    if all(isinstance(c, int) for c in shape):
        return int(np.prod(shape, dtype=np.int64))
    return None


class _Costs:
    """Per carry-independent node of a body: whether its sub-DAG reduces
    something, the largest reduction result in it (elements per step; None
    where symbolic) and whether it holds something never hoisted (a loop,
    or what *refuse* says)."""

    def __init__(self, order: list[Node], kind: dict[Node, int],
                 refuse: Callable[[Node], bool]) -> None:
        self.reduces: dict[Node, bool] = {}
        self.largest: dict[Node, Any] = {}
        self.blocked: dict[Node, bool] = {}
        for n in order:
            if kind[n] == _CARRY:
                continue
            children = list(iter_children(n))
            extent = _reduced_extent(n)
            own = extent is not None and not (isinstance(extent, int)
                                              and extent <= 1)
            largest = [self.largest[c] for c in children if self.reduces[c]]
            if own:
                largest.append(_size(n.shape))
            self.reduces[n] = own or any(self.reduces[c] for c in children)
            self.largest[n] = (None if None in largest
                               else max(largest, default=0))
            self.blocked[n] = (isinstance(n, (Loop, LoopResult, Body))
                               or refuse(n)
                               or any(self.blocked[c] for c in children))

# }}}


# {{{ rows of a ragged scan's step

def reads_own_row(node: Node, rowed: Callable[[Node], bool]) -> bool:
    """Whether *node* computes each row from the same row of its bindings
    that *rowed* says have its rows only: each read of one is at ``[_0,
    ...]``, and the row index ``_0`` occurs nowhere else (not in the other
    indices, nor in reads of other bindings, nor in conditions)."""
    if not isinstance(node, IndexLambda):
        return False
    step = {name for name, b in node.bindings.items() if rowed(b)}
    reads = occurrences = 0
    for e in iter_subexpressions(node.expr):
        if isinstance(e, prim.Subscript) and e.aggregate.name in step:
            if e.index_tuple[0] != index_var(0):
                return False
            reads += 1
        elif e == index_var(0):
            occurrences += 1
    return occurrences == reads


def _row_wise(node: Node, kind: dict[Node, int]) -> bool:
    """Whether *node*, a step-dependent node of a ragged scan's body (row
    ``i`` is element ``i``), computes each row from the same row of its
    step-dependent bindings only (see :func:`reads_own_row`)."""
    return reads_own_row(node, lambda b: kind[b] == _STEP)


def _refuse_in_ragged(scan: RaggedScan, kind: dict[Node, int]
                      ) -> Callable[[Node], bool]:
    first, last = scan.num_carries, scan.num_carries + scan.num_ragged

    def refuse(n: Node) -> bool:
        if kind[n] != _STEP:
            return False
        if isinstance(n, BodyParam):
            return not first <= n.index < last    # (the step mask)
        return not _row_wise(n, kind)
    return refuse

# }}}


# {{{ hoisting from one scan

class _Substituter(CopyMapper):
    """Copies body nodes with some nodes replaced (*replace*) and body
    parameters renumbered (*params*, by old index); the bodies of nested
    loops are scopes of their own and stay as they are."""

    def __init__(self, replace: dict[Node, Node], params: dict[int, Node]
                 ) -> None:
        super().__init__()
        self._cache.update(replace)
        self.params = params

    def map_body_param(self, expr: BodyParam) -> Node:
        return self.params[expr.index]

    def map_body(self, body: Node) -> Node:
        return body


def _classify(scan: Scan, order: list[Node]) -> dict[Node, int]:
    nc, ns = scan.num_carries, scan.num_scanned
    kind: dict[Node, int] = {}
    for n in order:
        if isinstance(n, BodyParam):
            kind[n] = (_CARRY if n.index < nc else
                       _STEP if n.index < nc + ns else _INVARIANT)
        else:
            kind[n] = max((kind[c] for c in iter_children(n)), default=_INVARIANT)
    return kind


def _choose(frontier: list[Node], kind: dict[Node, int], wanted: int,
            worth: Callable[[Node], bool]) -> list[Node]:
    """The nodes of class *wanted* to hoist: each frontier node where
    ``worth(node)``, else (recursively) the nodes of that class it reads."""
    chosen: list[Node] = []
    seen: set[Node] = set()
    stack = list(reversed(frontier))
    while stack:
        n = stack.pop()
        if n in seen or kind[n] != wanted:
            continue
        seen.add(n)
        if worth(n):
            chosen.append(n)
        else:
            stack.extend(reversed(list(iter_children(n))))
    return chosen


def _frontier(outputs: list[Node], kind: dict[Node, int], of: int,
              skip: set[Node]) -> list[Node]:
    """Nodes of class *of* that a node of a later class reads, or that are
    outputs, among the nodes still computed in the body (not in *skip*)."""
    frontier = [o for o in outputs if kind[o] == of and o not in skip]
    for n in topological_order(outputs, skip=skip):
        if kind[n] > of:
            frontier.extend(c for c in iter_children(n)
                            if kind[c] == of and c not in skip)
    return frontier


def _batched(scan: Scan, nodes: list[Node]) -> list[Array]:
    """*nodes* (step-dependent body nodes of a scan) for every step: the
    body of a map over the scanned inputs, batched into whole-array
    nodes."""
    nc, ns = scan.num_carries, scan.num_scanned
    params = [BodyParam(k - nc, p.shape, p.dtype)
              for k, p in enumerate(scan.body.params) if k >= nc]
    renumber = {k + nc: p for k, p in enumerate(params)}
    substitute = _Substituter({}, renumber)
    outputs = tuple(substitute(n) for n in nodes)
    body = lower_to_index_lambdas(Body(tuple(params), outputs))
    inputs = list(scan.scanned) + list(scan.captured)
    values, _ = _batch_body(body, scan.length, inputs,
                            [k < ns for k in range(len(inputs))])
    return [v if is_batched else _broadcast_batch(v, scan.length)
            for v, is_batched in values]


def _packed(scan: RaggedScan, nodes: list[Node], kind: dict[Node, int],
            outside: CopyMapper) -> list[Array]:
    """*nodes* (row-wise step-dependent body nodes of a ragged scan) over
    the packed rows of all elements."""
    rows = scan.scanned[0].shape[0]
    value: dict[Node, Array] = {}
    for n in topological_order(nodes):
        if kind[n] != _STEP:
            value[n] = outside(n)
        elif isinstance(n, BodyParam):
            value[n] = scan.inputs[n.index]
        else:
            value[n] = IndexLambda(
                n.expr, (rows,) + n.shape[1:], n.dtype,
                {name: value[b] for name, b in n.bindings.items()},
                tags=n.tags, axes=n.axes)
    return [value[n] for n in nodes]


def _hoisted(scan: Scan, pays: Pays, where: str) -> Scan:
    """*scan* with its carry-independent work hoisted (see the module
    docs); *scan* itself where there is none worth it."""
    ragged = isinstance(scan, RaggedScan)
    if type(scan) not in (Scan, RaggedScan) or not pays(scan, where):
        return scan
    nc, ns = scan.num_carries, scan.num_scanned
    outputs = list(scan.body.outputs)
    order = topological_order(outputs)
    kind = _classify(scan, order)
    costs = _Costs(order, kind, _refuse_in_ragged(scan, kind) if ragged
                   else (lambda n: False))
    length_names = sh.size_param_names(scan.length)

    def worth(n: Node, per_step: bool) -> bool:
        if (not costs.reduces[n] or costs.blocked[n]
                or not isinstance(n, Array) or isinstance(n, BodyParam)):
            return False
        if not per_step:
            return True
        if any(length_names & sh.size_param_names(c) for c in n.shape):
            return False    # quadratic in the length
        size, largest = _size(n.shape), costs.largest[n]
        return size is None or largest is None or size <= largest

    step_nodes = _choose(_frontier(outputs, kind, _STEP, set()), kind, _STEP,
                         lambda n: worth(n, True))
    invariants = _choose(_frontier(outputs, kind, _INVARIANT, set(step_nodes)),
                         kind, _INVARIANT, lambda n: worth(n, False))
    if not step_nodes and not invariants:
        return scan
    hoisted = set(step_nodes) | set(invariants)
    used = {n.index for n in topological_order(outputs, skip=hoisted)
            if isinstance(n, BodyParam) and n.index >= nc + ns}
    if ragged:
        used.add(scan.offsets_index)
        if scan.order_index != -1:
            used.add(scan.order_index)
    captured = scan.captured
    outside = _Substituter({}, {nc + ns + k: a for k, a in enumerate(captured)})

    # parameters: carries, (ragged) scanned, hoisted per step, other
    # scanned, captured still read, hoisted invariants
    at = nc + (scan.num_ragged if ragged else ns)
    params = list(scan.body.params[:at])
    renumber: dict[int, Node] = dict(enumerate(params))
    replace: dict[Node, Node] = {}

    def add(shape: sh.Shape, dtype: np.dtype) -> BodyParam:
        params.append(BodyParam(len(params), shape, dtype))
        return params[-1]
    for n in step_nodes:
        replace[n] = add(n.shape, n.dtype)
    for k in list(range(at, nc + ns)) + sorted(used):
        renumber[k] = add(scan.body.params[k].shape, scan.body.params[k].dtype)
    for n in invariants:
        replace[n] = add(n.shape, n.dtype)
    substitute = _Substituter(replace, renumber)
    new_outputs = tuple(substitute(o) for o in outputs)

    per_step = (_packed(scan, step_nodes, kind, outside) if ragged
                else _batched(scan, step_nodes))
    inputs = (scan.inputs[:at] + tuple(per_step) + scan.inputs[at:nc + ns]
              + tuple(scan.inputs[k] for k in sorted(used))
              + tuple(outside(n) for n in invariants))
    changes: dict[str, Any] = dict(body=Body(tuple(params), new_outputs),
                                   inputs=inputs,
                                   num_scanned=ns + len(step_nodes))
    if ragged:
        changes.update(num_ragged=scan.num_ragged + len(step_nodes),
                       offsets_index=renumber[scan.offsets_index].index,
                       order_index=(-1 if scan.order_index == -1
                                    else renumber[scan.order_index].index))
    return scan.copy(**changes)

# }}}


class _ScanHoister(CopyMapper):
    """Copies a DAG with :func:`_hoisted` applied to every scan, innermost
    first; *where* says which loop body the mapper is in."""

    def __init__(self, pays: Pays, where: str = "top") -> None:
        super().__init__()
        self.pays = pays
        self.where = where

    def _in_body(self, expr: Node, where: str) -> Node:
        saved, self.where = self.where, where
        try:
            return self.map_node(expr)    # (bodies are mapped by clones)
        finally:
            self.where = saved

    def map_map(self, expr: Node) -> Node:
        return self._in_body(expr, "scan" if self.where == "scan" else "map")

    def map_scan(self, expr: Scan) -> Node:
        return _hoisted(self._in_body(expr, "scan"), self.pays, self.where)


def hoist_scans(roots: dict[K, Array], pays: Pays | None = None
                ) -> dict[K, Array]:
    """*roots* (lowered to IndexLambdas) with the carry-independent work of
    every scan body hoisted out of the body (see the module docs), for code
    generation: the values are unchanged. *pays* decides per scan (by
    default: everywhere)."""
    hoister = _ScanHoister(pays or (lambda scan, where: True))
    return {k: hoister(a) for k, a in roots.items()}
