# SPDX-License-Identifier: MIT
"""ft.scan, ft.fold and ft.reduce over the outer list of a FractalTensor,
through the reference evaluator and compiled through OpenCL, against numpy
loops over the elements (depth 3: test_codegen_jagged_outer_scan_depth3.py)."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import pytest

import ftlazy as ft
from helpers import JAGGED_LENGTHS as LENGTHS, compile_on_host

H = 4
TOL = dict(rtol=1e-12, atol=1e-12)


def batch(lengths, seed=0, h=H):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal((n, h)) for n in lengths]


@pytest.fixture
def xs():
    return ft.make_jagged_placeholder("xs", (H,), np.float64, depth=2)


def both(result, **inputs):
    """The reference evaluator's and the compiled program's values."""
    return ft.evaluate_numpy(result, **inputs), ft.compile(result)(**inputs)


def numpy_scan(step, data, init, keep_all):
    carry, history = init, []
    for s in data:
        carry = step(carry, s)
        history.append(carry)
    if not keep_all:
        return carry
    return np.stack(history) if history else np.empty((0,) + np.shape(init))


#: per-element updates (ftlazy, numpy) and which length sets they need
BODIES = {
    "sum": (lambda c, s: c + ft.sum(s, axis=0),
            lambda c, s: c + s.sum(axis=0), "any"),
    "max": (lambda c, s: ft.maximum(c, ft.amax(s, axis=0)),
            lambda c, s: np.maximum(c, s.max(axis=0)), "nonempty"),
    "mean": (lambda c, s: c + ft.sum(s, axis=0) / s.shape[0],
             lambda c, s: c + s.sum(axis=0) / s.shape[0], "nonempty"),
    "length_weighted": (lambda c, s: 0.5 * c + s.shape[0] * ft.sum(s * s, axis=0),
                        lambda c, s: 0.5 * c + len(s) * (s * s).sum(axis=0),
                        "any"),
    "differences": (lambda c, s: c + ft.sum(abs(s[1:] - s[:-1]), axis=0),
                    lambda c, s: c + abs(s[1:] - s[:-1]).sum(axis=0),
                    "nonempty"),
    "doubled_tanh": (lambda c, s: ft.tanh(c + ft.sum(ft.concatenate([s, 2 * s]),
                                                     axis=0)),
                     lambda c, s: np.tanh(c + np.concatenate([s, 2 * s]).sum(0)),
                     "any"),
    # rows read by index (these ran on the host)
    "first_and_last": (lambda c, s: c + s[0] - 2 * s[-1],
                       lambda c, s: c + s[0] - 2 * s[-1], "nonempty"),
    "gathered": (lambda c, s: c + ft.sum(ft.gather(s, np.array([0, -1, 0])),
                                         axis=0),
                 lambda c, s: c + s[[0, -1, 0]].sum(axis=0), "nonempty"),
    "last_of_scaled": (lambda c, s: ft.tanh(c + (s * c)[-1]),
                       lambda c, s: np.tanh(c + (s * c)[-1]), "nonempty"),
    # (indices of the element's length: padded positions are not checked)
    "reversed": (lambda c, s: c * 0.5 + ft.sum(
                     ft.gather(s, ft.arange(s.shape[0])[::-1]) * ft.arange(
                         s.shape[0])[:, None], axis=0),
                 lambda c, s: c * 0.5 + (s[::-1] * np.arange(len(s))[:, None]
                                         ).sum(axis=0), "any"),
}

OPS = {"fold": (ft.fold, False), "reduce": (ft.reduce, False),
       "scan": (ft.scan, True)}


CASES = [(op, name, lengths) for op in OPS for name, (_, _, needs) in BODIES.items()
         for lengths in ("mixed", "nonempty", "empty_batch", "all_empty")
         if not (needs == "nonempty" and lengths in ("mixed", "all_empty"))
         and (op != "reduce" or name in ("sum", "max"))]


@pytest.mark.parametrize(("op", "name", "lengths"), CASES)
def test_bodies(xs, op, name, lengths):
    body, reference, _ = BODIES[name]
    fn, keep_all = OPS[op]
    data = batch(LENGTHS[lengths])
    init = np.full(H, -5.0) if name == "max" else np.zeros(H)
    result = fn(body, xs, ft.asarray(init))
    want = numpy_scan(reference, data, init, keep_all)
    expected_shape = (len(data), H) if keep_all else (H,)
    for got in both(result, xs=data):
        assert got.shape == expected_shape
        np.testing.assert_allclose(got, want, **TOL)


def test_max_over_an_empty_element_is_refused(xs):
    result = ft.fold(lambda c, s: ft.maximum(c, ft.amax(s, axis=0)), xs,
                     ft.zeros(H))
    data = batch(LENGTHS["mixed"])
    with pytest.raises(ValueError, match="zero-size array"):
        ft.evaluate_numpy(result, xs=data)
    # (the message names the fold and its input; it said "map")
    with pytest.raises(ValueError, match="fold over a FractalTensor 'xs', "
                       "element 1: zero-size array"):
        ft.compile(result)(xs=data)


def test_rows_by_index_of_a_short_element_are_refused(xs):
    # (an empty element, and one whose rest s[1:] is empty)
    for body, data in ((lambda c, s: c + s[-1], batch([3, 0, 2])),
                       (lambda c, s: c + s[1:][0], batch([3, 1, 2]))):
        result = ft.scan(body, xs, ft.zeros(H))
        with pytest.raises(IndexError, match="out of bounds for axis 0 with size 0"):
            ft.evaluate_numpy(result, xs=data)
        with pytest.raises(IndexError, match="out of range for the rows of its "
                           "element"):
            ft.compile(result)(xs=data)
    # a long enough batch runs
    long = batch([3, 2, 4])
    for got in both(ft.scan(lambda c, s: c + s[1:][0], xs, ft.zeros(H)), xs=long):
        np.testing.assert_allclose(got, numpy_scan(lambda c, s: c + s[1], long,
                                                   np.zeros(H), True), **TOL)


class Stats(NamedTuple):
    count: object
    total: object
    peak: object


def test_carry_bundle_and_scan_of_a_bundle(xs):
    def step(c, s):
        return Stats(c.count + s.shape[0], c.total + ft.sum(s, axis=0),
                     ft.maximum(c.peak, ft.sum(s * s)))

    init = Stats(ft.asarray(np.int64(0)), ft.zeros(H), ft.asarray(0.0))
    data = batch(LENGTHS["mixed"])
    for fn, keep_all in ((ft.fold, False), (ft.scan, True)):
        result = fn(step, xs, init)
        assert isinstance(result, Stats)
        counts = np.cumsum([len(s) for s in data])
        totals = np.cumsum([s.sum(axis=0) for s in data], axis=0)
        peaks = np.maximum.accumulate([(s * s).sum() for s in data])
        for got in (ft.evaluate_numpy(result.count, xs=data),
                    ft.compile(result.count)(xs=data)):
            np.testing.assert_array_equal(got, counts if keep_all else counts[-1])
        dict_result = ft.DictOfNamedArrays(result._asdict())
        for got in both(dict_result, xs=data):
            np.testing.assert_allclose(got["total"],
                                       totals if keep_all else totals[-1], **TOL)
            np.testing.assert_allclose(got["peak"],
                                       peaks if keep_all else peaks[-1], **TOL)


def test_dict_carry_is_matched_by_key(xs):
    def step(c, s):
        return {"b": c["b"] + 1.0, "a": c["a"] + ft.sum(s, axis=0)}

    result = ft.fold(step, xs, {"a": ft.zeros(H), "b": ft.asarray(0.0)})
    assert list(result) == ["a", "b"]
    data = batch(LENGTHS["mixed"])
    for got in both(ft.DictOfNamedArrays(result), xs=data):
        np.testing.assert_allclose(got["a"], sum(s.sum(axis=0) for s in data),
                                   **TOL)
        assert got["b"] == len(data)


def test_rnn_over_summaries_with_captured_weights(xs):
    w = ft.make_placeholder("w", (H, H), np.float64)
    rng = np.random.default_rng(7)
    w_data = rng.standard_normal((H, H)) * 0.5
    result = ft.scan(lambda h, s: ft.tanh(h @ w + ft.sum(s, axis=0)), xs,
                     ft.zeros(H))
    data = batch(LENGTHS["mixed"])
    want = numpy_scan(lambda h, s: np.tanh(h @ w_data + s.sum(axis=0)), data,
                      np.zeros(H), True)
    for got in both(result, xs=data, w=w_data):
        np.testing.assert_allclose(got, want, **TOL)


def test_zipped_dense_arrays(xs):
    m = ft.make_size_param("m")
    weights = ft.make_placeholder("weights", (m,), np.float64)
    result = ft.fold(lambda c, x: c + x[1] * ft.sum(x[0], axis=0),
                     (xs, weights), ft.zeros(H))
    data = batch(LENGTHS["mixed"])
    w_data = np.arange(1.0, 6.0)
    want = sum(w * s.sum(axis=0) for s, w in zip(data, w_data))
    for got in both(result, xs=data, weights=w_data):
        np.testing.assert_allclose(got, want, **TOL)
    with pytest.raises(ValueError, match=r"zipped input 1 \('weights'\) has 4 "
                       r"elements, zipped FractalTensor 0 \('xs'\) has 5"):
        ft.evaluate_numpy(result, xs=data, weights=w_data[:4])
    with pytest.raises(ValueError, match=r"zipped input 1 has 4 elements, "
                       r"zipped FractalTensor 0 \('xs'\) has 5"):
        ft.compile(result)(xs=data, weights=w_data[:4])


def test_zipped_fractal_tensors(xs):
    ys = ft.make_jagged_placeholder("ys", (H,), np.float64, depth=2)
    result = ft.fold(lambda c, p: c + ft.sum(p[0] * p[1], axis=0), (xs, ys),
                     ft.zeros(H))
    data, other = batch(LENGTHS["mixed"]), batch(LENGTHS["mixed"], seed=1)
    want = sum((a * b).sum(axis=0) for a, b in zip(data, other))
    for got in both(result, xs=data, ys=other):
        np.testing.assert_allclose(got, want, **TOL)
    bad = batch((3, 0, 2, 4, 1))
    with pytest.raises(ValueError, match="'xs'.*'ys'.*different lengths at "
                       "level 0"):
        ft.evaluate_numpy(result, xs=data, ys=bad)
    with pytest.raises(ValueError, match="'xs'.*'ys'.*different lengths at "
                       "level 0"):
        ft.compile(result)(xs=data, ys=bad)


def test_embedding_bags_folded():
    tokens = ft.make_jagged_placeholder("tokens", (), np.int64, depth=2)
    table = ft.make_placeholder("table", (10, H), np.float64)
    result = ft.fold(lambda c, t: c + ft.sum(ft.gather(table, t), axis=0),
                     tokens, ft.zeros(H))
    rng = np.random.default_rng(5)
    table_data = rng.standard_normal((10, H))
    ids = [np.array([1, 2, 9]), np.array([], dtype=np.int64), np.array([4, 4])]
    want = sum(table_data[t].sum(axis=0) for t in ids)
    for got in both(result, tokens=ids, table=table_data):
        np.testing.assert_allclose(got, want, **TOL)


def test_carry_of_element_length_is_refused(xs):
    with pytest.raises(ValueError, match="depends on the element's lengths"):
        ft.fold(lambda c, s: s, xs, ft.zeros(H))
    with pytest.raises(ValueError, match=r"changes the shape of carry 0 from "
                       r"\(4,\) to \(2,\)"):
        ft.fold(lambda c, s: ft.sum(s, axis=0)[:2], xs, ft.zeros(H))
    with pytest.raises(TypeError, match="changes the dtype of carry 0"):
        ft.fold(lambda c, s: c + ft.sum(s, axis=0), xs, ft.zeros(H, np.float32))
    with pytest.raises(NotImplementedError, match="FractalTensor carry: the "
                       "body changes the lengths of carry leaf 0"):
        ft.fold(lambda c, s: ft.map(lambda e: e[1:], c), xs, xs)


def test_result_outside_body_is_usable(xs):
    total = ft.fold(lambda c, s: c + ft.sum(s, axis=0), xs, ft.zeros(H))
    lengths = ft.lengths(xs)
    result = total * 2 + ft.sum(lengths)
    data = batch(LENGTHS["mixed"])
    want = 2 * sum(s.sum(axis=0) for s in data) + sum(LENGTHS["mixed"])
    for got in both(result, xs=data):
        np.testing.assert_allclose(got, want, **TOL)


def lowered_values(result, **inputs):
    """*result* through the compiled path's lowering, evaluated by the
    reference evaluator (with the sizes the host derives at call time)."""
    from ftlazy.target.jagged_inputs import expand_jagged_inputs
    from ftlazy.target.loopy.jagged_program import _derive, jagged_lowering
    lowering = jagged_lowering(result)
    given = expand_jagged_inputs(lowering.input_nodes, inputs)
    given.update(_derive(lowering.host, given, lowering.input_nodes))
    return ft.evaluate_numpy(lowering.dense, **{
        k: v for k, v in given.items() if k in lowering.dense_names})["result"]


def test_scans_over_each_element_rows(xs):
    """An RNN over each sequence (a scan over the element's rows in the
    fold's body): lowered to a masked scan of the longest length, nested
    in the scan over the elements."""
    w = ft.make_placeholder("w", (H, H), np.float64)
    rng = np.random.default_rng(9)
    w_data = rng.standard_normal((H, H)) * 0.5

    def rnn(s):
        h = np.zeros(H)
        for x in s:
            h = np.tanh(h @ w_data + x)
        return h

    data = batch(LENGTHS["mixed"])
    cases = [
        (ft.scan(lambda c, s: c + ft.fold(lambda h, x: ft.tanh(h @ w + x), s,
                                          ft.zeros(H)), xs, ft.zeros(H)),
         np.cumsum([rnn(s) for s in data], axis=0)),
        (ft.fold(lambda c, s: c + ft.sum(ft.scan(lambda h, x: h + x, s,
                                                 ft.zeros(H)), axis=0),
                 xs, ft.zeros(H)),
         sum(np.cumsum(s, axis=0).sum(axis=0) for s in data)),
        # (the element's length read in the inner body is captured by it)
        (ft.fold(lambda c, s: c + ft.fold(
            lambda h, x: h + x / ft.maximum(s.shape[0], 1), s, ft.zeros(H)),
            xs, ft.zeros(H)),
         sum(s.sum(axis=0) / max(len(s), 1) for s in data)),
    ]
    for k, (result, want) in enumerate(cases):
        inputs = dict(xs=data, w=w_data) if k == 0 else dict(xs=data)
        np.testing.assert_allclose(ft.evaluate_numpy(result, **inputs), want,
                                   **TOL)
        np.testing.assert_allclose(lowered_values(result, **inputs), want, **TOL)
        np.testing.assert_allclose(ft.compile(result)(**inputs), want, **TOL)


def test_extents_mixing_the_length_with_other_sizes_run_on_the_host(xs):
    extra = ft.make_placeholder("extra", (ft.make_size_param("m"), H),
                                np.float64)
    result = ft.fold(lambda c, s: c + ft.amax(ft.concatenate([s, extra]),
                                              axis=0), xs, ft.zeros(H))
    data = batch(LENGTHS["mixed"])
    extra_data = np.ones((2, H))
    want = sum(np.concatenate([s, extra_data]).max(axis=0) for s in data)
    np.testing.assert_allclose(ft.evaluate_numpy(result, xs=data,
                                                 extra=extra_data), want, **TOL)
    compiled = compile_on_host(result, "not of the form c \\+ a\\*L")
    np.testing.assert_allclose(compiled(xs=data, extra=extra_data), want, **TOL)
    np.testing.assert_allclose(compiled(xs=[], extra=extra_data[:1]),
                               np.zeros(H), **TOL)


def test_lengths_read_from_the_offsets_print_plainly(xs):
    rng = np.random.default_rng(3)
    # (an element's length L, affine as 1*L + 0, read from the data: its
    # wrapped int64 arithmetic leaves out the identities)
    W = ft.make_placeholder("W", (H, H), np.float64)
    result = ft.fold(lambda h, s: ft.tanh(ft.sum(s @ W * h, axis=0)), xs,
                     ft.ones(H))
    source = ft.compile(result).source
    assert "(ulong) (0l)" not in source and "(ulong) (1l)" not in source
    data = [rng.standard_normal((n, H)) for n in (2, 1, 3)]
    Wv = rng.standard_normal((H, H))
    h = np.ones(H)
    for s in data:
        h = np.tanh((s @ Wv * h).sum(axis=0))
    np.testing.assert_allclose(ft.compile(result)(xs=data, W=Wv), h,
                               rtol=1e-12)


def _fold_rows(c, rows):
    for r in rows:
        c = np.tanh(0.5 * c + r)
    return c


#: bodies reading counted rows of the element (s[:2], s[-3:], s[::2]),
#: padded to their largest count (these ran on the host)
COUNTED = {
    "head_times_carry": (lambda c, s: ft.tanh(c + ft.sum(s[:2] * c, axis=0)),
                         lambda c, s: np.tanh(c + (s[:2] * c).sum(axis=0))),
    "strided_and_tail": (lambda c, s: 0.5 * c + ft.sum(s[::2], axis=0)
                         + ft.sum(s[-3:], axis=0) * c,
                         lambda c, s: 0.5 * c + s[::2].sum(axis=0)
                         + s[-3:].sum(axis=0) * c),
    "count_as_a_number": (lambda c, s: 0.9 * c + s[:2].shape[0] * c,
                          lambda c, s: 0.9 * c + min(2, len(s)) * c),
    "fold_over_the_head": (lambda c, s: ft.fold(
        lambda d, r: ft.tanh(0.5 * d + r), s[:3], c),
        lambda c, s: _fold_rows(c, s[:3])),
    "weighted_head": (lambda c, s: c + ft.sum(ft.exp(s[:3] @ c)[:, None]
                                              * s[:3], axis=0),
                      lambda c, s: c + (np.exp(s[:3] @ c)[:, None]
                                        * s[:3]).sum(axis=0)),
}


def test_counted_rows_of_each_element(xs):
    named = {f"{op}_{name}": (OPS[op], body, reference)
             for name, (body, reference) in COUNTED.items()
             for op in ("fold", "scan")}
    f = ft.compile(ft.make_dict_of_named_arrays(
        {key: fn(body, xs, ft.full(H, 0.1)) for key, ((fn, _), body, _)
         in named.items()}))
    assert f.host_evaluated == ()
    for lengths in ("mixed", "nonempty", "empty_batch", "all_empty"):
        data = batch(LENGTHS[lengths], seed=3)
        got = f(xs=data)
        for key, ((fn, keep_all), body, reference) in named.items():
            want = numpy_scan(reference, data, np.full(H, 0.1), keep_all)
            np.testing.assert_allclose(got[key], want, **TOL)
            np.testing.assert_allclose(ft.evaluate_numpy(
                fn(body, xs, ft.full(H, 0.1)), xs=data), want, **TOL)


def test_counted_rows_of_an_empty_element_are_refused(xs):
    # (as numpy refuses them: a max over no row, the last of no row)
    data = batch(LENGTHS["mixed"])
    for body, error, match in (
            (lambda c, s: c + ft.amax(s[:2] * c, axis=0), ValueError,
             "element 1: zero-size array"),
            (lambda c, s: c + s[:3][-1] * c, IndexError,
             r"^index -1 is out of range for the rows of its element "
             r"\(in element 1\)$")):
        f = ft.compile(ft.fold(body, xs, ft.ones(H)))
        assert f.host_evaluated == ()
        with pytest.raises(error, match=match):
            f(xs=data)
        long = batch(LENGTHS["nonempty"])
        np.testing.assert_allclose(
            f(xs=long), ft.evaluate_numpy(ft.fold(body, xs, ft.ones(H)), xs=long),
            **TOL)
