# SPDX-License-Identifier: MIT
"""Builders of input nodes and result collections."""

from __future__ import annotations

from typing import Any, Mapping

import numpy as np

from ftlazy import shapes as sh
from ftlazy.array import (
    Array, Axis, DataWrapper, DictOfNamedArrays, Placeholder, SizeParam,
    check_result_value, check_user_name, checked_tags, normalize_dtype)


def make_size_param(name: str, tags: Any = frozenset()) -> SizeParam:
    """A named non-negative integer size parameter (shape ``()``, int64),
    usable in shapes (``(n, 2*n + 1)``) and as a value."""
    return SizeParam(check_user_name(name, "size parameter"),
                     tags=checked_tags(tags))


def _axes(axes: Any, ndim: int) -> tuple[Axis, ...] | None:
    if axes is None:
        return None
    axes = tuple(axes)
    if len(axes) != ndim:
        raise ValueError(f"got {len(axes)} axes for an array of dimension {ndim}")
    return axes


def make_placeholder(name: str, shape: Any, dtype: Any, tags: Any = frozenset(),
                     axes: Any = None) -> Placeholder:
    """A named input array of *shape* (ints or affine expressions of size
    params) and *dtype*, bound when the program is called."""
    check_user_name(name, "placeholder")
    shape = sh.normalize_shape(shape)
    return Placeholder(name, shape, normalize_dtype(dtype),
                       tags=checked_tags(tags), axes=_axes(axes, len(shape)))


def make_data_wrapper(data: Any, name: str | None = None, shape: Any = None,
                      tags: Any = frozenset()) -> DataWrapper:
    """An array node around known data: a :class:`numpy.ndarray` or a
    :class:`pyopencl.array.Array`. *shape* may give symbolic entries (which
    are then bound from the data)."""
    if name is not None:
        check_user_name(name, "data wrapper")
    if not hasattr(data, "shape") or not hasattr(data, "dtype"):
        data = np.asarray(data)
    if isinstance(data, np.ndarray):
        dtype = normalize_dtype(data.dtype)
        if dtype != data.dtype:
            data = data.astype(dtype)   # (in the machine's byte order)
    shape = tuple(data.shape) if shape is None else sh.normalize_shape(shape)
    return DataWrapper(data, shape, name, tags=checked_tags(tags))


def make_dict_of_named_arrays(data: Mapping[str, Array]) -> DictOfNamedArrays:
    """Several results, by name, computed by one program (arrays and
    FractalTensors)."""
    if not isinstance(data, Mapping):
        raise TypeError(f"expected a mapping of names to arrays, got "
                        f"{type(data).__name__}")
    for name, value in data.items():
        # (before the dict is hashed: a numpy array is not hashable)
        check_result_value(name, value)
    return DictOfNamedArrays(dict(data))
