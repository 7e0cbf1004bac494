# SPDX-License-Identifier: MIT
"""Merging equal parts of a DAG: pytato's ``deduplicate`` and
``deduplicate_data_wrappers``.

ftlazy interns its nodes (building a structurally equal node gives the
same object), so equal subexpressions are shared as they are built;
:func:`deduplicate` is there for DAGs rebuilt by user mappers and for code
written for pytato. Data wrappers are equal only when they wrap the same
array object; :func:`deduplicate_data_wrappers` also merges wrappers of
distinct array objects that view the same memory the same way.

.. autofunction:: deduplicate
.. autofunction:: deduplicate_data_wrappers
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ftlazy.array import Array, DataWrapper, DictOfNamedArrays
from ftlazy.node import Node
from ftlazy.transform.mappers import CopyMapper

ArrayOrNames = Array | DictOfNamedArrays


def _check(expr: Any, caller: str) -> None:
    if not isinstance(expr, (Array, DictOfNamedArrays)):
        raise TypeError(f"{caller} expects an Array or a DictOfNamedArrays, got "
                        f"{type(expr).__name__}")


class _Representatives(CopyMapper):
    """Maps every node to the first mapped node equal to it (by
    *key*, structural equality by default)."""

    def __init__(self, key: Any = None) -> None:
        super().__init__()
        self.key = key or (lambda n: n)
        self.seen: dict[Any, Node] = {}

    def _reset_for_body(self) -> None:
        super()._reset_for_body()
        self.seen = {}

    def map_node(self, expr: Node) -> Node:
        new = super().map_node(expr)
        key = self.key(new)
        if key is None:
            return new
        return self.seen.setdefault(key, new)


def deduplicate(expr: ArrayOrNames) -> ArrayOrNames:
    """*expr* with structurally equal subexpressions merged into one node
    (loop bodies too, each in its own scope)."""
    _check(expr, "deduplicate")
    return _Representatives()(expr)


def _memory_key(data: Any) -> tuple | None:
    """Where and how *data* (a numpy or pyopencl array) lies in memory:
    equal keys mean equal views of the same memory. None where that cannot
    be told."""
    if isinstance(data, np.ndarray):
        address = data.__array_interface__["data"][0]
        return ("host", address, data.shape, data.strides, data.dtype.str)
    base = getattr(data, "base_data", None)
    if hasattr(data, "offset") and hasattr(data, "strides"):
        if base is None:
            # an empty pyopencl array has no buffer: views of nothing
            return (("device-empty", data.shape, data.dtype.str)
                    if data.size == 0 else None)
        return ("device", base.int_ptr, data.offset, data.shape, data.strides,
                data.dtype.str)
    return None


def _wrapper_key(node: Node) -> tuple | None:
    if not isinstance(node, DataWrapper):
        return None
    memory = _memory_key(node.data)
    if memory is None:
        return None
    return (memory, node.shape, node.tags, node.axes)


def deduplicate_data_wrappers(expr: ArrayOrNames) -> ArrayOrNames:
    """*expr* with data wrappers that view the same memory with the same
    shape, strides, dtype, tags and axes merged into one (the first met in a
    children-first walk keeps its name). Wrappers of the same array object
    are one node already."""
    _check(expr, "deduplicate_data_wrappers")
    return _Representatives(_wrapper_key)(expr)
