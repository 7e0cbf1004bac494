# SPDX-License-Identifier: MIT
"""FractalTensor-style nested parallelism: :func:`map`, :func:`scan`,
:func:`fold` and :func:`gather`.

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
.. autofunction:: map
.. autofunction:: scan
.. autofunction:: fold
.. autofunction:: gather
.. autofunction:: check_not_body_local

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
from dataclasses import field
from typing import Any, Callable

import numpy as np

from ftlazy import shapes as sh
from ftlazy.array import Array, check_direct_input_names, normalize_dtype
from ftlazy.node import (
    CLOSED_BODY_SCOPE, IdentityKey, Node, TraceScope, map_children, node,
    topological_order)
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
        return f"Body(params={len(self.params)}, outputs={len(self.outputs)})"


class Loop(Node):
    """Base of nodes with a body and possibly several results."""

    __slots__ = ()

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
class Scan(Loop):
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
        for i, (init, new) in enumerate(zip(self.inits, self.body.outputs)):
            if not sh.shapes_equal(init.shape, new.shape):
                raise ValueError(f"scan: the body changes the shape of carry {i} "
                                 f"from {sh.shape_str(init.shape)} to "
                                 f"{sh.shape_str(new.shape)}")
            if init.dtype != new.dtype:
                raise TypeError(f"scan: the body changes the dtype of carry {i} "
                                f"from {init.dtype} to {new.dtype}")

    @property
    def inits(self) -> tuple[Array, ...]:
        return self.inputs[:self.num_carries]

    @property
    def scanned(self) -> tuple[Array, ...]:
        return self.inputs[self.num_carries:self.num_carries + self.num_scanned]

    @property
    def captured(self) -> tuple[Array, ...]:
        return self.inputs[self.num_carries + self.num_scanned:]

    @property
    def length(self) -> ShapeComponent:
        return self.scanned[0].shape[0]

    @property
    def num_outputs(self) -> int:
        return self.num_carries

    def output_shape(self, index: int) -> Shape:
        shape = self.inits[index].shape
        return ((self.length,) + shape) if self.keep_all else shape

    def output_dtype(self, index: int) -> np.dtype:
        return self.inits[index].dtype


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

# }}}


# {{{ tracing

def _flatten(tree: Any, what: str) -> tuple[list[Any], Any]:
    """Leaves and structure of a (nested) tuple/list of arrays."""
    if isinstance(tree, (tuple, list)):
        leaves: list[Any] = []
        structure = []
        for item in tree:
            sub_leaves, sub_structure = _flatten(item, what)
            structure.append((len(sub_leaves), sub_structure))
            leaves.extend(sub_leaves)
        return leaves, (type(tree), structure)
    return [tree], None


def _unflatten(leaves: list[Any], structure: Any) -> Any:
    if structure is None:
        return leaves[0]
    kind, parts = structure
    result, pos = [], 0
    for count, sub in parts:
        result.append(_unflatten(leaves[pos:pos + count], sub))
        pos += count
    return kind(result)


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


class _OutsideScope:
    """The nodes that do not depend on a parameter of the body of *scope*
    (a container for :func:`~ftlazy.node.topological_order`'s *skip*)."""

    __slots__ = ("scope",)

    def __init__(self, scope: TraceScope) -> None:
        self.scope = scope

    def __contains__(self, n: Node) -> bool:
        return self.scope not in n.scopes


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


def _close_body(scope: TraceScope, trace_params: list[_TraceParam],
                outputs: list[Array], what: str) -> tuple[Body, list[Array]]:
    """Turn traced outputs into a self-contained :class:`Body`; returns it
    and the captured outer arrays (in parameter order after the traced
    ones). Only the nodes that depend on the trace parameters (those whose
    :attr:`~ftlazy.node.Node.scopes` hold *scope*) are visited."""
    order = topological_order(outputs, skip=_OutsideScope(scope))
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
            n, lambda c: replacement[id(c)] if scope in c.scopes else capture(c))
    new_outputs = tuple(replacement[id(o)] if scope in o.scopes else capture(o)
                        for o in outputs)
    params = tuple(BodyParam(i, p.shape, p.dtype) for i, p in enumerate(trace_params))
    params += tuple(captured.values())
    return Body(params, new_outputs), list(captured)


def _trace(f: Callable, param_arrays: list[list[Array]], structures: list[Any],
           what: str) -> tuple[Body, list[Array], Any]:
    """Call *f* on fresh trace params shaped like *param_arrays* (one group
    per argument, regrouped by *structures*); return the closed body, the
    captured arrays and the output structure. The body's
    :class:`~ftlazy.node.TraceScope` is closed afterwards, even if *f*
    raises: arrays built from the trace parameters cannot be used outside
    the body any more."""
    scope = TraceScope(f"ft.{what}")
    try:
        groups = []
        all_params: list[_TraceParam] = []
        for group, structure in zip(param_arrays, structures):
            params = [_TraceParam(_TraceToken(scope), a_shape, a_dtype)
                      for a_shape, a_dtype in group]
            all_params.extend(params)
            groups.append(_unflatten(params, structure))
        out = f(*groups)
        leaves, out_structure = _flatten(out, what)
        if not leaves:
            raise ValueError(f"{what}: the function returned no arrays")
        body, captured = _close_body(
            scope, all_params, _as_arrays(leaves, f"{what} results"), what)
    finally:
        scope.active = False
    return body, captured, out_structure


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

    *f* is traced once with symbolic elements; it may return an array or a
    (nested) tuple of arrays, and may close over outer arrays (captured as
    inputs). All *xs* must have provably equal lengths.
    """
    if not callable(f):
        raise TypeError(f"map: f must be callable, got {type(f).__name__}")
    if not xs:
        raise ValueError("map needs at least one sequence")
    arrays = _as_arrays(list(xs), "map inputs")
    _check_lengths(tuple(arrays), "map")
    body, captured, out_structure = _trace(
        f, [[(a.shape[1:], a.dtype)] for a in arrays], [None] * len(arrays), "map")
    loop = Map(body, tuple(arrays) + tuple(captured), len(arrays))
    return _unflatten([LoopResult(loop, i) for i in range(loop.num_outputs)],
                      out_structure)


def _scan_node(f: Callable, xs: Any, init: Any, keep_all: bool, what: str) -> Any:
    if not callable(f):
        raise TypeError(f"{what}: f must be callable, got {type(f).__name__}")
    init_leaves, init_structure = _flatten(init, what)
    inits = _as_arrays(init_leaves, f"{what} initial carries")
    x_leaves, x_structure = _flatten(xs, what)
    scanned = _as_arrays(x_leaves, f"{what} sequences")
    if not scanned:
        raise ValueError(f"{what} needs at least one sequence")
    _check_lengths(tuple(scanned), what)

    def traced(carry, x):
        new = f(carry, x)
        new_leaves, new_structure = _flatten(new, what)
        if new_structure != init_structure:
            raise ValueError(f"{what}: the body returns a carry structured "
                             f"differently from init ({len(new_leaves)} arrays "
                             f"vs {len(inits)})")
        return new

    body, captured, _ = _trace(
        traced, [[(a.shape, a.dtype) for a in inits],
                 [(a.shape[1:], a.dtype) for a in scanned]],
        [init_structure, x_structure], what)
    loop = Scan(body, tuple(inits) + tuple(scanned) + tuple(captured),
                len(inits), len(scanned), keep_all)
    return _unflatten([LoopResult(loop, i) for i in range(loop.num_outputs)],
                      init_structure)


def scan(f: Callable, xs: Any, init: Any) -> Any:
    """Run ``carry = f(carry, x)`` over the elements of *xs* in order,
    starting from *init*; return every carry (stacked along a new axis 0,
    not including *init*). Carries may be (nested) tuples of arrays; *xs*
    may be an array or a tuple of arrays of equal length. The body must
    keep each carry's shape and dtype."""
    return _scan_node(f, xs, init, True, "scan")


def fold(f: Callable, xs: Any, init: Any) -> Any:
    """Like :func:`scan`, but return only the last carry (*init* for an
    empty sequence)."""
    return _scan_node(f, xs, init, False, "fold")


def gather(x: Any, indices: Any, axis: int = 0) -> Array:
    """``numpy.take(x, indices, axis)``: read *x* at data-dependent integer
    *indices* along *axis* (an embedding lookup). The result's shape is
    ``x.shape[:axis] + indices.shape + x.shape[axis+1:]``."""
    from ftlazy.ops import asarray
    x = asarray(x)
    indices = asarray(indices)
    if not isinstance(axis, (int, np.integer)) or isinstance(axis, bool):
        raise TypeError(f"gather axis must be an int, got {axis!r}")
    if not -x.ndim <= axis < x.ndim:
        raise ValueError(f"gather axis {axis} out of range for array of shape "
                         f"{sh.shape_str(x.shape)}")
    return Gather(x, indices, builtins.int(axis) % x.ndim)

# }}}
