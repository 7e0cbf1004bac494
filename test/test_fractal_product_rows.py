# SPDX-License-Identifier: MIT
"""The rows of ``ft.product(src, trg)`` have the length of ``trg`` at build
time: ``xss[i]`` is ``(Lt, H)`` and ``ft.map`` over the rows gets elements
``(Lt, H)``; values through ``ft.evaluate_numpy`` and ``ft.compile``
against numpy, with empty rows and no rows."""

from __future__ import annotations

import numpy as np
import pytest

import ftlazy as ft
from ftlazy.fractal_access import uniform_length

H = 2
SIZES = [(3, 4), (1, 1), (2, 0), (0, 3)]


@pytest.fixture
def grid():
    ls, lt = ft.make_size_param("Ls"), ft.make_size_param("Lt")
    src = ft.make_placeholder("src", (ls, H), np.float64)
    trg = ft.make_placeholder("trg", (lt, H), np.float64)
    xss, yss = ft.product(src, trg)
    return xss, yss, src.shape[0], trg.shape[0]


def data(ls, lt, seed=0):
    rng = np.random.default_rng(seed)
    return dict(src=rng.standard_normal((ls, H)),
                trg=rng.standard_normal((lt, H)))


def both(result, **inputs):
    return ft.evaluate_numpy(result, **inputs), ft.compile(result)(**inputs)


def test_build_time_shapes(grid):
    xss, yss, ls, lt = grid
    assert uniform_length(xss) == uniform_length(yss) == lt
    assert xss[0].shape == yss[-1].shape == (lt, H)
    assert (2 * xss + 1)[1].shape == (lt, H)
    seen = []

    def cell(xr, yr):
        seen.append((xr.shape, yr.shape))
        return ft.concatenate([xr, yr], axis=1), ft.sum(xr * yr)

    cells, totals = ft.map(cell, xss, yss)
    assert seen == [((lt, H), (lt, H))]
    assert isinstance(cells, ft.Jagged) and uniform_length(cells) == lt
    assert cells[0].shape == (lt, 2 * H)
    assert totals.shape == (ls,)
    x = ft.make_placeholder("x", (3,), np.float64)
    sss, tss = ft.product(x, ft.make_placeholder("y", (4,), np.float64))
    assert sss[2].shape == tss[0].shape == (4,)
    # other FractalTensors: element lengths known at run time only
    xs = ft.make_jagged_placeholder("xs", (H,), np.float64, depth=2)
    assert uniform_length(xs) is None
    assert xs[0].shape[0] != lt


def test_rows_values(grid):
    xss, yss, _, _ = grid
    i = ft.make_placeholder("i", (), np.int64)
    result = ft.make_dict_of_named_arrays(
        {"first": xss[0], "last": yss[-1], "lazy": xss[i] * yss[i]})
    program = ft.compile(result)
    for ls, lt in SIZES:
        if ls == 0:
            continue
        inputs = data(ls, lt)
        src, trg = inputs["src"], inputs["trg"]
        for k in (0, ls - 1, -1):
            want = {"first": np.tile(src[0], (lt, 1)), "last": trg,
                    "lazy": src[k] * trg}
            for got in (program(i=np.int64(k), **inputs),
                        ft.evaluate_numpy(result, i=np.int64(k), **inputs)):
                for key, value in want.items():
                    np.testing.assert_array_equal(got[key], value)
    inputs = data(2, 3)
    with pytest.raises(IndexError, match="out of range"):
        program(i=np.int64(2), **inputs)
    with pytest.raises(IndexError, match="out of range"):
        ft.evaluate_numpy(result, i=np.int64(-3), **inputs)
    with pytest.raises(IndexError, match="out of range"):
        program(i=np.int64(0), **data(0, 3))


def test_map_over_rows(grid):
    xss, yss, _, _ = grid
    w = ft.make_placeholder("w", (H,), np.float64)
    cells, scores = ft.map(
        lambda xr, yr: (ft.tanh(xr * w + yr), ft.sum(xr * yr, axis=1)),
        xss, yss)
    result = ft.make_dict_of_named_arrays({
        "cells": ft.flatten(cells), "scores": ft.flatten(scores),
        "row_sums": ft.map(lambda r: ft.sum(r, axis=0), cells)})
    wv = np.random.default_rng(1).standard_normal(H)
    program = ft.compile(result)
    for ls, lt in SIZES:
        inputs = data(ls, lt, seed=ls)
        src, trg = inputs["src"], inputs["trg"]
        want_cells = np.array([np.tanh(src[i] * wv + trg[j]) for i in range(ls)
                               for j in range(lt)]).reshape(ls * lt, H)
        want_scores = np.array([src[i] @ trg[j] for i in range(ls)
                                for j in range(lt)]).reshape(ls * lt)
        want_sums = want_cells.reshape(ls, lt, H).sum(axis=1)
        for got in (program(w=wv, **inputs),
                    ft.evaluate_numpy(result, w=wv, **inputs)):
            np.testing.assert_allclose(got["cells"], want_cells, rtol=1e-12)
            np.testing.assert_allclose(got["scores"], want_scores, rtol=1e-12)
            np.testing.assert_allclose(got["row_sums"], want_sums, rtol=1e-12,
                                       atol=1e-12)


def test_rows_read_in_a_scan_body(grid):
    """The grid RNN's access: row ``i`` of the product in step ``i`` of a
    scan over the source positions."""
    xss, yss, ls, _ = grid
    result = ft.scan(lambda c, i: ft.tanh(c + ft.sum(xss[i] * yss[i], axis=0)),
                     ft.arange(ls), ft.zeros(H))
    program = ft.compile(result)
    for ls_v, lt_v in SIZES:
        inputs = data(ls_v, lt_v, seed=2)
        c, want = np.zeros(H), []
        for x in inputs["src"]:
            c = np.tanh(c + (x * inputs["trg"]).sum(axis=0))
            want.append(c)
        want = np.array(want).reshape(ls_v, H)
        for got in (program(**inputs), ft.evaluate_numpy(result, **inputs)):
            np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
