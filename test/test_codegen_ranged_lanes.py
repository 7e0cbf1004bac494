# SPDX-License-Identifier: MIT
"""Reductions over each element's own extent (the rows of attention's
``(L, L)`` scores) run in independent lanes on CPUs (``ranged reduction in
8 lanes`` in the plan, see ``ftlazy/target/loopy/ranged_lanes.py``): whole
groups of lanes, then a guarded tail. Checked against per-element numpy at
lengths around the lane count, with NaN and infinities in the main part and
in the tail."""

from __future__ import annotations

import re

import numpy as np
import pytest

import ftlazy as ft

#: around the lane count (8): no whole group, exactly one, a tail of one...
LENGTHS = [0, 1, 3, 7, 8, 9, 16, 17, 31]


def _pairs(op: str):
    """Per element: ``op`` over ``k`` of ``s[q, 0] - s[k, 1]``, an
    ``(L,)`` row per element (a reduction over the element's own extent)."""
    def body(s):
        diff = s[:, 0][:, None] - s[:, 1][None, :]
        return getattr(ft, op)(diff, axis=1)
    return body


def _reference(op: str, values: np.ndarray, lengths: list[int]) -> np.ndarray:
    out = []
    start = 0
    for n in lengths:
        s = values[start:start + n]
        start += n
        if n:
            out.append(getattr(np, op)(s[:, 0][:, None] - s[:, 1][None, :], axis=1))
    return np.concatenate(out) if out else np.zeros(0, values.dtype)


def _batch(dtype, lengths, seed=0):
    rng = np.random.default_rng(seed)
    values = (rng.standard_normal((sum(lengths), 2)) * 4).astype(dtype)
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    return values, offsets


def _compile(op: str, dtype):
    xs = ft.make_jagged_placeholder("xs", (2,), dtype, depth=2)
    return ft.compile(ft.map(_pairs(op), xs))


def _plan_lines(f) -> list[str]:
    return [str(p) for p in f.plan.arrays.values()]


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32])
@pytest.mark.parametrize("op", ["sum", "amax", "amin"])
def test_ranged_reductions_in_lanes_match_numpy(op, dtype):
    f = _compile(op, dtype)
    profile = f.plan.profile
    if profile.kind == "cpu":
        assert any("ranged reduction in 8 lanes" in line
                   for line in _plan_lines(f)), _plan_lines(f)
        # float sums accumulate in one OpenCL vector where the probe passed
        # vector arithmetic at 8 lanes; the rest in a private array
        vector = (op == "sum" and dtype != np.int32 and profile.vectorize
                  and profile.builtin_width(dtype, "arith") >= 8)
        assert ("_ft_vacc" in f.source) == vector
        assert ("_ft_acc" in f.source) == (not vector)
        if not vector:
            # the private lanes are loops for the OpenCL compiler to unroll,
            # not statements loopy unrolled lane by lane
            assert re.search(r"for \(int _ft_lane\d+ = 0; _ft_lane\d+ <= 7;",
                             f.source)
            assert not re.search(r"_ft_acc\d+\[7\]", f.source)
    # (a maximum over an empty element is an error, as in numpy)
    lengths = LENGTHS if op == "sum" else [n for n in LENGTHS if n]
    values, offsets = _batch(dtype, lengths)
    got = f(xs=ft.JaggedArray(values, offsets))
    want = _reference(op, values, lengths)
    if dtype == np.int32 or op != "sum":
        np.testing.assert_array_equal(got.values, want)
    else:
        np.testing.assert_allclose(got.values, want, rtol=1e-5, atol=1e-4)
    np.testing.assert_array_equal(got.offsets[-1], offsets)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("op", ["amax", "amin"])
def test_nan_propagates_from_whole_groups_and_the_tail(op, dtype):
    lengths = [17, 17, 17, 9]
    values, offsets = _batch(dtype, lengths, seed=3)
    values[0 + 5, 1] = np.nan    # element 0: a whole group's lane 5
    values[17 + 16, 1] = np.nan  # element 1: the tail's only step
    values[34 + 0, 1] = np.nan   # element 2: the first step
    values[51 + 8, 1] = -np.inf if op == "amax" else np.inf  # element 3
    f = _compile(op, dtype)
    got = f(xs=ft.JaggedArray(values, offsets)).values
    want = _reference(op, values, lengths)
    np.testing.assert_array_equal(got, want)
    assert np.isnan(got[:51]).all() and not np.isnan(got[51:]).any()


def test_all_empty_and_empty_batch():
    f = _compile("sum", np.float32)
    for lengths in ([0, 0, 0], []):
        values, offsets = _batch(np.float32, lengths)
        got = f(xs=ft.JaggedArray(values, offsets))
        assert got.values.shape == (0,)
        np.testing.assert_array_equal(got.offsets[-1], offsets)


def test_attention_softmax_in_lanes_matches_numpy():
    """The rows of attention within a sequence: the maximum and the sum of
    its softmax both run in lanes; lengths around the lane count."""
    d = 4
    xs = ft.make_jagged_placeholder("xs", (d,), np.float32, depth=2)

    def attention(s):
        scores = s @ s.T
        p = ft.exp(scores - ft.amax(scores, axis=1, keepdims=True))
        return (p / ft.sum(p, axis=1, keepdims=True)) @ s

    f = ft.compile(ft.map(attention, xs))
    if f.plan.profile.kind == "cpu":
        assert sum("ranged reduction in 8 lanes" in line
                   for line in _plan_lines(f)) == 2, _plan_lines(f)
    lengths = [9, 1, 8, 23, 16, 2]  # (amax of an empty row is an error)
    rng = np.random.default_rng(1)
    values = rng.standard_normal((sum(lengths), d)).astype(np.float32)
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    got = f(xs=ft.JaggedArray(values, offsets)).values
    want = []
    for a, b in zip(offsets, offsets[1:]):
        s = values[a:b].astype(np.float64)
        sc = s @ s.T
        p = np.exp(sc - sc.max(axis=1, keepdims=True)) if b > a else sc
        want.append((p / p.sum(axis=1, keepdims=True)) @ s if b > a else s)
    np.testing.assert_allclose(got, np.concatenate(want), rtol=2e-5, atol=2e-5)


def test_other_reductions_keep_one_chain():
    """A product over the range, and a reduction of a fixed axis, are not
    planned in lanes."""
    xs = ft.make_jagged_placeholder("xs", (2,), np.float64, depth=2)
    prod = ft.compile(ft.map(_pairs("prod"), xs))
    fixed = ft.compile(ft.map(lambda s: ft.sum(s, axis=1), xs))
    for f in (prod, fixed):
        assert not any("lanes" in line for line in _plan_lines(f)), _plan_lines(f)
    values, offsets = _batch(np.float64, LENGTHS)
    np.testing.assert_allclose(prod(xs=ft.JaggedArray(values, offsets)).values,
                               _reference("prod", values, LENGTHS), rtol=1e-12)
