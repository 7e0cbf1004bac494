# SPDX-License-Identifier: MIT
"""Maps over FractalTensors whose bodies hold arrays with the element's
length after the first axis (attention scores ``(L, L)``, pair tables
``(L, L, D)``, transposes ``(D, L)``), compiled through OpenCL on every
profile flavour and checked against per-sequence numpy loops."""

from __future__ import annotations

import numpy as np
import pytest

import ftlazy as ft

D = 3
LENGTHS = {"nonempty": (3, 2, 5, 1), "mixed": (3, 0, 2, 5, 1), "empty_batch": ()}


def batch(lengths, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal((n, D)) for n in lengths]


@pytest.fixture
def xs():
    return ft.make_jagged_placeholder("xs", (D,), np.float64, depth=2)


def check(result, reference, data):
    for got in (ft.compile(result)(xs=data), ft.evaluate_numpy(result, xs=data)):
        if isinstance(got, ft.JaggedArray):
            assert len(got) == len(data)
            for g, s in zip(got.tolist(), data):
                want = reference(s)
                assert g.shape == want.shape
                np.testing.assert_allclose(g, want, rtol=1e-12, atol=1e-12)
        else:
            want = np.array([reference(s) for s in data]).reshape(got.shape)
            assert got.shape == (len(data),) + tuple(result.shape[1:])
            np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def attention(s):
    scores = (s @ s.T) / np.sqrt(D)                       # (L, L)
    p = ft.exp(scores - ft.amax(scores, axis=1, keepdims=True))
    return (p / ft.sum(p, axis=1, keepdims=True)) @ s      # (L, D)


def attention_numpy(s):
    scores = s @ s.T / np.sqrt(D)
    p = np.exp(scores - scores.max(axis=1, keepdims=True))
    return (p / p.sum(axis=1, keepdims=True)) @ s


@pytest.mark.parametrize("lengths", ["nonempty", "empty_batch"])
def test_self_attention_within_each_sequence(xs, lengths):
    check(ft.map(attention, xs), attention_numpy, batch(LENGTHS[lengths]))


def test_pair_table_reduced_over_partners(xs):
    # (L, L, D) differences, reduced over the partner axis
    def body(s):
        diff = s[:, None, :] - s[None, :, :]
        return ft.sum(ft.exp(-diff * diff), axis=1)        # (L, D)

    def reference(s):
        diff = s[:, None, :] - s[None, :, :]
        return np.exp(-diff * diff).sum(axis=1)
    check(ft.map(body, xs), reference, batch(LENGTHS["mixed"]))


def test_pairs_below_the_diagonal_summed_per_sequence(xs):
    # within-segment pairs j < k (J12-like), summed to one number per event
    def body(s):
        n = s.shape[0]
        j = ft.arange(n)
        below = ft.less(j[:, None], j[None, :])
        dots = s @ s.T
        return ft.sum(ft.where(below, dots, 0.0))

    def reference(s):
        dots = s @ s.T
        return np.triu(dots, 1).sum()
    check(ft.map(body, xs), reference, batch(LENGTHS["mixed"]))


def test_transposed_element_and_gram_matrix(xs):
    # (D, L) transpose times (L, D): the reduction over L is masked
    check(ft.map(lambda s: s.T @ s + ft.sum(s.T, axis=1), xs),
          lambda s: s.T @ s + s.T.sum(axis=1), batch(LENGTHS["mixed"]))


def test_result_with_the_length_after_the_first_axis_is_refused(xs):
    with pytest.raises(ValueError, match="after the first axis"):
        ft.map(lambda s: s @ s.T, xs)
