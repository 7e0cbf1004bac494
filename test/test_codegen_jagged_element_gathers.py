# SPDX-License-Identifier: MIT
"""Gathers of an element's own rows in maps over FractalTensors
(``ft.gather(s, idx)``, ``s[idx]``, also from arrays of the element's
length the body computes): the indices may be zipped with the element,
the same for every element, computed in the body, or another
FractalTensor's element read at the map's index. Compiled on every
profile flavour and checked against per-element numpy loops and the
reference evaluator; each index is bounded by its own element's length
(negative ones count from its end), and an out-of-range one raises
IndexError from both paths, while finished or empty elements never do."""

from __future__ import annotations

import numpy as np
import pytest

import ftlazy as ft
from helpers import JAGGED_LENGTHS

H = 3
RNG = np.random.default_rng(11)


def run_both(result, **inputs):
    return (ft.compile(result)(**inputs), ft.evaluate_numpy(result, **inputs))


def assert_lists(got, want):
    got = got.tolist() if hasattr(got, "tolist") else list(got)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-12)


@pytest.fixture
def xs():
    return ft.make_jagged_placeholder("xs", (H,), np.float64, depth=2)


@pytest.mark.parametrize("lengths", [JAGGED_LENGTHS["mixed"],
                                     JAGGED_LENGTHS["empty_batch"],
                                     JAGGED_LENGTHS["all_empty"], (1,)])
def test_rows_at_zipped_indices(xs, lengths):
    # each element's rows in the order of its own indices (zipped: the
    # same lengths), from the element and from rows the body computes,
    # written as ft.gather and as indexing; negative indices count back
    ids = ft.make_jagged_placeholder("ids", (), np.int64, depth=2)
    out = ft.map(lambda s, i: ft.gather(s, i) + (s * 2)[i] + s[-1 - i], xs, ids)
    data = [RNG.standard_normal((n, H)) for n in lengths]
    idd = [RNG.permutation(n) - (n if n % 2 else 0) for n in lengths]
    want = [s[i] + (s * 2)[i] + s[-1 - i] for s, i in zip(data, idd)]
    for got in run_both(out, xs=data, ids=idd):
        assert_lists(got, want)


def test_rows_at_indices_the_body_computes(xs):
    # the same indices for every element (the first and last rows), and a
    # 0-d index computed from the element (the number of rows of positive
    # sum, less one: -1 is the last row)
    first_last = ft.map(lambda s: ft.gather(s, np.array([0, -1])), xs)
    peak = ft.map(lambda s: s[ft.sum(ft.sum(s, axis=1) > 0).astype(np.int64)
                              - 1], xs)
    data = [RNG.standard_normal((n, H)) for n in (3, 1, 4)]
    for got in run_both(first_last, xs=data):
        assert_lists(got, [s[[0, -1]] for s in data])
    for got in run_both(peak, xs=data):
        assert_lists(got, [s[(s.sum(axis=1) > 0).sum() - 1] for s in data])
    # an empty element has no first row: both paths raise, naming the index
    for run in (ft.compile(first_last),
                lambda **a: ft.evaluate_numpy(first_last, **a)):
        with pytest.raises(IndexError, match="index (0|-1) is out of"):
            run(xs=data + [np.zeros((0, H))])


def test_rows_at_another_fractal_tensors_element(xs):
    # indices of other lengths: the element of ids at the map's index
    ids = ft.make_jagged_placeholder("ids", (), np.int64, depth=2)
    n = ft.arange(ft.lengths(xs).shape[0])
    out = ft.map(lambda s, k: ft.sum(ft.gather(s, ids[k]), axis=0), xs, n)
    data = [RNG.standard_normal((m, H)) for m in (3, 0, 2)]
    idd = [np.array([2, 2, 0, 1]), np.array([], np.int64), np.array([1])]
    for got in run_both(out, xs=data, ids=idd):
        np.testing.assert_allclose(
            got, [s[i].sum(axis=0) for s, i in zip(data, idd)], atol=1e-12)


def test_out_of_range_indices_raise(xs):
    ids = ft.make_jagged_placeholder("ids", (), np.int64, depth=2)
    out = ft.map(lambda s, i: ft.gather(s, i), xs, ids)
    compiled = ft.compile(out)
    data = [RNG.standard_normal((n, H)) for n in (2, 3)]
    # index 2 is in range for the second element, not for the first
    for bad in ([np.array([2, 0]), np.array([0, 1, 2])],
                [np.array([0, 1]), np.array([0, 1, -4])]):
        for run in (compiled, lambda **a: ft.evaluate_numpy(out, **a)):
            with pytest.raises(IndexError, match="index (2|-4) is out of"):
                run(xs=data, ids=bad)
    good = [np.array([1, -2]), np.array([2, -3, 0])]
    assert_lists(compiled(xs=data, ids=good),
                 [s[i] for s, i in zip(data, good)])


@pytest.mark.parametrize("name", ["s[-1, -1]", "s[0, 1:]", "s[None, -2, ::-1]",
                                  "s[[0, 2], 0]", "s[idx, -1]", "s[idx, idx]",
                                  "s[:, idx]", "s[-1, idx]"])
def test_indexing_several_axes_checks_the_elements_rows(xs, name):
    # (with an index on another axis too, an index of the element's rows
    # out of range read 0 when compiled; evaluate_numpy raised)
    idx = ft.make_placeholder("idx", (2,), np.int64)
    out = ft.map(lambda s: eval(name, {"s": s, "idx": idx}), xs)
    compiled = ft.compile(out)
    short = [RNG.standard_normal((n, H)) for n in (3, 1)]
    empty = [RNG.standard_normal((n, H)) for n in (3, 0)]
    for data, positions in ((short, [0, 2]), (empty, [0, 1]), (short, [1, -1])):
        inputs = {"xs": data}
        if "idx" in name:
            inputs["idx"] = np.array(positions)
        try:
            want = [eval(name, {"s": s, "idx": np.array(positions)})
                    for s in data]
        except IndexError:
            for run in (compiled, lambda **a: ft.evaluate_numpy(out, **a)):
                with pytest.raises(IndexError, match="out of"):
                    run(**inputs)
            continue
        got, reference = run_both(out, **inputs)
        assert_lists(got, want)
        assert_lists(reference, want)


def test_another_list_read_at_the_maps_index_of_other_lengths():
    # (a shorter list raised ValueError in compiled programs where
    # evaluate_numpy raised IndexError; a longer one runs in evaluate_numpy
    # only, and the compiled program says why)
    xs = ft.make_jagged_placeholder("xs", (2,), np.float64, depth=2)
    ys = ft.make_jagged_placeholder("ys", (2,), np.float64, depth=2)
    scores = ft.map(lambda t, i: ft.sum(t) + ft.sum(xs[i]), ys,
                    ft.arange(ys.length))
    compiled = ft.compile(scores)
    x_data = [np.ones((1, 2)), 2 * np.ones((3, 2))]
    y_data = [np.ones((1, 2)), np.ones((2, 2))]
    np.testing.assert_array_equal(compiled(xs=x_data, ys=y_data), [4.0, 16.0])
    for run in (compiled, lambda **kw: ft.evaluate_numpy(scores, **kw)):
        with pytest.raises(IndexError, match="index 1 is out of range for an "
                           "outer list of 1 elements"):
            run(xs=x_data[:1], ys=y_data)
    longer = x_data + [np.ones((0, 2))]
    np.testing.assert_array_equal(
        ft.evaluate_numpy(scores, xs=longer, ys=y_data), [4.0, 16.0])
    with pytest.raises(ValueError, match="'xs'.* has 3 elements, the mapped "
                       "'ys' has 2: compiled maps read the two lists zipped"):
        compiled(xs=longer, ys=y_data)


def test_rows_at_unsigned_64_bit_indices(xs):
    # (uint64 indices mixed with the int64 extents: loopy typed the read's
    # index as float64, "Non-integral array indices")
    ids = ft.make_jagged_placeholder("ids", (), np.uint64, depth=2)
    out = ft.map(lambda s, i: ft.gather(s, i) + s[i % 2], xs, ids)
    data = [RNG.standard_normal((n, H)) for n in (3, 0, 2)]
    idd = [np.array([2, 0, 1], np.uint64), np.zeros(0, np.uint64),
           np.array([1, 1], np.uint64)]
    want = [s[i.astype(np.int64)] + s[(i % 2).astype(np.int64)]
            for s, i in zip(data, idd)]
    for got in run_both(out, xs=data, ids=idd):
        assert_lists(got, want)
    too_big = [idd[0], idd[1], np.array([1, 2**64 - 1], np.uint64)]
    for run in (ft.compile(out), lambda **a: ft.evaluate_numpy(out, **a)):
        with pytest.raises(IndexError, match="18446744073709551615"):
            run(xs=data, ids=too_big)
    # the same in a scan over the list, with one uint64 index array
    idx = ft.make_placeholder("idx", (2,), np.uint64)
    scan = ft.scan(lambda c, s: c + ft.sum(ft.gather(s, idx), axis=0), xs,
                   ft.zeros(H))
    rows = [RNG.standard_normal((n, H)) for n in (3, 2)]
    iv = np.array([1, 0], np.uint64)
    want = np.cumsum([s[[1, 0]].sum(axis=0) for s in rows], axis=0)
    for got in (ft.compile(scan)(xs=rows, idx=iv),
                ft.evaluate_numpy(scan, xs=rows, idx=iv)):
        np.testing.assert_allclose(got, want, rtol=1e-12)


def test_rows_at_a_position_computed_from_the_length(xs):
    # (s[s.shape[0] // 2], the middle row, was refused when built: "not an
    # affine expression"; a position need not be affine, a length must)
    middle = ft.map(lambda s: s[s.shape[0] // 2] * 2 + ft.sum(s, axis=0), xs)
    before = ft.map(lambda s: ft.scan(lambda c, r: c + r * s[(s.shape[0] - 1) // 2],
                                      s, ft.zeros(H)), xs)
    f = ft.compile(ft.make_dict_of_named_arrays(
        {"middle": middle, "before": before}))
    data = [RNG.standard_normal((k, H)) for k in JAGGED_LENGTHS["nonempty"]]
    got = f(xs=data)
    want = [s[len(s) // 2] * 2 + s.sum(axis=0) for s in data]
    assert_lists(got["middle"], want)
    assert_lists(ft.evaluate_numpy(middle, xs=data), want)
    want = [np.cumsum(s * s[(len(s) - 1) // 2], axis=0) for s in data]
    assert_lists(got["before"].tolist(), want)
    assert_lists(ft.evaluate_numpy(before, xs=data).tolist(), want)
    # (an empty element has no middle row)
    with pytest.raises(IndexError, match="out of"):
        f(xs=data + [np.zeros((0, H))])
