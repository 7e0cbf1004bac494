# SPDX-License-Identifier: MIT
"""Hoisting of carry-independent work out of scan bodies, for code
generation.

In the body of a :class:`~ftlazy.fractal.Scan`, a node that depends on the
step's scanned inputs but on no carry computes the same function at every
step, of another row: ``x_t @ W`` is row ``t`` of ``xs @ W``. Such work
need not wait for the previous step. :func:`hoist_scans` moves it out of
the body:

* each *step-dependent* node that a carry-dependent node (or the body's
  result) reads, and whose own computation includes a reduction (a matrix
  product, a sum), is computed for all steps at once: the sub-DAG that
  computes it becomes the body of a :class:`~ftlazy.fractal.Map` over the
  scanned inputs, batched right away into whole-array nodes (``xs @ W``
  for ``x_t @ W``) by :mod:`ftlazy.transform.batch`, and the scan reads
  the result as a new scanned input. Where hoisting such a node would not
  pay (its sub-DAG has no reduction, or it is larger per step than the
  reductions it holds, e.g. a broadcast after the product), the step
  -dependent nodes it reads are considered instead;
* each *loop-invariant* node (of captured arrays only) whose computation
  includes a reduction and that the remaining body reads is computed once,
  outside the scan, and captured.

Inside a map over a FractalTensor the scanned inputs are an element's rows:
the hoisted product is then a node of the map's body over the whole
element, which the jagged lowering turns into one dense product over the
packed values of all elements.

Nothing is hoisted whose sub-DAG holds a loop (a nested scan is left in the
body, its own body hoisted in turn), that would be quadratic per step (a
per-step shape that involves the scan's length), whose shape or reductions
involve an element length of an enclosing map over a FractalTensor (their
size differs between elements), or, unless *checks_inserted* says that the
run-time checks were already taken out (:func:`insert_kernel_checks
<ftlazy.target.loopy.lowering.insert_kernel_checks>`), a data-dependent
read or write (gather, advanced index, scatter). The results are exact
rewrites: every hoisted value is the one the body computed (up to the
rounding of a float reduction evaluated in another order). The scans that
the lowering made itself (:class:`~ftlazy.fractal_tensor.RaggedScan`) and
the bodies of scans over a FractalTensor's outer list are left alone.

.. autofunction:: hoist_scans
"""

from __future__ import annotations

from typing import Any, TypeVar

import numpy as np

from ftlazy import shapes as sh
from ftlazy.array import AdvancedIndex, Array, Einsum, IndexLambda, SizeParam
from ftlazy.fractal import (
    Body, BodyParam, Gather, Loop, LoopResult, Scan, Scatter)
from ftlazy.node import Node, child_changes, iter_children, topological_order
from ftlazy.scalar_expr import Reduce, get_variable_names, iter_subexpressions
from ftlazy.transform.batch import _batch_body, _broadcast_batch
from ftlazy.transform.lower import lower_to_index_lambdas
from ftlazy.transform.mappers import CopyMapper

__all__ = ["hoist_scans"]

K = TypeVar("K")

#: what a body node depends on: nothing but captured arrays, the step's
#: scanned inputs, or a carry
_INVARIANT, _STEP, _CARRY = 0, 1, 2

_CHECKED = (Gather, Scatter, AdvancedIndex)


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


def _names(node: Node) -> set[str]:
    """The size names that *node*'s shape, reductions and expression use."""
    names: set[str] = set()
    if isinstance(node, Array):
        for c in node.shape:
            names |= sh.size_param_names(c)
    if isinstance(node, IndexLambda):
        names |= get_variable_names(node.expr)
        for e in iter_subexpressions(node.expr):
            if isinstance(e, Reduce):
                for _, lo, hi in e.bounds:
                    names |= sh.size_param_names(lo) | sh.size_param_names(hi)
    if isinstance(node, SizeParam):
        names.add(node.name)
    return names


class _Costs:
    """Per carry-independent node of a body: whether its sub-DAG reduces
    something, the largest reduction result in it (elements per step; None
    where symbolic) and whether it holds something that is never hoisted."""

    def __init__(self, order: list[Node], kind: dict[Node, int],
                 checks_inserted: bool, symbols: frozenset[str]) -> None:
        self.reduces: dict[Node, bool] = {}
        self.largest: dict[Node, Any] = {}
        self.blocked: dict[Node, bool] = {}
        for n in order:
            if kind[n] == _CARRY:
                continue
            children = [c for c in iter_children(n)]
            extent = _reduced_extent(n)
            own = extent is not None and not (isinstance(extent, int)
                                              and extent <= 1)
            largest = [self.largest[c] for c in children if self.reduces[c]]
            if own:
                largest.append(_size(n.shape) if isinstance(n, Array) else None)
            self.reduces[n] = own or any(self.reduces[c] for c in children)
            self.largest[n] = (None if None in largest
                               else max(largest, default=0))
            self.blocked[n] = (
                isinstance(n, (Loop, LoopResult, Body))
                or (not checks_inserted and isinstance(n, _CHECKED))
                or bool(symbols & _names(n))
                or any(self.blocked[c] for c in children))

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
            worth: Any) -> list[Node]:
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


def _readers_frontier(outputs: list[Node], kind: dict[Node, int], of: int,
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
    """*nodes* (step-dependent body nodes) for every step: the body of a
    map over the scanned inputs, batched into whole-array nodes."""
    nc, ns = scan.num_carries, scan.num_scanned
    params = [BodyParam(k - nc, p.shape, p.dtype)
              for k, p in enumerate(scan.body.params) if k >= nc]
    renumber = {k + nc: p for k, p in enumerate(params)}
    outputs = tuple(_Substituter({}, renumber)(n) for n in nodes)
    body = lower_to_index_lambdas(Body(tuple(params), outputs))
    inputs = list(scan.scanned) + list(scan.captured)
    values, _ = _batch_body(body, scan.length, inputs,
                            [k < ns for k in range(len(inputs))])
    return [v if is_batched else _broadcast_batch(v, scan.length)
            for v, is_batched in values]


def _hoisted(scan: Scan, checks_inserted: bool, symbols: frozenset[str]) -> Scan:
    """*scan* with its carry-independent work hoisted (see the module
    docs); *scan* itself where there is none worth it."""
    nc, ns = scan.num_carries, scan.num_scanned
    outputs = list(scan.body.outputs)
    order = topological_order(outputs)
    kind = _classify(scan, order)
    costs = _Costs(order, kind, checks_inserted, symbols)
    length_names = sh.size_param_names(scan.length)

    def worth_per_step(n: Node) -> bool:
        if not costs.reduces[n] or costs.blocked[n]:
            return False
        if not isinstance(n, Array) or isinstance(n, BodyParam):
            return False
        if any(length_names & sh.size_param_names(c) for c in n.shape):
            return False    # quadratic in the length
        size, largest = _size(n.shape), costs.largest[n]
        return size is None or largest is None or size <= largest

    step_nodes = _choose(_readers_frontier(outputs, kind, _STEP, set()),
                         kind, _STEP, worth_per_step)
    invariants = _choose(
        _readers_frontier(outputs, kind, _INVARIANT, set(step_nodes)),
        kind, _INVARIANT,
        lambda n: (costs.reduces[n] and not costs.blocked[n]
                   and isinstance(n, Array) and not isinstance(n, BodyParam)))
    if not step_nodes and not invariants:
        return scan
    hoisted = set(step_nodes) | set(invariants)
    used = sorted(n.index for n in topological_order(outputs, skip=hoisted)
                  if isinstance(n, BodyParam) and n.index >= nc + ns)

    # parameters: carries, scanned, hoisted per step, captured still read,
    # hoisted invariants
    params = list(scan.body.params[:nc + ns])
    replace: dict[Node, Node] = {}
    for n in step_nodes:
        replace[n] = BodyParam(len(params), n.shape, n.dtype)
        params.append(replace[n])
    renumber: dict[int, Node] = {k: p for k, p in enumerate(params[:nc + ns])}
    for k in used:
        renumber[k] = BodyParam(len(params), scan.body.params[k].shape,
                                scan.body.params[k].dtype)
        params.append(renumber[k])
    for n in invariants:
        replace[n] = BodyParam(len(params), n.shape, n.dtype)
        params.append(replace[n])
    new_outputs = tuple(_Substituter(replace, renumber)(o) for o in outputs)

    captured = scan.captured
    outside = _Substituter({}, {nc + ns + k: a for k, a in enumerate(captured)})
    inputs = (scan.inputs[:nc + ns] + tuple(_batched(scan, step_nodes))
              + tuple(captured[k - nc - ns] for k in used)
              + tuple(outside(n) for n in invariants))
    return scan.copy(body=Body(tuple(params), new_outputs), inputs=inputs,
                     num_scanned=ns + len(step_nodes))

# }}}


class _ScanHoister(CopyMapper):
    """Copies a DAG with :func:`_hoisted` applied to every scan, innermost
    first; *symbols* are the element lengths of the enclosing maps over
    FractalTensors."""

    def __init__(self, checks_inserted: bool,
                 symbols: frozenset[str] = frozenset()) -> None:
        super().__init__()
        self.checks_inserted = checks_inserted
        self.symbols = symbols

    def map_scan(self, expr: Scan) -> Node:
        new = self.map_node(expr)
        if type(new) is not Scan:
            return new
        return _hoisted(new, self.checks_inserted, self.symbols)

    def _children_only(self, expr: Node) -> Node:
        changes = child_changes(expr, self.rec)
        return expr.copy(**changes) if changes else expr

    # (lowered scans over packed rows, and scans over a FractalTensor's
    # outer list: their bodies are not hoisted from)
    map_ragged_scan = _children_only
    map_jagged_scan = _children_only

    def map_jagged_map(self, expr: Node) -> Node:
        changes = child_changes(expr, self.rec)
        inner = self.clone_for_body()
        inner.symbols = self.symbols | frozenset(
            s for group in expr.symbols for s in group)
        body = inner.map_node(expr.body)
        if body is not expr.body:
            changes["body"] = body
        return expr.copy(**changes) if changes else expr


def hoist_scans(roots: dict[K, Array], checks_inserted: bool = False
                ) -> dict[K, Array]:
    """*roots* with the carry-independent work of every scan body hoisted
    out of the body (see the module docs), for code generation: the values
    are unchanged. *checks_inserted*: data-dependent reads and writes may be
    hoisted too (their run-time checks were already made separate
    outputs)."""
    hoister = _ScanHoister(checks_inserted)
    return {k: hoister(a) for k, a in roots.items()}
