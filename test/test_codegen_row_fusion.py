# SPDX-License-Identifier: MIT
"""Row fusion (CPU plans): a reduction over each row of a dense array and
the arrays that read it at their own row run in ONE kernel, one work item
per row (:mod:`ftlazy.target.loopy.row_fusion`); GPU plans keep separate
kernels. Values against numpy for symbolic row counts (0, 1 and several
rows), in every code generation flavour; the CPU plans show the group."""

from __future__ import annotations

import numpy as np
import pytest

import ftlazy as ft
from ftlazy.target.loopy import row_fusion

RNG = np.random.default_rng(11)
C = 37  # (not a multiple of the vector width or the reduction lanes)


def _softmax(x):
    e = ft.exp(x - ft.amax(x, axis=-1, keepdims=True))
    return e / ft.sum(e, axis=-1, keepdims=True)


def _softmax_np(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def _layernorm(x):
    d = x - ft.mean(x, axis=-1, keepdims=True)
    return d / ft.sqrt(ft.mean(d * d, axis=-1, keepdims=True) + 1e-5)


def _layernorm_np(x):
    d = x - x.mean(axis=-1, keepdims=True)
    return d / np.sqrt((d * d).mean(axis=-1, keepdims=True) + 1e-5)


CASES = {
    # (exp(x - max) stays stored: recomputing a call costs more than its
    # pass saves)
    "softmax": (_softmax, _softmax_np, 4),
    "layernorm": (_layernorm, _layernorm_np, 4),
    "normalize": (lambda x: x / ft.sum(x, axis=1, keepdims=True),
                  lambda x: x / x.sum(axis=1, keepdims=True), 2),
    # a reduction without keepdims, read broadcast along the row
    "centered_norms": (
        lambda x: ft.sum(ft.abs(x - ft.mean(x, axis=1)[:, None]), axis=1),
        lambda x: np.abs(x - x.mean(axis=1)[:, None]).sum(axis=1), 2),
}


def _fused_members(f):
    """The members of the compiled program's row groups."""
    return [len(g.members) for g in f.plan.row_groups]


@pytest.mark.parametrize("case", sorted(CASES))
def test_row_reductions_and_their_readers_share_a_kernel(case):
    build, reference, members = CASES[case]
    n = ft.make_size_param("n")
    x = ft.make_placeholder("x", (n, C), np.float64)
    f = ft.compile(build(x))
    if f.plan.profile.kind == "cpu":
        assert _fused_members(f) == [members], f.plan
        assert "one work item per row" in str(f.plan)
    else:
        assert f.plan.row_groups == []
    for rows in (0, 1, 6):
        xv = RNG.standard_normal((rows, C))
        np.testing.assert_allclose(f(x=xv), reference(xv), rtol=1e-12, atol=1e-12)


def test_members_share_one_pair_of_hardware_inames():
    # (each member had its own: loopy's code generation reasons over all of
    # a launch's hardware inames at once, and a chain of six normalizations
    # of rows of symbolic width took 17 s to compile, eight 31 s)
    from loopy.kernel.data import HardwareConcurrentTag
    m, n = ft.make_size_param("m"), ft.make_size_param("n")
    x = ft.make_placeholder("x", (m, n), np.float64)
    y = x
    for _ in range(3):
        e = ft.exp(y)
        y = e / ft.sum(e, axis=1)[:, None]
    f = ft.compile(y)
    knl = f.program.program.default_entrypoint
    hardware = [i for i in knl.all_inames()
                if knl.iname_tags_of_type(i, HardwareConcurrentTag)]
    if f.plan.profile.kind == "cpu":
        assert _fused_members(f) and len(hardware) == 2, hardware
    for rows, cols in ((3, 300), (1, 1), (0, 5), (4, 0)):
        xv = RNG.standard_normal((rows, cols))
        want = xv
        for _ in range(3):
            want = np.exp(want) / np.exp(want).sum(axis=1)[:, None]
        with np.errstate(invalid="ignore"):
            np.testing.assert_allclose(f(x=xv), want, rtol=1e-12, atol=1e-12)


def test_three_axes_reduce_their_last_axis_per_first_axis_row():
    b, t = (ft.make_size_param(s) for s in "bt")
    x = ft.make_placeholder("x", (b, t, C), np.float32)
    f = ft.compile(_softmax(x))
    if f.plan.profile.kind == "cpu":
        assert _fused_members(f) == [4]
    for shape in [(2, 3, C), (0, 2, C), (3, 0, C), (1, 1, C)]:
        xv = RNG.standard_normal(shape).astype(np.float32)
        np.testing.assert_allclose(f(x=xv), _softmax_np(xv), rtol=1e-5, atol=1e-6)


def test_readers_at_other_rows_are_not_fused():
    n = ft.make_size_param("n")
    x = ft.make_placeholder("x", (n, C), np.float64)
    s = ft.sum(x, axis=1, keepdims=True)
    reversed_rows = x / s[::-1]  # row i reads the sum of row n-1-i
    columns = x - ft.mean(x, axis=0)  # a reduction over rows
    f = ft.compile(ft.make_dict_of_named_arrays(
        {"reversed": reversed_rows, "columns": columns}))
    # (the column sums' partial sums over blocks of rows are rows of their
    # own, which may fuse; no (n, C) array joins a group)
    assert not [m for g in f.plan.row_groups for m in g.members
                if m.ndim == 2 and m.shape[-1] == C]
    xv = RNG.standard_normal((5, C))
    out = f(x=xv)
    np.testing.assert_allclose(out["reversed"],
                               xv / xv.sum(axis=1, keepdims=True)[::-1])
    np.testing.assert_allclose(out["columns"], xv - xv.mean(axis=0))


def test_results_and_shared_arrays_stay_stored():
    n = ft.make_size_param("n")
    x = ft.make_placeholder("x", (n, C), np.float64)
    d = x - ft.mean(x, axis=1, keepdims=True)
    var = ft.mean(d * d, axis=1)
    f = ft.compile(ft.make_dict_of_named_arrays({"d": d, "var": var}))
    if f.plan.profile.kind == "cpu":
        (group,) = f.plan.row_groups
        assert group.recomputed == [] and len(group.members) == 3
    xv = RNG.standard_normal((4, C))
    out = f(x=xv)
    dv = xv - xv.mean(axis=1, keepdims=True)
    np.testing.assert_allclose(out["d"], dv, atol=1e-14)
    np.testing.assert_allclose(out["var"], (dv * dv).mean(axis=1), rtol=1e-12)


def test_a_member_read_at_another_row_falls_back_to_separate_kernels(
        monkeypatch):
    # the emitted code is checked too: where the plan's row check is wrong,
    # the kernel is built without fusion instead of reading rows another
    # work item has not written yet
    monkeypatch.setattr(row_fusion, "_reads_own_rows", lambda *args: True)
    n = ft.make_size_param("n")
    x = ft.make_placeholder("x", (n, C), np.float64)
    y = x / ft.sum(x, axis=1, keepdims=True)[::-1]
    f = ft.compile(y)
    assert f.plan.row_groups == []
    xv = RNG.standard_normal((7, C))
    np.testing.assert_allclose(f(x=xv), xv / xv.sum(axis=1, keepdims=True)[::-1])
