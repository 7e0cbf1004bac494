# SPDX-License-Identifier: MIT
"""Maps over depth-3 FractalTensors (documents of sentences of tokens),
compiled through OpenCL on every profile flavour (conftest.py) and checked
against per-document numpy loops and the reference evaluator."""

from __future__ import annotations

import contextlib

import numpy as np
import pytest

import ftlazy as ft
from helpers import compile_on_host, nested_close

H = 3
DOCS = {
    "mixed": [(3, 0, 2), (), (1,), (4, 4)],
    "one": [(2,)],
    "empty_batch": [],
    "empty_sentences": [(0, 0), ()],
}
RNG = np.random.default_rng(11)
W = RNG.standard_normal((H, H)) * 0.5


def documents(key, seed=0):
    rng = np.random.default_rng(seed)
    return [[rng.standard_normal((n, H)) for n in doc] for doc in DOCS[key]]


@pytest.fixture
def docs():
    return ft.make_jagged_placeholder("docs", (H,), np.float64, depth=3)


def check(result, reference, data, **more):
    """*result* compiled and evaluated against *reference* (per document)."""
    want = [reference(doc) for doc in data]
    for got in (ft.compile(result)(docs=data, **more),
                ft.evaluate_numpy(result, docs=data, **more)):
        if isinstance(got, ft.JaggedArray):
            assert len(got) == len(data)
            for g, w in zip(got.tolist(), want):
                np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-12)
        else:
            assert got.shape == (len(data),) + tuple(result.shape[1:])
            np.testing.assert_allclose(got, np.array(want).reshape(got.shape),
                                       rtol=1e-12, atol=1e-12)


def check_compiled_per_document(result, reference, seed):
    """*result* (a map over ``docs``) compiled with no loop on the host,
    and evaluated, against *reference* per document, on every structure
    of :data:`DOCS`."""
    f = ft.compile(result)
    assert f.host_evaluated == ()
    for key in DOCS:
        data = documents(key, seed=seed)
        want = [reference(d) for d in data]
        for got in (f(docs=data), ft.evaluate_numpy(result, docs=data)):
            got = got.tolist() if isinstance(got, ft.JaggedArray) else list(got)
            assert len(got) == len(data)
            nested_close(got, want)


@pytest.mark.parametrize("key", list(DOCS))
def test_mean_of_sentence_embeddings_per_document(docs, key):
    Wp = ft.make_placeholder("W", (H, H), np.float64)

    def doc_fn(doc):
        sentences = ft.map(lambda s: ft.tanh(ft.sum(s @ Wp, axis=0)), doc)
        return ft.sum(sentences, axis=0) / ft.maximum(sentences.shape[0], 1)

    def reference(doc):
        rows = [np.tanh((s @ W).sum(axis=0)) for s in doc]
        return np.sum(rows, axis=0) / max(len(doc), 1) if rows else np.zeros(H)
    check(ft.map(doc_fn, docs), reference, documents(key), W=W)


def test_per_sentence_results_come_back_per_document(docs):
    # a result of the document's number of sentences: a depth-2 result
    def doc_fn(doc):
        sums = ft.map(lambda s: ft.sum(s, axis=0), doc)          # (m, H)
        return sums - ft.sum(sums, axis=0)

    def reference(doc):
        sums = np.array([s.sum(axis=0) for s in doc]).reshape(len(doc), H)
        return sums - sums.sum(axis=0)
    check(ft.map(doc_fn, docs), reference, documents("mixed"))


def test_rnn_over_each_sentence_then_max_over_sentences(docs):
    def last_state(s):
        return ft.fold(lambda h, x: ft.tanh(x + h @ W), s, ft.zeros(H))

    def doc_fn(doc):
        states = ft.map(last_state, doc)                           # (m, H)
        return ft.amax(states, axis=0, initial=-np.inf)

    def reference(doc):
        out = np.full(H, -np.inf)
        for s in doc:
            h = np.zeros(H)
            for x in s:
                h = np.tanh(x + h @ W)
            out = np.maximum(out, h)
        return out
    check(ft.map(doc_fn, docs), reference, documents("mixed"))


def test_document_data_zipped_along(docs):
    # a dense per-document weight, used after the map over sentences
    scale = ft.make_placeholder("scale", (ft.make_size_param("n"),), np.float64)
    result = ft.map(lambda doc, c: c * ft.sum(ft.map(
        lambda s: ft.sum(s * s), doc)), docs, scale)
    data = documents("mixed")
    c = np.arange(1.0, len(data) + 1)
    want = [ci * sum((s * s).sum() for s in doc) for ci, doc in zip(c, data)]
    np.testing.assert_allclose(ft.compile(result)(docs=data, scale=c), want)
    np.testing.assert_allclose(ft.evaluate_numpy(result, docs=data, scale=c), want)


def test_tokens_read_directly(docs):
    data = documents("mixed")
    # the document's tokens read directly: a map over each document's tokens
    tokens = ft.map(lambda doc: ft.sum(ft.flatten(doc), axis=0), docs)
    want = [np.concatenate(doc).sum(axis=0) if doc else np.zeros(H)
            for doc in [[s for s in d] for d in data]]
    np.testing.assert_allclose(ft.evaluate_numpy(tokens, docs=data), want)
    np.testing.assert_allclose(ft.compile(tokens)(docs=data), want,
                               rtol=1e-12, atol=1e-12)


def test_maps_over_sentences_capture_document_data(docs):
    # per-document data (zipped along, from the tokens, from the sentences)
    # used inside the map over the document's sentences: one row per
    # sentence, its document's; per-sentence data zipped with the sentences
    scale = ft.make_placeholder("scale", (ft.make_size_param("n"),), np.float64)

    def token_mean(doc):
        tokens = ft.flatten(doc)
        return ft.sum(tokens, axis=0) / ft.maximum(tokens.shape[0], 1)

    def context(doc):       # the mean sentence embedding
        emb = ft.map(lambda s: ft.tanh(ft.sum(s @ W, axis=0)), doc)
        return ft.sum(emb, axis=0) / ft.maximum(emb.shape[0], 1)

    centered = ft.map(lambda doc: ft.map(lambda s: s - token_mean(doc), doc),
                      docs)
    program = ft.DictOfNamedArrays({
        "scaled": ft.map(lambda doc, c: ft.sum(ft.map(
            lambda s: ft.sum(s) * c, doc)), docs, scale),
        "attended": ft.map(lambda doc: ft.sum(ft.map(
            lambda s: ft.sum(s @ context(doc)), doc)), docs),
        # per-sentence rows the document computes, zipped with its sentences
        "gated": ft.map(lambda doc: ft.sum(ft.map(
            lambda e, s: ft.sum(s * e), ft.tanh(ft.map(
                lambda s: ft.sum(s, axis=0), doc)), doc)), docs),
        "values": centered.values, "offsets0": centered.offsets[0],
        "offsets1": centered.offsets[1]})

    def np_context(doc):
        emb = [np.tanh((s @ W).sum(axis=0)) for s in doc]
        return sum(emb, np.zeros(H)) / max(len(doc), 1)

    def np_mean(doc):
        tokens = np.concatenate(doc).reshape(-1, H) if doc else np.zeros((0, H))
        return tokens.sum(axis=0) / max(len(tokens), 1)

    f = ft.compile(program)
    for key in DOCS:
        data = documents(key)
        c = np.arange(1.0, len(data) + 1)
        want = {
            "scaled": [ci * sum(s.sum() for s in d) for ci, d in zip(c, data)],
            "attended": [sum((s @ np_context(d)).sum() for s in d)
                         for d in data],
            "gated": [sum((s * np.tanh(s.sum(axis=0))).sum() for s in d)
                      for d in data],
        }
        centered_want = [[s - np_mean(d) for s in d] for d in data]
        for out in (f(docs=data, scale=c),
                    ft.evaluate_numpy(program, docs=data, scale=c)):
            for name, w in want.items():
                np.testing.assert_allclose(out[name], np.array(w).reshape(-1),
                                           rtol=1e-12, atol=1e-12)
            got = ft.JaggedArray(out["values"], out["offsets0"], out["offsets1"])
            assert len(got) == len(data)
            for g, w in zip(got.tolist(), centered_want):
                assert len(g) == len(w)
                for gs, ws in zip(g, w):
                    np.testing.assert_allclose(gs, ws, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("key", list(DOCS))
def test_sentences_attend_to_their_documents_tokens(docs, key):
    # hierarchical attention: each sentence's tokens attend (a softmax over
    # the document's tokens) to values its document computes from all of
    # its tokens (d.values @ W, captured by the sentence map), plus the
    # number of the document's tokens
    Wp = ft.make_placeholder("W", (H, H), np.float64)

    def doc_fn(doc):
        tokens = doc.values
        values = tokens @ Wp

        def sentence(s):
            scores = s @ tokens.T
            e = ft.exp(scores - ft.amax(scores, axis=1, keepdims=True,
                                        initial=-np.inf))
            return (e / ft.sum(e, axis=1, keepdims=True)) @ values \
                + tokens.shape[0]
        return ft.map(sentence, doc)

    def reference(doc):
        tokens = np.concatenate(doc) if doc else np.zeros((0, H))
        out = []
        for s in doc:
            scores = s @ tokens.T
            e = np.exp(scores - scores.max(axis=1, keepdims=True,
                                           initial=-np.inf))
            out.append((e / e.sum(axis=1, keepdims=True)) @ (tokens @ W)
                       + len(tokens))
        return out
    data = documents(key, seed=3)
    want = [reference(d) for d in data]
    result = ft.map(doc_fn, docs)
    for got in (ft.compile(result)(docs=data, W=W),
                ft.evaluate_numpy(result, docs=data, W=W)):
        assert len(got.tolist()) == len(data)
        for gd, wd in zip(got.tolist(), want):
            assert len(gd) == len(wd)
            for g, w in zip(gd, wd):
                np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-12)


def test_sentences_reading_the_sentence_structure_run_on_the_host(docs):
    # per sentence, data of the document's sizes that reads its sentence
    # offsets (each sentence's rows scaled by every sentence's length)
    result = ft.map(lambda d: ft.map(
        lambda s: ft.sum(s[:, None, :] * ft.lengths(d)[None, :, None], axis=1),
        d), docs)
    compiled = compile_on_host(result, "depth 3")
    for key in DOCS:
        data = documents(key)
        got = compiled(docs=data).tolist()
        assert len(got) == len(data)
        for gd, d in zip(got, data):
            total = sum(len(s) for s in d)
            assert len(gd) == len(d)
            for g, s in zip(gd, d):
                np.testing.assert_allclose(g, s * total, rtol=1e-12)


def test_sentences_read_the_tokens_of_zipped_documents(docs):
    # each sentence of docs against the tokens of the zipped document of
    # docs2 (the same structure, checked at run time) and its own's
    docs2 = ft.make_jagged_placeholder("docs2", (H,), np.float64, depth=3)
    result = ft.map(lambda d, e: ft.map(
        lambda s: s @ e.values.T @ d.values, d), docs, docs2)
    data, data2 = documents("mixed", seed=4), documents("mixed", seed=5)

    def tokens(doc):
        return np.concatenate(doc) if doc else np.zeros((0, H))
    want = [[s @ tokens(e).T @ tokens(d) for s in d]
            for d, e in zip(data, data2)]
    compiled = ft.compile(result)
    for got in (compiled(docs=data, docs2=data2),
                ft.evaluate_numpy(result, docs=data, docs2=data2)):
        for gd, wd in zip(got.tolist(), want, strict=True):
            for g, w in zip(gd, wd, strict=True):
                np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-12)
    with pytest.raises(ValueError, match="docs2"):
        compiled(docs=data, docs2=documents("one"))


@pytest.mark.parametrize("key", list(DOCS))
def test_maps_over_the_lists_a_sentence_map_returned(docs, key):
    # per document, a map over the lists an earlier map over its sentences
    # returned (a reversed RNN per sentence, then each one's sum and the
    # lists scaled), as one would chain two maps in numpy
    Wp = ft.make_placeholder("W", (H, H), np.float64)

    def doc_fn(doc):
        states = ft.map(lambda s: ft.scan(lambda h, x: ft.tanh(x + h @ Wp),
                                          s[::-1], ft.zeros(H)), doc)
        sums = ft.map(lambda x: ft.sum(x, axis=0), states)
        return ft.sum(sums, axis=0), ft.map(lambda x: x * 2, states)

    def rnn(s):
        h, out = np.zeros(H), []
        for x in s[::-1]:
            h = np.tanh(x + h @ W)
            out.append(h)
        return np.array(out).reshape(len(s), H)
    data = documents(key, seed=6)
    totals, doubled = ft.map(doc_fn, docs)
    want_totals = np.array([sum((rnn(s).sum(axis=0) for s in d), np.zeros(H))
                            for d in data]).reshape(len(data), H)
    for run in (lambda r: ft.compile(r)(docs=data, W=W),
                lambda r: ft.evaluate_numpy(r, docs=data, W=W)):
        np.testing.assert_allclose(run(totals), want_totals, rtol=1e-12,
                                   atol=1e-12)
        got = run(doubled).tolist()
        for gd, d in zip(got, data, strict=True):
            for g, s in zip(gd, d, strict=True):
                np.testing.assert_allclose(g, rnn(s) * 2, rtol=1e-12,
                                           atol=1e-12)


@pytest.mark.parametrize("extra", [0, 2])
def test_documents_a_map_computed_centred_by_their_token_count(docs, extra):
    # documents whose sentences a first map lengthens by `extra` rows (or
    # scans), then each sentence minus its document's token sum over
    # max(T, 1): the token count T of a computed document is an integer
    # extent inside a float cast (once emitted as an ambiguous max(double,
    # long) that OpenCL refused to build)
    def lengthen(s):
        if extra:
            return ft.concatenate([s, ft.zeros((extra, H))]) * 1.0
        return ft.scan(lambda h, x: h + x, s, ft.zeros(H))
    grown = ft.map(lambda d: ft.map(lengthen, d), docs)
    result = ft.map(lambda d: ft.map(
        lambda s: s - ft.sum(d.values, axis=0) / ft.maximum(d.values.shape[0], 1),
        d), grown)

    def numpy_lengthen(s):
        if extra:
            return np.concatenate([s, np.zeros((extra, H))])
        return np.cumsum(s, axis=0)
    f = ft.compile(result)
    for key in DOCS:
        data = documents(key, seed=4)
        got = f(docs=data).tolist()
        assert len(got) == len(data)
        for gd, d in zip(got, data):
            rows = [numpy_lengthen(s) for s in d]
            tokens = np.concatenate(rows) if rows else np.zeros((0, H))
            centre = tokens.sum(axis=0) / max(len(tokens), 1)
            for g, s in zip(gd, rows, strict=True):
                np.testing.assert_allclose(g, s - centre, rtol=1e-12,
                                           atol=1e-12)


def _sentence_maps(docs, *steps):
    for step in steps:
        docs = ft.map(lambda d, step=step: ft.map(step, d), docs)
    return docs


@pytest.mark.parametrize("chain", ["shifted_twice", "grown_twice",
                                   "filtered_then_grown"])
def test_chained_sentence_maps(docs, chain):
    # maps over documents of documents computed by maps over documents: the
    # offsets of the later maps read the segment ids the earlier ones need
    # (derived on the host as the later offsets are evaluated)
    shifted = (lambda s: ft.shifted_slide(s, 3)[:, 0, :] + s,
               lambda s: np.roll(s, 1, axis=0) + s)
    grown = (lambda s: ft.concatenate([s, ft.zeros((1, H))]) * 2.0,
             lambda s: np.concatenate([s, np.zeros((1, H))]) * 2.0)
    kept = (lambda s: ft.filter(lambda r: ft.sum(r) > 0, s),
            lambda s: s[s.sum(axis=1) > 0])
    steps = {"shifted_twice": [shifted, shifted], "grown_twice": [grown, grown],
             "filtered_then_grown": [kept, grown]}[chain]
    computed = _sentence_maps(docs, *(lazy for lazy, _ in steps))
    result = ft.map(lambda d: ft.fold(lambda h, s: ft.tanh(
        h @ W + ft.sum(s, axis=0)), d, ft.zeros(H)), computed)
    f = ft.compile(result)
    assert f.host_evaluated == ()
    for key in DOCS:
        data = documents(key, seed=5)
        want = []
        for d in data:
            h = np.zeros(H)
            for s in d:
                for _, numpy_step in steps:
                    s = numpy_step(s)
                h = np.tanh(h @ W + s.sum(axis=0))
            want.append(h)
        np.testing.assert_allclose(f(docs=data),
                                   np.reshape(want, (-1, H)), rtol=1e-12,
                                   atol=1e-12)


def test_sentences_read_at_a_fixed_index(docs):
    # a document's first and last sentences (and one at an index given at
    # run time), used through arrays of a static shape: a map over the
    # sentences and a gather, compiled; too few sentences: IndexError, as
    # doc[k] raises
    k = ft.make_placeholder("k", (), np.int64)

    def encode(s):
        return ft.fold(lambda h, x: ft.tanh(h @ W + x), s, ft.zeros(H))
    result = ft.make_dict_of_named_arrays({
        "title": ft.map(lambda d: encode(d[0]) + ft.sum(d.values, axis=0),
                        docs),
        "ends": ft.map(lambda d: ft.sum(d[0], axis=0)
                       * ft.amax(d[-1], axis=0, initial=0.0), docs),
        "picked": ft.map(lambda d: ft.sum(d[k], axis=0), docs)})
    f = ft.compile(result)
    assert f.host_evaluated == ()

    def rnn(rows):
        h = np.zeros(H)
        for x in rows:
            h = np.tanh(h @ W + x)
        return h
    data = [d for d in documents("mixed", seed=6) if d]     # (no empty one)
    for index in (1, -2, 0):
        chosen = [d for d in data if -len(d) <= index < len(d)]
        got = f(docs=chosen, k=np.int64(index))
        for name, want in (
                ("title", [rnn(d[0]) + np.concatenate(d).sum(axis=0)
                           for d in chosen]),
                ("ends", [d[0].sum(axis=0) * np.max(d[-1], axis=0, initial=0.0)
                          for d in chosen]),
                ("picked", [d[index].sum(axis=0) for d in chosen])):
            np.testing.assert_allclose(got[name], np.reshape(want, (-1, H)),
                                       rtol=1e-12, atol=1e-12)
    for run in (f, lambda **a: ft.evaluate_numpy(result, **a)):
        with pytest.raises(IndexError):
            run(docs=documents("mixed", seed=6), k=np.int64(0))


def _numpy_states(rows):
    h, out = np.zeros(H), []
    for x in rows:
        h = np.tanh(h @ W + x)
        out.append(h)
    return np.reshape(out, (-1, H))


PICKED_SENTENCE_BODIES = {
    "doubled": (lambda d, k: d[0] * 2, lambda d, k: 2 * d[0]),
    "projected": (lambda d, k: ft.tanh(d[k] @ W),
                  lambda d, k: np.tanh(d[k] @ W)),
    # (an index computed from an input, not from the document)
    "before": (lambda d, k: d[k - 1] + 1.0, lambda d, k: d[k - 1] + 1.0),
    "states": (lambda d, k: ft.scan(lambda h, x: ft.tanh(h @ W + x), d[-1],
                                    ft.zeros(H)),
               lambda d, k: _numpy_states(d[-1])),
}


@pytest.mark.parametrize("body", list(PICKED_SENTENCE_BODIES))
def test_sentences_read_at_an_index_and_returned(docs, body):
    # the sentence's rows are the result (a FractalTensor of the picked
    # sentences' lengths): the sentences are picked first, then mapped,
    # compiled; a document with too few sentences: IndexError in both
    # evaluators
    k = ft.make_placeholder("k", (), np.int64)
    lazy_body, numpy_body = PICKED_SENTENCE_BODIES[body]
    result = ft.map(lambda d: lazy_body(d, k), docs)
    f = ft.compile(result)
    assert f.host_evaluated == ()
    reads_k = body in ("projected", "before")
    given = (lambda i: {"k": np.int64(i)}) if reads_k else (lambda i: {})
    data = [d for d in documents("mixed", seed=7) if d]     # (no empty one)
    for index in ((0, 1, -1) if reads_k else (0,)):
        position = index - 1 if body == "before" else index
        chosen = [d for d in data if -len(d) <= position < len(d)]
        want = [numpy_body(d, index) for d in chosen]
        for got in (f(docs=chosen, **given(index)),
                    ft.evaluate_numpy(result, docs=chosen, **given(index))):
            rows = got.tolist()
            assert len(rows) == len(want)
            for g, w in zip(rows, want):
                np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-12)
    assert len(f(docs=[], **given(0)).tolist()) == 0
    for run in (f, lambda **a: ft.evaluate_numpy(result, **a)):
        with pytest.raises(IndexError):
            run(docs=documents("mixed", seed=7), **given(0))


def test_two_sentences_in_one_result_run_on_the_host(docs):
    # (two sentences of the document in one node: the reads stay, on the
    # host)
    result = ft.map(lambda d: ft.concatenate([d[0], d[-1]]) * 2, docs)
    f = compile_on_host(result, "not affine in the element")
    data = [d for d in documents("mixed", seed=7) if d]
    got = f(docs=data)
    for g, d in zip(got.tolist(), data, strict=True):
        np.testing.assert_allclose(g, 2 * np.concatenate([d[0], d[-1]]))

@pytest.mark.parametrize("index", [slice(1, None), slice(None, -1),
                                   slice(1, 3), slice(None, None, -2),
                                   slice(5, None)], ids=str)
def test_slices_of_documents_mapped(docs, index):
    # each document's sentences [index] (clamped per document, as Python
    # does), mapped: the documents are sliced before the map, compiled
    result = ft.map(lambda d: ft.map(lambda s: ft.tanh(s @ W), d[index]),
                    docs)
    f = ft.compile(result)
    assert f.host_evaluated == ()
    for key in ("mixed", "empty_batch", "empty_sentences"):
        data = documents(key, seed=8)
        want = [[np.tanh(s @ W) for s in d[index]] for d in data]
        for got in (f(docs=data), ft.evaluate_numpy(result, docs=data)):
            nested_close(got.tolist(), want)


def test_slices_of_documents_returned_folded_and_counted(docs):
    # the slice returned; folded over and divided by its own length; its
    # sentences scaled by a per-document row zipped along
    scale = ft.make_placeholder("scale", (4, H), np.float64)
    result = {
        "tail": ft.map(lambda d: d[1:], docs),
        # (d[:-1:1] is the same slice as d[:-1]: one view)
        "mean": ft.map(lambda d: ft.fold(lambda h, s: h + ft.sum(s, axis=0),
                                         d[:-1], ft.zeros(H))
                       / ft.maximum(d[:-1:1].length, 1), docs),
        "scaled": ft.map(lambda d, r: ft.map(lambda s: s * r, d[::2]),
                         docs, scale)}
    data = documents("mixed", seed=9)
    rows = RNG.standard_normal((4, H))
    want = {
        "tail": [d[1:] for d in data],
        "mean": [sum((s.sum(axis=0) for s in d[:-1]), np.zeros(H))
                 / max(len(d) - 1, 1) for d in data],
        "scaled": [[s * r for s in d[::2]] for d, r in zip(data, rows)]}
    for name, r in result.items():
        f = ft.compile(r)
        assert f.host_evaluated == ()
        given = {"docs": data, **({"scale": rows} if name == "scaled" else {})}
        for got in (f(**given), ft.evaluate_numpy(r, **given)):
            nested_close(got.tolist() if name != "mean" else got, want[name])


def test_slice_and_the_rest_of_the_document(docs):
    # the body reads its document besides the slice (its first sentence's
    # encoding, its sentence count, its token sum): those are computed per
    # document first and zipped into the map over the sliced documents,
    # compiled
    def encode(s):
        return ft.fold(lambda h, x: ft.tanh(h @ W + x), s, ft.zeros(H))

    def rnn(rows):
        h = np.zeros(H)
        for x in rows:
            h = np.tanh(h @ W + x)
        return h
    bodies = {
        "title_and_rest": (
            lambda d: ft.fold(lambda h, s: ft.tanh(h @ W + encode(s)), d[1:],
                              encode(d[0])),
            lambda d: _folded([rnn(s) for s in d[1:]], rnn(d[0]))),
        "scaled_by_counts": (
            lambda d: ft.map(lambda s: ft.sum(s, axis=0), d[:-1])
            * d.length + ft.sum(d.values, axis=0),
            lambda d: [s.sum(axis=0) * len(d)
                       + np.concatenate(d).sum(axis=0) for s in d[:-1]]),
    }
    data = [d for d in documents("mixed", seed=10) if d]     # (titled)
    for name, (lazy, reference) in bodies.items():
        result = ft.map(lazy, docs)
        f = ft.compile(result)
        assert f.host_evaluated == ()
        want = [reference(d) for d in data]
        for got in (f(docs=data), ft.evaluate_numpy(result, docs=data)):
            nested_close(got.tolist(), want)
        # (an empty document has no title)
        with pytest.raises(IndexError) if name == "title_and_rest" else (
                contextlib.nullcontext()):
            f(docs=documents("mixed", seed=10))


def _folded(encodings, h):
    for e in encodings:
        h = np.tanh(h @ W + e)
    return h


def _rnn_over(encodings, h=None):
    h = np.zeros(H) if h is None else h
    for e in encodings:
        h = np.tanh(h @ W + e)
    return h


JOINED_BODIES = {
    # (every sentence but the second, encoded)
    "drop_second": (
        lambda d: ft.map(lambda s: ft.tanh(ft.sum(s @ W, axis=0)),
                         ft.join(d[:1], d[2:])),
        lambda d: [np.tanh((s @ W).sum(axis=0)) for s in d[:1] + d[2:]]),
    # (the first sentence moved last, returned)
    "rotated": (lambda d: ft.join(d[1:], d[:1]), lambda d: d[1:] + d[:1]),
    # (the document read twice over, a fold; three pieces, one reversed)
    "twice_folded": (
        lambda d: ft.fold(lambda h, s: ft.tanh(h @ W + ft.sum(s, axis=0)),
                          ft.join(ft.join(d, d[::-1]), d[1:2]), ft.zeros(H)),
        lambda d: _rnn_over([s.sum(axis=0) for s in d + d[::-1] + d[1:2]])),
    # (its length used, and its token count)
    "counted": (
        lambda d: (lambda v: ft.sum(v.values, axis=0) / ft.maximum(
            v.length, 1))(ft.join(d[:-1], d[::2])),
        lambda d: sum((s.sum(axis=0) for s in d[:-1] + d[::2]), np.zeros(H))
        / max(len(d[:-1] + d[::2]), 1)),
}


@pytest.mark.parametrize("body", list(JOINED_BODIES))
def test_joined_slices_of_documents(docs, body):
    # ft.join of slices of the document (or the document itself) is one
    # view of it: the documents are sliced and joined before the map,
    # compiled
    check_compiled_per_document(ft.map(JOINED_BODIES[body][0], docs),
                                JOINED_BODIES[body][1], seed=12)


def test_a_join_with_the_title_read_besides(docs):
    # (the title's encoding starts a fold over the other sentences, the
    # second moved last: computed per document first, zipped along)
    def encode(s):
        return ft.tanh(ft.sum(s @ W, axis=0))
    result = ft.map(lambda d: ft.fold(lambda h, s: ft.tanh(h @ W + encode(s)),
                                      ft.join(d[2:], d[1:2]), encode(d[0])),
                    docs)
    f = ft.compile(result)
    assert f.host_evaluated == ()
    data = [d for d in documents("mixed", seed=13) if d]
    want = [_rnn_over([np.tanh((s @ W).sum(axis=0)) for s in d[2:] + d[1:2]],
                      np.tanh((d[0] @ W).sum(axis=0))) for d in data]
    for got in (f(docs=data), ft.evaluate_numpy(result, docs=data)):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def test_a_join_of_a_captured_lists_slices_in_a_body():
    # (not a view of the map's element: computed once outside the map, its
    # pieces' bounds in the kernel typed int64, as OpenCL's min needs)
    xs = ft.make_jagged_placeholder("xs", (H,), np.float64, depth=2)
    ys = ft.make_jagged_placeholder("ys", (H,), np.float64, depth=2)
    result = ft.map(lambda s: ft.sum(s, axis=0) + ft.fold(
        lambda h, t: h * 0.5 + ft.sum(t, axis=0), ft.join(ys[:1], ys[2:]),
        ft.zeros(H)), xs)
    f = ft.compile(result)
    assert f.host_evaluated == ()
    rng = np.random.default_rng(3)
    xv = [rng.standard_normal((k, H)) for k in (2, 0)]
    for lengths in ((1, 2, 3), (), (4,)):
        yv = [rng.standard_normal((k, H)) for k in lengths]
        h = np.zeros(H)
        for t in yv[:1] + yv[2:]:
            h = h * 0.5 + t.sum(axis=0)
        want = [s.sum(axis=0) + h for s in xv]
        for got in (f(xs=xv, ys=yv), ft.evaluate_numpy(result, xs=xv, ys=yv)):
            np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def _question_encoding(q):
    return ft.fold(lambda h, x: ft.tanh(h @ W + x), q, ft.zeros(H))


QUESTION_BODIES = {
    # (each document with its question: the question's token sum)
    "token_sums": (
        lambda d, q: ft.sum(d.values, axis=0) + ft.sum(q, axis=0),
        lambda d, q: sum((s.sum(axis=0) for s in d), np.zeros(H))
        + q.sum(axis=0)),
    # (each sentence scored against the question's encoding)
    "sentence_scores": (
        lambda d, q: (lambda e: ft.map(lambda s: ft.sum(s @ e), d))(
            _question_encoding(q)),
        lambda d, q: [(s @ _rnn_over(q)).sum() for s in d]),
    # (a recurrence over the sentences started from it, scaled by the
    # question's length)
    "started_fold": (
        lambda d, q: ft.fold(lambda h, s: ft.tanh(h @ W + ft.sum(s, axis=0)),
                             d, _question_encoding(q) * q.shape[0]),
        lambda d, q: _rnn_over([s.sum(axis=0) for s in d],
                               _rnn_over(q) * len(q))),
    # (each sentence attending to the question's tokens themselves: the
    # map over the sentences runs over all sentences, each reading its
    # document's question)
    "attending": (
        lambda d, q: ft.map(lambda s: ft.sum(ft.tanh(s @ W @ q.T))
                            / ft.maximum(q.shape[0], 1), d),
        lambda d, q: [np.tanh(s @ W @ q.T).sum() / max(len(q), 1)
                      for s in d]),
    # (and a row per token: results of each sentence's length)
    "attended_tokens": (
        lambda d, q: ft.map(lambda s: ft.tanh(s @ q.T) @ q, d),
        lambda d, q: [np.tanh(s @ q.T) @ q for s in d]),
}


@pytest.mark.parametrize("index", ["own", "reversed"])
@pytest.mark.parametrize("body", list(QUESTION_BODIES))
def test_documents_read_their_questions(docs, body, index):
    # a map over documents that reads another list's element at the
    # document's index, through arrays of a static shape computed from it
    # (those first, by a map over the read elements, zipped in) or in a
    # map over its sentences (each sentence reads it); compiled
    questions = ft.make_jagged_placeholder("questions", (H,), np.float64,
                                           depth=2)
    lazy, reference = QUESTION_BODIES[body]
    n = docs.length
    pick = (lambda i: i) if index == "own" else (lambda i: n - 1 - i)
    result = ft.map(lambda d, i: lazy(d, questions[pick(i)]), docs,
                    ft.arange(n))
    f = ft.compile(result)
    assert f.host_evaluated == ()
    rng = np.random.default_rng(16)
    for key in DOCS:
        data = documents(key, seed=16)
        asked = [rng.standard_normal((k, H)) for k in rng.integers(0, 4, len(data))]
        order = range(len(data)) if index == "own" else range(len(data))[::-1]
        want = [reference(d, asked[j]) for d, j in zip(data, order)]
        for got in (f(docs=data, questions=asked),
                    ft.evaluate_numpy(result, docs=data, questions=asked)):
            nested_close(got.tolist() if isinstance(got, ft.JaggedArray)
                         else list(got), want)


def test_questions_read_at_a_computed_index(docs):
    # (an index each document computes: checked at run time)
    questions = ft.make_jagged_placeholder("questions", (H,), np.float64,
                                           depth=2)
    picks = ft.make_placeholder("picks", (docs.length,), np.int64)
    result = ft.map(lambda d, k: ft.sum(d.values, axis=0)
                    + _question_encoding(questions[k]), docs, picks)
    f = ft.compile(result)
    assert f.host_evaluated == ()
    data = documents("mixed", seed=17)
    asked = [RNG.standard_normal((k, H)) for k in (2, 0)]
    chosen = np.array([1, 0, -1, 0])
    want = [sum((s.sum(axis=0) for s in d), np.zeros(H))
            + _rnn_over(asked[j]) for d, j in zip(data, chosen)]
    for run in (f, lambda **a: ft.evaluate_numpy(result, **a)):
        np.testing.assert_allclose(run(docs=data, questions=asked,
                                       picks=chosen), want, atol=1e-12)
        with pytest.raises(IndexError, match="out of range"):
            run(docs=data, questions=asked, picks=np.array([0, 2, 0, 0]))


def _summed(sentences):
    return sum((s.sum(axis=0) for s in sentences), np.zeros(H))


def _folded_over(sentences, h):
    for s in sentences:
        h = np.tanh(h @ W + s.sum(axis=0))
    return h


#: bodies reading two slices of the document apart: (lazy, reference)
TWO_SLICES = {
    "sums": (lambda d: ft.sum(d[:1].values, axis=0)
             - ft.sum(d[2:].values, axis=0),
             lambda d: _summed(d[:1]) - _summed(d[2:])),
    # (a fold over one slice, started from the other's sum)
    "fold_from_the_head": (
        lambda d: ft.fold(lambda h, s: ft.tanh(h @ W + ft.sum(s, axis=0)),
                          d[2:], ft.sum(d[:2].values, axis=0)),
        lambda d: _folded_over(d[2:], _summed(d[:2]))),
    # (a list counted from one slice, shifted by the other's token sum)
    "encodings_of_the_tail": (
        lambda d: ft.map(lambda s: ft.sum(s, axis=0)
                         + ft.sum(d[:-1].values, axis=0), d[-1:]),
        lambda d: [s.sum(axis=0) + _summed(d[:-1]) for s in d[-1:]]),
    # (three slices, one reversed)
    "three": (lambda d: ft.sum(d[:1].values, axis=0)
              * ft.sum(d[::-1][:2].values, axis=0) + d[1:].length,
              lambda d: _summed(d[:1]) * _summed(d[::-1][:2]) + len(d[1:])),
}


@pytest.mark.parametrize("body", list(TWO_SLICES))
def test_two_views_read_apart(docs, body):
    # (one slice as the rebuilt map's element; what the body computes from
    # the others, of a static shape, per document first)
    lazy, reference = TWO_SLICES[body]
    check_compiled_per_document(ft.map(lazy, docs), reference, seed=14)


def test_two_views_in_one_array_run_on_the_host(docs):
    # (two slices' tokens in one array: a shape of both views' sizes,
    # left as they are)
    result = ft.map(lambda d: ft.sum(ft.concatenate(
        [d[:1].values, d[2:].values]) @ W, axis=0), docs)
    f = compile_on_host(result, "runs on the host")
    data = documents("mixed", seed=14)
    want = [(_summed(d[:1]) + _summed(d[2:])) @ W for d in data]
    np.testing.assert_allclose(f(docs=data), want, rtol=1e-12, atol=1e-12)


def test_slice_and_the_documents_size_in_a_shape_run_on_the_host(docs):
    # (a shape of the document's size next to the slice: not a value that
    # can be computed per document first; the slice stays, on the host)
    result = ft.map(lambda d: ft.concatenate(
        [ft.map(lambda s: ft.sum(s, axis=0), d[1:]),
         ft.zeros((d.length, H))]), docs)
    f = compile_on_host(result, "not affine in the element")
    data = documents("mixed", seed=10)
    nested_close(f(docs=data).tolist(),
                 [[s.sum(axis=0) for s in d[1:]] + [np.zeros(H)] * len(d)
                  for d in data])


def test_whole_documents_tokens_filtered(docs):
    # lists counted from a whole document's tokens (a filter, scaled by
    # the document's token and sentence counts): a map over each
    # document's tokens as one list (its sentence count zipped along),
    # compiled
    result = ft.map(lambda d: ft.filter(lambda r: ft.sum(r) > 0, d.values)
                    / ft.maximum(d.values.shape[0], 1) * d.length, docs)
    f = ft.compile(result)
    assert f.host_evaluated == ()

    def kept(doc):
        tokens = np.concatenate(doc + [np.zeros((0, H))])
        return tokens[tokens.sum(axis=1) > 0] / max(len(tokens), 1) * len(doc)
    for key in DOCS:
        data = documents(key, seed=12)
        for got in (f(docs=data), ft.evaluate_numpy(result, docs=data)):
            nested_close(got.tolist(), [kept(d) for d in data])


@pytest.mark.parametrize("extra", ["alone", "with_the_count"])
def test_sentence_encodings_filtered_per_document(docs, extra):
    # lists counted from the rows of a map over each document's sentences
    # (their RNN encodings kept where positive): that map over all
    # sentences, its rows grouped per document, and the filter mapped over
    # those, compiled; the sentence count next to them is zipped along
    Wp = ft.make_placeholder("W", (H, H), np.float64)

    def encode(s):
        return ft.fold(lambda h, x: ft.tanh(x + h @ Wp), s, ft.zeros(H))

    def body(d):
        kept = ft.filter(lambda e: ft.sum(e) > 0, ft.map(encode, d))
        return kept * d.length if extra == "with_the_count" else kept

    result = ft.map(body, docs)
    f = ft.compile(result)
    assert f.host_evaluated == ()

    def numpy_encode(s):
        h = np.zeros(H)
        for x in s:
            h = np.tanh(x + h @ W)
        return h

    def kept(doc):
        rows = [numpy_encode(s) for s in doc]
        rows = [e for e in rows if e.sum() > 0]
        scale = len(doc) if extra == "with_the_count" else 1
        return np.array(rows).reshape(-1, H) * scale
    for key in DOCS:
        data = documents(key, seed=13)
        for got in (f(docs=data, W=W), ft.evaluate_numpy(result, docs=data, W=W)):
            assert len(got) == len(data)
            nested_close(got.tolist(), [kept(d) for d in data])


def _positive(s):
    return ft.sum(s) > 0


def _kept(doc):
    return [s for s in doc if s.sum() > 0]


def _folded_sums(sentences):
    h = np.zeros(H)
    for s in sentences:
        h = np.tanh(h @ W + s.sum(axis=0))
    return h


FILTERED_BODIES = {
    # the kept sentences returned, mapped, folded and counted; the
    # predicate reads each sentence alone
    "kept": (lambda d: ft.filter(_positive, d), _kept),
    "kept_sums": (lambda d: ft.map(lambda s: ft.sum(s, axis=0),
                                   ft.filter(_positive, d)),
                  lambda d: np.array([s.sum(axis=0) for s in _kept(d)]
                                     ).reshape(-1, H)),
    "kept_fold": (lambda d: ft.fold(
        lambda h, s: ft.tanh(h @ ft.asarray(W) + ft.sum(s, axis=0)),
        ft.filter(_positive, d), ft.zeros(H)),
        lambda d: _folded_sums(_kept(d))),
    "kept_share": (lambda d: ft.filter(_positive, d).length / ft.maximum(
        d.length, 1) * ft.ones(H),
        lambda d: np.full(H, len(_kept(d)) / max(len(d), 1))),
    # (views of views: each map rebuilt over the first view takes the
    # second as its own)
    "kept_after_title": (lambda d: ft.filter(_positive, d[1:]),
                         lambda d: _kept(d[1:])),
    "kept_without_first": (lambda d: ft.filter(_positive, d)[1:],
                           lambda d: _kept(d)[1:]),
    "kept_after_title_first_three": (
        lambda d: ft.filter(_positive, d[1:])[:3], lambda d: _kept(d[1:])[:3]),
    "kept_twice": (lambda d: ft.filter(
        lambda s: ft.sum(s) < 2, ft.filter(_positive, d)),
        lambda d: [s for s in _kept(d) if s.sum() < 2]),
}


@pytest.mark.parametrize("body", list(FILTERED_BODIES))
def test_sentences_filtered_per_document(docs, body):
    # each document's sentences kept where the predicate holds: the
    # predicate over all sentences of all documents, one filter, each
    # document keeping those of its range; compiled
    check_compiled_per_document(ft.map(FILTERED_BODIES[body][0], docs),
                                FILTERED_BODIES[body][1], seed=14)


def test_a_filter_reading_its_document(docs):
    # a predicate that compares each sentence with its document's mean
    # token captures what the body computed from the document: the means
    # are computed per document first, a row per sentence, and zipped into
    # the predicate over all sentences; compiled
    def mean(d):
        return ft.sum(d.values, axis=0) / ft.maximum(d.values.shape[0], 1)

    result = ft.map(lambda d: ft.filter(
        lambda s: ft.sum(ft.sum(s, axis=0) - mean(d)) > 0, d), docs)
    f = ft.compile(result)
    assert f.host_evaluated == ()

    def reference(doc):
        tokens = np.concatenate(doc + [np.zeros((0, H))])
        centre = tokens.sum(axis=0) / max(len(tokens), 1)
        return [s for s in doc if (s.sum(axis=0) - centre).sum() > 0]
    for key in DOCS:
        data = documents(key, seed=15)
        for got in (f(docs=data), ft.evaluate_numpy(result, docs=data)):
            nested_close(got.tolist(), [reference(d) for d in data])


def test_a_filter_reading_its_documents_tokens(docs):
    # a predicate reading the document's tokens themselves, an array of
    # the document's size: the mask is computed per document first (a map
    # over its sentences that reads its tokens), its values in order;
    # compiled
    def reference(doc):
        tokens = np.concatenate(doc + [np.zeros((0, H))])
        return [s for s in doc if (s @ tokens.T).sum() > 0.25]
    check_compiled_per_document(
        ft.map(lambda d: ft.filter(lambda s: ft.sum(s @ d.values.T) > 0.25, d),
               docs), reference, seed=15)


def test_maps_over_gathered_sentences_of_each_document(docs):
    # (ft.gather(doc, idx) has counts known per document: such maps ran on
    # the host; a map over the gathered sentences with results of a static
    # shape is the map over all of the document's sentences, gathered)
    idx = ft.make_placeholder("idx", (2,), np.int64)

    def encode(s):
        return ft.tanh(ft.sum(s, axis=0) @ W)

    encodings = ft.map(lambda d: ft.map(encode, ft.gather(d, idx)), docs)
    summary = ft.map(lambda d: ft.sum(ft.map(lambda s: ft.amax(
        s, axis=0, initial=0.0), ft.gather(d, idx)), axis=0)
        + ft.lengths(ft.gather(d, idx)).astype(np.float64)[0], docs)
    data = [[RNG.standard_normal((n, H)) for n in doc]
            for doc in [(3, 0, 2), (1, 1), (4, 2, 2, 1)]]

    def encoded(doc, picks):
        return [np.tanh(doc[k].sum(axis=0) @ W) for k in picks]

    def summarized(doc, picks):
        return (sum(np.amax(doc[k], axis=0, initial=0.0) for k in picks)
                + len(doc[picks[0]]))

    for picks in ([1, 0], [-1, 0], [0, 0]):
        given = np.array(picks)
        for result, reference in ((encodings, encoded),
                                  (summary, summarized)):
            f = ft.compile(result)
            assert f.host_evaluated == ()
            want = np.array([reference(d, picks) for d in data])
            for got in (f(docs=data, idx=given),
                        ft.evaluate_numpy(result, docs=data, idx=given)):
                np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    for run in (ft.compile(encodings),
                lambda **kw: ft.evaluate_numpy(encodings, **kw)):
        with pytest.raises(IndexError, match="out of range"):
            run(docs=data, idx=np.array([2, 0]))
        with pytest.raises(IndexError, match="out of range"):
            run(docs=data, idx=np.array([0, -3]))
