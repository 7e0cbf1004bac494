# SPDX-License-Identifier: MIT
"""The mapper family: transforms and analyses over the DAG.

A mapper dispatches on the node class to a ``map_<snake_case_class_name>``
method (``map_placeholder``, ``map_index_lambda``, ``map_map``, ...), falling
back along the class hierarchy (``map_array``, then ``map_node``), so a user
subclass overrides only the methods it cares about.

The caching bases walk the DAG without recursion: :meth:`CachedMapper.rec`
first lists the unvisited nodes in topological order with an explicit stack,
then maps them children-first, so by the time ``map_foo`` calls
``self.rec(child)`` the child's result is a cache hit. Deep chains of 10^5
nodes need no recursion.

Bodies of :class:`~ftlazy.fractal.Map` and :class:`~ftlazy.fractal.Scan` are
separate scopes with their own parameters; mappers enter them explicitly via
:meth:`map_body`, with a clone of the mapper that has a fresh cache.

.. autoclass:: Mapper
.. autoclass:: CachedMapper
.. autoclass:: CopyMapper
.. autoclass:: CombineMapper
.. autoclass:: WalkMapper
.. autoclass:: CachedWalkMapper
.. autofunction:: map_and_copy
"""

from __future__ import annotations

import copy as _copy
from typing import Any, Callable, Generic, Mapping, ParamSpec, TypeVar

import numpy as np

from ftlazy.node import (
    NODE_CLASSES, Node, child_changes, iter_children, topological_order)

ResultT = TypeVar("ResultT")


def _is_extra_arguments_spec(params: Any) -> bool:
    """Whether *params* subscribes pytato's extra-argument types alone (a
    list of types, a :class:`typing.ParamSpec` or ``...``)."""
    return isinstance(params, (list, ParamSpec)) or params is Ellipsis


class UnsupportedNodeError(NotImplementedError):
    """A mapper met a node class it has no method for."""


class Mapper(Generic[ResultT]):
    """Dispatches ``self.rec(node)`` to ``map_<node class>``.

    The plain :class:`Mapper` does no caching and recurses like pymbolic's
    mappers; prefer the cached bases for large DAGs.
    """

    _dispatch_cache: dict

    def __class_getitem__(cls, params: Any) -> Any:
        # pytato's mappers take up to three type parameters: the result, the
        # result for function definitions and the extra arguments' ParamSpec
        # (``Mapper[Any, Never, []]``, ``CombineMapper[R, F]``,
        # ``WalkMapper[P]``); ftlazy's take the result alone, which is
        # pytato's first, and no extra arguments
        n_params = len(getattr(cls, "__parameters__", ()))
        if isinstance(params, tuple) and len(params) in (2, 3) and n_params == 1:
            params = params[0]
        elif n_params == 0 and _is_extra_arguments_spec(params):
            return cls
        return super().__class_getitem__(params)  # type: ignore[misc]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls._dispatch_cache = {}

    def _method_for(self, node_cls: type) -> Callable:
        cache = type(self)._dispatch_cache
        try:
            name = cache[node_cls]
        except KeyError:
            # the first method along the node's MRO that a mapper class wrote
            # by hand wins over the generic aliases installed below
            name = generic_name = None
            for klass in node_cls.__mro__:
                candidate = getattr(klass, "mapper_method", None)
                method = getattr(self, candidate, None) if candidate else None
                if method is None:
                    continue
                if getattr(getattr(method, "__func__", None), "_ft_generic", False):
                    generic_name = generic_name or candidate
                    continue
                name = candidate
                break
            name = name or generic_name
            cache[node_cls] = name
        if name is None:
            raise UnsupportedNodeError(
                f"{type(self).__name__} has no method for {node_cls.__name__} "
                f"nodes (expected '{node_cls.mapper_method}')")
        return getattr(self, name)

    def rec(self, expr: Node, *args: Any, **kwargs: Any) -> ResultT:
        """Map *expr* by dispatching to its ``map_*`` method."""
        return self._method_for(type(expr))(expr, *args, **kwargs)

    def __call__(self, expr: Node, *args: Any, **kwargs: Any) -> ResultT:
        return self.rec(expr, *args, **kwargs)

    def clone_for_body(self) -> Mapper:
        """A mapper for a body scope: shares configuration, fresh caches.
        Override if the constructor state needs other handling."""
        clone = _copy.copy(self)
        clone._reset_for_body()
        return clone

    def _reset_for_body(self) -> None:
        pass


Mapper._dispatch_cache = {}


class CachedMapper(Mapper[ResultT]):
    """A mapper that maps each node once and walks the DAG iteratively.
    Extra arguments to :meth:`rec` are not supported (results are cached by
    node alone)."""

    #: ``check(mapper, node, result)`` raising for a result a subclass
    #: cannot use (None: every result is kept)
    _result_check: Callable[[Any, Node, Any], None] | None = None

    def __init__(self) -> None:
        self._cache: dict[Node, ResultT] = {}

    def _reset_for_body(self) -> None:
        self._cache = {}

    def rec(self, expr: Node) -> ResultT:  # type: ignore[override]
        cache = self._cache
        try:
            return cache[expr]
        except KeyError:
            pass
        check = self._result_check
        for n in topological_order([expr], skip=cache):
            value = self._method_for(type(n))(n)
            if check is not None:
                check(self, n, value)
            cache[n] = value
        return cache[expr]

    def __call__(self, expr: Node) -> ResultT:  # type: ignore[override]
        return self.rec(expr)


def _check_copy(mapper: Any, node: Node, value: Any) -> None:
    # (nodes, and tuples: transforms may map a loop to its results)
    if not isinstance(value, (Node, tuple)):
        method = mapper._method_for(type(node)).__name__
        hint = (" (wrap data with ft.make_data_wrapper)"
                if isinstance(value, (np.ndarray, np.generic, int, float,
                                      complex)) else "")
        raise TypeError(f"{type(mapper).__name__}.{method} returned "
                        f"{type(value).__name__} for {node!r}: a CopyMapper's "
                        "map_* methods return the node that replaces theirs "
                        f"(the node itself to keep it){hint}")


def _check_same_operands(mapper: Any, expr: Any, old_operands: Mapping[str, Node],
                         new_operands: Mapping[str, Node]) -> None:
    """:class:`ValueError` where the rewritten *new_operands* of *expr*
    differ in shape or dtype from its *old_operands*: it reads them by the
    old ones (an IndexLambda's body, the indices of ``x[:, -1]`` normalized
    against the old shape: an index past the new rows), and its shape and
    dtype were computed from them, so the copy would compute a wrong
    answer."""
    from ftlazy import shapes as sh
    from ftlazy.array import Array
    for name, new in new_operands.items():
        old = old_operands[name]
        if new is old or not isinstance(new, Array):
            continue
        same_shape = (new.shape == old.shape or (
            len(new.shape) == len(old.shape)
            and all(sh.prove_equal(a, b) for a, b in zip(new.shape, old.shape))))
        if same_shape and new.dtype == old.dtype:
            continue
        raise ValueError(
            f"{type(mapper).__name__} replaced an operand of "
            f"{type(expr).__name__} (shape {sh.shape_str(expr.shape)}, dtype "
            f"{expr.dtype}) of shape {sh.shape_str(old.shape)} and dtype "
            f"{old.dtype} by one of shape {sh.shape_str(new.shape)} and dtype "
            f"{new.dtype}: the node reads it by its old shape and dtype, so the "
            "copy would compute a wrong answer. Replace operands by ones of "
            "the same shape and dtype (e.g. data of the placeholder's shape), "
            "or rebuild the nodes that read them with ftlazy's operations")


class CopyMapper(CachedMapper[Node]):
    """Rebuilds the DAG; every node maps to a copy with mapped children
    (the same object where nothing changed). Override ``map_*`` for the
    nodes a transform rewrites."""

    _result_check = staticmethod(_check_copy)

    def map_node(self, expr: Node) -> Node:
        changes = self.mapped_fields(expr)
        kind = type(expr).__name__
        if "bindings" in changes and kind == "IndexLambda":
            _check_same_operands(self, expr, expr.bindings, changes["bindings"])
        if "array" in changes and kind in ("BasicIndex", "AdvancedIndex"):
            _check_same_operands(self, expr, {"array": expr.array},
                                 {"array": changes["array"]})
        return expr.copy(**changes) if changes else expr

    def mapped_fields(self, expr: Node) -> dict:
        """The child and body fields of *expr* that mapping changes, as
        keyword arguments for one :meth:`~ftlazy.node.Node.copy` (children and
        bodies change together: a loop validates them jointly)."""
        changes = child_changes(expr, self.rec)
        for name in expr._body_fields:
            body = getattr(expr, name)
            new_body = self.map_body(body)
            if new_body is not body:
                changes[name] = new_body
        return changes

    def map_body(self, body: Node) -> Node:
        """Map a body (a separate scope) with :meth:`clone_for_body`."""
        return self.clone_for_body().map_node(body)


class CombineMapper(CachedMapper[ResultT]):
    """Combines the results of a node's children (and bodies) with
    :meth:`combine`. Subclasses implement :meth:`combine` and the leaves."""

    def combine(self, *values: ResultT) -> ResultT:
        raise NotImplementedError(
            f"{type(self).__name__} must implement combine(*values): how the "
            "results of a node's children make its own")

    def map_node(self, expr: Node) -> ResultT:
        values = [self.rec(c) for c in iter_children(expr)]
        values += [self.map_body(getattr(expr, name)) for name in expr._body_fields]
        return self.combine(*values)

    def map_body(self, body: Node) -> ResultT:
        return self.clone_for_body().map_node(body)


class WalkMapper(Mapper[None]):
    """Visits nodes: :meth:`visit` before a node's children (return False to
    skip them), :meth:`post_visit` after. Shared subgraphs are visited once
    per path; use :class:`CachedWalkMapper` to visit each node once.
    Iterative: no recursion limit. Bodies are walked by :meth:`map_body`
    after their node's children."""

    def visit(self, expr: Node) -> bool:
        return True

    def post_visit(self, expr: Node) -> None:
        pass

    def _seen(self, expr: Node) -> bool:
        return False

    def rec(self, expr: Node) -> None:  # type: ignore[override]
        stack: list[tuple[Node, bool]] = [(expr, False)]
        while stack:
            n, done = stack.pop()
            if done:
                for name in n._body_fields:
                    self.map_body(getattr(n, name))
                self.post_visit(n)
                continue
            if self._seen(n) or not self.visit(n):
                continue
            stack.append((n, True))
            stack.extend((c, False) for c in reversed(list(iter_children(n))))

    def map_body(self, body: Node) -> None:
        """Walk a body; with a clone so that caches of node identity do not
        mix scopes (the clone shares all other attributes)."""
        self.clone_for_body().rec(body)

    def __call__(self, expr: Node) -> None:  # type: ignore[override]
        self.rec(expr)


class CachedWalkMapper(WalkMapper):
    """A :class:`WalkMapper` that visits each node once per scope."""

    def __init__(self) -> None:
        self._visited: set[Node] = set()

    def _reset_for_body(self) -> None:
        self._visited = set()

    def _seen(self, expr: Node) -> bool:
        if expr in self._visited:
            return True
        self._visited.add(expr)
        return False


class _FunctionCopyMapper(CopyMapper):
    def __init__(self, fn: Callable[[Node], Node]) -> None:
        super().__init__()
        self.fn = fn

    def map_node(self, expr: Node) -> Node:
        return self.fn(super().map_node(expr))


def map_and_copy(expr: Node, fn: Callable[[Node], Node]) -> Node:
    """Copy the DAG of *expr*, applying *fn* to each node after its children
    have been mapped (bodies included)."""
    return _FunctionCopyMapper(fn)(expr)


def _install_named_fallbacks() -> None:
    """Give the bases a named method per known node class (``map_einsum``,
    ...), so ``super().map_einsum(expr)`` works in user subclasses. Each
    alias calls ``self.map_node``, so overriding ``map_node`` still applies."""
    def alias(self, expr):
        return self.map_node(expr)
    alias._ft_generic = True
    for base in (CopyMapper, CombineMapper):
        for cls in NODE_CLASSES:
            if not hasattr(base, cls.mapper_method):
                setattr(base, cls.mapper_method, alias)
