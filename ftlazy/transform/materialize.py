# SPDX-License-Identifier: MIT
"""pytato's materialization heuristic, as a tagging pass:
:func:`materialize_with_mpms`.

ftlazy's planner decides by itself which arrays to store (see
``doc/design.rst``); this pass only adds :class:`~ftlazy.tags.ImplStored`
tags where pytato's heuristic would store, for code that relies on it.

.. autofunction:: materialize_with_mpms
"""

from __future__ import annotations

from typing import Any

from ftlazy.array import (
    Array, DataWrapper, DictOfNamedArrays, Placeholder, SizeParam)
from ftlazy.node import Node, iter_children
from ftlazy.tags import ImplStored
from ftlazy.transform.mappers import CopyMapper

_SOURCES = (Placeholder, DataWrapper, SizeParam)


class _TagStored(CopyMapper):
    def __init__(self, stored: set[Node]) -> None:
        super().__init__()
        self.stored = stored

    def map_node(self, expr: Node) -> Node:
        new = super().map_node(expr)
        if expr in self.stored:
            new = new.tagged(ImplStored())
        return new


def materialize_with_mpms(expr: Array | DictOfNamedArrays) -> Any:
    """Tag with :class:`~ftlazy.tags.ImplStored` every array of the outer
    DAG of *expr* that has more than one user and depends on more than one
    materialized array ("multiple predecessors, multiple successors":
    inputs, and arrays stored by this rule or by an earlier tag, count as
    materialized; a node's dependence stops at a materialized array). Such
    an array, computed inline, would be recomputed by each user from several
    stored inputs. Results are not tagged for being results."""
    if not isinstance(expr, (Array, DictOfNamedArrays)):
        raise TypeError("materialize_with_mpms expects an Array or a "
                        f"DictOfNamedArrays, got {type(expr).__name__}")
    from ftlazy.analysis import get_users  # (analysis imports this package)
    users = get_users(expr)
    sources: dict[Node, frozenset[Node]] = {}
    stored: set[Node] = set()
    for node in users:  # children first
        if isinstance(node, _SOURCES):
            sources[node] = frozenset([node])
            continue
        deps = frozenset().union(*(sources[c] for c in iter_children(node)))
        if isinstance(node, Array) and not node.tags_of_type(ImplStored) and (
                len(users[node]) > 1 and len(deps) > 1):
            stored.add(node)
        materialized = node in stored or (
            isinstance(node, Array) and node.tags_of_type(ImplStored))
        sources[node] = frozenset([node]) if materialized else deps
    return _TagStored(stored)(expr) if stored else expr
