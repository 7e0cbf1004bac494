# SPDX-License-Identifier: MIT
"""Maps nested in the body of a map over a FractalTensor (dense maps over
an element's rows or a static axis, and ``ft.dilated_map`` on the element,
a map over a FractalTensor of its subsequences), compiled through OpenCL
(on every profile flavour, see conftest.py) and checked against
per-sequence numpy loops and the reference evaluator. One compiled program
serves every length distribution."""

from __future__ import annotations

import numpy as np
import pymbolic.primitives as prim
import pytest

import ftlazy as ft
from ftlazy.array import IndexLambda
from ftlazy.fractal_tensor import Jagged
from ftlazy.scalar_expr import index_var
from helpers import JAGGED_LENGTHS, compile_on_host

H = 3
RNG = np.random.default_rng(11)
W = RNG.standard_normal((H, H)) * 0.5
U = RNG.standard_normal((H, H)) * 0.5
WS = RNG.standard_normal((2, H, H)) * 0.5
#: every length distribution, and one with subsequences of 0, 1 and 2 rows
BATCHES = [[RNG.standard_normal((n, H)) for n in lengths]
           for lengths in [*JAGGED_LENGTHS.values(), (1, 4, 2, 0, 7)]]


@pytest.fixture
def xs():
    return ft.make_jagged_placeholder("xs", (H,), np.float64, depth=2)


def check(result, reference, compiled=None, **more):
    """*result* compiled once (unless *compiled* is given) and evaluated on
    every batch of :data:`BATCHES` against ``reference(s)`` of each
    sequence ``s``."""
    compiled = compiled or ft.compile(result)
    for data in BATCHES:
        for got in (compiled(xs=data, **more),
                    ft.evaluate_numpy(result, xs=data, **more)):
            if isinstance(got, ft.JaggedArray):
                assert got.lengths().tolist() == [len(s) for s in data]
                rows = got.tolist()
            else:
                assert got.shape == (len(data),) + tuple(result.shape[1:])
                rows = list(got)
            assert len(rows) == len(data)
            for g, s in zip(rows, data):
                want = reference(s)
                assert g.shape == want.shape
                np.testing.assert_allclose(g, want, rtol=1e-12, atol=1e-12)


def dilated_rnn_numpy(s, dilation, extra=0.0):
    """``h_t = tanh(s_t + h_{t-dilation} U + extra)``, zero state before."""
    out = np.zeros_like(s)
    for t in range(len(s)):
        prev = out[t - dilation] if t >= dilation else np.zeros(H)
        out[t] = np.tanh(s[t] + prev @ U + extra)
    return out


# {{{ dense maps in the body

def test_map_over_the_elements_rows(xs):
    Wp = ft.make_placeholder("W", (H, H), np.float64)
    ys = ft.map(lambda s: ft.map(lambda row: ft.tanh(row @ Wp) * ft.sum(row),
                                 s), xs)
    check(ys, lambda s: np.tanh(s @ W) * s.sum(axis=1, keepdims=True), W=W)


def test_map_over_a_static_axis_capturing_body_values(xs):
    # per element (2, H): each weight applied to the whole sequence, plus
    # the element's own column sums (a value of the outer body)
    Ws = ft.make_placeholder("Ws", (2, H, H), np.float64)

    def body(s):
        total = ft.sum(s, axis=0)
        return ft.map(lambda w: ft.sum(ft.tanh(s @ w + total), axis=0), Ws)
    check(ft.map(body, xs),
          lambda s: np.stack([np.tanh(s @ w + s.sum(axis=0)).sum(axis=0)
                              for w in WS]), Ws=WS)


def test_map_over_zipped_arrays_of_the_element(xs):
    Wp = ft.make_placeholder("W", (H, H), np.float64)

    def body(s):
        positions = ft.arange(s.shape[0])
        return ft.map(lambda a, b, t: a * b + t, s, ft.tanh(s @ Wp), positions)
    check(ft.map(body, xs),
          lambda s: s * np.tanh(s @ W) + np.arange(len(s))[:, None], W=W)

# }}}


# {{{ dilated_map on the element

def test_dilated_rnn_layer(xs):
    Up = ft.make_placeholder("U", (H, H), np.float64)

    def rnn(sub):
        return ft.scan(lambda h, x: ft.tanh(x + h @ Up), sub, ft.zeros(H))
    ys = ft.map(lambda s: ft.dilated_map(rnn, s, 3), xs)
    check(ys, lambda s: dilated_rnn_numpy(s, 3), U=U)


def test_dilated_map_capturing_element_values_and_nested(xs):
    # the subsequence function reads the element's column sums (mapped
    # along with the subsequences) and itself runs a dilated map: sequence
    # positions t of the nested one are 2*2 apart
    Up = ft.make_placeholder("U", (H, H), np.float64)

    def body(s):
        total = ft.sum(s, axis=0)

        def f(sub):
            rnn = ft.scan(lambda h, x: ft.tanh(x + h @ Up + total), sub,
                          ft.zeros(H))
            return rnn + ft.dilated_map(lambda q: q * 2.0 - total, sub, 2)
        return ft.dilated_map(f, s, 2)

    def reference(s):
        total = s.sum(axis=0)
        return dilated_rnn_numpy(s, 2, total) + (s * 2.0 - total)
    check(ft.map(body, xs), reference, U=U)

# }}}


# {{{ FractalTensors built from the element (as dilated_map builds one)

def split(s, *cuts):
    """*s* as a FractalTensor of ``len(cuts) + 1`` consecutive parts, cut at
    ``L * c // 4`` for each c in *cuts* (built from the length only, as
    :func:`ftlazy.dilated_map` builds its subsequences)."""
    length = s.shape[0]
    bounds = [0, *(prim.FloorDiv(length * c, 4) for c in cuts), length]
    expr = bounds[-1]
    for k in reversed(range(len(bounds) - 1)):
        expr = prim.If(prim.Comparison(index_var(0), "==", k), bounds[k], expr)
    return Jagged(s, (IndexLambda(expr, (len(bounds),), np.int64,
                                  {"_ft_seq": s}),))


def empty_then_whole(s):
    """*s* as a FractalTensor of ``L`` elements: ``L - 1`` empty ones, then
    all of *s*."""
    length = s.shape[0]
    expr = prim.If(prim.Comparison(index_var(0), "<", length), 0, length)
    return Jagged(s, (IndexLambda(expr, (length + 1,), np.int64,
                                  {"_ft_seq": s}),))


def test_map_over_parts_of_the_element(xs):
    # two FractalTensors of the same parts zipped with a per-element dense
    # array and a weight per part; a dense result (2, H) and a result of
    # the element's length
    Ws = ft.make_placeholder("Ws", (2, H, H), np.float64)

    def body(s):
        total = ft.sum(s, axis=0)
        return ft.map(lambda a, b, v, w: (ft.sum(a * b, axis=0) @ w + v, a - v),
                      split(s, 2), split(ft.tanh(s), 2),
                      ft.stack([total, -total]), Ws)
    dense, jagged = ft.map(body, xs)

    def reference(s):
        half = len(s) // 2
        total = s.sum(axis=0)
        parts = [(s[:half], total), (s[half:], -total)]
        return (np.stack([(a * np.tanh(a)).sum(axis=0) @ WS[k] + v
                          for k, (a, v) in enumerate(parts)]),
                np.concatenate([a - v for a, v in parts]))
    compiled = ft.compile(ft.make_dict_of_named_arrays(
        {"dense": dense, "values": jagged.values}))
    for data in BATCHES:
        got = compiled(xs=data, Ws=WS)
        evaluated = ft.evaluate_numpy(dense, xs=data, Ws=WS)
        want = [reference(s) for s in data]
        want_dense = np.array([w[0] for w in want]).reshape(len(data), 2, H)
        np.testing.assert_allclose(got["dense"], want_dense, rtol=1e-12)
        np.testing.assert_allclose(evaluated, want_dense, rtol=1e-12)
        want_values = np.concatenate([w[1] for w in want] + [np.zeros((0, H))])
        np.testing.assert_allclose(got["values"], want_values, rtol=1e-12)

# }}}


# {{{ what runs on the host (its lowering is not supported)

def test_inner_maps_zipping_different_offsets_on_the_host(xs):
    # the parts cut at L//2 and at L//4, zipped: their offsets agree only
    # where L < 2 (else the run-time zip check raises)
    result = ft.map(lambda s: ft.map(lambda a, b: a + b, split(s, 2),
                                     split(s, 1)), xs)
    compiled = compile_on_host(result, "different offsets")
    data = [RNG.standard_normal((n, H)) for n in (1, 0, 1)]
    got = compiled(xs=data)
    assert got.depth == 3
    for g, s in zip(got.tolist(), data, strict=True):
        assert [len(p) for p in g] == [0, len(s)]
        np.testing.assert_allclose(g[1], 2 * s, rtol=1e-12)
    for run in (compiled, lambda **a: ft.evaluate_numpy(result, **a)):
        with pytest.raises(ValueError, match="offsets"):
            run(xs=[np.ones((4, H))])


def test_inner_maps_over_as_many_elements_as_rows_on_the_host(xs):
    result = ft.map(lambda s: ft.map(lambda e: ft.sum(e, axis=0),
                                     empty_then_whole(s)), xs)

    def reference(s):
        want = np.zeros_like(s)
        want[-1:] = s.sum(axis=0)
        return want
    check(result, reference, compiled=compile_on_host(
        result, "number of elements depends on the element's length"))


def test_dilated_map_inside_a_fold_over_the_rows(xs):
    # a fold over the element's rows whose carry is the whole sequence,
    # dilated-mapped at each step (a reduction over each subsequence)
    ys = ft.map(lambda s: ft.fold(
        lambda c, x: ft.dilated_map(
            lambda sub: ft.tanh(sub @ U + x) + ft.sum(sub, axis=0), c, 2),
        s, s), xs)

    def reference(s):
        c = s.copy()
        for x in s:
            new = np.empty_like(c)
            for r in range(2):
                sub = c[r::2]
                new[r::2] = np.tanh(sub @ U + x) + sub.sum(axis=0)
            c = new
        return c
    check(ys, reference)


def test_subsequences_attending_to_the_whole_element(xs):
    # each subsequence reads the whole sequence: the inner map zips the
    # outer element in (inner element i*2 + r reads outer element i);
    # (L_sub, L) scores padded to the longest, a sum and a max over L; the
    # second inner map reads only s.T (the outer offsets zipped in alone)
    def attend(sub, s):
        return (sub @ s.T) @ s

    def scaled(sub, s):
        return sub * ft.amax(sub @ s.T, axis=1, keepdims=True, initial=-1.0)
    ys = ft.map(lambda s: ft.dilated_map(lambda sub: attend(sub, s), s, 2)
                + ft.dilated_map(lambda sub: scaled(sub, s), s, 2), xs)

    def reference(s):
        want = np.zeros_like(s)
        for r in range(min(2, len(s))):
            sub = s[r::2]
            scores = sub @ s.T
            want[r::2] = scores @ s + sub * np.max(scores, axis=1,
                                                   keepdims=True, initial=-1.0)
        return want
    check(ys, reference)


def test_outer_length_arrays_per_subsequence_on_the_host(xs):
    # an array of the outer element's length computed per subsequence
    ys = ft.map(lambda s: ft.dilated_map(
        lambda sub: sub + ft.sum(s * ft.sum(sub), axis=0), s, 2), xs)

    def reference(s):
        want = np.zeros_like(s)
        for r in range(min(2, len(s))):
            sub = s[r::2]
            want[r::2] = sub + (s * sub.sum()).sum(axis=0)
        return want
    check(ys, reference, compiled=compile_on_host(
        ys, "array of the outer element's length"))


# }}}


def test_maps_over_fractal_tensors_inside_a_dense_map_of_the_body(xs):
    # a dense map over a static axis (w = 1, 2) whose function dilated-maps
    # the sequence (w captured) and maps over parts of s * w (batched
    # values) zipped with a per-part array of w (a batched dense input):
    # the batch axis moves inside the maps over FractalTensors
    def per_w(s, w):
        signs = ft.stack([w, -w])[:, None] * ft.ones((2, H))
        parts = ft.map(lambda a, v: a * v, split(s * w, 2), signs)
        return ft.dilated_map(lambda sub: sub * w, s, 2) + parts.values
    ys = ft.map(lambda s: ft.sum(ft.map(lambda w: per_w(s, w),
                                        ft.arange(2) + 1.0), axis=0), xs)

    def reference(s):
        half = len(s) // 2
        return sum(s * w + np.concatenate([s[:half] * w * w,
                                           -s[half:] * w * w])
                   for w in (1.0, 2.0))
    check(ys, reference)


def test_scan_inside_a_map_over_the_elements_rows(xs):
    # a running sum along each row of each sequence
    ys = ft.map(lambda s: ft.map(
        lambda row: ft.scan(lambda c, v: c + v, row, 0.0), s), xs)
    check(ys, lambda s: np.cumsum(s, axis=1))


# {{{ lookups in the body and in a scan over its rows: run-time checks

def test_lookups_and_a_scan_of_lookups_are_checked():
    # ids per element: table[s] (advanced indexing, a gather), a column
    # picked by the element's largest id (a gather along axis 1), a scan
    # whose steps look rows up (a ragged scan with run-time checks), and
    # rows of an array the body computes; out-of-range ids raise
    # IndexError from both paths
    ids = ft.make_jagged_placeholder("ids", (), np.int64, depth=2)
    table = ft.make_placeholder("table", (4, H), np.float64)
    columns = ft.make_placeholder("columns", (H, 4), np.float64)

    def body(s):
        rnn = ft.scan(lambda h, i: ft.tanh(ft.gather(table, i) + h @ U), s,
                      ft.zeros(H))
        return (table[s] + ft.gather(columns, ft.amax(s, initial=0), axis=1)
                + rnn + ft.gather(table * ft.sum(s), s))
    out = ft.map(body, ids)
    tb, cols = RNG.standard_normal((4, H)), RNG.standard_normal((H, 4))

    def reference(s):
        h, rnn = np.zeros(H), np.zeros((len(s), H))
        for t, i in enumerate(s):
            h = rnn[t] = np.tanh(tb[i] + h @ U)
        return (tb[s] + cols[:, np.max(s, initial=0)] + rnn
                + (tb * s.sum())[s])
    compiled = ft.compile(out)
    for lengths in [JAGGED_LENGTHS["mixed"], JAGGED_LENGTHS["empty_batch"],
                    JAGGED_LENGTHS["all_empty"], (1,), (0, 1)]:
        data = [RNG.integers(-4, 4, n) for n in lengths]
        for got in (compiled(ids=data, table=tb, columns=cols),
                    ft.evaluate_numpy(out, ids=data, table=tb, columns=cols)):
            assert len(got.tolist()) == len(data)
            for g, s in zip(got.tolist(), data):
                np.testing.assert_allclose(g, reference(s), rtol=1e-12,
                                           atol=1e-12)
    bad = [np.array([1, 2]), np.array([3, 7, 0])]
    for run in (compiled, lambda **a: ft.evaluate_numpy(out, **a)):
        with pytest.raises(IndexError, match="index 7 is out of"):
            run(ids=bad, table=tb, columns=cols)


@pytest.mark.parametrize("keep_all", [True, False])
def test_finished_elements_do_not_fail_checks(keep_all):
    # each step looks up the id of the step before: a finished element's
    # carry holds its last id, which it never looks up (numpy raises
    # nothing), nor does an empty element look up the packed row standing
    # in for its rows; a running element's bad id still raises
    ids = ft.make_jagged_placeholder("ids", (), np.int64, depth=2)
    table = ft.make_placeholder("table", (4, H), np.float64)

    def step(carry, i):
        previous, h = carry
        return i, h + ft.gather(table, previous)
    loop = ft.scan if keep_all else ft.fold
    out = ft.map(lambda s: loop(step, s, (np.int64(0), ft.zeros(H)))[1], ids)
    tb = RNG.standard_normal((4, H))

    def reference(s):
        previous, h, rows = 0, np.zeros(H), []
        for i in s:
            previous, h = i, h + tb[previous]
            rows.append(h)
        return np.array(rows).reshape(-1, H) if keep_all else h
    compiled = ft.compile(out)
    data = [np.array([], np.int64), np.array([9]), np.array([0, 3, 2]),
            np.array([1, 8])]
    for got in (compiled(ids=data, table=tb),
                ft.evaluate_numpy(out, ids=data, table=tb)):
        for g, s in zip(got.tolist() if keep_all else got, data):
            np.testing.assert_allclose(g, reference(s), rtol=1e-12)
    for run in (compiled, lambda **a: ft.evaluate_numpy(out, **a)):
        with pytest.raises(IndexError, match="index 9 is out of"):
            run(ids=[np.array([1, 9, 0])], table=tb)


@pytest.mark.parametrize("body, message, reference", [
    # (rows of the element's length: test_codegen_jagged_element_gathers;
    # its columns of an (L, L) array are padded)
    (lambda table, s: ft.sum(ft.gather(s[:, None] * s[None, :] + table[0, 0],
                                       s, axis=1), axis=1),
     "along an axis of the same extent for every element",
     lambda tb, s: np.take(np.outer(s, s) + tb[0, 0], s, axis=1).sum(axis=1)),
    (lambda table, s: ft.sum(ft.gather(table, s, axis=1), axis=1),
     "indices have the element's length is only supported along axis 0",
     lambda tb, s: np.take(tb, s, axis=1).sum(axis=1)),
])
def test_gathers_on_the_host(body, message, reference):
    ids = ft.make_jagged_placeholder("ids", (), np.int64, depth=2)
    table = ft.make_placeholder("table", (4, 4), np.float64)
    result = ft.map(lambda s: body(table, s), ids)
    compiled = compile_on_host(result, message)
    tb = RNG.standard_normal((4, 4))
    # (indices below each element's length: in range for both gathers)
    data = [np.array([], np.int64), np.array([0]), np.array([0, 2, 1]),
            np.array([1, 1])]
    got = compiled(ids=data, table=tb)
    for g, s in zip(got.tolist(), data, strict=True):
        np.testing.assert_allclose(g, reference(tb, s), rtol=1e-12)
    with pytest.raises(IndexError, match="out of"):
        compiled(ids=[np.array([1, 4])], table=tb)

# }}}
