# SPDX-License-Identifier: MIT
"""Indexing (``x[...]``, ``take``) against numpy through the reference
evaluator."""

import numpy as np
import pymbolic.primitives as prim
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ftlazy as ft
from helpers import check
from ftlazy import shapes as sh


class _Index:
    """``IX[1, ::2]`` is the index tuple ``(1, slice(None, None, 2))``."""

    def __getitem__(self, index):
        return index


IX = _Index()
RNG = np.random.default_rng(0)
XV = RNG.standard_normal((4, 5, 6))
X = ft.make_placeholder("x", (4, 5, 6), np.float64)
N = ft.make_size_param("n")


BASIC = [
    IX[0], IX[3], IX[-1], IX[-4], IX[1, 2], IX[1, 2, 3], IX[-1, -2, -3],
    IX[:], IX[...], IX[()], IX[1:3], IX[::2], IX[::-1], IX[::-2], IX[3:0:-1],
    IX[-1:0:-2], IX[1:-1], IX[-3:], IX[:-3], IX[10:], IX[:10], IX[-10:],
    IX[2:2], IX[3:1], IX[1:3:-1], IX[:, 1:4:2], IX[:, ::-3, 5:0:-2],
    IX[:, :, 1], IX[:, -1], IX[..., 0], IX[..., ::-1], IX[1, ..., 2],
    IX[None], IX[None, 1], IX[1, None], IX[:, None, :, None],
    IX[..., None], IX[None, ..., None], IX[None, None, 0, None, ::2],
    IX[2, None, -1, None, 1:], IX[:, 0, None], IX[np.int64(1), np.int32(-2)],
    IX[np.newaxis, 1:3, np.array(2)],
]

ADVANCED = [
    IX[[0, 2]], IX[[-1, 0, -4]], IX[[]], IX[[3, 3, 3]], IX[:, [1, 4]],
    IX[:, :, [5, -6]], IX[..., [0, 1]], IX[[0, 1], [2, 3]],
    IX[[0, 1], :, [2, 3]], IX[:, [0, 1], [2, 3]], IX[[0, 1], [2, 3], [4, 5]],
    IX[[[0, 1], [2, 3]]], IX[[[0], [1]], :, [1, 2, 3]],
    IX[:, [[0, 1, 2]], [[1], [3]]], IX[1, [0, 2]], IX[[0, 2], 1],
    IX[1, :, [0, 2]], IX[[0, 2], :, 1], IX[:, 1, [0, 2]], IX[1, [0, 2], 3],
    IX[np.array([1, 0]), 2], IX[None, [0, 1]], IX[[0, 1], None],
    IX[[0, 1], None, [2, 3]], IX[:, [0, 1], None, [2, 3]],
    IX[None, :, [0, 1], None, [2, 3]], IX[:, [0, 1], ..., [2, 3]],
    IX[0, ..., [1, 2], :], IX[1::2, [0, 4], ::-1], IX[[1, 2], 1:3, [[0], [5]]],
    IX[np.array([[0, 1]], dtype=np.uint8)], IX[(0, 1), 2],
]


@pytest.mark.parametrize("index", BASIC + ADVANCED, ids=repr)
def test_index_table(index):
    check(X[index], XV[index], x=XV)


@pytest.mark.parametrize("index", BASIC, ids=repr)
def test_basic_indexing_builds_basic_nodes(index):
    node = X[index]
    while isinstance(node, ft.Reshape):
        node = node.array
    assert isinstance(node, (ft.BasicIndex, ft.Placeholder))


@pytest.mark.parametrize("index", ADVANCED, ids=repr)
def test_advanced_indexing_builds_advanced_nodes(index):
    node = X[index]
    while isinstance(node, (ft.Reshape, ft.AxisPermutation)):
        node = node.array
    assert isinstance(node, ft.AdvancedIndex)


def test_full_index_is_identity():
    assert X[:] is X
    assert X[...] is X
    assert X[:, :, ::1] is X


EDGE = [IX[:], IX[0], IX[:, 0], IX[:, -1], IX[::-1], IX[1:], IX[:, :, [2, 0]],
        IX[:, [0, 0]], IX[[], 0], IX[..., None], IX[:, 0, ::-2], IX[:0],
        IX[:, 1:]]


@pytest.mark.parametrize("index", EDGE, ids=repr)
def test_length_zero_and_one_axes(index):
    yv = RNG.standard_normal((0, 1, 3)).astype(np.float32)
    y = ft.make_placeholder("y", (0, 1, 3), np.float32)
    try:
        expected = yv[index]
    except IndexError:
        with pytest.raises(IndexError):
            y[index]
        return
    check(y[index], expected, y=yv)


def test_lazy_index_arrays():
    idx = ft.make_placeholder("idx", (2, 3), np.int64)
    j = ft.make_placeholder("j", (3,), np.int32)
    iv = np.array([[0, -1, 2], [3, 1, -4]])
    jv = np.array([3, 0, -4], dtype=np.int32)
    check(X[idx], XV[iv], x=XV, idx=iv)
    check(X[:, j], XV[:, jv], x=XV, j=jv)
    check(X[idx, :, j], XV[iv, :, jv], x=XV, idx=iv, j=jv)
    check(X[1:, j, idx], XV[1:, jv, iv], x=XV, idx=iv, j=jv)
    check(X[idx, 2], XV[iv, 2], x=XV, idx=iv)
    check(X[None, j, ..., 1], XV[None, jv, ..., 1], x=XV, j=jv)


def test_symbolic_slices():
    n = ft.make_size_param("n")
    x = ft.make_placeholder("x", (n,), np.float64)
    xv = np.arange(7.0)
    # (lazy index, the same index for n == 7)
    cases = [
        (IX[1:-1], IX[1:-1]), (IX[::-1], IX[::-1]), (IX[2:], IX[2:]),
        (IX[:-2], IX[:-2]), (IX[-2:1:-1], IX[-2:1:-1]), (IX[-1:0:-1], IX[-1:0:-1]),
        (IX[:n], IX[:7]), (IX[2:-3], IX[2:-3]),
        (IX[-1::-1], IX[-1::-1]), (IX[:-1:-1], IX[:-1:-1]), (IX[3:1], IX[3:1]),
        (IX[None, 1:], IX[None, 1:]),
    ]
    for lazy_index, index in cases:
        check(x[lazy_index], xv[index], x=xv)
    assert sh.prove_equal(x[1:-1].shape[0], prim.Variable("n") - 2)
    y = ft.make_placeholder("y", (2 * n + 1,), np.float64)
    yv = np.arange(9.0)
    check(y[::2], yv[::2], y=yv)
    check(y[1::2], yv[1::2], y=yv)
    check(y[::-2], yv[::-2], y=yv)
    check(y[:n], yv[:4], y=yv)
    check(y[n:0:-1], yv[4:0:-1], y=yv)
    check(y[n + 1:], yv[5:], y=yv)
    check(y[0], yv[0], y=yv)
    check(y[n], yv[4], y=yv)
    check(y[-1], yv[-1], y=yv)


@pytest.mark.parametrize("build, want, n_is_a_node", [
    (lambda x, y, n: x[n:], lambda x, y, n: x[n:], False),
    (lambda x, y, n: x[n:-1], lambda x, y, n: x[n:-1], False),
    (lambda x, y, n: y[n:], lambda x, y, n: y[n:], False),
    (lambda x, y, n: x[n], lambda x, y, n: x[n], True),
    (lambda x, y, n: x[n - 1], lambda x, y, n: x[n - 1], True),
    (lambda x, y, n: x[:, n], lambda x, y, n: x[:, n], True),
    (lambda x, y, n: ft.sum(x[n:], axis=0),
     lambda x, y, n: x[n:].sum(axis=0), False),
    (lambda x, y, n: ft.sum(x[:, n:], axis=1),
     lambda x, y, n: x[:, n:].sum(axis=1), False),
    (lambda x, y, n: ft.sum(x[n:].T @ x[n:], axis=0),
     lambda x, y, n: (x[n:].T @ x[n:]).sum(axis=0), False),
], ids=["start", "start_stop", "symbolic_axis", "row", "row_before", "column",
        "summed_rows", "summed_columns", "gram"])
def test_a_size_parameter_alone_as_an_index_or_bound(build, want, n_is_a_node):
    # (x[n:] failed to compile: loopy could not prove x[n + i] in bounds
    # without n >= 0, also in a split reduction over the rows; x[n] left n
    # out of the DAG's inputs, so neither evaluator could run it)
    n, m = ft.make_size_param("n"), ft.make_size_param("m")
    x = ft.make_placeholder("x", (3, 4), np.float64)
    y = ft.make_placeholder("y", (m,), np.float64)
    lazy = build(x, y, n)
    if n_is_a_node:
        # (an index: n is a node of the DAG, not a name in a shape)
        assert n in ft.analysis.get_inputs(lazy)
    xv, yv = np.arange(12.0).reshape(3, 4), np.arange(5.0)
    program = ft.compile(lazy)
    given = {"x": xv} if y not in ft.analysis.get_inputs(lazy) else {"y": yv}
    for nv in (1, 2):
        expected = want(xv, yv, nv)
        np.testing.assert_array_equal(program(**given, n=nv), expected)
        np.testing.assert_array_equal(ft.evaluate_numpy(lazy, **given, n=nv),
                                      expected)
    with pytest.raises((IndexError, ValueError), match="out of range|negative"):
        program(**given, n=6)


def test_symbolic_slice_assumption_checked_at_run_time():
    n = ft.make_size_param("n")
    x = ft.make_placeholder("x", (n,), np.float64)
    with pytest.raises(ValueError, match="negative"):
        ft.evaluate_numpy(x[1:-1], x=np.ones(1))


@pytest.mark.parametrize("index, want_index", [
    (IX[0], IX[0]), (IX[-1], IX[-1]), (IX[2, -1], IX[2, -1]),
    (IX[:, 0], IX[:, 0]), (IX[None, -3, ::-1], IX[None, -3, ::-1]),
    (IX[[0, 2]], IX[[0, 2]]), (IX[[-1], 1:], IX[[-1], 1:]),
])
def test_indices_checked_at_run_time_on_symbolic_axes(index, want_index):
    # (refused at build time, "cannot be proven in range"; now read as index
    # arrays: numpy's result where the axis is long enough, an IndexError
    # where it is not, never a read out of range)
    n = ft.make_size_param("n")
    y = ft.make_placeholder("y", (n, 3), np.float64)
    lazy = y[index]
    program = ft.compile(lazy)
    for rows in (4, 2, 0):
        data = np.arange(rows * 3.0).reshape(rows, 3)
        try:
            want = data[want_index]
        except IndexError:
            with pytest.raises(IndexError, match="out of"):
                ft.evaluate_numpy(lazy, y=data)
            with pytest.raises(IndexError, match="out of range"):
                program(y=data)
            continue
        np.testing.assert_array_equal(ft.evaluate_numpy(lazy, y=data), want)
        np.testing.assert_array_equal(program(y=data), want)


@pytest.mark.parametrize("index, exc, msg", [
    (IX[N - 1:0:-1], IndexError, "cannot be proven non-negative"),
    (IX[1:N + 1], IndexError, "cannot be proven.*ftlazy clamps only integer"),
])
def test_symbolic_errors(index, exc, msg):
    x = ft.make_placeholder("x", (N,), np.float64)
    with pytest.raises(exc, match=msg):
        x[index]


@pytest.mark.parametrize("index, exc, msg", [
    (IX[4], IndexError, "index 4 is out of bounds for axis 0 with size 4"),
    (IX[-5], IndexError, "index -5 is out of bounds for axis 0 with size 4"),
    (IX[0, 5], IndexError, "index 5 is out of bounds for axis 1 with size 5"),
    (IX[1, 2, 3, 4], IndexError, "too many indices.*3-dimensional, but 4"),
    (IX[..., 1, ...], IndexError, "single ellipsis"),
    (IX[1.0], IndexError, "only integers"),
    (IX["a"], IndexError, "only integers"),
    (IX[[1.5]], IndexError, "only integers"),
    (IX[1:2.0], TypeError, "slice stop must be an integer"),
    (IX[::0], ValueError, "slice step cannot be zero"),
    (IX[True], TypeError, "boolean mask indexing is not supported"),
    (IX[np.array([True, False, True, True])], TypeError,
     "boolean mask indexing is not supported"),
    (IX[[0, 4]], IndexError, "index 4 is out of bounds for axis 0 with size 4"),
    (IX[:, [-6]], IndexError, "index -6 is out of bounds for axis 1 with size 5"),
    (IX[[0, 1], [0, 1, 2]], IndexError, r"shape mismatch.*\(2,\) \(3,\)"),
])
def test_index_errors(index, exc, msg):
    with pytest.raises(exc, match=msg):
        X[index]
    # numpy agrees on the exception type (except where ftlazy is stricter)
    if exc is not TypeError:
        with pytest.raises(exc):
            XV[index]


def test_lazy_mask_and_float_arrays_rejected():
    mask = ft.make_placeholder("mask", (4,), np.bool_)
    with pytest.raises(TypeError, match="boolean mask indexing is not supported"):
        X[mask]
    f = ft.make_placeholder("f", (4,), np.float64)
    with pytest.raises(IndexError, match="float64"):
        X[f]


@pytest.mark.parametrize("indices, axis", [
    ([0, 2], 0), ([[1, -1]], 1), (3, 2), ([], 0), ([5, 0], None), (-1, -1),
])
def test_take(indices, axis):
    check(ft.take(X, indices, axis), np.take(XV, indices, axis), x=XV)


def test_take_lazy_and_errors():
    idx = ft.make_placeholder("idx", (3,), np.int64)
    iv = np.array([2, 0, -1])
    check(ft.take(X, idx, axis=1), np.take(XV, iv, axis=1), x=XV, idx=iv)
    with pytest.raises(IndexError, match="out of bounds for axis 0 with size 4"):
        ft.take(X, [4], axis=0)
    with pytest.raises(IndexError, match="index 120 is out of bounds"):
        ft.take(X, [0, 120])
    with pytest.raises(np.exceptions.AxisError, match="axis 3 is out of bounds"):
        ft.take(X, [0], axis=3)


# {{{ random index tuples

def _slices(n):
    bound = st.one_of(st.none(), st.integers(-n - 2, n + 2))
    step = st.one_of(st.none(), st.integers(-3, 3).filter(lambda s: s != 0))
    return st.builds(slice, bound, bound, step)


@st.composite
def index_tuples(draw):
    # every int in [-4, 4) is in range for each axis of (4, 5, 6)
    entries = [draw(st.one_of(st.integers(-4, 3), _slices(6)))
               for _ in range(draw(st.integers(0, 3)))]
    for _ in range(draw(st.integers(0, 2))):
        entries.insert(draw(st.integers(0, len(entries))), None)
    if draw(st.booleans()):
        entries.insert(draw(st.integers(0, len(entries))), Ellipsis)
    return tuple(entries)


@settings(max_examples=100, derandomize=True, deadline=None)
@given(index_tuples())
def test_random_basic_indices(index):
    check(X[index], XV[index], x=XV)

# }}}


def test_a_position_computed_from_a_symbolic_length():
    # (y[y.shape[0] // 2] was refused when built, "not an affine
    # expression"; the position is read at run time and checked)
    n = ft.make_size_param("n")
    y = ft.make_placeholder("y", (n, 2), np.float64)
    lazy = y[y.shape[0] // 2] + y[(n - 1) // 3]
    program = ft.compile(lazy)
    for rows in (5, 1):
        data = np.arange(rows * 2.0).reshape(rows, 2)
        want = data[rows // 2] + data[(rows - 1) // 3]
        np.testing.assert_array_equal(program(y=data), want)
        np.testing.assert_array_equal(ft.evaluate_numpy(lazy, y=data), want)
    with pytest.raises(IndexError, match="out of"):
        program(y=np.zeros((0, 2)))
    # (a length must stay affine)
    with pytest.raises(ValueError, match="not an affine expression"):
        y[:y.shape[0] // 2]
