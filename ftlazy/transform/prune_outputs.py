# SPDX-License-Identifier: MIT
"""Dropping the results of dense maps that nothing reads.

``ra, rb = ft.map(lambda p, q: (p.sum(), q * 2), a, b)`` builds one
:class:`~ftlazy.fractal.Map` whose body computes both results; a program
of ``ra`` alone reads only ``a``. Compiled programs lower each result on
its own, so they never ask for ``b``; the reference evaluator runs the map
as a whole. :func:`prune_unused_map_results` rewrites such maps to the
results the roots read and to the inputs those read, so that both
evaluators take the same inputs (and the reference skips the dead work).

Maps over FractalTensors (whose results carry lengths and counts of their
own) and loops nested in bodies are kept as they are.

.. autofunction:: prune_unused_map_results
"""

from __future__ import annotations

from ftlazy.array import Array
from ftlazy.fractal import Body, BodyParam, LoopResult, Map
from ftlazy.node import Node, topological_order
from ftlazy.transform.mappers import CopyMapper

__all__ = ["prune_unused_map_results"]


def prune_unused_map_results(roots: list[Array]) -> list[Array]:
    """*roots* with every dense map reachable from them reduced to the
    results they read (and its inputs to those these results read)."""
    used: dict[Map, set[int]] = {}
    for n in topological_order(roots):
        if isinstance(n, LoopResult) and isinstance(n.loop, Map):
            used.setdefault(n.loop, set()).add(n.index)
    pruned = {m: _pruned(m, sorted(indices)) for m, indices in used.items()
              if len(indices) < m.num_outputs}
    if not pruned:
        return roots
    mapper = _ResultsRenumbered(pruned)
    return [mapper(r) for r in roots]


def _pruned(loop: Map, kept: list[int]) -> tuple[Map, dict[int, int]]:
    """*loop* computing only its results *kept*, and their new numbers."""
    outputs = [loop.body.outputs[k] for k in kept]
    # (topological_order does not enter nested bodies, which number their
    # own parameters)
    read = {n.index for n in topological_order(outputs)
            if isinstance(n, BodyParam)}
    mapped = [k for k in range(loop.num_mapped) if k in read] or [0]
    captured = [k for k in range(loop.num_mapped, len(loop.inputs)) if k in read]
    inputs = mapped + captured
    new_params = {old: BodyParam(new, loop.body.params[old].shape,
                                 loop.body.params[old].dtype)
                  for new, old in enumerate(inputs)}
    renumber = _ParamsRenumbered(new_params)
    body = Body(tuple(new_params[k] for k in inputs),
                tuple(renumber(o) for o in outputs))
    new = Map(body, tuple(loop.inputs[k] for k in inputs), len(mapped))
    return new, {old: new_k for new_k, old in enumerate(kept)}


class _ParamsRenumbered(CopyMapper):
    """A body's arrays over its new parameters; nested bodies are kept."""

    def __init__(self, params: dict[int, BodyParam]) -> None:
        super().__init__()
        self.params = params

    def map_node(self, expr: Node) -> Node:
        if isinstance(expr, BodyParam):
            return self.params[expr.index]
        return super().map_node(expr)

    def map_body(self, body: Node) -> Node:
        return body


class _ResultsRenumbered(CopyMapper):
    """The roots with the results of pruned maps read from their new maps."""

    def __init__(self, pruned: dict[Map, tuple[Map, dict[int, int]]]) -> None:
        super().__init__()
        self.pruned = pruned

    def map_node(self, expr: Node) -> Node:
        if isinstance(expr, LoopResult) and expr.loop in self.pruned:
            new, numbers = self.pruned[expr.loop]
            return LoopResult(new, numbers[expr.index])
        return super().map_node(expr)

    def map_body(self, body: Node) -> Node:
        return body
