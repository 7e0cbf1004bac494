# SPDX-License-Identifier: MIT
"""Row-blocked scans (each work group runs the time loop for its own block
of independent carry rows) whose row count is not a multiple of the block:
symbolic batches (a jagged batch's sequences) and concrete counts that no
block size divides. The last group's block is partial; every flavour (see
conftest.py) is checked against the reference evaluator."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import ftlazy as ft
from ftlazy.target.loopy.plan import partial_last_block, rows_per_group
from ftlazy.target.loopy.profile import synthetic_profile

H = 8
RNG = np.random.default_rng(11)
WEIGHTS = {"U": RNG.standard_normal((H, 4 * H)) * 0.4,
           "W": RNG.standard_normal((H, 4 * H)) * 0.4,
           "b": RNG.standard_normal(4 * H) * 0.1}


def _sigmoid(v):
    return 1 / (1 + ft.exp(-v))


def _lstm_cell(U, b):
    """An LSTM step: a product and elementwise math, and a cell state that
    both new carries read (a private statement of the storage plan)."""
    def cell(state, x):
        h, c = state
        g = x + h @ U + b
        c_new = _sigmoid(g[..., H:2 * H]) * c + _sigmoid(g[..., :H]) * ft.tanh(
            g[..., 3 * H:])
        return _sigmoid(g[..., 2 * H:3 * H]) * ft.tanh(c_new), c_new
    return cell


def _dense_lstm(rows):
    U = ft.make_placeholder("U", (H, 4 * H), np.float64)
    b = ft.make_placeholder("b", (4 * H,), np.float64)
    xs = ft.make_placeholder("xs", (5, rows, 4 * H), np.float64)
    h0 = ft.make_placeholder("h0", (rows, H), np.float64)
    hs, cs = ft.scan(_lstm_cell(U, b), xs, (h0, h0 * 0.5))
    return ft.make_dict_of_named_arrays({"hs": hs, "cs": cs})


def _check_dense(result, rows):
    vals = dict(xs=RNG.standard_normal((5, rows, 4 * H)),
                h0=RNG.standard_normal((rows, H)), U=WEIGHTS["U"], b=WEIGHTS["b"])
    got = ft.compile(result)(**vals)
    want = ft.evaluate_numpy(result, **vals)
    for name in want:
        assert got[name].shape == want[name].shape
        np.testing.assert_allclose(got[name], want[name], rtol=1e-10, atol=1e-12)


@pytest.fixture(scope="module")
def symbolic_lstm():
    return _dense_lstm(ft.make_size_param("n"))


@pytest.mark.parametrize("rows", [0, 1, 3, 7, 8, 64, 67])
def test_symbolic_batch_in_blocks_with_a_partial_last(symbolic_lstm, rows):
    _check_dense(symbolic_lstm, rows)


def test_symbolic_batch_plan_blocks_rows():
    for kind in ("cpu", "gpu"):
        prg = ft.generate_loopy(_dense_lstm(ft.make_size_param("n")),
                                profile=synthetic_profile(kind, 8 if kind == "cpu"
                                                          else 1))
        (scan_plan,) = prg.plan.scans.values()
        assert scan_plan.flavour == "row_blocked"
        assert scan_plan.rows_per_group > 1
        assert scan_plan.partial_last_block
        assert "row_blocked_product" in prg.plan.strategies().values()
        assert "the last partial" in str(prg.plan)


@pytest.mark.parametrize("rows", [3, 7, 9, 12, 32])
def test_concrete_rows_divisible_or_not(rows):
    _check_dense(_dense_lstm(rows), rows)


def test_rows_per_group_rule():
    profile = synthetic_profile("cpu", 8)
    assert profile.scan_rows_per_group == (8, 4, 2)
    # a divisor leaving two groups first, else a partial last block
    assert [rows_per_group(r, profile) for r in (1, 3, 7, 9, 12, 32)] == [
        1, 1, 2, 4, 4, 8]
    # without a product to reuse weights in, only dividing blocks
    assert [rows_per_group(r, profile, False) for r in (7, 9, 12, 32)] == [
        1, 1, 4, 8]
    assert not partial_last_block(32, 8) and not partial_last_block(12, 4)
    assert partial_last_block(9, 4) and partial_last_block(7, 2)
    import pymbolic.primitives as prim
    n = prim.Variable("n")
    assert rows_per_group(n, profile) == 8
    assert rows_per_group(n, profile, False) == 1
    assert partial_last_block(n, 8) and not partial_last_block(n, 1)
    assert not partial_last_block(8 * n, 8) and partial_last_block(8 * n, 16)


def test_rows_per_group_leaves_a_group_per_compute_unit():
    # an H100's 132 SMs: 32 rows make 32 one-row groups (a group's step is
    # serial work), 4096 rows blocks of 8 (512 groups); a 16-core CPU's 32
    # rows blocks of 2
    gpu = synthetic_profile("gpu", 1, compute_units=132)
    assert [rows_per_group(r, gpu) for r in (32, 264, 1000, 1056, 4096)] == [
        1, 2, 4, 8, 8]
    assert rows_per_group(1001, gpu) == 4  # a partial last block of 4
    assert rows_per_group(1001, gpu, False) == 1
    cpu16 = synthetic_profile("cpu", 8, compute_units=16)
    assert [rows_per_group(r, cpu16) for r in (16, 32, 64, 128)] == [1, 2, 4, 8]


def test_one_row_groups_on_many_compute_units():
    # the plan an H100 gets for 32 rows, run on this machine's device
    from ftlazy.target.loopy.device import default_queue
    from ftlazy.target.loopy.profile import device_profile
    result = _dense_lstm(32)
    profile = dataclasses.replace(device_profile(default_queue().device),
                                  kind="gpu", compute_units=132)
    prg = ft.generate_loopy(result, profile=profile)
    (scan_plan,) = prg.plan.scans.values()
    assert (scan_plan.flavour, scan_plan.rows_per_group) == ("row_blocked", 1)
    vals = dict(xs=RNG.standard_normal((5, 32, 4 * H)),
                h0=RNG.standard_normal((32, H)), U=WEIGHTS["U"], b=WEIGHTS["b"])
    want = ft.evaluate_numpy(result, **vals)
    _, got = prg(default_queue(), **vals)
    for name in want:
        np.testing.assert_allclose(got[name], want[name], rtol=1e-10, atol=1e-12)


def test_cpu_scan_math_on_vectors():
    """On a CPU the cell state (read by both new carries) is stored rather
    than a private statement, so that every row loop runs its exp and tanh
    on vectors, and the cell state is computed once per step."""
    prg = ft.generate_loopy(_dense_lstm(ft.make_size_param("n")),
                            profile=synthetic_profile("cpu", 8))
    (scan_plan,) = prg.plan.scans.values()
    assert not scan_plan.storage.private
    widths = [p.vector_width for n, p in prg.plan.arrays.items()
              if n in scan_plan.storage.stored and p.strategy == "loop_nest"]
    assert widths.count(8) == 2  # the new cell state and the new h


@pytest.mark.parametrize("lengths", [(), (0,), (3,), (2, 0, 5), (4, 1, 3, 0, 2, 6, 1),
                                     tuple(range(1, 65))])
def test_jagged_lstm_batches(lengths):
    """A stacked LSTM-like map of scans over 0, 1, 3, 7 and 64 sequences:
    one batched scan, rows = sequences, in blocks of rows."""
    xs = ft.make_jagged_placeholder("xs", (H,), np.float64, depth=2)
    U = ft.make_placeholder("U", (H, 4 * H), np.float64)
    W = ft.make_placeholder("W", (H, 4 * H), np.float64)
    b = ft.make_placeholder("b", (4 * H,), np.float64)
    zeros = ft.zeros(H)
    ys = ft.map(lambda s: ft.scan(_lstm_cell(U, b), s @ W, (zeros, zeros))[0], xs)
    rng = np.random.default_rng(len(lengths))
    data = [rng.standard_normal((n, H)) for n in lengths]
    got = ft.compile(ys)(xs=data, **WEIGHTS)
    want = ft.evaluate_numpy(ys, xs=data, **WEIGHTS)
    assert len(got) == len(want) == len(lengths)
    for g, w in zip(got.tolist(), want.tolist()):
        assert g.shape == w.shape
        np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-12)


@pytest.fixture(scope="module")
def symbolic_product():
    n = ft.make_size_param("n")
    a = ft.make_placeholder("a", (n, 24), np.float64)
    w = ft.make_placeholder("w", (24, 32), np.float64)
    bias = ft.make_placeholder("bias", (32,), np.float64)
    return ft.tanh(a @ w + bias)


@pytest.mark.parametrize("rows", [0, 1, 3, 7, 8, 64, 67])
def test_register_blocked_product_over_symbolic_rows(symbolic_product, rows):
    """A matrix product over a symbolic number of rows (a jagged batch's
    tokens) is blocked with a partial last row block."""
    vals = dict(a=RNG.standard_normal((rows, 24)), w=RNG.standard_normal((24, 32)),
                bias=RNG.standard_normal(32))
    f = ft.compile(symbolic_product)
    # (GPU plans tile it in local memory instead, see test_gpu_plans.py)
    expected = ("tiled_contraction" if f.plan.profile.kind == "gpu"
                else "blocked_contraction")
    assert expected in f.plan.strategies().values()
    got = f(**vals)
    want = ft.evaluate_numpy(symbolic_product, **vals)
    assert got.shape == want.shape == (rows, 32)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
