# SPDX-License-Identifier: MIT
"""Lowering of high-level array nodes to :class:`~ftlazy.array.IndexLambda`.

:func:`to_index_lambda` rewrites one node (an einsum, a reshape, an index
remapping, a gather, a scatter) as the uniform node whose body reads the
original node's children (a scatter in mode ``"set"`` also through a stored
reduction it adds); :func:`lower_to_index_lambdas` does so for every such
node of a DAG, bodies of loops included.

Lowered bodies follow the conventions of :mod:`ftlazy.scalar_expr` and are
well typed: index arithmetic is int64 (index variables, size parameters and
Python integer offsets and strides, as in shapes; values read from index
arrays are cast to int64 and combined with int64 constants), array reads keep
their dtype, and einsum factors are cast to the result dtype. The lowered
node keeps the original's ``tags`` and ``axes``.

.. autofunction:: to_index_lambda
.. autofunction:: lower_to_index_lambdas
.. autoclass:: IndexLambdaLowerer
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable
from typing import Any, TypeVar

import numpy as np
import pymbolic.primitives as prim

from ftlazy import shapes as sh
from ftlazy.array import (
    AdvancedIndex, Array, AxisPermutation, BasicIndex, Concatenate, Einsum,
    IndexLambda, NormalizedSlice, Reshape, Roll, Stack, parse_einsum_spec)
from ftlazy.fractal import Gather, Scatter
from ftlazy.node import Node
from ftlazy.scalar_expr import Reduce, TypeCast, index_var, reduction_var
from ftlazy.shapes import Shape, ShapeComponent
from ftlazy.transform.mappers import CopyMapper

__all__ = ["LOWERABLE", "IndexLambdaLowerer", "lower_to_index_lambdas",
           "to_index_lambda"]

NodeT = TypeVar("NodeT", bound=Node)

_INT64 = np.dtype(np.int64)


# {{{ expression helpers

def _plus(a: Any, b: Any) -> Any:
    """``a + b`` for index expressions, folding integers."""
    if isinstance(a, int) and isinstance(b, int):
        return a + b
    if isinstance(b, int) and b == 0:
        return a
    if isinstance(a, int) and a == 0:
        return b
    return prim.Sum((a, b))


def _times(a: Any, b: Any) -> Any:
    """``a * b`` for index expressions, folding integers."""
    if isinstance(a, int) and isinstance(b, int):
        return a * b
    if (isinstance(a, int) and a == 0) or (isinstance(b, int) and b == 0):
        return 0
    if isinstance(b, int) and b == 1:
        return a
    if isinstance(a, int) and a == 1:
        return b
    return prim.Product((a, b))


def _minus(a: Any, b: Any) -> Any:
    """``a - b`` for index expressions; *b* is an int or a shape component."""
    if isinstance(b, int):
        return _plus(a, -b)
    return _plus(a, sh.mul(b, -1))


def _product(components: Any) -> Any:
    """The product of shape components as an index expression: affine where
    it can be, else a pymbolic product of size parameters (which a body may
    use even though a shape may not)."""
    components = list(components)
    try:
        return sh.product(components)
    except sh.NonAffineError:
        const = math.prod(c for c in components if isinstance(c, int))
        symbolic = tuple(c for c in components if not isinstance(c, int))
        return prim.Product(((const,) if const != 1 else ()) + symbolic)


def _read(name: str, array: Array, index: Any) -> Any:
    """Binding *name* (holding *array*) read at *index*."""
    index = tuple(index)
    if array.ndim != len(index):
        raise AssertionError(f"reading {array!r} with {len(index)} indices")
    if not index:
        return prim.Variable(name)
    return prim.Subscript(prim.Variable(name), index)


def _cast(expr: Any, from_dtype: np.dtype, to_dtype: np.dtype) -> Any:
    if from_dtype == to_dtype:
        return expr
    if isinstance(expr, np.generic):
        with np.errstate(all="ignore"):
            return np.asarray(expr).astype(to_dtype)[()]
    return TypeCast(to_dtype, expr)


def _int64_constant(value: ShapeComponent) -> Any:
    """A shape component as an int64 operand of data-dependent arithmetic."""
    return np.int64(value) if isinstance(value, int) else value


def _normalize_position(position: ShapeComponent,
                        length: ShapeComponent) -> ShapeComponent:
    """A negative integer position counted from the end, as numpy does."""
    if isinstance(position, int) and position < 0:
        return sh.add(length, position)
    return position


def _guarded_read(bindings: _Bindings, array: Array, index: list[Any],
                  data_positions: list[tuple[Any, ShapeComponent]]) -> Any:
    """Read *array* at *index*, where the positions in *data_positions* come
    from data: an out-of-range position reads 0 instead of memory outside
    the array (code generation reports such indices as an IndexError)."""
    read = bindings.read(array, index)
    if not data_positions:
        return read
    conds = []
    for position, length in data_positions:
        conds.append(prim.Comparison(position, ">=", np.int64(0)))
        conds.append(prim.Comparison(position, "<", _int64_constant(length)))
    zero = array.dtype.type(0)
    return prim.If(prim.LogicalAnd(tuple(conds)), read, zero)


def _wrapped_index(value: Any, dtype: np.dtype, length: ShapeComponent) -> Any:
    """An index read from data (of *dtype*) as an int64 position in an axis
    of *length*: negative entries count from the end."""
    value = _cast(value, dtype, _INT64)
    if dtype.kind == "u":
        return value
    return prim.If(prim.Comparison(value, "<", np.int64(0)),
                   prim.Sum((value, _int64_constant(length))), value)


class _Bindings:
    """Names ``_in0, _in1, ...`` for the distinct arrays a body reads."""

    def __init__(self) -> None:
        self.arrays: dict[str, Array] = {}
        self._names: dict[Array, str] = {}

    def name(self, array: Array) -> str:
        name = self._names.get(array)
        if name is None:
            name = self._names[array] = f"_in{len(self.arrays)}"
            self.arrays[name] = array
        return name

    def read(self, array: Array, index: Any) -> Any:
        return _read(self.name(array), array, index)


def _finish(original: Array, expr: Any, bindings: _Bindings) -> IndexLambda:
    return IndexLambda(expr, original.shape, original.dtype, bindings.arrays,
                       tags=original.tags, axes=original.axes)

# }}}


# {{{ einsum

def _lower_einsum(expr: Einsum) -> IndexLambda:
    ins, out = parse_einsum_spec(expr.spec, len(expr.args))
    sizes = expr.index_sizes()
    variables: dict[str, Any] = {c: index_var(k) for k, c in enumerate(out)}
    bounds = []
    for c in "".join(ins):
        if c not in variables:
            var = reduction_var(len(bounds))
            variables[c] = var
            bounds.append((var.name, 0, sizes[c]))
    bindings = _Bindings()
    factors = tuple(
        _cast(bindings.read(arg, [variables[c] for c in sub]), arg.dtype,
              expr.dtype)
        for sub, arg in zip(ins, expr.args))
    # numpy's einsum on booleans multiplies with 'and' and adds with 'or'
    is_bool = expr.dtype.kind == "b"
    if len(factors) == 1:
        body = factors[0]
    else:
        body = prim.LogicalAnd(factors) if is_bool else prim.Product(factors)
    if bounds:
        body = Reduce("any" if is_bool else "sum", body, tuple(bounds))
    return _finish(expr, body, bindings)

# }}}


# {{{ reshape

def _factor_key(components: Any) -> tuple[int, Counter]:
    """The product of shape components as an integer times a multiset of
    primitive symbolic factors (``2*n + 2`` is ``2 * (n + 1)``)."""
    const, factors = sh.size_factors(list(components))
    return const, Counter(map(str, factors))


def _divides(a: tuple[int, Counter], b: tuple[int, Counter]) -> bool:
    return a[0] != 0 and b[0] % a[0] == 0 and not (a[1] - b[1])


def _reshape_groups(old: Shape, new: Shape
                    ) -> list[tuple[list[int], list[int]]]:
    """Split the axes of both shapes into runs of consecutive axes with
    provably equal products, so that each run of *new* is computed from the
    matching run of *old* alone."""
    if any(c == 0 for c in old + new):
        return [(list(range(len(old))), list(range(len(new))))]
    groups: list[tuple[list[int], list[int]]] = []
    i = j = 0
    while i < len(old) and j < len(new):
        g_old, g_new = [i], [j]
        i, j = i + 1, j + 1
        while True:
            k_old = _factor_key(old[a] for a in g_old)
            k_new = _factor_key(new[a] for a in g_new)
            if k_old == k_new:
                break
            grow_old = i < len(old) and (_divides(k_old, k_new)
                                         or not _divides(k_new, k_old))
            grow_new = j < len(new) and (_divides(k_new, k_old)
                                         or not _divides(k_old, k_new))
            if not (grow_old or grow_new):
                grow_old, grow_new = i < len(old), j < len(new)
            if not (grow_old or grow_new):
                break
            if grow_old:
                g_old.append(i)
                i += 1
            if grow_new:
                g_new.append(j)
                j += 1
        groups.append((g_old, g_new))
    rest_old, rest_new = list(range(i, len(old))), list(range(j, len(new)))
    if groups:
        groups[-1][0].extend(rest_old)
        groups[-1][1].extend(rest_new)
    elif rest_old or rest_new:
        groups.append((rest_old, rest_new))
    return groups


def _reshape_group_indices(old: list[ShapeComponent], new: list[ShapeComponent],
                           new_vars: list[Any], order: str) -> list[Any]:
    """Indices into the axes *old* from the indices *new_vars* of the axes
    *new* (of equal total size), in C or F order."""
    if order == "F":
        old, new, new_vars = old[::-1], new[::-1], new_vars[::-1]
    flat: Any = 0
    for k, (d, var) in enumerate(zip(new, new_vars)):
        if d != 1:
            flat = _plus(flat, _times(var, _product(new[k + 1:])))
    result = []
    first = True
    for k, d in enumerate(old):
        if d == 1:
            result.append(0)
            continue
        stride = _product(old[k + 1:])
        idx = flat if stride == 1 else prim.FloorDiv(flat, stride)
        # the outermost non-unit axis needs no remainder: flat < prod(old)
        result.append(idx if first else prim.Remainder(idx, d))
        first = False
    return result[::-1] if order == "F" else result


def _lower_reshape(expr: Reshape) -> IndexLambda:
    old, new = expr.array.shape, expr.shape
    index: list[Any] = [0] * len(old)
    for g_old, g_new in _reshape_groups(old, new):
        sub = _reshape_group_indices([old[a] for a in g_old],
                                     [new[a] for a in g_new],
                                     [index_var(a) for a in g_new], expr.order)
        for a, idx in zip(g_old, sub):
            index[a] = idx
    bindings = _Bindings()
    return _finish(expr, bindings.read(expr.array, index), bindings)

# }}}


# {{{ index remappings

def _lower_axis_permutation(expr: AxisPermutation) -> IndexLambda:
    index: list[Any] = [None] * expr.ndim
    for out_axis, in_axis in enumerate(expr.axis_permutation):
        index[in_axis] = index_var(out_axis)
    bindings = _Bindings()
    return _finish(expr, bindings.read(expr.array, index), bindings)


def _lower_roll(expr: Roll) -> IndexLambda:
    axis, n = expr.axis, expr.shape[expr.axis]
    shift = int(expr.shift)
    var = index_var(axis)
    if isinstance(n, int):
        shift = shift % n if n else 0
        # (i - shift) mod n with a non-negative numerator
        rolled = prim.Remainder(_plus(var, n - shift), n) if shift else var
    elif shift:
        normalized = prim.Remainder(shift, n)
        rolled = prim.Remainder(prim.Sum((var, n, prim.Product((-1, normalized)))),
                                n)
    else:
        rolled = var
    index = [rolled if a == axis else index_var(a) for a in range(expr.ndim)]
    bindings = _Bindings()
    return _finish(expr, bindings.read(expr.array, index), bindings)


def _lower_stack(expr: Stack) -> IndexLambda:
    axis = expr.axis
    index = [index_var(a) for a in range(expr.ndim) if a != axis]
    bindings = _Bindings()
    reads = [bindings.read(a, index) for a in expr.arrays]
    body = reads[-1]
    for k in range(len(reads) - 2, -1, -1):
        body = prim.If(prim.Comparison(index_var(axis), "==", k), reads[k], body)
    return _finish(expr, body, bindings)


def _lower_concatenate(expr: Concatenate) -> IndexLambda:
    axis = expr.axis
    var = index_var(axis)
    pieces: list[tuple[Array, ShapeComponent]] = []
    offset: ShapeComponent = 0
    for a in expr.arrays:
        if a.shape[axis] != 0:
            pieces.append((a, offset))
        offset = sh.add(offset, a.shape[axis])
    if not pieces:
        pieces = [(expr.arrays[0], 0)]
    bindings = _Bindings()
    # empty pieces are never read, but stay inputs of the program
    for a in expr.arrays:
        bindings.name(a)

    def read(array: Array, start: ShapeComponent) -> Any:
        index = [_minus(var, start) if a == axis else index_var(a)
                 for a in range(expr.ndim)]
        return bindings.read(array, index)

    reads = [read(a, start) for a, start in pieces]
    body = reads[-1]
    for k in range(len(pieces) - 2, -1, -1):
        body = prim.If(prim.Comparison(var, "<", pieces[k + 1][1]), reads[k], body)
    return _finish(expr, body, bindings)


def _slice_index(spec: NormalizedSlice, var: Any) -> Any:
    return _plus(spec.start, _times(var, spec.step))


def _lower_basic_index(expr: BasicIndex) -> IndexLambda:
    index = []
    out_axis = 0
    for spec, length in zip(expr.indices, expr.array.shape):
        if isinstance(spec, NormalizedSlice):
            index.append(_slice_index(spec, index_var(out_axis)))
            out_axis += 1
        else:
            index.append(_normalize_position(spec, length))
    bindings = _Bindings()
    return _finish(expr, bindings.read(expr.array, index), bindings)


def _index_array_read(array: Array, bshape: Shape, first_axis: int,
                      bindings: _Bindings) -> tuple[Any, np.dtype]:
    """The expression reading index array *array*, broadcast to *bshape*,
    whose axes are the output axes from *first_axis* on."""
    if (isinstance(array, IndexLambda) and not array.bindings and not array.shape
            and isinstance(array.expr, (int, np.integer))):
        return np.int64(array.expr), _INT64
    offset = len(bshape) - array.ndim
    index = [0 if d == 1 and bshape[offset + k] != 1
             else index_var(first_axis + offset + k)
             for k, d in enumerate(array.shape)]
    return bindings.read(array, index), array.dtype


def _lower_advanced_index(expr: AdvancedIndex) -> IndexLambda:
    bshape = expr.index_shape()
    nb = len(bshape)
    positions = expr.advanced_positions()
    adv_start = (sum(1 for spec in expr.indices[:positions[0]]
                     if isinstance(spec, NormalizedSlice))
                 if expr.advanced_adjacent() else 0)
    bindings = _Bindings()
    bindings.name(expr.array)
    index = []
    data_positions: list[tuple[Any, ShapeComponent]] = []
    n_slices = 0
    for spec, length in zip(expr.indices, expr.array.shape):
        if isinstance(spec, NormalizedSlice):
            out_axis = n_slices if n_slices < adv_start else n_slices + nb
            index.append(_slice_index(spec, index_var(out_axis)))
            n_slices += 1
            continue
        value, dtype = _index_array_read(expr.index_arrays[spec], bshape,
                                         adv_start, bindings)
        if isinstance(value, np.integer) and sh.prove_index_in_range(
                int(value), length):
            index.append(_normalize_position(int(value), length))
        else:
            # (data, or a constant read of an axis of symbolic length that
            # may be too short, ``x[0]``: checked at run time)
            index.append(_wrapped_index(value, dtype, length))
            data_positions.append((index[-1], length))
    return _finish(expr, _guarded_read(bindings, expr.array, index, data_positions),
                   bindings)


def _lower_gather(expr: Gather) -> IndexLambda:
    axis, array, indices = expr.axis, expr.array, expr.indices
    bindings = _Bindings()
    bindings.name(array)
    position = bindings.read(indices, [index_var(axis + k)
                                       for k in range(indices.ndim)])
    after = axis + indices.ndim
    wrapped = _wrapped_index(position, indices.dtype, array.shape[axis])
    index = ([index_var(a) for a in range(axis)] + [wrapped]
             + [index_var(after + k) for k in range(array.ndim - axis - 1)])
    return _finish(expr, _guarded_read(bindings, array, index,
                                       [(wrapped, array.shape[axis])]), bindings)


def _lower_scatter(expr: Scatter) -> IndexLambda:
    """``"add"``: ``x[r] + sum_k (idx[k] == r ? upd[k] : 0)`` (bools: ``or``
    and ``any``); ``"set"``: the last ``k`` with ``idx[k] == r`` (or -1) as a
    stored max-reduction of shape ``(len(x),)``, then ``upd[k]`` where it is
    not -1, else ``x[r]``. Indices are compared after counting negative ones
    from the end, so an out-of-range index matches no row and nothing is
    read or written out of bounds (code generation reports it as an
    IndexError). ``O(len(x) * m)`` work per element of a row."""
    x, indices, updates = expr.x, expr.indices, expr.updates
    rows, m = x.shape[0], indices.shape[0]
    bindings = _Bindings()
    rest = [index_var(a) for a in range(1, x.ndim)]
    x_read = bindings.read(x, [index_var(0)] + rest)
    if m == 0:
        # no update: the operands stay inputs of the program all the same
        bindings.name(indices)
        bindings.name(updates)
        return _finish(expr, x_read, bindings)
    k = reduction_var(0)
    bounds: tuple = ((k.name, 0, m),)

    def matches(reader: _Bindings) -> Any:
        """Whether index ``k`` (read through *reader*) names the row
        ``_0``."""
        position = _wrapped_index(reader.read(indices, [k]), indices.dtype, rows)
        return prim.Comparison(position, "==", TypeCast(_INT64, index_var(0)))

    if expr.mode == "add":
        update = bindings.read(updates, [k] + rest)
        if expr.dtype.kind == "b":
            total = Reduce("any", prim.LogicalAnd((matches(bindings), update)),
                           bounds)
            return _finish(expr, prim.LogicalOr((x_read, total)), bindings)
        total = Reduce("sum", prim.If(matches(bindings), update,
                                      expr.dtype.type(0)), bounds)
        return _finish(expr, prim.Sum((x_read, total)), bindings)
    # "set": which update (the last one) writes each row, as a stored array
    reader = _Bindings()
    candidate: Any = prim.If(matches(reader), TypeCast(_INT64, k), np.int64(-1))
    if not isinstance(m, int):
        # m may be 0 at run time: one more step, which reads nothing and
        # matches no row, keeps the max-reduction from being empty
        candidate = prim.If(prim.Comparison(k, "<", m), candidate, np.int64(-1))
        bounds = ((k.name, 0, sh.add(m, 1)),)
    last = IndexLambda(Reduce("max", candidate, bounds), (rows,), _INT64,
                       reader.arrays)
    which = bindings.read(last, [index_var(0)])
    written = prim.Comparison(which, ">=", np.int64(0))
    return _finish(expr, prim.If(written, bindings.read(updates, [which] + rest),
                                 x_read), bindings)

# }}}


_LOWERINGS: dict[type, Callable[[Any], IndexLambda]] = {
    Einsum: _lower_einsum,
    Reshape: _lower_reshape,
    AxisPermutation: _lower_axis_permutation,
    Roll: _lower_roll,
    Stack: _lower_stack,
    Concatenate: _lower_concatenate,
    BasicIndex: _lower_basic_index,
    AdvancedIndex: _lower_advanced_index,
    Gather: _lower_gather,
    Scatter: _lower_scatter,
}

#: the node classes :func:`to_index_lambda` rewrites
LOWERABLE = tuple(_LOWERINGS)


def to_index_lambda(expr: Array) -> IndexLambda:
    """*expr* as an :class:`~ftlazy.array.IndexLambda` reading *expr*'s
    children, with *expr*'s tags and axes; an IndexLambda is returned as it
    is. Supports :class:`~ftlazy.array.Einsum`, :class:`~ftlazy.array.Reshape`,
    :class:`~ftlazy.array.AxisPermutation`, :class:`~ftlazy.array.Roll`,
    :class:`~ftlazy.array.Stack`, :class:`~ftlazy.array.Concatenate`,
    :class:`~ftlazy.array.BasicIndex`, :class:`~ftlazy.array.AdvancedIndex`,
    :class:`~ftlazy.fractal.Gather` and :class:`~ftlazy.fractal.Scatter`;
    other nodes (inputs, loop results) are a :class:`TypeError`."""
    if isinstance(expr, IndexLambda):
        return expr
    for cls in type(expr).__mro__:
        lower = _LOWERINGS.get(cls)
        if lower is not None:
            return lower(expr)
    raise TypeError(f"to_index_lambda: {type(expr).__name__} nodes have no "
                    f"IndexLambda form (got {expr!r})")


class IndexLambdaLowerer(CopyMapper):
    """Copies a DAG, replacing every node :func:`to_index_lambda` supports by
    its lowering; inputs, IndexLambdas and loops stay, and loop bodies are
    lowered too."""

    def _lower(self, expr: Array) -> IndexLambda:
        return to_index_lambda(self.map_node(expr))

    map_einsum = _lower
    map_reshape = _lower
    map_axis_permutation = _lower
    map_roll = _lower
    map_stack = _lower
    map_concatenate = _lower
    map_basic_index = _lower
    map_advanced_index = _lower
    map_gather = _lower
    map_scatter = _lower


def lower_to_index_lambdas(expr: NodeT) -> NodeT:
    """*expr* (an array, a :class:`~ftlazy.array.DictOfNamedArrays` or a
    loop body) with every einsum, reshape, index remapping, gather and
    scatter of its DAG, loop bodies included, replaced by an equivalent
    :class:`~ftlazy.array.IndexLambda`. Placeholders, size parameters, data
    wrappers, IndexLambdas, loops and their results stay as they are."""
    if not isinstance(expr, Node):
        raise TypeError(f"lower_to_index_lambdas expects a DAG node, got "
                        f"{type(expr).__name__}")
    return IndexLambdaLowerer()(expr)
