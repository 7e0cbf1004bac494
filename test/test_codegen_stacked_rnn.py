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
        # ... as one scan's loop inside a loop over the layers
        assert all(plan.scans[s].rolled_layers == depth for s in scans)
        assert compiled.source.count(f"_ft_layer1 <= {depth - 1};") == 1
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


def _params(cell: str, depth: int, seed: int) -> dict:
    gates = CELLS[cell][1]
    rng = np.random.default_rng(seed)
    return {"W": (rng.standard_normal((depth, H, gates * H)) * 0.5).astype(np.float32),
            "U": (rng.standard_normal((depth, H, gates * H)) * 0.5).astype(np.float32),
            "b": (rng.standard_normal((depth, gates * H)) * 0.1).astype(np.float32)}


def _check(compiled, result, cell, p, layers=None,
           lengths=(3, 0, 7, 1, 9, 2, 5, 4, 6, 8)):
    """*compiled* and the reference evaluator of *result* on inputs *p*
    against the layers *layers* (default *p*, in order) in numpy."""
    rng = np.random.default_rng(len(lengths))
    data = [rng.standard_normal((n, H)).astype(np.float32) for n in lengths]
    want = [stacked_numpy(cell, s, p if layers is None else layers) for s in data]
    for got in (compiled(xs=data, **p), ft.evaluate_numpy(result, xs=data, **p)):
        for g, w in zip(got.tolist(), want, strict=True):
            np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-5)


def test_rolled_layers_generate_one_layers_code():
    """However many layers, a rolled chain's code is one layer's: the
    sources of 2 and 6 layers differ only in the layer loop's bound."""
    sources = {}
    for depth in (2, 6):
        result = stacked("lstm", depth)
        compiled = ft.compile(result)
        _check(compiled, result, "lstm", _params("lstm", depth, depth))
        sources[depth] = compiled.source
    if compiled.plan.profile.kind != "cpu":
        pytest.skip("chains of scans are CPU plans")
    assert sources[2].replace("_ft_layer1 <= 1;", "_ft_layer1 <= 5;") == sources[6]


def test_reversed_layers_roll():
    """Layers taking their parameters last first (slices ``W[c - k]``) roll
    too."""
    step, gates, init, output = CELLS["tanh"]
    depth = 3
    xs = ft.make_jagged_placeholder("xs", (H,), np.float32, depth=2)
    W = ft.make_placeholder("W", (depth, H, H), np.float32)
    U = ft.make_placeholder("U", (depth, H, H), np.float32)
    b = ft.make_placeholder("b", (depth, H), np.float32)

    def layer(batch, k):
        zeros = ft.zeros(H, np.float32)
        return ft.map(lambda s: ft.scan(
            lambda h, xw: step(h, xw, U[k], ft.tanh), s @ W[k] + b[k],
            zeros), batch)
    result = xs
    for k in reversed(range(depth)):
        result = layer(result, k)
    compiled = ft.compile(result)
    p = _params("tanh", depth, 7)
    reversed_p = {name: v[::-1] for name, v in p.items()}
    _check(compiled, result, "tanh", p, reversed_p)
    if compiled.plan.profile.kind == "cpu":
        rolled, = compiled.plan.rolled_chains.values()
        assert rolled.layers == depth
        assert {(c, s) for _, (_, c, s) in rolled.slices} == {(depth - 1, -1)}


def test_layers_of_separate_arrays_run_unrolled():
    """A chain whose layers read separate parameter arrays (not slices of
    one) is not rolled, and still right."""
    step = CELLS["tanh"][0]
    xs = ft.make_jagged_placeholder("xs", (H,), np.float32, depth=2)
    Ws = [ft.make_placeholder(f"W{k}", (H, H), np.float32) for k in range(2)]
    U = ft.make_placeholder("U", (H, H), np.float32)

    def layer(batch, W):
        return ft.map(lambda s: ft.scan(
            lambda h, xw: step(h, xw, U, ft.tanh), s @ W,
            ft.zeros(H, np.float32)), batch)
    result = layer(layer(xs, Ws[0]), Ws[1])
    compiled = ft.compile(result)
    rng = np.random.default_rng(5)
    wv = [(rng.standard_normal((H, H)) * 0.5).astype(np.float32) for _ in Ws]
    uv = (rng.standard_normal((H, H)) * 0.5).astype(np.float32)
    p = {"W": np.stack(wv), "U": np.stack([uv, uv]), "b": np.zeros((2, H), np.float32)}
    lengths = (4, 0, 6, 1)
    data = [rng.standard_normal((n, H)).astype(np.float32) for n in lengths]
    got = compiled(xs=data, W0=wv[0], W1=wv[1], U=uv)
    for g, s in zip(got.tolist(), data, strict=True):
        np.testing.assert_allclose(g, stacked_numpy("tanh", s, p), rtol=1e-4, atol=1e-5)
    assert not compiled.plan.rolled_chains


def test_intermediate_layer_as_an_output_is_not_overwritten():
    """A chain whose first layer's results are also an output keeps its
    scans apart: rolled, its layers would overwrite them in place."""
    step = CELLS["tanh"][0]
    xs = ft.make_jagged_placeholder("xs", (H,), np.float32, depth=2)
    W = ft.make_placeholder("W", (2, H, H), np.float32)
    U = ft.make_placeholder("U", (2, H, H), np.float32)

    def layer(batch, k):
        return ft.map(lambda s: ft.scan(
            lambda h, xw: step(h, xw, U[k], ft.tanh), s @ W[k],
            ft.zeros(H, np.float32)), batch)
    first = layer(xs, 0)
    result = {"first": first.values, "second": layer(first, 1).values}
    compiled = ft.compile(result)
    rng = np.random.default_rng(6)
    p = {"W": (rng.standard_normal((2, H, H)) * 0.5).astype(np.float32),
         "U": (rng.standard_normal((2, H, H)) * 0.5).astype(np.float32),
         "b": np.zeros((2, H), np.float32)}
    lengths = (4, 0, 6, 1)
    data = [rng.standard_normal((n, H)).astype(np.float32) for n in lengths]
    got = compiled(xs=data, W=p["W"], U=p["U"])
    one = {k: v[:1] for k, v in p.items()}
    np.testing.assert_allclose(
        got["first"], np.concatenate([stacked_numpy("tanh", s, one) for s in data]),
        rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(
        got["second"], np.concatenate([stacked_numpy("tanh", s, p) for s in data]),
        rtol=1e-4, atol=1e-5)
    assert not compiled.plan.rolled_chains
