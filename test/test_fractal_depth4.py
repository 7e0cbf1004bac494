# SPDX-License-Identifier: MIT
"""FractalTensors of depth 4 and more (batches of documents of paragraphs
of sentences, or the pairs of ``ft.product`` of documents): maps, folds and
leaf-wise operations over them, through the reference evaluator and
``ft.compile``, against nested numpy loops. Their loops run on the host in
compiled programs (:mod:`ftlazy.target.loopy.host_loops`), where their
body does not read each element through one view
(:mod:`ftlazy.fractal_element_views`); what the program computes from
their results is compiled."""

from __future__ import annotations

import numpy as np
import pytest

import ftlazy as ft
from helpers import compile_on_host
from test_fractal_nested_results import assert_nested

H = 2
#: batches of documents of paragraphs of sentence lengths: empty lists at
#: every level, and no documents
BATCHES = [[[(2, 0), (1,)], [], [()], [(3,)]], [], [[()]], [[(0, 0)]]]


def batch(lengths, seed=0):
    rng = np.random.default_rng(seed)
    return [[[rng.standard_normal((n, H)) for n in p] for p in d]
            for d in lengths]


@pytest.fixture
def books():
    return ft.make_jagged_placeholder("books", (H,), np.float64, depth=4)


def run_both(result, on_host_match, **inputs):
    """*result* through the reference evaluator and compiled (its depth-4
    loops on the host, their refusal matching *on_host_match*; all
    compiled where it is None)."""
    if on_host_match is None:
        compiled = ft.compile(result)
        assert compiled.host_evaluated == ()
    else:
        compiled = compile_on_host(result, on_host_match)
    return [lambda **a: ft.evaluate_numpy(result, **a), compiled]


def test_nested_maps_down_to_the_sentences(books):
    # per book, per paragraph, per sentence: its scaled column sums (a map
    # over each book's paragraphs: mapped over all paragraphs, compiled,
    # see ftlazy.fractal_element_views), and per book the number of
    # sentences of each paragraph
    sums = ft.map(lambda b: ft.map(lambda p: ft.map(
        lambda s: ft.sum(s, axis=0) * 2, p), b), books)
    counts = ft.map(lambda b: ft.lengths(b), books)
    for run in run_both(sums, None):
        for k, lengths in enumerate(BATCHES):
            data = batch(lengths, k)
            want = [[np.array([2 * s.sum(axis=0) for s in p]).reshape(-1, H)
                     for p in b] for b in data]
            assert_nested(run(books=data), want, 3)
    for run in run_both(counts, "depth 4"):
        data = batch(BATCHES[0])
        got = run(books=data)
        assert [list(c) for c in got.tolist()] == [[len(p) for p in b]
                                                   for b in data]


def test_map_returning_the_element_nests_deeper(books):
    result = ft.map(lambda b: ft.repeat(b, 2), books)
    for run in run_both(result, "not affine in the element's sizes"):
        for k, lengths in enumerate(BATCHES):
            data = batch(lengths, k)
            assert_nested(run(books=data), [[b, b] for b in data], 5)


def test_fold_over_books(books):
    # (the step reads the book through its token sum alone: split into a
    # map over the books and a fold over the sums, compiled, see
    # ftlazy.fractal_fold_split; a step that mixes the carry with the
    # book's tokens keeps its loop, on the host)
    split = ft.fold(lambda c, b: ft.tanh(c + ft.sum(ft.flatten(b), axis=0)),
                    books, ft.zeros(H))
    mixed = ft.fold(lambda c, b: ft.tanh(c + ft.sum(ft.flatten(b) * c, axis=0)),
                    books, ft.zeros(H))
    for result, on_host, scaled in ((split, None, False),
                                    (mixed, "fold over a FractalTensor of "
                                     "depth 4", True)):
        for run in run_both(result, on_host):
            for k, lengths in enumerate(BATCHES):
                data = batch(lengths, k)
                want = np.zeros(H)
                for b in data:
                    rows = [s for p in b for s in p]
                    want = np.tanh(want + sum(
                        (s.sum(axis=0) * (want if scaled else 1)
                         for s in rows), np.zeros(H)))
                np.testing.assert_allclose(run(books=data), want, rtol=1e-12)


def test_leafwise_operations_zip_every_level(books):
    other = ft.make_jagged_placeholder("other", (H,), np.float64, depth=4)
    result = ft.tanh(books * other + 1.0)
    for run in run_both(result, "depth 4"):
        a, b = batch(BATCHES[0], 1), batch(BATCHES[0], 2)
        want = [[[np.tanh(x * y + 1.0) for x, y in zip(p, q)]
                 for p, q in zip(d, e)] for d, e in zip(a, b)]
        assert_nested(run(books=a, other=b), want, 4)
        # (a sentence one token longer: named, with its level)
        shorter = batch([[(2, 0), (1,)], [], [()], [(4,)]], 2)
        with pytest.raises(ValueError, match="'books'.*'other'.*level 2"):
            run(books=a, other=shorter)


def test_maps_over_pairs_of_documents():
    # ft.product of two depth-3 FractalTensors: depth 4, every pair of
    # documents; per pair, the sum of all tokens of each side
    docs = ft.make_jagged_placeholder("docs", (H,), np.float64, depth=3)
    firsts, seconds = ft.product(docs, docs * 2)
    assert firsts.depth == seconds.depth == 4

    def totals(pairs):
        return ft.map(lambda row: ft.map(
            lambda doc: ft.sum(ft.flatten(doc), axis=0), row), pairs)
    data = [[s for p in b for s in p] for b in batch(BATCHES[0])]

    def total(doc):
        return sum((s.sum(axis=0) for s in doc), np.zeros(H))
    for side, want in ((firsts, lambda i, j: total(data[i])),
                       (seconds, lambda i, j: 2 * total(data[j]))):
        # (a map over each row's documents: compiled, as above)
        for run in run_both(totals(side), None):
            got = run(docs=data)
            assert_nested(got, [np.array([want(i, j) for j in range(len(data))])
                                .reshape(-1, H) for i in range(len(data))], 2)
