# SPDX-License-Identifier: MIT
"""ft.scan, ft.fold and ft.reduce over the documents of a depth-3
FractalTensor (documents of sentences of tokens), compiled through OpenCL
on every flavour (conftest.py) and through the reference evaluator, against
per-document numpy loops: empty documents, empty sentences, no documents."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import pytest

import ftlazy as ft

from helpers import compile_on_host
from test_codegen_jagged_documents import DOCS, H, documents
from test_codegen_jagged_outer_scan import lowered_values, numpy_scan

TOL = dict(rtol=1e-12, atol=1e-12)
RNG = np.random.default_rng(3)
W = RNG.standard_normal((H, H)) * 0.5


@pytest.fixture
def docs():
    return ft.make_jagged_placeholder("docs", (H,), np.float64, depth=3)


def encodings(doc):
    """Each sentence's sum of squares ``(m, H)`` (the reference of the
    per-sentence map of the bodies below)."""
    return np.array([(s * s).sum(axis=0) for s in doc]).reshape(-1, H)


def ft_encodings(doc):
    return ft.map(lambda s: ft.sum(s * s, axis=0), doc)


#: steps (ftlazy, numpy): a per-document summary with the carry (an RNN over
#: documents), and per-sentence results combined with the carry
STEPS = {
    "summary": (lambda c, doc: ft.tanh(c @ ft.asarray(W)
                                       + ft.sum(ft_encodings(doc), axis=0)),
                lambda c, doc: np.tanh(c @ W + encodings(doc).sum(axis=0))),
    "per_sentence": (
        lambda c, doc: 0.5 * c + ft.sum(ft.tanh(ft_encodings(doc) + c), axis=0)
        / ft.maximum(doc.length, 1),
        lambda c, doc: 0.5 * c + np.tanh(encodings(doc) + c).sum(axis=0)
        / max(len(doc), 1)),
    # the tokens read by the part without the carry
    "tokens": (lambda c, doc: ft.tanh(c + ft.sum(ft.flatten(doc), axis=0)
                                      * ft.sum(ft_encodings(doc), axis=0)),
               lambda c, doc: np.tanh(c + sum((s.sum(axis=0) for s in doc),
                                              np.zeros(H))
                                      * encodings(doc).sum(axis=0))),
}
OPS = {"fold": (ft.fold, False), "reduce": (ft.reduce, False),
       "scan": (ft.scan, True)}


@pytest.mark.parametrize(("op", "name"), [("scan", "summary"),
                                          ("reduce", "tokens"),
                                          ("fold", "per_sentence")])
def test_steps(docs, op, name):
    body, reference = STEPS[name]
    fn, keep_all = OPS[op]
    result = fn(body, docs, ft.zeros(H))
    program = ft.compile(result)
    for key in DOCS:
        data = documents(key)
        want = numpy_scan(reference, data, np.zeros(H), keep_all)
        for got in (program(docs=data), ft.evaluate_numpy(result, docs=data)):
            assert got.shape == ((len(data), H) if keep_all else (H,))
            np.testing.assert_allclose(got, want, **TOL)


class Stats(NamedTuple):
    sentences: object
    total: object
    peak: object


def test_bundle_carry_zipped_dense_and_captured(docs):
    """A bundle carry; per-document weights zipped along; a captured
    matrix; the number of sentences; a max over the sentences (nonempty
    documents only)."""
    n = ft.make_size_param("n")
    weights = ft.make_placeholder("weights", (n,), np.float64)
    w = ft.make_placeholder("w", (H, H), np.float64)

    def step(c, x):
        doc, weight = x
        enc = ft_encodings(doc) @ w
        return Stats(c.sentences + doc.length,
                     c.total + weight * ft.sum(enc, axis=0),
                     ft.maximum(c.peak, ft.amax(enc + c.peak, axis=0)))

    init = Stats(ft.asarray(np.int64(0)), ft.zeros(H), ft.full(H, -9.0))
    result = ft.scan(step, (docs, weights), init)
    out = ft.DictOfNamedArrays(result._asdict())
    program = ft.compile(out)
    for data in ([[RNG.standard_normal((k, H)) for k in doc]
                  for doc in [(2, 1), (3,), (0, 2, 1)]], []):
        wv = np.arange(1.0, len(data) + 1)
        peak, history = np.full(H, -9.0), []
        for doc in data:
            peak = np.maximum(peak, (encodings(doc) @ W + peak).max(axis=0))
            history.append(peak)
        want = {"sentences": np.cumsum([len(d) for d in data], dtype=np.int64),
                "total": np.cumsum([wt * (encodings(d) @ W).sum(axis=0)
                                    for d, wt in zip(data, wv)],
                                   axis=0).reshape(-1, H),
                "peak": np.array(history).reshape(-1, H)}
        for got in (program(docs=data, weights=wv, w=W),
                    ft.evaluate_numpy(out, docs=data, weights=wv, w=W)):
            for key, value in want.items():
                np.testing.assert_allclose(got[key], value, **TOL)
    data = documents("mixed")
    with pytest.raises(ValueError, match="zipped input 1 has 3 elements"):
        program(docs=data, weights=np.ones(3), w=W)
    with pytest.raises(ValueError, match="zero-size array"):
        program(docs=data, weights=np.ones(4), w=W)


def test_a_carry_that_does_not_read_the_document(docs):
    """Only the number of sentences reaches the fold."""
    result = ft.fold(lambda c, doc: 2 * c + doc.length, docs,
                     ft.asarray(np.int64(0)))
    program = ft.compile(result)
    for key in DOCS:
        data = documents(key)
        want = 0
        for doc in data:
            want = 2 * want + len(doc)
        assert program(docs=data) == want
        assert ft.evaluate_numpy(result, docs=data) == want


def test_rnn_over_sentences_across_documents(docs):
    """The carry runs through every sentence (a scan over each document's
    per-sentence encodings in the step): a masked scan of the most
    sentences."""
    w = ft.make_placeholder("w", (H, H), np.float64)
    result = ft.scan(lambda c, doc: ft.fold(lambda h, e: ft.tanh(h @ w + e),
                                            ft_encodings(doc), c),
                     docs, ft.zeros(H))

    def reference(c, doc):
        for e in encodings(doc):
            c = np.tanh(c @ W + e)
        return c

    for key in ("mixed", "empty_sentences"):
        data = documents(key)
        want = numpy_scan(reference, data, np.zeros(H), True)
        np.testing.assert_allclose(ft.evaluate_numpy(result, docs=data, w=W),
                                   want, **TOL)
        np.testing.assert_allclose(lowered_values(result, docs=data, w=W),
                                   want, **TOL)
        try:
            got = ft.compile(result)(docs=data, w=W)
        except NotImplementedError as err:
            # the OpenCL generator's own limit, not the lowering's
            assert "scan nested in a scan body" in str(err)
        else:
            np.testing.assert_allclose(got, want, **TOL)


def test_rnn_over_all_tokens_across_documents(docs):
    """The carry runs through every token (a fold over the document's tokens
    in the step): the fold's element is the document's tokens."""
    result = ft.scan(lambda c, doc: ft.fold(
        lambda h, x: ft.tanh(h @ ft.asarray(W) + x), ft.flatten(doc), c),
        docs, ft.zeros(H))

    def reference(c, doc):
        for s in doc:
            for x in s:
                c = np.tanh(c @ W + x)
        return c

    try:
        program = ft.compile(result)
    except NotImplementedError as err:
        # the OpenCL generator's own limit, not the lowering's
        assert "scan nested in a scan body" in str(err)
        program = None
    for key in ("mixed", "empty_sentences", "empty_batch"):
        data = documents(key)
        want = numpy_scan(reference, data, np.zeros(H), True)
        np.testing.assert_allclose(ft.evaluate_numpy(result, docs=data), want,
                                   **TOL)
        np.testing.assert_allclose(lowered_values(result, docs=data), want,
                                   **TOL)
        if program is not None:
            np.testing.assert_allclose(program(docs=data), want, **TOL)


def test_tokens_and_zipped_documents_with_the_carry(docs):
    """The carry reads the document's tokens (the fold's element is then
    the document's tokens, of length T), and zipped documents."""
    other = ft.make_jagged_placeholder("other", (H,), np.float64, depth=3)
    program = ft.DictOfNamedArrays({
        "tokens": ft.scan(lambda c, doc: ft.tanh(
            ft.sum(ft.flatten(doc) * c, axis=0) / ft.maximum(doc.length, 1)
            + c), docs, ft.ones(H)),
        "zipped": ft.fold(lambda c, x: c + ft.sum(ft.map(
            lambda s, t: ft.sum(s * t, axis=0), x[0], x[1]), axis=0),
            (docs, other), ft.zeros(H)),
    })
    f = ft.compile(program)
    for key in DOCS:
        a, b = documents(key), documents(key, 1)
        want = {
            "tokens": numpy_scan(lambda c, d: np.tanh(sum(
                ((s * c).sum(axis=0) for s in d), np.zeros(H))
                / max(len(d), 1) + c), a, np.ones(H), True),
            "zipped": numpy_scan(lambda c, x: c + sum(
                ((s * t).sum(axis=0) for s, t in zip(*x)), np.zeros(H)),
                list(zip(a, b)), np.zeros(H), False),
        }
        for out in (f(docs=a, other=b),
                    ft.evaluate_numpy(program, docs=a, other=b)):
            for name, w in want.items():
                np.testing.assert_allclose(out[name], w, **TOL)
    a = documents("mixed")
    shorter = a[:3] + [[a[3][0], a[3][1][:2]]]      # a sentence 2 tokens short
    with pytest.raises(ValueError, match="'other'.*different lengths at "
                                         "level 1"):
        f(docs=a, other=shorter)


def test_unsupported_steps_run_on_the_host(docs):
    data = documents("mixed")
    cases = {
        # a map over the sentences that reads the carry
        "uses the carry": ft.fold(
            lambda c, doc: ft.sum(ft.map(lambda s: ft.sum(s, axis=0) * c, doc),
                                  axis=0), docs, ft.ones(H)),
        # per-sentence results and the tokens, read together with the carry
        "per-sentence results and the document's tokens": ft.fold(
            lambda c, doc: ft.sum(ft.flatten(doc) * c, axis=0) + ft.sum(
                ft_encodings(doc) * c, axis=0), docs, ft.ones(H)),
    }
    wants = [
        numpy_scan(lambda c, d: sum((s.sum(axis=0) * c for s in d),
                                    np.zeros(H)), data, np.ones(H), False),
        numpy_scan(lambda c, d: sum(((s * c).sum(axis=0) for s in d),
                                    np.zeros(H)) + (encodings(d) * c).sum(axis=0),
                   data, np.ones(H), False),
    ]
    for (match, result), want in zip(cases.items(), wants):
        np.testing.assert_allclose(ft.evaluate_numpy(result, docs=data), want,
                                   **TOL)
        compiled = compile_on_host(result, match)
        np.testing.assert_allclose(compiled(docs=data), want, **TOL)
