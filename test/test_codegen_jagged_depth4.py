# SPDX-License-Identifier: MIT
"""Maps over depth-4 FractalTensors (books of documents of sentences of
tokens), compiled through OpenCL on every profile flavour (conftest.py)
and checked against per-book numpy loops and the reference evaluator.
Such maps have no lowering of their own: they compile where their body
reads each book through one view (its tokens, a map over its documents, a
slice, a filter of its documents), see :mod:`ftlazy.fractal_element_views`."""

from __future__ import annotations

import numpy as np
import pytest

import ftlazy as ft
from helpers import compile_on_host, nested_close

H = 2
RNG = np.random.default_rng(4)
W = RNG.standard_normal((H, H)) * 0.5


def _documents(lengths):
    return [[RNG.standard_normal((n, H)) for n in doc] for doc in lengths]


#: empty books, empty documents, empty sentences
BOOKS = [_documents([(3, 0, 2), (), (1,)]), [], _documents([(4, 4)]),
         _documents([(), (2,)])]


def _tokens(book):
    return np.concatenate([s for d in book for s in d] + [np.zeros((0, H))])


def _rnn(rows):
    h, states = np.zeros(H), []
    for x in rows:
        h = np.tanh(h @ W + x)
        states.append(h)
    return h, np.reshape(states, (-1, H))


def _step(h, x):
    return ft.tanh(h @ W + x)


BODIES = {
    "token_sum": (lambda b: ft.sum(b.values, axis=0),
                  lambda b: _tokens(b).sum(axis=0)),
    "tokens_filtered": (
        lambda b: ft.filter(lambda r: ft.sum(r) > 0, b.values),
        lambda b: _tokens(b)[_tokens(b).sum(axis=1) > 0]),
    "document_rnns": (
        lambda b: ft.map(lambda d: ft.fold(
            lambda h, s: _step(h, ft.sum(s, axis=0)), d, ft.zeros(H)), b),
        lambda b: [_rnn([s.sum(axis=0) for s in d])[0] for d in b]),
    "documents_tails": (lambda b: ft.map(lambda d: d[1:], b),
                        lambda b: [d[1:] for d in b]),
    "sentence_states": (
        lambda b: ft.map(lambda d: ft.map(
            lambda s: ft.scan(_step, s, ft.zeros(H)), d), b),
        lambda b: [[_rnn(s)[1] for s in d] for d in b]),
    "book_slice": (lambda b: b[1:], lambda b: b[1:]),
    # (a fold over each book's documents whose step encodes the document
    # first: the encodings of all documents, grouped per book, folded)
    "documents_folded": (
        lambda b: ft.fold(lambda h, d: _step(h, ft.sum(d.values, axis=0)), b,
                          ft.zeros(H)),
        lambda b: _rnn([_tokens([d]).sum(axis=0) for d in b])[0]),
    # (the documents each book keeps: the predicate over all documents of
    # all books, one filter, each book keeping those of its range)
    "documents_kept": (
        lambda b: ft.filter(lambda d: ft.sum(d.values) > 0, b),
        lambda b: [d for d in b if _tokens([d]).sum() > 0]),
    # (the documents above their book's mean token sum: the means per
    # book first, a row per document, zipped into the predicate)
    "documents_above_the_mean": (
        lambda b: ft.filter(lambda d: ft.sum(d.values) > ft.sum(b.values)
                            / ft.maximum(b.values.shape[0], 1), b),
        lambda b: [d for d in b if _tokens([d]).sum()
                   > _tokens(b).sum() / max(len(_tokens(b)), 1)]),
    # (per-document rows, the book's document count and token sum)
    "rows_count_and_tokens": (
        lambda b: ft.sum(ft.map(lambda d: ft.sum(d.values, axis=0), b), axis=0)
        / ft.maximum(b.length, 1) + ft.sum(b.values, axis=0),
        lambda b: sum((_tokens([d]).sum(axis=0) for d in b), np.zeros(H))
        / max(len(b), 1) + _tokens(b).sum(axis=0)),
}


@pytest.mark.parametrize("body", list(BODIES))
def test_maps_over_books(body):
    corpus = ft.make_jagged_placeholder("corpus", (H,), np.float64, depth=4)
    lazy, reference = BODIES[body]
    result = ft.map(lazy, corpus)
    f = ft.compile(result)
    assert f.host_evaluated == ()
    for data in (BOOKS, [], [[]]):
        want = [reference(b) for b in data]
        for got in (f(corpus=data), ft.evaluate_numpy(result, corpus=data)):
            nested_close(got.tolist() if isinstance(got, ft.JaggedArray)
                          else list(got), want)


def test_document_map_capturing_book_data():
    # the map over each book's documents captures the book's token sum:
    # the sums are computed per book first, a row per document, and zipped
    # into the map over all documents, which replays its body; compiled
    corpus = ft.make_jagged_placeholder("corpus", (H,), np.float64, depth=4)
    result = ft.map(lambda b: (lambda total: ft.map(
        lambda d: ft.sum(d.values, axis=0) * total, b))(
            ft.sum(b.values, axis=0)), corpus)
    f = ft.compile(result)
    assert f.host_evaluated == ()
    for data in (BOOKS, [], [[]]):
        want = [[_tokens([d]).sum(axis=0) * _tokens(b).sum(axis=0) for d in b]
                for b in data]
        for got in (f(corpus=data), ft.evaluate_numpy(result, corpus=data)):
            nested_close(got.tolist(), want)


def test_document_map_reading_the_books_tokens_runs_on_the_host():
    # (the map over each book's documents reads the book's tokens, an array
    # of the book's size: not a row per document; on the host)
    corpus = ft.make_jagged_placeholder("corpus", (H,), np.float64, depth=4)
    result = ft.map(lambda b: ft.map(
        lambda d: ft.sum(d.values @ b.values.T) * ft.ones(H), b), corpus)
    f = compile_on_host(result, "depth 4")
    want = [[np.full(H, (_tokens([d]) @ _tokens(b).T).sum()) for d in b]
            for b in BOOKS]
    nested_close(f(corpus=BOOKS).tolist(), want)
