# SPDX-License-Identifier: MIT
"""FractalTensor-style nested parallelism: :func:`map`, :func:`scan`,
:func:`fold`, :func:`reduce`, :func:`gather` and :func:`scatter`.

``map`` and ``scan`` trace a Python function once into a :class:`Body`: a
self-contained sub-DAG over positional :class:`BodyParam` nodes. Arrays the
function closes over (weights) are *captured*: they become extra inputs of
the loop node and extra parameters of the body, so a body never refers to
nodes outside itself. Loop nodes may have several results (tuples), each
read through a :class:`LoopResult` array.

.. autoclass:: Body
.. autoclass:: BodyParam
.. autoclass:: Map
.. autoclass:: Scan
.. autoclass:: LoopResult
.. autoclass:: Gather
.. autoclass:: Scatter
.. autofunction:: map
.. autofunction:: scan
.. autofunction:: fold
.. autofunction:: reduce
.. autofunction:: gather
.. autofunction:: scatter
.. autofunction:: check_not_body_local

Bundles of names (pytrees): :func:`map`, :func:`scan`, :func:`fold` and
:func:`reduce` take and return any nesting of tuples, lists,
:class:`~typing.NamedTuple` s and dicts of arrays. Dicts keep the key order
they are given in (no sorting); a carry that a body returns is matched to
*init* by key.

.. autoclass:: TreeStructure
.. autofunction:: tree_flatten
.. autofunction:: tree_unflatten
.. autofunction:: tree_leaves_like

An array computed inside a traced function belongs to that body: the
traced function's parameters become positional :class:`BodyParam` nodes
when the body is closed, so such an array has no value outside the loop.
Each node records, in :attr:`~ftlazy.node.Node.scopes`, the
:class:`~ftlazy.node.TraceScope` of every body whose parameters it depends
on (computed once at construction from its children's); building a node
over an array of a body that has been closed, capturing one in another
body, or evaluating one is a :class:`ValueError` that names the array.
"""

from __future__ import annotations

import builtins
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np
import pymbolic.primitives as prim

from ftlazy import shapes as sh
from ftlazy.array import Array, check_direct_input_names, normalize_dtype
from ftlazy.node import (
    CLOSED_BODY_SCOPE, IdentityKey, Node, TraceScope, iter_children,
    map_children, node, topological_order)
from ftlazy.shapes import Shape, ShapeComponent


# {{{ nodes

@node()
class BodyParam(Array):
    """Parameter number :attr:`index` of the enclosing :class:`Body`."""

    index: int
    shape: Shape
    dtype: np.dtype

    def _infer(self) -> None:
        object.__setattr__(self, "shape", sh.normalize_shape(self.shape))
        object.__setattr__(self, "dtype", normalize_dtype(self.dtype))

    def _own_scopes(self) -> frozenset:
        return _CLOSED_BODY_SCOPES

    def _repr_extra(self) -> str:
        return f", index={self.index}"


_CLOSED_BODY_SCOPES = frozenset((CLOSED_BODY_SCOPE,))


class _TraceToken:
    """The identity of one trace parameter, and the scope of its body."""

    __slots__ = ("scope", "scopes")

    def __init__(self, scope: TraceScope) -> None:
        self.scope = scope
        self.scopes = frozenset((scope,))


@node()
class _TraceParam(Array):
    """A unique stand-in for a body parameter while a function is traced."""

    token: Any
    shape: Shape
    dtype: np.dtype

    def _key_value(self, name: str) -> Any:
        return IdentityKey(self.token) if name == "token" else getattr(self, name)

    def _own_scopes(self) -> frozenset:
        return getattr(self.token, "scopes", frozenset())


@node(children=("params", "outputs"))
class Body(Node):
    """A traced function: :attr:`outputs` are arrays over :attr:`params`."""

    params: tuple[BodyParam, ...]
    outputs: tuple[Array, ...]

    def __repr__(self) -> str:
        from ftlazy.display import node_repr
        return node_repr(self)

    def _repr_html_(self) -> str:
        from ftlazy.display import node_html
        return node_html(self)


class Loop(Node):
    """Base of nodes with a body and possibly several results."""

    __slots__ = ()

    def __repr__(self) -> str:
        """One line: what the loop runs over, its carries, inputs, results,
        nesting depth and node count (see :mod:`ftlazy.display`)."""
        from ftlazy.display import node_repr
        return node_repr(self)

    def _repr_html_(self) -> str:
        from ftlazy.display import node_html
        return node_html(self)

    def output_shape(self, index: int) -> Shape:
        raise NotImplementedError

    def output_dtype(self, index: int) -> np.dtype:
        raise NotImplementedError

    @property
    def num_outputs(self) -> int:
        raise NotImplementedError

    @property
    def length(self) -> ShapeComponent:
        raise NotImplementedError


class CarryLoop(Loop):
    """Base of sequential loops whose results are their carries: inputs
    begin with the :attr:`num_carries` initial carries; with ``keep_all``
    result ``k`` stacks carry ``k`` after each of the :attr:`length`
    steps, else it is the last carry."""

    __slots__ = ()

    @property
    def inits(self) -> tuple[Array, ...]:
        return self.inputs[:self.num_carries]

    @property
    def num_outputs(self) -> int:
        return self.num_carries

    def output_shape(self, index: int) -> Shape:
        shape = self.inits[index].shape
        return ((self.length,) + shape) if self.keep_all else shape

    def output_dtype(self, index: int) -> np.dtype:
        return self.inits[index].dtype


def _check_lengths(arrays: tuple[Array, ...], what: str) -> ShapeComponent:
    for a in arrays:
        if a.ndim == 0:
            raise ValueError(f"{what}: inputs must have at least one axis, got a "
                             f"0-d array {a!r}")
    first = arrays[0]
    for a in arrays[1:]:
        if not sh.prove_equal(first.shape[0], a.shape[0]):
            raise ValueError(f"{what}: inputs have different lengths: shapes "
                             f"{sh.shape_str(first.shape)} and "
                             f"{sh.shape_str(a.shape)}")
    return first.shape[0]


@node(children=("inputs",), bodies=("body",))
class Map(Loop):
    """Applies :attr:`body` to element ``i`` (along axis 0) of each of the
    first :attr:`num_mapped` inputs, passing the remaining (captured) inputs
    whole; result ``k`` stacks output ``k`` of each application."""

    body: Body
    inputs: tuple[Array, ...]
    num_mapped: int

    def __post_init__(self) -> None:
        object.__setattr__(self, "inputs", tuple(self.inputs))
        check_direct_input_names(self)
        _check_lengths(self.inputs[:self.num_mapped], "map")
        _check_params(self.body, [a.shape[1:] for a in self.mapped]
                      + [a.shape for a in self.captured],
                      [a.dtype for a in self.inputs], "map")

    @property
    def mapped(self) -> tuple[Array, ...]:
        return self.inputs[:self.num_mapped]

    @property
    def captured(self) -> tuple[Array, ...]:
        return self.inputs[self.num_mapped:]

    @property
    def length(self) -> ShapeComponent:
        return self.inputs[0].shape[0]

    @property
    def num_outputs(self) -> int:
        return len(self.body.outputs)

    def output_shape(self, index: int) -> Shape:
        return (self.length,) + self.body.outputs[index].shape

    def output_dtype(self, index: int) -> np.dtype:
        return self.body.outputs[index].dtype


@node(children=("inputs",), bodies=("body",))
class Scan(CarryLoop):
    """A sequential loop. Inputs are the :attr:`num_carries` initial carries,
    then :attr:`num_scanned` sequences (read element by element along axis
    0), then captured arrays; body parameters come in the same order and the
    body's outputs are the new carries. With :attr:`keep_all` result ``k``
    stacks every carry ``k`` after each step (``scan``), else it is the last
    carry (``fold``; the initial carry for an empty sequence)."""

    body: Body
    inputs: tuple[Array, ...]
    num_carries: int
    num_scanned: int
    keep_all: bool = True

    def __post_init__(self) -> None:
        object.__setattr__(self, "inputs", tuple(self.inputs))
        check_direct_input_names(self)
        _check_lengths(self.scanned, "scan")
        _check_params(self.body, [a.shape for a in self.inits]
                      + [a.shape[1:] for a in self.scanned]
                      + [a.shape for a in self.captured],
                      [a.dtype for a in self.inputs], "scan")
        if len(self.body.outputs) != self.num_carries:
            raise ValueError(f"scan: the body returns {len(self.body.outputs)} "
                             f"arrays for {self.num_carries} carries")
        check_carries(self.inits, self.body.outputs, "scan")

    @property
    def scanned(self) -> tuple[Array, ...]:
        return self.inputs[self.num_carries:self.num_carries + self.num_scanned]

    @property
    def captured(self) -> tuple[Array, ...]:
        return self.inputs[self.num_carries + self.num_scanned:]

    @property
    def length(self) -> ShapeComponent:
        return self.scanned[0].shape[0]


def check_carries(inits: Any, outputs: Any, what: str) -> None:
    """Each new carry a loop body returns keeps its init's shape
    (:class:`ValueError`) and dtype (:class:`TypeError`)."""
    for i, (init, new) in enumerate(zip(inits, outputs)):
        if not sh.shapes_equal(init.shape, new.shape):
            raise ValueError(f"{what}: the body changes the shape of carry {i} "
                             f"from {sh.shape_str(init.shape)} to "
                             f"{sh.shape_str(new.shape)}")
        if init.dtype != new.dtype:
            raise TypeError(f"{what}: the body changes the dtype of carry {i} "
                            f"from {init.dtype} to {new.dtype}")


def check_captured_params(body: Body, captured: tuple, what: str,
                          per_element: frozenset[int] = frozenset()) -> None:
    """:class:`ValueError` unless the last parameters of *body* have the
    shapes and dtypes of the *captured* arrays that a loop passes to them
    whole (a transform that replaced one by an array of another shape);
    the captured arrays at the positions *per_element* are read an entry
    per element instead, and not checked."""
    if len(captured) > len(body.params):
        raise ValueError(f"{what}: body has {len(body.params)} parameters for "
                         f"{len(captured)} captured arrays")
    params = body.params[len(body.params) - len(captured):]
    for k, (p, a) in enumerate(zip(params, captured)):
        if k in per_element:
            continue
        if not sh.shapes_equal(p.shape, a.shape) or p.dtype != a.dtype:
            raise ValueError(f"{what}: body parameter {p.index} has shape "
                             f"{sh.shape_str(p.shape)} and dtype {p.dtype}, the "
                             f"array it captured {sh.shape_str(a.shape)} and "
                             f"{a.dtype}")


def _check_params(body: Body, shapes: list, dtypes: list, what: str) -> None:
    if len(body.params) != len(shapes):
        raise ValueError(f"{what}: body has {len(body.params)} parameters for "
                         f"{len(shapes)} inputs")
    for p, shape, dtype in zip(body.params, shapes, dtypes):
        if not sh.shapes_equal(p.shape, shape) or p.dtype != dtype:
            raise ValueError(f"{what}: body parameter {p.index} has shape "
                             f"{sh.shape_str(p.shape)} and dtype {p.dtype}, its "
                             f"input gives {sh.shape_str(shape)} and {dtype}")


@node(children=("loop",))
class LoopResult(Array):
    """Result number :attr:`index` of a :class:`Map` or :class:`Scan`."""

    loop: Loop
    index: int
    shape: Shape = field(init=False)
    dtype: np.dtype = field(init=False)

    def _infer(self) -> None:
        if not 0 <= self.index < self.loop.num_outputs:
            raise IndexError(f"loop has {self.loop.num_outputs} results, "
                             f"asked for {self.index}")
        object.__setattr__(self, "shape", self.loop.output_shape(self.index))
        object.__setattr__(self, "dtype", self.loop.output_dtype(self.index))


@node(children=("array", "indices"))
class Gather(Array):
    """``numpy.take(array, indices, axis)``: a data-dependent read. Indices
    must lie in ``[-len, len)`` of the axis (negative ones count from the
    end); others are an :class:`IndexError` at run time."""

    array: Array
    indices: Array
    axis: int = 0
    shape: Shape = field(init=False)
    dtype: np.dtype = field(init=False)

    def _infer(self) -> None:
        if not 0 <= self.axis < self.array.ndim:
            raise ValueError(f"gather axis {self.axis} out of range for array of "
                             f"shape {sh.shape_str(self.array.shape)}")
        if self.indices.dtype.kind not in "iu":
            raise TypeError(f"gather indices must have an integer dtype, got "
                            f"{self.indices.dtype}")
        shape = (self.array.shape[:self.axis] + self.indices.shape
                 + self.array.shape[self.axis + 1:])
        object.__setattr__(self, "shape", shape)
        object.__setattr__(self, "dtype", self.array.dtype)


#: the modes of :func:`scatter`
SCATTER_MODES = ("set", "add")


@node(children=("x", "indices", "updates"))
class Scatter(Array):
    """A copy of :attr:`x` whose rows (along axis 0) at :attr:`indices` (a
    1-D integer array of length ``m``) are replaced by (:attr:`mode`
    ``"set"``; of duplicate indices the last one wins) or increased by
    (``"add"``; duplicates add up) the rows of :attr:`updates`, of shape
    ``(m, *x.shape[1:])`` and of :attr:`x`'s dtype. Indices must lie in
    ``[-len, len)`` (negative ones count from the end); others are an
    :class:`IndexError` at run time. :func:`scatter` builds one."""

    x: Array
    indices: Array
    updates: Array
    mode: str = "set"
    shape: Shape = field(init=False)
    dtype: np.dtype = field(init=False)

    def _infer(self) -> None:
        _check_scatter_operands(self.x, self.indices, self.mode)
        expected = self.indices.shape + self.x.shape[1:]
        if not sh.shapes_equal(self.updates.shape, expected):
            raise ValueError(f"scatter: updates must have the shape "
                             f"{sh.shape_str(expected)} (the indices' length, "
                             f"then the rows of x), got "
                             f"{sh.shape_str(self.updates.shape)}")
        if self.updates.dtype != self.x.dtype:
            raise TypeError(f"scatter: updates must have x's dtype {self.x.dtype}, "
                            f"got {self.updates.dtype}")
        object.__setattr__(self, "shape", self.x.shape)
        object.__setattr__(self, "dtype", self.x.dtype)

    def _repr_extra(self) -> str:
        return f", mode={self.mode!r}"


def _check_known_indices(indices: Any, length: Any, what: str,
                         shape: tuple) -> None:
    """Raise :class:`IndexError` where *indices* are known at build time
    (numpy data, nested lists, a data wrapper of numpy data) and some are
    outside ``[-length, length)`` for a concrete *length*; others are
    checked at run time."""
    from ftlazy.array import DataWrapper
    if isinstance(indices, DataWrapper):
        indices = indices.data
    if not isinstance(length, int) or not isinstance(
            indices, (np.ndarray, np.generic, list, tuple, builtins.int)):
        return
    data = np.asarray(indices)
    if data.size == 0 or data.dtype.kind not in "iu":
        return
    lo, hi = builtins.int(data.min()), builtins.int(data.max())
    bad = hi if hi >= length else lo if lo < -length else None
    if bad is not None:
        raise IndexError(f"{what}: index {bad} is out of bounds for an axis of "
                         f"length {length}{sh.internal_sizes_note(shape)}")


def _check_scatter_operands(x: Array, indices: Array, mode: Any) -> None:
    """The checks of :func:`scatter`'s operands that do not involve the
    updates (which :func:`scatter` broadcasts and casts first)."""
    if mode not in SCATTER_MODES:
        raise ValueError(f"scatter mode must be one of {SCATTER_MODES}, got "
                         f"{mode!r}")
    if x.ndim == 0:
        raise ValueError(f"scatter: x must have at least one axis (rows are "
                         f"written along axis 0), got a 0-d array {x!r}")
    if indices.dtype.kind not in "iu":
        raise TypeError(f"scatter indices must have an integer dtype, got "
                        f"{indices.dtype}")
    if indices.ndim != 1:
        raise ValueError(f"scatter indices must be a 1-D array, got shape "
                         f"{sh.shape_str(indices.shape)}")

# }}}


# {{{ bundles of names (pytrees)

@dataclass(frozen=True)
class TreeStructure:
    """The structure of a bundle of names (a pytree): nested tuples, lists,
    :class:`~typing.NamedTuple` s and dicts whose leaves are arrays (or
    numbers). :data:`LEAF` stands for one leaf. Dicts keep their keys in the
    order given (insertion order), and a dict is rebuilt in that order.

    .. attribute:: kind

        The container type (``tuple``, ``list``, ``dict``, a NamedTuple
        class, ...), or None for a leaf.

    .. attribute:: keys

        A dict's keys, in order (empty for other kinds).

    .. attribute:: children

        The structure of each item (of each value, for dicts).
    """

    kind: type | None
    keys: tuple = ()
    children: tuple[TreeStructure, ...] = ()

    @property
    def num_leaves(self) -> int:
        """How many leaves the structure holds."""
        if self.kind is None:
            return 1
        return builtins.sum(c.num_leaves for c in self.children)

    def __str__(self) -> str:
        if self.kind is None:
            return "*"
        items = [str(c) for c in self.children]
        if _is_namedtuple_type(self.kind):
            return (f"{self.kind.__name__}("
                    + ", ".join(f"{name}={item}" for name, item in
                                zip(self.kind._fields, items)) + ")")
        if issubclass(self.kind, dict):
            body = "{" + ", ".join(f"{k!r}: {item}"
                                   for k, item in zip(self.keys, items)) + "}"
            return body if self.kind is dict else f"{self.kind.__name__}({body})"
        if issubclass(self.kind, list):
            body = "[" + ", ".join(items) + "]"
            return body if self.kind is list else f"{self.kind.__name__}({body})"
        body = "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"
        return body if self.kind is tuple else f"{self.kind.__name__}{body}"


#: the structure of a single leaf
LEAF = TreeStructure(None)


def _is_namedtuple_type(kind: type) -> bool:
    return issubclass(kind, tuple) and hasattr(kind, "_fields")


def tree_flatten(tree: Any, what: str = "tree") -> tuple[list[Any], TreeStructure]:
    """The leaves of *tree* (depth first, dict values in key order as given)
    and its :class:`TreeStructure`. Tuples (NamedTuples included), lists
    and dicts (subclasses included) are containers; sets, which have no
    order, are a :class:`TypeError` naming *what* (the caller's inputs);
    anything else is a leaf."""
    if isinstance(tree, (set, frozenset)):
        raise TypeError(f"{what}: a {type(tree).__name__} has no order; bundle "
                        f"arrays in a tuple, list, NamedTuple or dict, got {tree!r}")
    if isinstance(tree, dict):
        keys = tuple(tree)
        values = [tree[k] for k in keys]
    elif isinstance(tree, (tuple, list)):
        keys, values = (), list(tree)
    else:
        return [tree], LEAF
    leaves: list[Any] = []
    children = []
    for value in values:
        sub_leaves, sub = tree_flatten(value, what)
        leaves.extend(sub_leaves)
        children.append(sub)
    return leaves, TreeStructure(type(tree), keys, tuple(children))


def tree_unflatten(leaves: list[Any], structure: TreeStructure) -> Any:
    """Rebuild a tree of *structure* from its *leaves* (in the order of
    :func:`tree_flatten`): NamedTuples as ``kind(*items)``, dicts as
    ``kind(zip(keys, items))``, other tuples and lists as ``kind(items)``."""
    if len(leaves) != structure.num_leaves:
        raise ValueError(f"tree_unflatten: {len(leaves)} leaves for the "
                         f"structure {structure}, which has "
                         f"{structure.num_leaves}")
    return _unflatten_from(iter(leaves), structure)


def _unflatten_from(leaves: Any, structure: TreeStructure) -> Any:
    if structure.kind is None:
        return next(leaves)
    items = [_unflatten_from(leaves, c) for c in structure.children]
    kind = structure.kind
    if _is_namedtuple_type(kind):
        return kind(*items)
    if issubclass(kind, dict):
        return kind(zip(structure.keys, items))
    return kind(items)


def tree_leaves_like(tree: Any, structure: TreeStructure, what: str,
                     expected: str, got: str) -> list[Any]:
    """The leaves of *tree* in the order of *structure*, which *tree* must
    have: the same containers, with dicts matched by key (in any order).
    Otherwise a :class:`ValueError` naming both structures, *expected* and
    *got* saying what each one is (``"the carry the body returns"``,
    ``"init"``)."""
    leaves: list[Any] = []

    def walk(t: Any, s: TreeStructure) -> bool:
        if s.kind is None:
            if isinstance(t, (tuple, list, dict)):
                return False
            leaves.append(t)
            return True
        if type(t) is not s.kind:
            return False
        if issubclass(s.kind, dict):
            if len(t) != len(s.keys) or any(k not in t for k in s.keys):
                return False
            items = [t[k] for k in s.keys]
        else:
            items = list(t)
            if len(items) != len(s.children):
                return False
        return builtins.all(walk(i, c) for i, c in zip(items, s.children))

    if not walk(tree, structure):
        _, actual = tree_flatten(tree, what)
        raise ValueError(f"{what}: {got} is structured differently from "
                         f"{expected}: {actual} instead of {structure}")
    return leaves


# the first names of tree_flatten and tree_unflatten (other modules use them)
_flatten = tree_flatten
_unflatten = tree_unflatten

# }}}


# {{{ tracing

def _as_arrays(leaves: list[Any], what: str) -> list[Array]:
    from ftlazy.ops import asarray
    result = []
    for leaf in leaves:
        try:
            result.append(asarray(leaf))
        except TypeError:
            raise TypeError(f"{what} must be arrays or numbers, got "
                            f"{type(leaf).__name__} {leaf!r}") from None
    return result


def _check_capturable(n: Array, what: str) -> None:
    """An outer array a body of *what* reads must not belong to another
    loop body."""
    for scope in n.scopes:
        if scope is CLOSED_BODY_SCOPE:
            raise ValueError(
                f"the body of this {what} reads {n!r}, which belongs to the body "
                "of another loop (it is computed from that body's parameters) "
                "and cannot be captured by a different body")
        if not scope.active:
            raise ValueError(
                f"the body of this {what} reads {n!r}, which was computed inside "
                f"the body of an earlier {scope.what} (from the parameters of "
                "its traced function) and belongs to that loop body; return it "
                f"from that {scope.what} as an extra result instead")


def _own_size_names(n: Node) -> set[str]:
    """The size-parameter names that node *n* itself mentions (not through
    its children or bodies): in its shape, as a
    :class:`~ftlazy.array.SizeParam`, or in an expression or index field
    (an :class:`~ftlazy.IndexLambda`'s body, slice bounds, a new shape).
    Index and binding names of bodies are included too (they never clash
    with size parameters)."""
    from ftlazy.array import SizeParam
    from ftlazy.scalar_expr import iter_subexpressions
    names: set[str] = set()
    if isinstance(n, SizeParam):
        names.add(n.name)
    skip = set(n._child_fields) | set(n._body_fields)
    stack: list[Any] = [getattr(n, "shape", ())]
    stack += [getattr(n, f) for f in n._init_fields if f not in skip]
    while stack:
        value = stack.pop()
        if isinstance(value, (tuple, list)):
            stack.extend(value)
        elif isinstance(value, Mapping):
            stack.extend(value.values())
        elif isinstance(value, Node):
            continue
        elif isinstance(value, prim.ExpressionNode):
            names.update(e.name for e in iter_subexpressions(value)
                         if isinstance(e, prim.Variable))
        elif hasattr(value, "__dataclass_fields__"):
            stack.extend(getattr(value, f) for f in value.__dataclass_fields__)
    return names


class _BodyNodes:
    """The nodes that belong to the body traced in *scope*: those that
    depend on its trace parameters, and those that depend on a size
    parameter of *local_sizes* (an element's length, bound per element: an
    ``ft.arange(s.shape[0])`` or ``s.shape[0]`` as a value reads no
    parameter, yet has no meaning outside the body). A container for
    :func:`~ftlazy.node.topological_order`'s *skip*: it holds the nodes
    that do *not* belong to the body."""

    __slots__ = ("scope", "local_sizes", "_local")

    def __init__(self, scope: TraceScope, local_sizes: frozenset[str]) -> None:
        self.scope = scope
        self.local_sizes = local_sizes
        self._local: dict[int, bool] = {}

    def inside(self, n: Node) -> bool:
        """Whether *n* is computed inside the body."""
        return self.scope in n.scopes or self._is_local(n)

    def __contains__(self, n: Node) -> bool:
        return not self.inside(n)

    def _is_local(self, root: Node) -> bool:
        """Whether *root* depends on one of the local sizes (an iterative,
        memoized walk of the nodes outside the scope)."""
        if not self.local_sizes:
            return False
        memo = self._local
        if id(root) in memo:
            return memo[id(root)]
        for n in topological_order([root], skip=_Known(memo)):
            memo[id(n)] = (
                bool(self.local_sizes & _own_size_names(n))
                or builtins.any(memo.get(id(c), False) for c in iter_children(n)))
        return memo[id(root)]


class _Known:
    """The nodes a memo of :class:`_BodyNodes` already decided."""

    __slots__ = ("memo",)

    def __init__(self, memo: dict[int, bool]) -> None:
        self.memo = memo

    def __contains__(self, n: Node) -> bool:
        return id(n) in self.memo


def _close_body(scope: TraceScope, trace_params: list[_TraceParam],
                outputs: list[Array], what: str,
                local_sizes: frozenset[str] = frozenset()
                ) -> tuple[Body, list[Array]]:
    """Turn traced outputs into a self-contained :class:`Body`; returns it
    and the captured outer arrays (in parameter order after the traced
    ones). Only the nodes of the body are visited: those that depend on the
    trace parameters (whose :attr:`~ftlazy.node.Node.scopes` hold *scope*)
    or on one of the body's own size parameters *local_sizes*; every other
    node a body node reads is captured."""
    body_nodes = _BodyNodes(scope, local_sizes)
    order = topological_order(outputs, skip=body_nodes)
    captured: dict[Node, BodyParam] = {}

    def capture(n: Array) -> BodyParam:
        if n not in captured:
            _check_capturable(n, what)
            captured[n] = BodyParam(len(trace_params) + len(captured), n.shape,
                                    n.dtype)
        return captured[n]

    replacement: dict[int, Node] = {
        id(p): BodyParam(i, p.shape, p.dtype) for i, p in enumerate(trace_params)}
    for n in order:
        if id(n) in replacement:
            continue
        replacement[id(n)] = map_children(
            n, lambda c: (replacement[id(c)] if body_nodes.inside(c)
                          else capture(c)))
    new_outputs = tuple(replacement[id(o)] if body_nodes.inside(o) else capture(o)
                        for o in outputs)
    params = tuple(BodyParam(i, p.shape, p.dtype) for i, p in enumerate(trace_params))
    params += tuple(captured.values())
    return Body(params, new_outputs), list(captured)


def _trace(f: Callable, param_arrays: list[list[tuple[Shape, np.dtype]]],
           structures: list[TreeStructure], what: str,
           local_sizes: frozenset[str] = frozenset()
           ) -> tuple[Body, list[Array], TreeStructure]:
    """Call *f* on fresh trace params shaped like *param_arrays* (one group
    of ``(shape, dtype)`` per argument, rebuilt into a tree by
    *structures*); return the closed body, the captured arrays and the
    output structure. The body's :class:`~ftlazy.node.TraceScope` is closed
    afterwards, even if *f* raises: arrays built from the trace parameters
    cannot be used outside the body any more. *local_sizes* names the size
    parameters bound per iteration (an element's lengths; the data-dependent
    sizes the body computes from its parameters are added): whatever
    depends on them stays in the body too."""
    from ftlazy.fractal_access import defined_since, definitions_mark
    scope = TraceScope(f"ft.{what}")
    mark = definitions_mark()
    try:
        groups = []
        all_params: list[_TraceParam] = []
        for group, structure in zip(param_arrays, structures):
            params = [_TraceParam(_TraceToken(scope), a_shape, a_dtype)
                      for a_shape, a_dtype in group]
            all_params.extend(params)
            groups.append(tree_unflatten(params, structure))
        out = f(*groups)
        leaves, out_structure = tree_flatten(out, f"{what} results")
        if not leaves:
            raise ValueError(f"{what}: the function returned no arrays")
        # (a size the body computed from its parameters, xs[t].shape[0], is
        # bound per iteration too: ft.ones(that size) stays in the body)
        local_sizes = local_sizes | {d.name for d in defined_since(mark)
                                     if scope in d.scopes}
        body, captured = _close_body(
            scope, all_params, _as_arrays(leaves, f"{what} results"), what,
            local_sizes)
    finally:
        scope.active = False
    return body, captured, out_structure


def _loop_results(loop: Loop, structure: TreeStructure) -> Any:
    """The results of *loop*, as a tree of *structure*."""
    return tree_unflatten([LoopResult(loop, i) for i in range(loop.num_outputs)],
                          structure)


def check_not_body_local(roots: Any, what: str) -> None:
    """Raise :class:`ValueError` if an array among *roots* (arrays, or the
    arrays of a :class:`~ftlazy.DictOfNamedArrays`) belongs to a loop body:
    it was computed from the parameters of a function traced by
    :func:`map`, :func:`scan` or :func:`fold` (while it is traced or after)
    or is a node inside a closed :class:`Body`. Such arrays only exist
    inside their loop; *what* (``"evaluate_numpy"``) names the caller."""
    for root in roots:
        for scope in root.scopes:
            if scope is CLOSED_BODY_SCOPE:
                raise ValueError(
                    f"{what}: {root!r} belongs to the body of a loop (it is "
                    "computed from the body's parameters) and can only be "
                    "computed inside it")
            raise ValueError(
                f"{what}: {root!r} was computed inside the body of an "
                f"{scope.what} (from the parameters of the traced function) "
                "and only exists inside that loop; return it from the body as "
                "an extra result and use the loop's result instead")


def map(f: Callable, *xs: Any) -> Any:
    """Apply *f* to the elements (sub-arrays along axis 0) of *xs* in
    parallel and stack the results, like ``jax.vmap`` over axis 0.

    Each of *xs* is an array or a bundle of names (a pytree: any nesting of
    tuples, lists, :class:`~typing.NamedTuple` s and dicts of arrays); *f*
    receives, per argument, the same structure of elements. *f* is traced
    once with symbolic elements; it may return an array or any such bundle
    of arrays (the result has the same structure, each leaf stacked), and
    may close over outer arrays (captured as inputs). All arrays of all
    *xs* must have provably equal lengths. Dicts keep their key order.
    """
    if not callable(f):
        raise TypeError(f"map: f must be callable, got {type(f).__name__}")
    if not xs:
        raise ValueError("map needs at least one sequence")
    groups, structures = [], []
    for x in xs:
        leaves, structure = tree_flatten(x, "map inputs")
        groups.append(_as_arrays(leaves, "map inputs"))
        structures.append(structure)
    arrays = [a for group in groups for a in group]
    if not arrays:
        shown = ", ".join(str(st) for st in structures)
        raise ValueError(f"map needs at least one sequence, got inputs of the "
                         f"structures {shown} with no arrays")
    _check_lengths(tuple(arrays), "map")
    body, captured, out_structure = _trace(
        f, [[(a.shape[1:], a.dtype) for a in group] for group in groups],
        structures, "map")
    loop = Map(body, tuple(arrays) + tuple(captured), len(arrays))
    from ftlazy.fractal_step_reads import zipped_step_reads
    zipped = zipped_step_reads(loop, out_structure, "map")
    if zipped is not None:
        # (a map reading a FractalTensor's element by index, xs[i]: a map
        # over the elements it reads)
        return zipped
    from ftlazy.fractal_access import map_rows_as_lists
    as_lists = map_rows_as_lists(f, xs, body)
    if as_lists is not None:
        # (results of a length computed per row: FractalTensors)
        return as_lists
    return _loop_results(loop, out_structure)


def _scan_node(f: Callable, xs: Any, init: Any, keep_all: bool, what: str) -> Any:
    if not callable(f):
        raise TypeError(f"{what}: f must be callable, got {type(f).__name__}")
    from ftlazy.fractal_carry import fractal_carry_loop, has_jagged_leaf
    from ftlazy.jagged_scan_outer import has_jagged_sequence, jagged_scan
    if has_jagged_sequence(xs):
        # over the outer list of a FractalTensor
        return jagged_scan(f, xs, init, keep_all, what)
    if has_jagged_leaf(init):
        return fractal_carry_loop(f, xs, init, keep_all, what)
    init_leaves, init_structure = tree_flatten(init, f"{what} initial carries")
    inits = _as_arrays(init_leaves, f"{what} initial carries")
    x_leaves, x_structure = tree_flatten(xs, f"{what} sequences")
    scanned = _as_arrays(x_leaves, f"{what} sequences")
    if not scanned:
        raise ValueError(f"{what} needs at least one sequence")
    _check_lengths(tuple(scanned), what)

    def traced(carry: Any, x: Any) -> Any:
        new = f(carry, x)
        # (dicts are matched by key, then put in init's key order)
        leaves = tree_leaves_like(new, init_structure, what, "init",
                                  "the carry the body returns")
        return tree_unflatten(leaves, init_structure)

    body, captured, _ = _trace(
        traced, [[(a.shape, a.dtype) for a in inits],
                 [(a.shape[1:], a.dtype) for a in scanned]],
        [init_structure, x_structure], what)
    for k, (leaf, init, new) in enumerate(zip(init_leaves, inits,
                                              body.outputs)):
        if init.dtype != new.dtype and isinstance(leaf, (bool, int, float)):
            raise TypeError(
                f"{what}: the body changes the dtype of carry {k} from "
                f"{init.dtype} to {new.dtype}; its init, the Python "
                f"{type(leaf).__name__} {leaf!r}, is {init.dtype}: give it "
                f"as a {new.dtype} (np.{new.dtype}({leaf!r}))")
    check_carries(inits, body.outputs, what)
    loop = Scan(body, tuple(inits) + tuple(scanned) + tuple(captured),
                len(inits), len(scanned), keep_all)
    from ftlazy.fractal_step_reads import zipped_step_reads
    zipped = zipped_step_reads(loop, init_structure, what)
    return _loop_results(loop, init_structure) if zipped is None else zipped


def scan(f: Callable, xs: Any, init: Any) -> Any:
    """Run ``carry = f(carry, x)`` over the elements of *xs* in order,
    starting from *init*; return every carry (stacked along a new axis 0,
    not including *init*).

    *init* and *xs* are arrays (or numbers, for *init*) or bundles of names
    (pytrees: any nesting of tuples, lists, :class:`~typing.NamedTuple` s
    and dicts); *f* receives the carry with *init*'s structure and the
    element with *xs*'s, and must return a carry with *init*'s structure
    (dicts are matched by key; the result keeps *init*'s key order), else a
    :class:`ValueError` names both structures. The arrays of *xs* must have
    equal lengths. The body must keep each carry's shape and dtype. The
    result has *init*'s structure, each leaf stacked."""
    return _scan_node(f, xs, init, True, "scan")


def fold(f: Callable, xs: Any, init: Any) -> Any:
    """Like :func:`scan`, but return only the last carry (*init* for an
    empty sequence), with *init*'s structure."""
    return _scan_node(f, xs, init, False, "fold")


def reduce(f: Callable, xs: Any, init: Any) -> Any:
    """Combine the elements of *xs* with ``carry = f(carry, x)`` starting
    from *init*, for an associative *f*; return the last carry (*init* for
    an empty sequence). Bundles of names are taken and returned as by
    :func:`fold`.

    Since *f* is associative, any bracketing of the elements is a valid
    evaluation order; this version evaluates the reduction as a
    :func:`fold`, the sequential order (``f(f(f(init, x0), x1), x2)``),
    which is one of them. A later version may evaluate it as a tree, so *f*
    should not rely on the order beyond associativity (and, for floats,
    results may then differ by rounding)."""
    return _scan_node(f, xs, init, False, "reduce")


def gather(x: Any, indices: Any, axis: int = 0) -> Array:
    """``numpy.take(x, indices, axis)``: read *x* at data-dependent integer
    *indices* along *axis* (an embedding lookup). The result's shape is
    ``x.shape[:axis] + indices.shape + x.shape[axis+1:]``. On a
    FractalTensor, see :func:`ftlazy.fractal_access.gather`."""
    from ftlazy.fractal_tensor import Jagged
    if isinstance(x, Jagged):
        from ftlazy.fractal_access import gather as gather_elements
        return gather_elements(x, indices, axis)
    from ftlazy.ops import asarray
    x = asarray(x)
    known = indices
    indices = asarray(indices)
    if not isinstance(axis, (int, np.integer)) or isinstance(axis, bool):
        raise TypeError(f"gather axis must be an int, got {axis!r}")
    if not -x.ndim <= axis < x.ndim:
        raise ValueError(f"gather axis {axis} out of range for array of shape "
                         f"{sh.shape_str(x.shape)}")
    _check_known_indices(known, x.shape[axis], f"gather along axis {axis} of "
                         f"an array of shape {sh.shape_str(x.shape)}", x.shape)
    return Gather(x, indices, builtins.int(axis) % x.ndim)


def _check_scatter_cast(updates: Any, dtype: np.dtype, mode: str) -> None:
    """Raise :class:`TypeError` if *updates* (an array, or a Python scalar,
    weak in numpy's promotion) cannot be written into an array of *dtype*
    with *mode* (see :func:`scatter`)."""
    from ftlazy.ops.convert import is_weak_scalar
    if is_weak_scalar(updates):
        source: Any = updates
        shown = f"a Python {type(updates).__name__}"
    else:
        source = updates.dtype
        shown = f"updates of dtype {updates.dtype}"
    if mode == "set":
        if np.result_type(source).kind == "c" and dtype.kind != "c":
            raise TypeError(f"scatter: cannot set {shown} into x of dtype "
                            f"{dtype}: it would discard the imaginary part")
    elif not np.can_cast(np.result_type(dtype, source), dtype, "same_kind"):
        raise TypeError(f"scatter: cannot add {shown} to x of dtype {dtype} "
                        "(numpy's x[indices] += updates refuses the cast)")


def scatter(x: Any, indices: Any, updates: Any, mode: str = "set") -> Array:
    """A new array equal to *x* with the rows ``indices`` along axis 0
    replaced by (*mode* ``"set"``, like ``x[indices] = updates``) or
    increased by (``"add"``, like ``numpy.add.at(x, indices, updates)``)
    the rows of *updates*.

    :arg x: an array of at least one axis.
    :arg indices: a 1-D integer array of length ``m``, computed or given at
        run time. Negative indices count from the end; indices outside
        ``[-len(x), len(x))`` raise :class:`IndexError` at run time (with
        :func:`~ftlazy.evaluate_numpy` and compiled programs alike), and
        nothing is ever written out of bounds.
    :arg updates: broadcast (as numpy does) to ``(m, *x.shape[1:])``, else a
        :class:`ValueError` naming both shapes. Cast to *x*'s dtype: with
        ``"set"`` as numpy's assignment casts (a float into an integer
        array truncates), except that complex updates into a real *x* are a
        :class:`TypeError`; with ``"add"`` only where numpy's
        ``x[indices] += updates`` allows it (``same_kind`` casting), else a
        :class:`TypeError` naming both dtypes.
    :arg mode: ``"set"``: of duplicate indices the last one wins;
        ``"add"``: duplicates add up, in some order (floats: up to rounding;
        bools: logical or, as ``numpy.add.at`` does).

    Compiled code computes each output row ``r`` from every update: for
    ``"add"``, ``x[r] + sum over k of (indices[k] == r) * updates[k]``; for
    ``"set"``, the last ``k`` with ``indices[k] == r`` (a stored reduction),
    then ``updates[k]`` or ``x[r]``. That is ``O(len(x) * m)`` work per
    element of a row, which suits short index lists (or short ``x``); a
    later version may sort the indices instead.
    """
    from ftlazy.ops import asarray, astype, broadcast_to
    from ftlazy.ops.convert import is_weak_scalar
    x = asarray(x)
    known = indices
    indices = asarray(indices)
    _check_scatter_operands(x, indices, mode)
    _check_known_indices(known, x.shape[0], f"scatter into rows of x of shape "
                         f"{sh.shape_str(x.shape)}", x.shape)
    if not is_weak_scalar(updates):
        updates = asarray(updates)
    _check_scatter_cast(updates, x.dtype, mode)
    updates = asarray(updates)
    target = indices.shape + x.shape[1:]
    try:
        updates = broadcast_to(updates, target)
    except ValueError:
        raise ValueError(f"scatter: updates of shape "
                         f"{sh.shape_str(updates.shape)} do not broadcast to "
                         f"the shape {sh.shape_str(target)} of the rows they "
                         f"write (indices of shape {sh.shape_str(indices.shape)}, "
                         f"x of shape {sh.shape_str(x.shape)})") from None
    return Scatter(x, indices, astype(updates, x.dtype), mode)

# }}}
