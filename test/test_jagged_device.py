# SPDX-License-Identifier: MIT
"""ft.JaggedArray holding device values (pyopencl arrays) without copying
them to the host; offsets always on the host."""

import numpy as np
import pyopencl.array as cla
import pytest

import ftlazy as ft
from ftlazy.target.loopy.device import default_queue


@pytest.fixture
def parts():
    values = np.arange(24, dtype=np.float32).reshape(12, 2)
    offsets = np.array([0, 3, 3, 7, 12], np.int32)
    return values, offsets


def test_device_values_are_kept_and_offsets_copied_to_the_host(parts):
    queue = default_queue()
    values, offsets = parts
    dev = cla.to_device(queue, values)
    ja = ft.JaggedArray(dev, cla.to_device(queue, offsets))
    assert ja.on_device and ja.values is dev
    (off,) = ja.offsets
    assert isinstance(off, np.ndarray) and off.dtype == np.int64
    assert not off.flags.writeable
    np.testing.assert_array_equal(off, offsets)
    assert (len(ja), ja.nnz, ja.elem_shape, ja.dtype, ja.depth) == (
        4, 12, (2,), np.float32, 2)
    np.testing.assert_array_equal(ja.lengths(), [3, 0, 4, 5])
    host = ft.JaggedArray(values, offsets)
    assert not host.on_device and host.get() is host
    fetched = ja.get()
    assert not fetched.on_device and not fetched.values.flags.writeable
    assert fetched.equals(host) and ja.equals(host) and host.equals(ja)
    for got, want in zip(ja.tolist(), host.tolist()):
        np.testing.assert_array_equal(got, want)
    # a later change of the user's host values does not reach the device
    values[0, 0] = -1
    assert not ja.equals(ft.JaggedArray(values, offsets))


def test_device_values_are_checked_like_host_values(parts):
    queue = default_queue()
    values, offsets = parts
    with pytest.raises(ValueError, match="end at 12, but values has 11 rows"):
        ft.JaggedArray(cla.to_device(queue, values[:11]), offsets)
    with pytest.raises(ValueError, match="at least one dimension"):
        ft.JaggedArray(cla.to_device(queue, np.float32(1.0).reshape(())), offsets)
    with pytest.raises(ValueError, match="must start at 0"):
        ft.JaggedArray(cla.to_device(queue, values), offsets + 1)


def test_device_values_in_other_layouts(parts):
    """Fortran-ordered device values are copied to the host (C order);
    non-contiguous ones, which pyopencl cannot copy, are refused."""
    queue = default_queue()
    values, offsets = parts
    fortran = cla.to_device(queue, np.asfortranarray(values))
    assert fortran.flags.f_contiguous and not fortran.flags.c_contiguous
    ja = ft.JaggedArray(fortran, offsets)
    assert not ja.on_device and ja.values.flags.c_contiguous
    np.testing.assert_array_equal(ja.values, values)
    strided = cla.to_device(queue, np.repeat(values, 2, axis=1))[:, ::2]
    with pytest.raises(ValueError, match="non-contiguous device array"):
        ft.JaggedArray(strided, offsets)


def test_coerce_casts_device_values_on_the_device(parts):
    queue = default_queue()
    values, offsets = parts
    ja = ft.JaggedArray(cla.to_device(queue, values.astype(np.float64)), offsets)
    cast = ft.JaggedArray.coerce(ja, 2, (2,), np.float32, "xs")
    assert cast.on_device and cast.dtype == np.float32
    np.testing.assert_array_equal(cast.values.get(), values)
    assert ft.JaggedArray.coerce(ja, 2, (2,), np.float64, "xs") is ja
    with pytest.raises(TypeError, match="no 'same_kind' cast"):
        ft.JaggedArray.coerce(ja, 2, (2,), np.int32, "xs")
