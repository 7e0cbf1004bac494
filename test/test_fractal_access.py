# SPDX-License-Identifier: MIT
"""Access operations on the outer list of FractalTensors (``xs[i]``,
``xs[a:b:c]``, ``ft.gather``, ``ft.join``, ``ft.product``, ``ft.repeat``,
``ft.filter``) and the data-dependent sizes behind them.

Every result is checked against per-element numpy (Python list indexing of
the nested input) through both :data:`EVALUATORS`: ``ft.evaluate_numpy``
and ``ft.compile``. Each test builds its DAG once and calls the program on
several inputs, so that a compiled program is built once per test.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ftlazy as ft
from ftlazy.fractal_tensor import Jagged

J = ft.JaggedArray


# {{{ evaluation paths and references

def numpy_program(result: Any) -> Callable[..., Any]:
    return functools.partial(ft.evaluate_numpy, result)


def compiled_program(result: Any) -> Callable[..., Any]:
    return ft.compile(result)


#: ``prepare(result)`` gives ``program(**inputs)``
EVALUATORS = [numpy_program, compiled_program]


@pytest.fixture(params=EVALUATORS, ids=lambda e: e.__name__)
def prepare(request):
    return request.param


def seqs(lengths: list[int], elem_shape: tuple[int, ...] = (2,),
         dtype: Any = np.float64, seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.standard_normal((n, *elem_shape)).astype(dtype) for n in lengths]


def docs(doc_lengths: list[list[int]], elem_shape: tuple[int, ...] = (2,),
         seed: int = 0) -> list[list[np.ndarray]]:
    rng = np.random.default_rng(seed)
    return [[rng.standard_normal((n, *elem_shape)) for n in doc]
            for doc in doc_lengths]


def same(actual: Any, expected: Any) -> None:
    """*actual* (numpy array or JaggedArray) equals the nested list or
    array *expected*, exactly."""
    if isinstance(actual, J):
        actual = actual.tolist()
    if isinstance(expected, list):
        assert isinstance(actual, list), actual
        assert len(actual) == len(expected), (len(actual), len(expected))
        for a, e in zip(actual, expected):
            same(a, e)
        return
    actual, expected = np.asarray(actual), np.asarray(expected)
    assert actual.shape == expected.shape, (actual.shape, expected.shape)
    assert actual.dtype == expected.dtype, (actual.dtype, expected.dtype)
    np.testing.assert_array_equal(actual, expected)


#: depth-2 batches (outer lengths and element lengths), empty ones included
BATCHES = [[3, 0, 1, 4], [], [0, 0], [5], [0, 2, 2]]
DOCS = [[[2, 0, 1], [], [0], [3, 4]], [], [[], []], [[4]]]


@pytest.fixture
def xs():
    return ft.make_jagged_placeholder("xs", (2,), np.float64, depth=2)


@pytest.fixture
def ds():
    return ft.make_jagged_placeholder("ds", (2,), np.float64, depth=3)

# }}}


# {{{ xs[i]

def test_element_lazy_index_depth2(prepare, xs):
    i = ft.make_placeholder("i", (), np.int64)
    prog = prepare(xs[i])
    for lengths in BATCHES:
        data = seqs(lengths)
        for k in range(-len(data), len(data)):
            same(prog(xs=data, i=np.int64(k)), data[k])


@pytest.mark.parametrize("k", [0, 2, -1])
def test_element_int_index_depth2(prepare, xs, k):
    prog = prepare(xs[k])
    for lengths in ([3, 0, 1, 4], [0, 7, 0]):
        data = seqs(lengths)
        same(prog(xs=data), data[k])


def test_element_depth3_is_a_jagged_of_depth2(prepare, ds):
    i = ft.make_placeholder("i", (), np.int64)
    elem = ds[i]
    assert isinstance(elem, ft.Jagged) and elem.depth == 2
    prog = prepare(elem)
    for doc_lengths in DOCS:
        data = docs(doc_lengths)
        for k in range(-len(data), len(data)):
            result = prog(ds=data, i=np.int64(k))
            assert result.depth == 2
            same(result, data[k])


def test_element_index_of_another_dtype(prepare, xs):
    i = ft.make_placeholder("i", (), np.int32)
    prog = prepare(xs[i])
    data = seqs([1, 2, 3])
    same(prog(xs=data, i=np.int32(-2)), data[1])


@pytest.mark.parametrize("k", [3, -4, 100])
def test_element_out_of_range_lazy(prepare, xs, k):
    i = ft.make_placeholder("i", (), np.int64)
    prog = prepare(xs[i])
    with pytest.raises(IndexError, match=f"index {k} is out of range for an "
                       "outer list of 3 elements"):
        prog(xs=seqs([1, 2, 3]), i=np.int64(k))


def test_element_of_an_empty_list(prepare, xs):
    prog = prepare(xs[0])
    with pytest.raises(IndexError, match="of 0 elements"):
        prog(xs=J(np.zeros((0, 2)), np.zeros(1, np.int64)))


def test_element_out_of_range_known_at_build_time():
    x = ft.make_placeholder("x", (3,), np.float64)
    xss, _ = ft.product(x, x)  # a list of 3 elements, a static length
    xv = np.array([1.0, 2.0, 3.0])
    same(ft.evaluate_numpy(xss[-1], x=xv), np.full(3, 3.0))
    with pytest.raises(IndexError, match="index 3 is out of range"):
        xss[3]
    with pytest.raises(IndexError, match="index -4 is out of range"):
        xss[-4]


@pytest.mark.parametrize("index, error, match", [
    (1.0, TypeError, "float"),
    (True, TypeError, "bool"),
    ((0, 1), TypeError, "tuple"),
    (np.array([0, 1]), TypeError, "ft.gather"),
    ("a", TypeError, "integer"),
    (slice(0.5, 2), TypeError, "Python ints"),
    (slice(None, None, 0), ValueError, "zero"),
    (ft.make_jagged_placeholder("k", (), np.int64, depth=2), TypeError,
     "FractalTensor is not an index"),
])
def test_bad_index(xs, index, error, match):
    with pytest.raises(error, match=match):
        xs[index]


def test_float_lazy_index_names_the_dtype(xs):
    with pytest.raises(TypeError, match="integer dtype, got float64"):
        xs[ft.make_placeholder("i", (), np.float64)]


def test_same_definitions_share_their_size(prepare, xs):
    a, b = xs[1], xs[1]
    assert a.shape == b.shape
    prog = prepare(a * 2 + b)
    data = seqs([2, 3])
    same(prog(xs=data), data[1] * 3)

# }}}


# {{{ slices

SLICES = [slice(1, 3), slice(None, None, -1), slice(-3, None), slice(1, None, 2),
          slice(5, 1, -2), slice(10, 20), slice(None, -1), slice(-100, 2, 3)]


@pytest.mark.parametrize("s", SLICES, ids=str)
def test_slice_depth2(prepare, xs, s):
    prog = prepare(xs[s])
    for lengths in BATCHES:
        data = seqs(lengths)
        result = prog(xs=data)
        assert result.depth == 2
        same(result, data[s])


@pytest.mark.parametrize("s", [slice(1, None), slice(None, None, -2)], ids=str)
def test_slice_depth3(prepare, ds, s):
    prog = prepare(ds[s])
    for doc_lengths in DOCS:
        data = docs(doc_lengths)
        same(prog(ds=data), data[s])


@settings(max_examples=60, deadline=None)
@given(lengths=st.lists(st.integers(0, 4), max_size=7),
       start=st.none() | st.integers(-9, 9), stop=st.none() | st.integers(-9, 9),
       step=st.none() | st.integers(-3, 3).filter(bool))
def test_slice_hypothesis_numpy(lengths, start, stop, step):
    xs = ft.make_jagged_placeholder("xs", (2,), np.float64, depth=2)
    s = slice(start, stop, step)
    data = seqs(lengths)
    same(ft.evaluate_numpy(xs[s], xs=data), data[s])


def test_slice_of_a_slice(prepare, xs):
    prog = prepare(xs[1:][::-1][1:])
    for lengths in BATCHES:
        data = seqs(lengths)
        same(prog(xs=data), data[1:][::-1][1:])

# }}}


# {{{ gather

@functools.lru_cache(maxsize=None)
def _gather_program(prepare: Callable) -> Callable:
    xs = ft.make_jagged_placeholder("xs", (2,), np.float64, depth=2)
    idx = ft.make_placeholder("idx", (ft.make_size_param("k"),), np.int64)
    return prepare(ft.gather(xs, idx))


@pytest.mark.parametrize("evaluator", EVALUATORS, ids=lambda e: e.__name__)
@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_gather_hypothesis(evaluator, data):
    lengths = data.draw(st.lists(st.integers(0, 5), max_size=6))
    n = len(lengths)
    idx = data.draw(st.lists(st.integers(-n, n - 1), max_size=8)) if n else []
    batch = seqs(lengths)
    result = _gather_program(evaluator)(xs=batch, idx=np.array(idx, np.int64))
    same(result, [batch[k] for k in idx])
    if not idx:
        assert result.values.shape == (0, 2)


def test_gather_depth3(prepare, ds):
    idx = ft.make_placeholder("idx", (ft.make_size_param("k"),), np.int64)
    prog = prepare(ft.gather(ds, idx))
    for doc_lengths, idx_value in [(DOCS[0], [3, 0, 3, -3]), (DOCS[2], [1]),
                                   (DOCS[0], [])]:
        data = docs(doc_lengths)
        same(prog(ds=data, idx=np.array(idx_value, np.int64)),
             [data[k] for k in idx_value])


def test_gather_constant_indices_and_out_of_range(prepare, xs):
    prog = prepare(ft.gather(xs, [2, -1, 0]))
    data = seqs([1, 2, 3])
    same(prog(xs=data), [data[2], data[-1], data[0]])
    with pytest.raises(IndexError, match="ft.gather: index 2 is out of range "
                       "for an outer list of 2 elements"):
        prog(xs=seqs([1, 2]))


@pytest.mark.parametrize("indices, axis, error, match", [
    (np.array([0.0]), 0, TypeError, "integer dtype"),
    (np.zeros((1, 1), np.int64), 0, ValueError, "1-D"),
    (np.array([0]), 1, ValueError, "axis"),
])
def test_gather_bad_arguments(xs, indices, axis, error, match):
    with pytest.raises(error, match=match):
        ft.gather(xs, indices, axis=axis)

# }}}


# {{{ join

def test_join_depth2(prepare, xs):
    ys = ft.make_jagged_placeholder("ys", (2,), np.float64, depth=2)
    prog = prepare(ft.join(xs, ys))
    for a, b in [([3, 0], [1, 4]), ([], [2]), ([2], []), ([], [])]:
        xd, yd = seqs(a, seed=1), seqs(b, seed=2)
        same(prog(xs=xd, ys=yd), xd + yd)


def test_map_over_a_join(prepare, xs):
    # (the joined offsets, which the map's extents read, shift the second
    # list's by the first one's number of rows)
    ys = ft.make_jagged_placeholder("ys", (2,), np.float64, depth=2)
    prog = prepare(ft.map(lambda s: ft.amax(s, axis=0, initial=-5.0),
                          ft.join(xs, ys)))
    for a, b in [([3, 0], [1, 4]), ([], [2]), ([2], []), ([], [])]:
        xd, yd = seqs(a, seed=1), seqs(b, seed=2)
        want = np.array([np.max(s, axis=0, initial=-5.0) for s in xd + yd])
        np.testing.assert_array_equal(prog(xs=xd, ys=yd),
                                      want.reshape(-1, 2))


def test_join_depth3_with_a_slice(prepare, ds):
    prog = prepare(ft.join(ds[1:], ds))
    for doc_lengths in DOCS:
        data = docs(doc_lengths)
        same(prog(ds=data), data[1:] + data)


def test_lengths_of_a_join_read_only_offsets(prepare, xs, ds):
    # (the second list's offsets shift by the first's last offset: no size
    # of the values, which the program does not read, is needed)
    ys = ft.make_jagged_placeholder("ys", (2,), np.float64, depth=2)
    prog = prepare(ft.lengths(ft.join(xs, ys)))
    for a, b in [([3, 0], [1, 4]), ([], [2]), ([2], []), ([], [])]:
        np.testing.assert_array_equal(
            prog(xs=seqs(a, seed=1), ys=seqs(b, seed=2)), a + b)
    twice = prepare(ft.lengths(ft.join(ds, ds)[1:]))
    for doc_lengths in DOCS:
        want = [len(d) for d in doc_lengths * 2][1:]
        np.testing.assert_array_equal(twice(ds=docs(doc_lengths)), want)


def test_join_arrays(prepare):
    x = ft.make_placeholder("x", (ft.make_size_param("n"), 2), np.float64)
    prog = prepare(ft.join(x, x[::-1]))
    xv = np.arange(6.0).reshape(3, 2)
    same(prog(x=xv), np.concatenate([xv, xv[::-1]]))


def test_join_structure_errors_name_both(xs, ds):
    ys = ft.make_jagged_placeholder("ys", (3,), np.float64, depth=2)
    zs = ft.make_jagged_placeholder("zs", (2,), np.float32, depth=2)
    with pytest.raises(ValueError, match="xs is a FractalTensor of depth 2.*ys "
                       "is a FractalTensor of depth 3"):
        ft.join(xs, ds)
    with pytest.raises(ValueError, match=r"elem_shape \(2,\).*elem_shape \(3,\)"):
        ft.join(xs, ys)
    with pytest.raises(TypeError, match="dtype float64.*dtype float32"):
        ft.join(xs, zs)
    with pytest.raises(ValueError, match="an array"):
        ft.join(xs, ft.make_placeholder("a", (4, 2), np.float64))
    with pytest.raises(TypeError, match="FractalTensor or an array"):
        ft.join(xs, object())

# }}}


# {{{ product and repeat

def test_product_of_arrays(prepare):
    n = ft.make_size_param("n")
    x = ft.make_placeholder("x", (n, 2), np.float64)
    y = ft.make_placeholder("y", (ft.make_size_param("m"),), np.int32)
    xss, yss = ft.product(x, y)
    assert xss.depth == yss.depth == 2
    px, py = prepare(xss), prepare(yss)
    for nv, mv in [(3, 2), (0, 2), (2, 0), (1, 1)]:
        xv = np.arange(2.0 * nv).reshape(nv, 2)
        yv = np.arange(mv, dtype=np.int32) * 10
        same(px(x=xv, y=yv), [np.stack([xv[i]] * mv) if mv else
                              np.zeros((0, 2)) for i in range(nv)])
        same(py(x=xv, y=yv), [yv.copy() for _ in range(nv)])


def test_product_of_fractal_tensors(prepare, xs):
    ys = ft.make_jagged_placeholder("ys", (2,), np.float64, depth=2)
    xss, yss = ft.product(xs, ys[::-1])
    assert xss.depth == yss.depth == 3
    px, py = prepare(xss), prepare(yss)
    for a, b in [([3, 0, 1], [2, 1]), ([], [1]), ([2], [])]:
        xd, yd = seqs(a, seed=1), seqs(b, seed=2)
        inputs = dict(xs=xd, ys=yd)
        same(px(**inputs), [[x] * len(yd) for x in xd])
        same(py(**inputs), [yd[::-1] for _ in xd])


def test_repeat_array_lazy_count(prepare):
    x = ft.make_placeholder("x", (ft.make_size_param("L"), 2), np.float64)
    k = ft.make_placeholder("k", (), np.int64)
    prog = prepare(ft.repeat(x, k))
    for lv, kv in [(3, 2), (0, 3), (2, 0)]:
        xv = np.arange(2.0 * lv).reshape(lv, 2)
        same(prog(x=xv, k=np.int64(kv)), [xv] * kv)
    with pytest.raises(ValueError, match="negative"):
        prog(x=np.zeros((1, 2)), k=np.int64(-1))


def test_repeat_fractal_tensor_and_size_param(prepare, xs):
    n = ft.make_size_param("n")
    result = ft.repeat(xs, n)
    assert result.depth == 3
    prog = prepare(result)
    for lengths, nv in [([3, 0, 1], 2), ([], 3), ([2], 0)]:
        data = seqs(lengths)
        same(prog(xs=data, n=nv), [data] * nv)


def test_repeat_scalar_and_element(prepare, xs):
    prog = prepare(ft.repeat(ft.sum(xs[1], axis=0), 3))
    data = seqs([1, 4])
    same(prog(xs=data), np.stack([data[1].sum(axis=0)] * 3))
    scalar = prepare(ft.repeat(ft.sum(xs[0]), 2))
    same(scalar(xs=data), np.full(2, data[0].sum()))


@pytest.mark.parametrize("n, error", [(-1, ValueError), (1.5, TypeError),
                                      (True, TypeError)])
def test_repeat_bad_count(xs, n, error):
    with pytest.raises(error, match="repeat: n"):
        ft.repeat(xs, n)

# }}}


# {{{ filter

def test_filter_sequence(prepare):
    seq = ft.make_placeholder("seq", (ft.make_size_param("L"), 2), np.float64)
    prog = prepare(ft.filter(lambda row: ft.sum(row) > 0, seq))
    rng = np.random.default_rng(3)
    for length in [6, 0, 1]:
        sv = rng.standard_normal((length, 2))
        same(prog(seq=sv), sv[sv.sum(axis=1) > 0])
    same(prog(seq=-np.ones((3, 2))), np.zeros((0, 2)))


def test_filter_fractal_tensor_elements(prepare, xs):
    prog = prepare(ft.filter(lambda s: ft.sum(s) > 0, xs))
    for lengths in BATCHES:
        data = seqs(lengths)
        same(prog(xs=data), [s for s in data if s.sum() > 0])


def test_filter_bad_predicates(xs):
    seq = ft.make_placeholder("seq", (4, 2), np.float64)
    with pytest.raises(TypeError, match="0-d bool"):
        ft.filter(lambda row: ft.sum(row), seq)
    with pytest.raises(TypeError, match="0-d bool"):
        ft.filter(lambda row: row > 0, seq)
    with pytest.raises(TypeError, match="callable"):
        ft.filter(3, seq)
    with pytest.raises(ValueError, match="0-d array"):
        ft.filter(lambda v: v > 0, ft.asarray(1.0))

# }}}


# {{{ results in further operations

def test_results_in_leafwise_ops_sums_and_maps(prepare, xs):
    i = ft.make_placeholder("i", (), np.int64)
    results = {
        "leafwise": xs[1:3] * 2,
        "sum": ft.sum(xs[i]),
        "map": ft.map(lambda s: ft.sum(s, axis=0), xs[::-1]),
        "map_of_gather": ft.map(lambda s: ft.sum(s), ft.gather(xs, [0, 0])),
        "filter_then_map": ft.map(lambda s: ft.sum(s),
                                  ft.filter(lambda s: ft.sum(s) > 0, xs)),
    }
    progs = {k: prepare(r) for k, r in results.items()}
    for lengths in ([3, 0, 1, 4], [2, 1]):
        data = seqs(lengths)
        inputs = dict(xs=data, i=np.int64(-1))
        same(progs["leafwise"](xs=data), [s * 2 for s in data[1:3]])
        np.testing.assert_allclose(progs["sum"](**inputs), data[-1].sum())
        np.testing.assert_allclose(progs["map"](xs=data), np.stack(
            [s.sum(axis=0) for s in data[::-1]]))
        np.testing.assert_allclose(progs["map_of_gather"](xs=data),
                                   [data[0].sum()] * 2)
        np.testing.assert_allclose(
            progs["filter_then_map"](xs=data),
            np.array([s.sum() for s in data if s.sum() > 0]).reshape(-1))


def test_derived_sizes_are_not_inputs(prepare, xs):
    prog = prepare(xs[0])
    with pytest.raises(ValueError, match="unexpected input") as info:
        prog(xs=seqs([1]), _ft_dyn0=1)
    assert "_ft_dyn" not in str(info.value).split("inputs are")[1]
    with pytest.raises(ValueError, match="missing input") as info:
        prog()
    assert "_ft_" not in str(info.value)


def test_arrays_shaped_by_a_derived_size_alone(prepare, xs):
    # (ft.ones(xs[1].shape[0]) reads no array of that size: it binds the
    # size's definition, so that the program computes it; it said
    # "unexpected input 'xs'", its only input being the size)
    n = xs[1].shape[0]
    result = ft.make_dict_of_named_arrays({
        "ones": ft.sum(ft.ones(n)), "arange": ft.arange(n),
        "eye": ft.sum(ft.eye(n)) + ft.sum(ft.full((n, 2), 2.0)),
        "broadcast": ft.broadcast_to(ft.ones(2), (n, 2))})
    prog = prepare(result)
    for lengths in ([2, 4], [0, 0, 1]):
        k = lengths[1]
        got = prog(xs=seqs(lengths))
        same(got["ones"], np.float64(k))
        same(got["arange"], np.arange(k))
        same(got["eye"], np.float64(k + 4 * k))
        same(got["broadcast"], np.ones((k, 2)))
    with pytest.raises(IndexError):
        prog(xs=seqs([3]))


@pytest.mark.parametrize("loop", ["fold", "map"])
def test_loop_bodies_shaped_by_a_derived_size_alone(prepare, xs, loop):
    # (a size the body computes from its parameters is bound per step: an
    # array of that shape stays in the body, not computed once outside)
    steps = ft.arange(xs.length)
    if loop == "fold":
        result = ft.fold(lambda c, t: c + ft.sum(ft.ones(xs[t].shape[0])),
                         steps, ft.zeros(()))
    else:
        result = ft.map(lambda t: ft.sum(ft.arange(xs[t].shape[0])), steps)
    if prepare is compiled_program:
        # (an array of an element's length alone: built per step, by a map
        # over the lengths the steps read, which runs on the host)
        with pytest.warns(ft.HostEvaluationWarning, match="data-dependent size"):
            prog = prepare(result)
    else:
        prog = prepare(result)
    for lengths in BATCHES:
        got = prog(xs=seqs(lengths))
        if loop == "fold":
            same(got, np.float64(sum(lengths)))
        else:
            same(got, np.array([k * (k - 1) // 2 for k in lengths], np.int64))


def test_filter_inside_a_map_body():
    xs = ft.make_jagged_placeholder("xs", (), np.float64, depth=2)
    result = ft.map(lambda s: ft.sum(ft.filter(lambda v: v > 0, s)), xs)
    data = [np.array([1.0, -2.0, 3.0]), np.array([]), np.array([-1.0])]
    np.testing.assert_allclose(ft.evaluate_numpy(result, xs=data), [4.0, 0, 0])
    # (compiled as a zip with the kept rows: test_codegen_jagged_counted.py)
    np.testing.assert_allclose(ft.compile(result)(xs=data), [4.0, 0, 0])


def test_map_results_of_data_dependent_length():
    # over a FractalTensor: a FractalTensor of the kept rows per element
    xs = ft.make_jagged_placeholder("xs", (), np.float64, depth=2)
    result = ft.map(lambda s: ft.filter(lambda v: v > 0, s), xs)
    got = ft.evaluate_numpy(result, xs=[np.array([1.0, -2.0]), np.array([3.0])])
    assert [g.tolist() for g in got.tolist()] == [[1.0], [3.0]]
    # over an array's rows (a bundle of arrays): a FractalTensor too
    xs = ft.make_placeholder("xs", (3, 2), np.float64)
    result = ft.map(lambda d: ft.filter(lambda v: v > d["t"], d["a"]),
                    {"a": xs, "t": ft.make_placeholder("t", (3,), np.float64)})
    got = ft.evaluate_numpy(result, xs=np.array([[1.0, -2.0], [3.0, 4.0],
                                                 [0.0, 0.0]]),
                            t=np.array([0.0, 3.5, 1.0]))
    assert [g.tolist() for g in got.tolist()] == [[1.0], [4.0], []]
    # a scan whose carry changes length per step: refused
    with pytest.raises(ValueError, match="changes the shape of carry 0"):
        ft.scan(lambda c, v: ft.filter(lambda r: r > v, c), ft.zeros(2),
                ft.zeros(3))


def test_map_over_rows_returning_lists_of_data_dependent_length():
    # over an array (n, m, H): a FractalTensor of n elements of length m,
    # so the kept rows of each are a FractalTensor (a zipped per-row
    # threshold, and a dense result next to it)
    H = 2
    n, m = ft.make_size_param("n"), ft.make_size_param("m")
    xs = ft.make_placeholder("xs", (n, m, H), np.float64)
    w = ft.make_placeholder("w", (n,), np.float64)

    def body(s, wi):
        kept = ft.filter(lambda r: ft.sum(r) > wi, s)
        return kept * 2.0, ft.sum(kept, axis=0)
    lists, sums = ft.map(body, xs, w)
    assert isinstance(lists, Jagged) and lists.depth == 2
    result = ft.make_dict_of_named_arrays(
        {"values": lists.values, "offsets": lists.offsets[0], "sums": sums})
    compiled = ft.compile(result)
    rng = np.random.default_rng(4)
    for shape in [(4, 5), (1, 1), (0, 3), (3, 0)]:
        x = rng.standard_normal(shape + (H,))
        wx = rng.standard_normal(shape[0]) * 0.5
        want = [r[r.sum(axis=1) > t] for r, t in zip(x, wx)]
        for got in (compiled(xs=x, w=wx), ft.evaluate_numpy(result, xs=x, w=wx)):
            np.testing.assert_allclose(
                got["values"], 2.0 * np.concatenate(want + [np.zeros((0, H))]))
            np.testing.assert_array_equal(
                got["offsets"], np.cumsum([0] + [len(k) for k in want]))
            np.testing.assert_allclose(
                got["sums"], np.reshape([k.sum(axis=0) for k in want],
                                        (shape[0], H)))

# }}}


def test_messages_say_what_ftlazys_size_names_mean(xs):
    # (two elements of different lengths; a stride over an element's
    # symbolic length: the names ftlazy made are explained)
    i = ft.make_placeholder("i", (), np.int64)
    with pytest.raises(ValueError, match=r"_ft_dyn\d+, _ft_dyn\d+: a size "
                       "computed from the data at run time"):
        xs[i] + xs[0]
    with pytest.raises(ValueError, match=r"_ft_elem0_L: a size of the "
                       "element of the FractalTensor a loop runs over"):
        ft.map(lambda s: s[1:] + s, xs)
