# SPDX-License-Identifier: MIT
"""Numpy inputs and outputs in place on devices that share the host's
memory (``CL_MEM_USE_HOST_PTR`` buffers, see
:func:`ftlazy.target.loopy.program._share_host_arrays`), with the ordinary
copies where an array does not fit (non-contiguous, misaligned, empty);
FractalTensors whose values stay on the device."""

import numpy as np
import pyopencl.array as cla
import pytest

import ftlazy as ft
from ftlazy.target.loopy import program
from ftlazy.target.loopy.device import default_queue

DTYPES = [np.float32, np.float64, np.int32, np.int64]


def _unified() -> bool:
    return program._shares_host_memory(default_queue().device)


@pytest.fixture(params=[True, False], ids=["in-place", "copies"])
def zero_copy(request, monkeypatch):
    """Each test once in place (where the device shares memory) and once
    with the ordinary copies."""
    monkeypatch.setattr(program, "ZERO_COPY_INPUTS", request.param)
    monkeypatch.setattr(program, "ZERO_COPY_OUTPUTS", request.param)
    return request.param


def _values(dtype, shape, seed=0):
    rng = np.random.default_rng(seed)
    if np.dtype(dtype).kind == "f":
        return rng.standard_normal(shape).astype(dtype)
    return rng.integers(-50, 50, shape).astype(dtype)


def _misaligned(a: np.ndarray) -> np.ndarray:
    """A C-contiguous copy of *a* one byte past an aligned address (numpy
    flags it unaligned)."""
    raw = np.empty(a.nbytes + 64, np.uint8)
    start = -raw.ctypes.data % 64 + 1
    out = raw[start:start + a.nbytes].view(a.dtype).reshape(a.shape)
    out[...] = a
    return out


def _offset_by_one_element(a: np.ndarray) -> np.ndarray:
    """A C-contiguous copy of *a* one element past a 128-byte boundary
    (aligned for its dtype, not for a vector of it)."""
    raw = np.empty(a.nbytes + 256, np.uint8)
    start = -raw.ctypes.data % 128 + a.dtype.itemsize
    out = raw[start:start + a.nbytes].view(a.dtype).reshape(a.shape)
    out[...] = a
    return out


def _layouts(a: np.ndarray) -> dict[str, np.ndarray]:
    """*a* in the layouts a user may pass (all equal to *a*)."""
    padded = np.zeros((2 * a.shape[0],) + a.shape[1:], a.dtype)
    padded[::2] = a
    readonly = a.copy()
    readonly.flags.writeable = False
    return {"contiguous": a.copy(), "strided": padded[::2],
            "fortran": np.asfortranarray(a), "misaligned": _misaligned(a),
            "element-offset": _offset_by_one_element(a), "read-only": readonly}


@pytest.mark.parametrize("dtype", DTYPES)
def test_inputs_in_any_layout_give_numpy_results(dtype, zero_copy):
    x = ft.make_placeholder("x", (40, 3), dtype)
    y = ft.make_placeholder("y", (40, 3), dtype)
    f = ft.compile(ft.DictOfNamedArrays(
        {"s": x * 2 + y, "t": ft.sum(x, axis=0) - y[0]}))
    xv, yv = _values(dtype, (40, 3), 1), _values(dtype, (40, 3), 2)
    for xl, xa in _layouts(xv).items():
        for yl, ya in (("contiguous", yv.copy()), ("misaligned", _misaligned(yv))):
            before = (xa.copy(), ya.copy())
            flags = (xa.flags.writeable, ya.flags.writeable)
            out = f(x=xa, y=ya)
            np.testing.assert_allclose(out["s"], xv * 2 + yv, rtol=1e-6,
                                       err_msg=f"x {xl}, y {yl}")
            np.testing.assert_allclose(out["t"], xv.sum(0) - yv[0], rtol=1e-5,
                                       err_msg=f"x {xl}, y {yl}")
            # the user's arrays are unchanged, their flags too
            np.testing.assert_array_equal(xa, before[0])
            np.testing.assert_array_equal(ya, before[1])
            assert (xa.flags.writeable, ya.flags.writeable) == flags
            for r in out.values():
                assert isinstance(r, np.ndarray)
                assert not np.shares_memory(r, xa)
                assert not np.shares_memory(r, ya)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.bool_])
def test_an_output_that_is_an_input_is_a_copy(dtype, zero_copy):
    """The result of ``ft.compile(x)`` is x's values in a new array; writing
    it leaves x alone, and two calls give two arrays."""
    x = ft.make_placeholder("x", (33,), dtype)
    f = ft.compile(x)
    xv = np.arange(33) % 3 == 0 if dtype == np.bool_ else _values(dtype, 33)
    first, second = f(x=xv), f(x=xv)
    np.testing.assert_array_equal(first, xv)
    assert first.dtype == xv.dtype
    assert not np.shares_memory(first, xv)
    assert not np.shares_memory(first, second)
    first[...] = 0
    np.testing.assert_array_equal(second, xv)


def test_empty_and_zero_d_inputs_and_outputs(zero_copy):
    n = ft.make_size_param("n")
    x = ft.make_placeholder("x", (n, 4), np.float64)
    c = ft.make_placeholder("c", (), np.float64)
    f = ft.compile(ft.DictOfNamedArrays(
        {"scaled": x * c, "total": ft.sum(x) + c, "rows": ft.sum(x, axis=1)}))
    for rows in (0, 1, 5):
        xv = _values(np.float64, (rows, 4), rows)
        out = f(x=xv, c=np.float64(3.0))
        np.testing.assert_allclose(out["scaled"], xv * 3)
        assert out["total"].shape == ()
        np.testing.assert_allclose(out["total"], xv.sum() + 3)
        np.testing.assert_allclose(out["rows"], xv.sum(1))


def test_numpy_inputs_are_not_copied_where_memory_is_shared(monkeypatch):
    """On a device sharing the host's memory, a call with numpy inputs
    hands them to the kernels in place: loopy's invoker copies none of them
    to the device (pyopencl.array.to_device), and the results are fetched
    without a copy (no Array.get); with ZERO_COPY_INPUTS/OUTPUTS off it
    does both."""
    if not _unified():
        pytest.skip("the device does not share the host's memory")
    x = ft.make_placeholder("x", (1000,), np.float32)
    y = ft.make_placeholder("y", (1000,), np.float32)
    f = ft.compile(ft.exp(x) + y)
    # (at addresses that suit vectors of any width: a kernel that reads
    # float8 vectors gets a copy of an array only 16-byte aligned)
    xv, yv = program._aligned_empty(1000, np.float32), program._aligned_empty(
        1000, np.float32)
    xv[...], yv[...] = _values(np.float32, 1000, 1), _values(np.float32, 1000, 2)
    calls = {"to_device": 0, "get": 0}
    to_device, get = cla.to_device, cla.Array.get

    def counting_to_device(*args, **kwargs):
        calls["to_device"] += 1
        return to_device(*args, **kwargs)

    def counting_get(self, *args, **kwargs):
        calls["get"] += 1
        return get(self, *args, **kwargs)

    monkeypatch.setattr(cla, "to_device", counting_to_device)
    monkeypatch.setattr(cla.Array, "get", counting_get)
    for in_place in (True, False):
        monkeypatch.setattr(program, "ZERO_COPY_INPUTS", in_place)
        monkeypatch.setattr(program, "ZERO_COPY_OUTPUTS", in_place)
        calls.update(to_device=0, get=0)
        np.testing.assert_allclose(f(x=xv, y=yv), np.exp(xv) + yv,
                                   rtol=1e-5, atol=1e-6)
        if in_place:
            assert calls == {"to_device": 0, "get": 0}
        else:
            assert calls["to_device"] == 2 and calls["get"] >= 1


def test_numpy_inputs_outlive_kernels_that_return_device_arrays(zero_copy):
    """A call mixing device and numpy inputs returns device arrays without
    waiting for them; the numpy input's memory, which the kernels read in
    place, must not be reused before they ran: overwriting the input right
    after the call does not change the result."""
    queue = default_queue()
    n = 1 << 20
    x = ft.make_placeholder("x", (n,), np.float32)
    y = ft.make_placeholder("y", (n,), np.float32)
    prg = ft.generate_loopy(ft.sin(x) * ft.cos(y) + ft.exp(-y * y))
    xv, yv = _values(np.float32, n, 1), _values(np.float32, n, 2)
    expected = np.sin(xv) * np.cos(yv) + np.exp(-yv * yv)
    for _ in range(3):
        y_user = yv.copy()
        _, (out,) = prg(queue, x=cla.to_device(queue, xv), y=y_user)
        y_user[...] = np.nan
        del y_user
        assert isinstance(out, cla.Array)
        np.testing.assert_allclose(out.get(), expected, rtol=1e-5, atol=1e-6)


# {{{ FractalTensors on the device

def _jagged(dtype=np.float32, lengths=(3, 0, 4, 5), h=4, seed=0):
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    return _values(dtype, (int(offsets[-1]), h), seed), offsets


class _NoHostCopy(cla.Array):
    """A device array whose transfer to the host fails the test."""

    def get(self, *args, **kwargs):
        raise AssertionError("the device values were copied to the host")


def _no_host_copy(queue, a: np.ndarray) -> cla.Array:
    dev = cla.to_device(queue, a)
    dev.__class__ = _NoHostCopy
    return dev


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64])
def test_compiled_map_reads_device_values_in_place(dtype, zero_copy):
    """A JaggedArray built from device arrays keeps its values there, and
    a compiled map over it reads them without copying them to the host;
    results equal those of numpy inputs and of the per-segment loop."""
    queue = default_queue()
    v, off = _jagged(dtype)
    xs = ft.make_jagged_placeholder("xs", (4,), dtype, depth=2)
    sums = ft.compile(ft.map(lambda s: ft.sum(s, axis=0) * 2, xs))
    scaled = ft.compile(ft.map(lambda s: s - ft.amax(
        ft.concatenate([s, np.zeros((1, 4), dtype)]), axis=0), xs))
    ja = ft.JaggedArray(_no_host_copy(queue, v), cla.to_device(queue, off))
    assert ja.on_device and ja.values.base_data is not None
    want = np.stack([v[a:b].sum(0) * 2 for a, b in zip(off[:-1], off[1:])])
    np.testing.assert_allclose(sums(xs=ja), want, rtol=1e-5)
    np.testing.assert_allclose(sums(xs=ft.JaggedArray(v, off)), want, rtol=1e-5)
    out = scaled(xs=ja)
    assert isinstance(out, ft.JaggedArray) and not out.on_device
    for k, (a, b) in enumerate(zip(off[:-1], off[1:])):
        seg = v[a:b]
        np.testing.assert_allclose(
            out.tolist()[k], seg - np.maximum(seg.max(0, initial=0), 0)
            if len(seg) else seg, rtol=1e-6)
    np.testing.assert_array_equal(out.offsets[0], off)


def test_device_jagged_values_of_another_dtype_are_cast_on_the_device(zero_copy):
    queue = default_queue()
    v, off = _jagged(np.float64, seed=3)
    xs = ft.make_jagged_placeholder("xs", (4,), np.float32, depth=2)
    f = ft.compile(ft.map(lambda s: ft.sum(s, axis=0), xs))
    ja = ft.JaggedArray(_no_host_copy(queue, v), off)
    want = np.stack([v[a:b].sum(0) for a, b in zip(off[:-1], off[1:])])
    np.testing.assert_allclose(f(xs=ja), want.astype(np.float32), rtol=1e-5)


def test_device_jagged_parts_and_empty_values(zero_copy):
    """Device values passed as the parts ``xs_values``/``xs_offsets0``,
    and a JaggedArray of empty sequences only (no values)."""
    queue = default_queue()
    xs = ft.make_jagged_placeholder("xs", (4,), np.float32, depth=2)
    f = ft.compile(ft.map(lambda s: ft.sum(s, axis=0), xs))
    v, off = _jagged(np.float32, lengths=(2, 7, 1), seed=4)
    want = np.stack([v[a:b].sum(0) for a, b in zip(off[:-1], off[1:])])
    np.testing.assert_allclose(
        f(xs_values=_no_host_copy(queue, v), xs_offsets0=cla.to_device(queue, off)),
        want, rtol=1e-5)
    empty = ft.JaggedArray(cla.zeros(queue, (0, 4), np.float32),
                           np.zeros(3, np.int64))
    assert empty.on_device and empty.nnz == 0
    np.testing.assert_array_equal(f(xs=empty), np.zeros((2, 4), np.float32))


@pytest.mark.parametrize("start", [2, 32])
def test_device_values_that_start_inside_their_buffer(start):
    """Slices of device arrays (a nonzero offset into their buffer: at a
    128-byte boundary for start 32, not for start 2), dense or as a
    FractalTensor's values."""
    queue = default_queue()
    v = _values(np.float32, (100, 2), 6)
    window = slice(start, start + 12)
    dev = cla.to_device(queue, v)[window]
    assert dev.offset
    off = np.array([0, 3, 3, 7, 12])
    xs = ft.make_jagged_placeholder("xs", (2,), np.float32, depth=2)
    f = ft.compile(ft.map(lambda s: ft.sum(s, axis=0), xs))
    want = np.stack([v[window][a:b].sum(0) for a, b in zip(off[:-1], off[1:])])
    np.testing.assert_allclose(f(xs=ft.JaggedArray(dev, off)), want, rtol=1e-6)
    x = ft.make_placeholder("x", (12, 2), np.float32)
    np.testing.assert_array_equal(ft.compile(x * 2)(x=dev), v[window] * 2)


def test_evaluate_numpy_of_device_jagged_values():
    queue = default_queue()
    v, off = _jagged(np.float32, seed=5)
    xs = ft.make_jagged_placeholder("xs", (4,), np.float32, depth=2)
    lazy = ft.map(lambda s: ft.sum(s * s, axis=0), xs)
    got = ft.evaluate_numpy(lazy, xs=ft.JaggedArray(cla.to_device(queue, v), off))
    np.testing.assert_allclose(got, ft.evaluate_numpy(lazy, xs=ft.JaggedArray(v, off)),
                               rtol=1e-6)

# }}}
