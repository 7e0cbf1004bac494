# SPDX-License-Identifier: MIT
"""Scans and folds over a document's sentences inside a map over documents
(hierarchical RNNs: encode each sentence, then a recurrence over the
encodings), split into a map over the sentences and a scan over their
encodings (:mod:`ftlazy.fractal_fold_split`), compiled through OpenCL on
every profile flavour (conftest.py) with no loop left on the host, and
checked against per-document numpy loops and the reference evaluator."""

from __future__ import annotations

import warnings
from typing import NamedTuple

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import ftlazy as ft
from ftlazy.jagged_scan_outer import JaggedScan
from ftlazy.node import topological_order
from helpers import compile_on_host

H = 3
RNG = np.random.default_rng(5)
W = RNG.standard_normal((H, H)) * 0.5
U = RNG.standard_normal((H, H)) * 0.5
#: documents of sentences: empty documents, empty sentences, one sentence
DOCUMENTS = [[(2, 0, 3), (), (1,), (4, 4)], [], [(), ()], [(0,)], [(5,)]]


def documents(lengths, seed=0):
    rng = np.random.default_rng(seed)
    return [[rng.standard_normal((n, H)) for n in doc] for doc in lengths]


@pytest.fixture
def docs():
    return ft.make_jagged_placeholder("docs", (H,), np.float64, depth=3)


@pytest.fixture
def weights():
    return (ft.make_placeholder("W", (H, H), np.float64),
            ft.make_placeholder("U", (H, H), np.float64))


def compiled_on_the_device(result):
    with warnings.catch_warnings():
        warnings.simplefilter("error", ft.HostEvaluationWarning)
        return ft.compile(result)


def check(result, reference, compiled=None, uses=("W",)):
    """*result* compiled once and evaluated on every dataset of
    :data:`DOCUMENTS` against ``reference(doc)`` per document; *uses* names
    the weights it reads."""
    compiled = compiled or compiled_on_the_device(result)
    weights = {name: {"W": W, "U": U}[name] for name in uses}
    for k, lengths in enumerate(DOCUMENTS):
        data = documents(lengths, seed=k)
        for got in (compiled(docs=data, **weights),
                    ft.evaluate_numpy(result, docs=data, **weights)):
            rows = got.tolist() if isinstance(got, ft.JaggedArray) else got
            assert len(rows) == len(data)
            for g, doc in zip(rows, data):
                want = reference(doc)
                assert np.shape(g) == want.shape
                np.testing.assert_allclose(g, want, rtol=1e-12, atol=1e-12)


def rnn(xs, U, h=None):
    h = np.zeros(H) if h is None else h
    for x in xs:
        h = np.tanh(h @ U + x)
    return h


def test_fold_over_sentence_sums(docs, weights):
    Wp, _ = weights
    result = ft.map(lambda d: ft.fold(
        lambda h, s: ft.tanh(h @ Wp + ft.sum(s, axis=0)), d, ft.zeros(H)), docs)
    # (no loop over a FractalTensor's outer list is left in the map)
    assert not any(isinstance(n, JaggedScan)
                   for n in topological_order(list(result.loop.body.outputs)))
    check(result, lambda doc: rnn([s.sum(axis=0) for s in doc], W))


def test_scan_of_a_token_rnn_per_sentence(docs, weights):
    # a hierarchical RNN: an RNN over each sentence's tokens, then an RNN
    # over the sentence encodings, every state kept (a FractalTensor)
    Wp, Up = weights

    def encode(s):
        return ft.fold(lambda h, x: ft.tanh(h @ Up + x), s, ft.zeros(H))
    result = ft.map(lambda d: ft.scan(
        lambda h, s: ft.tanh(h @ Wp + encode(s)), d, ft.zeros(H)), docs)

    def reference(doc):
        states, h = [], np.zeros(H)
        for s in doc:
            h = np.tanh(h @ W + rnn(s, U))
            states.append(h)
        return np.array(states).reshape(-1, H)
    check(result, reference, uses=("W", "U"))


class State(NamedTuple):
    h: object
    total: object


def test_bundled_carries_and_encodings(docs, weights):
    # two encodings per sentence (its mean-free sum and its length), a
    # NamedTuple carry, and a step that also uses the captured weights
    Wp, _ = weights

    def step(state, s):
        count = s.shape[0] * 1.0
        summed = ft.sum(s, axis=0)
        return State(ft.tanh(state.h @ Wp + summed / (count + 1.0)),
                     state.total + count)
    def encoded(d):
        state = ft.fold(step, d, State(ft.zeros(H), ft.zeros((), np.float64)))
        assert isinstance(state, State)
        return ft.concatenate([state.h, ft.reshape(state.total, (1,))])

    def reference(doc):
        h, total = np.zeros(H), 0.0
        for s in doc:
            h = np.tanh(h @ W + s.sum(axis=0) / (len(s) + 1.0))
            total += len(s)
        return np.concatenate([h, [total]])
    check(ft.map(encoded, docs), reference)


def test_steps_reading_the_sentence_with_the_carry_run_on_the_host(docs,
                                                                    weights):
    # the sentence is read together with the carry: not split, and a loop
    # over a document's sentences in a map is not lowered
    Wp, _ = weights
    result = ft.map(lambda d: ft.fold(
        lambda h, s: ft.tanh(ft.sum(s @ Wp * h, axis=0)), d, ft.ones(H)), docs)

    def reference(doc):
        h = np.ones(H)
        for s in doc:
            h = np.tanh((s @ W * h).sum(axis=0))
        return h
    check(result, reference, compiled=compile_on_host(
        result, "inside a map over a FractalTensor"))


def test_inside_a_fold_over_documents(docs, weights):
    # a fold over the documents whose step folds over the document's
    # sentences: the inner loop is split as in a map
    Wp, Up = weights
    result = ft.fold(lambda c, d: c + ft.fold(
        lambda h, s: ft.tanh(h @ Wp + ft.sum(s, axis=0)), d, ft.zeros(H)) @ Up,
        docs, ft.zeros(H))
    compiled = compiled_on_the_device(result)
    for k, lengths in enumerate(DOCUMENTS):
        data = documents(lengths, seed=k)
        want = sum((rnn([s.sum(axis=0) for s in doc], W) @ U for doc in data),
                   np.zeros(H))
        for got in (compiled(docs=data, W=W, U=U),
                    ft.evaluate_numpy(result, docs=data, W=W, U=U)):
            np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


@settings(max_examples=15, deadline=None)
@given(st.lists(st.lists(st.integers(0, 5), max_size=4), max_size=5))
def test_hierarchical_rnn_on_random_documents(lengths):
    # (the same DAG each example: compiled once per flavour, then taken
    # from ft.compile's caches)
    Wp = ft.make_placeholder("W", (H, H), np.float64)
    Up = ft.make_placeholder("U", (H, H), np.float64)
    docs = ft.make_jagged_placeholder("docs", (H,), np.float64, depth=3)
    result = ft.map(lambda d: ft.scan(
        lambda h, s: ft.tanh(h @ Wp + ft.fold(
            lambda g, x: ft.tanh(g @ Up + x), s, ft.zeros(H))),
        d, ft.zeros(H)), docs)
    data = documents(lengths, seed=len(lengths))
    got = compiled_on_the_device(result)(docs=data, W=W, U=U)
    assert [len(g) for g in got.tolist()] == [len(doc) for doc in data]
    for g, doc in zip(got.tolist(), data):
        h, states = np.zeros(H), []
        for s in doc:
            h = np.tanh(h @ W + rnn(s, U))
            states.append(h)
        np.testing.assert_allclose(g, np.reshape(states, (-1, H)),
                                   rtol=1e-12, atol=1e-12)


def test_steps_capturing_document_values_and_zipped_rows(docs, weights):
    # the step reads a value of the whole document (its tokens' mean) and a
    # per-sentence weight zipped along (a dense array of the document's
    # sentence count, computed by a sentence map)
    Wp, _ = weights

    def per_document(d):
        tokens = ft.flatten(d)
        mean = ft.sum(tokens, axis=0) / ft.maximum(tokens.shape[0], 1)
        sizes = ft.map(lambda s: s.shape[0] * 1.0, d)
        return ft.fold(lambda h, sw: ft.tanh(
            h @ Wp + ft.sum(sw[0], axis=0) * sw[1] + mean), (d, sizes),
            ft.zeros(H))

    def reference(doc):
        tokens = np.concatenate(doc) if doc else np.zeros((0, H))
        mean = tokens.sum(axis=0) / max(len(tokens), 1)
        h = np.zeros(H)
        for s in doc:
            h = np.tanh(h @ W + s.sum(axis=0) * len(s) + mean)
        return h
    check(ft.map(per_document, docs), reference)


class _Counted(NamedTuple):
    h: object
    count: object


@pytest.mark.parametrize("body", ["count", "mean_added", "bundle"])
def test_folds_over_sentences_reading_their_length_as_a_value(docs, body):
    # (c + s.shape[0]: the sentence's length is a row per sentence, computed
    # with the rest of the step's carry-free part; these ran on the host)
    def count(d):
        return ft.fold(lambda c, s: c + s.shape[0], d,
                       ft.zeros((), np.int64))

    def mean_added(d):
        return ft.fold(lambda c, s: ft.tanh(c @ W) + ft.sum(s, axis=0)
                       * s.shape[0], d, ft.zeros(H))

    def bundle(d):
        return ft.fold(lambda c, s: _Counted(
            ft.tanh(c.h + ft.sum(s, axis=0)), c.count + s.shape[0]), d,
            _Counted(ft.zeros(H), ft.zeros((), np.int64))).count

    def reference(doc):
        if body == "mean_added":
            h = np.zeros(H)
            for s in doc:
                h = np.tanh(h @ W) + s.sum(axis=0) * len(s)
            return h
        return np.asarray(sum(len(s) for s in doc))

    lazy = {"count": count, "mean_added": mean_added, "bundle": bundle}[body]
    check(ft.map(lazy, docs), reference, uses=())
