# SPDX-License-Identifier: MIT
"""The one way to declare a DAG node: :func:`node`.

A node class is a frozen, slotted dataclass. Construction *interns* the
node: building a node that is structurally equal to a live one returns the
live one. Structural equality is therefore identity, and the structural hash
is computed once, at construction, from the children's cached hashes. Neither
equality nor hashing ever walks the DAG, so 100,000-node chains are cheap.

Each class declares which of its fields hold children (arrays the mappers
visit) and which hold bodies (sub-DAGs with their own parameters, visited
through explicit mapper methods).
"""

from __future__ import annotations

import dataclasses
import re
import weakref
from collections.abc import Iterator, Mapping
from typing import Any, Callable, ClassVar, TypeVar

T = TypeVar("T")


class IdentityKey:
    """Wraps an object that takes part in a node's identity by ``id`` (e.g.
    a numpy array held by a data wrapper)."""

    __slots__ = ("obj",)

    def __init__(self, obj: Any) -> None:
        self.obj = obj

    def __hash__(self) -> int:
        return id(self.obj)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, IdentityKey) and other.obj is self.obj


class FrozenDict(Mapping):
    """An immutable, hashable mapping that keeps insertion order."""

    __slots__ = ("_d", "_hash")

    def __init__(self, items: Mapping | Any = ()) -> None:
        self._d = dict(items)
        self._hash = hash(tuple(self._d.items()))

    def __getitem__(self, key):
        return self._d[key]

    def __iter__(self):
        return iter(self._d)

    def __len__(self) -> int:
        return len(self._d)

    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other: object) -> bool:
        if self is other:
            return True
        if isinstance(other, FrozenDict):
            return (self._hash == other._hash
                    and tuple(self._d.items()) == tuple(other._d.items()))
        return NotImplemented

    def __repr__(self) -> str:
        return f"FrozenDict({self._d!r})"


_INTERNED: weakref.WeakValueDictionary = weakref.WeakValueDictionary()


class TraceScope:
    """The scope of a loop body: the nodes a traced function computes from
    its parameters belong to it (see :attr:`Node.scopes`).

    .. attribute:: what

        Which loop traced the body (``"ft.map"``), for messages.

    .. attribute:: active

        Whether the body is still being traced. Once it is closed, its nodes
        exist only inside the loop: a node built over one of them is a
        :class:`LeakedArrayError`, a :class:`ValueError`
        (:func:`leaked_array_message`).
    """

    __slots__ = ("what", "active")

    def __init__(self, what: str, active: bool = True) -> None:
        self.what = what
        self.active = active

    def __repr__(self) -> str:
        state = "active" if self.active else "closed"
        return f"TraceScope({self.what!r}, {state})"


#: the scope of the nodes inside closed bodies, which depend on positional
#: :class:`~ftlazy.fractal.BodyParam` nodes shared by every body; always
#: active, since transformations rebuild bodies outside any trace
CLOSED_BODY_SCOPE = TraceScope("closed loop body")

_NO_SCOPES: frozenset = frozenset()


class LeakedArrayError(ValueError):
    """A node built over a node of a closed loop body (see
    :func:`leaked_array_message`)."""


def leaked_array_message(array: Any, scope: TraceScope, user: Any) -> str:
    """The message for *array*, which belongs to the body traced in
    *scope*, used by *user* outside that body."""
    if scope is CLOSED_BODY_SCOPE:
        return (f"{array!r} belongs to the body of a loop (it is computed from "
                f"the body's parameters) and cannot be used outside it, as "
                f"{type(user).__name__} does")
    return (f"{array!r} was computed inside the body of an {scope.what} (from "
            f"the parameters of the traced function) and belongs to that loop "
            f"body: it cannot be used outside it (here by a new "
            f"{type(user).__name__}) once the {scope.what} has been built; "
            "return it from the body as an extra result instead")


class _InterningMeta(type):
    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        obj = super().__call__(*args, **kwargs)
        scopes = obj._own_scopes()
        if cls._child_fields:
            for child in iter_children(obj):
                child_scopes = getattr(child, "scopes", _NO_SCOPES)
                if not child_scopes or child_scopes is scopes:
                    continue
                for scope in child_scopes:
                    if not scope.active:
                        raise LeakedArrayError(
                            leaked_array_message(child, scope, obj))
                scopes = (child_scopes if not scopes
                          else scopes | child_scopes)
        object.__setattr__(obj, "scopes", scopes)
        key = obj._structural_key()
        existing = _INTERNED.get(key)
        if existing is not None:
            return existing
        object.__setattr__(obj, "_hash", hash(key))
        _INTERNED[key] = obj
        return obj


class Node(metaclass=_InterningMeta):
    """Base of every interned DAG node (arrays and multi-output nodes).

    .. attribute:: scopes

        The :class:`TraceScope` objects of the loop bodies whose parameters
        this node depends on through its children (an empty frozenset for
        nodes outside loop bodies, the usual case). Computed once, at
        construction, from the children's.
    """

    __slots__ = ("_hash", "scopes", "__weakref__")

    #: names of fields holding child nodes (a node, a tuple of nodes or a
    #: mapping of names to nodes)
    _child_fields: ClassVar[tuple[str, ...]] = ()
    #: names of fields holding :class:`Body` objects
    _body_fields: ClassVar[tuple[str, ...]] = ()
    #: names of all ``init`` fields, in order
    _init_fields: ClassVar[tuple[str, ...]] = ()
    mapper_method: ClassVar[str] = "map_node"

    def _key_value(self, name: str) -> Any:
        """The value of field *name* as it takes part in structural identity."""
        return getattr(self, name)

    def _own_scopes(self) -> frozenset:
        """The scopes this node belongs to by itself (body parameters)."""
        return _NO_SCOPES

    def _structural_key(self) -> tuple:
        return (type(self),) + tuple(self._key_value(f) for f in self._init_fields)

    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other: object) -> bool:
        return self is other

    def __ne__(self, other: object) -> bool:
        return self is not other

    def copy(self: T, **changes: Any) -> T:
        """A node like this one with the given fields replaced."""
        kwargs = {f: getattr(self, f) for f in self._init_fields}
        kwargs.update(changes)
        return type(self)(**kwargs)

    def __reduce__(self):
        # (the DAG as a flat list, children by position: pickling nested
        # nodes recursed about ten frames per level, so a chain of 100
        # nodes hit Python's recursion limit; a body's nodes pickle as
        # their own DAG)
        return (_rebuild_dag, (_flat_dag(self),))


class _Ref:
    """A child in a :func:`_flat_dag` entry: the node at *position*."""

    __slots__ = ("position",)

    def __init__(self, position: int) -> None:
        self.position = position

    def __reduce__(self):
        return (_Ref, (self.position,))


def _flat_dag(root: Node) -> list[tuple[type, dict]]:
    """The nodes reachable from *root* through children, children first
    (*root* last), each as ``(class, fields)`` with its children as
    :class:`_Ref`."""
    order = topological_order([root])
    position = {n: k for k, n in enumerate(order)}

    def ref(value: Any) -> Any:
        return _Ref(position[value]) if isinstance(value, Node) else value

    entries = []
    for n in order:
        fields = {f: getattr(n, f) for f in n._init_fields}
        for name in n._child_fields:
            value = fields[name]
            if isinstance(value, Node):
                fields[name] = ref(value)
            elif isinstance(value, Mapping):
                fields[name] = {k: ref(v) for k, v in value.items()}
            else:
                fields[name] = tuple(ref(v) for v in value)
        entries.append((type(n), fields))
    return entries


def _rebuild_dag(entries: list[tuple[type, dict]]) -> Any:
    built: list[Any] = []

    def resolve(value: Any) -> Any:
        return built[value.position] if isinstance(value, _Ref) else value

    for cls, fields in entries:
        for name in cls._child_fields:
            value = fields[name]
            if isinstance(value, _Ref):
                fields[name] = resolve(value)
            elif isinstance(value, Mapping):
                fields[name] = FrozenDict({k: resolve(v) for k, v in value.items()})
            else:
                fields[name] = tuple(resolve(v) for v in value)
        built.append(cls(**fields))
    return built[-1]



#: every class declared with :func:`node`, in declaration order
NODE_CLASSES: list[type] = []


def _snake_case(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def _refuse_setattr(self: Any, name: str, value: Any) -> None:
    raise dataclasses.FrozenInstanceError(
        f"cannot set {name!r} on a {type(self).__name__}: ftlazy nodes are "
        "immutable; build a new node (node.copy(...), .tagged(...), or an "
        "ftlazy operation)")


def _refuse_delattr(self: Any, name: str) -> None:
    raise dataclasses.FrozenInstanceError(
        f"cannot delete {name!r} of a {type(self).__name__}: ftlazy nodes "
        "are immutable")


def node(children: tuple[str, ...] = (), bodies: tuple[str, ...] = ()
         ) -> Callable[[type[T]], type[T]]:
    """Class decorator declaring a DAG node.

    :arg children: names of fields holding child nodes.
    :arg bodies: names of fields holding :class:`ftlazy.fractal.Body` objects.
    """
    def wrap(cls: type[T]) -> type[T]:
        cls = dataclasses.dataclass(frozen=True, slots=True, eq=False,
                                    repr=False)(cls)
        cls._child_fields = tuple(children)
        cls._body_fields = tuple(bodies)
        cls._init_fields = tuple(f.name for f in dataclasses.fields(cls)
                                 if f.init)
        if "mapper_method" not in cls.__dict__ or not cls.__dict__["mapper_method"]:
            cls.mapper_method = "map_" + _snake_case(cls.__name__)
        # comparisons are inherited (Array refines them); a class that
        # defines __eq__ without __hash__ would otherwise be unhashable
        if cls.__hash__ is None:
            cls.__hash__ = Node.__hash__
        # (the frozen dataclass's own refusal of an attribute that is not a
        # field fails inside Python for slotted classes: "super(type, obj):
        # obj must be an instance or subtype of type")
        cls.__setattr__ = _refuse_setattr
        cls.__delattr__ = _refuse_delattr
        NODE_CLASSES.append(cls)
        return cls
    return wrap


def iter_children(n: Node) -> Iterator[Node]:
    """Yield the child nodes of *n* in declaration order (with repeats)."""
    for name in n._child_fields:
        value = getattr(n, name)
        if isinstance(value, Node):
            yield value
        elif isinstance(value, Mapping):
            yield from value.values()
        else:
            yield from value


def map_children(n: Node, fn: Callable[[Node], Node]) -> Node:
    """Rebuild *n* with every child replaced by ``fn(child)``; returns *n*
    itself when no child changed."""
    changes = child_changes(n, fn)
    return n.copy(**changes) if changes else n


def child_changes(n: Node, fn: Callable[[Node], Node]) -> dict[str, Any]:
    """The child fields of *n* that differ after applying *fn* to every
    child, as keyword arguments for :meth:`Node.copy`."""
    changes: dict[str, Any] = {}
    for name in n._child_fields:
        value = getattr(n, name)
        if isinstance(value, Node):
            new = fn(value)
            if new is not value:
                changes[name] = new
        elif isinstance(value, Mapping):
            new_map = {k: fn(v) for k, v in value.items()}
            if any(new_map[k] is not v for k, v in value.items()):
                changes[name] = FrozenDict(new_map)
        else:
            new_tup = tuple(fn(v) for v in value)
            if any(a is not b for a, b in zip(new_tup, value)):
                changes[name] = new_tup
    return changes


def topological_order(roots: Iterator[Node] | list[Node],
                      skip: Any = ()) -> list[Node]:
    """All nodes reachable from *roots* through children (not bodies),
    children before users, each once. Nodes in *skip* (a container) are
    neither listed nor entered. Iterative: no recursion limit."""
    order: list[Node] = []
    visited: set[int] = set()
    for root in roots:
        if id(root) in visited or root in skip:
            continue
        stack: list[tuple[Node, Iterator[Node]]] = [(root, iter_children(root))]
        visited.add(id(root))
        while stack:
            top, it = stack[-1]
            for child in it:
                if id(child) not in visited and child not in skip:
                    visited.add(id(child))
                    stack.append((child, iter_children(child)))
                    break
            else:
                stack.pop()
                order.append(top)
    return order
