# SPDX-License-Identifier: MIT
"""Maps over FractalTensors whose results have a length computed per
element in the body (``ft.filter`` of the element's rows, ``ft.repeat``,
``ft.product`` of two zipped elements), compiled through OpenCL on every
profile flavour (conftest.py) and checked against per-element numpy loops
and the reference evaluator. One compiled program serves every dataset:
empty elements, elements keeping all or none of their rows, no elements."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import ftlazy as ft
from test_fractal_nested_results import assert_nested
from helpers import compile_on_host

H = 3

#: element lengths, and per element whether its rows are all kept (+1),
#: none (-1) or some (0) by the predicate "row sum > 0"
DATASETS = {
    "mixed": ((4, 0, 3, 2, 1, 5), (0, 0, 1, -1, 1, 0)),
    "none_kept": ((2, 3), (-1, -1)),
    "all_empty": ((0, 0), (0, 0)),
    "one": ((1,), (1,)),
    "empty_batch": ((), ()),
}


def batch(key, seed=0):
    rng = np.random.default_rng(seed)
    data = []
    for n, sign in zip(*DATASETS[key]):
        s = rng.standard_normal((n, H))
        if sign:
            s = sign * (np.abs(s) + 0.1)
        elif n > 1:
            s[0] = np.abs(s[0]) + 0.1   # (at least one kept, one dropped)
            s[1] = -np.abs(s[1]) - 0.1
        data.append(s)
    return data


def positive(s):
    return ft.filter(lambda r: ft.sum(r) > 0, s)


def kept(s, threshold=0.0):
    # (numpy: the rows whose sum exceeds threshold)
    return s[s.sum(axis=1) > threshold]


def above_tenth(s):
    # (the predicate also reads the whole element)
    return ft.filter(lambda r: ft.sum(r) > ft.sum(s) * 0.1, s)


def placeholders():
    return (ft.make_jagged_placeholder("xs", (H,), np.float64, depth=2),
            ft.make_jagged_placeholder("ys", (H,), np.float64, depth=2))


def results(xs, ys):
    """name -> (FractalTensor or array, reference from the numpy lists of
    xs and ys, depth (1: an array))."""
    # (two selections in one body, one reduced, one returned)
    sums, doubled = ft.map(lambda s: (ft.sum(above_tenth(s), axis=0),
                                      positive(s) * 2 + ft.sum(s)), xs)
    firsts, seconds = ft.map(lambda x, y: ft.product(x, y), xs, ys)

    return {
        "filtered": (ft.map(positive, xs), lambda a, b: [kept(s) for s in a], 2),
        "repeated": (ft.map(lambda s: ft.repeat(s, 3), xs),
                     lambda a, b: [[s, s, s] for s in a], 3),
        "firsts": (firsts, lambda a, b: [
            [np.repeat(r[None], len(x), axis=0) for r in x] for x in a], 3),
        "seconds": (seconds, lambda a, b: [[y for _ in x] for x, y in zip(a, b)],
                    3),
        "sums": (sums, lambda a, b: np.array(
            [kept(s, s.sum() * 0.1).sum(axis=0) for s in a]).reshape(len(a), H),
                 1),
        "doubled": (doubled, lambda a, b: [kept(s) * 2 + s.sum() for s in a], 2),
    }


def as_parts(named):
    parts = {}
    for name, (r, _, depth) in named.items():
        if depth == 1:
            parts[name] = r
            continue
        parts[f"{name}_values"] = r.values
        parts.update({f"{name}_offsets{k}": o for k, o in enumerate(r.offsets)})
    return ft.DictOfNamedArrays(parts)


def from_parts(out, name, depth):
    if depth == 1:
        return out[name]
    return ft.JaggedArray(out[f"{name}_values"], *(
        out[f"{name}_offsets{k}"] for k in range(depth - 1)))


def test_counted_results_against_numpy():
    xs, ys = placeholders()
    named = results(xs, ys)
    program = as_parts(named)
    f = ft.compile(program)
    for key in DATASETS:
        a, b = batch(key), batch(key, seed=1)
        for out in (f(xs=a, ys=b), ft.evaluate_numpy(program, xs=a, ys=b)):
            for name, (_, reference, depth) in named.items():
                want = reference(a, b)
                got = from_parts(out, name, depth)
                if depth == 1:
                    assert got.shape == want.shape
                    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
                else:
                    assert_nested(got, want, depth)
    with pytest.raises(ValueError, match="'ys'"):
        f(xs=batch("mixed"), ys=batch("none_kept"))


def test_filtered_map_returns_a_jagged_array(monkeypatch):
    xs, _ = placeholders()
    f = ft.compile(ft.map(positive, xs))
    # the rows' lengths are computed by a compiled first phase on the
    # device, not by the reference evaluator element by element on the host
    from ftlazy.target.numpy import NumpyEvaluator

    def refuse(self, expr):
        raise AssertionError("a map was evaluated on the host")

    monkeypatch.setattr(NumpyEvaluator, "map_jagged_map", refuse)
    # nor are the running sums of those lengths and the rows' segment ids
    monkeypatch.setattr(NumpyEvaluator, "map_host_index_array", refuse)
    for key in ("mixed", "empty_batch", "none_kept"):
        data = batch(key)
        got = f(xs=data)
        want = [s[s.sum(axis=1) > 0] for s in data]
        assert isinstance(got, ft.JaggedArray)
        np.testing.assert_array_equal(got.lengths(), [len(w) for w in want])
        assert_nested(got, want, 2)


def test_copies_counted_by_sizes_from_outside_the_body():
    # ft.repeat(s, n): n a size parameter, a captured 0-d array, or the
    # number of rows a filter of the element keeps (a host index array)
    xs, _ = placeholders()
    k = ft.make_size_param("k")
    c = ft.make_placeholder("c", (), np.int64)
    # (name -> result, its inputs besides xs, reference from the numpy
    # list, k and c; one program each: loopy bounds the grid of one kernel
    # over all three for tens of seconds)
    named = {
        "by_size": (ft.map(lambda s: ft.repeat(s, k), xs), ("k",),
                    lambda a, kv, cv: [[s] * kv for s in a]),
        "by_captured": (ft.map(lambda s: ft.repeat(s, c), xs), ("c",),
                        lambda a, kv, cv: [[s] * cv for s in a]),
        "by_kept": (ft.map(lambda s: ft.repeat(s, positive(s).shape[0]), xs),
                    (), lambda a, kv, cv: [[s] * len(kept(s)) for s in a]),
    }
    for r, extra, reference in named.values():
        f = ft.compile(r)
        for key, kv, cv in (("mixed", 2, 3), ("mixed", 0, 1),
                            ("none_kept", 1, 0), ("all_empty", 3, 2),
                            ("empty_batch", 1, 1)):
            a = batch(key)
            inputs = {"xs": a} | {n: {"k": kv, "c": np.int64(cv)}[n]
                                  for n in extra}
            for got in (f(**inputs), ft.evaluate_numpy(r, **inputs)):
                assert_nested(got, reference(a, kv, cv), 3)
        if extra == ("c",):
            with pytest.raises(ValueError, match="negative"):
                f(xs=batch("mixed"), c=np.int64(-1))


def test_selections_of_selected_rows():
    # a filter of the kept rows, a predicate reading the kept rows, and a
    # count read from them: each zipped once the first selection is
    xs, _ = placeholders()
    named = {
        "twice": (ft.map(lambda s: positive(positive(s) - 0.5), xs),
                  lambda a: [kept(kept(s) - 0.5) for s in a], 2),
        "above_kept": (ft.map(lambda s: ft.filter(
            lambda r: ft.sum(r) > ft.sum(positive(s)) * 0.2, s), xs),
            lambda a: [kept(s, kept(s).sum() * 0.2) for s in a], 2),
        "copies": (ft.map(lambda s: ft.repeat(
            s, ft.sum(positive(s) > 0.5).astype(np.int64)), xs),
            lambda a: [[s] * int((kept(s) > 0.5).sum()) for s in a], 3),
    }
    program = as_parts({name: (r, None, d) for name, (r, _, d) in named.items()})
    f = ft.compile(program)
    for key in DATASETS:
        a = batch(key)
        for out in (f(xs=a), ft.evaluate_numpy(program, xs=a)):
            for name, (_, reference, depth) in named.items():
                assert_nested(from_parts(out, name, depth), reference(a), depth)


def test_kept_rows_with_zipped_and_captured_inputs_and_a_scan():
    # a dense input zipped with the map, a captured array in the predicate,
    # and a scan over each element's kept rows
    xs, _ = placeholders()
    w = ft.make_placeholder("w", (H,), np.float64)
    th = ft.make_placeholder("th", (ft.make_size_param("n"),), np.float64)
    kept = ft.map(lambda s, t: ft.filter(lambda r: ft.sum(r * w) > t, s), xs, th)
    sums = ft.map(lambda s: ft.scan(lambda c, x: ft.tanh(c + x), positive(s),
                                    ft.zeros(H)), xs)
    program = ft.DictOfNamedArrays({
        "kept_values": kept.values, "kept_offsets0": kept.offsets[0],
        "sums_values": sums.values, "sums_offsets0": sums.offsets[0]})
    f = ft.compile(program)
    wv = np.array([1.0, -0.5, 0.25])

    def rnn(s):
        out, c = [], np.zeros(H)
        for x in s:
            c = np.tanh(c + x)
            out.append(c)
        return np.array(out).reshape(len(s), H)

    for key in ("mixed", "empty_batch"):
        a = batch(key)
        tv = np.linspace(-1, 1, len(a))
        for out in (f(xs=a, w=wv, th=tv),
                    ft.evaluate_numpy(program, xs=a, w=wv, th=tv)):
            assert_nested(from_parts(out, "kept", 2),
                          [s[(s * wv).sum(axis=1) > t] for s, t in zip(a, tv)], 2)
            assert_nested(from_parts(out, "sums", 2),
                          [rnn(s[s.sum(axis=1) > 0]) for s in a], 2)


def test_copies_counted_by_a_zipped_array():
    # ft.repeat(s, k) with k an element of a dense input: k*L rows per
    # element, a size computed in the body from k
    xs, _ = placeholders()
    counts = ft.make_placeholder("counts", (ft.make_size_param("n"),), np.int64)
    copies = ft.map(lambda s, k: ft.repeat(s, k), xs, counts)
    f = ft.compile(copies)
    for key in ("mixed", "empty_batch", "all_empty"):
        a = batch(key)
        cv = np.arange(len(a)) % 3
        want = [[s] * k for s, k in zip(a, cv)]
        assert_nested(f(xs=a, counts=cv), want, 3)
        assert_nested(ft.evaluate_numpy(copies, xs=a, counts=cv), want, 3)
    with pytest.raises(ValueError, match="negative"):
        f(xs=batch("mixed"), counts=np.array([2, -1, 1, 1, 1, 1]))


@pytest.mark.parametrize("rows", [5, 0])
def test_filter_of_a_captured_tables_rows(rows):
    # each element keeps the rows of a captured table (a static number of
    # rows, stacked per element in phase 1) whose sum exceeds its own sum;
    # a filter of no rows is known to be empty when built (a dense stack)
    xs, _ = placeholders()
    table = ft.make_placeholder("table", (rows, H), np.float64)
    out = ft.map(lambda s: ft.filter(lambda r: ft.sum(r) > ft.sum(s), table),
                 xs)
    f = ft.compile(out)
    tb = np.random.default_rng(1).standard_normal((rows, H))
    for key in DATASETS:
        a = batch(key)
        want = [tb[tb.sum(axis=1) > s.sum()] for s in a]
        for got in (f(xs=a, table=tb), ft.evaluate_numpy(out, xs=a, table=tb)):
            if rows:
                assert_nested(got, want, 2)
            else:
                np.testing.assert_array_equal(got, np.zeros((len(a), 0, H)))


@pytest.mark.parametrize("shapes", [[(3, 0, 2), (), (1,), (4, 4)], [],
                                    [(0, 0), ()], [(5,)]])
def test_filters_of_each_sentence_of_documents(shapes):
    # depth 3: per document, per sentence, the rows a predicate keeps (with
    # a captured array): the same as the sentence map over all sentences of
    # all documents, nested per document (ft.map does that when it is built)
    docs = ft.make_jagged_placeholder("docs", (H,), np.float64, depth=3)
    w = ft.make_placeholder("w", (H,), np.float64)
    result = ft.map(lambda d: ft.map(
        lambda s: ft.filter(lambda r: ft.sum(r * w) > 0, s) * 2, d), docs)
    rng = np.random.default_rng(2)
    wv = rng.standard_normal(H)
    data = [[rng.standard_normal((n, H)) for n in doc] for doc in shapes]
    want = [[s[(s * wv).sum(axis=1) > 0] * 2 for s in d] for d in data]
    for got in (ft.compile(result)(docs=data, w=wv),
                ft.evaluate_numpy(result, docs=data, w=wv)):
        assert_nested(got, want, 3)


def test_counts_of_kept_rows_as_values():
    # a filter's length used as a number (the mean of the kept rows, and
    # the count itself): computed as the sum of its mask, in the kernels
    xs, _ = placeholders()

    def mean_kept(s):
        kept_rows = positive(s)
        count = kept_rows.shape[0]
        return ft.sum(kept_rows, axis=0) / ft.maximum(count, 1), count * 1
    means, counts = ft.map(mean_kept, xs)
    program = ft.make_dict_of_named_arrays({"means": means, "counts": counts})
    with warnings.catch_warnings():
        warnings.simplefilter("error", ft.HostEvaluationWarning)
        f = ft.compile(program)
    assert counts.dtype == np.int64
    for key in DATASETS:
        a = batch(key)
        want_counts = np.array([len(kept(s)) for s in a], np.int64)
        want_means = np.array([kept(s).sum(axis=0) / max(len(kept(s)), 1)
                               for s in a]).reshape(len(a), H)
        for out in (f(xs=a), ft.evaluate_numpy(program, xs=a)):
            np.testing.assert_array_equal(out["counts"], want_counts)
            np.testing.assert_allclose(out["means"], want_means, rtol=1e-12)


def test_access_operations_on_counted_results():
    # slices, elements, gathers and joins of lists counted in a map's body
    # read the total of their counts (its definition is bound where the
    # sliced node is built), through both evaluators
    xs, _ = placeholders()
    idx = ft.make_placeholder("idx", (2,), np.int64)
    filtered = ft.map(positive, xs)
    program = ft.make_dict_of_named_arrays({
        "tail": ft.flatten(filtered[1:]), "third": filtered[3] * 2,
        "picked": ft.flatten(ft.gather(filtered, idx)),
        "twice": ft.flatten(ft.join(filtered, filtered))})
    f = ft.compile(program)
    a = batch("mixed")
    kept_rows = [kept(s) for s in a]
    for out in (f(xs=a, idx=np.array([3, 0])),
                ft.evaluate_numpy(program, xs=a, idx=np.array([3, 0]))):
        np.testing.assert_allclose(out["tail"], np.concatenate(kept_rows[1:]))
        np.testing.assert_allclose(out["third"], 2 * kept_rows[3])
        np.testing.assert_allclose(out["picked"], np.concatenate(
            [kept_rows[3], kept_rows[0]]))
        np.testing.assert_allclose(out["twice"], np.concatenate(kept_rows * 2))


def test_slices_of_documents_repeated_on_the_host():
    # (each document repeated: lists counted from the whole document, a
    # loop on the host; the slice of its result reads the total of its
    # counts)
    docs = ft.make_jagged_placeholder("docs", (H,), np.float64, depth=3)
    result = ft.map(lambda d: ft.repeat(d, 2), docs)
    tail = ft.sum(ft.flatten(result[1:]), axis=0)
    rng = np.random.default_rng(6)
    data = [[rng.standard_normal((n, H)) for n in d]
            for d in [(2, 0, 3), (), (1,), (4, 4)]]
    want = 2 * sum((s.sum(axis=0) for d in data[1:] for s in d), np.zeros(H))
    for got in (compile_on_host(tail, "not affine")(docs=data),
                ft.evaluate_numpy(tail, docs=data)):
        np.testing.assert_allclose(got, want, rtol=1e-12)


def test_filters_reading_their_document():
    # the predicate reads the document (its tokens' sum, its number of
    # tokens, its mean token): those values are computed per document
    # first, then read at each sentence's document by one sentence map over
    # all sentences, compiled
    docs = ft.make_jagged_placeholder("docs", (H,), np.float64, depth=3)
    result = ft.map(lambda d: ft.map(lambda s: ft.filter(
        lambda r: ft.sum(r) > ft.sum(d.values) / 10, s), d), docs)
    by_size = ft.map(lambda d: ft.map(lambda s: ft.filter(
        lambda r: ft.sum(r) > d.values.shape[0], s), d), docs)
    by_mean = ft.map(lambda d: (lambda mean: ft.map(lambda s: ft.filter(
        lambda r: ft.sum(r * mean) > 0, s) * 2, d))(
            ft.sum(d.values, axis=0) / ft.maximum(d.values.shape[0], 1)), docs)

    def mean(d):
        tokens = np.concatenate(d) if d else np.zeros((0, H))
        return tokens.sum(axis=0) / max(len(tokens), 1)
    rng = np.random.default_rng(4)
    cases = [(result, lambda d, s: s.sum(axis=1) > sum(t.sum() for t in d) / 10, 1),
             (by_size, lambda d, s: s.sum(axis=1) > sum(len(t) for t in d), 1),
             (by_mean, lambda d, s: (s * mean(d)).sum(axis=1) > 0, 2)]
    for lazy, keep, scale in cases:
        with warnings.catch_warnings():
            warnings.simplefilter("error", ft.HostEvaluationWarning)
            compiled = ft.compile(lazy)
        for shapes in ([(3, 0, 2), (), (1,), (4, 4)], [], [(0,)]):
            data = [[rng.standard_normal((n, H)) * 3 for n in d] for d in shapes]
            want = [[s[keep(d, s)] * scale for s in d] for d in data]
            for got in (compiled(docs=data), ft.evaluate_numpy(lazy, docs=data)):
                assert_nested(got, want, 3)


def test_results_of_a_length_from_outside_the_body_stack():
    # a result whose first axis is a data-dependent size defined outside
    # the body (ys[1] of a captured FractalTensor, a clamped slice of a
    # captured array, a filter of ys[1]) has that length for every element:
    # the map stacks it, as it does for a size parameter (these were
    # counted per element and failed to compile)
    xs, ys = placeholders()
    x = ft.make_placeholder("x", (ft.make_size_param("n"), H), np.float64)

    def above_zero(a):
        return ft.filter(lambda r: ft.sum(r) > 0, a)

    rng = np.random.default_rng(3)
    x_data = rng.standard_normal((4, H))
    named = {
        "list_read": (lambda s: ft.sum(s, axis=0) * ys[1],
                      lambda s, b: s.sum(0) * b[1]),
        "clamped_slice": (lambda s: ft.sum(s, axis=0) * x[:2],
                          lambda s, b: s.sum(0) * x_data[:2]),
        "filter_of_a_list_read": (
            lambda s: ft.sum(s, axis=0) * above_zero(ys[1]),
            lambda s, b: s.sum(0) * kept(b[1])),
        "scan_over_a_list_read": (
            lambda s: ft.scan(lambda c, r: c + r, ys[1] * ft.sum(s),
                              ft.zeros(H)),
            lambda s, b: np.cumsum(b[1] * s.sum(), axis=0)),
    }
    for name, (body, reference) in named.items():
        r = ft.map(body, xs)
        assert isinstance(r, ft.Array), name
        with warnings.catch_warnings():
            warnings.simplefilter("error", ft.HostEvaluationWarning)
            f = ft.compile(r)
        for key, other in (("mixed", "mixed"), ("empty_batch", "none_kept"),
                           ("all_empty", "mixed")):
            a, b = batch(key), batch(other, seed=1)
            inputs = {"xs": a, **({"x": x_data} if name == "clamped_slice"
                                  else {"ys": b})}
            want = np.array([reference(s, b) for s in a]).reshape(
                (len(a),) + reference(np.zeros((0, H)), b).shape)
            for got in (f(**inputs), ft.evaluate_numpy(r, **inputs)):
                assert got.shape == want.shape, name
                np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    # (returned with a list the body counts: one stacked, one FractalTensor)
    same, filtered = ft.map(lambda s: (ys[1] + 1, positive(s)), xs)
    f = ft.compile(ft.make_dict_of_named_arrays(
        {"same": same, "filtered_values": filtered.values,
         "filtered_offsets0": filtered.offsets[0]}))
    a, b = batch("mixed"), batch("mixed", seed=1)
    out = f(xs=a, ys=b)
    np.testing.assert_allclose(out["same"], np.stack([b[1] + 1] * len(a)))
    assert_nested(from_parts(out, "filtered", 2), [kept(s) for s in a], 2)
    with pytest.raises(IndexError):
        f(xs=a, ys=batch("one"))


def test_sentence_maps_reading_a_captured_list_at_an_index():
    # (ys[1] is the same for every sentence: neither zipped per document
    # nor counted per sentence; the first crashed, the second was refused)
    docs = ft.make_jagged_placeholder("docs", (H,), np.float64, depth=3)
    _, ys = placeholders()
    scaled = ft.map(lambda d: ft.map(lambda s: ft.sum(s, 0) * ys[1], d), docs)
    scores = ft.map(lambda d: ft.map(lambda s: s @ ys[1].T, d), docs)
    data = [batch("mixed")[:2], [], batch("one")]
    b = batch("mixed", seed=1)[1:]     # (ys[1]: 3 rows)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ft.HostEvaluationWarning)
        f = ft.compile(scaled)
        g = ft.compile(scores)
    # (a row (len(ys[1]), H) per sentence: stacked per document)
    want = [np.reshape([s.sum(0) * b[1] for s in doc], (-1,) + b[1].shape)
            for doc in data]
    for got in (f(docs=data, ys=b), ft.evaluate_numpy(scaled, docs=data, ys=b)):
        assert got.depth == 2
        for g_doc, w_doc in zip(got.tolist(), want):
            np.testing.assert_allclose(g_doc, w_doc, atol=1e-12)
    for got in (g(docs=data, ys=b), ft.evaluate_numpy(scores, docs=data, ys=b)):
        assert [len(d) for d in got.tolist()] == [len(d) for d in data]
        for g_doc, doc in zip(got.tolist(), data):
            for g_s, s in zip(g_doc, doc):
                np.testing.assert_allclose(
                    np.reshape(g_s, (len(s), len(b[1]))), s @ b[1].T,
                    atol=1e-12)


def test_sentence_maps_reading_counted_rows_of_the_first_sentence():
    # (doc[0][:2] has a size computed per document after the first axis of
    # its transpose: evaluated on the host, correctly; one crashed when
    # built, the other was refused)
    docs = ft.make_jagged_placeholder("docs", (H,), np.float64, depth=3)
    named = {
        "rows_first": (
            ft.map(lambda d: ft.map(lambda s: ft.sum(d[0][:2] @ s.T), d), docs),
            lambda d: [(d[0][:2] @ s.T).sum() for s in d]),
        "transposed": (
            ft.map(lambda d: ft.map(lambda s: ft.sum(s @ d[0][:2].T), d), docs),
            lambda d: [(s @ d[0][:2].T).sum() for s in d]),
    }
    data = [batch("mixed")[:3], batch("one"), batch("none_kept")]
    for lazy, reference in named.values():
        f = compile_on_host(lazy, "data-dependent size")
        for got in (f(docs=data), ft.evaluate_numpy(lazy, docs=data)):
            assert [len(g) for g in got.tolist()] == [len(d) for d in data]
            for g, d in zip(got.tolist(), data):
                np.testing.assert_allclose(g, reference(d), atol=1e-12)
