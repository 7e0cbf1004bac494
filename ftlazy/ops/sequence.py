# SPDX-License-Identifier: MIT
"""Sequence access operations on axis 0 of an array (FractalTensor's
``slide``, ``shifted_slide`` and ``dilated_map``).

A *sequence* is any array ``(L, *elem)``; ``L`` may be an int or an affine
expression of size parameters, in particular the symbolic length of one
element of a FractalTensor inside :func:`ftlazy.map`. Each operation builds
ordinary DAG nodes (:class:`~ftlazy.array.IndexLambda` reads, plus a
:func:`ftlazy.map` over a FractalTensor for :func:`dilated_map` of a
symbolic length), so they compose with every other operation and run
through ``ft.evaluate_numpy`` and ``ft.compile``.

Window counts and run-time checks. :func:`slide` gives ``(L + 2*padding
- dilation*(size - 1) - 1) // stride + 1`` windows, which must not be
negative: 0 is an empty result (an empty sequence with "same" padding has
no windows), a sequence shorter still is an error. With a static length
this is checked when the node is built (:class:`ValueError`). With a
symbolic length it is checked at run time, before anything is computed:
the windows carry an unread, zero-size guard array of shape ``(count, 0)``
whose first axis is negative exactly when the count is, and every
evaluator refuses negative shapes (:class:`ValueError`). Inside a compiled
map over a FractalTensor the same guard makes an element that is too short
a :class:`ValueError` naming the element.

A stride above 1 on a symbolic length keeps an affine count where the
stride divides every coefficient of the length (``stride=2`` on a length
``2*n``); elsewhere the count ``(...) // stride + 1`` is a data-dependent
size (:func:`~ftlazy.fractal_access.derived_size`, computed at run time,
per element in a map over a FractalTensor), and the guard requires the
affine ``L + 2*padding - span + stride >= 0`` rows instead. For a single
length it is written as clamped slices' counts are
(:func:`~ftlazy.ops.clamped_slices.canonical_length`), so the windows
combine with slices of as many rows (``ft.slide(s, 1, stride=2)`` and
``s[::2]``).

The functions are :func:`ftlazy.slide`, :func:`ftlazy.shifted_slide` and
:func:`ftlazy.dilated_map` (documented with the top-level functions).
"""

from __future__ import annotations

import operator
from typing import Any, Callable

import numpy as np
import pymbolic.primitives as prim

from ftlazy import shapes as sh
from ftlazy.array import Array, IndexLambda
from ftlazy.ops.shape_ops import as_array
from ftlazy.scalar_expr import RESERVED_PREFIX, index_var
from ftlazy.ops.requirements import shape_requirement
from ftlazy.shapes import ShapeComponent

__all__ = ["slide", "shifted_slide", "dilated_map"]

_INT64 = np.dtype(np.int64)


# {{{ argument checks

def _int_arg(value: Any, name: str, fn: str, minimum: int) -> int:
    """*value* as a Python int of at least *minimum*; :class:`TypeError` for
    a non-integer, :class:`ValueError` below *minimum*, both naming
    *name*."""
    if isinstance(value, (bool, np.bool_)) or isinstance(value, Array):
        raise TypeError(f"{fn}: {name} must be a Python or numpy integer, got "
                        f"{type(value).__name__} {value!r}")
    try:
        result = operator.index(value)
    except TypeError:
        raise TypeError(f"{fn}: {name} must be an integer, got "
                        f"{type(value).__name__} {value!r}") from None
    if result < minimum:
        raise ValueError(f"{fn}: {name} must be at least {minimum}, got {result}")
    return result


def _sequence(seq: Any, fn: str) -> Array:
    """*seq* as an array with at least one axis (the sequence axis)."""
    from ftlazy.fractal_tensor import Jagged
    if isinstance(seq, Jagged):
        raise TypeError(
            f"{fn} works on a sequence (an array, axis 0); for every sequence "
            f"of the FractalTensor {seq!r} use ft.map(lambda s: ft.{fn}(s, "
            "...), xs)")
    a = as_array(seq)
    if a.ndim < 1:
        raise ValueError(f"{fn}: the sequence must have at least one axis, got "
                         f"a 0-d array {a!r}")
    return a


def _pad_scalar(pad_value: Any, dtype: np.dtype) -> np.generic:
    """*pad_value* as a scalar of *dtype*; it must be a number that *dtype*
    holds exactly (as ``numpy.pad`` would store it)."""
    if isinstance(pad_value, Array) or not np.isscalar(pad_value) or \
            isinstance(pad_value, (str, bytes)):
        raise TypeError(f"slide: pad_value must be a Python or numpy scalar "
                        f"number, got {type(pad_value).__name__} {pad_value!r}")
    with np.errstate(all="ignore"):
        try:
            value = np.array(pad_value).astype(dtype)[()]
        except (TypeError, ValueError, OverflowError):
            raise TypeError(f"slide: pad_value {pad_value!r} cannot be stored in "
                            f"the sequence's dtype {dtype}") from None
        same = bool(value == pad_value) or bool(np.isnan(value) and np.isnan(
            pad_value)) if dtype.kind in "fc" else bool(value == pad_value)
    if not same:
        raise ValueError(f"slide: pad_value {pad_value!r} is not representable in "
                         f"the sequence's dtype {dtype} (it would be {value!r})")
    return value


def _affine(*terms: tuple[int, Any]) -> Any:
    """``sum(coeff * expr)`` without terms of coefficient 0 or factors 1."""
    parts: list[Any] = []
    for coeff, expr in terms:
        if coeff == 0:
            continue
        if isinstance(expr, int):
            parts.append(coeff * expr)
        else:
            parts.append(expr if coeff == 1 else prim.Product((coeff, expr)))
    parts = [p for p in parts if not (isinstance(p, int) and p == 0)]
    if not parts:
        return 0
    return parts[0] if len(parts) == 1 else prim.Sum(tuple(parts))


def _elem_indices(a: Array, first: int) -> tuple[Any, ...]:
    """Index variables of *a*'s element axes, output axes from *first*."""
    return tuple(index_var(first + k) for k in range(a.ndim - 1))

# }}}


# {{{ slide

def _window_count(length: ShapeComponent, size: int, dilation: int,
                  stride: int, padding: int) -> ShapeComponent:
    """``(length + 2*padding - span) // stride + 1`` as a shape component
    (:class:`ValueError` if that is negative for a static sequence): affine,
    or for a symbolic length and a stride that does not divide its
    coefficients a data-dependent size."""
    span = dilation * (size - 1) + 1
    room = sh.add(length, 2 * padding - span)   # free positions after one window
    if isinstance(room, int):
        if room // stride + 1 < 0:
            raise ValueError(
                f"slide: a window of size={size} with dilation={dilation} spans "
                f"{span} positions, more than the sequence of length {length}"
                + (f" padded by {padding} on each side ({length + 2 * padding})"
                   if padding else "")
                + f" can reach with stride={stride} (the number of windows, "
                f"({room}) // {stride} + 1, is negative); pass a smaller size "
                "(or dilation), or padding")
        return room // stride + 1
    form = sh.to_affine(room)
    if any(c % stride for c in form.coeffs.values()):
        # (a data-dependent size; 0 where the sequence is too short, which
        # the guard of slide then reports)
        from ftlazy.fractal_access import _size
        from ftlazy.ops.clamped_slices import _TABULATED, canonical_length
        if (list(form.coeffs.values()) == [1]
                and max(abs(form.const), stride) <= _TABULATED):
            # (a single length: in the canonical form of clamped slices'
            # counts, so that ft.slide(s, 1, stride=2) and s[::2] combine)
            (name,) = form.coeffs
            return _size(canonical_length(
                prim.Variable(name),
                lambda m: max(0, (m + form.const) // stride + 1),
                2 * abs(form.const) + 1, stride))
        reach = sh.to_affine(sh.add(room, stride)).to_expr()
        return _size(prim.If(prim.Comparison(reach, "<", 0), 0,
                             prim.FloorDiv(reach, stride)))
    return sh.AffineForm({k: c // stride for k, c in form.coeffs.items()},
                         form.const // stride + 1).to_expr()


def slide(seq: Any, size: int, stride: int = 1, dilation: int = 1,
          padding: int = 0, pad_value: Any = 0) -> Array:
    """Sliding windows along axis 0 of *seq* ``(L, *elem)``: an array
    ``(num_windows, size, *elem)`` with ``num_windows = (L + 2*padding -
    dilation*(size - 1) - 1) // stride + 1`` and ::

        result[w, k] = padded[w*stride + k*dilation]

    where ``padded`` is *seq* with *padding* rows of *pad_value* before and
    after it (``padded[j] = seq[j - padding]`` inside the sequence). A
    count of 0 is an empty result (an empty sequence with "same" padding,
    ``2*padding == dilation*(size - 1)``, has no windows); a negative one
    (a sequence shorter still) is a :class:`ValueError`: here for a static
    length, at run time for a symbolic one (see the module docs). *size*,
    *stride* and *dilation* must be integers of at least 1 and *padding* a
    non-negative integer (:class:`TypeError` / :class:`ValueError` naming
    the argument);
    *pad_value* a number that the sequence's dtype holds exactly.
    """
    size = _int_arg(size, "size", "slide", 1)
    stride = _int_arg(stride, "stride", "slide", 1)
    dilation = _int_arg(dilation, "dilation", "slide", 1)
    padding = _int_arg(padding, "padding", "slide", 0)
    a = _sequence(seq, "slide")
    pad = _pad_scalar(pad_value, a.dtype)
    length = a.shape[0]
    span = dilation * (size - 1) + 1
    count = _window_count(length, size, dilation, stride, padding)

    position = _affine((stride, index_var(0)), (dilation, index_var(1)),
                       (-padding, 1))
    from ftlazy.fractal_access import derived_size_bindings
    derived = derived_size_bindings((count,))
    read = prim.Variable("_in0")[(position,) + _elem_indices(a, 2)]
    if padding or derived:
        # (with a data-dependent count, loopy's bounds check cannot prove
        # the windows in range: guarded as padding is)
        inside = prim.LogicalAnd((prim.Comparison(position, ">=", 0),
                                  prim.Comparison(position, "<", length)))
        expr: Any = prim.If(inside, read, pad)
    else:
        expr = read
    bindings: dict[str, Array] = {"_in0": a}
    # (a data-dependent count is never negative: the windows fit where
    # span - 2*padding - stride rows are there, an affine requirement)
    fits = (sh.add(length, 2 * padding - span + stride) if derived
            else count)
    if not isinstance(fits, int) and not sh.prove_le(0, fits):
        # (negative exactly when the count is)
        needed = span - 2 * padding - stride
        bindings["_fits"] = shape_requirement(
            fits, a,
            f"ft.slide: a sequence of fewer than {needed} rows gives a "
            f"negative number of windows of size {size} (dilation "
            f"{dilation}, padding {padding}, stride {stride}; a window "
            f"spans {span} rows)")
    bindings.update(derived)
    return IndexLambda(expr, (count, size) + tuple(a.shape[1:]), a.dtype,
                       bindings)

# }}}


# {{{ shifted_slide

def shifted_slide(seq: Any, size: int, dilation: int = 1) -> Array:
    """One circular window centred on each position of *seq* ``(L,
    *elem)``: an array ``(L, size, *elem)`` with ::

        result[p, k] = seq[(p + dilation*(k - size//2)) % L]

    for ``k in range(size)``: window ``p`` holds position ``p`` at ``k =
    size//2``, ``size//2`` dilated steps before it and ``(size - 1)//2``
    after it (an even *size* reaches one step further back than forward),
    wrapping around the ends of the sequence (several times where the window
    is longer than the sequence). An empty sequence gives ``(0, size,
    *elem)``. *size* and *dilation* must be integers of at least 1.
    """
    size = _int_arg(size, "size", "shifted_slide", 1)
    dilation = _int_arg(dilation, "dilation", "shifted_slide", 1)
    a = _sequence(seq, "shifted_slide")
    length = a.shape[0]
    centre = size // 2
    if size == 1:
        position: Any = index_var(0)
    else:
        # floor modulo (numpy's sign rule on every backend): non-negative
        offset = _affine((dilation, index_var(1)), (-dilation * centre, 1))
        position = prim.Remainder(prim.Sum((index_var(0), offset)), length)
    expr = prim.Variable("_in0")[(position,) + _elem_indices(a, 2)]
    return IndexLambda(expr, (length, size) + tuple(a.shape[1:]), a.dtype,
                       {"_in0": a})

# }}}


# {{{ dilated_map

def _checked_results(out: Any, lengths: list[ShapeComponent] | ShapeComponent,
                     what: str) -> tuple[list[Array], Any]:
    """The leaves of *f*'s result (arrays whose first axis is *lengths*)."""
    from ftlazy.fractal import tree_flatten
    from ftlazy.ops import asarray
    leaves, structure = tree_flatten(out, "dilated_map")
    arrays = []
    for leaf in leaves:
        try:
            arr = asarray(leaf)
        except TypeError:
            raise TypeError(f"dilated_map: f must return arrays (or a tuple, "
                            f"list or dict of them), got {type(leaf).__name__}"
                            ) from None
        if arr.ndim < 1 or not sh.prove_equal(arr.shape[0], lengths):
            raise ValueError(
                f"dilated_map: f must return a sequence as long as its input "
                f"({what} of length {lengths}), got shape "
                f"{sh.shape_str(arr.shape)}")
        arrays.append(arr)
    return arrays, structure


def _dilated_static(f: Callable[[Array], Any], a: Array, dilation: int,
                    length: int) -> Any:
    """:func:`dilated_map` of a static length: *f* traced on each of the
    ``dilation`` subsequences, the results interleaved by one read."""
    from ftlazy.fractal import tree_unflatten
    per_r: list[list[Array]] = []
    structure = None
    for r in range(dilation):
        sub = a[r::dilation]
        leaves, st = _checked_results(f(sub), sub.shape[0],
                                      f"the subsequence seq[{r}::{dilation}]")
        if structure is None:
            structure = st
        elif st != structure or len(leaves) != len(per_r[0]):
            raise ValueError("dilated_map: f returned differently structured "
                             f"results for seq[0::{dilation}] and "
                             f"seq[{r}::{dilation}]")
        per_r.append(leaves)
    results = []
    for k in range(len(per_r[0])):
        pieces = [leaves[k] for leaves in per_r]
        first = pieces[0]
        for r, p in enumerate(pieces):
            if p.shape[1:] != first.shape[1:] or p.dtype != first.dtype:
                raise ValueError(
                    f"dilated_map: result {k} of f has shape "
                    f"{sh.shape_str(first.shape)} and dtype {first.dtype} on "
                    f"seq[0::{dilation}] but {sh.shape_str(p.shape)} and "
                    f"{p.dtype} on seq[{r}::{dilation}]")
        j = index_var(0)
        rest = _elem_indices(first, 1)
        row = prim.FloorDiv(j, dilation)
        phase = prim.Remainder(j, dilation)
        # subsequences of no rows are never read
        live = [r for r in range(dilation) if r < length]
        expr: Any = prim.Variable(f"_in{live[-1]}")[(row,) + rest] if live \
            else np.zeros((), first.dtype)[()]
        for r in reversed(live[:-1]):
            expr = prim.If(prim.Comparison(phase, "==", r),
                           prim.Variable(f"_in{r}")[(row,) + rest], expr)
        results.append(IndexLambda(
            expr, (length,) + tuple(first.shape[1:]), first.dtype,
            {f"_in{r}": p for r, p in enumerate(pieces)}))
    return tree_unflatten(results, structure)


def _length_bindings(a: Array) -> dict[str, Array]:
    """Unread bindings that make an expression of ``a.shape[0]`` depend on
    what determines it. Inside a map body (the length is an element's),
    *a* itself, so that the expression stays in the body. Elsewhere the
    length's size parameters and the placeholders and data that *a* reads
    (cheap to evaluate, and their shapes bind inferred size parameters), so
    that a compiled program's host can compute the subsequence offsets
    from the inputs it is given."""
    from ftlazy.analysis import get_inputs
    from ftlazy.array import SizeParam
    names = sh.size_param_names(a.shape[0])
    if any(name.startswith(RESERVED_PREFIX) for name in names):
        return {"_ft_seq": a}
    bindings: dict[str, Array] = {
        f"_ft_size_{name}": SizeParam(name) for name in sorted(names)}
    inputs = sorted(get_inputs(a), key=lambda n: (type(n).__name__,
                                                  str(getattr(n, "name", ""))))
    bindings.update({f"_ft_input{k}": n for k, n in enumerate(inputs)})
    return bindings


def _min(a: Any, b: Any) -> Any:
    # (not prim.Min: OpenCL's min() is ambiguous on mixed int and long)
    return prim.If(prim.Comparison(a, "<", b), a, b)


def _dilated_symbolic(f: Callable[[Array], Any], a: Array, dilation: int,
                      length: ShapeComponent) -> Any:
    """:func:`dilated_map` of a symbolic length: the subsequences are the
    elements of a FractalTensor (their lengths are not affine in ``L``), *f*
    is mapped over it with :func:`ftlazy.map`, and the packed results are
    interleaved back. Subsequence ``r`` has ``m + (r < t)`` rows, ``m = L //
    dilation``, ``t = L % dilation``, and starts at ``r*m + min(r, t)``."""
    from ftlazy.fractal import tree_flatten, tree_unflatten
    from ftlazy.fractal_tensor import Jagged, jagged_map
    d = dilation
    m = prim.FloorDiv(length, d)
    t = prim.Remainder(length, d)
    r = index_var(0)
    offsets = IndexLambda(prim.Sum((prim.Product((r, m)), _min(r, t))),
                          (d + 1,), _INT64, _length_bindings(a))
    # packed row q of subsequence s at its row i holds seq[s + i*d]
    q = index_var(0)
    long_rows = prim.Product((t, prim.Sum((m, 1))))   # rows of the t longer ones
    is_long = prim.Comparison(q, "<", long_rows)
    short_q = prim.Sum((q, prim.Product((-1, long_rows))))
    short_len = prim.If(prim.Comparison(m, ">", 0), m, 1)  # (0 only unused)
    s = prim.If(is_long, prim.FloorDiv(q, prim.Sum((m, 1))),
                prim.Sum((t, prim.FloorDiv(short_q, short_len))))
    i = prim.If(is_long, prim.Remainder(q, prim.Sum((m, 1))),
                prim.Remainder(short_q, short_len))
    source = prim.Sum((s, prim.Product((d, i))))
    packed = IndexLambda(prim.Variable("_in0")[(source,) + _elem_indices(a, 1)],
                         a.shape, a.dtype, {"_in0": a})
    subsequences = Jagged(packed, (offsets,))

    def checked(sub: Array) -> Any:
        out = f(sub)
        _checked_results(out, sub.shape[0], "a subsequence seq[r::dilation]")
        return out

    mapped = jagged_map(checked, subsequences)
    leaves, structure = tree_flatten(mapped, "dilated_map")
    results = []
    for leaf in leaves:
        if not isinstance(leaf, Jagged):  # (cannot happen: lengths checked)
            raise ValueError("dilated_map: f must return a sequence as long as "
                             "its input")
        values = leaf.values
        j = index_var(0)
        phase = prim.Remainder(j, d)
        row = prim.Sum((prim.Product((phase, m)), _min(phase, t),
                        prim.FloorDiv(j, d)))
        results.append(IndexLambda(
            prim.Variable("_in0")[(row,) + _elem_indices(values, 1)],
            (length,) + tuple(values.shape[1:]), values.dtype, {"_in0": values}))
    return tree_unflatten(results, structure)


def dilated_map(f: Callable[[Array], Any], seq: Any, dilation: int) -> Any:
    """Map *f* over the *dilation* interleaved subsequences ``seq[r::dilation]``
    (``r in range(dilation)``) of *seq* ``(L, *elem)`` and interleave the
    results back: ``result[r::dilation] = f(seq[r::dilation])``.

    *f* takes a sequence and returns a sequence of the same length (e.g. a
    :func:`ftlazy.scan`), or a tuple, list or dict of them, which
    :func:`dilated_map` returns in the same structure; the element shape may
    change. With a static ``L``, *f* is traced once per subsequence (the
    ``r`` loop is unrolled). With a symbolic ``L`` the subsequences have
    lengths ``ceil((L - r) / dilation)``, which are not affine, so they are
    the elements of a FractalTensor and *f* is traced once, by
    :func:`ftlazy.map` over it. That map compiles, scans in *f* included,
    also on an element inside a map over a FractalTensor (a map over all
    subsequences of all elements, see
    :mod:`ftlazy.transform.jagged_inner_maps`).
    *dilation* must be an integer of at least 1.
    """
    if not callable(f):
        raise TypeError(f"dilated_map: f must be callable, got "
                        f"{type(f).__name__}")
    dilation = _int_arg(dilation, "dilation", "dilated_map", 1)
    a = _sequence(seq, "dilated_map")
    length = a.shape[0]
    if dilation == 1:
        from ftlazy.fractal import tree_unflatten
        leaves, structure = _checked_results(f(a), length, "the sequence")
        return tree_unflatten(leaves, structure)
    if isinstance(length, int):
        return _dilated_static(f, a, dilation, length)
    return _dilated_symbolic(f, a, dilation, length)

# }}}
