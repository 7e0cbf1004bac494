# SPDX-License-Identifier: MIT
"""Scans and folds whose carry is a FractalTensor, through the reference
evaluator (the compiled paths: test_codegen_fractal_carries.py): over a
symbolic number of steps, bundles of FractalTensors and arrays, deeper
carries, and the errors of bodies that change a carry."""

from __future__ import annotations

import numpy as np
import pytest

import ftlazy as ft
from ftlazy.fractal_carry import same_offsets
from helpers import JAGGED_LENGTHS as LENGTHS

H = 3
RNG = np.random.default_rng(5)
LAYERS = RNG.standard_normal((3, H, H)) * 0.5


def batch(lengths, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal((n, H)) for n in lengths]


def rnn(s, w):
    h, out = np.zeros(H), []
    for x in s:
        h = np.tanh(x + h @ w)
        out.append(h)
    return np.array(out).reshape(len(s), H)


def assert_nested(got, want):
    if isinstance(want, list):
        assert len(got) == len(want)
        for g, w in zip(got, want):
            assert_nested(g, w)
    else:
        assert got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


@pytest.fixture
def xs():
    return ft.make_jagged_placeholder("xs", (H,), np.float64, depth=2)


@pytest.fixture
def layers():
    return ft.make_placeholder("layers", (ft.make_size_param("d"), H, H),
                               np.float64)


def rnn_layer(b, w):
    return ft.map(lambda s: ft.scan(lambda h, x: ft.tanh(x + h @ w), s,
                                    ft.zeros(H)), b)


@pytest.mark.parametrize("lengths", list(LENGTHS))
def test_stacked_rnn_over_a_symbolic_number_of_layers(xs, layers, lengths):
    folded = ft.fold(rnn_layer, layers, xs)
    scanned = ft.scan(rnn_layer, layers, xs)
    assert (folded.depth, scanned.depth) == (2, 3)
    data = batch(LENGTHS[lengths])
    for d in (0, 1, 3):
        want, b = [], data
        for w in LAYERS[:d]:
            b = [rnn(s, w) for s in b]
            want.append(b)
        got = ft.evaluate_numpy(folded, xs=data, layers=LAYERS[:d])
        assert_nested(got.tolist(), b)  # the init for no layers
        got = ft.evaluate_numpy(scanned, xs=data, layers=LAYERS[:d])
        assert len(got) == d  # an empty outer list for no layers
        assert_nested(got.tolist(), want)


def test_depth_3_carry_and_bundles(layers):
    """Documents of sentences, each layer an RNN over every sentence, in a
    dict with a running (H,) sum; the structure of the carry is kept."""
    docs = ft.make_jagged_placeholder("docs", (H,), np.float64, depth=3)

    def layer(carry, w):
        new = ft.map(lambda doc: rnn_layer(doc, w), carry["docs"])
        return {"sum": carry["sum"] + ft.sum(ft.flatten(new), axis=0),
                "docs": new}

    result = ft.scan(layer, layers, {"docs": docs, "sum": ft.zeros(H)})
    assert list(result) == ["docs", "sum"] and result["docs"].depth == 4
    folded = ft.fold(layer, layers, {"docs": docs, "sum": ft.zeros(H)})
    rng = np.random.default_rng(2)
    data = [[rng.standard_normal((n, H)) for n in doc]
            for doc in ((3, 0, 2), (), (1,), (0, 0))]
    want, sums, b, total = [], [], data, np.zeros(H)
    for w in LAYERS:
        b = [[rnn(s, w) for s in doc] for doc in b]
        total = total + sum(s.sum(axis=0) for doc in b for s in doc)
        want.append(b)
        sums.append(total)
    got = ft.evaluate_numpy(folded["docs"], docs=data, layers=LAYERS)
    assert_nested(got.tolist(), b)
    got = ft.evaluate_numpy(result["docs"], docs=data, layers=LAYERS)
    assert got.depth == 4
    assert_nested(got.tolist(), want)
    np.testing.assert_allclose(
        ft.evaluate_numpy(result["sum"], docs=data, layers=LAYERS), sums,
        rtol=1e-12, atol=1e-12)


def test_outer_list_fold_with_a_depth_3_carry():
    xs = ft.make_jagged_placeholder("xs", (H,), np.float64, depth=2)
    docs = ft.make_jagged_placeholder("docs", (H,), np.float64, depth=3)
    result = ft.fold(lambda c, s: c * 0.5 + ft.sum(s, axis=0), xs, docs)
    assert result.depth == 3
    rng = np.random.default_rng(4)
    doc_data = [[rng.standard_normal((n, H)) for n in doc]
                for doc in ((2, 0), (), (3,))]
    for lengths in ("mixed", "empty_batch"):
        data = batch(LENGTHS[lengths])
        want = doc_data
        for s in data:
            want = [[x * 0.5 + s.sum(axis=0) for x in doc] for doc in want]
        got = ft.evaluate_numpy(result, xs=data, docs=doc_data)
        assert_nested(got.tolist(), want)


def test_kept_offsets_are_recognised(xs):
    same = ft.map(lambda s: ft.exp(s) * 2, xs)
    assert same.offsets[0] is not xs.offsets[0]
    assert same_offsets(same.offsets[0], xs.offsets[0])
    shorter = ft.map(lambda s: s[1:], xs)
    assert not same_offsets(shorter.offsets[0], xs.offsets[0])
    ys = ft.make_jagged_placeholder("ys", (H,), np.float64, depth=2)
    assert not same_offsets(ys.offsets[0], xs.offsets[0])


def test_bodies_that_change_a_carry(xs, layers):
    with pytest.raises(ValueError, match=r"carry leaf 0 .*elem_shape \(3,\) "
                       r"to depth 2 and elem_shape \(2,\)"):
        ft.fold(lambda b, w: b @ ft.ones((H, 2)), layers, xs)
    with pytest.raises(TypeError, match="dtype of carry leaf 0.*float64 to "
                       "float32"):
        ft.scan(lambda b, w: (b @ w).astype(np.float32), layers, xs)
    with pytest.raises(ValueError, match="carry leaf 0 .*depth 2.*to depth 3"):
        ft.fold(lambda b, w: ft.repeat(b, 2), layers, xs)
    with pytest.raises(TypeError, match="carry leaf 0 is a FractalTensor"):
        ft.fold(lambda b, w: ft.flatten(b), layers, xs)
    with pytest.raises(TypeError, match="carry leaf 1 is an array"):
        ft.fold(lambda c, w: (c[0], c[0]), layers, (xs, ft.zeros(H)))
    with pytest.raises(ValueError, match="structured differently"):
        ft.fold(lambda c, w: c[0], layers, (xs, ft.zeros(H)))
    with pytest.raises(NotImplementedError, match=r"changes the lengths of "
                       r"carry leaf 0 \(its offsets of level 0"):
        ft.scan(lambda b, w: ft.map(lambda s: s[1:], b), layers, xs)
    ys = ft.make_jagged_placeholder("ys", (H,), np.float64, depth=2)
    with pytest.raises(NotImplementedError, match="fold over a FractalTensor "
                       "with a FractalTensor carry: the body changes"):
        ft.fold(lambda c, s: ft.map(lambda e: e[1:], c), xs, ys)


@pytest.mark.parametrize("carry_first", [True, False])
def test_leafwise_operation_with_another_fractal_tensor(xs, layers,
                                                        carry_first):
    """``b + ys`` and ``ys + b`` keep the carry's offsets (checked equal to
    *ys*'s at run time), so the fold keeps the carry's structure."""
    ys = ft.make_jagged_placeholder("ys", (H,), np.float64, depth=2)
    result = ft.fold(lambda b, w: ft.tanh(b @ w + ys if carry_first
                                          else ys + b @ w), layers, xs)
    data, ydata = batch(LENGTHS["mixed"]), batch(LENGTHS["mixed"], seed=1)
    want = data
    for w in LAYERS:
        want = [np.tanh(s @ w + y) for s, y in zip(want, ydata)]
    compiled = ft.compile(result)
    for run in (compiled, lambda **a: ft.evaluate_numpy(result, **a)):
        got = run(xs=data, ys=ydata, layers=LAYERS)
        assert_nested(got.tolist(), want)
        with pytest.raises(ValueError, match="different"):
            run(xs=data, ys=batch((3, 0, 2, 5, 2)), layers=LAYERS)
