# SPDX-License-Identifier: MIT
"""The run-time container of jagged nested data (FractalTensors).

Depths follow FractalTensor: a FractalTensor of depth ``d`` is a list of
FractalTensors of depth ``d - 1``; depth 1 is a sequence of ``L`` tensors of
the static ``elem_shape`` (an array ``(L, *elem_shape)``), depth 0 one such
tensor. A :class:`JaggedArray` holds one FractalTensor of depth ``d >= 2``,
for instance a batch of ``n`` sentences (``d = 2``: a list of sequences) or of
documents (``d = 3``: a list of lists of sequences), the same ``depth`` as
``make_jagged_placeholder(..., depth=d)``. Memory is packed and unpadded (CSR
of CSR): one values array ``(nnz, *elem_shape)`` and one offsets array per
jagged level, outermost first. A JaggedArray of depth ``d`` has ``d - 1``
offsets arrays; the outermost list's trivial ``[0, n]`` is implied. The
offsets of level ``k`` index the entries of level ``k + 1``; the innermost
ones index rows of the values.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any, Callable

import numpy as np

__all__ = ["JaggedArray"]


def _to_numpy(x: Any) -> np.ndarray:
    """*x* as a numpy array; device arrays (pyopencl) are copied with
    ``.get()``."""
    if not isinstance(x, np.ndarray) and hasattr(x, "get"):
        x = x.get()
    return np.asarray(x)


def _is_device_array(x: Any) -> bool:
    """Whether *x* is a :class:`pyopencl.array.Array` (without importing
    pyopencl: none can exist before it is imported)."""
    cla = sys.modules.get("pyopencl.array")
    return cla is not None and isinstance(x, cla.Array)


def _fmt_path(path: tuple[int, ...]) -> str:
    if not path:
        return "the outer list"
    return "element " + "".join(f"[{i}]" for i in path)


def _read_only(a: np.ndarray) -> np.ndarray:
    a.flags.writeable = False
    return a


def _checked_parts(values: Any, offsets: tuple[Any, ...], values_name: str,
                   offsets_name: Callable[[int], str], copy: bool = True
                   ) -> tuple[np.ndarray, tuple[np.ndarray, ...]]:
    """*values* and *offsets* checked as a FractalTensor's packed form and
    copied (values C-contiguous, offsets int64, both read-only), except
    C-contiguous device values, which are kept as they are (see
    :class:`JaggedArray`). Messages call the values *values_name* and the
    offsets of level ``k`` ``offsets_name(k)``. Without *copy*, C-contiguous
    numpy values are not copied either (made read-only in place: the caller
    owns them)."""
    if not offsets:
        raise ValueError(
            "JaggedArray needs at least one offsets array (a JaggedArray "
            "of depth d >= 2 has d - 1), got only the values")
    on_device = _is_device_array(values) and values.flags.c_contiguous
    if _is_device_array(values) and not values.flags.forc:
        raise ValueError(
            f"{values_name} is a non-contiguous device array (strides "
            f"{values.strides}), which pyopencl can neither copy nor pass to "
            "a kernel; pass a contiguous one")
    vals = values if on_device else _to_numpy(values)
    if vals.ndim < 1:
        raise ValueError(
            f"{values_name} must have at least one dimension (the entries), "
            f"got a 0-d array of dtype {vals.dtype}")
    if vals.dtype == object:
        raise TypeError(f"{values_name} must have a numeric dtype, got object")
    offs = tuple(_to_numpy(o) for o in offsets)
    n_levels = len(offs)
    for k, o in enumerate(offs):
        name = offsets_name(k)
        if o.ndim != 1:
            raise ValueError(f"{name} must be 1-D, got shape {o.shape}")
        if o.dtype.kind not in "iu":
            raise TypeError(
                f"{name} must have an integer dtype, got {o.dtype}")
        if len(o) == 0:
            raise ValueError(f"{name} must not be empty (they start with 0)")
        if o[0] != 0:
            raise ValueError(f"{name} must start at 0, got {o[0]}")
        dec = np.flatnonzero(o[1:] < o[:-1])
        if len(dec):
            i = int(dec[0]) + 1
            raise ValueError(
                f"{name} must not decrease, but they do at position {i} "
                f"({o[i - 1]} -> {o[i]})")
        if k + 1 < n_levels:
            n_next = len(offs[k + 1]) - 1
            what = f"level {k + 1} has {n_next} entries"
        else:
            n_next = len(vals)
            what = f"{values_name} has {n_next} rows"
        if int(o[-1]) != n_next:
            raise ValueError(f"{name} end at {int(o[-1])}, but {what}")
    if not on_device:
        vals = _read_only(np.array(vals, order="C", copy=True) if copy
                          else np.ascontiguousarray(vals))
    return (vals,
            tuple(_read_only(np.array(o, dtype=np.int64, copy=True))
                  for o in offs))


class JaggedArray:
    """A FractalTensor of depth ``d >= 2`` (a list of jagged nested
    sequences) in packed form.

    A JaggedArray of depth ``d`` has ``d - 1`` offsets arrays; the outermost
    list's trivial ``[0, n]`` is implied. So a batch of ``n`` sentences (a
    list of sequences ``(L_i, *elem_shape)``) has depth 2 and one offsets
    array of ``n + 1`` entries, as a ``depth=2`` jagged placeholder declares.

    ``JaggedArray(values, offsets_1, ..., offsets_{d-1})`` takes the values
    ``(nnz, *elem_shape)`` and the ``d - 1 >= 1`` offsets arrays, outermost
    first (numpy arrays, or device arrays with a ``.get()`` method). The
    outermost offsets have ``n + 1`` entries for an outer list of ``n``; the
    offsets of level ``k`` end at the number of entries of level ``k + 1``
    (for the innermost, the number of rows of *values*). The arrays are
    copied (offsets as int64, values C-contiguous) and stored read-only: a
    JaggedArray is immutable.

    Values given as a C-contiguous :class:`pyopencl.array.Array` stay on the
    device (Fortran-ordered ones are copied to the host, non-contiguous ones
    refused): they are not copied (do not write to them while the JaggedArray
    is in use), :attr:`values` is that device array, and a compiled function
    reads them in place (no transfer of the values). The offsets always live
    on the host (device offsets are copied there): what the host derives
    from them (checks, segment ids, lengths) needs them. :meth:`get`,
    :meth:`tolist` and :meth:`equals` copy device values to the host.
    """

    __slots__ = ("_offsets", "_values")

    def __init__(self, values: Any, *offsets: Any) -> None:
        vals, offs = _checked_parts(values, offsets, "values",
                                    lambda k: f"offsets of level {k}")
        self._values = vals
        self._offsets = offs

    @classmethod
    def _from_parts(cls, name: str, values: Any, offsets: tuple[Any, ...]
                    ) -> JaggedArray:
        """The jagged input *name* given as its parts ``<name>_values`` and
        ``<name>_offsets<k>``, checked as :class:`JaggedArray` checks its
        arguments; the messages name the input, the part and the level."""
        self = object.__new__(cls)
        self._values, self._offsets = _checked_parts(
            values, offsets, f"{name}_values (the values of jagged input "
            f"{name!r})", lambda k: f"{name}_offsets{k} (the offsets of level "
            f"{k} of jagged input {name!r})")
        return self

    @classmethod
    def _adopt(cls, values: Any, *offsets: Any) -> JaggedArray:
        """``JaggedArray(values, *offsets)`` (checked alike) that takes
        ownership of fresh *values*: C-contiguous numpy values are made
        read-only in place instead of copied (for results a caller
        allocated and hands over)."""
        self = object.__new__(cls)
        self._values, self._offsets = _checked_parts(
            values, offsets, "values", lambda k: f"offsets of level {k}",
            copy=False)
        return self

    @classmethod
    def _trusted(cls, values: np.ndarray,
                 offsets: tuple[np.ndarray, ...]) -> JaggedArray:
        """A JaggedArray of already checked, read-only, int64 *offsets* and
        fresh C-contiguous *values*, numpy or device (neither copied nor
        checked again)."""
        self = object.__new__(cls)
        self._values = values if _is_device_array(values) else _read_only(values)
        self._offsets = offsets
        return self

    # {{{ attributes

    @property
    def values(self) -> Any:
        """The packed values ``(nnz, *elem_shape)``: a read-only numpy array,
        or the :class:`pyopencl.array.Array` the JaggedArray was built from
        (see :attr:`on_device`)."""
        return self._values

    @property
    def on_device(self) -> bool:
        """Whether :attr:`values` is a device array (pyopencl)."""
        return not isinstance(self._values, np.ndarray)

    def get(self) -> JaggedArray:
        """This JaggedArray with its values on the host (itself if they are
        there already)."""
        if not self.on_device:
            return self
        return JaggedArray._trusted(np.ascontiguousarray(self._values.get()),
                                    self._offsets)

    def _host_values(self) -> np.ndarray:
        return self._values.get() if self.on_device else self._values

    @property
    def offsets(self) -> tuple[np.ndarray, ...]:
        """The int64 offsets arrays, outermost first (read-only)."""
        return self._offsets

    @property
    def depth(self) -> int:
        """The FractalTensor depth (``>= 2``): ``len(offsets) + 1``, as
        ``make_jagged_placeholder(..., depth=...)`` declares it; 2 for a list
        of sequences (:meth:`tolist` gives a list of numpy arrays), 3 for a
        list of lists of sequences, and so on."""
        return len(self._offsets) + 1

    @property
    def elem_shape(self) -> tuple[int, ...]:
        """The static shape of one innermost element."""
        return tuple(self._values.shape[1:])

    @property
    def dtype(self) -> np.dtype:
        """The dtype of the values."""
        return self._values.dtype

    @property
    def nnz(self) -> int:
        """The number of innermost elements (rows of :attr:`values`)."""
        return len(self._values)

    def __len__(self) -> int:
        """The batch size ``n`` (the outer length)."""
        return len(self._offsets[0]) - 1

    def lengths(self, level: int = 0) -> np.ndarray:
        """The int64 lengths of the entries of *level*
        (``np.diff(offsets[level])``), for ``0 <= level <= depth - 2``: level 0
        gives the lengths of the outer list's elements (for depth 2, the
        sequence lengths), the last level those of the innermost
        sequences."""
        if not isinstance(level, (int, np.integer)) or isinstance(level, bool):
            raise TypeError(f"level must be an int, got {type(level).__name__}")
        n_levels = len(self._offsets)
        if not 0 <= level < n_levels:
            valid = ("the only valid level is 0" if n_levels == 1
                     else f"valid levels are 0 to {n_levels - 1}")
            raise ValueError(
                f"level {level} is out of range for a JaggedArray of depth "
                f"{self.depth}: {valid} (depth - 1 levels of lengths)")
        return np.diff(self._offsets[level]).astype(np.int64)

    def __repr__(self) -> str:
        from ftlazy.display import jagged_array_repr
        return jagged_array_repr(self)

    def _repr_html_(self) -> str:
        from ftlazy.display import jagged_array_html
        return jagged_array_html(self)

    # }}}

    def tolist(self) -> list[Any]:
        """Nested Python lists, ``depth - 1`` levels deep, whose innermost
        items are numpy arrays ``(L, *elem_shape)`` (fresh, writable copies):
        for depth 2 a list of arrays, for depth 3 a list of lists of
        arrays."""
        offs, vals, d = self._offsets, self._host_values(), len(self._offsets)

        def build(k: int, lo: int, hi: int) -> list[Any]:
            o = offs[k]
            if k == d - 1:
                return [vals[o[i]:o[i + 1]].copy() for i in range(lo, hi)]
            return [build(k + 1, int(o[i]), int(o[i + 1])) for i in range(lo, hi)]

        return build(0, 0, len(self))

    def equals(self, other: Any) -> bool:
        """Whether *other* is a JaggedArray with the same depth, offsets,
        elem shape, dtype and values (NaNs compare equal)."""
        if not isinstance(other, JaggedArray):
            return False
        if (self.depth != other.depth or self.dtype != other.dtype
                or self._values.shape != other._values.shape):
            return False
        if not all(np.array_equal(a, b)
                   for a, b in zip(self._offsets, other._offsets)):
            return False
        equal_nan = self.dtype.kind in "fc"
        return bool(np.array_equal(self._host_values(), other._host_values(),
                                   equal_nan=equal_nan))

    # {{{ from_list

    @classmethod
    def from_list(cls, nested: Sequence[Any], elem_shape: Any = None,
                  dtype: Any = None, depth: int | None = None) -> JaggedArray:
        """Build a JaggedArray from nested lists (the form :meth:`tolist`
        returns): a list of innermost sequences has depth 2, a list of such
        lists depth 3, and so on.

        An innermost sequence is a numpy array ``(L, *elem_shape)`` or a list
        of elements (numpy arrays of ``elem_shape`` or scalars). *depth*, if
        given, is the FractalTensor depth (``>= 2``) the nested list must
        have, ``depth - 1`` levels of lists above the innermost sequences.
        Without *depth*, a numpy array inside a list is an innermost sequence
        unless it is 0-d or has ``len(elem_shape)`` dimensions; with *depth*,
        the items of the innermost sequences are elements (nested Python
        lists there are converted with :func:`numpy.asarray` when a
        non-scalar *elem_shape* is given too). Empty lists are valid at every level; if
        no sequence determines *elem_shape* or *dtype*, they must be given.
        With *dtype*, every element is cast to it; without, all elements must
        share one dtype.
        """
        es = None if elem_shape is None else _normalize_elem_shape(elem_shape)
        dt = None if dtype is None else np.dtype(dtype)
        if depth is not None:
            depth = _check_depth(depth)
        return cls._build(nested, es, dt, depth, "unsafe")

    @classmethod
    def _build(cls, nested: Any, es: tuple[int, ...] | None,
               dt: np.dtype | None, depth: int | None,
               casting: str, uniform: bool = False) -> JaggedArray:
        """:meth:`from_list` with checked arguments; with *dt*, the elements
        are cast to it under the numpy rule *casting* (a leaf that may not be
        raises :class:`TypeError`). With *uniform*, the leaves that have a
        dtype (numpy and device arrays and scalars; not Python numbers or
        lists) must moreover share one, else :class:`TypeError`."""
        if not isinstance(nested, (list, tuple)):
            raise TypeError(
                "from_list expects a (nested) list, got "
                f"{type(nested).__name__}")
        # levels of lists above the innermost sequences (= offsets arrays)
        n_levels = None if depth is None else depth - 1

        def is_element(x: Any, level: int) -> bool:
            if isinstance(x, (list, tuple)):
                # with both depth and a non-scalar elem_shape, lists at the
                # element level are elements; otherwise a list is a level of
                # nesting (one too many, there)
                return (n_levels is not None and bool(es)
                        and level == n_levels + 1)
            if n_levels is not None and level == n_levels + 1:
                return True
            if isinstance(x, np.ndarray) or hasattr(x, "get"):
                nd = np.ndim(x)
                return nd == 0 or (es is not None and nd == len(es))
            return True

        # height: -1 element, 0 innermost sequence, h list of height h-1
        # items (a FractalTensor of depth h + 1); returns (height, exact)
        # where an inexact height is a minimum (lists of only empty lists)
        def height(x: Any, path: tuple[int, ...]) -> tuple[int, bool]:
            level = len(path)
            if is_element(x, level):
                return -1, True
            if not isinstance(x, (list, tuple)):
                return 0, True  # a numpy (or device) array sequence
            if len(x) == 0:
                return 0, False
            exact: tuple[int, tuple[int, ...]] | None = None
            lo = -1  # the largest minimum height of an inexact item
            lo_path: tuple[int, ...] = ()
            for i, item in enumerate(x):
                p = path + (i,)
                h, ex = height(item, p)
                if ex:
                    if exact is None:
                        exact = (h, p)
                    elif exact[0] != h:
                        raise ValueError(
                            "inconsistent nesting depth: "
                            f"{_fmt_path(p)} is {_describe(h)} but "
                            f"{_fmt_path(exact[1])} is {_describe(exact[0])}")
                elif h > lo:
                    lo, lo_path = h, p
            if exact is not None:
                if lo > exact[0]:
                    raise ValueError(
                        "inconsistent nesting depth: "
                        f"{_fmt_path(lo_path)} is a list of depth at least "
                        f"{lo + 1} but {_fmt_path(exact[1])} is "
                        f"{_describe(exact[0])}")
                return exact[0] + 1, True
            return max(lo, 0) + 1, False

        h, exact = height(nested, ())
        if n_levels is None:
            if h < 1:
                if exact:
                    raise ValueError(
                        "from_list expects a list of sequences (depth >= 2), "
                        "got a single sequence of elements (depth 1); wrap "
                        "it in a list")
                h = 1
            n_levels = h
        elif (exact and h != n_levels) or (not exact and h > n_levels):
            at_least = "" if exact else "at least "
            raise ValueError(
                f"the nested list has nesting depth {at_least}{h + 1}, "
                f"but depth={depth} was given")

        # collect offsets and leaves
        offs: list[list[int]] = [[0] for _ in range(n_levels)]
        leaves: list[tuple[tuple[int, ...], Any, bool]] = []

        def walk(x: Any, path: tuple[int, ...]) -> None:
            k = len(path)
            if k == n_levels:
                leaves.append((path, x, isinstance(x, (list, tuple))))
                return
            if k > 0:
                offs[k - 1].append(offs[k - 1][-1] + len(x))
            for i, item in enumerate(x):
                walk(item, path + (i,))

        walk(nested, ())
        # innermost offsets and values
        rows: list[np.ndarray] = []
        first: dict[str, tuple[Any, tuple[int, ...]]] = {}
        if es is not None:
            first["shape"] = (es, ())
        if dt is not None:
            first["dtype"] = (dt, ())

        def check(shape: tuple[int, ...], dtype_: np.dtype,
                  path: tuple[int, ...], weak: bool = False) -> None:
            if "shape" not in first:
                first["shape"] = (shape, path)
            elif first["shape"][0] != shape:
                s0, p0 = first["shape"]
                where = ("elem_shape" if p0 == () and es is not None
                         else _fmt_path(p0))
                raise ValueError(
                    f"{_fmt_path(path)} has elem shape {shape}, but "
                    f"{where} has {s0}")
            if dt is not None and not np.can_cast(dtype_, dt, casting):
                raise TypeError(
                    f"{_fmt_path(path)} has dtype {dtype_}, expected {dt} "
                    f"(no {casting!r} cast from {dtype_} to {dt})")
            # without dt the leaves give the dtype; with it and *uniform*,
            # they must agree all the same
            key = "dtype" if dt is None else "leaf dtype"
            if dt is not None and (weak or not uniform):
                return
            if key not in first:
                first[key] = (dtype_, path)
            elif first[key][0] != dtype_:
                d0, p0 = first[key]
                rule = ("" if dt is None else ": the leaves of one nested list "
                        f"must share one dtype (cast to {dt} as a whole)")
                raise TypeError(
                    f"{_fmt_path(path)} has dtype {dtype_}, but "
                    f"{_fmt_path(p0)} has dtype {d0}{rule}")

        inner = offs[n_levels - 1]
        for path, x, seq in leaves:
            if seq:
                elems = []
                for j, e in enumerate(x):
                    a = _to_numpy(e)
                    if a.dtype == object:
                        raise TypeError(
                            f"{_fmt_path(path + (j,))} is not numeric "
                            f"({type(e).__name__})")
                    # Python numbers and lists have no dtype of their own
                    check(a.shape, a.dtype, path + (j,),
                          isinstance(e, (list, tuple))
                          or type(e) in (bool, int, float, complex))
                    elems.append(a)
                if elems:
                    rows.append(np.stack(elems))
                inner.append(inner[-1] + len(elems))
            else:
                a = _to_numpy(x)
                if a.dtype == object:
                    raise TypeError(f"{_fmt_path(path)} is not numeric")
                check(tuple(a.shape[1:]), a.dtype, path)
                rows.append(a)
                inner.append(inner[-1] + len(a))
        missing = [n for n in ("shape", "dtype") if n not in first]
        if missing:
            raise ValueError(
                "cannot determine the "
                + " and ".join("elem_shape" if n == "shape" else n
                               for n in missing)
                + " of the jagged array from the (empty) nested list; "
                "pass elem_shape= and dtype=")
        fshape = first["shape"][0]
        fdtype = first["dtype"][0]
        if rows:
            values = np.concatenate([_cast_exactly(r, np.dtype(fdtype), "a leaf")
                                     for r in rows])
        else:
            values = np.empty((0, *fshape), dtype=fdtype)
        return cls(values, *(np.asarray(o, dtype=np.int64) for o in offs))

    # }}}

    # {{{ coerce

    @classmethod
    def coerce(cls, value: Any, depth: int, elem_shape: Any, dtype: Any,
               name: str, uniform: bool = False) -> JaggedArray:
        """*value*, what a user passes at run time for the jagged input
        *name* (a JaggedArray, or nested lists as :meth:`from_list` takes
        them), as a JaggedArray of the declared FractalTensor *depth*
        (``>= 2``), *elem_shape* and *dtype*.

        Values of another dtype are cast to *dtype* where numpy's
        ``'same_kind'`` rule allows it (``int64`` to ``float32``, ``float64``
        to ``float32``), else :class:`TypeError`; with *uniform* (what
        ``evaluate_numpy`` and compiled programs ask for, as API.md's "Bad
        input" requires), leaves of different dtypes in nested lists (Python
        numbers and lists aside, which have none) raise :class:`TypeError`
        too. A depth or elem shape other than declared raises
        :class:`ValueError`. The messages name *name*, the expected and the
        actual value. A JaggedArray of the declared type is returned as is
        (it is immutable).
        """
        depth = _check_depth(depth)
        es = _normalize_elem_shape(elem_shape)
        dt = np.dtype(dtype)
        what = f"jagged input {name!r}"
        if isinstance(value, JaggedArray):
            if value.depth != depth:
                raise ValueError(
                    f"{what} has depth {value.depth}, expected depth {depth} "
                    f"({depth - 1} offsets array"
                    f"{'' if depth == 2 else 's'}, got {len(value.offsets)})")
            if value.elem_shape != es:
                raise ValueError(
                    f"{what} has elem_shape {value.elem_shape}, expected {es}")
            if value.dtype == dt:
                return value
            if not np.can_cast(value.dtype, dt, "same_kind"):
                raise TypeError(
                    f"{what} has dtype {value.dtype}, expected {dt} (no "
                    f"'same_kind' cast from {value.dtype} to {dt})")
            # (a device array stays there)
            values = _cast_exactly(value.values, dt, what)
            if not value.on_device:
                values = np.ascontiguousarray(values)
            return cls._trusted(values, value.offsets)
        if not isinstance(value, (list, tuple)):
            raise TypeError(
                f"{what} must be a JaggedArray or nested lists of depth "
                f"{depth}, got {type(value).__name__}")
        packed = _packed_numpy_lists(value, es, dt, depth)
        if packed is not None:
            # (fresh, valid by construction)
            return cls._trusted(packed[0], tuple(_read_only(o)
                                                 for o in packed[1:]))
        try:
            return cls._build(value, es, dt, depth, "same_kind", uniform)
        except (ValueError, TypeError) as e:
            raise type(e)(f"{what}: {e}") from None

    # }}}


def _cast_exactly(values: Any, dt: np.dtype, what: str) -> Any:
    """*values* (numpy or device array) cast to *dt*; where both are
    integer dtypes and *dt* cannot hold every value of the other
    (``uint64`` to ``int64``), a value out of *dt*'s range raises
    :class:`ValueError` naming *what*, instead of wrapping around."""
    src = np.dtype(values.dtype)
    if (src.kind in "iu" and dt.kind in "iu" and values.size
            and not np.can_cast(src, dt, "safe")):
        if isinstance(values, np.ndarray):
            low, high = values.min(), values.max()
        else:
            import pyopencl.array as cla
            low, high = cla.min(values).get(), cla.max(values).get()
        info = np.iinfo(dt)
        for v in (low, high):
            if not info.min <= int(v) <= info.max:
                raise ValueError(f"{what} holds the value {int(v)}, which "
                                 f"{dt} cannot hold (cast from {src})")
    return values.astype(dt)


def _packed_numpy_lists(nested: list | tuple, es: tuple[int, ...],
                        dt: np.dtype, depth: int) -> tuple | None:
    """``(values, *offsets)`` of *nested*, lists ``depth - 1`` levels deep
    whose every leaf sequence is a numpy array of elem shape *es* and dtype
    *dt* (what a program's caller usually passes), converted in bulk. None
    for anything else, which :meth:`JaggedArray._build` converts, checks
    and explains."""
    items: list = list(nested)
    counts = []
    for _ in range(depth - 2):
        if any(type(x) is not list and type(x) is not tuple for x in items):
            return None
        counts.append([len(x) for x in items])
        items = [y for x in items for y in x]
    nd = len(es) + 1
    if any(type(a) is not np.ndarray or len(a.shape) != nd
           or (a.dtype is not dt and a.dtype != dt) or a.shape[1:] != es
           for a in items):
        return None
    counts.append([len(a) for a in items])
    values = (np.concatenate(items) if items
              else np.empty((0, *es), dtype=dt))
    offsets = []
    for c in counts:
        ends = np.zeros(len(c) + 1, dtype=np.int64)
        np.cumsum(c, out=ends[1:])
        offsets.append(ends)
    return (values, *offsets)


def _check_depth(depth: Any) -> int:
    if (not isinstance(depth, (int, np.integer)) or isinstance(depth, bool)
            or depth < 2):
        raise ValueError(
            "depth must be an int >= 2 (the FractalTensor depth: 2 for a "
            f"list of sequences), got {depth!r}")
    return int(depth)


def _describe(h: int) -> str:
    if h < 0:
        return "an element (depth 0)"
    if h == 0:
        return "an innermost sequence (depth 1)"
    return f"a list of depth {h + 1}"


def _normalize_elem_shape(elem_shape: Any) -> tuple[int, ...]:
    if isinstance(elem_shape, (int, np.integer)):
        elem_shape = (elem_shape,)
    try:
        shape = tuple(int(s) for s in elem_shape)
    except TypeError:
        raise TypeError(
            f"elem_shape must be a tuple of ints, got {elem_shape!r}") from None
    if any(s < 0 for s in shape):
        raise ValueError(f"elem_shape must be non-negative, got {shape}")
    return shape
