# SPDX-License-Identifier: MIT
"""The GPU flavour of code generation, run on the default device.

On a GPU, loop nests spread columns over work items and scans keep rows in
registers (see :mod:`ftlazy.target.loopy.scan`). The generated OpenCL is
valid on any device, so these tests build the GPU flavour explicitly and
run it on PoCL: the GPU code paths are checked even where no GPU is."""

from __future__ import annotations

import numpy as np
import pytest

import ftlazy as ft
from ftlazy.target.loopy.device import default_queue
from ftlazy.target.loopy.profile import synthetic_profile


GPU = synthetic_profile("gpu", vector_width=1)


def _run_as_gpu(result, **inputs):
    prg = ft.generate_loopy(result, profile=GPU)
    _, outputs = prg(default_queue(), **inputs)
    return outputs


def _check(result, **inputs):
    (out,) = _run_as_gpu(result, **inputs)
    np.testing.assert_allclose(out, ft.evaluate_numpy(result, **inputs),
                               rtol=1e-12, atol=1e-14)


RNG = np.random.default_rng(11)
N = ft.make_size_param("n")


def test_elementwise_and_reductions_as_gpu() -> None:
    x = ft.make_placeholder("x", (N, 5), np.float64)
    y = ft.exp(-x * x) + ft.sum(x, axis=1)[:, None] - ft.max(x)
    for n in (1, 70):
        _check(y, x=RNG.uniform(-1, 1, (n, 5)))


def test_matmul_as_gpu() -> None:
    a = ft.make_placeholder("a", (33, 20), np.float64)
    b = ft.make_placeholder("b", (20, 17), np.float64)
    _check(a @ b, a=RNG.uniform(-1, 1, (33, 20)), b=RNG.uniform(-1, 1, (20, 17)))


@pytest.mark.parametrize("batch", [8, 3])
def test_rnn_scan_as_gpu(batch: int) -> None:
    """Independent rows (batch 8: row blocks in registers) and a batch that
    does not split evenly."""
    w = ft.make_placeholder("w", (16, 16), np.float64)
    u = ft.make_placeholder("u", (16, 4), np.float64)
    xs = ft.make_placeholder("xs", (5, batch, 4), np.float64)
    h0 = ft.make_placeholder("h0", (batch, 16), np.float64)
    hs = ft.scan(lambda h, x: ft.tanh(h @ w.T + x @ u.T), xs, h0)
    _check(hs, w=RNG.uniform(-0.3, 0.3, (16, 16)), u=RNG.uniform(-1, 1, (16, 4)),
           xs=RNG.uniform(-1, 1, (5, batch, 4)), h0=np.zeros((batch, 16)))


def test_coupled_scan_as_gpu() -> None:
    """A carry whose rows mix (one work group runs the whole step)."""
    xs = ft.make_placeholder("xs", (6, 7), np.float64)
    h0 = ft.make_placeholder("h0", (7,), np.float64)
    out = ft.fold(lambda h, x: ft.roll(h, 1) * 0.5 + x + ft.sum(h) * 0.01, xs, h0)
    _check(out, xs=RNG.uniform(-1, 1, (6, 7)), h0=RNG.uniform(-1, 1, 7))


def test_gather_and_rolled_chain_as_gpu() -> None:
    table = ft.make_placeholder("table", (10, 3), np.float64)
    ids = ft.make_placeholder("ids", (8,), np.int64)
    y = ft.gather(table, ids)
    coeffs = [ft.make_placeholder(f"c{k}", (), np.float64) for k in range(200)]
    for c in coeffs:
        y = y * 0.9 + c
    inputs = {f"c{k}": np.array(RNG.uniform(-1, 1)) for k in range(200)}
    _check(y, table=RNG.uniform(-1, 1, (10, 3)),
           ids=RNG.integers(0, 10, 8), **inputs)
