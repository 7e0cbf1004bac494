# SPDX-License-Identifier: MIT
"""Carry-independent work hoisted out of scan bodies
(:mod:`ftlazy.transform.hoist_scans`): what leaves the body, stated on the
lowered DAG for CPU and GPU profiles, what stays (work that reads a carry,
elementwise work, broadcasts after a product, rows of a ragged scan read at
other rows), and compiled results (on every profile flavour, see
conftest.py) checked against numpy loops and the reference evaluator:
dense RNNs, LSTM-like bundles, RNNs over FractalTensors (empty and length-1
sequences), nested scans, and a gather whose index check is kept."""

from __future__ import annotations

import numpy as np
import pytest

import ftlazy as ft
from ftlazy.fractal import Scan
from ftlazy.fractal_tensor import RaggedScan
from ftlazy.node import topological_order
from ftlazy.scalar_expr import Reduce, iter_subexpressions
from ftlazy.target.loopy.jagged_program import jagged_lowering
from ftlazy.target.loopy.lowering import lower_for_codegen
from ftlazy.target.loopy.profile import synthetic_profile
from ftlazy.transform.hoist_scans import hoist_scans
from ftlazy.transform.lower import lower_to_index_lambdas
from helpers import JAGGED_LENGTHS

H, F, B = 4, 3, 2
RNG = np.random.default_rng(5)
W = RNG.standard_normal((F, H)) * 0.5
U = RNG.standard_normal((H, H)) * 0.5
CPU = synthetic_profile("cpu", vector_width=4)
GPU = synthetic_profile("gpu", vector_width=1)
TOL = dict(rtol=1e-12, atol=1e-12)


def placeholders():
    return (ft.make_placeholder("W", (F, H), np.float64),
            ft.make_placeholder("U", (H, H), np.float64))


# {{{ the lowered DAG

def reduces(node):
    return hasattr(node, "expr") and any(
        isinstance(e, Reduce) for e in iter_subexpressions(node.expr))


def scans(result, profile=None):
    """The scans of *result* lowered for code generation (for *profile*;
    None: hoisting everywhere)."""
    roots = result if isinstance(result, dict) else {"r": result}
    lowered, _ = lower_for_codegen(roots, profile)
    return [n for n in topological_order(list(lowered.values()))
            if isinstance(n, Scan)]


def body_reductions(scan):
    return sum(reduces(n) for n in topological_order(list(scan.body.outputs)))


def rnn(xs, h0, Wp, Up):
    return ft.scan(lambda h, x: ft.tanh(x @ Wp + h @ Up), xs, h0)


def test_product_leaves_the_body_of_a_coupled_scan_on_every_device():
    Wp, Up = placeholders()
    xs = ft.make_placeholder("xs", (7, F), np.float64)
    for profile in (CPU, GPU, None):
        (scan,) = scans(rnn(xs, ft.zeros(H), Wp, Up), profile)
        assert body_reductions(scan) == 1           # h @ U only
        assert scan.num_scanned == 2
        hoisted = scan.scanned[1]
        assert hoisted.shape == (7, H) and reduces(hoisted)


def test_independent_rows_keep_their_products_on_a_cpu():
    # a batch of rows: each CPU core runs the loop for its rows with the
    # product inside; a GPU takes the product off the sequential path
    Wp, Up = placeholders()
    xs = ft.make_placeholder("xs", (7, B, F), np.float64)
    h0 = ft.make_placeholder("h0", (B, H), np.float64)
    result = rnn(xs, h0, Wp, Up)
    (cpu,) = scans(result, CPU)
    (gpu,) = scans(result, GPU)
    assert (body_reductions(cpu), cpu.num_scanned) == (2, 1)
    assert (body_reductions(gpu), gpu.num_scanned) == (1, 2)
    assert gpu.scanned[1].shape == (7, B, H)


def lowered_scan(result):
    (scan,) = [n for n in topological_order(
        [lower_to_index_lambdas(result)]) if isinstance(n, Scan)]
    return scan


@pytest.mark.parametrize("step", [
    lambda h, x, Wp, Up: ft.tanh((x[:H] + h) @ Up),     # the product reads h
    lambda h, x, Wp, Up: h * 0.5 + ft.exp(x[:H]),       # elementwise only
    lambda h, x, Wp, Up: h @ Up + ft.sum(h) * x[:H],    # sums of the carry
])
def test_carry_dependent_or_cheap_work_stays(step):
    Wp, Up = placeholders()
    xs = ft.make_placeholder("xs", (7, H + 1), np.float64)
    scan = lowered_scan(ft.scan(lambda h, x: step(h, x, Wp, Up), xs,
                                ft.zeros(H)))
    assert hoist_scans({"s": scan})["s"] is scan


def test_broadcast_after_a_product_hoists_the_product_only():
    # per step, (x @ W) broadcast to (H, 32) is larger than the product:
    # the product (as (H, 1)) is hoisted, the broadcast stays in the body
    Wp, _ = placeholders()
    xs = ft.make_placeholder("xs", (7, F), np.float64)
    result = ft.scan(lambda c, x: c * 0.5 + (x @ Wp)[:, None] * ft.ones((H, 32)),
                     xs, ft.zeros((H, 32)))
    (scan,) = scans(result)
    assert body_reductions(scan) == 0
    assert scan.scanned[1].shape == (7, H, 1)


def test_invariant_product_is_computed_once_outside():
    Wp, Up = placeholders()
    V = ft.make_placeholder("V", (H, F), np.float64)
    xs = ft.make_placeholder("xs", (7, H), np.float64)
    result = ft.scan(lambda h, x: ft.tanh(h @ (V @ Wp) + x), xs, ft.zeros(H))
    (scan,) = scans(result)
    assert body_reductions(scan) == 1            # h @ (V W), V W outside
    assert [a.shape for a in scan.captured if reduces(a)] == [(H, H)]


def jagged_rnn(xs, Wp, Up):
    return ft.map(lambda s: rnn(s, ft.zeros(H), Wp, Up), xs)


def test_product_over_the_packed_rows_of_a_ragged_scan():
    Wp, Up = placeholders()
    xs = ft.make_jagged_placeholder("xs", (F,), np.float64, depth=2)
    dense = dict(jagged_lowering(jagged_rnn(xs, Wp, Up)).dense.items())
    (cpu,) = scans(dense, CPU)
    (gpu,) = scans(dense, GPU)
    assert isinstance(gpu, RaggedScan) and body_reductions(gpu) == 1
    assert body_reductions(cpu) == 2
    assert gpu.num_ragged == 2 and gpu.offsets is cpu.offsets
    # one product over the flat values: as many rows as the packed input
    packed, hoisted = gpu.scanned[:2]
    assert hoisted.shape == (packed.shape[0], H) and reduces(hoisted)


def test_rows_read_at_other_rows_stay_in_a_ragged_scan():
    # each element's sum, read by every step: not a row of the step
    Wp, Up = placeholders()
    xs = ft.make_jagged_placeholder("xs", (F,), np.float64, depth=2)
    result = ft.map(lambda s: ft.scan(
        lambda h, x: ft.tanh((x * ft.sum(s, axis=0)) @ Wp + h @ Up), s,
        ft.zeros(H)), xs)
    dense = dict(jagged_lowering(result).dense.items())
    (scan,) = scans(dense, GPU)
    assert body_reductions(scan) == 2 and scan.num_ragged == 1

# }}}


# {{{ compiled results

def rnn_numpy(s, h):
    states = []
    for x in s:
        h = np.tanh(x @ W + h @ U)
        states.append(h)
    return np.array(states).reshape((len(s),) + np.shape(h)), h


def test_dense_rnns_single_and_batched():
    T = ft.make_size_param("T")
    Wp, Up = placeholders()
    single = rnn(ft.make_placeholder("x1", (T, F), np.float64), ft.zeros(H),
                 Wp, Up)
    batched = ft.fold(lambda h, x: ft.tanh(x @ Wp + h @ Up),
                      ft.make_placeholder("xb", (T, B, F), np.float64),
                      ft.make_placeholder("h0", (B, H), np.float64))
    result = ft.make_dict_of_named_arrays({"single": single,
                                           "batched": batched})
    f = ft.compile(result)
    h0 = RNG.standard_normal((B, H))
    for t in (0, 1, 6):
        x1, xb = RNG.standard_normal((t, F)), RNG.standard_normal((t, B, F))
        inputs = dict(x1=x1, xb=xb, h0=h0, W=W, U=U)
        want = {"single": rnn_numpy(x1, np.zeros(H))[0],
                "batched": rnn_numpy(xb, h0)[1]}
        for got in (f(**inputs), ft.evaluate_numpy(result, **inputs)):
            for k in want:
                np.testing.assert_allclose(got[k], want[k], **TOL)


def test_lstm_like_bundles():
    Wp, Up = placeholders()
    Vp = ft.make_placeholder("V", (F, H), np.float64)
    xs = ft.make_placeholder("xs", (5, B, F), np.float64)
    ys = ft.make_placeholder("ys", (5, B, F), np.float64)

    def step(carry, pair):
        h, c = carry
        x, y = pair
        c = ft.tanh(x @ Wp + c * (1 / (1 + ft.exp(-(y @ Vp)))))
        return (ft.tanh(h @ Up + c), c)
    h_c = ft.scan(step, (xs, ys), (ft.zeros((B, H)), ft.ones((B, H))))
    result = ft.make_dict_of_named_arrays({"h": h_c[0], "c": h_c[1]})
    f = ft.compile(result)
    V = RNG.standard_normal((F, H))
    xv, yv = RNG.standard_normal((5, B, F)), RNG.standard_normal((5, B, F))
    h, c, hs, cs = np.zeros((B, H)), np.ones((B, H)), [], []
    for x, y in zip(xv, yv):
        c = np.tanh(x @ W + c / (1 + np.exp(-(y @ V))))
        h = np.tanh(h @ U + c)
        hs.append(h)
        cs.append(c)
    got = f(xs=xv, ys=yv, W=W, U=U, V=V)
    evaluated = ft.evaluate_numpy(result, xs=xv, ys=yv, W=W, U=U, V=V)
    for g, e, want in ((got["h"], evaluated["h"], hs),
                       (got["c"], evaluated["c"], cs)):
        np.testing.assert_allclose(g, np.array(want), **TOL)
        np.testing.assert_allclose(e, np.array(want), **TOL)


def test_jagged_rnn_over_every_length_distribution():
    Wp, Up = placeholders()
    xs = ft.make_jagged_placeholder("xs", (F,), np.float64, depth=2)
    result = jagged_rnn(xs, Wp, Up)
    f = ft.compile(result)
    for lengths in JAGGED_LENGTHS.values():
        data = [RNG.standard_normal((n, F)) for n in lengths]
        want = [rnn_numpy(s, np.zeros(H))[0] for s in data]
        for got in (f(xs=data, W=W, U=U),
                    ft.evaluate_numpy(result, xs=data, W=W, U=U)):
            assert len(got) == len(data)
            for g, w in zip(got.tolist(), want):
                np.testing.assert_allclose(g, w, **TOL)


def test_jagged_fold_with_step_reductions():
    # x @ W and the 0-d sum(x * x) per step: one packed row each
    Wp, Up = placeholders()
    xs = ft.make_jagged_placeholder("xs", (F,), np.float64, depth=2)
    result = ft.map(lambda s: ft.fold(
        lambda h, x: ft.tanh(x @ Wp + h @ Up + ft.sum(x * x)), s,
        ft.ones(H)), xs)
    dense = dict(jagged_lowering(result).dense.items())
    (scan,) = scans(dense, GPU)
    assert body_reductions(scan) == 1 and scan.num_ragged == 3
    f = ft.compile(result)
    for lengths in (JAGGED_LENGTHS["mixed"], JAGGED_LENGTHS["all_empty"]):
        data = [RNG.standard_normal((n, F)) for n in lengths]
        want = []
        for seq in data:
            h = np.ones(H)
            for x in seq:
                h = np.tanh(x @ W + h @ U + np.sum(x * x))
            want.append(h)
        for got in (f(xs=data, W=W, U=U),
                    ft.evaluate_numpy(result, xs=data, W=W, U=U)):
            np.testing.assert_allclose(got, np.array(want).reshape(-1, H),
                                       **TOL)


def test_nested_scans_hoist_the_inner_product():
    # each outer step folds an RNN over its row from the outer carry
    Wp, Up = placeholders()
    xs = ft.make_placeholder("xs", (4, 3, F), np.float64)
    result = ft.scan(lambda c, row: 0.5 * c + ft.fold(
        lambda h, x: ft.tanh(x @ Wp + h @ Up + c), row, ft.zeros(H)),
        xs, ft.zeros(H))
    (outer,) = scans(result, CPU)
    (inner,) = [n for n in topological_order(list(outer.body.outputs))
                if isinstance(n, Scan)]
    assert body_reductions(inner) == 1
    xv = RNG.standard_normal((4, 3, F))
    c, want = np.zeros(H), []
    for row in xv:
        h = np.zeros(H)
        for x in row:
            h = np.tanh(x @ W + h @ U + c)
        c = 0.5 * c + h
        want.append(c)
    for got in (ft.compile(result)(xs=xv, W=W, U=U),
                ft.evaluate_numpy(result, xs=xv, W=W, U=U)):
        np.testing.assert_allclose(got, np.array(want), **TOL)


def test_hoisted_gather_keeps_its_index_check():
    E = ft.make_placeholder("E", (6, F), np.float64)
    Wp, Up = placeholders()
    tokens = ft.make_placeholder("tokens", (5,), np.int64)
    result = ft.scan(lambda h, t: ft.tanh(ft.gather(E, t) @ Wp + h @ Up),
                     tokens, ft.zeros(H))
    (scan,) = scans(result, CPU)
    assert body_reductions(scan) == 1
    f = ft.compile(result)
    Ev = RNG.standard_normal((6, F))
    tv = np.array([1, 5, 0, -1, 2])
    np.testing.assert_allclose(f(E=Ev, tokens=tv, W=W, U=U),
                               rnn_numpy(Ev[tv], np.zeros(H))[0], **TOL)
    with pytest.raises(IndexError, match="gather index 6"):
        f(E=Ev, tokens=np.array([1, 6, 0, 0, 0]), W=W, U=U)

# }}}
