# SPDX-License-Identifier: MIT
"""Scans and folds whose carry is a FractalTensor, compiled through OpenCL
(on every profile flavour, see conftest.py) and evaluated by the reference
evaluator, checked against per-sequence numpy loops. One compiled program
runs every length distribution and step count."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

import ftlazy as ft
from helpers import JAGGED_LENGTHS as LENGTHS

H = 3
RNG = np.random.default_rng(11)
LAYERS = RNG.standard_normal((3, H, H)) * 0.5
W = RNG.standard_normal((H, H)) * 0.5


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
    """Nested lists of arrays (``JaggedArray.tolist()``) equal *want*."""
    if isinstance(want, list):
        assert len(got) == len(want)
        for g, w in zip(got, want):
            assert_nested(g, w)
    else:
        assert got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def both(result, **inputs):
    """*result* compiled once, then run and evaluated on each input set."""
    program = ft.compile(result)
    return lambda **inputs: (program(**inputs), ft.evaluate_numpy(result, **inputs))


def test_scan_of_rnn_layers_keeps_every_layer():
    """A stacked RNN over a static number of layers (unrolled): every
    layer's batch, one level deeper."""
    xs = ft.make_jagged_placeholder("xs", (H,), np.float64, depth=2)
    layers = ft.make_placeholder("layers", (2, H, H), np.float64)
    result = ft.scan(lambda b, w: ft.map(
        lambda s: ft.scan(lambda h, x: ft.tanh(x + h @ w), s, ft.zeros(H)), b),
        layers, xs)
    assert result.depth == 3
    run = both(result)
    for lengths in ("mixed", "empty_batch", "all_empty"):
        data = batch(LENGTHS[lengths])
        want, b = [], data
        for w in LAYERS[:2]:
            b = [rnn(s, w) for s in b]
            want.append(b)
        for got in run(xs=data, layers=LAYERS[:2]):
            assert got.depth == 3
            assert_nested(got.tolist(), want)


class Carry(NamedTuple):
    batch: object
    total: object


def test_leafwise_layers_over_a_symbolic_count():
    """Leaf-wise layers over ``d`` steps, ``d`` known at run time only: the
    carry (a NamedTuple of a FractalTensor and an array) is scanned as its
    values; ``d = 0`` gives an empty outer list."""
    xs = ft.make_jagged_placeholder("xs", (H,), np.float64, depth=2)
    layers = ft.make_placeholder("layers", (ft.make_size_param("d"), H, H),
                                 np.float64)

    def layer(carry, w):
        new = ft.tanh(carry.batch @ w + 1.0)
        return Carry(new, carry.total + ft.sum(ft.flatten(new), axis=0))

    result = ft.scan(layer, layers, Carry(xs, ft.zeros(H)))
    run = both(result.batch)
    for d in (0, 3):
        for lengths in ("mixed", "all_empty"):
            data = batch(LENGTHS[lengths])
            want, b = [], data
            for w in LAYERS[:d]:
                b = [np.tanh(s @ w + 1.0) for s in b]
                want.append(b)
            for got in run(xs=data, layers=LAYERS[:d]):
                assert got.depth == 3 and len(got) == d
                assert_nested(got.tolist(), want)
            totals = ft.evaluate_numpy(result.total, xs=data, layers=LAYERS[:d])
            np.testing.assert_allclose(
                totals, np.cumsum([sum(s.sum(axis=0) for s in step)
                                   for step in want], axis=0).reshape(d, H),
                rtol=1e-12, atol=1e-12)


def test_steps_that_shorten_every_sequence():
    """Each step drops every sequence's first row: the unrolled steps'
    carries have lengths of their own, joined into one list."""
    xs = ft.make_jagged_placeholder("xs", (H,), np.float64, depth=2)
    result = ft.scan(lambda b, w: ft.map(lambda s: ft.tanh(s[1:] @ w), b),
                     ft.asarray(LAYERS[:2]), xs)
    run = both(result)
    for lengths in ((3, 2, 5, 2), ()):
        data = batch(lengths)
        want, b = [], data
        for w in LAYERS[:2]:
            b = [np.tanh(s[1:] @ w) for s in b]
            want.append(b)
        for got in run(xs=data):
            assert_nested(got.tolist(), want)


def test_fold_and_scan_over_a_fractal_tensors_elements():
    """The carry is a FractalTensor *ys*; each step reads one element of
    *xs*: the fold gives the last carry, the scan one per element."""
    xs = ft.make_jagged_placeholder("xs", (H,), np.float64, depth=2)
    ys = ft.make_jagged_placeholder("ys", (H,), np.float64, depth=2)

    def step(c, s):
        return ft.tanh(c @ W + ft.sum(s, axis=0))

    scanned = both(ft.scan(step, xs, ys))
    folded = both(ft.fold(step, xs, ys))
    for xl, yl in (("mixed", "nonempty"), ("empty_batch", "mixed"),
                   ("nonempty", "all_empty")):
        data, ydata = batch(LENGTHS[xl]), batch(LENGTHS[yl], seed=1)
        c, want = ydata, []
        for s in data:
            c = [np.tanh(y @ W + s.sum(axis=0)) for y in c]
            want.append(c)
        for got in scanned(xs=data, ys=ydata):
            assert_nested(got.tolist(), want)
        for got in folded(xs=data, ys=ydata):
            assert_nested(got.tolist(), c)


def test_stacked_rnn_over_a_symbolic_number_of_layers():
    """FractalTensor's stacked RNN, ``ft.fold(layer, params, init=batch)``
    over ``d`` layers known at run time only: one scan over the layers
    whose carry is the batch's values, each step an RNN over every
    sequence (a map over the carry inside the scan's body)."""
    xs = ft.make_jagged_placeholder("xs", (H,), np.float64, depth=2)
    layers = ft.make_placeholder("layers", (ft.make_size_param("d"), H, H),
                                 np.float64)
    result = ft.fold(lambda b, w: ft.map(lambda s: ft.scan(
        lambda h, x: ft.tanh(x + h @ w), s, ft.zeros(H)), b), layers, xs)
    run = both(result)
    for d, lengths in ((3, "mixed"), (0, "mixed"), (2, "empty_batch")):
        data = batch(LENGTHS[lengths])
        want = data
        for w in LAYERS[:d]:
            want = [rnn(s, w) for s in want]
        for got in run(xs=data, layers=LAYERS[:d]):
            assert_nested(got.tolist(), want)


def test_map_over_a_captured_fractal_tensor_in_a_folds_step():
    xs = ft.make_jagged_placeholder("xs", (H,), np.float64, depth=2)
    ws = ft.make_placeholder("ws", (ft.make_size_param("d"), H, H), np.float64)
    result = ft.fold(lambda c, w: c + ft.map(lambda s: ft.sum(s @ w), xs),
                     ws, ft.zeros(ft.lengths(xs).shape, np.float64))
    run = both(result)
    for d, lengths in ((3, "mixed"), (0, "nonempty"), (2, "empty_batch")):
        data = batch(LENGTHS[lengths])
        want = np.array([sum((s @ w).sum() for w in LAYERS[:d]) for s in data])
        for got in run(xs=data, ws=LAYERS[:d]):
            np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def test_fold_with_a_fractal_tensor_carry_nested_in_a_fold():
    """The inner fold's body maps over its carry and reads the outer
    step's element: the outer body is opened first, then the inner one."""
    xs = ft.make_jagged_placeholder("xs", (H,), np.float64, depth=2)
    ws = ft.make_placeholder("ws", (ft.make_size_param("d"), H, H), np.float64)
    vs = ft.make_placeholder("vs", (ft.make_size_param("e"),), np.float64)
    result = ft.fold(lambda b, v: ft.fold(
        lambda c, w: ft.map(lambda s: ft.tanh(s @ w + v), c), ws, b), vs, xs)
    run = both(result)
    offsets = np.array([0.5, -1.0])
    for lengths in ("mixed", "all_empty"):
        data = batch(LENGTHS[lengths])
        want = data
        for v in offsets:
            for w in LAYERS[:2]:
                want = [np.tanh(s @ w + v) for s in want]
        for got in run(xs=data, ws=LAYERS[:2], vs=offsets):
            assert_nested(got.tolist(), want)
