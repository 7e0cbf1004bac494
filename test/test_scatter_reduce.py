# SPDX-License-Identifier: MIT
"""ft.scatter (modes "set" and "add") and ft.reduce, through the reference
evaluator and through OpenCL: duplicates, negative and out-of-range
indices, empty operands, rows of several axes, symbolic sizes, dtypes,
loops, and the lowering to IndexLambdas."""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pytest

import ftlazy as ft
from ftlazy.fractal import Scatter
from ftlazy.transform.lower import lower_to_index_lambdas, to_index_lambda

rng = np.random.default_rng(11)

N = ft.make_size_param("n")
M = ft.make_size_param("m")


def scatter_ref(x: np.ndarray, indices: np.ndarray, updates: Any,
                mode: str) -> np.ndarray:
    """What numpy does: ``x[indices] = updates`` (applied in order, so the
    last of duplicate indices wins) or ``numpy.add.at``."""
    out = x.copy()
    updates = np.broadcast_to(np.asarray(updates),
                              indices.shape + x.shape[1:]).astype(x.dtype)
    if mode == "add":
        np.add.at(out, indices, updates)
    else:
        for k, i in enumerate(indices):
            out[i] = updates[k]
    return out


def assert_same(actual: np.ndarray, expected: np.ndarray) -> None:
    assert actual.dtype == expected.dtype
    assert actual.shape == expected.shape
    if expected.dtype.kind in "fc":
        np.testing.assert_allclose(actual, expected, rtol=1e-12, atol=1e-12)
    else:
        np.testing.assert_array_equal(actual, expected)


def assert_both(result: Any, expected: dict[str, np.ndarray] | np.ndarray,
                compiled: Any = None, **inputs: Any) -> None:
    """evaluate_numpy and the compiled program (*compiled*, else
    ``ft.compile(result)``) both give *expected*."""
    compiled = compiled if compiled is not None else ft.compile(result)
    for out in (ft.evaluate_numpy(result, **inputs), compiled(**inputs)):
        if isinstance(expected, dict):
            assert set(out) == set(expected)
            for name in expected:
                assert_same(out[name], expected[name])
        else:
            assert_same(out, expected)


# {{{ scatter: values

@pytest.fixture(scope="module")
def symbolic_scatters():
    """Scatters of a (n, 3) array at m indices, both modes, compiled once."""
    x = ft.make_placeholder("x", (N, 3), np.float64)
    idx = ft.make_placeholder("idx", (M,), np.int64)
    upd = ft.make_placeholder("upd", (M, 3), np.float64)
    d = ft.make_dict_of_named_arrays({
        "set": ft.scatter(x, idx, upd),
        "add": ft.scatter(x, idx, upd, mode="add"),
    })
    return d, ft.compile(d)


@pytest.mark.parametrize(("n", "indices"), [
    (5, [1, 3, 1, 0, 3, 1]),      # duplicates: the last wins, or they add up
    (5, [-1, 4, -5, 0, 2]),       # negative ones count from the end
    (5, [2]),
    (5, []),                      # m = 0: x unchanged
    (0, []),                      # empty x
    (1, [0, -1, 0]),
    (7, list(range(7))[::-1]),    # a permutation
])
def test_scatter_symbolic_sizes(symbolic_scatters, n, indices):
    d, f = symbolic_scatters
    idx = np.array(indices, np.int64)
    x = rng.random((n, 3))
    upd = rng.random((len(idx), 3))
    expected = {mode: scatter_ref(x, idx, upd, mode) for mode in ("set", "add")}
    assert_both(d, expected, f, x=x, idx=idx, upd=upd)


def test_scatter_duplicates_last_wins_and_sum_exactly():
    x = ft.make_placeholder("x", (4,), np.int32)
    idx = ft.make_placeholder("idx", (6,), np.int16)
    upd = ft.make_placeholder("upd", (6,), np.int32)
    d = ft.make_dict_of_named_arrays({"set": ft.scatter(x, idx, upd),
                                      "add": ft.scatter(x, idx, upd, "add")})
    xv = np.array([10, 20, 30, 40], np.int32)
    iv = np.array([2, -2, 0, 2, 3, -4], np.int16)
    uv = np.array([1, 2, 3, 4, 5, 6], np.int32)
    expected = {"set": np.array([6, 20, 4, 5], np.int32),
                "add": np.array([10 + 3 + 6, 20, 30 + 1 + 2 + 4, 40 + 5],
                                np.int32)}
    assert_both(d, expected, x=xv, idx=iv, upd=uv)


def test_scatter_rows_of_several_axes():
    x = ft.make_placeholder("x", (4, 2, 3), np.float32)
    idx = ft.make_placeholder("idx", (5,), np.int32)
    upd = ft.make_placeholder("upd", (5, 2, 3), np.float32)
    d = ft.make_dict_of_named_arrays({"set": ft.scatter(x, idx, upd),
                                      "add": ft.scatter(x, idx, upd, "add")})
    xv = rng.random((4, 2, 3), dtype=np.float32)
    iv = np.array([3, -1, 0, 1, 0], np.int32)
    uv = rng.random((5, 2, 3), dtype=np.float32)
    f = ft.compile(d)
    for out in (ft.evaluate_numpy(d, x=xv, idx=iv, upd=uv),
                f(x=xv, idx=iv, upd=uv)):
        assert_same(out["set"], scatter_ref(xv, iv, uv, "set"))
        assert out["add"].dtype == np.float32
        np.testing.assert_allclose(out["add"], scatter_ref(xv, iv, uv, "add"),
                                   rtol=1e-6)


def test_scatter_of_computed_operands():
    """x, indices and updates computed in the same program (indices from
    data: an argsort-free ranking, all in range)."""
    a = ft.make_placeholder("a", (6,), np.float64)
    ids = ft.make_placeholder("ids", (4,), np.int64)
    result = ft.scatter(a * 2, (ids * 3) % 6 - 6, ft.exp(a[:4]) + 1, "add")
    av = rng.random(6)
    iv = np.array([0, 1, 5, 2])
    expected = scatter_ref(av * 2, (iv * 3) % 6 - 6, np.exp(av[:4]) + 1, "add")
    assert_both(result, expected, a=av, ids=iv)


def test_scatter_broadcasts_updates():
    x = ft.make_placeholder("x", (5, 3), np.float64)
    idx = ft.make_placeholder("idx", (M,), np.int64)
    row = ft.make_placeholder("row", (3,), np.float64)
    col = ft.make_placeholder("col", (M, 1), np.float64)
    by_col = ft.scatter(x, idx, col)
    assert by_col.updates.shape == idx.shape + (3,)
    d = ft.make_dict_of_named_arrays({
        "scalar": ft.scatter(x, idx, 0.5),
        "row": ft.scatter(x, idx, row, "add"),
        "col": by_col,
        "numpy": ft.scatter(x, idx, np.arange(3.0), "add"),
    })
    xv, rv = rng.random((5, 3)), rng.random(3)
    iv = np.array([4, 0, -1])
    cv = rng.random((3, 1))
    expected = {"scalar": scatter_ref(xv, iv, 0.5, "set"),
                "row": scatter_ref(xv, iv, rv, "add"),
                "col": scatter_ref(xv, iv, cv, "set"),
                "numpy": scatter_ref(xv, iv, np.arange(3.0), "add")}
    assert_both(d, expected, x=xv, idx=iv, row=rv, col=cv)


def test_scatter_dtypes():
    xi = ft.make_placeholder("xi", (4,), np.int32)
    xb = ft.make_placeholder("xb", (4,), np.bool_)
    xc = ft.make_placeholder("xc", (4,), np.complex128)
    idx = ft.make_placeholder("idx", (3,), np.uint8)
    fl = ft.make_placeholder("fl", (3,), np.float64)
    big = ft.make_placeholder("big", (3,), np.int64)
    flags = ft.make_placeholder("flags", (3,), np.bool_)
    d = ft.make_dict_of_named_arrays({
        # numpy's assignment: floats into integers truncate
        "set_float_into_int": ft.scatter(xi, idx, fl),
        # int64 into int32 is a same-kind cast, allowed for "add"
        "add_int64_to_int32": ft.scatter(xi, idx, big, "add"),
        # bools add as a logical or, as numpy.add.at does
        "add_bool": ft.scatter(xb, idx, flags, "add"),
        "set_bool": ft.scatter(xb, idx, flags),
        "add_complex": ft.scatter(xc, idx, fl, "add"),
        "add_python_int": ft.scatter(xi, idx, 7, "add"),
    })
    assert d["set_float_into_int"].dtype == np.int32
    vals = dict(xi=np.array([1, 2, 3, 4], np.int32),
                xb=np.array([True, False, False, True]),
                xc=np.array([1j, 2, 3, 4 + 1j]),
                idx=np.array([1, 3, 1], np.uint8),
                fl=np.array([1.7, -2.9, 3.5]),
                big=np.array([2**40 + 1, 5, -7]),
                flags=np.array([True, False, False]))
    expected = {
        "set_float_into_int": scatter_ref(vals["xi"], vals["idx"], vals["fl"],
                                          "set"),
        "add_int64_to_int32": scatter_ref(vals["xi"], vals["idx"], vals["big"],
                                          "add"),
        "add_bool": scatter_ref(vals["xb"], vals["idx"], vals["flags"], "add"),
        "set_bool": scatter_ref(vals["xb"], vals["idx"], vals["flags"], "set"),
        "add_complex": scatter_ref(vals["xc"], vals["idx"], vals["fl"], "add"),
        "add_python_int": scatter_ref(vals["xi"], vals["idx"], 7, "add"),
    }
    assert expected["add_bool"].tolist() == [True, True, False, True]
    assert_both(d, expected, **vals)

# }}}


# {{{ scatter: out-of-range indices at run time

def test_scatter_out_of_range_indices_raise_in_both_paths():
    x = ft.make_placeholder("x", (N, 2), np.float64)
    idx = ft.make_placeholder("idx", (M,), np.int32)
    upd = ft.make_placeholder("upd", (M, 2), np.float64)
    for mode in ("set", "add"):
        result = ft.scatter(x, idx, upd, mode)
        f = ft.compile(result)
        xv = np.zeros((4, 2))
        for bad, value, position in (([0, 4, 1], 4, 1), ([-5, 0], -5, 0),
                                     ([1, 2, 3, 2**31 - 1], 2**31 - 1, 3)):
            iv = np.array(bad, np.int32)
            uv = np.ones((len(bad), 2))
            message = (f"scatter index {value} is out of range for axis 0 "
                       "with size 4")
            with pytest.raises(IndexError, match=re.escape(message)):
                ft.evaluate_numpy(result, x=xv, idx=iv, upd=uv)
            with pytest.raises(IndexError, match=re.escape(
                    f"{message} (at position ({position},) of the index "
                    "array)")):
                f(x=xv, idx=iv, upd=uv)
        # into an empty x, every index is out of range
        with pytest.raises(IndexError, match="scatter index 0 is out of range "
                           "for axis 0 with size 0"):
            ft.evaluate_numpy(result, x=np.zeros((0, 2)),
                              idx=np.array([0], np.int32), upd=np.ones((1, 2)))
        with pytest.raises(IndexError, match="scatter index 0 is out of range"):
            f(x=np.zeros((0, 2)), idx=np.array([0], np.int32),
              upd=np.ones((1, 2)))
        # and the program still works afterwards
        iv = np.array([-4, 3], np.int32)
        uv = rng.random((2, 2))
        assert_same(f(x=xv, idx=iv, upd=uv), scatter_ref(xv, iv, uv, mode))


def test_scatter_unsigned_indices_beyond_int64():
    x = ft.make_placeholder("x", (3,), np.float64)
    idx = ft.make_placeholder("idx", (2,), np.uint64)
    result = ft.scatter(x, idx, ft.ones((2,)), "add")
    f = ft.compile(result)
    bad = np.array([0, 2**64 - 1], np.uint64)
    message = f"scatter index {2**64 - 1} is out of range for axis 0 with size 3"
    with pytest.raises(IndexError, match=re.escape(message)):
        ft.evaluate_numpy(result, x=np.zeros(3), idx=bad)
    with pytest.raises(IndexError, match=re.escape(message)):
        f(x=np.zeros(3), idx=bad)
    good = np.array([2, 2], np.uint64)
    assert_both(result, np.array([0.0, 0.0, 2.0]), f, x=np.zeros(3), idx=good)


def test_scatter_out_of_range_in_loops_names_the_step():
    table = ft.make_placeholder("table", (3, 2), np.float64)
    ids = ft.make_placeholder("ids", (N, 2), np.int64)
    mapped = ft.map(lambda row: ft.scatter(table, row, ft.ones((2, 2)), "add"),
                    ids)
    f = ft.compile(mapped)
    tv = rng.random((3, 2))
    bad = np.array([[0, 1], [2, 2], [1, 3]])
    message = "scatter index 3 is out of range for axis 0 with size 3"
    with pytest.raises(IndexError, match=re.escape(message)):
        ft.evaluate_numpy(mapped, table=tv, ids=bad)
    with pytest.raises(IndexError, match=re.escape(f"{message} (in step 2 of a "
                                                   "map)")):
        f(table=tv, ids=bad)
    good = np.array([[0, 1], [2, -1], [-3, 0]])
    expected = np.stack([scatter_ref(tv, row, np.ones((2, 2)), "add")
                         for row in good])
    assert_both(mapped, expected, f, table=tv, ids=good)

# }}}


# {{{ scatter in loops

def test_histogram_by_fold_of_scatter_add():
    """A fold whose carry is scattered into: counts of each bucket."""
    ids = ft.make_placeholder("ids", (N, 3), np.int32)
    counts = ft.fold(lambda c, row: ft.scatter(c, row, 1, "add"), ids,
                     ft.zeros((4,), np.int64))
    latest = ft.scan(lambda c, row: ft.scatter(c, row, row.astype(np.int64)),
                     ids, ft.full((4,), -1, np.int64))
    d = ft.make_dict_of_named_arrays({"counts": counts, "latest": latest})
    f = ft.compile(d)
    for n in (6, 1, 0):
        iv = rng.integers(-4, 4, (n, 3)).astype(np.int32)
        c, history = np.zeros(4, np.int64), []
        h = np.full(4, -1, np.int64)
        for row in iv:
            c = scatter_ref(c, row, 1, "add")
            h = scatter_ref(h, row, row.astype(np.int64), "set")
            history.append(h)
        expected = {"counts": c,
                    "latest": np.array(history, np.int64).reshape(n, 4)}
        assert_both(d, expected, f, ids=iv)


def test_scatter_in_map_over_rows():
    xs = ft.make_placeholder("xs", (N, 5), np.float64)
    ids = ft.make_placeholder("ids", (N, 2), np.int64)
    vals = ft.make_placeholder("vals", (N, 2), np.float64)
    result = ft.map(lambda x, i, v: ft.scatter(x, i, v * 10), xs, ids, vals)
    xv = rng.random((4, 5))
    iv = rng.integers(-5, 5, (4, 2))
    vv = rng.random((4, 2))
    expected = np.stack([scatter_ref(x, i, v * 10, "set")
                         for x, i, v in zip(xv, iv, vv)])
    assert_both(result, expected, xs=xv, ids=iv, vals=vv)


@pytest.mark.parametrize("flavour", ["cpu-vector", "gpu"])
def test_scatter_under_other_codegen_strategies(flavour):
    """The GPU strategies and vector code (which may evaluate both sides
    of a select) give the same values and the same index errors."""
    from conftest import TEST_VECTOR_MIN_LENGTH, probed_vector_widths

    from ftlazy.target.loopy.profile import CodegenOptions, default_options
    kind, width = (("gpu", 1) if flavour == "gpu"
                   else ("cpu", max(probed_vector_widths())))
    x = ft.make_placeholder("x", (N, 40), np.float32)
    idx = ft.make_placeholder("idx", (M,), np.int32)
    upd = ft.make_placeholder("upd", (M, 40), np.float32)
    d = ft.make_dict_of_named_arrays({"set": ft.scatter(x, idx, upd),
                                      "add": ft.scatter(x, idx, upd, "add")})
    with default_options(CodegenOptions(
            vector_width=width, vector_min_length=TEST_VECTOR_MIN_LENGTH,
            device_kind=kind)):
        f = ft.compile(d)
        for n, m in ((50, 7), (3, 0), (0, 0)):
            xv = rng.random((n, 40), dtype=np.float32)
            iv = rng.integers(-n, max(n, 1), m).astype(np.int32)
            uv = rng.random((m, 40), dtype=np.float32)
            out = f(x=xv, idx=iv, upd=uv)
            assert_same(out["set"], scatter_ref(xv, iv, uv, "set"))
            np.testing.assert_allclose(out["add"], scatter_ref(xv, iv, uv, "add"),
                                       rtol=1e-6)
        with pytest.raises(IndexError, match="scatter index 50 is out of range"):
            f(x=np.zeros((50, 40), np.float32), idx=np.array([1, 50], np.int32),
              upd=np.zeros((2, 40), np.float32))

# }}}


# {{{ scatter: the node, its lowering and build-time errors

def test_scatter_node():
    x = ft.make_placeholder("x", (N, 2), np.float64)
    idx = ft.make_placeholder("idx", (M,), np.int64)
    upd = ft.make_placeholder("upd", (M, 2), np.float64)
    s = ft.scatter(x, idx, upd, "add")
    assert isinstance(s, Scatter)
    assert (s.x, s.indices, s.updates, s.mode) == (x, idx, upd, "add")
    assert s.shape == x.shape and s.dtype == np.float64
    assert ft.scatter(x, idx, upd, "add") is s, "nodes are interned"
    assert ft.scatter(x, idx, upd) is not s
    with pytest.raises(AttributeError):
        s.mode = "set"
    assert "mode='add'" in repr(s)
    assert ft.analysis.get_inputs(s) >= {x, idx, upd}


@pytest.mark.parametrize("mode", ["set", "add"])
def test_scatter_lowering_agrees_with_the_node(mode):
    x = ft.make_placeholder("x", (N, 2), np.int64)
    idx = ft.make_placeholder("idx", (M,), np.int32)
    upd = ft.make_placeholder("upd", (M, 2), np.int64)
    s = ft.scatter(x, idx, upd, mode)
    lowered = to_index_lambda(s)
    assert isinstance(lowered, ft.IndexLambda)
    assert lowered.shape == s.shape and lowered.dtype == s.dtype
    assert lower_to_index_lambdas(s * 2).bindings["_in0"] == lowered
    for n, indices in ((5, [0, -1, 2, 0, 4, -1]), (3, []), (0, [])):
        iv = np.array(indices, np.int32)
        xv = rng.integers(0, 100, (n, 2))
        uv = rng.integers(0, 100, (len(iv), 2))
        assert_same(ft.evaluate_numpy(lowered, x=xv, idx=iv, upd=uv),
                    scatter_ref(xv, iv, uv, mode))
    # with no index at all, the lowering is a copy of x that keeps every
    # operand as an input
    empty = to_index_lambda(ft.scatter(x, ft.zeros((0,), np.int64),
                                       ft.zeros((0, 2), np.int64), mode))
    assert len(empty.bindings) == 3


def test_scatter_build_time_errors():
    x = ft.make_placeholder("x", (5, 3), np.float64)
    xi = ft.make_placeholder("xi", (5,), np.int32)
    idx = ft.make_placeholder("idx", (4,), np.int64)
    upd = ft.make_placeholder("upd", (4, 3), np.float64)
    with pytest.raises(TypeError, match="scatter indices must have an integer "
                       "dtype, got float64"):
        ft.scatter(x, ft.make_placeholder("f", (4,), np.float64), upd)
    with pytest.raises(TypeError, match="integer dtype, got bool"):
        ft.scatter(x, ft.make_placeholder("b", (4,), np.bool_), upd)
    with pytest.raises(ValueError, match=r"1-D array, got shape \(2, 2\)"):
        ft.scatter(x, ft.make_placeholder("i2", (2, 2), np.int64), upd)
    with pytest.raises(ValueError, match=r"mode must be one of \('set', "
                       r"'add'\), got 'max'"):
        ft.scatter(x, idx, upd, mode="max")
    with pytest.raises(ValueError, match="at least one axis"):
        ft.scatter(ft.make_placeholder("s", (), np.float64), idx, 1.0)
    with pytest.raises(ValueError, match=re.escape(
            "updates of shape (4, 2) do not broadcast to the shape (4, 3)")):
        ft.scatter(x, idx, ft.make_placeholder("u2", (4, 2), np.float64))
    with pytest.raises(ValueError, match=re.escape(
            "updates of shape (m, 3) do not broadcast to the shape (4, 3)")):
        ft.scatter(x, idx, ft.make_placeholder("um", (M, 3), np.float64))
    with pytest.raises(TypeError, match="cannot add updates of dtype float64 to "
                       "x of dtype int32"):
        ft.scatter(xi, idx, ft.make_placeholder("uf", (4,), np.float64), "add")
    with pytest.raises(TypeError, match="cannot add a Python float to x of "
                       "dtype int32"):
        ft.scatter(xi, idx, 1.5, "add")
    with pytest.raises(TypeError, match="cannot set updates of dtype complex128 "
                       "into x of dtype float64"):
        ft.scatter(x, idx, ft.make_placeholder("uc", (4, 3), np.complex128))
    # the node itself takes only exact shapes and dtypes
    with pytest.raises(ValueError, match=re.escape(
            "updates must have the shape (4, 3) (the indices' length, then the "
            "rows of x), got (3,)")):
        Scatter(x, idx, ft.make_placeholder("r", (3,), np.float64))
    with pytest.raises(TypeError, match="updates must have x's dtype float64, "
                       "got float32"):
        Scatter(x, idx, ft.make_placeholder("u32", (4, 3), np.float32))

# }}}


# {{{ reduce

def test_reduce_is_a_fold_of_an_associative_function():
    xs = ft.make_placeholder("xs", (N, 3), np.float64)
    ks = ft.make_placeholder("ks", (N,), np.int64)
    total = ft.reduce(lambda c, x: c + x, xs, ft.zeros((3,)))
    # a pair of (associative) reductions over a pair of sequences
    biggest, product = ft.reduce(
        lambda c, x: (ft.maximum(c[0], x[0]), c[1] * x[1]), (ks, xs[:, 0]),
        (ft.full((), -100, np.int64), 1.0))
    assert total.loop.keep_all is False
    d = ft.make_dict_of_named_arrays({"total": total, "biggest": biggest,
                                      "product": product})
    f = ft.compile(d)
    for n in (5, 1, 0):
        xv = rng.random((n, 3)) + 0.5
        kv = rng.integers(-50, 50, n)
        expected = {"total": xv.sum(axis=0) if n else np.zeros(3),
                    "biggest": np.int64(max([-100, *kv.tolist()])),
                    "product": np.prod(xv[:, 0])}
        ref = ft.evaluate_numpy(d, xs=xv, ks=kv)
        out = f(xs=xv, ks=kv)
        for result in (ref, out):
            for name, value in expected.items():
                assert result[name].dtype == np.asarray(value).dtype, name
                np.testing.assert_allclose(result[name], value, rtol=1e-12)


def test_reduce_errors():
    xs = ft.make_placeholder("xs", (4,), np.float64)
    with pytest.raises(TypeError, match="reduce: f must be callable"):
        ft.reduce(None, xs, 0.0)
    with pytest.raises(ValueError, match="reduce needs at least one sequence"):
        ft.reduce(lambda c, x: c, (), 0.0)
    with pytest.raises(ValueError, match=re.escape(
            "reduce: the carry the body returns is structured differently from "
            "init: (*, *) instead of *")):
        ft.reduce(lambda c, x: (c, x), xs, 0.0)

# }}}
