# SPDX-License-Identifier: MIT
"""Array nodes of the lazy DAG.

Every node is declared with :func:`ftlazy.node.node`: a frozen, slotted,
interned dataclass, so structurally equal nodes are the same object and
``a == b`` between arrays is structural equality. Comparing an array with a
number or a numpy array by ``==`` or ``!=`` is a :class:`TypeError` (use
:func:`ftlazy.equal`); numpy functions and ufuncs applied to arrays build
nodes (see :mod:`ftlazy.ops.interop`). Shape and dtype inference lives on each
node (``_infer``); the numpy-like front end in :mod:`ftlazy.ops` validates
user input with friendly messages and then builds these nodes.

.. autoclass:: Array
.. autoclass:: Axis
.. autoclass:: Placeholder
.. autoclass:: SizeParam
.. autoclass:: DataWrapper
.. autoclass:: IndexLambda
.. autoclass:: Einsum
.. autoclass:: Reshape
.. autoclass:: AxisPermutation
.. autoclass:: Roll
.. autoclass:: Stack
.. autoclass:: Concatenate
.. autoclass:: NormalizedSlice
.. autoclass:: BasicIndex
.. autoclass:: AdvancedIndex
.. autoclass:: DictOfNamedArrays
"""

from __future__ import annotations

import keyword
from dataclasses import dataclass, field
from typing import Any, Iterator, Mapping

import numpy as np
import pymbolic.primitives as prim
from pytools.tag import Tag, check_tag_uniqueness, normalize_tags

from ftlazy import shapes as sh
from ftlazy.node import FrozenDict, IdentityKey, Node, node
from ftlazy.scalar_expr import (
    RESERVED_PREFIX, canonical_constants, get_variable_names, substitute)
from ftlazy.shapes import Shape, ShapeComponent


def check_result_value(name: str, value: Any) -> None:
    """:class:`TypeError` naming the result *name* unless *value* is an
    array or a FractalTensor."""
    from ftlazy.fractal_tensor import Jagged
    if not isinstance(value, (Array, Jagged)):
        raise TypeError(f"result {name!r} is not an array or a FractalTensor: "
                        f"{type(value).__name__}")


def check_user_name(name: Any, what: str) -> str:
    """Validate a user-given name: a C identifier, not reserved."""
    check_identifier(name, what)
    if name.startswith(RESERVED_PREFIX) or name.startswith("_"):
        raise ValueError(f"{what} name {name!r} is reserved: names starting "
                         f"with '_' (such as '{RESERVED_PREFIX}...') are used by "
                         "ftlazy's generated code")
    return name


def check_identifier(name: Any, what: str) -> str:
    """Validate a node-level name: an ASCII C identifier (reserved names
    allowed; the front end rejects them in user input)."""
    if not isinstance(name, str):
        raise TypeError(f"{what} name must be a str, got {type(name).__name__}")
    if not name.isidentifier() or not name.isascii() or keyword.iskeyword(name):
        raise ValueError(f"{what} name {name!r} is not a valid identifier")
    return name


def normalize_dtype(dtype: Any) -> np.dtype:
    """numpy dtype for *dtype*, restricted to the types ftlazy computes with
    (in the machine's byte order: ``'>f8'`` is float64)."""
    if isinstance(dtype, np.dtype) and dtype.kind in "biufc" and dtype.isnative:
        return dtype
    try:
        dt = np.dtype(dtype)
    except TypeError:
        raise TypeError(f"{dtype!r} is not a valid dtype") from None
    if dt.kind not in "biufc":
        raise TypeError(f"unsupported dtype {dt}: only bool, integer, float "
                        "and complex arrays are supported")
    return dt if dt.isnative else dt.newbyteorder("=")


def checked_tags(tags: Any) -> frozenset[Tag]:
    """*tags* (a tag, an iterable of tags or None) as a frozenset:
    :class:`TypeError` for anything but tags (a string is not an iterable
    of tags), :class:`pytools.tag.NonUniqueTagError` (a
    :class:`ValueError`) for two tags of one :class:`~pytools.tag.UniqueTag`
    kind, as pytato refuses them."""
    if isinstance(tags, (str, bytes)):
        raise TypeError(f"tags must be Tag instances, got the string {tags!r}")
    if isinstance(tags, type):
        raise TypeError(f"tags must be Tag instances, got the class "
                        f"{tags.__name__}: pass an instance, {tags.__name__}(...)")
    if tags is not None and not isinstance(tags, Tag):
        try:
            items = list(tags)
        except TypeError:
            raise TypeError(f"tags must be a Tag instance or an iterable of "
                            f"them, got {type(tags).__name__} {tags!r}") from None
        for item in items:
            if not isinstance(item, Tag):
                what = (f"the class {item.__name__} (pass an instance)"
                        if isinstance(item, type) else
                        f"{type(item).__name__} {item!r}")
                raise TypeError(f"tags must be Tag instances, got {what}")
        tags = items
    tags = normalize_tags(tags)
    return check_tag_uniqueness(tags) if tags else tags


@dataclass(frozen=True)
class Axis:
    """Metadata for one array axis (its tags)."""

    tags: frozenset[Tag] = frozenset()

    def tagged(self, tags: Any) -> Axis:
        return Axis(self.tags | checked_tags(tags))


_DEFAULT_AXIS = Axis()


@node()
class Array(Node):
    """Base of every array node.

    .. attribute:: shape

        Tuple of ints and affine expressions of size parameters.

    .. attribute:: dtype

        A :class:`numpy.dtype`.

    .. attribute:: tags

        A :class:`frozenset` of :class:`pytools.tag.Tag`.

    .. attribute:: axes

        One :class:`Axis` per dimension.
    """

    tags: frozenset = field(default=frozenset(), kw_only=True)
    axes: tuple = field(default=None, kw_only=True)

    __array_priority__ = 100

    def __post_init__(self) -> None:
        self._infer()
        if self._child_fields:
            check_direct_input_names(self)
        tags = self.tags
        if tags or not isinstance(tags, frozenset):
            object.__setattr__(self, "tags", checked_tags(tags))
        axes = self.axes
        if axes is None:
            object.__setattr__(self, "axes", (_DEFAULT_AXIS,) * len(self.shape))
        else:
            axes = tuple(axes)
            if len(axes) != len(self.shape) or not all(
                    isinstance(a, Axis) for a in axes):
                raise ValueError(f"axes must be {len(self.shape)} Axis objects, "
                                 f"got {axes!r}")
            object.__setattr__(self, "axes", axes)

    def _infer(self) -> None:
        """Set derived fields (``shape``, ``dtype``) and validate."""

    # {{{ properties

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> Any:
        """Number of elements (an int or a size-parameter expression)."""
        return sh.size_expr(self.shape)

    @property
    def T(self) -> Array:
        from ftlazy import ops
        return ops.transpose(self)

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of a 0-d array")
        if not isinstance(self.shape[0], int):
            raise TypeError(f"len() of an array with symbolic length {self.shape[0]}")
        return self.shape[0]

    def __iter__(self) -> Iterator[Array]:
        for i in range(len(self)):
            yield self[i]

    # {{{ numpy protocols

    def __array_ufunc__(self, ufunc: np.ufunc, method: str, *inputs: Any,
                        **kwargs: Any) -> Any:
        """numpy ufuncs on lazy arrays (``np.exp(x)``, ``numpy_array + x``)
        build nodes with the matching ``ft`` function; see
        :mod:`ftlazy.ops.interop`."""
        from ftlazy.ops.interop import array_ufunc
        return array_ufunc(ufunc, method, inputs, kwargs)

    def __array_function__(self, func: Any, types: Any, args: Any,
                           kwargs: Any) -> Any:
        """numpy functions on lazy arrays (``np.sum(x, axis=0)``) build
        nodes with the matching ``ft`` function; see
        :mod:`ftlazy.ops.interop`."""
        from ftlazy.ops.interop import array_function
        return array_function(func, types, args, kwargs)

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        raise TypeError(
            f"cannot convert the lazy array {self!r} to a numpy array: it has "
            "no values until it is evaluated; use ft.evaluate_numpy(array, "
            "**inputs) or a program from ft.compile(array) to compute them")

    # }}}

    def __bool__(self) -> bool:
        raise TypeError("the truth value of a lazy array is unknown until it is "
                        "evaluated; use ft.equal for elementwise comparison")

    def __repr__(self) -> str:
        """One line: kind, shape, dtype, name, tags, direct inputs and the
        number of nodes in the DAG (see :mod:`ftlazy.display`)."""
        from ftlazy.display import node_repr
        return node_repr(self)

    def _repr_extra(self) -> str:
        return ""

    def _repr_html_(self) -> str:
        from ftlazy.display import node_html
        return node_html(self)

    def ir(self) -> str:
        """The DAG as numbered statements (:func:`ftlazy.pretty`)."""
        from ftlazy.text_ir import pretty
        return pretty(self)

    # }}}

    # {{{ tags

    def tagged(self, tags: Any) -> Array:
        """This array with *tags* (a tag or an iterable of tags) added."""
        return self.copy(tags=self.tags | checked_tags(tags))

    def tags_of_type(self, tag_t: type) -> frozenset:
        """The tags of this array that are instances of *tag_t* (as
        :meth:`pytools.tag.Taggable.tags_of_type`)."""
        return frozenset(t for t in self.tags if isinstance(t, tag_t))

    def without_tags(self, tags: Any, verbose: bool = True) -> Array:
        """This array with *tags* removed; with *verbose* (pytato's
        signature), a warning names those it did not have."""
        tags = checked_tags(tags)
        missing = tags - self.tags
        if verbose and missing:
            import warnings
            warnings.warn(f"without_tags: the array has no tag(s) "
                          f"{sorted(map(repr, missing))}", stacklevel=2)
        return self.copy(tags=self.tags - tags)

    def with_tagged_axis(self, iaxis: int, tags: Any) -> Array:
        """This array with *tags* added to axis *iaxis*."""
        if not -self.ndim <= iaxis < self.ndim:
            raise IndexError(f"axis {iaxis} out of range for array of "
                             f"dimension {self.ndim}")
        iaxis %= self.ndim
        axes = list(self.axes)
        axes[iaxis] = axes[iaxis].tagged(tags)
        return self.copy(axes=tuple(axes))

    # }}}

    # {{{ numpy-like methods

    def reshape(self, *shape: Any, order: str = "C") -> Array:
        from ftlazy import ops
        if len(shape) == 1 and not isinstance(shape[0], int):
            shape = shape[0]
        return ops.reshape(self, shape, order=order)

    def astype(self, dtype: Any) -> Array:
        from ftlazy import ops
        return ops.astype(self, dtype)

    def transpose(self, *axes: Any) -> Array:
        from ftlazy import ops
        if len(axes) == 1 and axes[0] is not None and not isinstance(axes[0], int):
            axes = axes[0]
        return ops.transpose(self, axes if axes else None)

    def sum(self, axis: Any = None, dtype: Any = None,
            keepdims: bool = False) -> Array:
        from ftlazy import ops
        return ops.sum(self, axis=axis, dtype=dtype, keepdims=keepdims)

    def prod(self, axis: Any = None, dtype: Any = None,
             keepdims: bool = False) -> Array:
        from ftlazy import ops
        return ops.prod(self, axis=axis, dtype=dtype, keepdims=keepdims)

    def mean(self, axis: Any = None, dtype: Any = None,
             keepdims: bool = False) -> Array:
        from ftlazy import ops
        return ops.mean(self, axis=axis, dtype=dtype, keepdims=keepdims)

    def max(self, axis: Any = None, keepdims: bool = False) -> Array:
        from ftlazy import ops
        return ops.amax(self, axis=axis, keepdims=keepdims)

    def min(self, axis: Any = None, keepdims: bool = False) -> Array:
        from ftlazy import ops
        return ops.amin(self, axis=axis, keepdims=keepdims)

    def any(self, axis: Any = None, keepdims: bool = False) -> Array:
        from ftlazy import ops
        return ops.any(self, axis=axis, keepdims=keepdims)

    def all(self, axis: Any = None, keepdims: bool = False) -> Array:
        from ftlazy import ops
        return ops.all(self, axis=axis, keepdims=keepdims)

    def var(self, axis: Any = None, dtype: Any = None, ddof: int = 0,
            keepdims: bool = False) -> Array:
        from ftlazy import ops
        return ops.var(self, axis=axis, dtype=dtype, ddof=ddof,
                       keepdims=keepdims)

    def std(self, axis: Any = None, dtype: Any = None, ddof: int = 0,
            keepdims: bool = False) -> Array:
        from ftlazy import ops
        return ops.std(self, axis=axis, dtype=dtype, ddof=ddof,
                       keepdims=keepdims)

    def argmax(self, axis: Any = None, keepdims: bool = False) -> Array:
        from ftlazy import ops
        return ops.argmax(self, axis=axis, keepdims=keepdims)

    def argmin(self, axis: Any = None, keepdims: bool = False) -> Array:
        from ftlazy import ops
        return ops.argmin(self, axis=axis, keepdims=keepdims)

    def cumsum(self, axis: Any = None, dtype: Any = None) -> Array:
        from ftlazy import ops
        return ops.cumsum(self, axis=axis, dtype=dtype)

    def cumprod(self, axis: Any = None, dtype: Any = None) -> Array:
        from ftlazy import ops
        return ops.cumprod(self, axis=axis, dtype=dtype)

    def clip(self, min: Any = None, max: Any = None) -> Array:
        from ftlazy import ops
        return ops.clip(self, min, max)

    def round(self, decimals: int = 0) -> Array:
        from ftlazy import ops
        return ops.round(self, decimals)

    def conj(self) -> Array:
        from ftlazy import ops
        return ops.conj(self)

    conjugate = conj

    @property
    def real(self) -> Array:
        from ftlazy import ops
        return ops.real(self)

    @property
    def imag(self) -> Array:
        from ftlazy import ops
        return ops.imag(self)

    def dot(self, b: Any) -> Array:
        from ftlazy import ops
        return ops.dot(self, b)

    def trace(self, offset: int = 0, axis1: int = 0, axis2: int = 1,
              dtype: Any = None) -> Array:
        from ftlazy import ops
        return ops.trace(self, offset, axis1, axis2, dtype)

    def take(self, indices: Any, axis: Any = None) -> Array:
        from ftlazy import ops
        return ops.take(self, indices, axis=axis)

    def sort(self, axis: Any = -1) -> Array:
        """The sorted array (a new node: arrays are immutable, so unlike
        numpy's in-place method this returns the result)."""
        from ftlazy import ops
        return ops.sort(self, axis=axis)

    def argsort(self, axis: Any = -1) -> Array:
        from ftlazy import ops
        return ops.argsort(self, axis=axis)

    def squeeze(self, axis: Any = None) -> Array:
        from ftlazy import ops
        return ops.squeeze(self, axis)

    def swapaxes(self, axis1: int, axis2: int) -> Array:
        from ftlazy import ops
        return ops.swapaxes(self, axis1, axis2)

    def ravel(self, order: str = "C") -> Array:
        from ftlazy import ops
        return ops.ravel(self, order=order)

    flatten = ravel

    @property
    def itemsize(self) -> int:
        return self.dtype.itemsize

    @property
    def nbytes(self) -> Any:
        """``size * itemsize`` (symbolic where the shape is)."""
        return self.size * self.itemsize

    def __getitem__(self, index: Any) -> Array:
        from ftlazy import ops
        return ops.getitem(self, index)

    # }}}

    # {{{ operators

    def _binary(name: str, reflected: bool = False):  # noqa: N805
        def method(self, other):
            from ftlazy import ops
            fn = getattr(ops, name)
            return fn(other, self) if reflected else fn(self, other)
        method.__name__ = name
        return method

    __add__ = _binary("add")
    __radd__ = _binary("add", True)
    __sub__ = _binary("subtract")
    __rsub__ = _binary("subtract", True)
    __mul__ = _binary("multiply")
    __rmul__ = _binary("multiply", True)
    __truediv__ = _binary("divide")
    __rtruediv__ = _binary("divide", True)
    __floordiv__ = _binary("floor_divide")
    __rfloordiv__ = _binary("floor_divide", True)
    __mod__ = _binary("remainder")
    __rmod__ = _binary("remainder", True)
    __pow__ = _binary("power")
    __rpow__ = _binary("power", True)
    __matmul__ = _binary("matmul")
    __rmatmul__ = _binary("matmul", True)
    __and__ = _binary("bitwise_and")
    __rand__ = _binary("bitwise_and", True)
    __or__ = _binary("bitwise_or")
    __ror__ = _binary("bitwise_or", True)
    __xor__ = _binary("bitwise_xor")
    __rxor__ = _binary("bitwise_xor", True)
    __lt__ = _binary("less")
    __le__ = _binary("less_equal")
    __gt__ = _binary("greater")
    __ge__ = _binary("greater_equal")
    del _binary

    def __neg__(self) -> Array:
        from ftlazy import ops
        return ops.negative(self)

    def __pos__(self) -> Array:
        return self

    def __abs__(self) -> Array:
        from ftlazy import ops
        return ops.absolute(self)

    def __invert__(self) -> Array:
        from ftlazy import ops
        return ops.invert(self)

    # structural equality and hashing come from Node: == between arrays is
    # identity of interned nodes (dictionaries and sets rely on it);
    # elementwise comparison is ft.equal. Comparing an array with a value
    # numpy would compare elementwise is an error rather than a silent False.

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Array):
            return self is other
        _check_not_elementwise_comparison(self, other, "==", "ft.equal")
        return NotImplemented

    def __ne__(self, other: object) -> bool:
        if isinstance(other, Array):
            return self is not other
        _check_not_elementwise_comparison(self, other, "!=", "ft.not_equal")
        return NotImplemented

    __hash__ = Node.__hash__

    # }}}


def _is_array_like_value(value: object) -> bool:
    """Whether *value* is a number, a numpy scalar or array or a device
    array, which numpy would compare with an array elementwise. (Lists and
    tuples compare unequal, as containers of nodes may hold them.)"""
    if isinstance(value, (bool, int, float, complex, np.generic, np.ndarray)):
        return True
    return (type(value).__module__.startswith("pyopencl")
            and hasattr(value, "dtype"))


def _check_not_elementwise_comparison(array: Array, other: object, op: str,
                                      function: str) -> None:
    if _is_array_like_value(other):
        if hasattr(other, "shape") and getattr(other, "ndim", 0):
            shown = (f"an array ({type(other).__name__}) of shape "
                     f"{tuple(other.shape)} "
                     f"and dtype {other.dtype}")
        else:
            text = repr(other)
            shown = (f"{type(other).__name__} "
                     f"{text if len(text) <= 60 else text[:57] + '...'}")
        raise TypeError(
            f"cannot compare the lazy array {array!r} with {shown} by "
            f"'{op}': '{op}' on ftlazy "
            "arrays compares graphs, not values; use "
            f"{function}(x, y) for an elementwise comparison")


def check_direct_input_names(node: Node) -> None:
    """Cheap build-time check that the inputs *node* meets directly can be
    bound by name: no two different input nodes among its children share a
    name, and no placeholder or data wrapper among them has the name of a
    size parameter in the shape of *node* or of a child. (The whole DAG is
    checked when it is evaluated or compiled.)"""
    from ftlazy.node import iter_children
    seen: dict[str, Node] = {}
    for child in iter_children(node):
        name = getattr(child, "name", None)
        if name is None or not isinstance(child, (Placeholder, SizeParam,
                                                  DataWrapper)):
            continue
        other = seen.setdefault(name, child)
        if other is not child:
            raise ValueError(f"two different inputs are named {name!r}: "
                             f"{other!r} and {child!r}")
    data_names = {name for name, child in seen.items()
                  if not isinstance(child, SizeParam)}
    if not data_names:
        return
    for array in (*iter_children(node), node):
        clash = _size_names_in_shape(getattr(array, "shape", ())) & data_names
        if clash:
            name = min(clash)
            raise ValueError(
                f"two different inputs are named {name!r}: {seen[name]!r} and "
                f"the size parameter {name!r} in the shape "
                f"{sh.shape_str(array.shape)} of {array!r}")


def _size_names_in_shape(shape: Any) -> frozenset[str]:
    names: frozenset[str] = frozenset()
    for c in shape:
        if not isinstance(c, int):
            names = names | sh.size_param_names(c)
    return names


def _check_own_shape_names(node: Array, what: str) -> None:
    """An input named like a size parameter of its own shape
    (``make_placeholder("n", (n,), ...)``) cannot be bound."""
    if node.name is not None and node.name in _size_names_in_shape(node.shape):
        raise ValueError(
            f"two different inputs are named {node.name!r}: the {what} "
            f"{node.name!r} of shape {sh.shape_str(node.shape)} and the size "
            f"parameter {node.name!r} in its shape")


# {{{ inputs

@node()
class Placeholder(Array):
    """A named input array, bound at call time."""

    name: str
    shape: Shape
    dtype: np.dtype

    def _infer(self) -> None:
        check_identifier(self.name, "placeholder")
        object.__setattr__(self, "shape", sh.normalize_shape(self.shape))
        object.__setattr__(self, "dtype", normalize_dtype(self.dtype))
        _check_own_shape_names(self, "placeholder")

    def _repr_extra(self) -> str:
        return f", name={self.name!r}"


@node()
class SizeParam(Array):
    """A named non-negative integer scalar usable in shapes."""

    name: str
    shape: Shape = field(init=False)
    dtype: np.dtype = field(init=False)

    def _infer(self) -> None:
        check_identifier(self.name, "size parameter")
        object.__setattr__(self, "shape", ())
        object.__setattr__(self, "dtype", np.dtype(np.int64))

    def _repr_extra(self) -> str:
        return f", name={self.name!r}"


@node()
class DataWrapper(Array):
    """An array whose data is known at graph-build time (a numpy array or a
    :class:`pyopencl.array.Array`). Identity of the data, not its values,
    takes part in structural equality."""

    data: Any
    shape: Shape
    name: str | None = None
    dtype: np.dtype = field(init=False)

    def _key_value(self, name: str) -> Any:
        if name == "data":
            return IdentityKey(self.data)
        return getattr(self, name)

    def _infer(self) -> None:
        if self.name is not None:
            check_identifier(self.name, "data wrapper")
        object.__setattr__(self, "shape", sh.normalize_shape(self.shape))
        object.__setattr__(self, "dtype", normalize_dtype(self.data.dtype))
        if len(self.shape) != len(self.data.shape) or any(
                isinstance(s, int) and s != d
                for s, d in zip(self.shape, self.data.shape)):
            raise ValueError(f"data wrapper shape {sh.shape_str(self.shape)} does "
                             f"not match the data's shape {self.data.shape}")
        _check_own_shape_names(self, "data wrapper")

# }}}


# {{{ index lambda

@node(children=("bindings",))
class IndexLambda(Array):
    """The uniform array node: element ``[_0, _1, ...]`` is :attr:`expr`, a
    scalar expression (see :mod:`ftlazy.scalar_expr`) of the output indices
    that reads the arrays in :attr:`bindings` by name."""

    expr: Any
    shape: Shape
    dtype: np.dtype
    bindings: Mapping[str, Array]
    #: the constants of :attr:`expr` by type and bit pattern (see
    #: :func:`~ftlazy.scalar_expr.canonical_constants`)
    _constants: tuple = field(init=False)

    def _key_value(self, name: str) -> Any:
        if name == "expr":
            # x * -0.0 and x * 0.0 are different nodes
            return (self.expr, self._constants)
        return getattr(self, name)

    def _infer(self) -> None:
        object.__setattr__(self, "shape", sh.normalize_shape(self.shape))
        object.__setattr__(self, "dtype", normalize_dtype(self.dtype))
        if not isinstance(self.bindings, FrozenDict):
            object.__setattr__(self, "bindings", FrozenDict(self.bindings))
        for name, value in self.bindings.items():
            if not isinstance(value, Array):
                raise TypeError(f"binding {name!r} is not an Array: {value!r}")
        expr, constants = canonical_constants(self.expr)
        object.__setattr__(self, "expr", expr)
        object.__setattr__(self, "_constants", constants)

# }}}


# {{{ linear algebra

def parse_einsum_spec(spec: str, nargs: int) -> tuple[tuple[str, ...], str]:
    """Split a normalized ``'ij,jk->ik'`` spec into input and output subscripts."""
    if "->" not in spec:
        raise ValueError(f"einsum spec {spec!r} lacks '->'")
    lhs, out = spec.split("->")
    ins = tuple(lhs.split(","))
    if len(ins) != nargs:
        raise ValueError(f"einsum spec {spec!r} has {len(ins)} operands, "
                         f"got {nargs} arrays")
    for sub in ins + (out,):
        if not all(c.isalpha() and c.isascii() for c in sub):
            raise ValueError(f"einsum spec {spec!r}: subscripts must be letters "
                             f"(no ellipsis), got {sub!r}")
    if len(set(out)) != len(out):
        raise ValueError(f"einsum spec {spec!r}: output subscript repeated")
    missing = set(out) - set("".join(ins))
    if missing:
        raise ValueError(f"einsum spec {spec!r}: output subscripts "
                         f"{''.join(sorted(missing))} appear in no input")
    return ins, out


@node(children=("args",))
class Einsum(Array):
    """``numpy.einsum(spec, *args)`` for an explicit spec without ellipsis."""

    spec: str
    args: tuple[Array, ...]
    shape: Shape = field(init=False)
    dtype: np.dtype = field(init=False)

    def _infer(self) -> None:
        ins, out = parse_einsum_spec(self.spec, len(self.args))
        dims: dict[str, ShapeComponent] = {}
        for iarg, (sub, arg) in enumerate(zip(ins, self.args)):
            if len(sub) != arg.ndim:
                raise ValueError(f"einsum spec {self.spec!r}: operand {iarg} has "
                                 f"{arg.ndim} dimensions (shape "
                                 f"{sh.shape_str(arg.shape)}), the spec gives "
                                 f"{len(sub)} ({sub!r})")
            for c, d in zip(sub, arg.shape):
                if c in dims and not sh.prove_equal(dims[c], d):
                    raise ValueError(
                        f"einsum spec {self.spec!r}: index '{c}' has size "
                        f"{dims[c]} and {d} (operand {iarg}, shape "
                        f"{sh.shape_str(arg.shape)})")
                dims.setdefault(c, d)
        object.__setattr__(self, "shape", tuple(dims[c] for c in out))
        object.__setattr__(self, "dtype",
                           np.result_type(*[a.dtype for a in self.args]))

    def index_sizes(self) -> dict[str, ShapeComponent]:
        ins, _ = parse_einsum_spec(self.spec, len(self.args))
        return {c: d for sub, a in zip(ins, self.args)
                for c, d in zip(sub, a.shape)}

    def _repr_extra(self) -> str:
        return f", spec={self.spec!r}"

# }}}


# {{{ index remapping

@node(children=("array",))
class Reshape(Array):
    """``array.reshape(newshape, order=order)``."""

    array: Array
    newshape: Shape
    order: str = "C"
    shape: Shape = field(init=False)
    dtype: np.dtype = field(init=False)

    def _infer(self) -> None:
        newshape = sh.normalize_shape(self.newshape)
        object.__setattr__(self, "newshape", newshape)
        if self.order not in ("C", "F"):
            raise ValueError(f"reshape order must be 'C' or 'F', got {self.order!r}")
        if not sh.sizes_equal(self.array.shape, newshape):
            raise ValueError(f"cannot reshape array of shape "
                             f"{sh.shape_str(self.array.shape)} into shape "
                             f"{sh.shape_str(newshape)}: sizes differ")
        object.__setattr__(self, "shape", newshape)
        object.__setattr__(self, "dtype", self.array.dtype)


@node(children=("array",))
class AxisPermutation(Array):
    """``numpy.transpose(array, axis_permutation)``."""

    array: Array
    axis_permutation: tuple[int, ...]
    shape: Shape = field(init=False)
    dtype: np.dtype = field(init=False)

    def _infer(self) -> None:
        perm = tuple(self.axis_permutation)
        if sorted(perm) != list(range(self.array.ndim)):
            raise ValueError(f"axes {perm} are not a permutation of the "
                             f"{self.array.ndim} axes of the array")
        object.__setattr__(self, "axis_permutation", perm)
        object.__setattr__(self, "shape", tuple(self.array.shape[i] for i in perm))
        object.__setattr__(self, "dtype", self.array.dtype)


@node(children=("array",))
class Roll(Array):
    """``numpy.roll(array, shift, axis)`` along one axis."""

    array: Array
    shift: int
    axis: int
    shape: Shape = field(init=False)
    dtype: np.dtype = field(init=False)

    def _infer(self) -> None:
        if not 0 <= self.axis < self.array.ndim:
            raise ValueError(f"roll axis {self.axis} out of range for array "
                             f"of dimension {self.array.ndim}")
        object.__setattr__(self, "shape", self.array.shape)
        object.__setattr__(self, "dtype", self.array.dtype)


def _check_same_dtype_and_shapes(arrays: tuple[Array, ...], skip_axis: int | None,
                                 what: str) -> None:
    if not arrays:
        raise ValueError(f"{what} needs at least one array")
    first = arrays[0]
    for a in arrays[1:]:
        if a.ndim != first.ndim:
            raise ValueError(f"{what}: arrays have different dimensions: shapes "
                             f"{sh.shape_str(first.shape)} and {sh.shape_str(a.shape)}")
        if a.dtype != first.dtype:
            raise TypeError(f"{what}: arrays have different dtypes {first.dtype} "
                            f"and {a.dtype} (cast them first)")
        for i, (x, y) in enumerate(zip(first.shape, a.shape)):
            if i != skip_axis and not sh.prove_equal(x, y):
                raise ValueError(f"{what}: shapes {sh.shape_str(first.shape)} and "
                                 f"{sh.shape_str(a.shape)} differ in axis {i}")


@node(children=("arrays",))
class Stack(Array):
    """``numpy.stack(arrays, axis)`` (arrays of one shape and dtype)."""

    arrays: tuple[Array, ...]
    axis: int
    shape: Shape = field(init=False)
    dtype: np.dtype = field(init=False)

    def _infer(self) -> None:
        object.__setattr__(self, "arrays", tuple(self.arrays))
        _check_same_dtype_and_shapes(self.arrays, None, "stack")
        first = self.arrays[0]
        if not 0 <= self.axis <= first.ndim:
            raise ValueError(f"stack axis {self.axis} out of range")
        shape = list(first.shape)
        shape.insert(self.axis, len(self.arrays))
        object.__setattr__(self, "shape", tuple(shape))
        object.__setattr__(self, "dtype", first.dtype)


@node(children=("arrays",))
class Concatenate(Array):
    """``numpy.concatenate(arrays, axis)`` (arrays of one dtype)."""

    arrays: tuple[Array, ...]
    axis: int
    shape: Shape = field(init=False)
    dtype: np.dtype = field(init=False)

    def _infer(self) -> None:
        object.__setattr__(self, "arrays", tuple(self.arrays))
        first = self.arrays[0] if self.arrays else None
        if first is not None and not 0 <= self.axis < max(first.ndim, 1):
            raise ValueError(f"concatenate axis {self.axis} out of range for "
                             f"arrays of dimension {first.ndim}")
        _check_same_dtype_and_shapes(self.arrays, self.axis, "concatenate")
        if first.ndim == 0:
            raise ValueError("zero-dimensional arrays cannot be concatenated")
        shape = list(first.shape)
        total: ShapeComponent = 0
        for a in self.arrays:
            total = sh.add(total, a.shape[self.axis])
        shape[self.axis] = total
        object.__setattr__(self, "shape", tuple(shape))
        object.__setattr__(self, "dtype", first.dtype)


@dataclass(frozen=True)
class NormalizedSlice:
    """Elements ``start + step*k`` for ``0 <= k < length`` of one axis."""

    start: ShapeComponent
    step: int
    length: ShapeComponent


@node(children=("array",))
class BasicIndex(Array):
    """Basic indexing: one entry per axis of :attr:`array`, either an
    in-range integer index (an int or affine expression) that drops the axis,
    or a :class:`NormalizedSlice`."""

    array: Array
    indices: tuple
    shape: Shape = field(init=False)
    dtype: np.dtype = field(init=False)

    def _infer(self) -> None:
        if len(self.indices) != self.array.ndim:
            raise ValueError(f"BasicIndex needs {self.array.ndim} indices, got "
                             f"{len(self.indices)}")
        object.__setattr__(self, "shape", tuple(
            idx.length for idx in self.indices if isinstance(idx, NormalizedSlice)))
        object.__setattr__(self, "dtype", self.array.dtype)


@node(children=("array", "index_arrays"))
class AdvancedIndex(Array):
    """numpy advanced indexing. :attr:`indices` has one entry per axis of
    :attr:`array`: a :class:`NormalizedSlice`, or an int ``k`` meaning
    ``index_arrays[k]`` (an integer array; negative entries count from the
    end). The broadcast index dimensions go where the first advanced index is
    if all advanced indices are adjacent, else in front (numpy's rule)."""

    array: Array
    indices: tuple
    index_arrays: tuple[Array, ...]
    shape: Shape = field(init=False)
    dtype: np.dtype = field(init=False)

    def _infer(self) -> None:
        object.__setattr__(self, "index_arrays", tuple(self.index_arrays))
        if len(self.indices) != self.array.ndim:
            raise ValueError(f"AdvancedIndex needs {self.array.ndim} indices, got "
                             f"{len(self.indices)}")
        for a in self.index_arrays:
            if a.dtype.kind not in "iu":
                raise TypeError(f"index arrays must have an integer dtype, got "
                                f"{a.dtype}")
        bshape = sh.broadcast_shapes(*[a.shape for a in self.index_arrays])
        adv_pos = self.advanced_positions()
        slices = [idx.length for idx in self.indices
                  if isinstance(idx, NormalizedSlice)]
        if self.advanced_adjacent():
            before = sum(1 for i in range(adv_pos[0])
                         if isinstance(self.indices[i], NormalizedSlice))
            shape = tuple(slices[:before]) + bshape + tuple(slices[before:])
        else:
            shape = bshape + tuple(slices)
        object.__setattr__(self, "shape", shape)
        object.__setattr__(self, "dtype", self.array.dtype)

    def advanced_positions(self) -> list[int]:
        return [i for i, idx in enumerate(self.indices)
                if not isinstance(idx, NormalizedSlice)]

    def advanced_adjacent(self) -> bool:
        pos = self.advanced_positions()
        return pos == list(range(pos[0], pos[0] + len(pos)))

    def index_shape(self) -> Shape:
        return sh.broadcast_shapes(*[a.shape for a in self.index_arrays])

# }}}


# {{{ several results

@node(children=("data",))
class DictOfNamedArrays(Node):
    """Several named results computed by one program: arrays, and
    FractalTensors (:class:`~ftlazy.Jagged`), which evaluate to
    :class:`~ftlazy.JaggedArray` s."""

    data: Mapping[str, Array]

    def __post_init__(self) -> None:
        if not isinstance(self.data, FrozenDict):
            object.__setattr__(self, "data", FrozenDict(self.data))
        for name, value in self.data.items():
            check_user_name(name, "result")
            check_result_value(name, value)

    def __getitem__(self, name: str) -> Array:
        return self.data[name]

    def __iter__(self):
        return iter(self.data)

    def __len__(self) -> int:
        return len(self.data)

    def __contains__(self, name: object) -> bool:
        return name in self.data

    def keys(self):
        return self.data.keys()

    def values(self):
        return self.data.values()

    def items(self):
        return self.data.items()

    def get(self, name: str, default: Any = None) -> Any:
        return self.data.get(name, default)

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

    __eq__ = Node.__eq__
    __hash__ = Node.__hash__


Mapping.register(DictOfNamedArrays)

# }}}


# {{{ size expressions from arrays

def array_to_size_expr(a: Array) -> Any:
    """The scalar expression of a 0-d integer array built only from size
    params and constants (``2*n + 1``); raises :class:`TypeError` otherwise."""
    if isinstance(a, SizeParam):
        return prim.Variable(a.name)
    if (isinstance(a, IndexLambda) and a.shape == () and a.dtype.kind in "iu"):
        mapping = {name: array_to_size_expr(b) for name, b in a.bindings.items()}
        for v in get_variable_names(a.expr):
            if v not in mapping:
                raise TypeError(f"shape entry {a!r} is not an expression of "
                                "size parameters")
        return _strip_casts(substitute(a.expr, mapping))
    raise TypeError(f"shape entries must be ints or affine expressions of size "
                    f"parameters, got {a!r}")


def _strip_casts(expr: Any) -> Any:
    from ftlazy.scalar_expr import ExprIdentityMapper, TypeCast

    class _Strip(ExprIdentityMapper):
        def map_type_cast(self, e: TypeCast):
            if e.dtype.kind not in "iu":
                raise TypeError("shape expressions must be integer-valued")
            return self.rec(e.child)

        def map_constant(self, e):
            if isinstance(e, (np.integer, int)) and not isinstance(e, bool):
                return int(e)
            raise TypeError(f"shape expressions must be integer-valued, got {e!r}")

    return _Strip()(expr)

# }}}
