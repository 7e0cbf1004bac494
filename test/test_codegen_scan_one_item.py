# SPDX-License-Identifier: MIT
"""Whole-group scans (coupled rows: one sequence's RNN, a step reading the
whole sequence, scans nested in scans) that one work item runs on CPUs:
the plan's choice, and values against numpy loops for short, empty and
one-step sequences, bundles of carries and products of one row or many."""

import numpy as np
import pytest

import ftlazy as ft
from ftlazy.target.loopy.profile import synthetic_profile

TOL = dict(rtol=1e-10, atol=1e-12)
rng = np.random.default_rng(11)


def _programs(H: int) -> ft.DictOfNamedArrays:
    """Coupled-row scans over one sequence ``xs`` of rows of width *H*."""
    t = ft.make_size_param("t")
    xs = ft.make_placeholder("xs", (t, H), np.float64)
    U = ft.make_placeholder("U", (H, H), np.float64)
    h0 = ft.make_placeholder("h0", (H,), np.float64)
    m0 = ft.make_placeholder("m0", (3, H), np.float64)

    def lstm_like(carry, x):
        h, c, s = carry
        g = ft.tanh(x + h @ U)
        c = c * 0.5 + g * x
        return g, c, s + ft.sum(c)

    hs, cs, ss = ft.scan(lstm_like, xs, (h0, h0 * 2.0, ft.zeros(())))
    return ft.make_dict_of_named_arrays({
        "fold": ft.fold(lambda h, x: ft.tanh(x + h @ U), xs, h0),
        "hs": hs, "cs": cs, "ss": ss,
        # three rows coupled by their column sums, a product of many rows
        "rows": ft.fold(lambda m, x: ft.tanh(m @ U + ft.sum(m, axis=0) * 0.1
                                             + x), xs, m0),
        # each step reads the whole sequence: products over all its rows
        "attend": ft.fold(lambda h, x: ft.tanh(x + (xs @ h) @ xs * 0.1), xs,
                          h0)})


def _numpy(xs, U, h0, m0):
    h, c, s = h0, h0 * 2.0, 0.0
    hs, cs, ss = [], [], []
    for x in xs:
        h = np.tanh(x + h @ U)
        c = c * 0.5 + h * x
        s = s + c.sum()
        hs.append(h), cs.append(c), ss.append(s)
    fold, rows, attend = h0, m0, h0
    for x in xs:
        fold = np.tanh(x + fold @ U)
        rows = np.tanh(rows @ U + rows.sum(axis=0) * 0.1 + x)
        attend = np.tanh(x + (xs @ attend) @ xs * 0.1)
    H = len(h0)
    return {"fold": fold, "hs": np.array(hs).reshape(-1, H),
            "cs": np.array(cs).reshape(-1, H), "ss": np.array(ss),
            "rows": rows, "attend": attend}


@pytest.mark.parametrize("H", [1, 3, 33])
def test_coupled_scans_match_numpy(H):
    d = _programs(H)
    f = ft.compile(d)
    scan_plans = list(f.plan.scans.values())
    cpu = f.plan.profile.kind == "cpu"
    assert len(scan_plans) == 4
    assert all(p.flavour == "whole_group" and p.single_item_groups == cpu
               for p in scan_plans)
    products = sorted(p.block[0] for p in f.plan.arrays.values()
                      if p.strategy == "one_item_product")
    # one row per vector product (h @ U twice, m's column sums, ... @ xs),
    # three for m @ U; GPUs spread a step's columns over the group's work
    # items instead
    assert products == ([1, 1, 1, 1, 3] if cpu else [])
    for T in (0, 1, 7):
        inputs = dict(xs=rng.standard_normal((T, H)),
                      U=rng.standard_normal((H, H)) / np.sqrt(H),
                      h0=rng.standard_normal(H), m0=rng.standard_normal((3, H)))
        want = _numpy(**inputs)
        for got in (f(**inputs), ft.evaluate_numpy(d, **inputs)):
            for name, expected in want.items():
                assert got[name].shape == expected.shape, (name, T)
                assert got[name].dtype == np.float64, (name, T)
                np.testing.assert_allclose(got[name], expected,
                                           err_msg=f"{name}, T={T}", **TOL)


def test_nested_scans_run_in_one_work_item_on_cpus():
    """Every scan of a nest runs in the one work item of the outermost on
    CPUs (no barriers), in one work group on GPUs."""
    xs = ft.make_placeholder("xs", (4, 5, 6), np.float64)
    inner = lambda h, seq: ft.fold(lambda g, x: ft.tanh(g + x + h), seq, h)
    nest = ft.fold(inner, xs, ft.zeros((6,)))
    for kind in ("cpu", "gpu"):
        prg = ft.generate_loopy(nest, profile=synthetic_profile(kind, 1))
        plans = list(prg.plan.scans.values())
        assert len(plans) == 2
        assert all(p.flavour == "whole_group"
                   and p.single_item_groups == (kind == "cpu") for p in plans)
        assert ("barrier(CLK" in prg.source) == (kind == "gpu")
