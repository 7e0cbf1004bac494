# SPDX-License-Identifier: MIT
"""Maps over FractalTensors compiled through OpenCL, against per-segment
numpy loops (and the reference evaluator)."""

from __future__ import annotations

import re

import numpy as np
import pytest

import ftlazy as ft
from helpers import JAGGED_LENGTHS as LENGTHS

H = 3


def batch(lengths, seed=0, dtype=np.float64):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal((n, H)).astype(dtype) for n in lengths]


@pytest.fixture
def xs():
    return ft.make_jagged_placeholder("xs", (H,), np.float64, depth=2)


def assert_jagged(actual, expected_list, elem_shape):
    assert isinstance(actual, ft.JaggedArray)
    assert len(actual) == len(expected_list)
    for got, want in zip(actual.tolist(), expected_list):
        assert got.shape == (len(want),) + elem_shape
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def softmax(s):
    e = np.exp(s - s.max(axis=0))
    return e / e.sum(axis=0)


DENSE_RESULTS = {
    "sum": (lambda s: ft.sum(s, axis=0), lambda s: s.sum(axis=0), "mixed"),
    "max": (lambda s: ft.amax(s, axis=0), lambda s: s.max(axis=0), "nonempty"),
    "min_abs": (lambda s: ft.amin(abs(s), axis=0), lambda s: abs(s).min(axis=0),
                "nonempty"),
    "sum_of_squares": (lambda s: ft.sum(s * s), lambda s: (s * s).sum(), "mixed"),
    "first_minus_sum": (lambda s: ft.sum(s[1:], axis=0) - ft.sum(s[:-1], axis=0),
                        lambda s: s[1:].sum(axis=0) - s[:-1].sum(axis=0),
                        "nonempty"),
}


@pytest.mark.parametrize("name", list(DENSE_RESULTS))
@pytest.mark.parametrize("lengths", ["mixed", "nonempty", "empty_batch"])
def test_map_with_dense_results(xs, name, lengths):
    body, reference, needs = DENSE_RESULTS[name]
    if needs == "nonempty" and lengths == "mixed":
        pytest.skip("needs non-empty sequences")
    data = batch(LENGTHS[lengths])
    result = ft.map(body, xs)
    got = ft.compile(result)(xs=data)
    want = np.array([reference(s) for s in data]).reshape(
        (len(data),) + tuple(result.shape[1:]))
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


JAGGED_RESULTS = {
    "scaled_plus_mean": (lambda s: s * 2 + ft.sum(s, axis=0),
                         lambda s: s * 2 + s.sum(axis=0), "mixed"),
    "softmax": (lambda s: ft.exp(s - ft.amax(s, axis=0))
                / ft.sum(ft.exp(s - ft.amax(s, axis=0)), axis=0),
                softmax, "nonempty"),
    "differences": (lambda s: s[1:] - s[:-1], lambda s: s[1:] - s[:-1],
                    "nonempty"),
    "doubled": (lambda s: ft.concatenate([s, s]),
                lambda s: np.concatenate([s, s]), "mixed"),
}


@pytest.mark.parametrize("name", list(JAGGED_RESULTS))
@pytest.mark.parametrize("lengths", ["mixed", "nonempty", "empty_batch"])
def test_map_with_jagged_results(xs, name, lengths):
    body, reference, needs = JAGGED_RESULTS[name]
    if needs == "nonempty" and lengths == "mixed":
        pytest.skip("needs non-empty sequences")
    data = batch(LENGTHS[lengths])
    result = ft.map(body, xs)
    got = ft.compile(result)(xs=data)
    assert_jagged(got, [reference(s) for s in data], (H,))
    assert got.equals(ft.evaluate_numpy(result, xs=data)) or all(
        np.allclose(a, b) for a, b in zip(got.tolist(),
                                          ft.evaluate_numpy(result, xs=data).tolist()))


def test_leafwise_projection_and_lengths(xs):
    w = ft.make_placeholder("w", (H, 2), np.float64)
    b = ft.make_placeholder("b", (2,), np.float64)
    data = batch(LENGTHS["mixed"])
    rng = np.random.default_rng(3)
    w_data, b_data = rng.standard_normal((H, 2)), rng.standard_normal(2)
    got = ft.compile(ft.tanh(xs @ w + b))(xs=data, w=w_data, b=b_data)
    assert_jagged(got, [np.tanh(s @ w_data + b_data) for s in data], (2,))
    lengths = ft.compile(ft.lengths(xs))(xs=data)
    np.testing.assert_array_equal(lengths, LENGTHS["mixed"])


def test_map_with_captured_weights_and_zipped_dense(xs):
    w = ft.make_placeholder("w", (H, H), np.float64)
    scale = ft.make_placeholder("scale", (ft.make_size_param("m"), H), np.float64)
    result = ft.map(lambda s, c: ft.sum(ft.tanh(s @ w) * c, axis=0), xs, scale)
    rng = np.random.default_rng(4)
    w_data, c_data = rng.standard_normal((H, H)), rng.standard_normal((5, H))
    data = batch(LENGTHS["mixed"])
    got = ft.compile(result)(xs=data, w=w_data, scale=c_data)
    want = [np.tanh(s @ w_data).sum(axis=0) * c for s, c in zip(data, c_data)]
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    with pytest.raises(ValueError, match="zipped input 1 has 4 elements"):
        ft.compile(result)(xs=data, w=w_data, scale=c_data[:4])


def test_zipped_fractal_tensors_must_have_equal_lengths(xs):
    ys = ft.make_jagged_placeholder("ys", (H,), np.float64, depth=2)
    result = ft.map(lambda a, b: ft.sum(a * b, axis=0), xs, ys)
    data = batch(LENGTHS["mixed"])
    other = batch(LENGTHS["mixed"], seed=1)
    got = ft.compile(result)(xs=data, ys=other)
    np.testing.assert_allclose(got, [(a * b).sum(axis=0)
                                     for a, b in zip(data, other)])
    with pytest.raises(ValueError, match="different lengths at level 0"):
        ft.compile(result)(xs=data, ys=batch((3, 0, 2, 4, 1)))


def test_embedding_bag_checks_token_range():
    tokens = ft.make_jagged_placeholder("tokens", (), np.int64, depth=2)
    table = ft.make_placeholder("table", (10, H), np.float64)
    bags = ft.map(lambda t: ft.sum(ft.gather(table, t), axis=0), tokens)
    rng = np.random.default_rng(5)
    table_data = rng.standard_normal((10, H))
    ids = [np.array([1, 2, 9]), np.array([], dtype=np.int64), np.array([4, 4])]
    got = ft.compile(bags)(tokens=ids, table=table_data)
    np.testing.assert_allclose(got, [table_data[t].sum(axis=0) for t in ids],
                               atol=1e-12)
    with pytest.raises(IndexError, match="gather index 12 is out of range"):
        ft.compile(bags)(tokens=[np.array([1, 12])], table=table_data)


def test_run_time_errors(xs):
    with pytest.raises(ValueError, match="map over a FractalTensor 'xs', "
                       "element 1: zero-size array to reduction operation "
                       "maximum"):
        ft.compile(ft.map(lambda s: ft.amax(s, axis=0), xs))(
            xs=batch(LENGTHS["mixed"]))
    with pytest.raises(ValueError, match="element 1: .* which is negative"):
        ft.compile(ft.map(lambda s: s[1:] * 2, xs))(xs=batch(LENGTHS["mixed"]))
    with pytest.raises(ValueError, match="must start at 0"):
        ft.compile(ft.lengths(xs))(xs=ft.JaggedArray(np.zeros((3, H)),
                                                     np.array([1, 3])))


def test_one_program_for_every_length_distribution(xs):
    result = ft.map(lambda s: ft.sum(s, axis=0), xs)
    f = ft.compile(result)
    f(xs=batch((4, 1)))
    g = ft.compile(result)
    got = g(xs=batch((0, 7, 2, 9), seed=2))
    assert g.from_cache
    np.testing.assert_allclose(got, [s.sum(axis=0)
                                     for s in batch((0, 7, 2, 9), seed=2)])


def test_size_params_may_be_given_and_unknown_inputs_are_refused(xs):
    scale = ft.make_placeholder("scale", (ft.make_size_param("m"), H), np.float64)
    result = ft.map(lambda s, c: ft.sum(s * c, axis=0), xs, scale)
    data = batch(LENGTHS["mixed"])
    c_data = np.ones((5, H))
    f = ft.compile(result)
    np.testing.assert_allclose(f(xs=data, scale=c_data, m=5),
                               [s.sum(axis=0) for s in data])
    with pytest.raises(ValueError, match=r"unexpected input\(s\) 'bogus': "
                       r"the program's inputs are \['m', 'scale', 'xs'\]$"):
        f(xs=data, scale=c_data, bogus=1)


def test_messages_name_a_fractal_tensor_not_its_parts(xs):
    # (they listed xs_offsets0, xs_values, xs_n0 and xs_nnz)
    result = ft.map(lambda s: ft.sum(s, axis=0), xs)
    # (a body that reads nothing of its element: the number of elements
    # only, from the offsets; a KeyError when they were not given)
    constant = ft.map(lambda s: ft.zeros(H) + 1.0, xs)
    data = batch(LENGTHS["mixed"])
    for run in (ft.compile(result), lambda **kw: ft.evaluate_numpy(result, **kw),
                ft.compile(constant)):
        with pytest.raises(ValueError, match=r"missing input\(s\) 'xs'$"):
            run()
        with pytest.raises(ValueError, match=r"unexpected input\(s\) 'zz': the "
                           r"program's inputs are \['xs'\]$"):
            run(xs=data, zz=1)
    with pytest.raises(TypeError, match=r"stack: item 1: cannot use a "
                       r"FractalTensor .* with ft.map, .* ft.flatten"):
        ft.stack([ft.zeros(H), xs])
    with pytest.raises(TypeError, match="cannot use a FractalTensor"):
        ft.sum(xs, axis=0)
    with pytest.raises(TypeError, match="numpy.sum of a FractalTensor.*ft.map"):
        np.sum(xs)
    with pytest.raises(AttributeError, match="no shape.*ft.lengths"):
        xs.shape


# {{{ element lengths as values, amax initial=, integer max of lengths

def test_mean_over_lengths_clamped_to_one(xs):
    # int64 lengths against a Python int in maximum, divided into a map
    # result: the lengths' "- 1 * offsets[i]" used to be printed as -1.0
    # inside the (double) cast, and OpenCL's max(double, long) is ambiguous
    data = batch(LENGTHS["mixed"])
    counts = np.array([max(len(s), 1) for s in data])
    sums = np.array([s.sum(axis=0) for s in data])
    means = ft.map(lambda s: ft.sum(s, axis=0), xs) / ft.maximum(
        ft.lengths(xs), 1)[:, None]
    np.testing.assert_allclose(ft.compile(means)(xs=data), sums / counts[:, None],
                               rtol=1e-12, atol=1e-12)
    floors = ft.minimum(ft.lengths(xs) - 1, 2) * 0.5
    np.testing.assert_allclose(
        ft.compile(floors)(xs=data),
        np.minimum(np.array([len(s) for s in data]) - 1, 2) * 0.5)


def test_element_length_as_a_value_compiled(xs):
    data = batch(LENGTHS["nonempty"])
    means = ft.compile(ft.map(lambda s: ft.sum(s, axis=0) / s.shape[0], xs))(
        xs=data)
    scaled = ft.compile(ft.map(
        lambda s: s * (s.shape[0] - 1) + ft.arange(s.shape[0])[:, None], xs))(
        xs=data)
    np.testing.assert_allclose(means, [s.mean(axis=0) for s in data],
                               rtol=1e-12, atol=1e-12)
    assert_jagged(scaled, [s * (len(s) - 1) + np.arange(len(s))[:, None]
                           for s in data], (H,))


def test_extrema_with_initial_compiled(xs):
    data = batch(LENGTHS["mixed"])
    result = ft.map(lambda s: ft.amax(s, axis=0, initial=-np.inf)
                    - ft.amin(s, axis=0, initial=0.0), xs)
    want = [np.amax(s, axis=0, initial=-np.inf) - np.amin(s, axis=0, initial=0.0)
            for s in data]
    np.testing.assert_array_equal(ft.compile(result)(xs=data), np.array(want))


@pytest.mark.parametrize("dtype", [np.bool_, np.uint32, np.uint64])
def test_extrema_of_bool_and_wide_unsigned_sequences_compiled(dtype):
    # (bools: np.iinfo of the masked neutral element raised "Invalid integer
    # data type 'b'"; unsigned: see test_codegen_correctness)
    ys = ft.make_jagged_placeholder("ys", (3,), dtype, depth=2)
    rng = np.random.default_rng(5)
    data = [rng.integers(0, 2, (n, 3)).astype(dtype) for n in (2, 1, 5)]
    initial = True if dtype == np.bool_ else 1
    result = ft.map(lambda s: (ft.amax(s, axis=0), ft.amin(s, axis=0),
                               ft.amin(s, axis=0, initial=initial)), ys)
    for k, reference in enumerate((
            lambda s: np.amax(s, axis=0), lambda s: np.amin(s, axis=0),
            lambda s: np.amin(s, axis=0, initial=initial))):
        got = ft.compile(result[k])(ys=data)
        want = np.array([reference(s) for s in data])
        assert np.asarray(got).dtype == want.dtype
        np.testing.assert_array_equal(got, want)

# }}}


def test_compiled_structure_mismatch_names_both_inputs(xs):
    ys = ft.make_jagged_placeholder("ys", (H,), np.float64, depth=2)
    f = ft.compile(xs + ys)
    with pytest.raises(ValueError, match=r"'xs'.*'ys'|'ys'.*'xs'") as info:
        f(xs=batch((3, 0, 1)), ys=batch((3, 0, 2)))
    assert "leaf-wise" in str(info.value)


def test_one_result_of_a_map_with_several_results_compiles(xs):
    both = ft.map(lambda s: (ft.sum(s, axis=0), s * 2), xs)
    data = batch(LENGTHS["mixed"])
    np.testing.assert_allclose(ft.compile(both[0])(xs=data),
                               [s.sum(axis=0) for s in data])
    doubled = ft.compile(both[1])(xs=data)
    for got, s in zip(doubled.tolist(), data):
        np.testing.assert_allclose(got, s * 2)


def test_dense_result_of_one_map_zipped_into_another(xs):
    ys = ft.make_jagged_placeholder("ys", (H,), np.float64, depth=2)
    pooled = ft.map(lambda s: ft.sum(s, axis=0), xs)
    out = ft.map(lambda y, p: y + p, ys, pooled)
    x, y = batch((2, 0, 3)), batch((1, 2, 0), seed=1)
    f = ft.compile(out)
    for got, yy, xx in zip(f(xs=x, ys=y).tolist(), y, x):
        np.testing.assert_allclose(got, yy + xx.sum(axis=0))
    with pytest.raises(ValueError, match="2 elements.*'ys'.* has 3"):
        f(xs=batch((2, 1)), ys=y)


@pytest.mark.parametrize("body, row", [
    # (a row of the list's length, of a size parameter, of the flat rows)
    (lambda xs, y: lambda s: ft.sum(s) * ft.lengths(xs), lambda n, m, t: n),
    (lambda xs, y: lambda s: y @ ft.sum(s, axis=0), lambda n, m, t: m),
    (lambda xs, y: lambda s: ft.sum(s) + ft.flatten(xs)[:, 0],
     lambda n, m, t: t),
])
def test_rows_of_symbolic_shape_over_an_empty_batch(xs, body, row):
    # (no element gives the rows' shape: it is evaluated from the sizes)
    m = ft.make_size_param("m")
    y = ft.make_placeholder("y", (m, H), np.float64)
    result = ft.map(body(xs, y), xs)
    reads_y = "y" in {n.name for n in ft.analysis.get_inputs(result)}
    for data in ([], batch([2, 0, 1])):
        inputs = {"xs": data} | ({"y": np.ones((4, H))} if reads_y else {})
        want = (len(data), row(len(data), 4, sum(len(s) for s in data)))
        for got in (ft.compile(result)(**inputs),
                    ft.evaluate_numpy(result, **inputs)):
            assert got.shape == want


def test_dict_results_hold_fractal_tensors(xs):
    # (an LSTM's h and c per sequence from one program, next to arrays; a
    # FractalTensor 'h' beside results named 'h_values' and 'h_offsets0',
    # the names its parts would take)
    docs = ft.make_jagged_placeholder("docs", (H,), np.float64, depth=3)
    states = ft.map(lambda s: ft.scan(lambda c, r: ft.tanh(c + r), s,
                                      ft.zeros(H)), xs)
    result = ft.make_dict_of_named_arrays({
        "h": states, "c": ft.tanh(xs) * 2, "lengths": ft.lengths(xs),
        "h_values": ft.sum(ft.flatten(xs), axis=0),
        "h_offsets0": ft.lengths(xs) * 2, "doubled": docs * 2.0})
    data = batch([3, 0, 2])
    doc_data = [[np.ones((1, H))], [], [np.ones((2, H)), np.zeros((0, H))]]

    def scanned(s):
        c, rows = np.zeros(H), []
        for r in s:
            c = np.tanh(c + r)
            rows.append(c)
        return np.array(rows).reshape(-1, H)

    for got in (ft.compile(result)(xs=data, docs=doc_data),
                ft.evaluate_numpy(result, xs=data, docs=doc_data)):
        assert_jagged(got["h"], [scanned(s) for s in data], (H,))
        assert_jagged(got["c"], [np.tanh(s) * 2 for s in data], (H,))
        np.testing.assert_array_equal(got["lengths"], [3, 0, 2])
        np.testing.assert_array_equal(got["h_offsets0"], [6, 0, 4])
        np.testing.assert_allclose(got["h_values"],
                                   np.concatenate(data).sum(axis=0))
        assert got["doubled"].depth == 3
        for g, d in zip(got["doubled"].tolist(), doc_data):
            for gs, ds in zip(g, d):
                np.testing.assert_array_equal(gs, ds * 2)
    assert "FractalTensor(depth=2" in repr(result)
    ft.verify(result)
    with pytest.raises(TypeError, match="result 'a' is not an array or a "
                       "FractalTensor: ndarray"):
        ft.make_dict_of_named_arrays({"a": np.ones(2)})


@pytest.mark.parametrize("mode", ["add", "set"])
def test_scatter_in_a_map_checks_its_indices_compiled(mode):
    # (compiled maps dropped an out-of-range update silently and returned
    # a result; evaluate_numpy raised)
    cls = ft.make_jagged_placeholder("cls", (), np.int64, depth=2)
    xs = ft.make_jagged_placeholder("xs", (2,), np.float64, depth=2)
    idx = ft.make_placeholder("idx", (2,), np.int64)
    into_static = ft.compile(ft.map(lambda c: ft.scatter(
        ft.zeros(4, np.int64), c, ft.ones_like(c), mode=mode), cls))
    into_element = ft.compile(ft.map(
        lambda s: ft.scatter(s, idx, 1.0, mode=mode), xs))
    tokens = [np.array([0, 3, -1]), np.array([], np.int64), np.array([2])]
    want = np.zeros((3, 4), np.int64)
    for row, t in enumerate(tokens):
        if mode == "add":
            np.add.at(want[row], t, 1)
        else:
            want[row, t] = 1
    np.testing.assert_array_equal(into_static(cls=tokens), want)
    rows = [np.arange(6.0).reshape(3, 2), np.ones((2, 2))]
    got = into_element(xs=rows, idx=np.array([0, -2]))
    for s, g in zip(rows, got.tolist()):
        s = s.copy()
        if mode == "add":
            np.add.at(s, [0, -2], 1.0)
        else:
            s[[0, -2]] = 1.0
        np.testing.assert_array_equal(g, s)
    with pytest.raises(IndexError, match="scatter index 4 is out of range for "
                       "axis 0 with size 4"):
        into_static(cls=[np.array([0]), np.array([4])])
    with pytest.raises(IndexError, match="scatter index -5 is out of range"):
        into_static(cls=[np.array([-5])])
    with pytest.raises(IndexError, match=re.escape(
            "scatter index -2 is out of range for the rows of its element "
            f"(in element {len(rows)}, at position (1,) of its indices)")):
        into_element(xs=rows + [np.ones((1, 2))], idx=np.array([0, -2]))


def test_an_index_past_an_elements_rows_names_the_element():
    """s[-1] of an empty element, and a gather past an element's rows, name
    the element, not a position in an index array the user never wrote
    (hunt 11: "gather index -1 ... (at position (1,) of the index
    array)")."""
    xs = ft.make_jagged_placeholder("xs", (3,), np.float64, depth=2)
    data = [np.ones((2, 3)), np.ones((4, 3)), np.ones((0, 3))]
    last = ft.compile(ft.map(lambda s: s[-1], xs))
    with pytest.raises(IndexError, match=re.escape(
            "index -1 is out of range for the rows of its element "
            "(in element 2)")):
        last(xs=data)
    np.testing.assert_array_equal(last(xs=data[:2]), np.ones((2, 3)))
    picked = ft.compile(ft.map(lambda s: ft.gather(s, np.array([0, 3])), xs))
    with pytest.raises(IndexError, match=re.escape(
            "gather index 3 is out of range for the rows of its element "
            "(in element 0, at position (1,) of its indices)")):
        picked(xs=data)
    # the reference evaluator names the element too, and the element's
    # length as L (it said '_ft_elem0_L')
    with pytest.raises(IndexError, match=re.escape(
            "map over a FractalTensor, element 2: index -1 is out of bounds")):
        ft.evaluate_numpy(ft.map(lambda s: s[-1], xs), xs=data)
    with pytest.raises(IndexError, match=re.escape(
            "fold over a FractalTensor, element 2: index -1 is out of bounds")):
        ft.evaluate_numpy(ft.fold(lambda c, s: c + s[-1], xs, ft.zeros(3)),
                          xs=data)
    with pytest.raises(ValueError, match=re.escape(
            "element 2: zero-size array to reduction operation maximum which "
            "has no identity: the reduced axis has length L, which is 0")):
        ft.evaluate_numpy(ft.map(lambda s: ft.amax(s, axis=0), xs), xs=data)


def test_map_zipping_a_static_length_array_compiled():
    # (a body reducing the element next to a row of an array of static
    # length failed loopy's bounds check: a static 3 against the symbolic
    # number of elements, which the run-time zip check makes equal)
    ys = ft.make_jagged_placeholder("ys", (2,), np.float64, depth=2)
    w = ft.make_placeholder("w", (3, 2), np.float64)
    data = [np.arange(4.0).reshape(2, 2), np.ones((0, 2)), np.ones((3, 2))]
    w_data = np.arange(6.0).reshape(3, 2)
    result = ft.map(lambda s, r: ft.sum(s, axis=0) * r + ft.amax(r), ys, w)
    np.testing.assert_allclose(
        ft.compile(result)(ys=data, w=w_data),
        [s.sum(axis=0) * r + r.max() for s, r in zip(data, w_data)])
    with pytest.raises(ValueError, match="zipped input 1 has 3 elements"):
        ft.compile(result)(ys=data[:2], w=w_data)


@pytest.mark.parametrize("body", [
    lambda s: ft.scan(lambda c, r: c * 0.5 + r, s, ft.zeros(H)),
    lambda s: ft.sum(s, axis=0),
    lambda s: ft.filter(lambda r: ft.greater(r[0], 0.0), s) * 2,
    lambda s: ft.slide(s, 2),
    lambda s: s[::-1][-2:],
], ids=["scan", "sum", "filter", "slide", "slices"])
@pytest.mark.parametrize("empty", ["static_indices", "sliced_past_the_end",
                                   "index_input_of_no_entries"])
def test_maps_over_a_list_of_no_elements_known_when_built(xs, body, empty):
    # (ft.gather(xs, []) and the like: a list whose number of elements is 0
    # in its shape; a map of a scan over it failed in loopy, "domain ... is
    # empty", and chains of access operations with a LoopyIndexError)
    inputs = {"xs": batch([3, 0, 2])}
    if empty == "static_indices":
        listed = ft.gather(xs, np.array([], np.int64))
    elif empty == "sliced_past_the_end":
        listed = ft.gather(xs, np.array([1]))[1:]
    else:
        idx = ft.make_placeholder("idx", (0,), np.int64)
        listed = ft.gather(xs, idx)
        inputs["idx"] = np.zeros(0, np.int64)
    result = ft.map(body, listed)
    chained = ft.map(lambda s: s[::-1], ft.join(result, result[::-1])) if (
        isinstance(result, ft.Jagged)) else result
    for lazy in (result, chained):
        want = ft.evaluate_numpy(lazy, **inputs)
        got = ft.compile(lazy)(**inputs)
        assert len(got) == len(want) == 0
        assert np.shape(got.values if hasattr(got, "values") else got) == \
            np.shape(want.values if hasattr(want, "values") else want)
