# SPDX-License-Identifier: MIT
"""Attention within each sequence of a FractalTensor (``softmax(q kᵀ/√d) v``
per head, the ``(L, L)`` scores stored padded to the longest sequence),
compiled on every profile flavour and checked against per-sequence numpy
loops. The padded loops run only over each sequence's own extent
(:mod:`ftlazy.target.loopy.padding`); on CPUs the scores are a
register-blocked contraction and the exponentials run on vectors, whose
partial blocks and lanes past a sequence's end these lengths exercise
(lengths 0, 1, not multiples of the block, the longest one too)."""

from __future__ import annotations

import numpy as np
import pytest

import ftlazy as ft

HEADS, D = 2, 8
#: one compiled program serves them all (lengths 0 only where the body has
#: no max over a sequence: numpy refuses the max of nothing, and so do we)
LENGTHS = [(5, 1, 13, 9, 3), (1,), (), (4, 8, 16, 12)]
LENGTHS_WITH_EMPTY = [(5, 0, 1, 13, 9, 3), (0, 0), ()]


def multi_head(seq, stable=True, heads=HEADS, d=D):
    s = ft.reshape(seq, (seq.shape[0], heads, d))
    scores = ft.einsum("qhd,khd->hqk", s, s) / np.float32(np.sqrt(d))
    if stable:
        scores = scores - ft.amax(scores, axis=2, keepdims=True)
    p = ft.exp(scores)
    p = p / ft.sum(p, axis=2, keepdims=True)
    return ft.reshape(ft.einsum("hqk,khd->qhd", p, s), (seq.shape[0], heads * d))


def multi_head_numpy(x, stable=True, heads=HEADS, d=D):
    s = x.reshape(-1, heads, d).transpose(1, 0, 2)
    scores = s @ s.transpose(0, 2, 1) / np.float32(np.sqrt(d))
    if stable:
        scores = scores - scores.max(axis=-1, keepdims=True)
    p = np.exp(scores)
    p /= p.sum(axis=-1, keepdims=True)
    return (p @ s).transpose(1, 0, 2).reshape(-1, heads * d)


def batch(lengths, width, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal((n, width)).astype(np.float32) for n in lengths]


def check(got, data, reference):
    assert isinstance(got, ft.JaggedArray) and len(got) == len(data)
    for g, s in zip(got.tolist(), data):
        np.testing.assert_allclose(g, reference(s), rtol=2e-5, atol=2e-6)


@pytest.mark.parametrize("stable", [True, False])
def test_multi_head_attention_every_length_distribution(stable):
    xs = ft.make_jagged_placeholder("xs", (HEADS * D,), np.float32, depth=2)
    result = ft.map(lambda seq: multi_head(seq, stable), xs)
    f = ft.compile(result)
    if f.plan.profile.kind == "cpu":
        assert "padded_contraction" in set(f.plan.strategies().values())

    def reference(x):
        return multi_head_numpy(x, stable)
    for k, lengths in enumerate(LENGTHS if stable else LENGTHS_WITH_EMPTY):
        data = batch(lengths, HEADS * D, seed=k)
        check(f(xs=data), data, reference)
    data = batch((5, 0, 1) if not stable else (5, 1), HEADS * D)
    check(ft.evaluate_numpy(result, xs=data), data, reference)
    if stable:
        with pytest.raises(ValueError, match="element 1: zero-size array"):
            f(xs=batch((3, 0, 2), HEADS * D))


def test_cross_attention_of_two_zipped_fractal_tensors():
    # queries and keys from different FractalTensors of equal lengths: the
    # block reads its rows from one and its columns from the other
    qs = ft.make_jagged_placeholder("qs", (HEADS * D,), np.float32, depth=2)
    ks = ft.make_jagged_placeholder("ks", (HEADS * D,), np.float32, depth=2)

    def body(q, k):
        n = q.shape[0]
        q, k = (ft.reshape(a, (n, HEADS, D)) for a in (q, k))
        p = ft.exp(ft.einsum("qhd,khd->hqk", q, k))
        p = p / ft.sum(p, axis=2, keepdims=True)
        return ft.reshape(ft.einsum("hqk,khd->qhd", p, k), (n, HEADS * D))

    def reference(q, k):
        q, k = (a.reshape(-1, HEADS, D).transpose(1, 0, 2) for a in (q, k))
        p = np.exp(q @ k.transpose(0, 2, 1))
        p /= p.sum(axis=-1, keepdims=True)
        return (p @ k).transpose(1, 0, 2).reshape(-1, HEADS * D)

    f = ft.compile(ft.map(body, qs, ks))
    lengths = (5, 0, 1, 13)
    q, k = batch(lengths, HEADS * D, seed=1), batch(lengths, HEADS * D, seed=2)
    got = f(qs=q, ks=k)
    assert len(got) == len(q)
    for g, a, b in zip(got.tolist(), q, k):
        np.testing.assert_allclose(g, reference(a, b), rtol=2e-5, atol=2e-6)


def test_masked_scores_with_padding_guard_kept():
    # a causal mask (k <= q) inside the padded scores: the guard past the
    # element is dropped, the mask stays (single-head scores, (L, L) packed
    # by rows, are test_codegen_jagged_pairs' attention)
    heads, d = 3, 4
    xs = ft.make_jagged_placeholder("xs", (heads * d,), np.float32, depth=2)

    def body(seq):
        s = ft.reshape(seq, (seq.shape[0], heads, d))
        scores = ft.einsum("qhd,khd->hqk", s, s)
        n = seq.shape[0]
        causal = ft.arange(n)[:, None] >= ft.arange(n)[None, :]
        w = ft.where(causal, ft.exp(scores - ft.amax(scores, axis=2,
                                                     keepdims=True)), 0)
        return ft.reshape(ft.einsum("hqk,khd->qhd", w, s), (n, heads * d))

    def reference(x):
        s = x.reshape(-1, heads, d).transpose(1, 0, 2)
        scores = s @ s.transpose(0, 2, 1)
        n = x.shape[0]
        w = np.where(np.tril(np.ones((n, n), bool)),
                     np.exp(scores - scores.max(axis=-1, keepdims=True)), 0)
        return (w @ s).transpose(1, 0, 2).reshape(-1, heads * d)

    f = ft.compile(ft.map(body, xs))
    data = batch((6, 2, 1, 11), heads * d)
    check(f(xs=data), data, reference)


@pytest.mark.parametrize("width", [4, 16])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_score_blocks_build_vector_values_at_every_width(width, dtype):
    """The register-blocked scores load each factor's vector with one
    statement from its lanes (no lane-by-lane loads, which cost loopy an
    isl pass each) and accumulate vectors; planned and emitted for a
    synthetic profile at every width, whether or not this device runs it."""
    import re

    from ftlazy.target.loopy.jagged_program import jagged_lowering
    from ftlazy.target.loopy.profile import synthetic_profile
    xs = ft.make_jagged_placeholder("xs", (HEADS * 16,), dtype, depth=2)
    result = ft.map(lambda seq: multi_head(seq, d=16), xs)
    with pytest.raises(TypeError, match="reads FractalTensors.*ft.compile"):
        ft.generate_loopy(result)
    prg = ft.generate_loopy(jagged_lowering(result).dense,
                            profile=synthetic_profile("cpu", width))
    assert "padded_contraction" in set(prg.plan.strategies().values())
    ctype = {"float64": "double", "float32": "float"}[np.dtype(dtype).name]
    loads = re.findall(rf"(_ft_fv\d+)\[\d\] = \({ctype}{width}\)\(", prg.source)
    assert len(set(loads)) == 2 and len(loads) == 8
    assert not re.search(r"_ft_fv\d+\[\d+\]\.s", prg.source)
    assert re.search(r"_ft_acc\d+\[\d+\] = _ft_acc\d+\[\d+\] \+ _ft_fv\d+\[\d\] "
                     r"\* _ft_fv\d+\[\d\];", prg.source)
