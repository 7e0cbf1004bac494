# SPDX-License-Identifier: MIT
"""Kernels whose launches have many unrelated symbolic grid sizes: loopy's
barrier step gets the kernel's hardware axes alone
(:mod:`ftlazy.target.loopy.grid_axes`), not the maximum of all its
lengths, which isl built in time exponential in their number (eight
outputs of eight symbolic lengths: 13 s; nine: 90 s; blocked sums over
four vectors: over ten minutes)."""

from __future__ import annotations

import loopy as lp
import numpy as np
import pytest

import ftlazy as ft
from ftlazy.target.loopy.grid_axes import hardware_axes


@pytest.fixture
def no_whole_kernel_grid(monkeypatch):
    """Fail where loopy computes the grid of all of a kernel's
    instructions for its dict of axes (the exponential step); loopy's
    caches are off, so that the kernels are scheduled here."""
    monkeypatch.setattr(lp, "CACHING_ENABLED", False)
    real = lp.LoopKernel.get_grid_size_upper_bounds

    def refuse(self, callables_table, ignore_auto=False, return_dict=False):
        if return_dict:
            raise AssertionError("the whole kernel's grid was computed")
        return real(self, callables_table, ignore_auto=ignore_auto,
                    return_dict=return_dict)

    monkeypatch.setattr(lp.LoopKernel, "get_grid_size_upper_bounds", refuse)


def test_sums_over_vectors_of_unrelated_lengths(no_whole_kernel_grid):
    count = 4
    xs = [ft.make_placeholder(f"x{i}", (ft.make_size_param(f"n{i}"),),
                              np.float64) for i in range(count)]
    result = ft.make_dict_of_named_arrays(
        {**{f"s{i}": ft.sum(x[1:]) for i, x in enumerate(xs)},
         **{f"e{i}": ft.exp(x) * 2 for i, x in enumerate(xs)},
         "total": sum(ft.sum(x[:-1]) for x in xs)})
    program = ft.compile(result)
    rng = np.random.default_rng(0)
    for lengths in ((300, 5, 1, 20000), (1, 1, 1, 1), (7, 129, 4000, 2)):
        data = {f"x{i}": rng.standard_normal(n) for i, n in enumerate(lengths)}
        got = program(**data)
        for i, n in enumerate(lengths):
            x = data[f"x{i}"]
            np.testing.assert_allclose(got[f"s{i}"], x[1:].sum(), rtol=1e-12,
                                       atol=1e-12)
            np.testing.assert_allclose(got[f"e{i}"], np.exp(x) * 2, rtol=1e-14)
        np.testing.assert_allclose(
            got["total"], sum(x[:-1].sum() for x in data.values()),
            rtol=1e-12, atol=1e-12)


def test_several_views_of_a_fractal_tensor_with_its_pools(no_whole_kernel_grid):
    # (scheduled for 20 s with the whole kernel's grid)
    h = 3
    xs = ft.make_jagged_placeholder("xs", (h,), np.float64, depth=2)
    w = ft.make_placeholder("w", (h, h), np.float64)
    result = ft.make_dict_of_named_arrays({
        "hidden": ft.tanh(xs @ w),
        "pooled": ft.map(lambda s: ft.sum(s, axis=0), xs),
        "total": ft.sum(ft.flatten(xs), axis=0),
        "rev": xs[::-1], "tail": xs[1:], "head": xs[:-1]})
    rng = np.random.default_rng(1)
    seqs = [rng.standard_normal((n, h)) for n in (3, 0, 1, 5)]
    weights = rng.standard_normal((h, h))
    got = ft.compile(result)(xs=seqs, w=weights)
    want = ft.evaluate_numpy(result, xs=seqs, w=weights)
    np.testing.assert_allclose(got["pooled"], [s.sum(axis=0) for s in seqs],
                               atol=1e-12)
    np.testing.assert_allclose(got["total"], np.concatenate(seqs).sum(axis=0))
    for name in ("hidden", "rev", "tail", "head"):
        assert got[name].equals(want[name]) or all(
            np.allclose(a, b) for a, b in zip(got[name].tolist(),
                                              want[name].tolist()))
    assert [len(s) for s in got["rev"].tolist()] == [5, 1, 0, 3]


def _kernel(tags):
    knl = lp.make_kernel(
        "{ [i, j, k]: 0 <= i < n and 0 <= j < m and 0 <= k < 4 }",
        """
        a[i] = 1.0
        b[j, k] = 2.0
        """, [lp.GlobalArg("a", np.float64, shape=("n",)),
              lp.GlobalArg("b", np.float64, shape=("m", 4)), ...],
        lang_version=(2018, 2))
    return lp.tag_inames(knl, tags)


def test_hardware_axes_of_a_kernel():
    knl = _kernel({"i": "g.0", "j": "g.1", "k": "l.0"})
    entry = knl.default_entrypoint
    assert hardware_axes(entry, knl.callables_table) == (
        {0: None, 1: None}, {0: None})
    # the axes loopy's own grid has (its sizes aside)
    gsize, lsize = entry.get_grid_size_upper_bounds(knl.callables_table,
                                                    return_dict=True)
    assert (set(gsize), set(lsize)) == ({0, 1}, {0})
    auto = _kernel({"i": "g.0", "k": "l.auto"})
    assert hardware_axes(auto.default_entrypoint, auto.callables_table) is None
