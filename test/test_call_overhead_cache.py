# SPDX-License-Identifier: MIT
"""What a compiled program keeps between calls (the layout of a call:
size parameters, checks of sizes and allocations, output shapes, kept per
kind of inputs, see ``program._CallLayout``) never gives a wrong answer:
calls alternating shapes, dtypes, length distributions, empty and bad
inputs give the results of numpy (per-segment loops for FractalTensors)
and of ``ft.evaluate_numpy``, and bad inputs raise the same error at every
call, before and after good calls of the same kind."""

from __future__ import annotations

import re

import numpy as np
import pyopencl.array as cla
import pytest

import ftlazy as ft
from ftlazy.target.loopy import program as program_module
from ftlazy.target.loopy.device import default_queue

from helpers import JAGGED_LENGTHS

N = ft.make_size_param("n")
X = ft.make_placeholder("x", (N, 3), np.float64)
Y = ft.make_placeholder("y", (N,), np.float64)
#: differences of neighbouring rows: negative shapes for n = 0, empty
#: results for n = 1
DENSE = ft.make_dict_of_named_arrays({
    "diff": X[1:] - X[:-1], "rows": ft.sum(X, axis=1) * Y})


def dense_numpy(x, y):
    return {"diff": x[1:] - x[:-1], "rows": x.sum(1) * y}


def raises_each_call(call, error, match, times=2):
    for _ in range(times):
        with pytest.raises(error, match=match):
            call()


def assert_dense(out, want):
    assert set(out) == set(want)
    for k in want:
        assert isinstance(out[k], np.ndarray) and out[k].shape == want[k].shape
        np.testing.assert_allclose(out[k], want[k], rtol=1e-13, err_msg=k)


@pytest.fixture(scope="module")
def dense():
    return ft.compile(DENSE)


def test_alternating_shapes_and_bad_inputs(dense):
    rng = np.random.default_rng(0)
    data = {n: (rng.standard_normal((n, 3)), rng.standard_normal(n))
            for n in (1, 2, 5, 9)}
    for n in (5, 1, 9, 5, 2, 1, 9):
        x, y = data[n]
        assert_dense(dense(x=x, y=y), dense_numpy(x, y))
        assert_dense(ft.evaluate_numpy(DENSE, x=x, y=y), dense_numpy(x, y))
        # bad inputs of the kind of a call just made raise every time
        raises_each_call(lambda: dense(x=x, y=np.zeros(n + 1)), ValueError,
                         re.escape(f"input 'y' has shape ({n + 1},), expected "
                                   f"(n,) = ({n},)"))
        raises_each_call(lambda: dense(x=x.astype(np.float32), y=y), TypeError,
                         "input 'x' has dtype float32, expected float64")
        raises_each_call(lambda: dense(x=x), ValueError, r"missing input\(s\) 'y'")
        raises_each_call(lambda: dense(x=x, y=y, z=y), ValueError,
                         r"unexpected input\(s\) 'z'")
        raises_each_call(lambda: dense(x=x, y=y, n=n + 1), ValueError,
                         "has shape")
        # (n = 0 makes the shape of x[1:] negative)
        raises_each_call(lambda: dense(x=np.zeros((0, 3)), y=np.zeros(0)),
                         ValueError, "which is negative")
    # inputs without a shape (lists) are converted and checked at each call
    x, y = data[2]
    assert_dense(dense(x=x.tolist(), y=list(y)), dense_numpy(x, y))
    raises_each_call(lambda: dense(x=x.tolist(), y=[1.0]), ValueError, "has shape")


def test_one_layout_per_kind_of_inputs_and_a_bounded_number(dense):
    prg = dense.program
    queue = default_queue()
    x, y = np.ones((4, 3)), np.ones(4)
    first = prg._layout(queue, {"x": x, "y": y})
    assert prg._layout(queue, {"x": x + 1, "y": y}) is first
    assert prg._layout(queue, {"x": np.ones((5, 3)), "y": np.ones(5)}) is not first
    for n in range(1, program_module._LAYOUT_LIMIT + 8):
        x, y = np.full((n, 3), 2.0), np.arange(float(n))
        assert_dense(dense(x=x, y=y), dense_numpy(x, y))
    assert len(prg._layouts) == program_module._LAYOUT_LIMIT


def test_size_parameters_given_and_allocation_checks():
    c = ft.make_placeholder("c", (), np.float32)
    f = ft.compile(ft.ones((N, 2), np.float32) * c)
    limit = default_queue().device.max_mem_alloc_size
    for n in (3, 0, np.int32(4), 3, 1):
        out = f(n=n, c=np.float32(1.5))
        np.testing.assert_array_equal(out, np.full((int(n), 2), 1.5, np.float32))
        raises_each_call(lambda: f(n=2**40, c=np.float32(1.5)), MemoryError,
                         f"more than the {limit} bytes")
        raises_each_call(lambda: f(n=-1, c=np.float32(1.5)), ValueError,
                         "must be non-negative")
        raises_each_call(lambda: f(n=True, c=np.float32(1.5)), TypeError,
                         "must be an int")
        raises_each_call(lambda: f(n=n, c=1.5), TypeError,
                         "input 'c' has dtype float64, expected float32")
        raises_each_call(lambda: f(n=n, c=np.float64(1.5)), TypeError,
                         "input 'c' has dtype float64, expected float32")


def test_value_checks_run_at_every_call():
    """An index check of the kernels depends on the values, not the
    shapes: good and bad indices of the same shape alternate."""
    a = ft.make_placeholder("a", (5,), np.float64)
    idx = ft.make_placeholder("idx", (3,), np.int32)
    f = ft.compile(a[idx] * 2)
    value = np.arange(5.0)
    for good, bad in (([4, -5, 0], [5, 0, 0]), ([1, 1, 1], [0, -6, 0])):
        good, bad = np.array(good, np.int32), np.array(bad, np.int32)
        np.testing.assert_array_equal(f(a=value, idx=good), value[good] * 2)
        raises_each_call(lambda: f(a=value, idx=bad), IndexError,
                         "out of range for axis 0 with size 5")
        np.testing.assert_array_equal(f(a=value, idx=good), value[good] * 2)


def test_device_and_numpy_inputs_alternate(dense):
    queue = default_queue()
    rng = np.random.default_rng(1)
    x, y = rng.standard_normal((6, 3)), rng.standard_normal(6)
    prg = dense.program
    for _ in range(2):
        _, out = prg(queue, x=cla.to_device(queue, x), y=cla.to_device(queue, y))
        assert all(isinstance(v, cla.Array) for v in out.values())
        assert_dense({k: v.get() for k, v in out.items()}, dense_numpy(x, y))
        _, out = prg(queue, x=x, y=y)
        assert_dense(out, dense_numpy(x, y))
        # a strided device array: refused, naming the input
        wide = cla.to_device(queue, np.repeat(x, 2, axis=1))
        raises_each_call(lambda: prg(queue, x=wide[:, ::2], y=y), ValueError,
                         "input 'x' is a non-contiguous device array")
    # (the reference evaluator raised pyopencl's bare AssertionError)
    d = ft.make_placeholder("d", (5,), np.float64)
    with pytest.raises(ValueError, match="input 'd' is a non-contiguous device "
                       "array .* evaluate_numpy cannot fetch"):
        ft.evaluate_numpy(d * 2, d=cla.to_device(queue, np.arange(10.0))[::2])


# {{{ FractalTensors

H = 3
XS = ft.make_jagged_placeholder("xs", (H,), np.float64, depth=2)
YS = ft.make_jagged_placeholder("ys", (H,), np.float64, depth=2)
W = ft.make_placeholder("w", (H,), np.float64)
#: a scan over each element of two zipped FractalTensors
ZIPPED_SCAN = ft.map(lambda s, t: ft.scan(lambda h, r: h * 0.5 + r * W, s + t,
                                          ft.zeros(H)), XS, YS)


def zipped_scan_numpy(xs, ys, w):
    out = []
    for s, t in zip(xs, ys):
        h, rows = np.zeros(H), []
        for r in s + t:
            h = h * 0.5 + r * w
            rows.append(h)
        out.append(np.array(rows).reshape(len(s), H))
    return out


def segments(lengths, seed):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal((n, H)) for n in lengths]


def assert_segments(got, want):
    got = got.tolist()
    assert len(got) == len(want)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-12)


def test_fractal_tensors_with_new_length_distributions():
    f = ft.compile(ZIPPED_SCAN)
    w = np.array([1.0, -0.5, 2.0])
    distributions = list(JAGGED_LENGTHS.values()) + [(1,), (4, 4, 4)]
    for lengths in distributions + distributions[::-1]:
        xs, ys = segments(lengths, 1), segments(lengths, 2)
        want = zipped_scan_numpy(xs, ys, w)
        assert_segments(f(xs=xs, ys=ys, w=w), want)
        assert_segments(ft.evaluate_numpy(ZIPPED_SCAN, xs=xs, ys=ys, w=w), want)
        # the same shapes, other lengths: the zip's check sees the offsets
        if len(lengths) > 1 and len(set(lengths)) > 1:
            other = segments(lengths[::-1], 3)
            raises_each_call(lambda: f(xs=xs, ys=other, w=w), ValueError,
                             "different lengths")
        raises_each_call(lambda: f(xs=xs, ys=ys, w=w[:2]), ValueError,
                         "input 'w' has shape")


def test_data_dependent_shapes_of_inputs_alike():
    """``xs[i]``: the result's shape depends on the offsets and on i, not
    on the input shapes; calls with inputs of the same shapes alternate."""
    i = ft.make_placeholder("i", (), np.int64)
    result = XS[i] * 2
    f = ft.compile(result)
    xs = segments((2, 0, 5), 4)
    for k in (0, 2, 1, -1, 0):
        got = f(xs=xs, i=np.int64(k))
        np.testing.assert_array_equal(got, xs[k] * 2)
        np.testing.assert_array_equal(
            ft.evaluate_numpy(result, xs=xs, i=np.int64(k)), xs[k] * 2)
        raises_each_call(lambda: f(xs=xs, i=np.int64(3)), IndexError,
                         "index 3 is out of range for an outer list of 3")

# }}}
