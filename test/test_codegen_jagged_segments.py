# SPDX-License-Identifier: MIT
"""Reductions over the rows of a FractalTensor's elements run over each
element's own rows (data-dependent bounds, :mod:`ftlazy.target.loopy.ranges`)
on every profile flavour (see conftest.py): the plan's segment_reduction
strategy and the generic ranged loop nest, against per-element numpy loops,
with empty elements, empty and all-empty batches, and max/min refusing
empty elements."""

from __future__ import annotations

import numpy as np
import pymbolic.primitives as prim
import pytest

import ftlazy as ft
from ftlazy.array import Placeholder
from ftlazy.scalar_expr import Reduce
from ftlazy.target.loopy.ranges import data_dependent_range, is_neutral

H = 16
LENGTHS = {
    "mixed": (3, 0, 2, 300, 1, 0, 129),
    "nonempty": (3, 2, 300, 1, 129),
    "empty_batch": (),
    "all_empty": (0, 0, 0),
}


def batch(lengths, seed=0, dtype=np.float64, h=H):
    rng = np.random.default_rng(seed)
    if np.dtype(dtype).kind in "iu":
        return [rng.integers(-50, 50, (n, h)).astype(dtype) for n in lengths]
    return [rng.standard_normal((n, h)).astype(dtype) for n in lengths]


def placeholder(dtype=np.float64, h=H):
    return ft.make_jagged_placeholder("xs", (h,), dtype, depth=2)


def lse(s):
    m = ft.amax(s, axis=0)
    return m + ft.log(ft.sum(ft.exp(s - m), axis=0))


def lse_numpy(s):
    m = s.max(axis=0)
    return m + np.log(np.exp(s - m).sum(axis=0))


def ragged_softmax(s):
    # the max over the element and one -inf row: defined for empty ones
    m = ft.amax(ft.concatenate([s, np.full((1, H), -np.inf)]), axis=0)
    e = ft.exp(s - m)
    return e / ft.sum(e, axis=0)


def ragged_softmax_numpy(s):
    e = np.exp(s - s.max(axis=0)) if len(s) else s
    return e / e.sum(axis=0) if len(s) else s


REDUCTIONS = {
    "sum": (lambda s: ft.sum(s, axis=0), lambda s: s.sum(axis=0), False),
    "prod": (lambda s: ft.prod(s * 0.5 + 1, axis=0),
             lambda s: (s * 0.5 + 1).prod(axis=0), False),
    "max": (lambda s: ft.amax(s, axis=0), lambda s: s.max(axis=0), True),
    "min_abs": (lambda s: ft.amin(abs(s), axis=0), lambda s: abs(s).min(axis=0),
                True),
    "logsumexp": (lse, lse_numpy, True),
    "sum_of_exp_shifted": (lambda s: ft.sum(ft.exp(s[1:] - s[:-1]), axis=0),
                           lambda s: np.exp(s[1:] - s[:-1]).sum(axis=0), True),
}


def segment_strategies(f):
    return [s for s in f.plan.strategies().values() if s == "segment_reduction"]


@pytest.mark.parametrize("name", list(REDUCTIONS))
@pytest.mark.parametrize("lengths", list(LENGTHS))
def test_segment_reductions_against_numpy(name, lengths):
    body, reference, nonempty = REDUCTIONS[name]
    if nonempty and lengths in ("mixed", "all_empty"):
        pytest.skip("max/min need non-empty elements (refusal tested below)")
    data = batch(LENGTHS[lengths])
    f = ft.compile(ft.map(body, placeholder()))
    assert segment_strategies(f), str(f.plan)
    assert "split_reduction" not in f.plan.strategies().values()
    got = f(xs=data)
    want = np.array([reference(s) for s in data]).reshape((len(data), H))
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("lengths", list(LENGTHS))
def test_ragged_softmax_with_empty_elements(lengths):
    data = batch(LENGTHS[lengths])
    f = ft.compile(ft.map(ragged_softmax, placeholder()))
    assert segment_strategies(f), str(f.plan)
    got = f(xs=data)
    assert len(got) == len(data)
    for g, s in zip(got.tolist(), data):
        np.testing.assert_allclose(g, ragged_softmax_numpy(s), rtol=1e-12,
                                   atol=1e-12)


@pytest.mark.parametrize("dtype", [np.int64, np.int32, np.float32])
@pytest.mark.parametrize("op", ["sum", "max", "min"])
def test_segment_reductions_of_other_dtypes(dtype, op):
    data = batch(LENGTHS["nonempty"], seed=3, dtype=dtype)
    fn = {"sum": ft.sum, "max": ft.amax, "min": ft.amin}[op]
    f = ft.compile(ft.map(lambda s: fn(s, axis=0), placeholder(dtype)))
    assert segment_strategies(f), str(f.plan)
    got = f(xs=data)
    want = np.array([getattr(s, op)(axis=0) for s in data])
    assert got.dtype == want.dtype
    if np.dtype(dtype).kind == "f":
        np.testing.assert_allclose(got, want, rtol=1e-5)
    else:
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("h", [3, 64, 300])
@pytest.mark.parametrize("dtype", [np.float64, np.int32])
def test_gpu_segment_reductions_share_rows_among_lanes(h, dtype):
    """GPU plans share an element's rows among lanes of work items on l.1
    (as many as fill the group beside the columns on l.0), combined in
    local memory; every lane count against numpy, with elements shorter
    than the lanes, empty elements (sums), NaN (maxima) and columns that
    leave room for one lane only."""
    lengths = (3, 0, 2, 300, 1, 0, 129, 7, 8, 9)
    data = batch(lengths, seed=4, dtype=dtype, h=h)
    if dtype == np.float64:
        data[3][17, h // 2] = np.nan
    xs = placeholder(dtype, h)
    f = ft.compile(ft.make_dict_of_named_arrays({
        "sum": ft.map(lambda s: ft.sum(s, axis=0), xs),
        "max": ft.map(lambda s: ft.amax(s, axis=0, initial=-1000), xs),
        "min_of_the_head": ft.map(
            lambda s: ft.amin(s[:5] * 2, axis=0, initial=1000), xs)}),
        options={"device_kind": "gpu"})
    lanes = min(8, 256 // min(256, h))
    blocks = {p.block for p in f.plan.arrays.values()
              if p.strategy == "segment_reduction"}
    assert blocks == ({(lanes,)} if lanes > 1 else {()}), str(f.plan)
    got = f(xs=data)
    np.testing.assert_allclose(got["sum"], [s.sum(axis=0) for s in data],
                               rtol=1e-12)
    np.testing.assert_array_equal(
        got["max"], [np.max(s, axis=0, initial=-1000) for s in data])
    np.testing.assert_array_equal(
        got["min_of_the_head"],
        [np.min(s[:5] * 2, axis=0, initial=1000) for s in data])


@pytest.mark.parametrize("op", ["max", "min"])
def test_max_and_min_refuse_empty_elements(op):
    fn = ft.amax if op == "max" else ft.amin
    f = ft.compile(ft.map(lambda s: fn(s, axis=0), placeholder()))
    name = "maximum" if op == "max" else "minimum"
    with pytest.raises(ValueError, match=f"element 1: zero-size array to "
                       f"reduction operation {name}"):
        f(xs=batch(LENGTHS["mixed"]))
    with pytest.raises(ValueError, match=f"element 0: zero-size array to "
                       f"reduction operation {name}"):
        f(xs=batch(LENGTHS["all_empty"]))
    # an empty batch has no element to refuse
    assert f(xs=batch(())).shape == (0, H)


def test_max_propagates_nan():
    data = batch((4, 3, 2))
    data[1][1, 5] = np.nan
    f = ft.compile(ft.map(lambda s: ft.amax(s, axis=0), placeholder()))
    got = f(xs=data)
    assert np.isnan(got[1, 5])
    assert not np.isnan(np.delete(got.reshape(-1), 1 * H + 5)).any()
    np.testing.assert_array_equal(got, np.array([s.max(axis=0) for s in data]))


def test_embedding_bag_runs_over_each_bag():
    tokens = ft.make_jagged_placeholder("tokens", (), np.int64, depth=2)
    table = ft.make_placeholder("table", (50, H), np.float64)
    f = ft.compile(ft.map(lambda t: ft.sum(ft.gather(table, t), axis=0), tokens))
    assert segment_strategies(f), str(f.plan)
    rng = np.random.default_rng(5)
    table_data = rng.standard_normal((50, H))
    ids = [rng.integers(0, 50, n) for n in (3, 0, 200, 1)]
    np.testing.assert_allclose(f(tokens=ids, table=table_data),
                               [table_data[t].sum(axis=0) for t in ids],
                               rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("lengths", list(LENGTHS))
def test_ranged_loop_nest_outside_the_segment_strategy(lengths):
    # a sum over the rows and the columns (two variables): a plain loop nest
    # whose row loop still runs over the element's rows only
    data = batch(LENGTHS[lengths])
    f = ft.compile(ft.map(lambda s: ft.sum(s * s), placeholder()))
    assert "_ft_hi" in f.source
    assert "split_reduction" not in f.plan.strategies().values()
    np.testing.assert_allclose(f(xs=data), [(s * s).sum() for s in data],
                               rtol=1e-12, atol=1e-12)


def test_one_program_for_longer_elements():
    f = ft.compile(ft.map(lse, placeholder()))
    short = batch((2, 3), seed=1)
    np.testing.assert_allclose(f(xs=short), [lse_numpy(s) for s in short])
    long = batch((1000, 1, 517), seed=2)
    np.testing.assert_allclose(f(xs=long), [lse_numpy(s) for s in long],
                               rtol=1e-12)


# {{{ the range finder

def _off():
    return Placeholder("off", (prim.Variable("n1"),), np.dtype(np.int64))


def _x():
    return Placeholder("x", (prim.Variable("m"), 4), np.dtype(np.float64))


BINDINGS = {"_off": _off(), "_x": _x()}
R = prim.Variable("_r0")
START = prim.Variable("_off")[prim.Variable("_0")]
EXTENT = prim.Variable("_off")[prim.Variable("_0") + 1] - START
READ = prim.Variable("_x")[START + R, prim.Variable("_1")]


def test_range_found_from_a_guard_with_a_neutral_else():
    expr = Reduce("sum", prim.If(prim.Comparison(R, "<", EXTENT), READ,
                                 np.float64(0)), (("_r0", 0, prim.Variable("L")),))
    reduction, ranges = data_dependent_range(expr, BINDINGS)
    assert reduction.inner == READ
    assert ranges["_r0"].upper == (prim.Variable("L"), EXTENT)
    assert ranges["_r0"].lower == (0,)
    # the other conjuncts of the guard stay
    other = prim.Comparison(prim.Variable("_1"), ">", 1)
    expr = Reduce("max", prim.If(prim.LogicalAnd((
        prim.Comparison(EXTENT, ">", R), other)), READ, np.float64(-np.inf)),
        (("_r0", 0, 8),))
    reduction, ranges = data_dependent_range(expr, BINDINGS)
    assert reduction.inner == prim.If(other, READ, np.float64(-np.inf))
    assert ranges["_r0"].upper == (8, EXTENT)


@pytest.mark.parametrize("case", ["not_neutral", "affine_guard", "float_bound",
                                  "bound_uses_the_variable"])
def test_range_not_found(case):
    cond = prim.Comparison(R, "<", EXTENT)
    other = np.float64(0)
    op = "sum"
    if case == "not_neutral":
        other = np.float64(1)
    elif case == "affine_guard":
        cond = prim.Comparison(R, "<", prim.Variable("L") - 1)
    elif case == "float_bound":
        cond = prim.Comparison(R, "<", prim.Variable("_x")[0, 0])
    else:
        cond = prim.Comparison(R, "<", prim.Variable("_off")[R])
    expr = Reduce(op, prim.If(cond, READ, other), (("_r0", 0, 8),))
    assert data_dependent_range(expr, BINDINGS) is None


def test_neutral_elements():
    assert is_neutral("sum", np.float32(0)) and not is_neutral("sum", 1.0)
    assert is_neutral("product", np.int8(1))
    assert is_neutral("max", np.float64(-np.inf)) and not is_neutral("max", 0.0)
    assert is_neutral("max", np.int32(np.iinfo(np.int32).min))
    assert is_neutral("min", np.uint8(255)) and not is_neutral("min", np.int16(255))
    assert not is_neutral("sum", prim.Variable("a"))

# }}}
