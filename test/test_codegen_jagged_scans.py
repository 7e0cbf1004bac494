# SPDX-License-Identifier: MIT
"""Scans and folds inside maps over FractalTensors, compiled through OpenCL
(on every profile flavour, see conftest.py) and checked against
per-sequence numpy loops and the reference evaluator."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import pytest

import ftlazy as ft
from helpers import JAGGED_LENGTHS as LENGTHS, compile_on_host

H = 3
RNG = np.random.default_rng(7)
W = RNG.standard_normal((H, H)) * 0.5
U = RNG.standard_normal((H, H)) * 0.5
LAYERS = RNG.standard_normal((3, H, H)) * 0.5


def batch(lengths, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal((n, H)) for n in lengths]


@pytest.fixture
def xs():
    return ft.make_jagged_placeholder("xs", (H,), np.float64, depth=2)


def rnn_numpy(s, h=None, U=U):
    h = np.zeros(H) if h is None else h
    out = []
    for x in s:
        h = np.tanh(x + h @ U)
        out.append(h)
    return np.array(out).reshape(len(s), H), h


def check(result, reference, data, **more):
    """*result* compiled and evaluated on *data* against the per-sequence
    *reference* (a list for a FractalTensor result, else an array)."""
    compiled = ft.compile(result)(xs=data, **more)
    evaluated = ft.evaluate_numpy(result, xs=data, **more)
    for got in (compiled, evaluated):
        if isinstance(got, ft.JaggedArray):
            assert len(got) == len(reference)
            for g, want in zip(got.tolist(), reference):
                assert g.shape == want.shape
                np.testing.assert_allclose(g, want, rtol=1e-12, atol=1e-12)
        else:
            want = np.array(reference).reshape(got.shape)
            assert got.shape == (len(data),) + tuple(result.shape[1:])
            np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("lengths", list(LENGTHS))
def test_rnn_scan_per_sequence(xs, lengths):
    Wp = ft.make_placeholder("W", (H, H), np.float64)
    Up = ft.make_placeholder("U", (H, H), np.float64)
    ys = ft.map(lambda s: ft.scan(lambda h, x: ft.tanh(x + h @ Up), s @ Wp,
                                  ft.zeros(H)), xs)
    data = batch(LENGTHS[lengths])
    check(ys, [rnn_numpy(s @ W)[0] for s in data], data, W=W, U=U)


@pytest.mark.parametrize("lengths", ["mixed", "all_empty"])
def test_fold_gives_each_sequences_last_carry(xs, lengths):
    # an empty sequence keeps the initial carry, here the captured h0
    h0 = ft.make_placeholder("h0", (H,), np.float64)
    last = ft.map(lambda s: ft.fold(lambda h, x: ft.tanh(x + h @ U), s, h0), xs)
    data = batch(LENGTHS[lengths])
    h0v = np.linspace(-1, 1, H)
    check(last, [rnn_numpy(s, h0v)[1] for s in data], data, h0=h0v)


def test_carry_initialised_from_the_element(xs):
    # the initial carry depends on the sequence: a batched (n, H) init
    ys = ft.map(lambda s: ft.scan(lambda h, x: 0.5 * h + x, s,
                                  ft.sum(s, axis=0)), xs)
    data = batch(LENGTHS["mixed"])

    def reference(s):
        h, out = s.sum(axis=0), []
        for x in s:
            h = 0.5 * h + x
            out.append(h)
        return np.array(out).reshape(len(s), H)
    check(ys, [reference(s) for s in data], data)


class Cell(NamedTuple):
    h: object
    c: object


def test_lstm_like_tuple_carry_over_shifted_rows(xs):
    # two carries, scanned over s[1:] (length L - 1) with s[:-1] zipped
    def body(s):
        def step(carry, pair):
            x, y = pair
            c = ft.tanh(carry.c + x * y)
            return Cell(h=carry.h + c @ U, c=c)
        return ft.scan(step, (s[1:], s[:-1]), Cell(ft.zeros(H), ft.ones(H)))
    result = ft.map(body, xs)
    data = batch(LENGTHS["nonempty"])

    def reference(s):
        h, c, hs, cs = np.zeros(H), np.ones(H), [], []
        for x, y in zip(s[1:], s[:-1]):
            c = np.tanh(c + x * y)
            h = h + c @ U
            hs.append(h)
            cs.append(c)
        return np.array(hs).reshape(-1, H), np.array(cs).reshape(-1, H)
    f = ft.compile(result.h)
    g = ft.compile(result.c)
    for s, got_h, got_c in zip(data, f(xs=data).tolist(), g(xs=data).tolist()):
        want_h, want_c = reference(s)
        np.testing.assert_allclose(got_h, want_h, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(got_c, want_c, rtol=1e-12, atol=1e-12)


def test_reversed_scan_and_reduction_of_its_result(xs):
    # a scan over s[::-1], then a sum over its rows: packed rows read back
    total = ft.map(lambda s: ft.sum(ft.scan(lambda h, x: h * 0.9 + x, s[::-1],
                                            ft.zeros(H)), axis=0), xs)
    data = batch(LENGTHS["mixed"])

    def reference(s):
        h, acc = np.zeros(H), np.zeros(H)
        for x in s[::-1]:
            h = h * 0.9 + x
            acc = acc + h
        return acc
    check(total, [reference(s) for s in data], data)


def test_static_fold_with_batched_carry(xs):
    # a fold over a static axis inside the map: its carry gains the
    # sequence axis, no offsets involved
    ws = np.array([0.5, -1.0, 2.0, 0.25])
    result = ft.map(lambda s: ft.fold(lambda c, w: ft.sin(c) * w, ft.asarray(ws),
                                      ft.sum(s, axis=0)), xs)
    data = batch(LENGTHS["mixed"])

    def reference(s):
        c = s.sum(axis=0)
        for w in ws:
            c = np.sin(c) * w
        return c
    check(result, [reference(s) for s in data], data)


@pytest.mark.parametrize("lengths", ["mixed", "empty_batch"])
def test_fold_over_layers_with_the_sequence_as_carry(xs, lengths):
    # a stacked RNN: a fold over 3 layers whose carry is the whole sequence,
    # each layer a scan over it (the fold is unrolled, the scans batched)
    layers = ft.make_placeholder("layers", (3, H, H), np.float64)
    result = ft.map(lambda s: ft.fold(
        lambda seq, w: ft.scan(lambda h, x: ft.tanh(x + h @ U), seq @ w,
                               ft.zeros(H)),
        layers, s), xs)
    data = batch(LENGTHS[lengths])

    def reference(s):
        for w in LAYERS:
            s = rnn_numpy(s @ w)[0]
        return s
    check(result, [reference(s) for s in data], data, layers=LAYERS)


def test_carry_independent_work_on_the_element_is_hoisted(xs):
    # sum(s) in the step function depends only on the sequence: it is
    # computed once per sequence, outside the scan
    result = ft.map(lambda s: ft.scan(lambda h, x: h + ft.sum(s, axis=0) * x, s,
                                      ft.zeros(H)), xs)
    data = batch(LENGTHS["mixed"])
    want = []
    for s in data:
        h, out = np.zeros(H), []
        for x in s:
            h = h + s.sum(axis=0) * x
            out.append(h)
        want.append(np.array(out).reshape(len(s), H))
    check(result, want, data)


def test_scan_over_rows_reading_the_whole_element(xs):
    # attention-like: each step reads the whole sequence with the carry
    result = ft.map(lambda s: ft.scan(
        lambda h, x: ft.tanh(x + ft.sum(s * h, axis=0)), s, ft.zeros(H)), xs)
    data = batch(LENGTHS["mixed"])
    want = []
    for s in data:
        h, out = np.zeros(H), []
        for x in s:
            h = np.tanh(x + (s * h).sum(axis=0))
            out.append(h)
        want.append(np.array(out).reshape(len(s), H))
    check(result, want, data)


def test_step_uses_the_elements_length(xs):
    result = ft.map(lambda s: ft.fold(lambda h, x: h + x / s.shape[0], s,
                                      ft.zeros(H)), xs)
    data = batch(LENGTHS["mixed"])
    check(result, [s.mean(axis=0) if len(s) else np.zeros(H) for s in data], data)


def online_softmax_attention(s):
    """Attention of every position to the sequence (keys = values = s),
    folding over the keys with FlashAttention's running max, sum and
    accumulator: a fold whose carries have the sequence's length."""
    def step(carry, k):
        m, l, acc = carry
        score = s @ k                                      # (L,)
        m_new = ft.maximum(m, score)
        correction = ft.exp(m - m_new)
        p = ft.exp(score - m_new)
        return (m_new, l * correction + p,
                acc * correction[:, None] + p[:, None] * k[None, :])
    m0 = s[:, 0] * 0 - np.inf
    m, l, acc = ft.fold(step, s, (m0, s[:, 0] * 0, s * 0))
    return acc / l[:, None]


@pytest.mark.parametrize("lengths", ["mixed", "empty_batch"])
def test_fold_with_carries_of_the_elements_length(xs, lengths):
    def reference(s):
        if not len(s):
            return np.zeros((0, H))
        scores = s @ s.T
        p = np.exp(scores - scores.max(axis=1, keepdims=True))
        return (p / p.sum(axis=1, keepdims=True)) @ s
    data = batch(LENGTHS[lengths])
    check(ft.map(online_softmax_attention, xs), [reference(s) for s in data], data)


def test_scan_with_a_carry_of_the_elements_length_runs_on_the_host(xs):
    result = ft.map(lambda s: ft.sum(ft.scan(lambda c, x: c + x, s, s * 0), axis=0), xs)
    compiled = compile_on_host(result, "a fold is")
    for lengths in ("mixed", "empty_batch", "all_empty"):
        data = batch(LENGTHS[lengths])
        # every row of the carry gets every x: step t's carry rows are
        # x_0+..+x_t
        want = [np.broadcast_to(np.cumsum(s, axis=0).sum(axis=0), s.shape)
                for s in data]
        for got in (compiled(xs=data), ft.evaluate_numpy(result, xs=data)):
            assert len(got.tolist()) == len(want)
            for g, w in zip(got.tolist(), want):
                np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-12)


def test_new_lengths_reuse_the_program(xs):
    ys = ft.map(lambda s: ft.scan(lambda h, x: ft.tanh(x + h @ U), s,
                                  ft.zeros(H)), xs)
    f = ft.compile(ys)
    for seed, lengths in enumerate([(4, 1), (0, 7, 2, 2), (1,)]):
        data = batch(lengths, seed)
        for got, s in zip(f(xs=data).tolist(), data):
            np.testing.assert_allclose(got, rnn_numpy(s)[0], rtol=1e-12,
                                       atol=1e-12)


# {{{ folds whose carry is a FractalTensor (FractalTensor's stacked RNN)

class Layer(NamedTuple):
    W: object
    b: object


def test_fold_over_layers_with_a_fractal_tensor_carry(xs):
    params = Layer(ft.make_placeholder("W", (3, H, H), np.float64),
                   ft.make_placeholder("b", (3, H), np.float64))

    def layer(batch, p):
        return ft.map(lambda s: ft.scan(lambda h, x: ft.tanh(x + h @ U),
                                        s @ p.W + p.b, ft.zeros(H)), batch)
    result = ft.fold(layer, params, xs)
    bias = np.linspace(-1, 1, 3 * H).reshape(3, H)
    data = batch(LENGTHS["mixed"])

    def reference(s):
        for w, b in zip(LAYERS, bias):
            s = rnn_numpy(s @ w + b)[0]
        return s
    check(result, [reference(s) for s in data], data, W=LAYERS, b=bias)


def test_fold_with_a_fractal_tensor_carry_and_an_array_carry(xs):
    # a bundle carry: the batch and a running (n, H) sum of its layers
    def layer(carry, w):
        batch, total = carry
        new = ft.tanh(batch @ w)
        return new, total + ft.map(lambda s: ft.sum(s, axis=0), new)
    result = ft.fold(layer, ft.asarray(LAYERS[:2]),
                     (xs, ft.map(lambda s: ft.sum(s, axis=0), xs)))
    data = batch(LENGTHS["mixed"])
    want_batch, want_total = [], []
    for s in data:
        total = s.sum(axis=0)
        for w in LAYERS[:2]:
            s = np.tanh(s @ w)
            total = total + s.sum(axis=0)
        want_batch.append(s)
        want_total.append(total)
    check(result[0], want_batch, data)
    check(result[1], want_total, data)


def test_fractal_tensor_carry_bad_uses(xs):
    layers = ft.make_placeholder("layers", (3, H, H), np.float64)
    n_layers = ft.make_placeholder("many", (ft.make_size_param("d"), H, H),
                                   np.float64)
    # (a symbolic number of steps cannot be unrolled: the lengths must stay)
    with pytest.raises(NotImplementedError, match="changes the lengths of "
                       "carry leaf 0"):
        ft.fold(lambda b, w: ft.map(lambda s: s[1:] @ w, b), n_layers, xs)
    with pytest.raises(ValueError, match="elem_shape"):
        ft.fold(lambda b, w: b @ ft.ones((H, 2)), layers, xs)
    with pytest.raises(TypeError, match="FractalTensor"):
        ft.fold(lambda b, w: ft.flatten(b), layers, xs)

# }}}


def test_step_reads_a_captured_array_at_the_elements_index(xs):
    # each sequence has its own memory row: mem[i] with i zipped from arange
    mem = ft.make_placeholder("mem", (ft.make_size_param("m"), H, H), np.float64)
    result = ft.map(lambda s, i: ft.scan(lambda h, x: ft.tanh(x + mem[i] @ h), s,
                                         ft.zeros(H)),
                    xs, ft.arange(ft.lengths(xs).shape[0]))
    data = batch(LENGTHS["mixed"])
    memory = np.random.default_rng(3).standard_normal((5, H, H)) * 0.5
    want = []
    for i, s in enumerate(data):
        h, out = np.zeros(H), []
        for x in s:
            h = np.tanh(x + memory[i] @ h)
            out.append(h)
        want.append(np.array(out).reshape(len(s), H))
    check(result, want, data, mem=memory)
