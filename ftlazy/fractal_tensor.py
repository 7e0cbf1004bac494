# SPDX-License-Identifier: MIT
"""FractalTensors in the DAG: jagged nested sequences, and :func:`map` over
them.

A FractalTensor of depth ``d`` is a list of FractalTensors of depth
``d - 1``; depth 1 is a sequence ``(L, *elem_shape)``, which is simply an
array whose first axis has a symbolic length. Deeper ones are a
:class:`Jagged` node: the packed values ``(nnz, *elem_shape)`` and one
offsets array per nested list level, outermost first (CSR of CSR). The
outermost list's trivial offsets ``[0, n]`` are implied, so depth ``d`` has
``d - 1`` offsets arrays, as :class:`~ftlazy.JaggedArray` at run time.

Inside the body of :func:`map` over a depth-2 FractalTensor, an element is
an ordinary array ``(L, *elem_shape)`` whose length ``L`` is a size
parameter of the body: islpy proves shapes of expressions in ``L`` as for
any size parameter, so jagged code reads as dense code. The length is bound
per element at run time from the offsets.

.. autoclass:: Jagged
.. autoclass:: JaggedMap
.. autoclass:: RaggedScan
.. autoclass:: JaggedInputPart
.. autofunction:: make_jagged_placeholder
.. autofunction:: flatten
.. autofunction:: lengths
"""

from __future__ import annotations

import re

from collections import deque
from contextlib import contextmanager
from typing import Any, Callable, Iterator

import numpy as np
import pymbolic.primitives as prim
from pytools.tag import UniqueTag, tag_dataclass

from ftlazy import shapes as sh
from ftlazy.array import (
    Array, IndexLambda, Placeholder, SizeParam, check_user_name,
    normalize_dtype)
from ftlazy.fractal import (
    Body, BodyParam, Loop, LoopResult, Scan, _trace, check_carries,
    tree_flatten, tree_unflatten)
from ftlazy.node import Node, node
from ftlazy.scalar_expr import index_var, linear_combination, substitute
from ftlazy.shapes import Shape, ShapeComponent

__all__ = ["Jagged", "JaggedMap", "JaggedInputPart", "make_jagged_placeholder",
           "flatten", "lengths", "jagged_map", "apply_leafwise", "segment_lengths"]

#: prefix of the size parameters standing for an element's sizes in a body
ELEMENT_SIZE_PREFIX = "_ft_elem"


@tag_dataclass
class JaggedInputPart(UniqueTag):
    """Marks a placeholder as one part of the jagged input *name* (declared
    by :func:`make_jagged_placeholder`): ``part`` is ``"values"`` or
    ``"offsets<k>"``. At run time the user passes the whole FractalTensor as
    *name*; it is split into its parts."""

    name: str
    part: str
    depth: int
    elem_shape: tuple
    #: the leaves' dtype (a numpy dtype name)
    dtype: str


# {{{ the Jagged node

@node(children=("values", "offsets"))
class Jagged(Node):
    """A FractalTensor of depth ``len(offsets) + 1 >= 2``: packed
    :attr:`values` ``(nnz, *elem_shape)`` and :attr:`offsets` (int64, one
    per list level, outermost first; level ``k`` has ``n_k + 1`` entries).
    Elementwise operators apply to every leaf and keep the structure."""

    values: Array
    offsets: tuple[Array, ...]
    name: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "offsets", tuple(self.offsets))
        if not self.offsets:
            raise ValueError("a Jagged node needs at least one offsets array")
        if self.values.ndim < 1:
            raise ValueError(f"jagged values must have at least one axis, got "
                             f"shape {sh.shape_str(self.values.shape)}")
        for k, o in enumerate(self.offsets):
            if o.ndim != 1 or o.dtype != np.int64:
                raise TypeError(f"jagged offsets of level {k} must be a 1-D int64 "
                                f"array, got shape {sh.shape_str(o.shape)} and "
                                f"dtype {o.dtype}")

    @property
    def depth(self) -> int:
        return len(self.offsets) + 1

    @property
    def elem_shape(self) -> Shape:
        return self.values.shape[1:]

    @property
    def dtype(self) -> np.dtype:
        return self.values.dtype

    @property
    def length(self) -> ShapeComponent:
        """The number of elements of the outer list (symbolic)."""
        return sh.sub(self.offsets[0].shape[0], 1)

    def __len__(self) -> int:
        if not isinstance(self.length, int):
            raise TypeError(f"len() of a FractalTensor with a symbolic number "
                            f"of elements {self.length}; use ft.map or "
                            "ft.fold over its elements, or .length")
        return self.length

    def __iter__(self) -> Iterator[Any]:
        # (without it Python would index xs[0], xs[1], ... for ever)
        for i in range(len(self)):
            yield self[i]

    def __bool__(self) -> bool:
        raise TypeError("the truth value of a lazy FractalTensor is unknown "
                        "until it is evaluated")

    def with_values(self, values: Array) -> Jagged:
        """The same structure with other leaves (``(nnz, *new_elem_shape)``)."""
        if not sh.prove_equal(values.shape[0], self.values.shape[0]):
            raise ValueError(f"new values of shape {sh.shape_str(values.shape)} "
                             f"do not have the {sh.shape_str(self.values.shape[:1])} "
                             "rows of the FractalTensor")
        return Jagged(values, self.offsets)

    def __repr__(self) -> str:
        from ftlazy.display import node_repr
        return node_repr(self)

    def _repr_html_(self) -> str:
        from ftlazy.display import node_html
        return node_html(self)

    def ir(self) -> str:
        """The DAG as numbered statements (:func:`ftlazy.pretty`)."""
        from ftlazy.text_ir import pretty
        return pretty(self)

    # leaf-wise operators (numpy arrays on the left defer to them)
    __array_ufunc__ = None

    def __array_function__(self, func: Any, types: Any, args: Any,
                           kwargs: Any) -> Any:
        raise TypeError(
            f"numpy.{func.__name__} of a FractalTensor ({self!r}): its "
            "elements have lengths of their own; apply ftlazy's function to "
            "each element with ft.map, or to its packed rows with ft.flatten")

    @property
    def shape(self) -> Any:
        raise AttributeError(
            "a FractalTensor has no shape: its elements have lengths of their "
            "own (see .depth, .elem_shape, ft.lengths(xs) and xs.length)")

    def __add__(self, other: Any) -> Jagged: return _op("add", self, other)
    def __radd__(self, other: Any) -> Jagged: return _op("add", other, self)
    def __sub__(self, other: Any) -> Jagged: return _op("subtract", self, other)
    def __rsub__(self, other: Any) -> Jagged: return _op("subtract", other, self)
    def __mul__(self, other: Any) -> Jagged: return _op("multiply", self, other)
    def __rmul__(self, other: Any) -> Jagged: return _op("multiply", other, self)
    def __truediv__(self, other: Any) -> Jagged: return _op("divide", self, other)
    def __rtruediv__(self, other: Any) -> Jagged: return _op("divide", other, self)
    def __floordiv__(self, other: Any) -> Jagged: return _op("floor_divide", self, other)
    def __rfloordiv__(self, other: Any) -> Jagged: return _op("floor_divide", other, self)
    def __mod__(self, other: Any) -> Jagged: return _op("remainder", self, other)
    def __rmod__(self, other: Any) -> Jagged: return _op("remainder", other, self)
    def __pow__(self, other: Any) -> Jagged: return _op("power", self, other)
    def __rpow__(self, other: Any) -> Jagged: return _op("power", other, self)
    def __lt__(self, other: Any) -> Jagged: return _op("less", self, other)
    def __le__(self, other: Any) -> Jagged: return _op("less_equal", self, other)
    def __gt__(self, other: Any) -> Jagged: return _op("greater", self, other)
    def __ge__(self, other: Any) -> Jagged: return _op("greater_equal", self, other)
    def __and__(self, other: Any) -> Jagged: return _op("bitwise_and", self, other)
    def __rand__(self, other: Any) -> Jagged: return _op("bitwise_and", other, self)
    def __or__(self, other: Any) -> Jagged: return _op("bitwise_or", self, other)
    def __ror__(self, other: Any) -> Jagged: return _op("bitwise_or", other, self)
    def __xor__(self, other: Any) -> Jagged: return _op("bitwise_xor", self, other)
    def __rxor__(self, other: Any) -> Jagged: return _op("bitwise_xor", other, self)
    def __neg__(self) -> Jagged: return self.with_values(-self.values)
    def __pos__(self) -> Jagged: return self
    def __abs__(self) -> Jagged: return self.with_values(abs(self.values))
    def __invert__(self) -> Jagged: return self.with_values(~self.values)

    def __matmul__(self, other: Any) -> Jagged:
        """``leaf @ other`` for every leaf (numpy's matmul rules per leaf;
        *other* dense, at least 1-d, its batch axes broadcast with a leaf's
        own)."""
        from ftlazy.ops import asarray, expand_dims, squeeze
        if isinstance(other, Jagged):
            raise TypeError(
                f"FractalTensor @ FractalTensor ({self!r} @ {other!r}): the "
                "right operand must be dense; multiply elements pairwise "
                "with ft.map(lambda a, b: a @ b, xs, ys)")
        other = asarray(other)
        leaf = self.elem_shape
        if other.ndim == 0 or not leaf:
            raise ValueError(
                f"FractalTensor @ W needs leaves and a dense W of at least "
                f"one axis each; got leaves of shape {sh.shape_str(leaf)} "
                f"and W of shape {sh.shape_str(other.shape)}")
        inner = other.shape[-2] if other.ndim >= 2 else other.shape[0]
        if not sh.prove_equal(leaf[-1], inner):
            raise ValueError(
                f"FractalTensor @ W: the leaves' last axis ({leaf[-1]}, leaf "
                f"shape {sh.shape_str(leaf)}) does not match W's "
                f"{'second-to-last' if other.ndim >= 2 else 'only'} axis "
                f"({inner}, W of shape {sh.shape_str(other.shape)})")
        values = self.values  # (rows, *leaf)
        if other.ndim <= 2:
            return self.with_values(values @ other)
        # W has batch axes: the leaf (a row if 1-d) gets unit batch axes
        # after the rows' axis, so that the rows stay an axis of their own
        if len(leaf) == 1:
            values = expand_dims(values, 1)
        for _ in range(other.ndim - max(len(leaf), 2)):
            values = expand_dims(values, 1)
        product = values @ other
        return self.with_values(squeeze(product, -2) if len(leaf) == 1
                                else product)

    def astype(self, dtype: Any) -> Jagged:
        return self.with_values(self.values.astype(dtype))

    def __getitem__(self, index: Any) -> Array | Jagged:
        """Element ``i`` or a slice of the outer list (see
        :func:`ftlazy.fractal_access.getitem`)."""
        from ftlazy.fractal_access import getitem
        return getitem(self, index)


def _op(name: str, x1: Any, x2: Any) -> Jagged:
    """The ftlazy function *name* on operands one or both of which are
    FractalTensors (see :func:`apply_leafwise`)."""
    from ftlazy import ops
    return getattr(ops, name)(x1, x2)


#: offsets a leaf-wise result takes where an operand has them (see
#: :func:`preferring_offsets`)
_preferred_offsets: list[tuple] = []


@contextmanager
def preferring_offsets(offsets: list[tuple]) -> Iterator[None]:
    """While tracing a loop body whose FractalTensor carries have
    *offsets* (one tuple of levels each), a leaf-wise operation of a carry
    with another FractalTensor (``ys + carry``) keeps the carry's offsets,
    not its first operand's: both are checked equal at run time, and the
    loop keeps its structure only if it can prove the carry's unchanged."""
    _preferred_offsets.append(offsets)
    try:
        yield
    finally:
        _preferred_offsets.pop()


def apply_leafwise(fn: Callable[..., Any], *args: Any) -> Jagged:
    """``fn`` applied to the leaves of the FractalTensor arguments. A dense
    argument broadcasts against the element shape (it must not have more
    axes than an element); FractalTensor arguments must have the same
    structure: depth and elem_shape at build time, every offsets level at
    run time. Operands that share their offsets nodes combine their values
    directly; others (two inputs, a map result and its input) are zipped
    element by element by a :class:`JaggedMap`, whose
    run-time check of all their offsets levels names them
    (:func:`ftlazy.target.jagged_inputs.check_zipped`); the result keeps
    the first operand's offsets (a loop body's carry's, see
    :func:`preferring_offsets`)."""
    jagged = [a for a in args if isinstance(a, Jagged)]
    first = jagged[0]
    preferred = _preferred_offsets[-1] if _preferred_offsets else ()
    kept = next((a for a in jagged if any(a.offsets == p for p in preferred)),
                first)
    for other in jagged[1:]:
        if other.depth != first.depth or not sh.shapes_equal(
                other.elem_shape, first.elem_shape):
            raise ValueError(
                f"leaf-wise operation on FractalTensors of different structure: "
                f"{first!r} and {other!r}")
    nd = len(first.elem_shape)
    for a in args:
        shape = () if isinstance(a, Jagged) else tuple(getattr(a, "shape",
                                                                np.shape(a)))
        if len(shape) > nd:
            raise ValueError(
                f"a dense operand of shape {sh.shape_str(shape)} has more "
                "axes than the FractalTensor's elements "
                f"{sh.shape_str(first.elem_shape)}: it would broadcast "
                "against the packed rows")
    if all(o.offsets == first.offsets for o in jagged):
        result = fn(*(a.values if isinstance(a, Jagged) else a for a in args))
        return first.with_values(result)
    # (the kept operand zipped first: the values have its number of rows)
    positions = sorted((k for k, a in enumerate(args) if isinstance(a, Jagged)),
                       key=lambda k: args[k] is not kept)
    jagged = [args[k] for k in positions]

    def element_fn(*elems: Any) -> Any:
        # one element of each: an array (L, *elem_shape) at depth 2, a
        # FractalTensor one level shallower deeper down, whose leaves are
        # its values
        full = list(args)
        for k, e in zip(positions, elems):
            full[k] = e.values if isinstance(e, Jagged) else e
        return fn(*full)

    zipped = jagged_map(element_fn, *jagged,
                        what="leaf-wise operation on FractalTensors")
    # the packed values in order; the offsets checked equal to the others
    return kept.with_values(zipped.values)

# }}}


# {{{ declaring jagged inputs

def _elem_shape(elem_shape: Any, name: str) -> tuple[int, ...]:
    """*elem_shape* of the jagged input *name* as a tuple of ints."""
    if isinstance(elem_shape, (int, np.integer)):
        elem_shape = (elem_shape,)
    try:
        shape = tuple(elem_shape)
    except TypeError:
        raise TypeError(f"elem_shape of jagged placeholder {name!r} must be a "
                        f"tuple of ints, got {elem_shape!r}") from None
    for s in shape:
        if (isinstance(s, (bool, np.bool_)) or not isinstance(s, (int, np.integer))
                or s < 0):
            raise ValueError(f"elem_shape of jagged placeholder {name!r} must "
                             "hold non-negative ints (a leaf is a static-shape "
                             f"tensor), got {elem_shape!r}")
    return tuple(int(s) for s in shape)


def make_jagged_placeholder(name: str, elem_shape: Any, dtype: Any,
                            depth: int = 1) -> Array | Jagged:
    """Declare a FractalTensor input *name* of *depth* whose leaves have the
    static *elem_shape* and *dtype*.

    Depth 1 (one sequence) gives a :class:`~ftlazy.Placeholder` of shape
    ``(L, *elem_shape)`` with the size parameter ``<name>_length``. Deeper
    ones give a :class:`Jagged` over placeholders ``<name>_values`` and
    ``<name>_offsets<k>``; at run time pass the whole FractalTensor as
    *name* (a :class:`~ftlazy.JaggedArray` or nested lists)."""
    check_user_name(name, "jagged placeholder")
    shape = _elem_shape(elem_shape, name)
    dtype = normalize_dtype(dtype)
    if (isinstance(depth, (bool, np.bool_)) or not isinstance(depth, (int, np.integer))
            or depth < 1):
        raise ValueError(f"depth of jagged placeholder {name!r} must be an int "
                         f">= 1, got {depth!r}")
    depth = int(depth)
    if depth == 1:
        return Placeholder(name, (prim.Variable(f"{name}_length"),) + shape, dtype)

    def part(what: str) -> frozenset:
        return frozenset({JaggedInputPart(name, what, depth, shape, dtype.name)})

    offsets = tuple(
        Placeholder(f"{name}_offsets{k}", (sh.add(prim.Variable(f"{name}_n{k}"), 1),),
                    np.int64, tags=part(f"offsets{k}"))
        for k in range(depth - 1))
    values = Placeholder(f"{name}_values", (prim.Variable(f"{name}_nnz"),) + shape,
                         dtype, tags=part("values"))
    return Jagged(values, offsets, name)

# }}}


# {{{ access operations

def flatten(xs: Any, order: str = "C") -> Array:
    """For a FractalTensor: its packed leaves ``(nnz, *elem_shape)``, in
    order (no copy). For an array: ``numpy.ravel`` in *order*."""
    if isinstance(xs, Jagged):
        return xs.values
    from ftlazy.ops.shape_ops import flatten as flatten_array
    return flatten_array(xs, order=order)


def segment_lengths(offsets: Array) -> IndexLambda:
    """``offsets[1:] - offsets[:-1]``: the int64 lengths of the segments."""
    i = index_var(0)
    read = prim.Variable("_in0")
    return IndexLambda(read[i + 1] - read[i], (sh.sub(offsets.shape[0], 1),),
                       np.dtype(np.int64), {"_in0": offsets})


def lengths(xs: Jagged) -> Array:
    """The int64 lengths ``(n,)`` of the outer list's elements."""
    if isinstance(xs, Jagged):
        from ftlazy.fractal_access import gathered_lengths
        gathered = gathered_lengths(xs)
        return segment_lengths(xs.offsets[0]) if gathered is None else gathered
    if isinstance(xs, Array):
        raise TypeError("lengths: a depth-1 FractalTensor (an array) is a list "
                        "of tensors, which have no lengths; its own length is "
                        f"x.shape[0] = {sh.shape_str(xs.shape[:1])}")
    raise TypeError(f"lengths expects a FractalTensor, got {type(xs).__name__}")

# }}}


# {{{ scans over the elements of a packed batch (made by the lowering)

@node(children=("inputs",), bodies=("body",))
class RaggedScan(Scan):
    """A :class:`~ftlazy.fractal.Scan` of ``n`` sequences at once whose
    sequences and stacked results are stored *packed*, as
    :mod:`ftlazy.transform.jagged_scans` makes it for a scan inside a map
    over a FractalTensor. Element ``i`` has ``extent_i = c + a*L_i`` rows
    starting at ``c*i + a*offsets[i]`` (:attr:`form` is ``(c, a)``;
    :attr:`offsets_index` says which input is the offsets). The loop runs
    :attr:`steps` times; at step ``t`` the first :attr:`num_ragged` scanned
    inputs (packed) give row ``i`` of the body's ``(n, ...)`` parameter as
    element ``i``'s row ``t`` (a stand-in row where ``t >= extent_i``); the
    last scanned input is the step index, ``(steps,)``, at
    :attr:`step_index`. The carries are ``(n, ...)``; the
    body must keep a finished element's carry (the lowering gates it with a
    step mask). With :attr:`keep_all`, result ``k`` is packed: element
    ``i``'s carry after step ``t`` at row ``start_i + t``.

    :attr:`order_index`, where not -1, is a captured ``(2, n)`` int64
    input: row 0 the elements by descending extent, row 1 each element's
    place in that order. It does not change what the scan computes; code
    generation may use it to run elements of similar extents together
    (:mod:`ftlazy.target.loopy.balance`)."""

    offsets_index: int = -1
    form: tuple[int, int] = (0, 1)
    steps: Any = 0
    num_ragged: int = 0
    order_index: int = -1

    def __post_init__(self) -> None:
        object.__setattr__(self, "inputs", tuple(self.inputs))
        object.__setattr__(self, "steps", sh.normalize_component(self.steps))
        nc, ns = self.num_carries, self.num_scanned
        if not (0 < self.num_ragged == ns - 1 and nc + ns <= self.offsets_index
                < len(self.inputs)):
            raise ValueError("RaggedScan: its packed inputs must be scanned, "
                             "then the step index, and its offsets captured")
        if self.order_index != -1 and not (
                nc + ns <= self.order_index < len(self.inputs)
                and self.inputs[self.order_index].ndim == 2):
            raise ValueError("RaggedScan: its order of elements must be a "
                             "captured (2, n) input")
        if len(self.body.params) != len(self.inputs) or \
                len(self.body.outputs) != nc:
            raise ValueError("RaggedScan: the body does not match the inputs")
        check_carries(self.inits, self.body.outputs, "RaggedScan")

    @property
    def length(self) -> ShapeComponent:
        return self.steps

    @property
    def offsets(self) -> Array:
        return self.inputs[self.offsets_index]

    @property
    def order(self) -> Array | None:
        """The captured order of the elements (see the class docs), or None."""
        return None if self.order_index == -1 else self.inputs[self.order_index]

    @property
    def step_index(self) -> int:
        """The input (and body parameter) giving the step's index, 0-d in
        the body: the scanned input after the packed ones."""
        return self.num_carries + self.num_ragged

    def output_shape(self, index: int) -> Shape:
        shape = self.inits[index].shape
        if self.keep_all:
            return (self.scanned[0].shape[0],) + shape[1:]
        return shape

# }}}


# {{{ map over FractalTensors

@node(children=("inputs",), bodies=("body",))
class JaggedMap(Loop):
    """:func:`map` over the outer list of FractalTensors.

    :attr:`inputs` hold, for each mapped input in order, its arrays (a
    dense array mapped along axis 0; or a FractalTensor's values then its
    offsets), then the captured arrays. :attr:`depths` gives each mapped
    input's depth (1: dense). :attr:`symbols` names, per mapped input, the
    body's size parameters of one element: ``(L,)`` at depth 2 (the
    element's length), ``(m, T)`` at depth 3 (its number of sequences and
    of leaves), one count per level then the leaves deeper down (see
    :func:`element_symbols`). Zipped FractalTensors share symbols. Body
    parameters: the element of each mapped input (its values, then from
    depth 3 on its rebased offsets, outermost first), then the captured
    arrays. Each output is dense (``(n, ...)``)
    or, where its first axis is affine in the symbols, the values of a
    depth-2 FractalTensor (see :meth:`output_shape`). A FractalTensor the
    body returns is returned as its values and, where needed, the lengths
    of its levels (:mod:`ftlazy.fractal_nested`)."""

    body: Body
    inputs: tuple[Array, ...]
    depths: tuple[int, ...]
    symbols: tuple[tuple[str, ...], ...]
    #: what zips the inputs, for run-time messages (a leaf-wise operation
    #: on FractalTensors of different offsets nodes is a map too)
    what: str = "map over a FractalTensor"
    #: ``(output, count output, size name)``: outputs whose first axis is a
    #: size computed in the body (evaluated, not compiled): packed, the
    #: dense int output giving each element's rows, their total the
    #: data-dependent size *size name* (see :mod:`ftlazy.fractal_nested`)
    counted: tuple[tuple[int, int, str], ...] = ()
    #: ``(symbol, input)``: the zipped FractalTensor whose element length
    #: is *symbol* has its own number of elements, and element ``i`` of the
    #: map reads its element ``index[i]``, *index* the ``(n,)`` int64
    #: captured array ``inputs[input]`` (a sentence reading its document's
    #: tokens, as :mod:`ftlazy.transform.jagged_nesting` makes the map;
    #: compiled only)
    element_index: tuple[tuple[str, int], ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "inputs", tuple(self.inputs))
        object.__setattr__(self, "counted", tuple(
            tuple(c) for c in self.counted))
        object.__setattr__(self, "element_index", tuple(
            tuple(c) for c in self.element_index))
        from ftlazy.fractal import check_captured_params
        first = len(self.inputs) - len(self.captured)
        check_captured_params(self.body, self.captured, self.what, frozenset(
            k - first for _, k in self.element_index))
        from ftlazy.fractal_access import DERIVED_SIZE_PREFIX
        per_element = self._element_symbols
        if any(name.startswith(DERIVED_SIZE_PREFIX) for out in self.body.outputs
               for name in sh.shape_size_param_names(out.shape[1:])):
            # (a walk of the body only where a size computed in it may be;
            # a size of an array captured from outside, ys[1] of a list the
            # body reads, is the same for every element)
            n_own = len(self.body.params) - len(self.captured)
            per_element |= sizes_per_element(
                self.body, per_element, set(range(n_own)) | {
                    n_own + k - first for _, k in self.element_index})
        for k, out in enumerate(self.body.outputs):
            if any(per_element & sh.size_param_names(c)
                   for c in out.shape[1:]):
                raise ValueError(
                    f"map over a FractalTensor: result {k} has shape "
                    f"{sh.shape_str(out.shape)}, where a length of the element "
                    "(or a size computed from it, s[:2]) occurs after the "
                    "first axis; only the first axis of a result may depend "
                    "on the element's lengths")

    @property
    def _element_symbols(self) -> frozenset[str]:
        return frozenset(s for group in self.symbols for s in group)

    def mapped_parts(self) -> list[tuple[int, tuple[Array, ...]]]:
        """``(depth, arrays)`` of each mapped input."""
        result, pos = [], 0
        for d in self.depths:
            count = 1 if d == 1 else d
            result.append((d, self.inputs[pos:pos + count]))
            pos += count
        return result

    @property
    def captured(self) -> tuple[Array, ...]:
        return self.inputs[sum(1 if d == 1 else d for d in self.depths):]

    @property
    def length(self) -> ShapeComponent:
        depth, arrays = self.mapped_parts()[0]
        if depth == 1:
            return arrays[0].shape[0]
        return sh.sub(arrays[1].shape[0], 1)

    @property
    def num_outputs(self) -> int:
        return len(self.body.outputs)

    def symbol_totals(self) -> dict[str, ShapeComponent]:
        """Each element symbol's sum over all elements (an affine size)."""
        totals: dict[str, ShapeComponent] = {}
        for (depth, arrays), symbols in zip(self.mapped_parts(), self.symbols):
            if depth >= 2:
                # (the lists of each inner level, then the leaves)
                for k, m in enumerate(symbols[:-1]):
                    totals.setdefault(m, sh.sub(arrays[k + 2].shape[0], 1))
                totals.setdefault(symbols[-1], arrays[0].shape[0])
        return totals

    def is_jagged_output(self, index: int) -> bool:
        """Whether output *index* is packed: the elements' rows back to
        back (its first axis is affine in the element's sizes, or
        counted)."""
        shape = self.body.outputs[index].shape
        return bool(shape) and bool(self._element_symbols
                                    & sh.size_param_names(shape[0])) or any(
            k == index for k, _, _ in self.counted)

    def stacked_body(self) -> Body:
        """The body without its counted outputs, whose first axis may be
        a size computed in the body (for checks of the other results)."""
        counted = {k for k, _, _ in self.counted}
        return Body(self.body.params, tuple(
            o for k, o in enumerate(self.body.outputs) if k not in counted))

    def output_shape(self, index: int) -> Shape:
        shape = self.body.outputs[index].shape
        for k, _, name in self.counted:
            if k == index:
                return (prim.Variable(name),) + shape[1:]
        if not self.is_jagged_output(index):
            return (self.length,) + shape
        return (self.extent_total(shape[0], f"result {index}'s length"),
                ) + shape[1:]

    def extent_total(self, extent: ShapeComponent, what: str = "an extent"
                     ) -> ShapeComponent:
        """The sum over all elements of *extent*, an affine function of
        the element's sizes."""
        form = sh.to_affine(extent)
        total: ShapeComponent = sh.mul(self.length, form.const)
        totals = self.symbol_totals()
        for name, coeff in form.coeffs.items():
            if name in totals:
                total = sh.add(total, sh.mul(totals[name], coeff))
                continue
            if any(name in sh.size_param_names(c)
                   for a in self.inputs for c in a.shape):
                raise NotImplementedError(
                    f"map over a FractalTensor: {what} {extent} adds the "
                    f"size parameter '{name}' of an array from outside the "
                    "map to the element's sizes; such lengths are not "
                    "supported yet (their sum over the elements, the element "
                    f"count times '{name}', is not affine). Give that array "
                    "a static shape instead")
            # (a size parameter the body uses alone, s[n:]: not one of the
            # element's sizes, nor in the shape of anything the map reads)
            raise NotImplementedError(
                f"map over a FractalTensor: {what} {extent} adds the size "
                f"parameter '{name}' to the element's sizes; such lengths are "
                "not supported yet (their sum over the elements, the element "
                f"count times '{name}', is not affine). Reduce the result in "
                "the body, or use an integer bound (s[2:])")
        return total

    def output_dtype(self, index: int) -> np.dtype:
        return self.body.outputs[index].dtype

    def prefix_expr(self, symbol: str) -> tuple[Any, dict[str, Array]]:
        """The sum of *symbol* over the elements before ``_0``, as an
        expression over the bindings it returns."""
        for (depth, arrays), symbols in zip(self.mapped_parts(), self.symbols):
            if symbol not in symbols:
                continue
            # (the first list, then leaf, of element _0 at the symbol's level)
            expr: Any = index_var(0)
            bindings: dict[str, Array] = {}
            for k in range(symbols.index(symbol) + 1):
                expr = prim.Variable(f"_off{k}")[expr]
                bindings[f"_off{k}"] = arrays[k + 1]
            return expr, bindings
        raise KeyError(symbol)

    def output_offsets(self, index: int) -> IndexLambda:
        """Offsets of jagged output *index*: the running sum of the first
        axis' length, an affine function of the element's sizes."""
        return self.extent_offsets(self.body.outputs[index].shape[0])

    def extent_offsets(self, extent: ShapeComponent) -> IndexLambda:
        """The running sum over the elements of *extent* (an affine
        function of the element's sizes), ``(n + 1,)`` int64."""
        form = sh.to_affine(extent)
        terms: list[tuple[int, Any]] = [(form.const, index_var(0))]
        bindings: dict[str, Array] = {}
        for k, (name, coeff) in enumerate(sorted(form.coeffs.items())):
            term, b = self.prefix_expr(name)
            renamed = {old: f"{old}_{k}" for old in b}
            term = substitute(term, {old: prim.Variable(new)
                                     for old, new in renamed.items()})
            bindings.update({renamed[old]: a for old, a in b.items()})
            terms.append((coeff, term))
        return IndexLambda(linear_combination(terms), (sh.add(self.length, 1),),
                           np.dtype(np.int64), bindings)


_map_nesting = [0]


def _element_params(depth: int, values: Array, symbols: tuple[str, ...]
                    ) -> list[tuple[Shape, np.dtype]]:
    """The body parameters of one element of a FractalTensor of *depth*:
    its values ``(T, *elem_shape)``, then (depth >= 3) its rebased offsets,
    outermost first, ``(m + 1,)`` for each count ``m`` of *symbols*."""
    elem = values.shape[1:]
    counts, leaves = symbols[:-1], symbols[-1]
    return [((prim.Variable(leaves),) + elem, values.dtype)] + [
        ((sh.add(prim.Variable(m), 1),), np.dtype(np.int64)) for m in counts]


def readable_sizes(text: Any) -> str:
    """*text* with the body size parameters of :func:`element_symbols`
    under the names users know them by (``_ft_elem0_L`` reads ``L``)."""
    return re.sub(re.escape(ELEMENT_SIZE_PREFIX) + r"\d+_", "", str(text))


def element_symbols(depth: int, level: int) -> tuple[str, ...]:
    """The body size parameters of one element of a FractalTensor of
    *depth* traced at map/scan nesting *level*: ``(L,)`` at depth 2 (its
    length), ``(m, T)`` at depth 3 (its numbers of sequences and leaves),
    and at depth ``d`` its number of lists at each of its ``d - 2`` levels,
    then of leaves (``(m, m2, T)`` at depth 4)."""
    names = (("L",) if depth == 2 else
             ("m",) + tuple(f"m{k}" for k in range(2, depth - 1)) + ("T",))
    return tuple(f"{ELEMENT_SIZE_PREFIX}{level}_{s}" for s in names)


def element_views(params: Any, depths: Any) -> list[Any]:
    """The elements a traced body gets from its flat *params*, one per
    input of *depths*: an element of depth ``d >= 3`` is a :class:`Jagged`
    of depth ``d - 1`` over ``d - 1`` parameters (values, rebased offsets),
    anything else one parameter (see :func:`_element_params`)."""
    elements, pos = [], 0
    for d in depths:
        if d >= 3:
            elements.append(Jagged(params[pos], tuple(params[pos + 1:pos + d - 1])))
            pos += d - 1
        else:
            elements.append(params[pos])
            pos += 1
    return elements


#: the maps over FractalTensors built while a body is traced: ``(f, xs,
#: what, result leaves)``, most recent last (see
#: :func:`ftlazy.fractal_element_views.nested_map_result`)
traced_maps: deque[tuple] = deque(maxlen=256)


def jagged_map(f: Callable, *xs: Any,
               what: str = "map over a FractalTensor") -> Any:
    """:func:`ftlazy.map` where at least one of *xs* is a FractalTensor
    (:class:`Jagged` of depth >= 2): *f* gets one element of each (an array
    ``(L, *elem_shape)`` at depth 2, a :class:`Jagged` one level shallower
    from depth 3 on)
    and the elements of dense *xs* along axis 0. Results with a static shape
    stack to ``(n, ...)``; results whose first axis is affine in the
    element's sizes become FractalTensors of depth 2; FractalTensor results
    nest one level deeper (:mod:`ftlazy.fractal_nested`). *what* names the
    operation in run-time messages (:attr:`JaggedMap.what`)."""
    result = _jagged_map(f, *xs, what=what)
    if _map_nesting[0]:
        traced_maps.append((f, xs, what, tree_flatten(result, "map")[0]))
    return result


def _jagged_map(f: Callable, *xs: Any, what: str) -> Any:
    from ftlazy.ops import asarray
    if not callable(f):
        raise TypeError(f"map: f must be callable, got {type(f).__name__}")
    level = _map_nesting[0]
    inputs: list[Array] = []
    depths: list[int] = []
    symbols: list[tuple[str, ...]] = []
    params: list[tuple[Shape, np.dtype]] = []
    first_jagged: Jagged | None = None
    first_symbols: tuple[str, ...] = ()
    for k, x in enumerate(xs):
        if isinstance(x, Jagged):
            if first_jagged is None:
                first_jagged = x
                first_symbols = element_symbols(x.depth, level)
            elif x.depth != first_jagged.depth:
                raise ValueError(f"map zips FractalTensors of different depths: "
                                 f"{first_jagged!r} and {x!r}")
            syms = first_symbols
            inputs += [x.values, *x.offsets]
            depths.append(x.depth)
            symbols.append(syms)
            params += _element_params(x.depth, x.values, syms)
        else:
            try:
                a = asarray(x)
            except TypeError:
                raise TypeError(f"map inputs must be arrays or FractalTensors, "
                                f"got {type(x).__name__}") from None
            if a.ndim == 0:
                raise ValueError(f"map: inputs must have at least one axis, got "
                                 f"a 0-d array {a!r}")
            inputs.append(a)
            depths.append(1)
            symbols.append(())
            params.append((a.shape[1:], a.dtype))
    out_kinds: list[Any] = []
    # per leaf of the result: its body output, or how a FractalTensor
    # result nests one level deeper (ftlazy.fractal_nested)
    leaf_outputs: list[Any] = []
    #: the traced parameters and result leaves (see _sentence_map_result)
    traced_leaves: list[Any] = []

    def traced(*flat_params: Any) -> Any:
        from ftlazy.fractal_nested import counted_array, split_nested_leaf
        elements = element_views(flat_params, depths)
        out = f(*elements)
        leaves, structure = tree_flatten(out, "map")
        traced_leaves[:] = [flat_params, leaves]
        sentence_offsets = {e.offsets[0]: k for k, e in enumerate(elements)
                            if depths[k] == 3}
        arrays: list[Array] = []
        counts: dict = {}
        for leaf in leaves:
            if isinstance(leaf, Jagged) or (isinstance(leaf, Array)
                                            and counted_array(
                                                leaf, flat_params,
                                                frozenset(first_symbols))):
                outputs, nested = split_nested_leaf(
                    leaf, len(arrays), sentence_offsets, frozenset(first_symbols),
                    counts)
                arrays += outputs
                leaf_outputs.append(nested)
            else:
                leaf_outputs.append(len(arrays))
                arrays.append(asarray(leaf))
        out_kinds.append(structure)
        return tuple(arrays)

    _map_nesting[0] += 1
    try:
        leaf = tree_flatten(0, "map")[1]  # the structure of a single array
        body, captured, _ = _trace(traced, [[p] for p in params],
                                   [leaf] * len(params), "map",
                                   local_sizes=frozenset(first_symbols))
    finally:
        _map_nesting[0] -= 1
    counted = tuple(c for k in leaf_outputs if not isinstance(k, int)
                    for c in k.counted)
    if len(xs) == 1 and all(is_element(leaf, traced_leaves[0])
                            for leaf in traced_leaves[1]):
        # (the function returns its element: the map is its input)
        return tree_unflatten([xs[0]] * len(traced_leaves[1]), out_kinds[0])
    if max(depths) == 2:
        # (a map over another list in the body: every pair first)
        from ftlazy.fractal_pair_maps import pair_map_result
        rebuilt = pair_map_result(list(xs), *traced_leaves, depths,
                                  first_symbols, out_kinds[0], what)
        if rebuilt is not None:
            return rebuilt
    if max(depths) >= 3:
        # (the element read through one view: a map over the views)
        from ftlazy.fractal_element_views import (
            filtered_element_result, inner_rows_result, leaves_result,
            nested_map_result, sliced_element_result)
        from ftlazy.fractal_list_reads import list_read_result
        views = [sliced_element_result, filtered_element_result,
                 list_read_result]
        if max(depths) >= 4:
            # (maps over depth 4 have no lowering of their own)
            views += [nested_map_result, inner_rows_result, leaves_result]
        for view in views:
            rebuilt = view(list(xs), *traced_leaves, depths, first_symbols,
                           out_kinds[0], what)
            if rebuilt is not None:
                return rebuilt
    if depths == [3]:
        # (sentence maps returning counted lists, or reading them, s[:5] or
        # ft.filter of each sentence reduced: over all sentences, where
        # they are zipped)
        from ftlazy.fractal_sentence_reads import picked_sentence_result
        flat = _sentence_map_result(xs[0], *traced_leaves, out_kinds[0],
                                    frozenset(first_symbols))
        if flat is None and counted:
            # (results of a sentence's length, read at a fixed index)
            trace_params, leaves = traced_leaves
            flat = picked_sentence_result(
                xs[0], trace_params[0], trace_params[1], leaves,
                first_symbols, out_kinds[0], what)
            if flat is None:
                # (lists counted from the document's tokens alone, or from
                # the rows of maps over its sentences)
                from ftlazy.fractal_element_views import (
                    inner_rows_result, leaves_result)
                for view in (leaves_result, inner_rows_result):
                    flat = view(list(xs), *traced_leaves, depths,
                                first_symbols, out_kinds[0], what)
                    if flat is not None:
                        break
        if flat is not None:
            return flat
    if depths == [3] and all(isinstance(k, int) for k in leaf_outputs):
        # (a sentence read at a fixed index: a map over the sentences and a
        # gather, see the module)
        from ftlazy.fractal_sentence_reads import sentence_reads_result
        picked = sentence_reads_result(xs[0], body, list(captured),
                                       first_symbols, out_kinds[0], what)
        if picked is not None:
            return picked
    loop = JaggedMap(body, tuple(inputs) + tuple(captured), tuple(depths),
                     tuple(symbols), what, counted)
    results = []
    for k in leaf_outputs:
        if not isinstance(k, int):
            from ftlazy.fractal_nested import nested_result
            results.append(nested_result(loop, k))
            continue
        values = LoopResult(loop, k)
        results.append(Jagged(values, (loop.output_offsets(k),))
                       if loop.is_jagged_output(k) else values)
    return tree_unflatten(results, out_kinds[0])

# }}}


def sizes_per_element(body: Any, symbols: frozenset[str],
                      element_params: Any = None) -> set[str]:
    """The data-dependent sizes *body* computes from its element (its
    parameters, those numbered *element_params* where given, not arrays
    captured from outside; or the element's sizes *symbols*)."""
    from ftlazy.fractal_access import sizes_computed_from
    return sizes_computed_from(
        body.outputs, symbols, lambda m: isinstance(m, BodyParam) and (
            element_params is None or m.index in element_params))


def jagged_parts(x: Any) -> list[Any]:
    """The arrays of *x*: a FractalTensor's values and offsets levels (an
    element's flat parameters in a traced body, see :func:`element_views`),
    else *x* itself."""
    return [x.values, *x.offsets] if isinstance(x, Jagged) else [x]


def is_element(x: Any, params: Any) -> bool:
    """Whether *x* is the element a traced function got as the flat
    parameters *params* (the same nodes, not equal ones)."""
    parts = jagged_parts(x)
    return len(parts) == len(params) and all(
        a is b for a, b in zip(parts, params))


def _sentence_map_result(docs: Jagged, params: Any, leaves: list[Any],
                         structure: Any, doc_symbols: frozenset[str]) -> Any:
    """A map over documents whose function returns maps over the
    document's sentences, lists of a length computed per sentence
    (``ft.map(lambda d: ft.map(lambda s: ft.filter(p, s), d), docs)``) or
    results that read such lists (``ft.sum(s[:5], axis=0)``), as
    that sentence map over all sentences of all documents nested per
    document (the same values), which ft.compile zips as any map over
    depth 2. Arrays of a static shape that the sentence map captures from
    the document (a threshold from its tokens) are computed per document
    first and zipped in, a row per sentence (:func:`_rows_per_sentence`).
    None where the function does anything else, or its sentence map reads
    arrays of the document's sizes."""
    from ftlazy.transform.jagged_element_reads import BodyReplay
    inner = None
    picked = []
    for leaf in leaves:
        values = (_copied(leaf.values) if isinstance(leaf, Jagged)
                  and len(leaf.offsets) == 1 else _copied(leaf))
        if not (isinstance(values, LoopResult) and isinstance(
                values.loop, JaggedMap)):
            return None
        if inner is None:
            inner = values.loop
        if values.loop is not inner:
            return None
        picked.append(values.index)
    if (inner is None or inner.depths != (2,)
            or not (inner.counted or sizes_per_element(
                inner.body, frozenset(inner.symbols[0])))
            or inner.inputs[:2] != (params[0], params[1])):
        return None
    from ftlazy.node import topological_order
    traced = set(params)

    def reads_document(a: Any) -> bool:
        return isinstance(a, Node) and any(
            n in traced or (isinstance(n, SizeParam) and n.name in doc_symbols)
            for n in topological_order([a]))
    # (values the document computes and the sentence map captures, such as
    # a filter's threshold from the document's tokens: computed per
    # document first, then read at each sentence's document)
    per_document = [a for a in inner.captured if reads_document(a)]
    if any(not isinstance(a, Array) or any(
            sh.size_param_names(c) for c in a.shape) for a in per_document):
        return None

    body = inner.body
    rows = _rows_per_sentence(docs, params, per_document)

    def sentence_fn(s: Any, *document_rows: Any) -> Any:
        given = dict(zip(per_document, document_rows))
        replay = BodyReplay({body.params[0]: s, **{
            p: given.get(a, a) for p, a in zip(body.params[1:], inner.captured)}},
            {inner.symbols[0][0]: s.shape[0].name})
        return tree_unflatten([replay(body.outputs[k]) for k in picked],
                              structure)
    sentences = Jagged(docs.values, docs.offsets[1:])
    flat = jagged_map(sentence_fn, sentences, *rows, what=inner.what)
    flat_leaves, _ = tree_flatten(flat, "map")
    return tree_unflatten([Jagged(r.values, (docs.offsets[0],) + r.offsets)
                           if isinstance(r, Jagged)
                           else Jagged(r, (docs.offsets[0],))
                           for r in flat_leaves], structure)


def _rows_per_sentence(docs: Jagged, params: Any, arrays: list[Array]
                       ) -> list[Array]:
    """The arrays (of a static shape) that a map over *docs* computes from
    its element (the traced *params*: values, offsets) per document, one
    row per sentence of all documents (each sentence's document's)."""
    if not arrays:
        return []
    from ftlazy.fractal import gather
    from ftlazy.ops import arange, zeros
    from ftlazy.transform.jagged_element_reads import BodyReplay

    def per_document(doc: Any) -> tuple:
        replay = BodyReplay({params[0]: doc.values, params[1]: doc.offsets[0]})
        return tuple(replay(a) for a in arrays)
    values = jagged_map(per_document, docs)
    count = docs.offsets[0].shape[0] - 1
    owners = jagged_map(lambda doc, i: zeros((doc.offsets[0].shape[0] - 1,),
                                             np.int64) + i,
                        docs, arange(count))
    return [gather(v, owners.values) for v in values]


def _copied(a: Any) -> Any:
    """The array *a* copies whole (an IndexLambda reading one binding at
    its own indices; its other bindings only bind sizes), else *a*."""
    if isinstance(a, IndexLambda) and isinstance(a.expr, prim.Subscript):
        name = a.expr.aggregate.name
        own = tuple(index_var(k) for k in range(a.ndim))
        b = a.bindings.get(name)
        if (b is not None and a.expr.index_tuple == own
                and sh.shapes_equal(a.shape, b.shape)
                and all(k == name or k.startswith("_ft_size_")
                        for k in a.bindings)):
            return b
    return a


def map(f: Callable, *xs: Any) -> Any:
    """Apply *f* to the elements of *xs* in parallel and stack the results
    (see :func:`ftlazy.fractal.map`); where an input is a FractalTensor,
    see :func:`jagged_map`."""
    from ftlazy import fractal
    from ftlazy.fractal import tree_flatten
    if any(not isinstance(x, Jagged) and any(
            isinstance(leaf, Jagged) for leaf in tree_flatten(x, "map inputs")[0])
           for x in xs):
        return _map_bundles(f, xs)
    if len(xs) == 1 and isinstance(xs[0], Jagged):
        # (a gather of a list in a body: its rows gathered from the map over
        # the list)
        from ftlazy.fractal_access import map_over_gathered
        result = map_over_gathered(f, xs[0])
        if result is not None:
            return result
    if any(isinstance(x, Jagged) for x in xs):
        # (elements of one length known at build time: a dense map)
        from ftlazy.fractal_access import map_uniform_rows
        result = map_uniform_rows(f, xs)
        return jagged_map(f, *xs) if result is None else result
    return fractal.map(f, *xs)


def _map_bundles(f: Callable, xs: tuple) -> Any:
    """:func:`map` where bundles of names among *xs* hold FractalTensors:
    a map over all their leaves, whose function gets each argument's
    elements in the argument's structure."""
    from ftlazy.fractal import tree_flatten, tree_unflatten
    if not callable(f):
        raise TypeError(f"map: f must be callable, got {type(f).__name__}")
    flat = [tree_flatten(x, "map inputs") for x in xs]

    def on_leaves(*elements: Any) -> Any:
        args, start = [], 0
        for leaves, structure in flat:
            args.append(tree_unflatten(list(elements[start:start + len(leaves)]),
                                       structure))
            start += len(leaves)
        return f(*args)

    return map(on_leaves, *[leaf for leaves, _ in flat for leaf in leaves])
