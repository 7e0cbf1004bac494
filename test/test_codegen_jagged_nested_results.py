# SPDX-License-Identifier: MIT
"""Maps over FractalTensors whose results nest one level deeper, compiled
through OpenCL on every profile flavour (conftest.py) and checked against
per-document numpy loops and the reference evaluator.

To keep the number of OpenCL builds low, several FractalTensor results of
one input are compiled as one program of their parts (values and offsets
in a DictOfNamedArrays); the JaggedArray a compiled FractalTensor result
returns is checked on its own."""

from __future__ import annotations

import numpy as np
import pytest

import ftlazy as ft
from test_fractal_nested_results import (
    DOCS, H, K, NONEMPTY_DOCS, SEQS, TABLE, W, assert_nested, cumsum_scan,
    docs_placeholder, documents, product_rows, seqs_placeholder, sequences)


def as_parts(results):
    """The values and offsets of each named FractalTensor in *results*."""
    parts = {}
    for name, r in results.items():
        parts[f"{name}_values"] = r.values
        parts.update({f"{name}_offsets{k}": o for k, o in enumerate(r.offsets)})
    return ft.DictOfNamedArrays(parts)


def from_parts(out, name, depth):
    return ft.JaggedArray(out[f"{name}_values"], *(
        out[f"{name}_offsets{k}"] for k in range(depth - 1)))


def test_document_results():
    docs = docs_placeholder()
    bundle = ft.map(lambda doc: (doc * 2, ft.map(cumsum_scan, doc),
                                 ft.sum(ft.flatten(doc), axis=0)), docs)
    results = {
        "leafwise": ft.map(lambda doc: ft.tanh(doc @ W) + 1, docs),
        "rows": ft.map(lambda doc: ft.map(lambda s: product_rows(s)[1], doc),
                       docs),
        "scaled": bundle[0],
        "sums": bundle[1],
    }
    program = as_parts(results)
    total = ft.DictOfNamedArrays({"total": bundle[2]})
    f, g = ft.compile(program), ft.compile(total)
    for key in DOCS:
        data = documents(DOCS[key])
        wanted = {
            "leafwise": ([[np.tanh(s @ W) + 1 for s in d] for d in data], 3),
            "rows": ([[[TABLE for _ in s] for s in d] for d in data], 4),
            "scaled": ([[s * 2 for s in d] for d in data], 3),
            "sums": ([[np.cumsum(s, axis=0) for s in d] for d in data], 3),
        }
        for out in (f(docs=data), ft.evaluate_numpy(program, docs=data)):
            for name, (want, depth) in wanted.items():
                assert_nested(from_parts(out, name, depth), want, depth)
        np.testing.assert_allclose(
            g(docs=data)["total"],
            np.array([sum((s.sum(axis=0) for s in d), np.zeros(H))
                      for d in data]).reshape(len(data), H))



@pytest.mark.parametrize("key", list(NONEMPTY_DOCS))
def test_map_over_sentences_dropping_a_row(key):
    # the JaggedArray a compiled FractalTensor result returns
    docs = docs_placeholder()
    data = documents(NONEMPTY_DOCS[key])
    tails = ft.map(lambda doc: ft.map(lambda s: s[1:] - s[:-1], doc), docs)
    want = [[s[1:] - s[:-1] for s in d] for d in data]
    assert_nested(ft.compile(tails)(docs=data), want, 3)
    assert_nested(ft.evaluate_numpy(tails, docs=data), want, 3)


def test_sequence_results():
    xs = seqs_placeholder()

    def joined(x):
        a, b = product_rows(x)
        return ft.join(a, b)
    firsts, seconds = ft.map(product_rows, xs)
    results = {
        "firsts": firsts,
        "seconds": seconds,
        "table_first": ft.map(lambda x: ft.product(TABLE, x)[1], xs),
        "static": ft.map(lambda x: ft.product(TABLE, TABLE * 2)[1] + ft.sum(x),
                         xs),
        "joined": ft.map(joined, xs),
    }
    f = ft.compile(as_parts(results))
    for key in SEQS:
        data = sequences(SEQS[key])
        repeated = [[np.repeat(row[None], K, axis=0) for row in s] for s in data]
        tables = [[TABLE for _ in s] for s in data]
        wanted = {
            "firsts": (repeated, 3),
            "seconds": (tables, 3),
            "table_first": ([[s for _ in TABLE] for s in data], 3),
            "static": ([[TABLE * 2 + s.sum() for _ in TABLE] for s in data], 3),
            "joined": ([r + t for r, t in zip(repeated, tables)], 3),
        }
        out = f(xs=data)
        for name, (want, depth) in wanted.items():
            assert_nested(from_parts(out, name, depth), want, depth)


def test_zip_of_two_documents_batches():
    docs, more = docs_placeholder(), docs_placeholder("more")
    products = ft.map(lambda d, e: ft.map(lambda s, t: s * t, d, e), docs, more)
    leafwise = docs - more      # a leaf-wise zip: a map over the tokens
    f = ft.compile(as_parts({"products": products, "leafwise": leafwise}))
    for key in DOCS:
        a, b = documents(DOCS[key], 1), documents(DOCS[key], 2)
        out = f(docs=a, more=b)
        assert_nested(from_parts(out, "products", 3),
                      [[s * t for s, t in zip(x, y)] for x, y in zip(a, b)], 3)
        assert_nested(from_parts(out, "leafwise", 3),
                      [[s - t for s, t in zip(x, y)] for x, y in zip(a, b)], 3)
    a = documents(DOCS["mixed"], 1)
    with pytest.raises(ValueError, match=r"'docs'.*'more'.*different lengths "
                                         r"at level 1"):
        f(docs=a, more=documents([(3, 1, 2), (), (1,), (4, 4)]))
    with pytest.raises(ValueError, match=r"'docs'.*'more'.*different lengths "
                                         r"at level 0"):
        f(docs=a, more=documents([(3, 0), (2,), (1,), (4, 4)]))
    with pytest.raises(ValueError, match=r"'more'.* has 3 elements.*'docs'"):
        f(docs=a, more=a[:3])


def test_results_from_tokens_and_sentences_together():
    # a part computed from the tokens (one row per document) zipped into
    # the map over documents of per-sentence results; the number of
    # sentences without a map over them
    docs = docs_placeholder()
    program = ft.DictOfNamedArrays({
        "both": ft.map(lambda doc: ft.sum(ft.flatten(doc), axis=0) * 2 + ft.sum(
            ft.map(lambda s: ft.tanh(ft.sum(s @ W, axis=0)), doc), axis=0), docs),
        "mean": ft.map(lambda doc: ft.sum(ft.tanh(ft.flatten(doc) @ W), axis=0)
                       / ft.maximum(doc.length, 1), docs),
        # per-sentence results with one row per token are tokens too
        "pooled": ft.map(lambda doc: ft.sum(ft.flatten(ft.map(cumsum_scan, doc))
                                            * ft.flatten(doc), axis=0), docs),
    })
    f = ft.compile(program)
    for key in DOCS:
        data = documents(DOCS[key])
        tokens = [np.concatenate(d).reshape(-1, H) if d else np.zeros((0, H))
                  for d in data]
        want = {
            "both": [t.sum(axis=0) * 2 + sum(
                (np.tanh((s @ W).sum(axis=0)) for s in d), np.zeros(H))
                for t, d in zip(tokens, data)],
            "mean": [np.tanh(t @ W).sum(axis=0) / max(len(d), 1)
                     for t, d in zip(tokens, data)],
            "pooled": [sum(((np.cumsum(s, axis=0) * s).sum(axis=0) for s in d),
                           np.zeros(H)) for d in data],
        }
        for out in (f(docs=data), ft.evaluate_numpy(program, docs=data)):
            for name, w in want.items():
                np.testing.assert_allclose(
                    out[name], np.array(w).reshape(len(data), H),
                    rtol=1e-12, atol=1e-12)


def test_sentence_offsets_read_in_the_document():
    # ft.lengths(doc) and ft.join read the rebased sentence offsets: each
    # sentence's end in its document, zipped into the map over documents
    docs, more = docs_placeholder(), docs_placeholder("more")

    def weighted(doc):
        sums = ft.map(lambda s: ft.sum(s), doc)
        return ft.sum(sums * ft.lengths(doc)) + ft.amax(ft.lengths(doc),
                                                        initial=0)
    program = ft.DictOfNamedArrays({
        "weighted": ft.map(weighted, docs),
        **as_parts({
            "lengths": ft.map(ft.lengths, docs),
            "joined": ft.map(lambda d, e: ft.join(d, e * 2), docs, more)})})
    f = ft.compile(program)
    for key in DOCS:
        a, b = documents(DOCS[key], 1), documents(DOCS[key], 2)
        want = [sum((s.sum() * len(s) for s in d), 0.0)
                + max((len(s) for s in d), default=0) for d in a]
        for out in (f(docs=a, more=b),
                    ft.evaluate_numpy(program, docs=a, more=b)):
            np.testing.assert_allclose(out["weighted"], np.array(want),
                                       rtol=1e-12, atol=1e-12)
            assert_nested(from_parts(out, "lengths", 2),
                          [np.array([len(s) for s in d], dtype=np.int64)
                           for d in a], 2)
            assert_nested(from_parts(out, "joined", 3),
                          [x + [t * 2 for t in y] for x, y in zip(a, b)], 3)


def test_per_sentence_results_of_other_lengths_and_tokens_with_sentences():
    # per-sentence results of L + 1 and 2L rows combined in the document
    # (each document's m + T and 2T rows of them), and the tokens read in
    # the same node as the number of sentences
    docs = docs_placeholder()

    def started(s):         # a running sum from a start row: L + 1 rows
        return cumsum_scan(ft.concatenate([ft.ones((1, H)), s]))

    def combined(doc):
        rows = ft.flatten(ft.map(started, doc))
        twice = ft.flatten(ft.map(lambda s: ft.concatenate([s, s * 2]), doc))
        return (ft.sum(rows * 2, axis=0) / ft.maximum(rows.shape[0], 1)
                + ft.amax(twice, axis=0, initial=0.0) * doc.length)

    program = ft.DictOfNamedArrays({
        "combined": ft.map(combined, docs),
        **as_parts({"scaled": ft.map(
            lambda doc: ft.flatten(doc) / ft.maximum(doc.length, 1), docs)})})

    def np_combined(d):
        rows = [np.cumsum(np.concatenate([np.ones((1, H)), s]), axis=0)
                for s in d]
        rows = np.concatenate(rows) if rows else np.zeros((0, H))
        twice = [np.concatenate([s, s * 2]) for s in d]
        peak = np.max(np.concatenate([np.zeros((1, H))] + twice), axis=0)
        return (rows * 2).sum(axis=0) / max(len(rows), 1) + peak * len(d)

    f = ft.compile(program)
    for key in DOCS:
        data = documents(DOCS[key])
        for out in (f(docs=data), ft.evaluate_numpy(program, docs=data)):
            np.testing.assert_allclose(
                out["combined"],
                np.array([np_combined(d) for d in data]).reshape(-1, H),
                rtol=1e-12, atol=1e-12)
            assert_nested(from_parts(out, "scaled", 2), [
                np.concatenate([np.zeros((0, H))] + d) / max(len(d), 1)
                for d in data], 2)


def test_sentence_tails_combined_in_the_document():
    # s[1:] and a scan over it: L - 1 rows per sentence, T - m per document
    docs = docs_placeholder()
    tails = ft.map(lambda doc: ft.sum(ft.flatten(ft.map(
        lambda s: cumsum_scan(s[1:] - s[:-1]), doc)), axis=0)
        + ft.sum(ft.flatten(doc), axis=0), docs)
    f = ft.compile(tails)
    for key in NONEMPTY_DOCS:
        data = documents(NONEMPTY_DOCS[key])
        want = np.array([sum((np.cumsum(s[1:] - s[:-1], axis=0).sum(axis=0)
                              + s.sum(axis=0) for s in d), np.zeros(H))
                         for d in data]).reshape(-1, H)
        for got in (f(docs=data), ft.evaluate_numpy(tails, docs=data)):
            np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def test_sentences_attending_to_their_documents_tokens():
    # a map over sentences capturing data of the document's number of
    # tokens (each sentence's scores against all its document's tokens):
    # the tokens are zipped in, read by each sentence at its document
    docs = docs_placeholder()
    data = documents(DOCS["mixed"])

    def attend(doc):
        tokens = ft.flatten(doc)
        return ft.map(lambda s: ft.sum(s @ tokens.T, axis=1), doc)
    attended = ft.map(attend, docs)
    want = [[(s @ np.concatenate(d).T).sum(axis=1) for s in d] for d in data]
    for got in (ft.compile(attended)(docs=data),
                ft.evaluate_numpy(attended, docs=data)):
        assert_nested(got, want, 3)
