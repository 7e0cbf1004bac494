# SPDX-License-Identifier: MIT
"""Scans and folds whose step reads a FractalTensor's element by index
(``ft.fold(lambda h, t: f(h, xs[t]), ft.arange(n), h0)``, JAX's
``fori_loop`` habit), rebuilt as loops over the read elements
(:mod:`ftlazy.fractal_step_reads`): compiled with no loop on the host, on
every profile flavour, and checked against numpy loops and the reference
evaluator."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import pytest

import ftlazy as ft
from helpers import compile_on_host

H = 3
RNG = np.random.default_rng(5)
W = RNG.standard_normal((H, H)) * 0.5
#: lengths of the elements: empty ones, one, none
LENGTHS = [[3, 0, 2, 5], [1], [], [0, 0]]


def _lists(lengths, seed):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal((k, H)) for k in lengths]


def _step(h, s):
    return np.tanh(h @ W + s.sum(axis=0))


def _folded(sequence, keep_all=False):
    h, states = np.zeros(H), []
    for s in sequence:
        h = _step(h, s)
        states.append(h)
    return np.array(states).reshape(-1, H) if keep_all else h


@pytest.fixture
def xs():
    return ft.make_jagged_placeholder("xs", (H,), np.float64, depth=2)


def _compiled(result):
    f = ft.compile(result)
    assert f.host_evaluated == ()
    return f


def _check(result, reference, **inputs):
    want = reference(**inputs)
    for got in (_compiled(result)(**inputs), ft.evaluate_numpy(result, **inputs)):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def _rnn(h, s):
    return ft.tanh(h @ W + ft.sum(s, axis=0))


BODIES = {
    # (the step's own index, the loop's length xs's: xs itself, zipped)
    "own_index": (lambda xs, n: ft.fold(lambda h, t: _rnn(h, xs[t]),
                                        ft.arange(n), ft.zeros(H)),
                  lambda x: _folded(x)),
    "scanned_backwards": (
        lambda xs, n: ft.scan(lambda h, t: _rnn(h, xs[n - 1 - t]),
                              ft.arange(n), ft.zeros(H)),
        lambda x: _folded(x[::-1], keep_all=True)),
    # (an index computed from the step's: the elements gathered first)
    "previous": (
        lambda xs, n: ft.scan(lambda h, t: _rnn(h, xs[ft.maximum(t - 1, 0)]),
                              ft.arange(n), ft.zeros(H)),
        lambda x: _folded([x[max(t - 1, 0)] for t in range(len(x))],
                          keep_all=True)),
    # (the element's length used as a value and in a shape)
    "length_used": (
        lambda xs, n: ft.fold(
            lambda h, t: (lambda s: _rnn(h, s * s.shape[0])
                          + ft.sum(ft.ones(s.shape[0])))(xs[t]),
            ft.arange(n), ft.zeros(H)),
        lambda x: _folded_with_length(x)),
    # (the same element read twice, the step's index used besides)
    "read_twice": (
        lambda xs, n: ft.reduce(
            lambda h, t: h + ft.sum(xs[t], axis=0) * t.astype(np.float64)
            - ft.sum(xs[t], axis=0), ft.arange(n), ft.zeros(H)),
        lambda x: sum((s.sum(axis=0) * (t - 1) for t, s in enumerate(x)),
                      np.zeros(H))),
}


def _folded_with_length(x):
    h = np.zeros(H)
    for s in x:
        h = _step(h, s * len(s)) + len(s)
    return h


@pytest.mark.parametrize("body", list(BODIES))
def test_steps_reading_an_element_by_index(xs, body):
    lazy, reference = BODIES[body]
    result = lazy(xs, xs.length)
    for k, lengths in enumerate(LENGTHS):
        _check(result, lambda xs: reference(xs), xs=_lists(lengths, k))


def test_steps_reading_at_a_permutation(xs):
    # (perm[t]: an index read from a captured array)
    perm = ft.make_placeholder("perm", (xs.length,), np.int64)
    permuted = ft.fold(lambda h, t: _rnn(h, xs[perm[t]]), ft.arange(xs.length),
                       ft.zeros(H))
    for k, lengths in enumerate(LENGTHS):
        order = np.random.default_rng(k).permutation(len(lengths))
        _check(permuted, lambda xs, perm: _folded([xs[i] for i in perm]),
               xs=_lists(lengths, k), perm=order)


def _sums(s):
    return s.sum(axis=0)


#: steps reading elements of two lists, or of one list at two indices:
#: (lazy step of (h, t, xs, ys, n), reference step of (h, t, x, y)), all
#: but one read used through arrays of a static shape
TWO_READS = {
    # (ys[t] through its sum; xs[t] with the carry)
    "sum_of_the_other": (
        lambda h, t, xs, ys, n: _rnn(h, xs[t]) - ft.sum(ys[t], axis=0),
        lambda h, t, x, y: _step(h, x[t]) - _sums(y[t])),
    # (the other list read with the carry, xs[t] through its sum)
    "other_with_the_carry": (
        lambda h, t, xs, ys, n: _rnn(h, ys[t]) * ft.sum(xs[t] ** 2),
        lambda h, t, x, y: _step(h, y[t]) * (x[t] ** 2).sum()),
    # (one list at two indices; the row reads the step's index and W)
    "previous_element": (
        lambda h, t, xs, ys, n: _rnn(h, xs[t]) + ft.sum(
            xs[ft.maximum(t - 1, 0)] @ W, axis=0) * t.astype(np.float64),
        lambda h, t, x, y: _step(h, x[t]) + _sums(x[max(t - 1, 0)] @ W) * t),
    # (the other element's mean, its length as a value; three reads)
    "mean_and_a_third": (
        lambda h, t, xs, ys, n: _rnn(h, xs[t]) * ft.sum(ys[t], axis=0)
        / ft.maximum(ys[t].shape[0], 1) + ft.sum(ys[n - 1 - t], axis=0),
        lambda h, t, x, y: _step(h, x[t]) * _sums(y[t]) / max(len(y[t]), 1)
        + _sums(y[-1 - t])),
}


@pytest.mark.parametrize("body", list(TWO_READS))
@pytest.mark.parametrize("keep_all", [False, True])
def test_steps_reading_two_elements(xs, body, keep_all):
    # (all but one element read through arrays of a static shape: those
    # computed for every step first, a loop over the other element)
    lazy, reference = TWO_READS[body]
    ys = ft.make_jagged_placeholder("ys", (H,), np.float64, depth=2)
    loop = ft.scan if keep_all else ft.fold
    result = loop(lambda h, t: lazy(h, t, xs, ys, xs.length),
                  ft.arange(xs.length), ft.zeros(H))

    def want(xs, ys):
        h, states = np.zeros(H), []
        for t in range(len(xs)):
            h = reference(h, t, xs, ys)
            states.append(h)
        return np.array(states).reshape(-1, H) if keep_all else h

    for k, (lengths, others) in enumerate([([3, 0, 2], [1, 4, 0]), ([1], [2]),
                                           ([], []), ([0, 0], [0, 3])]):
        inputs = {"xs": _lists(lengths, k), "ys": _lists(others, k + 7)}
        if body == "previous_element":
            _check(result, lambda xs: want(xs, None), xs=inputs["xs"])
        else:
            _check(result, want, **inputs)


def test_a_second_list_shorter_than_the_loop_raises(xs):
    ys = ft.make_jagged_placeholder("ys", (H,), np.float64, depth=2)
    result = ft.fold(lambda h, t: _rnn(h, xs[t]) - ft.sum(ys[t], axis=0),
                     ft.arange(xs.length), ft.zeros(H))
    for run in (_compiled(result), lambda **a: ft.evaluate_numpy(result, **a)):
        with pytest.raises(IndexError, match="index 2 is out of range"):
            run(xs=_lists([1, 2, 3], 0), ys=_lists([1, 1], 1))


@pytest.mark.parametrize("body", [
    # (both elements read with the carry: each row times h)
    lambda h, t, xs, ys: ft.tanh(h + ft.sum(xs[t] @ h) + ft.sum(ys[t] @ h)),
    # (the two elements in one array: two lengths in one shape)
    lambda h, t, xs, ys: _rnn(h, ft.concatenate([xs[t], ys[t]])),
])
def test_steps_reading_two_elements_with_the_carry_run_on_the_host(xs, body):
    # (elements of two lists per step have two lengths, which one loop over
    # FractalTensors cannot give its elements: the loop stays, on the host)
    ys = ft.make_jagged_placeholder("ys", (H,), np.float64, depth=2)
    both = ft.fold(lambda h, t: body(h, t, xs, ys), ft.arange(xs.length),
                   ft.zeros(H))
    f = compile_on_host(both, "data-dependent size")
    data, other = _lists([3, 0, 2], 1), _lists([1, 4, 0], 2)
    np.testing.assert_allclose(f(xs=data, ys=other),
                               ft.evaluate_numpy(both, xs=data, ys=other),
                               atol=1e-12)


def test_a_sequence_of_indices_and_bundled_carries(xs):
    # (a dense sequence of indices, not arange: the elements it names;
    # carries as a NamedTuple and a dict)
    class State(NamedTuple):
        h: object
        count: object

    picks = ft.make_placeholder("picks", (ft.make_size_param("k"),), np.int64)
    result = ft.fold(
        lambda c, i: {"state": State(_rnn(c["state"].h, xs[i]),
                                     c["state"].count + xs[i].shape[0])},
        picks, {"state": State(ft.zeros(H), ft.zeros((), np.int64))})
    f = _compiled(result["state"].h)
    counts = _compiled(result["state"].count)
    data = _lists([2, 0, 4], 3)
    for order in ([2, 0, 2, -1], [], [1]):
        picked = [data[i] for i in order]
        np.testing.assert_allclose(f(xs=data, picks=np.array(order, np.int64)),
                                   _folded(picked), rtol=1e-12, atol=1e-12)
        assert counts(xs=data, picks=np.array(order, np.int64)) == sum(
            len(s) for s in picked)


def test_an_index_out_of_range_raises(xs):
    perm = ft.make_placeholder("perm", (xs.length,), np.int64)
    result = ft.fold(lambda h, t: _rnn(h, xs[perm[t]]), ft.arange(xs.length),
                     ft.zeros(H))
    f = _compiled(result)
    for run in (f, lambda **a: ft.evaluate_numpy(result, **a)):
        with pytest.raises(IndexError, match="index 2 is out of range"):
            run(xs=_lists([1, 2], 0), perm=np.array([0, 2]))
    # (a loop longer than the list: its index past the end raises)
    m = ft.make_size_param("m")
    longer = ft.fold(lambda h, t: _rnn(h, xs[t]), ft.arange(m), ft.zeros(H))
    for run in (_compiled(longer),
                lambda **a: ft.evaluate_numpy(longer, **a)):
        with pytest.raises(IndexError, match="out of range"):
            run(xs=_lists([1, 2], 0), m=3)
        np.testing.assert_allclose(run(xs=_lists([1, 2], 0), m=1),
                                   _folded(_lists([1], 0)), atol=1e-12)


def test_steps_reading_each_documents_sentences_by_index():
    # (a fold over arange(d.length) reading d[t] in a map over documents: a
    # fold over each document's sentences)
    docs = ft.make_jagged_placeholder("docs", (H,), np.float64, depth=3)
    result = ft.map(lambda d: ft.fold(lambda h, t: _rnn(h, d[t]),
                                      ft.arange(d.length), ft.zeros(H)), docs)
    data = [_lists([3, 0, 2], 1), [], _lists([2], 2)]
    _check(result, lambda docs: np.array([_folded(d) for d in docs]),
           docs=data)


def test_an_index_computed_from_the_carry_runs_on_the_host(xs):
    # (which element the next step reads depends on the carry: not known
    # before the loop, so it stays a loop over indices, on the host)
    result = ft.fold(
        lambda h, t: _rnn(h, xs[ft.minimum(t, (ft.sum(h) > 10).astype(
            np.int64) + t)]), ft.arange(xs.length), ft.zeros(H))
    f = compile_on_host(result, "data-dependent size")
    data = _lists([3, 0, 2], 4)
    np.testing.assert_allclose(f(xs=data), _folded(data), atol=1e-12)


# {{{ maps over indices

def _nested(got):
    return got.tolist() if isinstance(got, ft.JaggedArray) else list(got)


MAPS = {
    # (a row per element: a dense stack)
    "sums": (lambda xs, ys, i: ft.sum(xs[i], axis=0) @ W,
             lambda xs, ys, i: xs[i].sum(axis=0) @ W),
    # (each element scaled: a FractalTensor, the elements read in order)
    "elements": (lambda xs, ys, i: xs[i] * 2.0 + ft.sum(ys[i], axis=0),
                 lambda xs, ys, i: xs[i] * 2.0 + ys[i].sum(axis=0)),
    # (a scan over each element read)
    "scans": (lambda xs, ys, i: ft.scan(lambda h, r: ft.tanh(h @ W + r), xs[i],
                                        ft.zeros(H)),
              lambda xs, ys, i: _folded([r[None] for r in xs[i]],
                                        keep_all=True)),
}


@pytest.mark.parametrize("body", list(MAPS))
@pytest.mark.parametrize("order", ["own", "reversed", "picked"])
def test_maps_reading_an_element_by_index(xs, body, order):
    # (ft.map over indices reading xs[i]: a map over the elements read,
    # xs itself at the map's own index, else gathered)
    lazy, reference = MAPS[body]
    ys = ft.make_jagged_placeholder("ys", (H,), np.float64, depth=2)
    picks = ft.make_placeholder("picks", (ft.make_size_param("k"),), np.int64)
    indices = {"own": ft.arange(xs.length),
               "reversed": xs.length - 1 - ft.arange(xs.length),
               "picked": picks}[order]
    result = ft.map(lambda i: lazy(xs, ys, i), indices)
    reads_ys = body == "elements"
    f = _compiled(result)
    for k, lengths in enumerate(LENGTHS):
        data, other = _lists(lengths, k), _lists(lengths[::-1], k + 3)
        chosen = {"own": np.arange(len(data)),
                  "reversed": np.arange(len(data))[::-1],
                  "picked": np.array([j % max(len(data), 1) for j in
                                      range(3 * bool(data))], np.int64)}[order]
        inputs = {"xs": data} | ({"ys": other} if reads_ys else {}) | (
            {"picks": chosen} if order == "picked" else {})
        want = [reference(data, other, i) for i in chosen]
        for got in (f(**inputs), ft.evaluate_numpy(result, **inputs)):
            got = _nested(got)
            assert len(got) == len(want)
            for g, w in zip(got, want):
                np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-12)

# }}}


# {{{ lengths read alone

LENGTH_LOOPS = {
    # (a count: a dense fold over the lengths each step reads)
    "count": (lambda xs, ys, n: ft.fold(lambda c, t: c + xs[t].shape[0] * 2,
                                        ft.arange(n), ft.zeros((), np.int64)),
              lambda xs, ys: 2 * sum(len(s) for s in xs)),
    # (a scan scaled by the reversed element's length)
    "scaled": (lambda xs, ys, n: ft.scan(
        lambda h, t: ft.tanh(h @ W * xs[n - 1 - t].shape[0] + 1.0),
        ft.arange(n), ft.ones(H)),
        lambda xs, ys: _scaled(xs)),
    # (a map of lengths over indices)
    "map": (lambda xs, ys, n: ft.map(lambda i: xs[i].shape[0] + 1, ft.arange(n)),
            lambda xs, ys: np.array([len(s) + 1 for s in xs], np.int64)),
    # (one list's element read, the other's length alone)
    "with_an_element": (
        lambda xs, ys, n: ft.fold(
            lambda h, t: _rnn(h, xs[t]) * ys[t].shape[0], ft.arange(n),
            ft.zeros(H)),
        lambda xs, ys: _weighted(xs, ys)),
}


def _scaled(xs):
    h, states = np.ones(H), []
    for s in xs[::-1]:
        h = np.tanh(h @ W * len(s) + 1.0)
        states.append(h)
    return np.array(states).reshape(-1, H)


def _weighted(xs, ys):
    h = np.zeros(H)
    for s, y in zip(xs, ys):
        h = _step(h, s) * len(y)
    return h


@pytest.mark.parametrize("body", list(LENGTH_LOOPS))
def test_loops_reading_an_elements_length_alone(xs, body):
    # (xs[t].shape[0] as a value, the element not read: the lengths for
    # every step first, a loop over them)
    lazy, reference = LENGTH_LOOPS[body]
    ys = ft.make_jagged_placeholder("ys", (H,), np.float64, depth=2)
    result = lazy(xs, ys, xs.length)
    reads_ys = body == "with_an_element"
    for k, lengths in enumerate(LENGTHS):
        inputs = {"xs": _lists(lengths, k)} | (
            {"ys": _lists(lengths[::-1], k + 1)} if reads_ys else {})
        _check(result, reference if reads_ys
               else (lambda xs: reference(xs, None)), **inputs)


def test_a_length_read_out_of_range_raises(xs):
    m = ft.make_size_param("m")
    result = ft.map(lambda i: xs[i].shape[0], ft.arange(m))
    for run in (_compiled(result), lambda **a: ft.evaluate_numpy(result, **a)):
        with pytest.raises(IndexError, match="out of range"):
            run(xs=_lists([1, 2], 0), m=3)
        np.testing.assert_array_equal(run(xs=_lists([1, 2], 0), m=2), [1, 2])

# }}}
