# SPDX-License-Identifier: MIT
"""Scans over the rows of a FractalTensor's elements when the lengths are
skewed: each row block's time loop stops at its own longest element
(:mod:`ftlazy.target.loopy.balance`). Results are checked against
per-sequence numpy loops on every flavour (see conftest.py), one compiled
program serving every length distribution."""

from __future__ import annotations

import numpy as np
import pymbolic.primitives as prim
import pytest
from pymbolic import evaluate

import ftlazy as ft
from ftlazy.fractal_tensor import RaggedScan
from ftlazy.target.loopy.balance import block_extent

H = 3
RNG = np.random.default_rng(11)
U = RNG.standard_normal((H, H)) * 0.5
A = RNG.uniform(0.5, 1.0, H)

#: skewed distributions; 21 elements is no multiple of a row block
SKEWED = {
    "one_long_many_short": (0, 2, 1, 0, 3, 1, 2, 0, 1, 3, 37, 1, 0, 2, 1, 3,
                            0, 1, 2, 1, 0),
    "all_empty_but_one": (0,) * 12 + (29,) + (0,) * 8,
    "descending": tuple(range(20, -1, -1)),
    "ascending": tuple(range(21)),
    "empty_batch": (),
}


def batch(lengths, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal((n, H)) for n in lengths]


def rnn_numpy(s):
    h, out = np.zeros(H), []
    for x in s:
        h = np.tanh(x + h @ U)
        out.append(h)
    return np.array(out).reshape(len(s), H), h


def recurrence_numpy(s):
    h, out = np.zeros(H), []
    for x in s:
        h = A * h + x
        out.append(h)
    return np.array(out).reshape(len(s), H), h


@pytest.fixture
def xs():
    return ft.make_jagged_placeholder("xs", (H,), np.float64, depth=2)


def ragged_scans(compiled):
    return [s for s in compiled.plan.scans if isinstance(s, RaggedScan)]


def ragged_scan_plans(compiled):
    return [compiled.plan.scans[s] for s in ragged_scans(compiled)]


def check_all(result, reference, **more):
    """*result* compiled once, run on every skewed distribution, against
    the per-sequence *reference* (the stacked results or last carries)."""
    compiled = ft.compile(result)
    for lengths in SKEWED.values():
        data = batch(lengths)
        got = compiled(xs=data, **more)
        want = [reference(s) for s in data]
        if isinstance(got, ft.JaggedArray):
            assert [g.shape for g in got.tolist()] == [w.shape for w in want]
            for g, w in zip(got.tolist(), want):
                np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-12)
        else:
            np.testing.assert_allclose(
                got, np.array(want).reshape(got.shape), rtol=1e-12, atol=1e-12)
    return compiled


@pytest.mark.parametrize("stacked", [True, False], ids=["scan", "fold"])
def test_rnn_over_skewed_lengths(xs, stacked):
    # h @ U is a product: rows run in blocks of several elements
    Up = ft.make_placeholder("U", (H, H), np.float64)
    loop = ft.scan if stacked else ft.fold
    result = ft.map(lambda s: loop(lambda h, x: ft.tanh(x + h @ Up), s,
                                   ft.zeros(H)), xs)
    compiled = check_all(result, lambda s: rnn_numpy(s)[0 if stacked else 1],
                         U=U)
    (plan,) = ragged_scan_plans(compiled)
    assert plan.flavour == "row_blocked" and plan.block_bounded


def test_linear_recurrence_over_skewed_lengths(xs):
    # no product: a row block per element, each loop as long as its element
    Ap = ft.make_placeholder("a", (H,), np.float64)
    result = ft.map(lambda s: ft.scan(lambda h, x: Ap * h + x, s, ft.zeros(H)),
                    xs)
    compiled = check_all(result, lambda s: recurrence_numpy(s)[0], a=A)
    (plan,) = ragged_scan_plans(compiled)
    assert plan.block_bounded and plan.rows_per_group >= 1
    # the carries' gate scans the step index alone: no (steps, n) array
    (scan,) = ragged_scans(compiled)
    assert [x.shape for x in scan.scanned[scan.num_ragged:]] == [(scan.length,)]


def test_fold_of_a_captured_init_over_skewed_lengths(xs):
    # empty elements keep the captured init: the last carry is read from
    # the slot of each block's own step count
    h0 = ft.make_placeholder("h0", (H,), np.float64)
    Up = ft.make_placeholder("U", (H, H), np.float64)
    result = ft.map(lambda s: ft.fold(lambda h, x: ft.tanh(x + h @ Up), s, h0),
                    xs)
    h0v = np.linspace(-1, 1, H)

    def reference(s):
        h = h0v
        for x in s:
            h = np.tanh(x + h @ U)
        return h
    check_all(result, reference, U=U, h0=h0v)


@pytest.mark.parametrize("per_group", [1, 3, 8])
def test_block_extent_is_the_blocks_longest_element(per_group):
    lengths = np.array(SKEWED["one_long_many_short"])
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    scan_form = type("S", (), {"form": (1, 2)})()   # extent 1 + 2*L
    expr = block_extent(scan_form, prim.Variable("n"), per_group,
                        prim.Variable("g"),
                        lambda idx: prim.Subscript(prim.Variable("off"), idx))
    extents = 1 + 2 * lengths
    for g in range(-(-len(lengths) // per_group)):
        block = extents[g * per_group:(g + 1) * per_group]
        assert evaluate(expr, {"off": offsets, "n": len(lengths), "g": g}) \
            == block.max()
