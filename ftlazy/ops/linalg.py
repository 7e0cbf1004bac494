# SPDX-License-Identifier: MIT
"""Linear algebra: :func:`einsum` and the products numpy spells with it.

Every product builds one :class:`~ftlazy.array.Einsum` with an explicit,
normalized spec (``'ij,jk->ik'``) whose operands share one dtype, numpy's
``result_type`` of the inputs: mixed inputs are cast first. As in numpy,
Python scalars given to these functions are converted to arrays (they are not
weakly typed: ``dot(float32_array, 2.0)`` is float64).

.. autofunction:: einsum
.. autofunction:: matmul
.. autofunction:: dot
.. autofunction:: vdot
.. autofunction:: inner
.. autofunction:: outer
.. autofunction:: tensordot
.. autofunction:: trace
"""

from __future__ import annotations

import string
from collections.abc import Sequence
from typing import Any

import numpy as np

from ftlazy import shapes as sh
from ftlazy.array import Array, Einsum
from ftlazy.ops.shape_ops import as_array, broadcast_to, cast, normalize_axis, ravel
from ftlazy.shapes import ShapeComponent

__all__ = [
    "dot",
    "einsum",
    "inner",
    "matmul",
    "outer",
    "tensordot",
    "trace",
    "vdot",
]

_LETTERS = string.ascii_letters


def _letters(n: int, what: str) -> str:
    if n > len(_LETTERS):
        raise ValueError(f"{what}: {n} distinct axes exceed the "
                         f"{len(_LETTERS)} einsum subscript letters")
    return _LETTERS[:n]


def _build(spec: str, arrays: Sequence[Array]) -> Array:
    """The Einsum of *spec* over *arrays* cast to their common dtype."""
    dtype = np.result_type(*[x.dtype for x in arrays])
    return Einsum(spec, tuple(cast(x, dtype) for x in arrays))


# {{{ einsum

def _parse_spec(subscripts: str, nargs: int) -> tuple[list[str], str]:
    spec = subscripts.replace(" ", "")
    if "." in spec:
        raise ValueError(f"einsum spec {subscripts!r}: ellipsis is not supported; "
                         "name every axis with a letter")
    if spec.count("->") > 1:
        raise ValueError(f"einsum spec {subscripts!r} has more than one '->'")
    lhs, arrow, out = spec.partition("->")
    ins = lhs.split(",")
    if len(ins) != nargs:
        raise ValueError(f"einsum spec {subscripts!r} names {len(ins)} "
                         f"operand(s), but {nargs} were given")
    for sub in ins + ([out] if arrow else []):
        for c in sub:
            if c not in _LETTERS:
                raise ValueError(f"einsum spec {subscripts!r}: invalid subscript "
                                 f"character {c!r} (subscripts are ASCII letters)")
    if not arrow:
        counts: dict[str, int] = {}
        for c in "".join(ins):
            counts[c] = counts.get(c, 0) + 1
        out = "".join(sorted(c for c, k in counts.items() if k == 1))
    else:
        for c in out:
            if out.count(c) > 1:
                raise ValueError(f"einsum spec {subscripts!r}: output subscript "
                                 f"{c!r} appears more than once")
            if c not in lhs:
                raise ValueError(f"einsum spec {subscripts!r}: output subscript "
                                 f"{c!r} appears in no operand")
    return ins, out


def einsum(subscripts: str, *operands: Any) -> Array:
    """``numpy.einsum(subscripts, *operands)`` without ellipsis.

    Implicit mode (no ``'->'``) outputs the subscripts that appear exactly
    once, in alphabetical order, as numpy does. A subscript repeated within
    one operand takes its diagonal (``'ii->i'``, trace ``'ii->'``). As in
    numpy, an axis of length 1 broadcasts against the same subscript's length
    in other operands.
    """
    if not isinstance(subscripts, str):
        raise TypeError(f"einsum subscripts must be a str, got "
                        f"{type(subscripts).__name__}")
    if not operands:
        raise ValueError("einsum needs at least one operand")
    ins, out = _parse_spec(subscripts, len(operands))
    arrays = [as_array(x) for x in operands]
    sizes: dict[str, ShapeComponent] = {}
    for iarg, (sub, x) in enumerate(zip(ins, arrays)):
        if len(sub) != x.ndim:
            raise ValueError(f"einsum spec {subscripts!r}: operand {iarg} has "
                             f"{x.ndim} dimension(s) (shape "
                             f"{sh.shape_str(x.shape)}), but its subscripts "
                             f"{sub!r} name {len(sub)}")
        own: dict[str, ShapeComponent] = {}
        for c, d in zip(sub, x.shape):
            if c in own and not sh.prove_equal(own[c], d):
                raise ValueError(f"einsum spec {subscripts!r}: index {c!r} is "
                                 f"repeated in operand {iarg} (shape "
                                 f"{sh.shape_str(x.shape)}) with sizes {own[c]} "
                                 f"and {d}")
            own[c] = d
            prev = sizes.get(c)
            if prev is None or prev == 1:
                sizes[c] = d
            elif d != 1 and not sh.prove_equal(prev, d):
                raise ValueError(f"einsum spec {subscripts!r}: index {c!r} has "
                                 f"size {prev} in an earlier operand and size {d} "
                                 f"in operand {iarg} (shape "
                                 f"{sh.shape_str(x.shape)})")
    arrays = [broadcast_to(x, tuple(sizes[c] for c in sub))
              if any(d == 1 and sizes[c] != 1 for c, d in zip(sub, x.shape))
              else x for sub, x in zip(ins, arrays)]
    return _build(",".join(ins) + "->" + out, arrays)

# }}}


# {{{ matrix products

def _check_aligned(ka: ShapeComponent, kb: ShapeComponent, a: Array, b: Array,
                   what: str, axis_a: int, axis_b: int) -> None:
    if not sh.prove_equal(ka, kb):
        raise ValueError(f"{what}: shapes {sh.shape_str(a.shape)} and "
                         f"{sh.shape_str(b.shape)} not aligned: {ka} (dim "
                         f"{axis_a}) != {kb} (dim {axis_b})")


def matmul(a: Any, b: Any) -> Array:
    """``numpy.matmul(a, b)`` (the ``@`` operator): 1-d operands are
    promoted to a row (``a``) or a column (``b``) that is removed from the
    result; leading (batch) dimensions broadcast. A FractalTensor *a*
    multiplies each of its leaves by a dense *b* (``xs @ W``)."""
    from ftlazy.fractal_tensor import Jagged
    if isinstance(a, Jagged):
        return a @ b
    a, b = as_array(a), as_array(b)
    for i, x in enumerate((a, b)):
        if x.ndim == 0:
            raise ValueError(f"matmul: operand {i} is 0-d (shape ()); use "
                             "multiply for scalars")
    axis_b = b.ndim - 2 if b.ndim >= 2 else 0
    _check_aligned(a.shape[-1], b.shape[axis_b], a, b, "matmul", a.ndim - 1,
                   axis_b)
    batch_a, batch_b = a.shape[:-2], b.shape[:-2]
    try:
        batch = sh.broadcast_shapes(batch_a, batch_b)
    except ValueError as e:
        raise ValueError(f"matmul: the batch dimensions of shapes "
                         f"{sh.shape_str(a.shape)} and {sh.shape_str(b.shape)} "
                         f"do not broadcast: {e}") from None
    nb = len(batch)
    letters = _letters(nb + 3, "matmul")
    batch_letters, (row, inner, col) = letters[:nb], letters[nb:]

    def batched(x: Array, own_batch: tuple, core: str) -> tuple[Array, str]:
        aligned = batch[nb - len(own_batch):]
        if any(d == 1 and t != 1 for d, t in zip(own_batch, aligned)):
            x = broadcast_to(x, batch + x.shape[len(own_batch):])
            own_batch = batch
        return x, batch_letters[nb - len(own_batch):] + core

    a, sub_a = batched(a, batch_a, row + inner if a.ndim >= 2 else inner)
    b, sub_b = batched(b, batch_b, inner + col if b.ndim >= 2 else inner)
    out = (batch_letters + (row if a.ndim >= 2 else "")
           + (col if b.ndim >= 2 else ""))
    return _build(f"{sub_a},{sub_b}->{out}", [a, b])


def _scalar_product(a: Array, b: Array) -> Array:
    from ftlazy.ops.elementwise import multiply
    dtype = np.result_type(a.dtype, b.dtype)
    return multiply(cast(a, dtype), cast(b, dtype))


def dot(a: Any, b: Any) -> Array:
    """``numpy.dot(a, b)``: the product of scalars; the inner product of
    1-d arrays; the matrix product of 2-d arrays; otherwise the sum product
    over the last axis of *a* and the second-to-last of *b* (the only axis
    if *b* is 1-d)."""
    a, b = as_array(a), as_array(b)
    if a.ndim == 0 or b.ndim == 0:
        return _scalar_product(a, b)
    axis_b = b.ndim - 2 if b.ndim >= 2 else 0
    _check_aligned(a.shape[-1], b.shape[axis_b], a, b, "dot", a.ndim - 1,
                   axis_b)
    letters = _letters(a.ndim + b.ndim - 1, "dot")
    inner, free_a, free_b = letters[0], letters[1:a.ndim], letters[a.ndim:]
    sub_b = (free_b[:-1] + inner + free_b[-1:]) if b.ndim >= 2 else inner
    return _build(f"{free_a}{inner},{sub_b}->{free_a}{free_b}", [a, b])


def vdot(a: Any, b: Any) -> Array:
    """``numpy.vdot(a, b)``: the dot product of the flattened arrays, the
    first one complex-conjugated."""
    a, b = ravel(as_array(a)), ravel(as_array(b))
    if not sh.prove_equal(a.shape[0], b.shape[0]):
        raise ValueError(f"vdot: the arrays have different sizes {a.shape[0]} "
                         f"and {b.shape[0]}")
    if a.dtype.kind == "c":
        from ftlazy.ops.elementwise import conjugate
        a = conjugate(a)
    return _build("i,i->", [a, b])


def inner(a: Any, b: Any) -> Array:
    """``numpy.inner(a, b)``: the sum product over the last axes; the
    result's shape is ``a.shape[:-1] + b.shape[:-1]``."""
    a, b = as_array(a), as_array(b)
    if a.ndim == 0 or b.ndim == 0:
        return _scalar_product(a, b)
    _check_aligned(a.shape[-1], b.shape[-1], a, b, "inner", a.ndim - 1,
                   b.ndim - 1)
    letters = _letters(a.ndim + b.ndim - 1, "inner")
    k, free_a, free_b = letters[0], letters[1:a.ndim], letters[a.ndim:]
    return _build(f"{free_a}{k},{free_b}{k}->{free_a}{free_b}", [a, b])


def outer(a: Any, b: Any) -> Array:
    """``numpy.outer(a, b)``: ``a.ravel()[:, None] * b.ravel()[None, :]``."""
    a, b = ravel(as_array(a)), ravel(as_array(b))
    return _build("i,j->ij", [a, b])


def tensordot(a: Any, b: Any, axes: Any = 2) -> Array:
    """``numpy.tensordot(a, b, axes)``: with an int *axes* ``N`` the last
    ``N`` axes of *a* are summed against the first ``N`` of *b*; with a pair
    of sequences, the given axes pairwise."""
    a, b = as_array(a), as_array(b)
    if isinstance(axes, (int, np.integer)) and not isinstance(axes, bool):
        n = int(axes)
        if n < 0 or n > a.ndim or n > b.ndim:
            raise ValueError(f"tensordot: cannot sum over {n} axes of arrays of "
                             f"shapes {sh.shape_str(a.shape)} and "
                             f"{sh.shape_str(b.shape)}")
        axes_a = tuple(range(a.ndim - n, a.ndim))
        axes_b = tuple(range(n))
    else:
        try:
            spec_a, spec_b = axes
        except (TypeError, ValueError):
            raise TypeError(f"tensordot: axes must be an int or a pair of "
                            f"sequences, got {axes!r}") from None
        spec_a = (spec_a,) if isinstance(spec_a, (int, np.integer)) else spec_a
        spec_b = (spec_b,) if isinstance(spec_b, (int, np.integer)) else spec_b
        axes_a = tuple(normalize_axis(x, a.ndim, "tensordot") for x in spec_a)
        axes_b = tuple(normalize_axis(x, b.ndim, "tensordot") for x in spec_b)
        if len(axes_a) != len(axes_b):
            raise ValueError(f"tensordot: axes {axes_a} and {axes_b} have "
                             "different lengths")
        if len(set(axes_a)) != len(axes_a) or len(set(axes_b)) != len(axes_b):
            raise ValueError(f"tensordot: repeated axis in {axes!r}")
    for i, j in zip(axes_a, axes_b):
        if not sh.prove_equal(a.shape[i], b.shape[j]):
            raise ValueError(f"tensordot: shape-mismatch for sum: axis {i} of "
                             f"shape {sh.shape_str(a.shape)} and axis {j} of "
                             f"shape {sh.shape_str(b.shape)}")
    letters = _letters(a.ndim + b.ndim - len(axes_a), "tensordot")
    sub_a = letters[:a.ndim]
    rest = iter(letters[a.ndim:])
    sub_b = "".join(sub_a[axes_a[axes_b.index(j)]] if j in axes_b else next(rest)
                    for j in range(b.ndim))
    out = ("".join(c for i, c in enumerate(sub_a) if i not in axes_a)
           + "".join(c for j, c in enumerate(sub_b) if j not in axes_b))
    return _build(f"{sub_a},{sub_b}->{out}", [a, b])


def _sum_dtype(dtype: np.dtype) -> np.dtype:
    """The dtype ``numpy.sum`` gives: small integers and bool grow to the
    default integer."""
    if dtype.kind == "b":
        return np.dtype(np.int_)
    if dtype.kind == "i" and dtype.itemsize < np.dtype(np.int_).itemsize:
        return np.dtype(np.int_)
    if dtype.kind == "u" and dtype.itemsize < np.dtype(np.uint).itemsize:
        return np.dtype(np.uint)
    return dtype


def trace(a: Any, offset: int = 0, axis1: int = 0, axis2: int = 1,
          dtype: Any = None) -> Array:
    """``numpy.trace(a, offset, axis1, axis2, dtype)``: the sum of the
    diagonal ``a[..., i, ..., i + offset, ...]`` of the two axes; the other
    axes remain, in order. Small integer and bool inputs sum in the default
    integer type, as in numpy."""
    from ftlazy.ops.indexing import getitem
    a = as_array(a)
    if a.ndim < 2:
        raise ValueError(f"trace: needs an array of at least two dimensions, "
                         f"got shape {sh.shape_str(a.shape)}")
    ax1 = normalize_axis(axis1, a.ndim, "trace")
    ax2 = normalize_axis(axis2, a.ndim, "trace")
    if ax1 == ax2:
        raise ValueError(f"trace: axis1 and axis2 cannot be the same ({ax1})")
    offset = int(offset)
    n1, n2 = a.shape[ax1], a.shape[ax2]
    start1, start2 = max(0, -offset), max(0, offset)
    len1, len2 = sh.sub(n1, start1), sh.sub(n2, start2)
    length: ShapeComponent | None = None
    if isinstance(len1, int) and isinstance(len2, int):
        length = max(0, min(len1, len2))
    elif sh.prove_le(len1, len2):
        length = len1
    elif sh.prove_le(len2, len1):
        length = len2
    if length is None or not sh.prove_le(0, length):
        # (min(len1, len2), or a length that may be negative, n - 1 of an
        # (n, n) array's offset 1 for n = 0: max(0, ...), not affine: a
        # data-dependent size)
        from ftlazy.ops.matrices import diagonal_view
        from ftlazy.ops.reductions import sum as total
        out_dtype = _sum_dtype(a.dtype) if dtype is None else np.dtype(dtype)
        return total(cast(diagonal_view(a, offset, ax1, ax2), out_dtype),
                     axis=-1)
    if not (start1 == start2 == 0 and length == n1 and length == n2):
        index = [slice(None)] * a.ndim
        index[ax1] = slice(start1, sh.add(start1, length))
        index[ax2] = slice(start2, sh.add(start2, length))
        a = getitem(a, tuple(index))
    out_dtype = _sum_dtype(a.dtype) if dtype is None else np.dtype(dtype)
    letters = _letters(a.ndim - 1, "trace")
    rest = iter(letters[1:])
    sub = "".join(letters[0] if i in (ax1, ax2) else next(rest)
                  for i in range(a.ndim))
    return Einsum(f"{sub}->{letters[1:]}", (cast(a, out_dtype),))

# }}}
