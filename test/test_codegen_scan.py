# SPDX-License-Identifier: MIT
"""Scan and fold through OpenCL: one kernel, carries, symbolic and empty
lengths, tuple carries, scans inside maps."""

import numpy as np
import pytest

import ftlazy as ft

rng = np.random.default_rng(7)


@pytest.fixture(scope="module")
def scans():
    n = ft.make_size_param("n")
    xs = ft.make_placeholder("xs", (n,), np.int64)
    ys = ft.make_placeholder("ys", (n,), np.int64)
    init = (ft.zeros((), np.int64), ft.ones((), np.int64))

    def step(carry, xy):
        total, prod = carry
        x, y = xy
        return total + x, prod * y

    totals, prods = ft.scan(step, (xs, ys), init)
    total = ft.fold(lambda c, x: c + x, xs, ft.full((), 5, np.int64))
    bat = ft.make_placeholder("bat", (3, n, 2), np.float64)
    per_row = ft.map(
        lambda seq: ft.scan(lambda c, x: c * 0.5 + x, seq, ft.zeros((2,))), bat)
    d = ft.make_dict_of_named_arrays(
        {"totals": totals, "prods": prods, "total": total, "per_row": per_row})
    return d, ft.compile(d)


@pytest.mark.parametrize("length", [5, 1, 0])
def test_scan_lengths_and_tuple_carries(scans, length):
    d, f = scans
    inputs = dict(xs=np.arange(1, length + 1), ys=np.arange(2, length + 2),
                  bat=rng.random((3, length, 2)))
    out = f(**inputs)
    ref = ft.evaluate_numpy(d, **inputs)
    for name in ref:
        assert out[name].dtype == ref[name].dtype, name
        assert out[name].shape == ref[name].shape, name
        np.testing.assert_allclose(out[name], ref[name], rtol=1e-12)


@pytest.mark.parametrize("b", [3, 8])
def test_rnn_scan_is_one_kernel_launch_and_correct(b):
    """b=3: one row per work group; b=8: rows blocked in private memory."""
    t, h, i = 7, 5, 4
    xs = ft.make_placeholder("xs", (t, b, i), np.float64)
    w = ft.make_placeholder("w", (h, h), np.float64)
    u = ft.make_placeholder("u", (h, i), np.float64)
    bias = ft.make_placeholder("bias", (h,), np.float64)
    h0 = ft.make_placeholder("h0", (b, h), np.float64)

    def step(hh, x):
        return ft.tanh(hh @ w.T + x @ u.T + bias)

    hs = ft.scan(step, xs, h0)
    f = ft.compile(hs)
    vals = dict(xs=rng.random((t, b, i)), w=rng.random((h, h)),
                u=rng.random((h, i)), bias=rng.random(h), h0=rng.random((b, h)))
    np.testing.assert_allclose(f(**vals), ft.evaluate_numpy(hs, **vals),
                               rtol=1e-12)
    # the time loop is a loop inside one kernel, not a host loop
    source = f.source
    assert "for (int _ft_t" in source
    scan_kernels = [k for k in source.split("__kernel")[1:] if "for (int _ft_t" in k]
    assert len(scan_kernels) == 1
    # (blocks of rows leave a group per compute unit: on an H100's 132
    # SMs, 8 rows make 8 one-row groups)
    (scan_plan,) = f.plan.scans.values()
    from ftlazy.target.loopy.plan import rows_per_group
    blocked = rows_per_group(b, f.plan.profile) > 1
    assert blocked == (b == 8 and f.plan.profile.compute_units <= 4)
    assert (scan_plan.rows_per_group > 1) == blocked
    assert ("_ft_acc" in scan_kernels[0]) == blocked


def test_scan_float32_carry_and_weights_closure():
    xs = ft.make_placeholder("xs", (6, 4), np.float32)
    w = ft.make_placeholder("w", (4, 4), np.float32)
    last = ft.fold(lambda c, x: ft.maximum(c @ w, x), xs, ft.zeros((4,), np.float32))
    f = ft.compile(last)
    vals = dict(xs=rng.random((6, 4), dtype=np.float32),
                w=rng.random((4, 4), dtype=np.float32))
    out = f(**vals)
    assert out.dtype == np.float32
    np.testing.assert_allclose(out, ft.evaluate_numpy(last, **vals), rtol=1e-5)


@pytest.mark.parametrize("mix_rows", [False, True])
def test_rows_partitioned_only_when_independent(mix_rows):
    """Rows of a batched carry run in separate work groups; a body that
    mixes rows (roll along the batch axis, a sum over it) must not be."""
    n = ft.make_size_param("n")
    xs = ft.make_placeholder("xs", (5, n, 3), np.float64)
    h0 = ft.make_placeholder("h0", (n, 3), np.float64)

    def step(h, x):
        new = ft.sin(h) * 0.9 + x
        if mix_rows:
            new = new + 0.1 * ft.roll(h, 1, axis=0) + 0.01 * ft.sum(h, axis=0)
        return new

    hs = ft.scan(step, xs, h0)
    f = ft.compile(hs)
    partitioned = "gid(0)" in next(k for k in f.source.split("__kernel")
                                   if "for (int _ft_t" in k)
    assert partitioned == (not mix_rows)
    for rows in (1, 4, 7):
        vals = dict(xs=rng.random((5, rows, 3)), h0=rng.random((rows, 3)))
        np.testing.assert_allclose(f(**vals), ft.evaluate_numpy(hs, **vals),
                                   rtol=1e-12)



def test_loops_whose_carry_has_no_entries():
    # (a scan or fold whose only carry had shape (0,) failed in loopy:
    # "domain '{ [_ft_bg, _ft_br] : 1 = 0 }' is empty")
    n = ft.make_size_param("n")
    x = ft.make_placeholder("x", (n, 3), np.float64)
    kept, summed = ft.fold(lambda c, row: (c[0], c[1] + row), x,
                           (ft.zeros((2, 0)), ft.zeros(3)))
    results = ft.make_dict_of_named_arrays({
        "fold": ft.fold(lambda c, row: c, x, ft.zeros(0)),
        "scan": ft.scan(lambda c, row: c + row[:0], x, ft.zeros(0)),
        "kept": kept, "summed": summed})
    compiled = ft.compile(results)
    for rows in (0, 1, 4):
        data = np.arange(rows * 3.0).reshape(rows, 3)
        got = compiled(x=data)
        assert got["fold"].shape == (0,) and got["kept"].shape == (2, 0)
        assert got["scan"].shape == (rows, 0)
        np.testing.assert_array_equal(got["summed"], data.sum(axis=0))
