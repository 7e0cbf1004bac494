# SPDX-License-Identifier: MIT
"""Maps over FractalTensors whose function returns a FractalTensor: the
result nests one level deeper. Evaluated with ``ft.evaluate_numpy`` and
checked against per-document (per-sequence) numpy loops; build-time
refusals. The compiled path is tested in
test_codegen_jagged_nested_results.py, which reuses the data and checks
here."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import ftlazy as ft
from helpers import compile_on_host

H = 3
K = 2
RNG = np.random.default_rng(5)
W = RNG.standard_normal((H, H)) * 0.5
TABLE = RNG.standard_normal((K, H))

#: sentence lengths per document: empty documents, empty sentences, an
#: empty batch, a single sentence
DOCS = {
    "mixed": [(3, 0, 2), (), (1,), (4, 4)],
    "one": [(1,)],
    "empty_batch": [],
    "empty_sentences": [(0, 0), ()],
}
#: the same without empty sentences (for s[1:])
NONEMPTY_DOCS = {
    "mixed": [(3, 1, 2), (), (1,), (4, 4)],
    "empty_batch": [],
}
#: sequence lengths of depth-2 batches
SEQS = {"mixed": (3, 0, 2, 1), "empty_batch": (), "all_empty": (0, 0)}


def documents(lengths, seed=0):
    rng = np.random.default_rng(seed)
    return [[rng.standard_normal((n, H)) for n in doc] for doc in lengths]


def sequences(lengths, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal((n, H)) for n in lengths]


def docs_placeholder(name="docs"):
    return ft.make_jagged_placeholder(name, (H,), np.float64, depth=3)


def seqs_placeholder(name="xs"):
    return ft.make_jagged_placeholder(name, (H,), np.float64, depth=2)


def assert_nested(got, want, depth):
    """*got* (a JaggedArray of *depth*) holds the nested lists *want*
    (innermost: numpy arrays), level by level."""
    assert isinstance(got, ft.JaggedArray) and got.depth == depth
    _assert_lists(got.tolist(), want)


def _assert_lists(got, want):
    if isinstance(want, np.ndarray):
        assert got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
        return
    assert len(got) == len(want)
    for g, w in zip(got, want):
        _assert_lists(g, w)


def cumsum_scan(s):
    """The running sum of a sequence's rows, with ft.scan."""
    return ft.scan(lambda c, x: c + x, s, ft.zeros(H))


def product_rows(x):
    """``ft.product(x, TABLE)`` of one sequence: per row of x, K rows."""
    return ft.product(x, TABLE)


# {{{ depth-3 inputs: the document's sentences, transformed

@pytest.mark.parametrize("key", list(DOCS))
def test_leafwise_document(key):
    docs = docs_placeholder()
    data = documents(DOCS[key])
    got = ft.evaluate_numpy(ft.map(lambda doc: ft.tanh(doc @ W) + 1, docs),
                            docs=data)
    assert_nested(got, [[np.tanh(s @ W) + 1 for s in d] for d in data], 3)


def test_document_returned_as_it_is():
    docs = docs_placeholder()
    data = documents(DOCS["mixed"])
    assert_nested(ft.evaluate_numpy(ft.map(lambda doc: doc, docs), docs=data),
                  data, 3)


@pytest.mark.parametrize("key", list(DOCS))
def test_map_over_sentences_with_results_of_their_length(key):
    docs = docs_placeholder()
    data = documents(DOCS[key])
    sums = ft.map(lambda doc: ft.map(cumsum_scan, doc), docs)
    assert_nested(ft.evaluate_numpy(sums, docs=data),
                  [[np.cumsum(s, axis=0) for s in d] for d in data], 3)
    proj = ft.map(lambda doc: ft.map(lambda s: s @ W, doc), docs)
    assert_nested(ft.evaluate_numpy(proj, docs=data),
                  [[s @ W for s in d] for d in data], 3)


@pytest.mark.parametrize("key", list(NONEMPTY_DOCS))
def test_map_over_sentences_dropping_a_row(key):
    docs = docs_placeholder()
    data = documents(NONEMPTY_DOCS[key])
    tails = ft.map(lambda doc: ft.map(lambda s: s[1:] - s[:-1], doc), docs)
    assert_nested(ft.evaluate_numpy(tails, docs=data),
                  [[s[1:] - s[:-1] for s in d] for d in data], 3)


def test_sentences_nested_once_more():
    # each sentence's rows paired with the table's: depth 4
    docs = docs_placeholder()
    data = documents(DOCS["mixed"])
    got = ft.evaluate_numpy(
        ft.map(lambda doc: ft.map(lambda s: product_rows(s)[1], doc), docs),
        docs=data)
    assert_nested(got, [[[TABLE for _ in s] for s in d] for d in data], 4)


def test_sentences_joined_with_themselves():
    # offsets that are not an affine function of the sentence offsets:
    # per-level lengths and their running sum
    docs = docs_placeholder()
    data = documents(DOCS["mixed"])
    got = ft.evaluate_numpy(ft.map(lambda doc: ft.join(doc, doc * 2), docs),
                            docs=data)
    assert_nested(got, [list(d) + [s * 2 for s in d] for d in data], 3)

# }}}


# {{{ depth-2 inputs: a FractalTensor built from each element

@pytest.mark.parametrize("key", list(SEQS))
def test_product_of_each_sequence_and_a_table(key):
    xs = seqs_placeholder()
    data = sequences(SEQS[key])
    firsts, seconds = ft.map(product_rows, xs)
    assert_nested(ft.evaluate_numpy(firsts, xs=data),
                  [[np.repeat(row[None], K, axis=0) for row in s] for s in data], 3)
    assert_nested(ft.evaluate_numpy(seconds, xs=data),
                  [[TABLE for _ in s] for s in data], 3)
    # the table's rows first: a static number of lists per element
    table_first = ft.map(lambda x: ft.product(TABLE, x)[1], xs)
    assert_nested(ft.evaluate_numpy(table_first, xs=data),
                  [[s for _ in TABLE] for s in data], 3)


@pytest.mark.parametrize("key", list(SEQS))
def test_static_fractal_tensor_per_element(key):
    # nothing depends on the element's length: stacked, then regrouped
    xs = seqs_placeholder()
    data = sequences(SEQS[key])
    got = ft.evaluate_numpy(
        ft.map(lambda x: ft.product(TABLE, TABLE * 2)[1] + ft.sum(x), xs), xs=data)
    assert_nested(got, [[TABLE * 2 + s.sum() for _ in TABLE] for s in data], 3)


def test_join_of_the_two_products():
    xs = seqs_placeholder()
    data = sequences(SEQS["mixed"])

    def body(x):
        a, b = product_rows(x)
        return ft.join(a, b)
    want = [[np.repeat(row[None], K, axis=0) for row in s] + [TABLE for _ in s]
            for s in data]
    assert_nested(ft.evaluate_numpy(ft.map(body, xs), xs=data), want, 3)

# }}}


# {{{ bundles, zips

def test_bundle_of_dense_and_nested_results():
    docs = docs_placeholder()
    data = documents(DOCS["mixed"])
    out = ft.map(lambda doc: {
        "scaled": doc * 2,
        "sentence_sums": ft.map(lambda s: ft.sum(s, axis=0), doc),
        "total": ft.sum(ft.flatten(doc), axis=0),
        "pairs": (ft.map(cumsum_scan, doc), doc - 1)}, docs)
    assert set(out) == {"scaled", "sentence_sums", "total", "pairs"}
    assert_nested(ft.evaluate_numpy(out["scaled"], docs=data),
                  [[s * 2 for s in d] for d in data], 3)
    assert_nested(ft.evaluate_numpy(out["sentence_sums"], docs=data),
                  [np.array([s.sum(axis=0) for s in d]).reshape(len(d), H)
                   for d in data], 2)
    np.testing.assert_allclose(
        ft.evaluate_numpy(out["total"], docs=data),
        [sum((s.sum(axis=0) for s in d), np.zeros(H)) for d in data])
    assert_nested(ft.evaluate_numpy(out["pairs"][0], docs=data),
                  [[np.cumsum(s, axis=0) for s in d] for d in data], 3)
    assert_nested(ft.evaluate_numpy(out["pairs"][1], docs=data),
                  [[s - 1 for s in d] for d in data], 3)


def test_zip_of_two_documents_batches():
    docs, more = docs_placeholder(), docs_placeholder("more")
    a, b = documents(DOCS["mixed"], 1), documents(DOCS["mixed"], 2)
    products = ft.map(lambda d, e: ft.map(lambda s, t: s * t, d, e), docs, more)
    assert_nested(ft.evaluate_numpy(products, docs=a, more=b),
                  [[s * t for s, t in zip(x, y)] for x, y in zip(a, b)], 3)
    with pytest.raises(ValueError, match=r"'docs'.*'more'.*level 1"):
        ft.evaluate_numpy(products, docs=a,
                          more=documents([(3, 1, 2), (), (1,), (4, 4)]))
    with pytest.raises(ValueError, match=r"'more'.* has 3 elements.*'docs'"):
        ft.evaluate_numpy(products, docs=a, more=b[:3])

# }}}


# {{{ sizes that are not affine in the element's: counted per element

@pytest.mark.parametrize("key", list(SEQS))
def test_product_of_two_zipped_elements(key):
    # L*L cells per element: a size computed inside the body
    xs = seqs_placeholder()
    data = sequences(SEQS[key])
    firsts, seconds = ft.map(lambda x, y: ft.product(x, y), xs, xs * 2)
    assert_nested(ft.evaluate_numpy(firsts, xs=data),
                  [[np.repeat(row[None], len(s), axis=0) for row in s]
                   for s in data], 3)
    assert_nested(ft.evaluate_numpy(seconds, xs=data),
                  [[s * 2 for _ in s] for s in data], 3)


def test_repeat_and_slices_of_each_element():
    xs, docs = seqs_placeholder(), docs_placeholder()
    seqs = sequences(SEQS["mixed"])
    assert_nested(ft.evaluate_numpy(ft.map(lambda x: ft.repeat(x, 2), xs),
                                    xs=seqs), [[s, s] for s in seqs], 3)
    data = documents(DOCS["mixed"])
    assert_nested(ft.evaluate_numpy(ft.map(lambda d: ft.repeat(d, 2), docs),
                                    docs=data), [[d, d] for d in data], 4)
    nonempty = [d for d in data if d]
    assert_nested(ft.evaluate_numpy(ft.map(lambda d: d[1:], docs),
                                    docs=nonempty), [d[1:] for d in nonempty], 3)
    assert_nested(ft.evaluate_numpy(ft.map(lambda d: ft.repeat(d, 2), docs),
                                    docs=[]), [], 4)


@pytest.mark.parametrize("index", [slice(1, None), slice(None, -2),
                                   slice(-1, None), slice(1, None, 2),
                                   slice(None, None, -1), slice(2, 0, -1),
                                   slice(7, None)], ids=str)
def test_slices_of_each_element_at_depth_3_and_4(index):
    # (the elements are sliced before the map, see
    # ftlazy.fractal_element_views; each element clamps as Python does)
    docs = docs_placeholder()
    corpus = ft.make_jagged_placeholder("corpus", (H,), np.float64, depth=4)
    data = documents(DOCS["mixed"] + [(1, 2, 0, 3, 1)])
    assert_nested(ft.evaluate_numpy(ft.map(lambda d: d[index], docs),
                                    docs=data), [d[index] for d in data], 3)
    books = [data[:2], [], data[2:], [data[0]] * 3]
    assert_nested(ft.evaluate_numpy(ft.map(lambda b: b[index], corpus),
                                    corpus=books),
                  [b[index] for b in books], 4)
    assert_nested(ft.evaluate_numpy(ft.map(lambda d: d[index], docs),
                                    docs=[]), [], 3)


@settings(max_examples=40, deadline=None)
@given(lengths=st.lists(st.lists(st.integers(0, 2), max_size=5), max_size=4),
       start=st.none() | st.integers(-6, 6), stop=st.none() | st.integers(-6, 6),
       step=st.none() | st.integers(-3, 3).filter(bool))
def test_random_slices_of_each_document(lengths, start, stop, step):
    # any Python slice of each document, as Python slices its list
    index = slice(start, stop, step)
    data = documents(lengths)
    result = ft.map(lambda d: d[index], docs_placeholder())
    want = [d[index] for d in data]
    assert_nested(ft.evaluate_numpy(result, docs=data), want, 3)


def test_captured_fractal_tensor_per_element():
    xs, ys = seqs_placeholder(), seqs_placeholder("ys")
    data, other = sequences(SEQS["mixed"]), sequences((2, 0), seed=3)
    got = ft.evaluate_numpy(ft.map(lambda x: ys * ft.sum(x), xs),
                            xs=data, ys=other)
    assert_nested(got, [[t * s.sum() for t in other] for s in data], 3)


@pytest.mark.parametrize("lengths", [[(3, 0, 2), (), (1,), (4, 4)], [],
                                     [()]])
def test_counted_sizes_of_documents_run_on_the_host(lengths):
    # (over depth-2 FractalTensors they compile: test_codegen_jagged_counted)
    # each document repeated twice: depth 4; the rest (a leaf-wise product
    # and a sum of the flattened values) is compiled
    docs = docs_placeholder()
    repeated = ft.map(lambda d: ft.repeat(d, 2), docs)
    result = {"repeated": repeated.values * 2,
              "total": ft.sum(ft.flatten(repeated), axis=0)}
    compiled = compile_on_host(ft.map(lambda d: ft.repeat(d, 2), docs),
                               "not affine in the element's sizes")
    data = documents(lengths)
    assert_nested(compiled(docs=data), [[d, d] for d in data], 4)
    both = compile_on_host(ft.make_dict_of_named_arrays(result),
                           "not affine in the element's sizes")(docs=data)
    # (each document's tokens twice, document after document)
    want = np.concatenate([s for d in data for _ in range(2) for s in d]
                          + [np.zeros((0, H))])
    np.testing.assert_allclose(both["repeated"], 2 * want)
    np.testing.assert_allclose(both["total"], want.sum(axis=0))

# }}}


def test_element_views_need_lists_of_lists():
    # (element_slices, element_leaves and element_filtered view the
    # elements of the elements of a FractalTensor: a depth-2 one has none)
    from ftlazy.fractal_element_views import element_leaves
    from ftlazy.fractal_slice_views import element_slices
    xs = seqs_placeholder()
    with pytest.raises(ValueError, match=r"element_slices needs a "
                       r"FractalTensor of depth >= 3, got .*depth=2"):
        element_slices(xs, slice(1, None))
    docs = ft.make_jagged_placeholder("docs", (2,), np.float64, depth=3)
    with pytest.raises(ValueError, match="element_slices needs at least "
                       "one slice"):
        element_slices(docs)
    with pytest.raises(ValueError, match=r"element_leaves needs a "
                       r"FractalTensor of depth >= 3, got .*depth=2"):
        element_leaves(xs)
    from ftlazy.fractal_element_views import element_filtered
    with pytest.raises(ValueError, match=r"element_filtered needs a "
                       r"FractalTensor of depth >= 3, got .*depth=2"):
        element_filtered(xs, ft.lengths(xs) > 0)
