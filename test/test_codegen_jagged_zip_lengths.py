# SPDX-License-Identifier: MIT
"""Maps over FractalTensors whose body reads another FractalTensor's
element at the map's own index (``ft.map(f, ys, ft.arange(n))`` reading
``xs[i]``): a zip of two FractalTensors whose elements have different
lengths, compiled (on every profile flavour, see conftest.py) and checked
against per-pair numpy loops and the reference evaluator, with empty
sources, empty targets, length 1 and a batch of no pairs."""

from __future__ import annotations

import numpy as np
import pytest

import ftlazy as ft
from helpers import compile_on_host

H = 3
RNG = np.random.default_rng(11)
W = RNG.standard_normal((H, H)) * 0.5
U = RNG.standard_normal((H, H)) * 0.5

#: (source length, target length) of each pair
PAIRS = {
    "mixed": [(4, 3), (0, 2), (6, 0), (2, 5), (1, 1)],
    "length_one": [(1, 1)],
    "all_empty": [(0, 0), (0, 3), (2, 0)],
    "no_pairs": [],
}


@pytest.fixture
def xs():
    return ft.make_jagged_placeholder("xs", (H,), np.float64, depth=2)


@pytest.fixture
def ys():
    return ft.make_jagged_placeholder("ys", (H,), np.float64, depth=2)


def pairs_data(pairs, seed=0):
    rng = np.random.default_rng(seed)
    return ([rng.standard_normal((ls, H)) for ls, _ in pairs],
            [rng.standard_normal((lt, H)) for _, lt in pairs])


def pair_index(ys):
    return ft.arange(ft.lengths(ys).shape[0])


def check_all_pairs(result, reference, **more):
    """*result* compiled once and evaluated on every distribution of
    :data:`PAIRS` against ``reference(x, y)`` per pair."""
    compiled = ft.compile(result)
    for name, pairs in PAIRS.items():
        x, y = pairs_data(pairs)
        want = [reference(a, b) for a, b in zip(x, y)]
        for got in (compiled(xs=x, ys=y, **more),
                    ft.evaluate_numpy(result, xs=x, ys=y, **more)):
            assert_per_pair(got, want, name)
    return compiled


def assert_per_pair(got, want, name):
    """*got* (a FractalTensor or dense result) equal to *want*, a list of
    each pair's result, shapes included."""
    if isinstance(got, ft.JaggedArray):
        got = got.tolist()
    assert len(got) == len(want), name
    for g, w in zip(got, want):
        assert np.shape(g) == np.shape(w), name
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-12, err_msg=name)


def test_reduction_over_the_other_elements_rows(xs, ys):
    # a jagged result like ys, reading a reduction over the pair's source
    out = ft.map(lambda y, i: y @ W + ft.sum(xs[i], axis=0), ys, pair_index(ys))
    compiled = check_all_pairs(out, lambda x, y: y @ W + x.sum(axis=0))
    # xs read at an index past its elements: an IndexError, as
    # evaluate_numpy's xs[i] raises
    x, y = pairs_data([(1, 2), (3, 1)])
    with pytest.raises(IndexError, match=r"index 1 is out of range for an outer "
                       r"list of 1 elements \(the body reads 'xs'"):
        compiled(xs=x[:1], ys=y)
    with pytest.raises(ValueError, match=r"'xs'.* has 2 elements, .*'ys' has 1"):
        compiled(xs=x, ys=y[:1])


def test_the_other_elements_length_as_a_value(xs, ys):
    # (xs[i].shape[0] as a value, the mean of its rows: the zipped
    # element's own length; it sent the map to the host before)
    out = ft.map(lambda y, i: y * xs[i].shape[0] + ft.sum(xs[i], axis=0)
                 / ft.maximum(xs[i].shape[0], 1), ys, pair_index(ys))
    compiled = check_all_pairs(
        out, lambda x, y: y * len(x) + x.sum(axis=0) / max(len(x), 1))
    assert compiled.host_evaluated == ()


def test_dense_result_from_a_computed_fractal_tensor(xs, ys):
    # the element read is of a map's result (jagged like xs); a per-pair
    # dense result mixing a max over the target's and the source's rows
    enc = ft.map(lambda s: ft.tanh(s @ U), xs)

    def body(y, i):
        m = enc[i]
        return (ft.amax(y, axis=0, initial=-1.0) + ft.amax(m, axis=0, initial=-1.0)
                + ft.sum(m * m, axis=0))

    check_all_pairs(ft.map(body, ys, pair_index(ys)),
                    lambda x, y: (np.max(y, axis=0, initial=-1.0)
                                  + np.max(np.tanh(x @ U), axis=0, initial=-1.0)
                                  + (np.tanh(x @ U) ** 2).sum(axis=0)))


def test_fold_over_the_sources_rows_and_a_second_source(xs, ys):
    # a fold over the rows of xs[i] (a ragged scan over xs's offsets), and
    # a second FractalTensor read at i (a third length symbol)
    doubled = ft.map(lambda s: s * 2.0, xs)

    def body(y, i):
        h = ft.fold(lambda h, r: ft.tanh(h @ U + r), xs[i], ft.zeros(H))
        return ft.sum(y, axis=0) * h + ft.sum(doubled[i], axis=0)

    def reference(x, y):
        h = np.zeros(H)
        for r in x:
            h = np.tanh(h @ U + r)
        return y.sum(axis=0) * h + 2.0 * x.sum(axis=0)

    check_all_pairs(ft.map(body, ys, pair_index(ys)), reference)


def softmax_context(q, m):
    """Each row of *q* attending over the rows of *m* (0 for no rows)."""
    if not len(m):
        return np.zeros((len(q), H))
    s = q @ m.T
    p = np.exp(s - s.max(axis=1, keepdims=True))
    return (p / p.sum(axis=1, keepdims=True)) @ m


def test_cross_attention_scores_padded_to_the_longest_source(xs, ys):
    # (L_i, M_i) scores: an axis of the source's length after the first
    def body(y, i):
        m = xs[i]
        s = y @ m.T
        e = ft.exp(s - ft.amax(s, axis=1, keepdims=True, initial=-np.inf))
        return (e @ m) / ft.maximum(ft.sum(e, axis=1, keepdims=True), 1e-300)

    check_all_pairs(ft.map(body, ys, pair_index(ys)),
                    lambda x, y: softmax_context(y, x))


def decoder_numpy(x, y):
    out, h = np.zeros((len(y), H)), np.zeros(H)
    for t in range(len(y)):
        ctx = softmax_context(h[None], x)[0]
        h = np.tanh(y[t] @ W + h @ U + ctx)
        out[t] = h
    return out


def test_decoder_scan_attending_over_the_source(xs, ys):
    # a scan over the target's rows whose steps read the source's rows
    def decoder(y, i):
        memory = xs[i]

        def step(h, yw):
            scores = memory @ h
            e = ft.exp(scores - ft.amax(scores, initial=-np.inf))
            ctx = (e @ memory) / ft.maximum(ft.sum(e), 1e-300)
            return ft.tanh(yw + h @ U + ctx)
        return ft.scan(step, y @ W, ft.zeros(H))

    check_all_pairs(ft.map(decoder, ys, pair_index(ys)), decoder_numpy)


def test_elements_at_computed_indices(xs, ys):
    # a neighbour (index from the pair index) and an index computed from
    # the target's data (its count of rows with a positive first entry):
    # each a gather of xs zipped in, the index checked on the host
    def body(y, i):
        before = xs[ft.maximum(i - 1, 0)]
        picked = xs[ft.sum(y[:, 0] > 0)]
        return (y + ft.sum(before, axis=0)) * ft.amax(picked, axis=0,
                                                      initial=-1.0)

    def reference(x, y):
        return [(b + x[max(i - 1, 0)].sum(axis=0))
                * np.max(x[int((b[:, 0] > 0).sum())], axis=0, initial=-1.0)
                for i, b in enumerate(y)]

    out = ft.map(body, ys, pair_index(ys))
    compiled = ft.compile(out)
    for name, pairs in PAIRS.items():
        # (a source per pair and three more: every count is in range)
        x, y = pairs_data(pairs + [(2, 0), (0, 0), (3, 0)])
        y = y[:len(pairs)]
        want = reference(x, y)
        for got in (compiled(xs=x, ys=y), ft.evaluate_numpy(out, xs=x, ys=y)):
            got = got.tolist()
            assert len(got) == len(want), name
            for g, w in zip(got, want):
                np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-12,
                                           err_msg=name)
    # out of range: IndexError from both, before any kernel reads
    x, y = pairs_data([(1, 2), (2, 1), (1, 1)])
    for run in (compiled, lambda **a: ft.evaluate_numpy(out, **a)):
        with pytest.raises(IndexError, match="FractalTensor index: index 1 is "
                           "out of range for an outer list of 1 elements"):
            run(xs=x[:1], ys=y)


def test_elements_at_a_permutation_and_a_constant_index(xs, ys):
    # indices that read no element (a captured permutation, the last
    # element): the first phase computes them from the offsets alone
    k = ft.make_size_param("k")
    perm = ft.make_placeholder("perm", (k,), np.int64)
    out = ft.map(lambda y, i: (y + ft.sum(xs[perm[i]], axis=0))
                 * ft.amax(xs[-1], axis=0, initial=0.0), ys, pair_index(ys))
    compiled = ft.compile(out)
    for name, pairs in PAIRS.items():
        x, y = pairs_data(pairs + [(2, 0)])
        y = y[:len(pairs)]
        p = np.random.default_rng(1).permutation(len(x))
        want = [(b + x[p[i]].sum(axis=0)) * np.max(x[-1], axis=0, initial=0.0)
                for i, b in enumerate(y)]
        for got in (compiled(xs=x, ys=y, perm=p),
                    ft.evaluate_numpy(out, xs=x, ys=y, perm=p)):
            for g, w in zip(got.tolist(), want, strict=True):
                np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-12,
                                           err_msg=name)


def test_reads_at_a_nested_loops_steps_run_on_the_host(xs, ys):
    # the index changes with the fold's steps: not a zip
    def body(y, i):
        return ft.fold(lambda h, j: h + ft.sum(xs[ft.minimum(i, j)], axis=0),
                       ft.arange(3), ft.sum(y, axis=0))

    out = ft.map(body, ys, pair_index(ys))
    compiled = compile_on_host(out, r"in this loop body is not supported yet")
    for name, pairs in PAIRS.items():
        x, y = pairs_data(pairs)
        want = [b.sum(axis=0) + sum(x[min(i, j)].sum(axis=0) for j in range(3))
                for i, b in enumerate(y)]
        got = compiled(xs=x, ys=y)
        np.testing.assert_allclose(got, np.reshape(want, (-1, H)), rtol=1e-12,
                                   err_msg=name)
    # (an element read past the end is an IndexError, as in numpy)
    with pytest.raises(IndexError):
        compiled(xs=[np.ones((1, H))], ys=[np.ones((1, H))] * 2)


def _pair_dtw(x, y):
    """A DTW-like table's last row: a fold over the source's rows whose
    carry has the target's length (the reference loop)."""
    c = np.zeros(len(y))
    for r in x:
        c = np.minimum(c, np.roll(c, 1)) + np.abs(y[:, 0] - r[0])
    return c


@pytest.mark.parametrize("case", ["returned", "last_two", "concatenated",
                                  "fold_carry", "strided"])
def test_results_shaped_by_the_other_element(xs, ys, case):
    # mapped over the targets, the body returns a list with the length of
    # the pair's source, xs[i] (it ran on the host before: its length was
    # a size computed in the body): xs[i] is zipped in first, and the
    # result is then counted by the zipped element's length
    def body(y, i):
        x = xs[i]
        if case == "returned":
            return ft.tanh(x @ W) * ft.sum(y)
        if case == "last_two":
            return x[-2:] + ft.sum(y, axis=0)
        if case == "concatenated":
            return ft.concatenate([x, y, x[:1]]) * 2.0
        if case == "fold_carry":
            return ft.fold(lambda c, r: ft.minimum(c, ft.roll(c, 1))
                           + ft.abs(x[:, 0] - r[0]), y, ft.zeros(x.shape[0]))
        return x[::2] - y.shape[0]

    reference = {
        "returned": lambda x, y: np.tanh(x @ W) * y.sum(),
        "last_two": lambda x, y: x[-2:] + y.sum(axis=0),
        "concatenated": lambda x, y: np.concatenate([x, y, x[:1]]) * 2.0,
        "fold_carry": lambda x, y: _pair_dtw(y, x),
        "strided": lambda x, y: x[::2] - len(y),
    }[case]
    compiled = check_all_pairs(ft.map(body, ys, pair_index(ys)), reference)
    assert compiled.host_evaluated == ()


def test_results_shaped_by_an_element_at_a_computed_index(xs, ys):
    # the source read at a neighbour's index, returned (counted by the
    # gathered element's length); new length distributions reuse the
    # program
    out = ft.map(lambda y, i: xs[ft.maximum(i - 1, 0)] + ft.sum(y, axis=0),
                 ys, pair_index(ys))
    compiled = ft.compile(out)
    assert compiled.host_evaluated == ()
    for name, pairs in PAIRS.items():
        x, y = pairs_data(pairs + [(2, 0)])
        y = y[:len(pairs)]
        want = [x[max(i - 1, 0)] + b.sum(axis=0) for i, b in enumerate(y)]
        for got in (compiled(xs=x, ys=y), ft.evaluate_numpy(out, xs=x, ys=y)):
            assert_per_pair(got, want, name)
