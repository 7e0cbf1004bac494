# SPDX-License-Identifier: MIT
"""Scans and folds nested in the body of a scan or fold, compiled through
OpenCL (on every profile flavour, see conftest.py) and checked against
numpy loops and the reference evaluator: inner folds used by the outer
step, inner scans whose stacked results the outer scan stacks, inner scans
reading an outer carry, bundles of carries, inner lengths that are size
parameters (0 and 1 included) or static, an empty outer loop, a nesting
three deep, and an RNN over each element inside a fold over the outer list
of a FractalTensor."""

from __future__ import annotations

import numpy as np
import pytest

import ftlazy as ft
from helpers import JAGGED_LENGTHS

H = 3
RNG = np.random.default_rng(11)
W = RNG.standard_normal((H, H)) * 0.5
LAYERS = RNG.standard_normal((2, H, H)) * 0.5
TOL = dict(rtol=1e-12, atol=1e-12)


# {{{ numpy references (loops over the steps)

def rnn_numpy(s, h, w=W):
    """An RNN over sequence *s* from state *h*: its states and last state."""
    states = []
    for x in s:
        h = np.tanh(h @ w + x)
        states.append(h)
    return np.array(states).reshape(len(s), H), h


def fold_in_scan_numpy(xs, w):
    """Outer carry c; each step folds an RNN over its row, started from
    zeros and reading c, then c = 0.5 c + that RNN's last state."""
    c, out = np.zeros(H), []
    for row in xs:
        h = np.zeros(H)
        for x in row:
            h = np.tanh(h @ w + x + c)
        c = 0.5 * c + h
        out.append(c)
    return np.array(out).reshape(len(xs), H)


def stacked_rows_numpy(xs):
    """Each outer step is an inner scan over the row pairing its inputs
    with the previous outer row (an outer carry); the outer scan stacks
    the inner scans' stacked states."""
    above, rows = np.zeros(xs.shape[1:]), []
    for row in xs:
        h, new = np.zeros(H), []
        for x, a in zip(row, above):
            h = np.sin(h + x) * 0.5 + a
            new.append(h)
        above = np.array(new).reshape(row.shape)
        rows.append(above)
    return np.array(rows).reshape(xs.shape)


def bundles_numpy(xs, ks):
    """Bundles of carries in both loops: outer (total, count), inner
    (state, running max); the inner steps also read the outer count."""
    total, count = np.zeros(H), np.int64(0)
    totals, counts = [], []
    for row, k in zip(xs, ks):
        h, m = np.zeros(H), np.full(H, -1.0)
        for x in row:
            h = np.cos(h) + x * count
            m = np.maximum(m, h)
        total = total + m - h
        count = count + k
        totals.append(total)
        counts.append(count)
    return (np.array(totals).reshape(len(xs), H),
            np.array(counts, dtype=np.int64))


def layers_numpy(xs, layers):
    """A fold over static layers per step of an outer scan."""
    c, out = np.zeros(H), []
    for row in xs:
        h = row.sum(axis=0) + c
        for w in layers:
            h = np.tanh(h @ w)
        c = h
        out.append(c)
    return np.array(out).reshape(len(xs), H)


def three_deep_numpy(xs, subs):
    """scan(rows) of fold(columns) of fold(two fixed sub-steps)."""
    c, out = np.zeros(H), []
    for row in xs:
        h = c
        for x in row:
            g = h
            for sub in subs:
                g = np.tanh(g * 0.5 + x * sub)
            h = g + 0.1 * h
        c = h
        out.append(c)
    return np.array(out).reshape(len(xs), H)

def stacked_rnn_numpy(batch, layers):
    """FractalTensor's stacked RNN: per layer, an RNN over every sequence
    of the batch, which the next layer reads."""
    for w in layers:
        batch = [rnn_numpy(s, np.zeros(H), w)[0] for s in batch]
    return batch


def gathered_numpy(xs, table, ids, w):
    """A gather (with its run-time index check) in the outer body beside
    an inner fold that captures a weight."""
    c, out = np.zeros(H), []
    for row, i in zip(xs, ids):
        h = c
        for x in row:
            h = np.tanh(h @ w + 2.0 * x)
        c = h + table[i]
        out.append(c)
    return np.array(out).reshape(len(xs), H)

# }}}


@pytest.fixture(scope="module")
def dense():
    """One program (compiled once per flavour) of every dense case."""
    Ls, Lt = ft.make_size_param("Ls"), ft.make_size_param("Lt")
    xs = ft.make_placeholder("xs", (Ls, Lt, H), np.float64)
    ks = ft.make_placeholder("ks", (Ls,), np.int64)
    w = ft.make_placeholder("w", (H, H), np.float64)
    layers = ft.make_placeholder("layers", (2, H, H), np.float64)
    subs = ft.make_placeholder("subs", (2,), np.float64)
    table = ft.make_placeholder("table", (5, H), np.float64)

    def fold_step(c, row):
        last = ft.fold(lambda h, x: ft.tanh(h @ w + x + c), row, ft.zeros(H))
        return 0.5 * c + last

    def rows_step(above, row):
        return ft.scan(lambda h, xa: ft.sin(h + xa[0]) * 0.5 + xa[1],
                       (row, above), ft.zeros(H))

    def inner_bundle(carry, x, count):
        h, m = carry
        h = ft.cos(h) + x * count
        return h, ft.maximum(m, h)

    def bundle_step(carry, step):
        total, count = carry
        row, k = step
        h, m = ft.fold(lambda hm, x: inner_bundle(hm, x, count), row,
                       (ft.zeros(H), ft.full((H,), -1.0)))
        return total + m - h, count + k

    def layers_step(c, row):
        return ft.fold(lambda h, wl: ft.tanh(h @ wl), layers,
                       ft.sum(row, axis=0) + c)

    def three_deep_step(c, row):
        def column(h, x):
            g = ft.fold(lambda g, s: ft.tanh(g * 0.5 + x * s), subs, h)
            return g + 0.1 * h
        return ft.fold(column, row, c)

    def gathered_step(c, step):
        row, i = step
        last = ft.fold(lambda h, x: ft.tanh(h @ w + x * 2.0), row, c)
        return last + ft.gather(table, i[None])[0]

    def rnn_layer(batch, wl):
        return ft.map(lambda s: ft.scan(lambda h, x: ft.tanh(h @ wl + x), s,
                                        ft.zeros(H)), batch)

    totals, counts = ft.scan(bundle_step, (xs, ks),
                             (ft.zeros(H), ft.zeros((), np.int64)))
    program = ft.make_dict_of_named_arrays({
        "fold_in_scan": ft.scan(fold_step, xs, ft.zeros(H)),
        "stacked_rows": ft.scan(rows_step, xs, ft.zeros((Lt, H))),
        "totals": totals, "counts": counts,
        "layers": ft.scan(layers_step, xs, ft.zeros(H)),
        "three_deep": ft.scan(three_deep_step, xs, ft.zeros(H)),
        "gathered": ft.scan(gathered_step, (xs, ks + 3), ft.zeros(H)),
        # a fold over layers of RNNs mapped over the rows (batched scans)
        "stacked_rnn": ft.fold(rnn_layer, layers, xs),
    })
    return program, ft.compile(program)


# (outer length, inner length): an empty outer loop, empty and length-1
# inner loops, and longer ones
@pytest.mark.parametrize("ls, lt", [(4, 5), (3, 1), (2, 0), (0, 3)])
def test_dense_nested_scans(dense, ls, lt):
    program, f = dense
    rng = np.random.default_rng(ls * 10 + lt)
    inputs = dict(xs=rng.standard_normal((ls, lt, H)),
                  ks=rng.integers(-3, 2, ls), w=W, layers=LAYERS,
                  subs=np.array([1.0, 2.0]), table=rng.standard_normal((5, H)))
    totals, counts = bundles_numpy(inputs["xs"], inputs["ks"])
    want = {"fold_in_scan": fold_in_scan_numpy(inputs["xs"], W),
            "stacked_rows": stacked_rows_numpy(inputs["xs"]),
            "totals": totals, "counts": counts,
            "layers": layers_numpy(inputs["xs"], LAYERS),
            "three_deep": three_deep_numpy(inputs["xs"], inputs["subs"]),
            "gathered": gathered_numpy(inputs["xs"], inputs["table"],
                                       inputs["ks"] + 3, W),
            "stacked_rnn": np.array(stacked_rnn_numpy(
                inputs["xs"], LAYERS)).reshape(ls, lt, H)}
    for got in (f(**inputs), ft.evaluate_numpy(program, **inputs)):
        for name, expected in want.items():
            assert got[name].shape == expected.shape, name
            assert got[name].dtype == expected.dtype, name
            np.testing.assert_allclose(got[name], expected, err_msg=name, **TOL)


def test_index_check_beside_a_nested_scan(dense):
    """The gather's run-time check becomes a carry of the outer scan; an
    index out of range is reported (the inner fold's inputs unchanged)."""
    program, f = dense
    inputs = dict(xs=np.zeros((2, 2, H)), ks=np.array([0, 3]), w=W,
                  layers=LAYERS, subs=np.array([1.0, 2.0]),
                  table=np.zeros((5, H)))
    with pytest.raises(IndexError, match="out of range"):
        f(**inputs)


def test_nested_scans_run_in_one_work_group(dense):
    """Both loops of a nest are sequential loops of one kernel (the inner
    inside the outer), and the plan runs them in one work group."""
    program, f = dense
    assert "row_blocked" not in str(f.plan)
    kernels = [k for k in f.source.split("__kernel")[1:] if "for (int _ft_t" in k]
    nested = [k for k in kernels if k.count("for (int _ft_t") >= 2]
    assert nested, "no kernel with a time loop inside a time loop"


@pytest.fixture(scope="module")
def jagged():
    """A fold over the outer list of a FractalTensor whose step runs an
    RNN (ft.scan) over the element's rows, and one whose step folds it."""
    xs = ft.make_jagged_placeholder("xs", (H,), np.float64, depth=2)
    w = ft.make_placeholder("w", (H, H), np.float64)
    layers = ft.make_placeholder("layers", (2, H, H), np.float64)

    def rnn_layer(batch, wl):
        return ft.map(lambda s: ft.scan(lambda h, x: ft.tanh(h @ wl + x), s,
                                        ft.zeros(H)), batch)

    def rnn(s):
        return ft.scan(lambda h, x: ft.tanh(h @ w + x), s, ft.zeros(H))

    program = ft.make_dict_of_named_arrays({
        # the states of each element's RNN, summed over its rows
        "sum_of_states": ft.fold(lambda c, s: c + ft.sum(rnn(s), axis=0), xs,
                                 ft.zeros(H)),
        # each element's last state, read by the next element's RNN
        "chained": ft.scan(lambda c, s: ft.fold(
            lambda h, x: ft.tanh(h @ w + x), s, c), xs, ft.zeros(H)),
    })
    # FractalTensor's stacked RNN: a fold over layers whose carry is the
    # batch, each step an RNN over every sequence
    stacked = ft.fold(rnn_layer, layers, xs)
    return program, ft.compile(program), stacked, ft.compile(stacked)


@pytest.mark.parametrize("lengths", list(JAGGED_LENGTHS))
def test_rnn_per_element_in_a_fold_over_a_fractaltensor(jagged, lengths):
    program, f, stacked, f_stacked = jagged
    rng = np.random.default_rng(3)
    data = [rng.standard_normal((n, H)) for n in JAGGED_LENGTHS[lengths]]
    total, chained, h = np.zeros(H), [], np.zeros(H)
    for s in data:
        total = total + rnn_numpy(s, np.zeros(H))[0].sum(axis=0)
        h = rnn_numpy(s, h)[1]
        chained.append(h)
    want = {"sum_of_states": total,
            "chained": np.array(chained).reshape(len(data), H)}
    for got in (f(xs=data, w=W), ft.evaluate_numpy(program, xs=data, w=W)):
        for name, expected in want.items():
            assert got[name].shape == expected.shape, name
            np.testing.assert_allclose(got[name], expected, err_msg=name, **TOL)
    want = stacked_rnn_numpy(data, LAYERS)
    for got in (f_stacked(xs=data, layers=LAYERS),
                ft.evaluate_numpy(stacked, xs=data, layers=LAYERS)):
        got = got.tolist()
        assert len(got) == len(want)
        for g, expected in zip(got, want):
            assert g.shape == expected.shape
            np.testing.assert_allclose(g, expected, **TOL)


def test_fold_in_a_folds_step_over_each_sequence():
    # (loops of barrier-separated stages in a loop on the GPU flavour: the
    # barrier probe's nested kernel keeps the optimizer away where needed)
    xs = ft.make_jagged_placeholder("xs", (H,), np.float64, depth=2)
    result = ft.map(lambda s: ft.fold(
        lambda h, x: ft.fold(lambda g, y: ft.tanh(g + y), ft.stack([x, h]), h),
        s, ft.zeros(H)), xs)

    def reference(s):
        h = np.zeros(H)
        for x in s:
            h = np.tanh(np.tanh(h + x) + h)
        return h

    compiled = ft.compile(result)
    rng = np.random.default_rng(3)
    for lengths in [(0, 2, 1, 3), (5,), (), (1, 1, 0, 7, 2, 3, 4, 5, 6, 1)]:
        data = [rng.standard_normal((n, H)) for n in lengths]
        want = np.array([reference(s) for s in data]).reshape(len(data), H)
        np.testing.assert_allclose(compiled(xs=data), want, rtol=1e-12,
                                   atol=1e-12)
