# SPDX-License-Identifier: MIT
"""Maps over a FractalTensor whose body maps over another list (all pairs
of elements, :mod:`ftlazy.fractal_pair_maps`): compiled with no loop on
the host, against numpy loops over the pairs and the reference
evaluator."""

from __future__ import annotations

import numpy as np
import pytest

import ftlazy as ft
from helpers import compile_on_host

H = 3
RNG = np.random.default_rng(12)
W = RNG.standard_normal((H, H)) * 0.5
#: (lengths of xs, lengths of ys): empty elements, empty lists, one element
LISTS = [([3, 0, 2], [1, 4]), ([2], [0, 0, 3]), ([], [2]), ([1, 2], []),
         ([0], [0])]


def _lists(lengths, seed):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal((k, H)) for k in lengths]


def _softmax(s):
    e = np.exp(s - s.max()) if s.size else s
    return e / e.sum() if s.size else s


#: name -> (lazy of (xs, ys), numpy of (a, b) per pair or of the row)
PAIRS = {
    # (a score per pair: the tokens of both attend to each other)
    "attention": (lambda xs, ys: ft.map(lambda a: ft.map(
        lambda b: ft.sum(ft.tanh(a @ W @ b.T)), ys), xs),
        lambda a, ys: np.array([np.tanh(a @ W @ b.T).sum() for b in ys])),
    # (a vector per pair, from each one's mean token)
    "means": (lambda xs, ys: ft.map(lambda a: ft.map(
        lambda b: ft.sum(a, axis=0) / ft.maximum(a.shape[0], 1)
        - ft.sum(b, axis=0) / ft.maximum(b.shape[0], 1), ys), xs),
        lambda a, ys: np.array([a.sum(axis=0) / max(len(a), 1)
                                - b.sum(axis=0) / max(len(b), 1)
                                for b in ys]).reshape(len(ys), H)),
    # (the row of scores normalized in the outer body)
    "softmax_row": (lambda xs, ys: ft.map(lambda a: (
        lambda s: ft.exp(s - ft.amax(s, initial=-1e300))
        / ft.maximum(ft.sum(ft.exp(s - ft.amax(s, initial=-1e300))), 1e-300))(
        ft.map(lambda b: ft.sum(a @ b.T), ys)), xs),
        lambda a, ys: _softmax(np.array([(a @ b.T).sum() for b in ys]))),
    # (two results per pair combined outside the inner map, and a fold
    # over the row)
    "two_results_folded": (lambda xs, ys: ft.map(lambda a: ft.fold(
        lambda h, t: ft.tanh(h @ W + t[0] * t[1]),
        (lambda r: (r[0], r[1]))(ft.map(
            lambda b: (ft.sum(b, axis=0), ft.sum(a) * ft.ones(())), ys)),
        ft.zeros(H)), xs),
        lambda a, ys: _fold_pairs(a, ys)),
    # (counted rows of either element: a clamped slice or a filter of the
    # outer element captured by the inner map, of the inner element read
    # per pair; they crashed, were refused or failed at each call)
    "heads": (lambda xs, ys: ft.map(lambda a: ft.map(
        lambda b: ft.sum(a[-2:] @ W @ b[:2].T), ys), xs),
        lambda a, ys: np.array([(a[-2:] @ W @ b[:2].T).sum() for b in ys])),
    "kept_outer": (lambda xs, ys: ft.map(lambda a: ft.map(
        lambda b: ft.sum(_positive(a) @ b.T), ys), xs),
        lambda a, ys: np.array([(_kept(a) @ b.T).sum() for b in ys])),
    "kept_inner_scaled": (lambda xs, ys: ft.map(lambda a: ft.map(
        lambda b: ft.sum(_positive(b)) * ft.sum(a), ys), xs),
        lambda a, ys: np.array([_kept(b).sum() * a.sum() for b in ys])),
    "strided_inner": (lambda xs, ys: ft.map(lambda a: ft.map(
        lambda b: ft.sum(b[::2] * ft.sum(a, axis=0)), ys), xs),
        lambda a, ys: np.array([(b[::2] * a.sum(axis=0)).sum() for b in ys])),
}


def _positive(s):
    return ft.filter(lambda r: ft.sum(r) > 0, s)


def _kept(s):
    return s[s.sum(axis=1) > 0]


def _fold_pairs(a, ys):
    h = np.zeros(H)
    for b in ys:
        h = np.tanh(h @ W + b.sum(axis=0) * a.sum())
    return h


def _check(result, reference, xs_data, ys_data, **more):
    want = [reference(a, ys_data) for a in xs_data]
    f = ft.compile(result)
    assert f.host_evaluated == ()
    for got in (f(xs=xs_data, ys=ys_data, **more),
                ft.evaluate_numpy(result, xs=xs_data, ys=ys_data, **more)):
        assert got.shape[0] == len(xs_data)
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, np.asarray(w).reshape(g.shape),
                                       rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("body", list(PAIRS))
def test_pairs_of_two_lists(body):
    lazy, reference = PAIRS[body]
    xs = ft.make_jagged_placeholder("xs", (H,), np.float64, depth=2)
    ys = ft.make_jagged_placeholder("ys", (H,), np.float64, depth=2)
    result = lazy(xs, ys)
    for k, (xl, yl) in enumerate(LISTS):
        _check(result, reference, _lists(xl, k), _lists(yl, k + 5))


def test_pairs_of_one_list_and_a_dense_input_zipped():
    # (the list with itself, its tail, and a weight per outer element)
    xs = ft.make_jagged_placeholder("xs", (H,), np.float64, depth=2)
    c = ft.make_placeholder("c", (xs.length,), np.float64)
    result = ft.map(lambda a, w: ft.map(
        lambda b: ft.sum(a @ b.T) * w, xs[1:]), xs, c)
    f = ft.compile(result)
    assert f.host_evaluated == ()
    for lengths in ([3, 0, 2], [1], []):
        data = _lists(lengths, 4)
        weights = np.arange(len(data), dtype=np.float64) + 1
        want = np.array([[(a @ b.T).sum() * w for b in data[1:]]
                         for a, w in zip(data, weights)]).reshape(
            len(data), max(len(data) - 1, 0))
        for got in (f(xs=data, c=weights),
                    ft.evaluate_numpy(result, xs=data, c=weights)):
            np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def test_pairs_with_a_row_per_token_run_on_the_host():
    # (a result of the outer element's length per pair: not a row of a
    # static shape; the map stays, on the host)
    xs = ft.make_jagged_placeholder("xs", (H,), np.float64, depth=2)
    ys = ft.make_jagged_placeholder("ys", (H,), np.float64, depth=2)
    result = ft.map(lambda a: ft.sum(ft.map(
        lambda b: a @ ft.sum(b, axis=0), ys), axis=0), xs)
    f = compile_on_host(result, "inside a map over a FractalTensor")
    xd, yd = _lists([2, 0], 1), _lists([1, 3], 2)
    want = [sum((a @ b.sum(axis=0) for b in yd), np.zeros(len(a)))
            for a in xd]
    for g, w in zip(f(xs=xd, ys=yd).tolist(), want):
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-12)


def test_pairs_reading_both_lengths_with_a_dict_result():
    # (a.shape[0] and b.shape[0] as values, results a dict per pair)
    xs = ft.make_jagged_placeholder("xs", (H,), np.float64, depth=2)
    ys = ft.make_jagged_placeholder("ys", (H,), np.float64, depth=2)
    result = ft.map(lambda a: ft.map(lambda b: {
        "score": ft.sum(a) * b.shape[0] + a.shape[0],
        "count": b.shape[0] + a.shape[0] * 10}, ys), xs)
    f = ft.compile(result)
    assert f.host_evaluated == ()
    for k, (xl, yl) in enumerate(LISTS):
        xd, yd = _lists(xl, k), _lists(yl, k + 5)
        want = {"score": np.array([[a.sum() * len(b) + len(a) for b in yd]
                                   for a in xd]).reshape(len(xd), len(yd)),
                "count": np.array([[len(b) + len(a) * 10 for b in yd]
                                   for a in xd]).reshape(len(xd), len(yd))}
        for got in (f(xs=xd, ys=yd), ft.evaluate_numpy(result, xs=xd, ys=yd)):
            for name, w in want.items():
                np.testing.assert_allclose(got[name], w, rtol=1e-12,
                                           atol=1e-12)


def test_pairs_returning_lists():
    # (the inner element itself per pair compiles: its count is the
    # captured list's size, relabelled, not renamed in the captured
    # arrays' shapes, which failed; rows of it scaled by the outer element
    # run on the host; rows counted from the outer element after the first
    # axis are refused when built, as the outer element's rows are)
    xs = ft.make_jagged_placeholder("xs", (H,), np.float64, depth=2)
    ys = ft.make_jagged_placeholder("ys", (H,), np.float64, depth=2)
    xd, yd = _lists([2, 0, 1], 3), _lists([3, 1, 0], 4)
    named = {
        "whole": (ft.map(lambda a: ft.map(lambda b: b, ys), xs),
                  lambda a, b: b, ()),
        "scaled_head": (ft.map(lambda a: ft.map(
            lambda b: b[:2] * ft.sum(a), ys), xs),
            lambda a, b: b[:2] * a.sum(), ("host",)),
        "scores": (ft.map(lambda a: ft.map(
            lambda b: ft.sum(a @ b.T, axis=0), ys), xs),
            lambda a, b: (a @ b.T).sum(axis=0), ("host",)),
    }
    for name, (lazy, reference, host) in named.items():
        if host:
            f = compile_on_host(lazy, "")
        else:
            f = ft.compile(lazy)
            assert f.host_evaluated == ()
        for got in (f(xs=xd, ys=yd), ft.evaluate_numpy(lazy, xs=xd, ys=yd)):
            rows = got.tolist()
            assert len(rows) == len(xd)
            for row, a in zip(rows, xd):
                assert len(row) == len(yd)
                for g, b in zip(row, yd):
                    want = reference(a, b)
                    np.testing.assert_allclose(np.reshape(g, want.shape),
                                               want, atol=1e-12)
    for body in (lambda a, b: a[:2] * ft.sum(b),
                 lambda a, b: ft.filter(lambda r: ft.sum(r) > 0, a)
                 * ft.sum(b)):
        with pytest.raises(ValueError, match="after the first axis"):
            ft.map(lambda a: ft.map(lambda b: body(a, b), ys), xs)
