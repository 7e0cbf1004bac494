# SPDX-License-Identifier: MIT
"""Per-segment fusion of maps over FractalTensors (CPU plans): the segment
reductions and packed row arrays of one element structure run in ONE kernel,
one work item per element (:mod:`ftlazy.target.loopy.segment_fusion`);
GPU plans keep separate kernels. Values against per-element numpy loops
through ft.evaluate_numpy and ft.compile (one compiled program for every
length distribution: empty elements, an empty batch, all-empty, length 1);
the plan shows the group. Also ``amax``/``amin`` with ``initial=``
(a reduction from the identity, then the initial value) inside and outside
maps, int and float, over empty and non-empty axes."""

from __future__ import annotations

import numpy as np
import pymbolic.primitives as prim
import pytest

import ftlazy as ft
from ftlazy import shapes as sh
from ftlazy.scalar_expr import Reduce
from ftlazy.target.loopy.profile import as_options
from ftlazy.target.loopy.ranges import tighten_to_guards
from test_codegen_segment_lookups import softmax_numpy

H = 8
LENGTHS = [(3, 0, 2, 40, 1, 0), (1,), (), (0, 0, 0), (5, 1, 1, 2)]


def batch(lengths, seed, dtype=np.float64):
    rng = np.random.default_rng(seed)
    if np.dtype(dtype).kind == "i":
        return [rng.integers(-50, 50, (n, H)).astype(dtype) for n in lengths]
    return [rng.standard_normal((n, H)).astype(dtype) for n in lengths]


# {{{ bodies and their numpy references

def softmax(s):
    e = ft.exp(s - ft.amax(s, axis=0, initial=-np.inf))
    return e / ft.sum(e, axis=0)


def log_softmax(s):
    # rows normalised by their element's logsumexp
    m = ft.amax(s, axis=0, initial=-np.inf)
    return s - (m + ft.log(ft.sum(ft.exp(s - m), axis=0)))


def log_softmax_numpy(s):
    if not len(s):
        return s
    m = s.max(axis=0)
    return s - (m + np.log(np.exp(s - m).sum(axis=0)))


def centered(s):
    return s - ft.sum(s, axis=0) / ft.maximum(s.shape[0], 1)


def centered_numpy(s):
    return s - s.sum(axis=0) / max(len(s), 1)


def normalised_and_centered(s):
    return ft.stack([log_softmax(s), centered(s)], axis=1)


def normalised_and_centered_numpy(s):
    return np.stack([log_softmax_numpy(s), centered_numpy(s)], axis=1)


def chained(s):
    # stored row arrays (t, w: costly, read twice) where w reads only t, at
    # its own rows: the same layout, computed per element too
    m = ft.amax(s, axis=0, initial=-np.inf)
    t = ft.exp(s - m) * ft.tanh(s - m) + ft.sin(s - m) * ft.cos(s - m)
    w = ft.exp(t) * ft.tanh(t) + ft.sin(t) * ft.cos(t)
    return ft.stack([w / (ft.sum(w, axis=0) + 1.0),
                     t / (ft.sum(t, axis=0) + 2.0), w * t], axis=1)


def chained_numpy(s):
    m = s.max(axis=0) if len(s) else 0.0
    t = np.exp(s - m) * np.tanh(s - m) + np.sin(s - m) * np.cos(s - m)
    w = np.exp(t) * np.tanh(t) + np.sin(t) * np.cos(t)
    return np.stack([w / (w.sum(axis=0) + 1.0), t / (t.sum(axis=0) + 2.0),
                     w * t], axis=1)


def scaled_range(s):
    # two reductions of the element, an elementwise consumer of both
    lo = ft.amin(s, axis=0, initial=0.0)
    hi = ft.amax(s, axis=0, initial=0.0)
    return (s - lo) / (hi - lo + 1.0)


def scaled_range_numpy(s):
    lo = np.amin(s, axis=0, initial=0.0)
    hi = np.amax(s, axis=0, initial=0.0)
    return (s - lo) / (hi - lo + 1.0)

# }}}


def check_packed(got, data, reference, rtol=1e-12):
    """*got* (a FractalTensor result) against *reference* of each element."""
    assert len(got) == len(data)
    for g, s in zip(got.tolist(), data):
        np.testing.assert_allclose(g, reference(s), rtol=rtol, atol=1e-12)


@pytest.mark.parametrize("body, reference, dtype", [
    (softmax, softmax_numpy, np.float32),
    (normalised_and_centered, normalised_and_centered_numpy, np.float64),
    (scaled_range, scaled_range_numpy, np.float64),
    (chained, chained_numpy, np.float64)],
    ids=["softmax", "normalised_and_centered", "scaled_range", "chained"])
def test_fused_bodies_against_numpy_loops(body, reference, dtype):
    xs = ft.make_jagged_placeholder("xs", (H,), dtype, depth=2)
    result = ft.map(body, xs)
    f = ft.compile(result)  # one program for every length distribution
    rtol = 2e-6 if dtype == np.float32 else 1e-12
    for seed, lengths in enumerate(LENGTHS):
        data = batch(lengths, seed, dtype)
        check_packed(f(xs=data), data, reference, rtol)
        check_packed(ft.evaluate_numpy(result, xs=data), data, reference, rtol)
    plan = f.plan
    if plan.profile.kind == "cpu":
        (group,) = plan.segment_groups
        strategies = plan.strategies()
        assert "segment_rows" in strategies.values(), str(plan)
        assert "segment_reduction" in strategies.values(), str(plan)
        assert "fused: one work item per element" in str(plan)
        # one kernel: no global barrier, no segment id lookups left
        assert f.source.count("__kernel") == 1, f.source
        assert "_ft_seg" not in f.source
        # ... so the host does not derive them at each call
        assert f.underived == set(f.lowering.host.segment_ids) != set()
        if body is softmax:
            # exp(s - m) is read by the sum and by the quotient: both
            # recompute it (the max, the sum and the output are stored)
            assert group.recomputed and "recomputed" in str(plan)
            assert len(plan.arrays) == 3, str(plan)
    else:
        assert not plan.segment_groups
        assert "segment_rows" not in plan.strategies().values()


def test_reads_across_elements_are_not_fused():
    # the second maps read the first map's results of other elements (their
    # sum over elements; the results in reverse order, mapped along): no
    # per-element kernel can compute them, so the plans fall back to
    # separate kernels, with right values (GPU plans fuse nothing)
    if as_options(None).device_kind == "gpu":
        pytest.skip("GPU plans do not fuse")
    xs = ft.make_jagged_placeholder("xs", (H,), np.float64, depth=2)
    sums = ft.map(lambda s: ft.sum(s, axis=0), xs)
    total = ft.map(lambda s: s - ft.sum(sums, axis=0), xs)
    reverse = ft.map(lambda s, t: s * t, xs, sums[::-1])
    f_total, f_reverse = ft.compile(total), ft.compile(reverse)
    for seed, lengths in enumerate([(3, 0, 2), (1,), ()]):
        data = batch(lengths, seed)
        all_sum = sum(s.sum(axis=0) for s in data)
        check_packed(f_total(xs=data), data, lambda s: s - all_sum)
        want = [s * data[-1 - i].sum(axis=0) for i, s in enumerate(data)]
        check_packed(f_reverse(xs=data), want, lambda w: w)
    for f in (f_total, f_reverse):
        assert not f.plan.segment_groups, str(f.plan)


# {{{ amax/amin with initial=

@pytest.mark.parametrize("dtype", [np.int32, np.float32])
def test_extrema_with_initial_in_maps(dtype):
    xs = ft.make_jagged_placeholder("xs", (H,), dtype, depth=2)
    lo, hi = (-7, 7) if np.dtype(dtype).kind == "i" else (-0.5, 0.5)
    ident = (np.iinfo(dtype).min if np.dtype(dtype).kind == "i" else -np.inf)
    result = ft.map(lambda s: ft.stack([
        ft.amax(s, axis=0, initial=hi), ft.amin(s, axis=0, initial=lo),
        ft.amax(s, axis=0, initial=ident)]), xs)
    f = ft.compile(result)
    for seed, lengths in enumerate(LENGTHS):
        data = batch(lengths, seed, dtype)
        want = np.array([np.stack([np.amax(s, axis=0, initial=hi),
                                   np.amin(s, axis=0, initial=lo),
                                   np.amax(s, axis=0, initial=ident)])
                         for s in data]).reshape(-1, 3, H)
        for got in (f(xs=data), ft.evaluate_numpy(result, xs=data)):
            np.testing.assert_array_equal(np.asarray(got).reshape(-1, 3, H),
                                          want)


def test_extrema_with_initial_of_ints_over_a_symbolic_axis():
    n = ft.make_size_param("n")
    x = ft.make_placeholder("a", (n, 3), np.int64)
    lazy = {"max": ft.amax(x, axis=0, initial=-4),
            "min": ft.amin(x, initial=9),
            "max_keep": ft.amax(x, axis=1, keepdims=True, initial=0)}
    f = ft.compile(ft.DictOfNamedArrays(lazy))
    rng = np.random.default_rng(5)
    for rows in (0, 1, 6):
        a = rng.integers(-10, 10, (rows, 3))
        want = {"max": np.amax(a, axis=0, initial=-4),
                "min": np.amin(a, initial=9),
                "max_keep": np.amax(a, axis=1, keepdims=True, initial=0)}
        got = f(a=a)
        for key, value in want.items():
            np.testing.assert_array_equal(np.asarray(got[key]), value)
            np.testing.assert_array_equal(
                np.asarray(ft.evaluate_numpy(lazy[key], a=a)), value)


def test_initial_reduces_from_the_identity():
    # no concatenated row: a reduction over the axis (one step more, which
    # contributes the identity, only where the axis may be empty), then the
    # initial value unless it is the identity itself
    n = ft.make_size_param("n")
    x = ft.make_placeholder("a", (n, 4), np.float32)
    m = ft.amax(x, axis=0, initial=-np.inf)
    assert isinstance(m.expr, Reduce) and m.expr.op == "max"
    (_, _, steps), = m.expr.bounds
    assert sh.prove_equal(steps, sh.add(x.shape[0], 1))
    y = ft.make_placeholder("b", (5, 4), np.float32)
    m = ft.amin(y, axis=0, initial=np.inf)
    assert isinstance(m.expr, Reduce) and m.expr.bounds == (("_r0", 0, 5),)
    assert not isinstance(ft.amin(y, axis=0, initial=2.0).expr, Reduce)
    # code generation runs the reduction to n: the extra step's guard
    # (r < n) becomes the loop's bound, no select on each step
    tight = tighten_to_guards(ft.amax(x, axis=0, initial=-np.inf).expr)
    assert tight.bounds == (("_r0", 0, x.shape[0]),)
    assert not isinstance(tight.inner, prim.If)
    # a guard that is not below the bound, or reads arrays, stays
    r = prim.Variable("_r0")
    loose = Reduce("max", prim.If(prim.Comparison(r, "<", x.shape[0] + 2),
                                  r, -np.inf), (("_r0", 0, x.shape[0]),))
    assert tighten_to_guards(loose) is loose
    # a statically empty axis: the initial value
    z = ft.make_placeholder("c", (0, 4), np.int64)
    got = np.asarray(ft.evaluate_numpy(ft.amax(z, axis=0, initial=3)))
    want = np.amax(np.zeros((0, 4), np.int64), axis=0, initial=3)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)

# }}}


def test_negative_extents_raise_where_no_kernel_reads_segment_ids():
    # rows s[1:] of an empty element: -1 of them; the fused CPU plan finds
    # rows from the offsets (its segment ids are not derived), and the call
    # still refuses the element before anything runs
    xs = ft.make_jagged_placeholder("xs", (H,), np.float64, depth=2)
    result = ft.map(lambda s: softmax(s[1:]), xs)
    f = ft.compile(result)
    data = batch((3, 0), 0)
    for run in (f, lambda **a: ft.evaluate_numpy(result, **a)):
        with pytest.raises(ValueError, match="element 1"):
            run(xs=data)
    check_packed(f(xs=batch((3, 1), 1)), [s[1:] for s in batch((3, 1), 1)],
                 lambda s: softmax_numpy(s))
