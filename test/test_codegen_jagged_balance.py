# SPDX-License-Identifier: MIT
"""Scans over the rows of a FractalTensor's elements when the lengths are
skewed: each row block's time loop stops at its own longest element
(:mod:`ftlazy.target.loopy.balance`). Results are checked against
per-sequence numpy loops on every flavour (see conftest.py), one compiled
program serving every length distribution."""

from __future__ import annotations

import dataclasses

import numpy as np
import pymbolic.primitives as prim
import pytest
from pymbolic import evaluate

import ftlazy as ft
from ftlazy.fractal_tensor import RaggedScan
from ftlazy.target.loopy.balance import _block_of_group, block_extent
from ftlazy.target.loopy.jagged_program import _row_order
from ftlazy.target.loopy.plan import ScanPlan
from ftlazy.target.loopy.profile import as_options

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
    # five whole blocks of eight (their order alternates) and a partial one
    "many_blocks": tuple(int(v) for v in
                         np.random.default_rng(5).integers(0, 30, 45)),
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


def check_all(result, reference, options=None, **more):
    """*result* compiled once, run on every skewed distribution, against
    the per-sequence *reference* (the stacked results or last carries)."""
    compiled = ft.compile(result, options=options)
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


def current_options(**changes):
    """The options the test's flavour compiles with, *changes* applied."""
    return dataclasses.replace(as_options(None), **changes)


@pytest.mark.parametrize("sort", [True, False], ids=["sorted", "in_order"])
@pytest.mark.parametrize("stacked", [True, False], ids=["scan", "fold"])
def test_rnn_over_skewed_lengths(xs, stacked, sort):
    # h @ U is a product: rows run in blocks of several elements, by
    # default the elements sorted by length (a fold's last carries are then
    # read from the slot of their block's step count)
    Up = ft.make_placeholder("U", (H, H), np.float64)
    loop = ft.scan if stacked else ft.fold
    result = ft.map(lambda s: loop(lambda h, x: ft.tanh(x + h @ Up), s,
                                   ft.zeros(H)), xs)
    compiled = check_all(result, lambda s: rnn_numpy(s)[0 if stacked else 1],
                         options=current_options(sort_ragged_rows=sort), U=U)
    (plan,) = ragged_scan_plans(compiled)
    assert plan.flavour == "row_blocked" and plan.block_bounded
    assert plan.rows_per_group > 1 and plan.sorted_rows == sort
    assert ("by descending length" in str(plan)) == sort


def test_stacked_layers_share_the_sorted_blocks(xs):
    # a fold over layers of maps of scans: every layer's scan blocks the
    # same elements in the same order, so on CPUs all run in one kernel
    Ws = ft.make_placeholder("Ws", (3, H, H), np.float64)

    def layer(batch, W):
        return ft.map(lambda s: ft.scan(lambda h, x: ft.tanh(x + h @ W), s,
                                        ft.zeros(H)), batch)
    result = ft.fold(layer, Ws, xs)
    Wv = RNG.standard_normal((3, H, H)) * 0.5

    def reference(s):
        for W in Wv:
            h, out = np.zeros(H), []
            for x in s:
                h = np.tanh(x + h @ W)
                out.append(h)
            s = np.array(out).reshape(len(s), H)
        return s
    compiled = check_all(result, reference, Ws=Wv)
    plans = ragged_scan_plans(compiled)
    assert len(plans) == 3 and all(p.sorted_rows for p in plans)
    # (chains are for groups of one work item: CPUs)
    chained = 2 if plans[0].single_item_groups else 0
    assert [p.chained for p in plans].count(True) == chained
    (order,) = {s.order for s in ragged_scans(compiled)}
    assert order is not None


def test_row_order_is_by_descending_extent():
    extents = np.array([3, 0, 7, 3, 7, 1])
    order, place = _row_order(extents)
    assert order.tolist() == [2, 4, 0, 3, 5, 1]
    assert (place[order] == np.arange(6)).all()
    assert _row_order(np.zeros(0, np.int64)).shape == (2, 0)


@pytest.mark.parametrize("rows", [1, 7, 8, 9, 16, 21, 45, 48, 63])
def test_blocks_of_groups_are_a_permutation(rows):
    # whole blocks alternate longest and shortest; a partial last block
    # stays with the last group, whose rows the emitters guard
    plan = ScanPlan("T", "row_blocked", prim.Variable("n"), 8)
    expr = _block_of_group(prim.Variable("g"), plan)
    groups = -(-rows // 8)
    blocks = [evaluate(expr, {"g": g, "n": rows}) for g in range(groups)]
    assert sorted(blocks) == list(range(groups))
    whole = rows // 8
    if whole < groups:
        assert blocks[-1] == groups - 1
    first = min(2, whole)
    assert blocks[:first] == [0, whole - 1][:first]


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
