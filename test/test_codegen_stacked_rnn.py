# SPDX-License-Identifier: MIT
"""Stacked RNNs over FractalTensors: a fold over layers whose carry is the
batch of sequences, each layer a map of a scan over the sequence's rows (the
shape of J10 in ``benchmarks/bench_jagged_sequences.py``), compiled once and
run over several length distributions (empty sequences, an empty batch,
length-1 sequences, one long sequence among short ones), checked against a
per-sequence numpy loop and the reference evaluator on every profile
flavour (see conftest.py)."""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np
import pytest

import ftlazy as ft
from ftlazy.fractal_tensor import RaggedScan
from helpers import JAGGED_LENGTHS

H = 4
DISTRIBUTIONS = [*JAGGED_LENGTHS.values(), (1, 1, 1),
                 # a long sequence among short ones in one row block, empty
                 # ones last (their rows start at the end of the packed rows)
                 (1, 9, 2, 0, 1, 3, 1, 2, 1, 0, 0)]


#: a layer's parameters and an LSTM's carry, as pytrees
Layer = NamedTuple("Layer", [("W", Any), ("U", Any), ("b", Any)])
State = NamedTuple("State", [("h", Any), ("c", Any)])


def sigmoid(v):
    return 1 / (1 + np.exp(-v)) if isinstance(v, np.ndarray) else 1 / (1 + ft.exp(-v))


def lstm_step(state, xw, U, tanh):
    g = xw + state.h @ U
    c = sigmoid(g[H:2 * H]) * state.c + sigmoid(g[:H]) * tanh(g[3 * H:])
    return State(sigmoid(g[2 * H:3 * H]) * tanh(c), c)


def rnn_step(h, xw, U, tanh):
    return tanh(xw + h @ U)


CELLS = {"lstm": (lstm_step, 4, lambda zeros: State(zeros, zeros),
                  lambda state: state.h),
         "tanh": (rnn_step, 1, lambda zeros: zeros, lambda h: h)}


def stacked(cell: str, depth: int) -> Any:
    """A *depth*-layer RNN of kind *cell* over the sequences of ``xs``."""
    step, gates, init, output = CELLS[cell]
    xs = ft.make_jagged_placeholder("xs", (H,), np.float32, depth=2)
    params = Layer(ft.make_placeholder("W", (depth, H, gates * H), np.float32),
                   ft.make_placeholder("U", (depth, H, gates * H), np.float32),
                   ft.make_placeholder("b", (depth, gates * H), np.float32))

    def layer(batch: Any, p: Layer) -> Any:
        zeros = ft.zeros(H, np.float32)
        return ft.map(lambda s: output(ft.scan(
            lambda state, xw: step(state, xw, p.U, ft.tanh),
            s @ p.W + p.b, init(zeros))), batch)
    return ft.fold(layer, params, xs)


def stacked_numpy(cell: str, seq: np.ndarray, p: dict) -> np.ndarray:
    step, _, init, output = CELLS[cell]
    for W, U, b in zip(p["W"], p["U"], p["b"]):
        state = init(np.zeros(H, np.float32))
        rows = []
        for xw in seq @ W + b:
            state = step(state, xw, U, np.tanh)
            rows.append(output(state))
        seq = np.array(rows, np.float32).reshape(len(seq), H)
    return seq


@pytest.mark.parametrize(("cell", "depth"), [("lstm", 2), ("tanh", 3)])
def test_stacked_rnn_over_length_distributions(cell, depth):
    gates = CELLS[cell][1]
    rng = np.random.default_rng(depth)
    p = {"W": (rng.standard_normal((depth, H, gates * H)) * 0.5).astype(np.float32),
         "U": (rng.standard_normal((depth, H, gates * H)) * 0.5).astype(np.float32),
         "b": (rng.standard_normal((depth, gates * H)) * 0.1).astype(np.float32)}
    result = stacked(cell, depth)
    compiled = ft.compile(result)
    plan = compiled.plan
    if plan.profile.kind == "cpu":
        # the layers' scans run in one kernel, one after the other
        scans = [s for s in plan.scans if isinstance(s, RaggedScan)]
        assert len(scans) == depth
        assert all(plan.scan_chains.get(s, (s,)) == tuple(scans) for s in scans)
        assert [plan.scans[s].chained for s in scans] == [False] + [True] * (depth - 1)
    for lengths in DISTRIBUTIONS:
        data = [rng.standard_normal((n, H)).astype(np.float32) for n in lengths]
        want = [stacked_numpy(cell, s, p) for s in data]
        for got in (compiled(xs=data, **p), ft.evaluate_numpy(result, xs=data, **p)):
            assert isinstance(got, ft.JaggedArray) and len(got) == len(data)
            for g, w in zip(got.tolist(), want):
                assert g.shape == w.shape
                np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-5)


def test_sunk_step_inputs_of_a_fold_with_per_row_carries():
    # a fold whose carry has a row per row of the element (each query's
    # running sum, as the online softmax of examples/flash_attention.py
    # keeps) over the rows of s @ W, sunk into the step: the sunk product
    # runs per element, not per packed row (it read offsets past their end)
    xs = ft.make_jagged_placeholder("xs", (H,), np.float64, depth=2)
    W = ft.make_placeholder("W", (H, H), np.float64)
    out = ft.map(lambda s: ft.fold(lambda c, k: c + ft.tanh(s @ k), s @ W,
                                   ft.zeros(s.shape[0])), xs)
    f = ft.compile(out)
    rng = np.random.default_rng(3)
    wv = rng.standard_normal((H, H))
    for lengths in [(0, 300, 1), (2, 0), ()]:
        data = [rng.standard_normal((n, H)) for n in lengths]
        want = [sum((np.tanh(s @ k) for k in s @ wv), np.zeros(len(s)))
                for s in data]
        for got in (f(xs=data, W=wv), ft.evaluate_numpy(out, xs=data, W=wv)):
            for g, w in zip(got.tolist(), want, strict=True):
                np.testing.assert_allclose(g, w, rtol=1e-12)
