# SPDX-License-Identifier: MIT
"""Analyses of a DAG: its inputs, its users and its size.

Every function takes an :class:`~ftlazy.Array`, a FractalTensor (a
:class:`~ftlazy.Jagged`) or a :class:`~ftlazy.DictOfNamedArrays` and
walks the DAG with the iterative mapper bases of :mod:`ftlazy.transform`,
so chains of 10^5 nodes need no recursion.

*Scopes.* The bodies of :class:`~ftlazy.fractal.Map` and
:class:`~ftlazy.fractal.Scan` are separate scopes: a body reads only its
positional :class:`~ftlazy.fractal.BodyParam` nodes, never the outer DAG
(captured arrays are inputs of the loop node). Node objects may be shared
between scopes (``BodyParam(0, ...)`` is interned), so a node is counted
once *per scope* it occurs in.

.. autofunction:: get_num_nodes
.. autofunction:: get_inputs
.. autofunction:: get_users
.. autofunction:: check_unique_input_names
.. autofunction:: check_inputs_against_size_names
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from ftlazy.array import (
    Array, DataWrapper, DictOfNamedArrays, Placeholder, SizeParam)
from ftlazy.fractal import Body, Loop
from ftlazy.node import Node, iter_children, topological_order
from ftlazy.shapes import shape_str, size_param_names
from ftlazy.transform.mappers import CachedWalkMapper, CombineMapper

__all__ = [
    "ArrayOrNames", "InputNode", "get_num_nodes", "get_inputs", "get_users",
    "check_unique_input_names", "check_inputs_against_size_names",
]

#: what the analyses accept: one array or several named results
ArrayOrNames = Array | DictOfNamedArrays
#: the node kinds that are bound to data when a program runs
InputNode = Placeholder | SizeParam | DataWrapper
_INPUT_TYPES = (Placeholder, SizeParam, DataWrapper)


def _check_expr(expr: object, what: str) -> None:
    from ftlazy.fractal_tensor import Jagged
    if not isinstance(expr, (Array, DictOfNamedArrays, Jagged)):
        raise TypeError(f"{what} expects an Array, a FractalTensor or a "
                        f"DictOfNamedArrays, got {type(expr).__name__} {expr!r}")


def _is_counted(n: Node) -> bool:
    # the containers of results are not computations of their own
    return not isinstance(n, (DictOfNamedArrays, Body))


# {{{ node counts

class _DistinctNodeCounter(CachedWalkMapper):
    """Counts nodes once per scope. Clones for bodies share ``tally``."""

    def __init__(self) -> None:
        super().__init__()
        self.tally = [0]

    def visit(self, expr: Node) -> bool:
        if _is_counted(expr):
            self.tally[0] += 1
        return True


class _TreeNodeCounter(CombineMapper[int]):
    """Counts nodes once per use: the size of the DAG unfolded into a tree."""

    def combine(self, *values: int) -> int:
        return sum(values)

    def map_node(self, expr: Node) -> int:
        return int(_is_counted(expr)) + super().map_node(expr)


def get_num_nodes(expr: ArrayOrNames, count_duplicates: bool = False) -> int:
    """The number of nodes in the DAG of *expr*, including the nodes inside
    the bodies of :class:`~ftlazy.fractal.Map` and
    :class:`~ftlazy.fractal.Scan` nodes.

    The containers :class:`~ftlazy.DictOfNamedArrays` and
    :class:`~ftlazy.fractal.Body` are not counted; loop nodes
    (:class:`~ftlazy.fractal.Map`, :class:`~ftlazy.fractal.Scan`) and the
    :class:`~ftlazy.fractal.LoopResult` arrays reading them are.

    :arg count_duplicates: if *False* (the default), each distinct node is
        counted once per scope (the outer DAG, and each loop node's body).
        Since nodes are interned, structurally equal subexpressions are one
        node. If *True*, a node is counted once per *use*: the result is the
        size of the DAG unfolded into a tree, as though no subexpression
        were shared (it may grow exponentially with the depth of the DAG).
    """
    _check_expr(expr, "get_num_nodes")
    if count_duplicates:
        return _TreeNodeCounter()(expr)
    return count_distinct_nodes(expr)


def count_distinct_nodes(expr: Node) -> int:
    """:func:`get_num_nodes` of any node (a loop, a body, a FractalTensor
    too), each node counted once per scope; no check of *expr*'s type."""
    counter = _DistinctNodeCounter()
    counter(expr)
    return counter.tally[0]

# }}}


# {{{ inputs

class _InputCollector(CachedWalkMapper):
    """Collects input nodes in walk order; body clones share ``found``."""

    def __init__(self) -> None:
        super().__init__()
        self.found: dict[Node, None] = {}

    def visit(self, expr: Node) -> bool:
        if isinstance(expr, _INPUT_TYPES):
            self.found[expr] = None
        return True


def _collect_inputs(expr: ArrayOrNames) -> list[InputNode]:
    collector = _InputCollector()
    collector(expr)
    return list(collector.found)


def get_inputs(expr: ArrayOrNames) -> frozenset[InputNode]:
    """The :class:`~ftlazy.Placeholder`, :class:`~ftlazy.SizeParam` and
    :class:`~ftlazy.DataWrapper` nodes reachable from *expr*.

    Only nodes are reported: a size parameter that occurs *by name* in a
    shape (``make_placeholder("x", (n,), ...)`` with no
    :class:`~ftlazy.SizeParam` node in the DAG) is not a node and is not
    listed. Loop bodies are walked too, though by construction they read
    only their parameters and so add no inputs.
    """
    _check_expr(expr, "get_inputs")
    return frozenset(_collect_inputs(expr))


def check_unique_input_names(expr: ArrayOrNames) -> None:
    """Raise :class:`ValueError` if the inputs of *expr* cannot be bound
    unambiguously by name:

    * two different input nodes (:class:`~ftlazy.Placeholder`,
      :class:`~ftlazy.SizeParam` or named :class:`~ftlazy.DataWrapper`) have
      the same name, e.g. a placeholder ``'x'`` of shape ``(3,)`` and another
      of shape ``(4,)``;
    * a size parameter name used in a shape (of any node, loop bodies
      included) is also the name of a placeholder or data wrapper.

    The message says ``two different inputs are named 'n'`` and describes
    both.
    """
    _check_expr(expr, "check_unique_input_names")
    inputs = _collect_inputs(expr)
    by_name: dict[str, InputNode] = {}
    for inp in inputs:
        if inp.name is None:
            continue
        other = by_name.setdefault(inp.name, inp)
        if other is not inp:
            raise ValueError(
                f"two different inputs are named {inp.name!r}: "
                f"{_describe_input(other)} and {_describe_input(inp)}")
    _check_data_names_against_shapes(inputs, _nodes_with_bodies([expr]))


def check_inputs_against_size_names(inputs: Iterable[Node],
                                    size_names: Iterable[str],
                                    roots: Iterable[Node] = ()) -> None:
    """Raise :class:`ValueError` ``two different inputs are named 'n'`` if a
    :class:`~ftlazy.Placeholder` or named :class:`~ftlazy.DataWrapper` among
    *inputs* has a name in *size_names* (the size parameters used in
    shapes, which are not nodes of the DAG).

    For callers that have collected both already (the evaluators, before
    binding inputs by name): the check is a set intersection. *roots*, the
    DAG's roots, are only walked when there is a clash, to name a shape in
    which the size parameter occurs.
    """
    size_names = set(size_names)
    for inp in inputs:
        if (isinstance(inp, (Placeholder, DataWrapper)) and inp.name is not None
                and inp.name in size_names):
            _check_data_names_against_shapes([inp], _nodes_with_bodies(roots))
            raise ValueError(
                f"two different inputs are named {inp.name!r}: {inp.name!r} is "
                "used as a size parameter in a shape and is also the name of "
                f"{_describe_input(inp)}")


def _nodes_with_bodies(roots: Iterable[Node]) -> Iterator[Node]:
    """Every node reachable from *roots*, loop bodies included (a node
    shared between scopes may come more than once)."""
    stack = [list(roots)]
    while stack:
        for n in topological_order(stack.pop()):
            yield n
            if isinstance(n, Loop):
                stack.append(list(n.body.outputs))


def _check_data_names_against_shapes(inputs: Iterable[Node],
                                     nodes: Iterable[Node]) -> None:
    data_inputs = {inp.name: inp for inp in inputs
                   if isinstance(inp, (Placeholder, DataWrapper))
                   and inp.name is not None}
    if not data_inputs:
        return
    for n in nodes:
        for name in sorted(_shape_names(n) & data_inputs.keys()):
            raise ValueError(
                f"two different inputs are named {name!r}: {name!r} is used as "
                f"a size parameter in shape {shape_str(n.shape)} (of a "
                f"{type(n).__name__}) and is also the name of "
                f"{_describe_input(data_inputs[name])}")


def _describe_input(inp: InputNode) -> str:
    return (f"{type(inp).__name__} of shape {shape_str(inp.shape)} and dtype "
            f"{inp.dtype}")


def _shape_names(n: Node) -> frozenset[str]:
    if not isinstance(n, Array):
        return frozenset()
    return frozenset().union(*(size_param_names(c) for c in n.shape))


# }}}


# {{{ users

def get_users(expr: ArrayOrNames) -> dict[Node, frozenset[Node]]:
    """For every node of the outer DAG of *expr* (loop bodies excluded),
    the set of nodes that have it as a child. Nodes without users (the
    results, and *expr* itself) map to an empty set. A
    :class:`~ftlazy.DictOfNamedArrays` is a user of its arrays, a
    :class:`~ftlazy.fractal.Map` or :class:`~ftlazy.fractal.Scan` of its
    inputs, a :class:`~ftlazy.fractal.LoopResult` of its loop.

    The dictionary lists nodes children first (a topological order).
    """
    _check_expr(expr, "get_users")
    users: dict[Node, set[Node]] = {}
    for n in topological_order([expr]):
        users[n] = set()
        for child in iter_children(n):
            users[child].add(n)
    return {n: frozenset(u) for n, u in users.items()}

# }}}

# vim: foldmethod=marker
