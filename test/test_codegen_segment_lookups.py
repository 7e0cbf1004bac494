# SPDX-License-Identifier: MIT
"""A reduction over one element's packed rows knows the segment id of every
row it reads: code generation substitutes the element for those lookups
(:func:`ftlazy.target.loopy.ranges.known_element`), e.g. in the max of a
ragged softmax over the element plus one ``-inf`` row. Values against
per-element numpy loops (empty elements, empty and all-empty batches,
length 1) through ft.evaluate_numpy and ft.compile; the generated source
no longer reads the segment ids the lowered DAG binds; the helpers refuse
rows they cannot prove."""

from __future__ import annotations

import numpy as np
import pymbolic.primitives as prim
import pytest

import ftlazy as ft
from ftlazy.target.loopy.jagged_program import jagged_lowering
from ftlazy.target.loopy.profile import synthetic_profile
from ftlazy.target.loopy.ranges import (
    DataRange, element_rows, known_element, linear_form,
    parse_segment_ids_binding, segment_ids_binding)

H = 8
LENGTHS = [(3, 0, 2, 70, 1, 0), (1,), (), (0, 0, 0), (5, 1, 1, 2)]


def ninf_row():
    return np.full((1, H), -np.inf)


def softmax(s):
    m = ft.amax(ft.concatenate([s, ninf_row()]), axis=0)
    e = ft.exp(s - m)
    return e / ft.sum(e, axis=0)


def softmax_numpy(s):
    if not len(s):
        return s
    e = np.exp(s - s.max(axis=0))
    return e / e.sum(axis=0)


def centered_max(s):
    # packed rows that read the element's own sum, inside the concatenation
    c = s - ft.sum(s, axis=0) / 4
    return ft.amax(ft.concatenate([c, ninf_row()]), axis=0)


def centered_max_numpy(s):
    return np.concatenate([s - s.sum(axis=0) / 4, ninf_row()]).max(axis=0)


def batch(lengths, seed):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal((n, H)) for n in lengths]


@pytest.mark.parametrize("body, reference, packed", [
    (softmax, softmax_numpy, True),
    (centered_max, centered_max_numpy, False)], ids=["softmax", "centered_max"])
def test_values_against_numpy_loops(body, reference, packed):
    xs = ft.make_jagged_placeholder("xs", (H,), np.float64, depth=2)
    result = ft.map(body, xs)
    f = ft.compile(result)  # one program for every length distribution
    for seed, lengths in enumerate(LENGTHS):
        data = batch(lengths, seed)
        for got in (f(xs=data), ft.evaluate_numpy(result, xs=data)):
            assert len(got) == len(data)
            if packed:
                for g, s in zip(got.tolist(), data):
                    np.testing.assert_allclose(g, reference(s), rtol=1e-12)
            else:
                want = np.array([reference(s) for s in data]).reshape(-1, H)
                np.testing.assert_allclose(got, want, rtol=1e-12)


def _segment_ids_of_extent(lowering, form):
    (name,) = [n for n, (_, f) in lowering.host.segment_ids.items() if f == form]
    return name


@pytest.mark.parametrize("kind", ["cpu", "gpu"])
def test_lookups_gone_from_the_max_over_element_and_row(kind):
    xs = ft.make_jagged_placeholder("xs", (H,), np.float64, depth=2)
    lowering = jagged_lowering(ft.map(softmax, xs))
    # the concatenation's rows (L + 1 per element) have segment ids, which
    # only the max reads, over each element's own L + 1 rows
    user = _segment_ids_of_extent(lowering, (1, 1))
    prg = ft.generate_loopy(lowering.dense,
                            profile=synthetic_profile(kind, vector_width=4))
    name = prg.canon.input_names[user]
    assert name not in prg.source, prg.source
    # the exp's rows (L per element) look theirs up on GPUs; CPU plans run
    # them over each element's rows, one work item per element (fused)
    other = prg.canon.input_names[_segment_ids_of_extent(lowering, (0, 1))]
    assert (f"{other}[" in prg.source) == (kind == "gpu")


def test_binding_names_round_trip():
    for form in [(0, 1), (1, 1), (-1, 2)]:
        name = segment_ids_binding(form, "_ft_off1")
        assert parse_segment_ids_binding(name) == (form, "_ft_off1")
    assert parse_segment_ids_binding("_ft_off") is None
    assert parse_segment_ids_binding("_ft_seg_x_1__ft_off") is None


def _rows(lower=0, const=1, coeff=1):
    o, i = prim.Variable("off"), prim.Variable("i")
    upper = const + coeff * (o[i + 1] - o[i])
    return element_rows(DataRange((lower,), (prim.Variable("n"), upper)), "j")


def test_known_element_needs_the_row_the_range_proves():
    o, i, j = prim.Variable("off"), prim.Variable("i"), prim.Variable("j")
    rows = _rows()
    assert len(rows) == 1
    # any order of the terms
    assert known_element(rows, (1, 1), "off", j + o[i] + i) == i
    assert known_element(rows, (1, 1), "off", prim.Sum((o[i], j, 1 * i))) == i
    # another extent, another offsets, a shifted row: not proven
    assert known_element(rows, (0, 1), "off", o[i] + j) is None
    assert known_element(rows, (1, 1), "other", i + o[i] + j) is None
    assert known_element(rows, (1, 1), "off", i + o[i] + j + 1) is None
    # a range that may start below the element's first row proves nothing
    assert _rows(lower=prim.Variable("s")) == []
    assert linear_form(2 * (i + j) - j) == linear_form(2 * i + j)


def test_float32_softmax_with_a_float64_initial_row():
    # the float64 -inf row is cast to float32 inside vectorized math calls,
    # which map loopy's own TypeCast nodes (this used to raise AttributeError)
    xs = ft.make_jagged_placeholder("xs", (8,), np.float32, depth=2)

    def softmax(s):
        m = ft.amax(ft.concatenate([s, np.full((1, 8), -np.inf)]), axis=0)
        e = ft.exp(s - m)
        return e / ft.sum(e, axis=0)

    result = ft.map(softmax, xs)
    lowering = jagged_lowering(result)
    for width in (4, 8):
        ft.generate_loopy(lowering.dense,
                          profile=synthetic_profile("cpu", vector_width=width))
    data = [np.random.default_rng(n).random((n, 8)).astype(np.float32)
            for n in (3, 0, 17)]
    got = ft.compile(result)(xs=data)
    assert got.lengths().tolist() == [3, 0, 17]
    for s, g in zip(data, got.tolist()):
        if len(s):
            e = np.exp(s - s.max(axis=0))
            np.testing.assert_allclose(g, e / e.sum(axis=0), rtol=1e-5)
