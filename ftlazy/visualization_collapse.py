# SPDX-License-Identifier: MIT
"""Folding runs of elementwise nodes for the collapsed picture of a DAG.

A long chain such as ``for _ in range(2000): x = ft.sin(x) + 1.0`` is 4,000
:class:`~ftlazy.array.IndexLambda` nodes, one after the other. Drawn node by
node it is a picture nobody can read and a layout that takes long. The
collapsed picture draws each *run* of such nodes as one box that says how
many operations it holds.

A node is *elementwise* when it is an :class:`~ftlazy.array.IndexLambda`
without reductions whose every array read is at the output's own indices (in
order, possibly skipping leading axes or reading index 0 of a broadcast axis:
numpy broadcasting). A run is a path ``n_1 -> n_2 -> ... -> n_k`` of
elementwise nodes of one shape where each ``n_i`` (``i < k``) has ``n_{i+1}``
as its only user in its scope, is not a result (nor a loop body's output),
and is the only such input of ``n_{i+1}``. Runs are linear by construction;
other inputs of the run's nodes (a weight, a second operand) stay edges into
the box.

.. autofunction:: is_elementwise
.. autofunction:: elementwise_runs
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable

import pymbolic.primitives as prim

from ftlazy.array import IndexLambda
from ftlazy.node import Node
from ftlazy.scalar_expr import Reduce, index_var, iter_subexpressions

__all__ = ["elementwise_runs", "is_elementwise"]


def _reads_own_indices(index: tuple, ndim: int) -> bool:
    """Whether a subscript's *index* reads at the output's indices: a
    subsequence of ``_0 .. _{ndim-1}`` in order, where a broadcast axis may
    read the constant 0 instead."""
    position = 0
    for component in index:
        if isinstance(component, int) and component == 0:
            continue
        while position < ndim and component != index_var(position):
            position += 1
        if position == ndim:
            return False
        position += 1
    return True


def is_elementwise(node: Node) -> bool:
    """Whether *node* computes each element from the elements of its inputs
    at the same position (numpy broadcasting allowed): an index lambda
    without reductions whose array reads are all at its own indices."""
    if not isinstance(node, IndexLambda):
        return False
    names = set(node.bindings)
    ndim = len(node.shape)
    subscripted: set[int] = set()
    for e in iter_subexpressions(node.expr):
        if isinstance(e, Reduce):
            return False
        if (isinstance(e, prim.Subscript) and isinstance(e.aggregate, prim.Variable)
                and e.aggregate.name in names):
            index = e.index if isinstance(e.index, tuple) else (e.index,)
            if not _reads_own_indices(index, ndim):
                return False
            subscripted.add(id(e.aggregate))
        elif (isinstance(e, prim.Variable) and e.name in names
              and id(e) not in subscripted
              and len(node.bindings[e.name].shape) != 0):
            # a whole array used as a scalar: only 0-d bindings may be
            return False
    return True


def elementwise_runs(
        order: Iterable[Node],
        children: Callable[[Node], Iterable[Node]],
        pinned: Collection[Node]) -> list[list[Node]]:
    """The runs of two or more elementwise nodes among *order* (one scope,
    children before users), each listed from its first node to its last.

    :arg children: the inputs of a node within the scope.
    :arg pinned: nodes that must stay visible on their own (results, a loop
        body's outputs): they may end a run, never sit inside one.
    """
    inputs = {n: set(children(n)) for n in order}
    users: dict[Node, set[Node]] = {}
    for n, n_inputs in inputs.items():
        for child in n_inputs:
            users.setdefault(child, set()).add(n)
    run_of: dict[Node, list[Node]] = {}
    runs: list[list[Node]] = []
    for n, n_inputs in inputs.items():
        if not is_elementwise(n):
            continue
        links = {c for c in n_inputs
                 if c in run_of and c not in pinned and users[c] == {n}
                 and c.shape == n.shape}
        if len(links) == 1:
            (previous,) = links
            run = run_of[previous]
            run.append(n)
        else:
            run = [n]
            runs.append(run)
        run_of[n] = run
    return [run for run in runs if len(run) > 1]

# vim: foldmethod=marker
