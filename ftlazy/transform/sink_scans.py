# SPDX-License-Identifier: MIT
"""Sinking row-wise work on a ragged scan's packed inputs into its step,
for code generation (the inverse of :mod:`ftlazy.transform.hoist_scans`).

A :class:`~ftlazy.fractal_tensor.RaggedScan` reads, at step ``t``, packed
row ``start_i + t`` of its ragged scanned inputs for each element ``i``. A
ragged input computed row by row from other packed arrays (``xs @ W + b``
for an RNN layer's input product, each packed row from the same row of
``xs``) can as well be computed in the step from those rows: the scan then
scans ``xs`` and its body computes ``x_t @ W + b`` for its elements. Where
hoisting does not pay (CPUs, where a ragged scan's row blocks run their
products in the loop, see
:func:`~ftlazy.target.loopy.lowering.hoisting_pays`) this saves the packed
intermediate's traffic and a kernel launch, and it leaves the scan reading
the previous scan's packed results directly: a stacked RNN's layers then
form a chain of scans each reading only its own elements' rows of the one
before, which the planner runs in one kernel
(:mod:`ftlazy.target.loopy.scan_chains`).

A node is sunk when it is an :class:`~ftlazy.array.IndexLambda` over the
packed rows (its leading axis the ragged input's row count) that reads
each packed binding only at its own row ``_0`` (and ``_0`` nowhere else),
and that has no other consumer than the scan (or the node sunk with it).
Its packed bindings that are not sunk become new ragged scanned inputs,
its other bindings captured arrays. Values are unchanged (up to the
rounding of a float reduction evaluated in another order).

.. autofunction:: sink_scans
"""

from __future__ import annotations

from collections import Counter
from typing import Any, Callable, TypeVar

from ftlazy import shapes as sh
from ftlazy.array import Array, IndexLambda
from ftlazy.fractal import Body, BodyParam, Scan
from ftlazy.fractal_tensor import RaggedScan
from ftlazy.node import Node, iter_children, topological_order
from ftlazy.transform.hoist_scans import _Substituter, reads_own_row
from ftlazy.transform.mappers import CopyMapper

__all__ = ["sink_scans"]

K = TypeVar("K")


def _packed(a: Any, rows: Any) -> bool:
    return (isinstance(a, Array) and a.ndim >= 1
            and sh.prove_equal(a.shape[0], rows))


def _row_wise(node: Array, rows: Any) -> bool:
    """Whether *node* computes each of its *rows* packed rows from the same
    row of its packed bindings only."""
    return (isinstance(node, IndexLambda) and _packed(node, rows)
            and reads_own_row(node, lambda b: _packed(b, rows)))


class _Sinking:
    """The new parameters, inputs and body nodes of one scan while its
    ragged inputs are sunk."""

    def __init__(self, scan: RaggedScan, uses: Counter) -> None:
        self.scan, self.uses = scan, uses
        # (the number of elements: the rows of a ragged parameter; a carry
        # of the element's length has a row per packed row instead)
        self.n = scan.body.params[scan.num_carries].shape[0]
        self.ragged: list[Array] = []       # new ragged scanned inputs
        self.captured: list[Array] = []     # new captured inputs
        self.body: dict[Node, Array] = {}   # sunk node -> its body node

    def param(self, a: Array, ragged: bool) -> BodyParam:
        """A placeholder parameter for input *a* (numbered later)."""
        where = self.ragged if ragged else self.captured
        if a not in where:
            where.append(a)
        shape = (self.n,) + a.shape[1:] if ragged else a.shape
        # (negative indices mark new parameters until renumbered)
        k = where.index(a)
        return BodyParam(-1 - 2 * k - (0 if ragged else 1), shape, a.dtype)

    def sink(self, node: Array, rows: Any) -> Array:
        """The body node computing *node*'s rows at the step, or a ragged
        parameter where *node* is not sunk."""
        if node in self.body:
            return self.body[node]
        if not _row_wise(node, rows) or self.uses[node] > 1:
            return self.param(node, ragged=True)
        bindings = {name: (self.sink(b, rows) if _packed(b, rows)
                           else self.param(b, ragged=False))
                    for name, b in node.bindings.items()}
        value = IndexLambda(node.expr, (self.n,) + node.shape[1:], node.dtype,
                            bindings, tags=node.tags, axes=node.axes)
        self.body[node] = value
        return value


def _sunk(scan: RaggedScan, uses: Counter) -> RaggedScan:
    """*scan* (of the original DAG: *uses* counts its nodes' consumers)
    with its row-wise ragged inputs sunk into its step."""
    nc, ns, nr = scan.num_carries, scan.num_scanned, scan.num_ragged
    params = scan.body.params
    sinking = _Sinking(scan, uses)
    replace: dict[Node, Array] = {}
    kept: list[int] = []
    for k in range(nc, nc + nr):
        value = scan.inputs[k]
        if _row_wise(value, value.shape[0]) and uses[value] == 1:
            replace[params[k]] = sinking.sink(value, value.shape[0])
        else:
            kept.append(k)
    if not replace:
        return scan
    # inputs: carries, ragged (kept, then new), other scanned, captured
    # (old, then new); renumber maps old and new (negative) indices
    inputs: list[Array] = []
    renumber: dict[int, Node] = {}

    def add(key: int, value: Array, shape: Any) -> None:
        renumber[key] = BodyParam(len(inputs), shape, value.dtype)
        inputs.append(value)
    for k in list(range(nc)) + kept:
        add(k, scan.inputs[k], params[k].shape)
    for j, a in enumerate(sinking.ragged):
        old = [k for k in kept if scan.inputs[k] is a]
        if old:
            renumber[-1 - 2 * j] = renumber[old[0]]
        else:
            add(-1 - 2 * j, a, (sinking.n,) + a.shape[1:])
    num_ragged = len(inputs) - nc
    for k in range(nc + nr, len(scan.inputs)):
        add(k, scan.inputs[k], params[k].shape)
    for j, a in enumerate(sinking.captured):
        add(-2 - 2 * j, a, a.shape)
    # the sunk nodes, their parameters renumbered, stand for the
    # parameters of the ragged inputs they compute
    own = _Substituter({}, renumber)
    substitute = _Substituter({p: own(v) for p, v in replace.items()}, renumber)
    outputs = tuple(substitute(o) for o in scan.body.outputs)
    body_params = sorted({p.index: p for p in renumber.values()}.values(),
                         key=lambda p: p.index)
    return scan.copy(body=Body(tuple(body_params), outputs), inputs=tuple(inputs),
                     num_scanned=ns - nr + num_ragged, num_ragged=num_ragged,
                     offsets_index=renumber[scan.offsets_index].index,
                     order_index=(-1 if scan.order_index == -1
                                  else renumber[scan.order_index].index))


class _ScanSinker(CopyMapper):
    """Copies the outer DAG with :func:`_sunk` applied to the ragged scans
    where *sinks* says so (decided on the original nodes, whose consumers
    *uses* counts); bodies are copied as they are."""

    def __init__(self, uses: Counter, sinks: Callable[[Scan], bool]) -> None:
        super().__init__()
        self.uses, self.sinks = uses, sinks

    def map_node(self, expr: Node) -> Node:
        if isinstance(expr, RaggedScan) and self.sinks(expr):
            expr = _sunk(expr, self.uses)
        return super().map_node(expr)

    def map_body(self, body: Node) -> Node:
        return body


def sink_scans(roots: dict[K, Array], sinks: Callable[[Scan], bool]
               ) -> dict[K, Array]:
    """*roots* (lowered to IndexLambdas) with the row-wise work on the
    ragged inputs of every ragged scan of the outer DAG where *sinks* says
    so computed in the scan's step (see the module docs)."""
    uses: Counter = Counter()
    for n in topological_order(list(roots.values())):
        for c in iter_children(n):
            uses[c] += 1
    sinker = _ScanSinker(uses, sinks)
    return {k: sinker(a) for k, a in roots.items()}
