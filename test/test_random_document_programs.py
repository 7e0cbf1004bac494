# SPDX-License-Identifier: MIT
"""Random programs over documents (hypothesis): two transforms of a depth-3
FractalTensor (leaf-wise math, a scan or filter or growth of each sentence,
attention to the document, centring on the document, outer slices,
slices of each document and joins of them, filters of each document's
sentences, joins and gathers), then a result (per-sentence sums, an RNN over each
document's sentences, a fold over the documents, the lengths, the flat
values, an RNN over each document's first sentence, the states of one
over its last, a fold over the sentences after the first started from
it, the sentence encodings each document keeps). Each program is compiled once and run on three document
structures against the reference evaluator: the same values, or the same
kind of error. Such chains found an OpenCL build failure and a missing
host derivation that no single-operation test reached."""

from __future__ import annotations

import numpy as np
from hypothesis import example, given, settings, strategies as st

import ftlazy as ft

H = 2
RNG = np.random.default_rng(3)
W = RNG.standard_normal((H, H)) * 0.5
#: document structures: empty documents and sentences, no documents
STRUCTURES = [[(2, 0, 3), (), (1,), (4, 4), (1, 2)], [(1,), (5, 0), (2, 2, 2)],
              []]
DATASETS = [[[RNG.standard_normal((n, H)) for n in doc] for doc in docs]
            for docs in STRUCTURES]


def _sentences(f, step):
    return ft.map(lambda d: ft.map(step, d), f)


TRANSFORMS = {
    "leafwise": lambda f, w: ft.tanh(f @ w) + f,
    "scan": lambda f, w: _sentences(f, lambda s: ft.scan(
        lambda h, x: ft.tanh(h @ w + x), s, ft.zeros(H))),
    "filter": lambda f, w: _sentences(f, lambda s: ft.filter(
        lambda r: ft.sum(r) > 0, s)),
    "grow": lambda f, w: _sentences(f, lambda s: ft.concatenate(
        [s, ft.zeros((2, H))]) * 2.0),
    "shift": lambda f, w: _sentences(f, lambda s: ft.shifted_slide(s, 3)[:, 0, :]
                                     + s),
    "attend": lambda f, w: ft.map(lambda d: ft.map(
        lambda s: ft.tanh(s @ d.values.T) @ d.values, d), f),
    "centre": lambda f, w: ft.map(lambda d: ft.map(
        lambda s: s - ft.sum(d.values, axis=0)
        / ft.maximum(d.values.shape[0], 1), d), f),
    "slice": lambda f, w: f[1:],
    # (each document's sentences sliced: the documents are sliced first)
    "trim": lambda f, w: ft.map(lambda d: d[:-1], f),
    "reverse_each": lambda f, w: ft.map(lambda d: ft.map(
        lambda s: s * 2.0, d[::-1]), f),
    # (each document's sentences kept where their sum passes 0.25: the
    # predicate over all sentences first; not 0, which a centred document's
    # only sentence sums to, up to rounding that differs between devices)
    "keep_sentences": lambda f, w: ft.map(lambda d: ft.filter(
        lambda s: ft.sum(s) > 0.25, d), f),
    # (and where above their document's mean token sum: the means per
    # document first)
    "keep_above_mean": lambda f, w: ft.map(lambda d: ft.filter(
        lambda s: ft.sum(s) > ft.sum(d.values) / ft.maximum(
            d.values.shape[0], 1) + 0.25, d), f),
    # (and where they attend to their document's tokens: the mask per
    # document first)
    "keep_attending": lambda f, w: ft.map(lambda d: ft.filter(
        lambda s: ft.sum(s @ d.values.T) > 0.25, d), f),
    "join": lambda f, w: ft.join(f, f[::-1]),
    # (each document's sentences but the second: one view of it, joined
    # slices, computed before the map)
    "drop_second": lambda f, w: ft.map(lambda d: ft.join(d[:1], d[2:]), f),
    "gather": lambda f, w: ft.gather(f, ft.asarray(np.array([1, 0, 1]))),
    # (each document's sentences but the first, less its first sentence's
    # token sum: two slices read apart, the sum per document first)
    "less_the_head": lambda f, w: ft.map(lambda d: ft.map(
        lambda s: s - ft.sum(d[:1].values, axis=0), d[1:]), f),
}

RESULTS = {
    "sentence_sums": lambda f, w: _sentences(f, lambda s: ft.sum(s, axis=0)),
    "document_rnn": lambda f, w: ft.map(lambda d: ft.fold(
        lambda h, s: ft.tanh(h @ w + ft.sum(s, axis=0)), d, ft.zeros(H)), f),
    "fold": lambda f, w: ft.fold(lambda c, d: ft.tanh(c @ w) + ft.sum(
        ft.flatten(d), axis=0), f, ft.zeros(H)),
    "lengths": lambda f, w: ft.map(lambda d: ft.lengths(d), f),
    "values": lambda f, w: ft.flatten(f) @ w,
    # (an empty document has no first sentence: IndexError in both)
    "first_sentence_rnn": lambda f, w: ft.map(lambda d: ft.fold(
        lambda h, x: ft.tanh(h @ w + x), d[0], ft.zeros(H)), f),
    # (the first sentence's sum starts a fold over the others: the
    # documents sliced, the sum computed per document and zipped along)
    "titled_fold": lambda f, w: ft.map(lambda d: ft.fold(
        lambda h, s: ft.tanh(h @ w + ft.sum(s, axis=0)), d[1:],
        ft.sum(d[0], axis=0)), f),
    # (sentence encodings kept where positive: lists counted from the rows
    # of a map over each document's sentences)
    "kept_encodings": lambda f, w: ft.map(lambda d: ft.filter(
        lambda e: ft.sum(e) > 0, ft.map(
            lambda s: ft.tanh(ft.sum(s, axis=0) @ w), d)), f),
    # (a fold over the sentences after the first two, from their token
    # sum: two slices read apart)
    "fold_from_the_head": lambda f, w: ft.map(lambda d: ft.fold(
        lambda h, s: ft.tanh(h @ w + ft.sum(s, axis=0)), d[2:],
        ft.sum(d[:2].values, axis=0)), f),
    # (the rows of each document's last sentence: picked, then mapped)
    "last_sentence_states": lambda f, w: ft.map(lambda d: ft.scan(
        lambda h, x: ft.tanh(h @ w + x), d[-1], ft.zeros(H)), f),
}


def _run(run, **inputs):
    try:
        return run(**inputs), None
    except (IndexError, ValueError) as err:
        return None, err


@settings(max_examples=10, deadline=None)
# (the chains that failed before their fixes: an ambiguous max(double,
# long), segment ids derived after the offsets that read them)
@example(first="scan", second="centre", result="values")
@example(first="grow", second="centre", result="sentence_sums")
@example(first="shift", second="shift", result="sentence_sums")
@example(first="grow", second="grow", result="fold")
@example(first="filter", second="grow", result="document_rnn")
@example(first="scan", second="slice", result="first_sentence_rnn")
@example(first="filter", second="grow", result="last_sentence_states")
@example(first="join", second="attend", result="last_sentence_states")
@example(first="filter", second="trim", result="document_rnn")
@example(first="reverse_each", second="centre", result="first_sentence_rnn")
@example(first="join", second="filter", result="titled_fold")
@example(first="grow", second="trim", result="kept_encodings")
@example(first="centre", second="keep_sentences", result="lengths")
@example(first="keep_sentences", second="attend", result="titled_fold")
@example(first="keep_above_mean", second="trim", result="document_rnn")
@given(first=st.sampled_from(sorted(TRANSFORMS)),
       second=st.sampled_from(sorted(TRANSFORMS)),
       result=st.sampled_from(sorted(RESULTS)))
def test_random_document_programs(first, second, result):
    docs = ft.make_jagged_placeholder("docs", (H,), np.float64, depth=3)
    w = ft.make_placeholder("W", (H, H), np.float64)
    program = RESULTS[result](TRANSFORMS[second](TRANSFORMS[first](docs, w), w),
                              w)
    # (a program that does not read W is given none)
    reads_w = "W" in {n.name for n in ft.analysis.get_inputs(
        program.values if isinstance(program, ft.Jagged) else program)}
    compiled = ft.compile(program)
    for data in DATASETS:
        inputs = {"docs": data} | ({"W": W} if reads_w else {})
        want, want_err = _run(lambda **a: ft.evaluate_numpy(program, **a),
                              **inputs)
        got, got_err = _run(compiled, **inputs)
        assert type(got_err) is type(want_err), (got_err, want_err)
        if want_err is not None:
            continue
        if isinstance(want, ft.JaggedArray):
            assert got.depth == want.depth
            for a, b in zip(got.offsets, want.offsets, strict=True):
                np.testing.assert_array_equal(a, b)
            np.testing.assert_allclose(got.values, want.values, rtol=1e-9,
                                       atol=1e-9)
        else:
            np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-9)
