# SPDX-License-Identifier: MIT
"""map / scan / fold / gather over dense arrays: tracing, capture, errors."""

import numpy as np
import pytest

import ftlazy as ft
from ftlazy.fractal import BodyParam, LoopResult, Map, Scan

rng = np.random.default_rng(0)


def test_map_with_closure_and_tuple_result():
    x = ft.make_placeholder("x", (5, 3), np.float64)
    w = ft.make_placeholder("w", (3, 3), np.float64)
    calls = []

    def f(row):
        calls.append(row)
        return w @ row, ft.sum(row)

    y, s = ft.map(f, x)
    assert len(calls) == 1, "the body is traced once"
    assert isinstance(y, LoopResult) and y.shape == (5, 3)
    loop = y.loop
    assert isinstance(loop, Map) and loop is s.loop
    assert loop.captured == (w,)
    assert all(isinstance(p, BodyParam) for p in loop.body.params)
    xv, wv = rng.random((5, 3)), rng.random((3, 3))
    np.testing.assert_allclose(ft.evaluate_numpy(y, x=xv, w=wv), xv @ wv.T)
    np.testing.assert_allclose(ft.evaluate_numpy(s, x=xv, w=wv), xv.sum(axis=1))


def test_map_captures_maximal_outer_subgraph():
    x = ft.make_placeholder("x", (4, 3), np.float64)
    w = ft.make_placeholder("w", (3, 3), np.float64)
    y = ft.map(lambda r: w.T @ r, x)
    assert y.loop.captured == (w.T,)


def test_map_over_several_inputs_and_symbolic_length():
    n = ft.make_size_param("n")
    a = ft.make_placeholder("a", (n, 2), np.float32)
    b = ft.make_placeholder("b", (n,), np.float32)
    y = ft.map(lambda u, v: u * v, a, b)
    assert y.shape[0] == a.shape[0]
    av, bv = rng.random((7, 2), dtype=np.float32), rng.random(7, dtype=np.float32)
    out = ft.evaluate_numpy(y, a=av, b=bv)
    assert out.dtype == np.float32
    np.testing.assert_allclose(out, av * bv[:, None], rtol=1e-6)
    empty = ft.evaluate_numpy(y, a=av[:0], b=bv[:0])
    assert empty.shape == (0, 2)


def test_nested_map():
    x = ft.make_placeholder("x", (3, 4, 2), np.float64)
    y = ft.map(lambda mat: ft.map(lambda row: row * ft.sum(mat), mat), x)
    xv = rng.random((3, 4, 2))
    np.testing.assert_allclose(ft.evaluate_numpy(y, x=xv),
                               xv * xv.sum(axis=(1, 2))[:, None, None])


def test_scan_fold_rnn():
    t, b, h, i = 6, 2, 4, 3
    xs = ft.make_placeholder("xs", (t, b, i), np.float64)
    w = ft.make_placeholder("w", (h, h), np.float64)
    u = ft.make_placeholder("u", (h, i), np.float64)
    h0 = ft.make_placeholder("h0", (b, h), np.float64)

    def step(hh, x):
        return ft.tanh(hh @ w.T + x @ u.T)

    hs = ft.scan(step, xs, h0)
    last = ft.fold(step, xs, h0)
    assert isinstance(hs.loop, Scan) and hs.shape == (t, b, h)
    assert last.shape == (b, h)
    vals = dict(xs=rng.random((t, b, i)), w=rng.random((h, h)),
                u=rng.random((h, i)), h0=rng.random((b, h)))
    ref, hh = [], vals["h0"]
    for k in range(t):
        hh = np.tanh(hh @ vals["w"].T + vals["xs"][k] @ vals["u"].T)
        ref.append(hh)
    np.testing.assert_allclose(ft.evaluate_numpy(hs, **vals), np.stack(ref))
    np.testing.assert_allclose(ft.evaluate_numpy(last, **vals), ref[-1])


def test_scan_tuple_carry_and_tuple_xs():
    xs = ft.make_placeholder("xs", (5,), np.int64)
    ys = ft.make_placeholder("ys", (5,), np.int64)
    init = (ft.zeros((), np.int64), ft.ones((), np.int64))

    def step(carry, xy):
        total, prod = carry
        x, y = xy
        return total + x, prod * y

    totals, prods = ft.scan(step, (xs, ys), init)
    xv, yv = np.arange(1, 6), np.arange(2, 7)
    np.testing.assert_array_equal(ft.evaluate_numpy(totals, xs=xv, ys=yv),
                                  np.cumsum(xv))
    np.testing.assert_array_equal(ft.evaluate_numpy(prods, xs=xv, ys=yv),
                                  np.cumprod(yv))


def test_fold_of_empty_sequence_returns_init():
    n = ft.make_size_param("n")
    xs = ft.make_placeholder("xs", (n,), np.float64)
    total = ft.fold(lambda c, x: c + x, xs, ft.full((), 5.0))
    assert ft.evaluate_numpy(total, xs=np.zeros(0)) == 5.0
    assert ft.evaluate_numpy(total, xs=np.ones(3)) == 8.0


def test_gather():
    table = ft.make_placeholder("table", (10, 3), np.float32)
    idx = ft.make_placeholder("idx", (2, 4), np.int32)
    g = ft.gather(table, idx)
    assert g.shape == (2, 4, 3)
    tv = rng.random((10, 3), dtype=np.float32)
    iv = rng.integers(-10, 10, (2, 4)).astype(np.int32)
    np.testing.assert_array_equal(ft.evaluate_numpy(g, table=tv, idx=iv),
                                  np.take(tv, iv, axis=0))
    g1 = ft.gather(table, idx, axis=1)
    iv1 = rng.integers(0, 3, (2, 4)).astype(np.int32)
    np.testing.assert_array_equal(ft.evaluate_numpy(g1, table=tv, idx=iv1),
                                  np.take(tv, iv1, axis=1))
    with pytest.raises(IndexError, match="gather index 10 is out of range"):
        ft.evaluate_numpy(g, table=tv, idx=np.full((2, 4), 10, np.int32))


def test_gather_errors():
    table = ft.make_placeholder("table", (10, 3), np.float32)
    with pytest.raises(TypeError, match="integer dtype"):
        ft.gather(table, ft.make_placeholder("f", (2,), np.float32))
    with pytest.raises(ValueError, match="axis 2 out of range"):
        ft.gather(table, ft.make_placeholder("i", (2,), np.int32), axis=2)


def test_indices_known_at_build_time_are_checked_then():
    # (numpy data gave an IndexError only at run time)
    table = ft.make_placeholder("table", (6, 3), np.float64)
    with pytest.raises(IndexError, match=r"axis 0 of an array of shape "
                       r"\(6, 3\): index 9 is out of bounds.*length 6"):
        ft.gather(table, np.array([0, 9]))
    with pytest.raises(IndexError, match="index -7 is out of bounds"):
        ft.gather(table, np.array([[-7], [0]]))
    with pytest.raises(IndexError, match="axis 1.*index 3 is out of bounds"):
        ft.gather(table, np.array([3]), axis=1)
    with pytest.raises(IndexError, match="index 6 is out of bounds"):
        ft.gather(table, ft.make_data_wrapper(np.array([6])))
    with pytest.raises(IndexError, match=r"scatter into rows of x of shape "
                       r"\(6, 3\): index 7 is out of bounds"):
        ft.scatter(table, np.array([7, 0]), ft.zeros((2, 3)))
    taken = ft.gather(table, np.array([5, -6]))
    data = np.arange(18.0).reshape(6, 3)
    np.testing.assert_array_equal(ft.evaluate_numpy(taken, table=data),
                                  data[[5, -6]])
    # a symbolic length is checked at run time
    n = ft.make_size_param("n")
    rows = ft.make_placeholder("rows", (n, 3), np.float64)
    lazy = ft.gather(rows, np.array([4]))
    with pytest.raises(IndexError, match="out of range"):
        ft.evaluate_numpy(lazy, rows=data[:3])


def test_map_inputs_of_different_lengths():
    a = ft.make_placeholder("a", (3, 2), np.float64)
    b = ft.make_placeholder("b", (4,), np.float64)
    with pytest.raises(ValueError, match=r"different lengths.*\(3, 2\).*\(4,\)"):
        ft.map(lambda u, v: u * v, a, b)
    n = ft.make_size_param("n")
    c = ft.make_placeholder("c", (n,), np.float64)
    d = ft.make_placeholder("d", (n + 1,), np.float64)
    with pytest.raises(ValueError, match="different lengths"):
        ft.map(lambda u, v: u + v, c, d)


def test_map_errors():
    a = ft.make_placeholder("a", (3, 2), np.float64)
    with pytest.raises(TypeError, match="callable"):
        ft.map(3, a)
    with pytest.raises(ValueError, match="at least one"):
        ft.map(lambda: 1)
    with pytest.raises(ValueError, match="0-d"):
        ft.map(lambda u: u, ft.make_placeholder("s", (), np.float64))
    with pytest.raises(TypeError, match="map results"):
        ft.map(lambda u: "nope", a)


def test_scan_carry_must_keep_shape_and_dtype():
    xs = ft.make_placeholder("xs", (5, 3), np.float64)
    h0 = ft.make_placeholder("h0", (3,), np.float64)
    with pytest.raises(ValueError, match=r"shape of carry 0 from \(3,\) to \(\)"):
        ft.scan(lambda h, x: ft.sum(h + x), xs, h0)
    with pytest.raises(TypeError, match="dtype of carry 0 from float64 to float32"):
        ft.scan(lambda h, x: (h + x).astype(np.float32), xs, h0)
    with pytest.raises(ValueError, match="structured differently"):
        ft.scan(lambda h, x: (h, h), xs, h0)


def test_loop_nodes_are_structurally_shared():
    x = ft.make_placeholder("x", (4, 3), np.float64)
    assert ft.map(lambda r: 2 * r, x) is ft.map(lambda r: 2 * r, x)
    assert ft.map(lambda r: 2 * r, x) is not ft.map(lambda r: 3 * r, x)


@pytest.mark.parametrize("loop", ["scan", "fold", "reduce"])
def test_a_carry_changing_dtype_names_the_loop_and_a_python_init(loop):
    # (a Python 0 as the init of a float fold is int64: say so, and name
    # the loop the user called)
    v = ft.make_placeholder("v", (3,), np.float64)
    build = getattr(ft, loop)
    with pytest.raises(TypeError, match=f"{loop}: the body changes the dtype "
                       "of carry 0 from int64 to float64; its init, the Python "
                       r"int 0, is int64: give it as a float64 \(np.float64"):
        build(lambda c, a: c + a, v, 0)
    with pytest.raises(TypeError, match=f"{loop}: the body changes the dtype "
                       "of carry 0 from int32 to float64$"):
        build(lambda c, a: c + a, v, ft.zeros((), np.int32))
    with pytest.raises(ValueError, match=f"{loop}: the body changes the shape"):
        build(lambda c, a: c + a * ft.ones(2), v, ft.zeros(()))


def test_results_of_a_map_nothing_reads_need_no_inputs():
    # (evaluate_numpy asked for 'b', which only the unused result reads;
    # ft.compile does not)
    a = ft.make_placeholder("a", (3, 2), np.float64)
    b = ft.make_placeholder("b", (3,), np.float64)
    w = ft.make_placeholder("w", (2,), np.float64)
    first, second, third = ft.map(
        lambda row, q: (ft.sum(row * w), q * 2, ft.map(lambda x: x * q, row)),
        a, b)
    av, bv, wv = np.arange(6.).reshape(3, 2), np.array([1., -2., 3.]), np.ones(2)
    for evaluate in (ft.evaluate_numpy, lambda r, **kw: ft.compile(r)(**kw)):
        np.testing.assert_allclose(evaluate(first, a=av, w=wv), av @ wv)
        np.testing.assert_allclose(evaluate(second, b=bv), bv * 2)
        np.testing.assert_allclose(evaluate(third, a=av, b=bv), av * bv[:, None])
        both = evaluate(ft.make_dict_of_named_arrays({"f": first, "t": third}),
                        a=av, b=bv, w=wv)
        np.testing.assert_allclose(both["f"], av @ wv)
        np.testing.assert_allclose(both["t"], av * bv[:, None])
    with pytest.raises(ValueError, match="missing input.*'w'"):
        ft.evaluate_numpy(first, a=av)
    # inputs only the unused results read are accepted, and ignored
    for evaluate in (ft.evaluate_numpy, lambda r, **kw: ft.compile(r)(**kw)):
        np.testing.assert_allclose(evaluate(second, a=av, b=bv, w=wv), bv * 2)
