# SPDX-License-Identifier: MIT
"""FractalTensors in the DAG: jagged placeholders, run-time jagged inputs,
leaf-wise operations, ``ft.flatten``, ``ft.lengths`` and ``ft.map`` over
depth-2 and depth-3 FractalTensors.

Every result is checked against a per-segment numpy loop (never
``np.add.reduceat``, which is wrong for empty segments). Results are
computed through :data:`EVALUATORS` (the ``run`` fixture), so that a
compiled path can be added as one more entry.

Depths are FractalTensor's: a batch of sequences is depth 2 (values and one
offsets array), a batch of documents of sentences depth 3, and a depth-1
placeholder is a plain array ``(<name>_length, *elem_shape)``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ftlazy as ft

J = ft.JaggedArray


# {{{ evaluation paths

def evaluate_numpy_eval(result: Any, **inputs: Any) -> Any:
    """The reference evaluator."""
    return ft.evaluate_numpy(result, **inputs)


#: every way a result is computed; a compiled path
#: (``ft.compile(result)(**inputs)``) is one more entry here
EVALUATORS: list[Callable[..., Any]] = [evaluate_numpy_eval]


def _call(evaluator: Callable[..., Any], result: Any, **inputs: Any) -> Any:
    """*result* (an array, a FractalTensor, or a tuple of them, each computed
    separately) through *evaluator*: numpy arrays or JaggedArrays."""
    if isinstance(result, tuple):
        return tuple(evaluator(r, **inputs) for r in result)
    return evaluator(result, **inputs)


@pytest.fixture(params=EVALUATORS, ids=lambda e: e.__name__)
def run(request):
    """``run(result, **inputs)``: *result* computed by one of
    :data:`EVALUATORS`."""
    evaluator = request.param

    def run_(result: Any, **inputs: Any) -> Any:
        return _call(evaluator, result, **inputs)

    return run_

# }}}


# {{{ reference data and checks

RTOL = 1e-11
ATOL = 1e-12

#: outer length distributions of depth-2 batches, empty ones included
LENGTHS = {
    "mixed": [3, 0, 1, 4],
    "empty_batch": [],
    "all_empty": [0, 0, 0],
    "single": [5],
    "leading_empty": [0, 2, 2],
}
#: the same, where every sequence is non-empty
NONEMPTY_LENGTHS = {
    "mixed": [3, 1, 1, 4],
    "empty_batch": [],
    "single": [5],
    "ones": [1, 1],
}
#: depth-3 batches: per document, the lengths of its sentences
DOC_LENGTHS = {
    "mixed": [[2, 0, 1], [], [0], [3, 4]],
    "empty_batch": [],
    "empty_documents": [[], []],
    "empty_sentences": [[0, 0], [0]],
    "single": [[4]],
}


def seqs(lengths: list[int], elem_shape: tuple[int, ...] = (),
         dtype: Any = np.float64, seed: int = 0) -> list[np.ndarray]:
    """A depth-2 batch: one array ``(L, *elem_shape)`` per length."""
    rng = np.random.default_rng(seed)
    return [rng.standard_normal((n, *elem_shape)).astype(dtype)
            for n in lengths]


def docs(doc_lengths: list[list[int]], elem_shape: tuple[int, ...] = (),
         dtype: Any = np.float64, seed: int = 0) -> list[list[np.ndarray]]:
    """A depth-3 batch: per document, a list of sentences."""
    rng = np.random.default_rng(seed)
    return [[rng.standard_normal((n, *elem_shape)).astype(dtype) for n in doc]
            for doc in doc_lengths]


def nested_offsets(nested: list, depth: int) -> list[np.ndarray]:
    """The offsets arrays (outermost first) of a nested list of *depth*."""
    offs: list[list[int]] = [[0] for _ in range(depth - 1)]

    def walk(x: list, k: int) -> None:
        for item in x:
            offs[k].append(offs[k][-1] + len(item))
            if k + 1 < depth - 1:
                walk(item, k + 1)

    walk(nested, 0)
    return [np.array(o, dtype=np.int64) for o in offs]


def nested_leaves(nested: list, depth: int) -> list[np.ndarray]:
    """The innermost arrays of a nested list of *depth*, in order."""
    if depth == 2:
        return list(nested)
    return [a for item in nested for a in nested_leaves(item, depth - 1)]


def close(actual: Any, expected: Any) -> None:
    actual = np.asarray(actual)
    expected = np.asarray(expected)
    assert actual.shape == expected.shape, (actual.shape, expected.shape)
    if expected.dtype.kind in "fc":
        np.testing.assert_allclose(actual, expected, rtol=RTOL, atol=ATOL)
    else:
        np.testing.assert_array_equal(actual, expected)


def assert_dense(actual: Any, expected: Any, dtype: Any = None) -> None:
    """*actual* is a numpy array equal to *expected* in shape, dtype (the
    given one, else *expected*'s) and values."""
    assert isinstance(actual, np.ndarray), type(actual)
    expected = np.asarray(expected)
    assert actual.dtype == np.dtype(dtype if dtype is not None else expected.dtype)
    close(actual, expected)


def assert_jagged(actual: Any, expected: list, elem_shape: tuple[int, ...],
                  dtype: Any = np.float64, depth: int = 2) -> None:
    """*actual* is a JaggedArray of *depth* equal to the nested list
    *expected* (innermost items ``(L, *elem_shape)`` arrays): offsets
    exactly, values within rounding."""
    assert isinstance(actual, J), type(actual)
    assert actual.depth == depth
    assert actual.elem_shape == tuple(elem_shape)
    assert actual.dtype == np.dtype(dtype)
    assert len(actual) == len(expected)
    want = nested_offsets(expected, depth)
    assert len(actual.offsets) == len(want)
    for got, exp in zip(actual.offsets, want):
        np.testing.assert_array_equal(got, exp)
    leaves = nested_leaves(expected, depth)
    values = (np.concatenate(leaves) if leaves
              else np.empty((0, *elem_shape)))
    close(actual.values, values.reshape((-1, *elem_shape)))
    # and element by element, through tolist()
    if depth == 2:
        for got, exp in zip(actual.tolist(), expected):
            close(got, np.asarray(exp).reshape((-1, *elem_shape)))


def xfail(reason: str) -> Any:
    return pytest.mark.xfail(strict=True, reason=reason)

# }}}


# {{{ make_jagged_placeholder

@pytest.mark.parametrize("elem_shape", [(), (3,), (2, 3)])
def test_depth1_placeholder_is_an_array_with_a_length_param(elem_shape):
    x = ft.make_jagged_placeholder("seq", elem_shape, np.float32)
    assert isinstance(x, ft.Placeholder) and not isinstance(x, ft.Jagged)
    assert x.name == "seq"
    assert x.dtype == np.float32
    assert x.ndim == 1 + len(elem_shape)
    assert str(x.shape[0]) == "seq_length"
    assert tuple(x.shape[1:]) == elem_shape


def test_depth1_placeholder_default_depth_is_1():
    x = ft.make_jagged_placeholder("seq", 3, np.float64)
    assert isinstance(x, ft.Placeholder)
    assert tuple(x.shape[1:]) == (3,)


@pytest.mark.parametrize("length", [0, 1, 4])
def test_depth1_placeholder_in_dense_ops(run, length):
    x = ft.make_jagged_placeholder("seq", (3,), np.float64)
    W = ft.make_placeholder("W", (3, 2), np.float64)
    data = seqs([length], (3,))[0]
    Wv = np.random.default_rng(1).standard_normal((3, 2))
    assert_dense(run(ft.tanh(x @ W), seq=data, W=Wv), np.tanh(data @ Wv))
    assert_dense(run(ft.sum(x * 2, axis=0), seq=data), (data * 2).sum(axis=0))
    assert_dense(run(ft.concatenate([x, x]), seq=data),
                 np.concatenate([data, data]))
    if length >= 1:
        assert_dense(run(x[1:] - x[:-1], seq=data), data[1:] - data[:-1])
    # a scan over the sequence
    got = run(ft.scan(lambda h, r: h + r, x, ft.zeros((3,), np.float64)), seq=data)
    assert_dense(got, np.cumsum(data, axis=0).reshape(length, 3))


def test_depth1_placeholder_length_param_binding(run):
    x = ft.make_jagged_placeholder("seq", (3,), np.float64)
    data = np.ones((2, 3))
    assert_dense(run(x * 2, seq=data, seq_length=2), data * 2)
    with pytest.raises(ValueError, match="seq"):
        run(x * 2, seq=data, seq_length=3)
    with pytest.raises(ValueError, match="seq"):
        run(x * 2, seq=np.ones((2, 4)))


@pytest.mark.parametrize("elem_shape", [(), (3,), (2, 3)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64])
@pytest.mark.parametrize("depth", [2, 3])
def test_jagged_placeholder_attributes(elem_shape, dtype, depth):
    xs = ft.make_jagged_placeholder("xs", elem_shape, dtype, depth=depth)
    assert isinstance(xs, ft.Jagged)
    assert xs.depth == depth
    assert tuple(xs.elem_shape) == elem_shape
    assert xs.dtype == np.dtype(dtype)
    assert xs.name == "xs"
    assert len(xs.offsets) == depth - 1
    assert "xs" in repr(xs)


def test_jagged_placeholder_int_elem_shape_and_numpy_int_depth():
    xs = ft.make_jagged_placeholder("xs", 4, "float64", depth=np.int64(2))
    assert isinstance(xs, ft.Jagged)
    assert xs.depth == 2 and tuple(xs.elem_shape) == (4,)
    assert xs.dtype == np.float64


@pytest.mark.parametrize("elem_shape", [(-1,), (3, -2), (2.0,), (2.5,), (True,),
                                        ("a",), "ab"])
def test_bad_elem_shape(elem_shape):
    with pytest.raises((ValueError, TypeError), match="elem_shape"):
        ft.make_jagged_placeholder("xs", elem_shape, np.float64, depth=2)


@pytest.mark.parametrize("depth", [1, 3])
@pytest.mark.parametrize("elem_shape", [(2, -3), (np.float32(2),), 3.0])
def test_bad_elem_shape_names_the_input_at_every_depth(elem_shape, depth):
    with pytest.raises((ValueError, TypeError), match="'seqs'.*elem_shape|"
                       "elem_shape.*'seqs'"):
        ft.make_jagged_placeholder("seqs", elem_shape, np.float64, depth=depth)


def test_elem_shape_not_a_sequence():
    with pytest.raises(TypeError, match="elem_shape"):
        ft.make_jagged_placeholder("xs", None, np.float64, depth=2)


@pytest.mark.parametrize("elem_shape", [(-1,), (2.0,)])
def test_bad_elem_shape_names_the_input(elem_shape):
    with pytest.raises((ValueError, TypeError), match="'xs'"):
        ft.make_jagged_placeholder("xs", elem_shape, np.float64, depth=2)


@pytest.mark.parametrize("depth", [0, -1, True, False, 2.0, "2", None])
def test_bad_depth(depth):
    with pytest.raises((ValueError, TypeError), match="depth") as info:
        ft.make_jagged_placeholder("xs", (), np.float64, depth=depth)
    assert "'xs'" in str(info.value)


@pytest.mark.parametrize("name", ["_xs", "_ft_xs", "_in0", "1xs", "", "a b",
                                  "for", "x-y"])
def test_bad_name(name):
    with pytest.raises(ValueError) as info:
        ft.make_jagged_placeholder(name, (), np.float64, depth=2)
    assert repr(name) in str(info.value)


@pytest.mark.parametrize("depth", [1, 2])
@pytest.mark.parametrize("name", [3, None, b"xs"])
def test_name_not_a_str(name, depth):
    with pytest.raises(TypeError, match="name"):
        ft.make_jagged_placeholder(name, (), np.float64, depth=depth)


@pytest.mark.parametrize("dtype", [object, "not_a_dtype", np.str_])
def test_bad_dtype(dtype):
    with pytest.raises(TypeError):
        ft.make_jagged_placeholder("xs", (), dtype, depth=2)

# }}}


# {{{ run-time inputs

def _batch_sums(batch: list[np.ndarray], elem_shape: tuple[int, ...]) -> np.ndarray:
    return np.array([s.sum(axis=0) for s in batch]).reshape(len(batch), *elem_shape)


@pytest.mark.parametrize("elem_shape", [(), (3,)])
@pytest.mark.parametrize("lengths", LENGTHS.values(), ids=LENGTHS.keys())
def test_input_forms_agree(run, elem_shape, lengths):
    xs = ft.make_jagged_placeholder("xs", elem_shape, np.float64, depth=2)
    batch = seqs(lengths, elem_shape)
    ja = J.from_list(batch, elem_shape=elem_shape, dtype=np.float64, depth=2)
    forms = {
        "list_of_arrays": {"xs": batch},
        "tuple_of_arrays": {"xs": tuple(batch)},
        "list_of_lists": {"xs": [list(s) for s in batch]},
        "jagged_array": {"xs": ja},
        "parts": {"xs_values": ja.values, "xs_offsets0": ja.offsets[0]},
        "parts_int32_offsets": {
            "xs_values": ja.values,
            "xs_offsets0": ja.offsets[0].astype(np.int32)},
    }
    if elem_shape == ():
        forms["list_of_float_lists"] = {
            "xs": [[float(v) for v in s] for s in batch]}
    sums = ft.map(lambda s: ft.sum(s, axis=0), xs)
    doubled = xs * 2
    for inputs in forms.values():
        assert_dense(run(sums, **inputs), _batch_sums(batch, elem_shape))
        assert_jagged(run(doubled, **inputs), [s * 2 for s in batch], elem_shape)


@pytest.mark.parametrize("elem_shape", [(), (2,)])
@pytest.mark.parametrize("doc_lengths", DOC_LENGTHS.values(), ids=DOC_LENGTHS.keys())
def test_depth3_input_forms_agree(run, elem_shape, doc_lengths):
    d3 = ft.make_jagged_placeholder("docs", elem_shape, np.float64, depth=3)
    batch = docs(doc_lengths, elem_shape)
    ja = J.from_list(batch, elem_shape=elem_shape, dtype=np.float64, depth=3)
    forms = {
        "lists": {"docs": batch},
        "jagged_array": {"docs": ja},
        "parts": {"docs_values": ja.values, "docs_offsets0": ja.offsets[0],
                  "docs_offsets1": ja.offsets[1]},
    }
    for inputs in forms.values():
        assert_jagged(run(d3 + 1, **inputs),
                      [[s + 1 for s in d] for d in batch], elem_shape, depth=3)


@pytest.mark.parametrize("given", ["int_arrays", "int_lists", "int_jagged"])
def test_castable_dtype_is_accepted(run, given):
    # 'same_kind' casts (int64 -> float64) are allowed for whole inputs
    xs = ft.make_jagged_placeholder("xs", (), np.float64, depth=2)
    batch = [np.array([1, 2, 3]), np.array([], dtype=np.int64), np.array([4])]
    value = {"int_arrays": batch,
             "int_lists": [s.tolist() for s in batch],
             "int_jagged": J.from_list(batch, dtype=np.int64)}[given]
    got = run(xs * 1, xs=value)
    assert_jagged(got, [s.astype(np.float64) for s in batch], ())


def test_float64_to_float32_input(run):
    xs = ft.make_jagged_placeholder("xs", (), np.float32, depth=2)
    got = run(xs * 2, xs=[np.array([1.5, 2.5]), np.array([])])
    assert_jagged(got, [np.array([3., 5.], np.float32), np.zeros(0, np.float32)],
                  (), np.float32)


def test_empty_batch_needs_no_elements(run):
    xs = ft.make_jagged_placeholder("xs", (3,), np.float64, depth=2)
    for value in ([], J(np.zeros((0, 3)), np.array([0]))):
        got = run(ft.map(lambda s: ft.sum(s, axis=0), xs), xs=value)
        assert_dense(got, np.zeros((0, 3)))


#: bad offsets for a 3-row values array: (offsets, error type, message part)
BAD_OFFSETS = {
    "not_starting_at_0": ([1, 2, 3], ValueError, "start at 0"),
    "decreasing": ([0, 2, 1, 3], ValueError, "decrease"),
    "ending_past_the_values": ([0, 2, 4], ValueError, "end at 4"),
    "ending_before_the_values": ([0, 2], ValueError, "end at 2"),
    "empty": ([], ValueError, "empty"),
    "float": (np.array([0., 2., 3.]), TypeError, "integer dtype"),
}


@pytest.mark.parametrize("case", BAD_OFFSETS.values(), ids=BAD_OFFSETS.keys())
def test_bad_offsets_as_parts(run, case):
    offsets, error, message = case
    xs = ft.make_jagged_placeholder("xs", (), np.float64, depth=2)
    offsets = np.asarray(offsets) if isinstance(offsets, np.ndarray) else \
        np.array(offsets, dtype=np.int64)
    with pytest.raises(error, match=message) as info:
        run(xs * 2, xs_values=np.arange(3.), xs_offsets0=offsets)
    assert "level 0" in str(info.value)


@pytest.mark.parametrize("case", BAD_OFFSETS.values(), ids=BAD_OFFSETS.keys())
def test_bad_offsets_in_jagged_array(case):
    # a JaggedArray is checked when it is made, before any evaluation
    offsets, error, message = case
    offsets = np.asarray(offsets) if isinstance(offsets, np.ndarray) else \
        np.array(offsets, dtype=np.int64)
    with pytest.raises(error, match=message) as info:
        J(np.arange(3.), offsets)
    assert "level 0" in str(info.value)


@pytest.mark.parametrize("level", [0, 1])
def test_bad_depth3_offsets_as_parts_name_the_level(run, level):
    d3 = ft.make_jagged_placeholder("docs", (), np.float64, depth=3)
    good = [np.array([0, 1, 2]), np.array([0, 2, 3])]
    parts = list(good)
    parts[level] = np.array([0, 2, 1])
    with pytest.raises(ValueError, match=f"level {level}"):
        run(d3 * 2, docs_values=np.arange(3.), docs_offsets0=parts[0],
            docs_offsets1=parts[1])


def test_bad_offsets_as_parts_name_the_input(run):
    xs = ft.make_jagged_placeholder("xs", (), np.float64, depth=2)
    with pytest.raises(ValueError, match="xs"):
        run(xs * 2, xs_values=np.arange(3.), xs_offsets0=np.array([1, 2, 3]))


@pytest.mark.parametrize("level", [0, 1])
@pytest.mark.parametrize("bad, message", [
    ([0, 2, 1], "must not decrease"),
    ([1, 1, 2], "must start at 0"),
    ([0.0, 1.0, 2.0], "integer dtype"),
], ids=["decreasing", "not_at_0", "float"])
def test_bad_offsets_as_parts_name_the_input_part_and_level(run, level, bad,
                                                             message):
    d3 = ft.make_jagged_placeholder("docs", (), np.float64, depth=3)
    parts = [np.array([0, 1, 2]), np.array([0, 2, 3])]
    parts[level] = np.array(bad)
    with pytest.raises((ValueError, TypeError), match=message) as info:
        run(d3 * 2, docs_values=np.arange(3.), docs_offsets0=parts[0],
            docs_offsets1=parts[1])
    text = str(info.value)
    assert f"docs_offsets{level}" in text and f"level {level}" in text
    assert "'docs'" in text


def test_offsets_as_parts_past_the_values_name_the_values_part(run):
    xs = ft.make_jagged_placeholder("xs", (), np.float64, depth=2)
    with pytest.raises(ValueError, match="xs_offsets0.*end at 4.*xs_values"):
        run(xs * 2, xs_values=np.arange(3.), xs_offsets0=np.array([0, 2, 4]))


def test_parts_must_have_the_declared_dtype_and_shape(run):
    xs = ft.make_jagged_placeholder("xs", (), np.float64, depth=2)
    off = np.array([0, 2, 3])
    with pytest.raises(TypeError, match="xs_values"):
        run(xs * 2, xs_values=np.arange(3, dtype=np.float32), xs_offsets0=off)
    with pytest.raises(ValueError, match="xs_values"):
        run(xs * 2, xs_values=np.ones((3, 2)), xs_offsets0=off)


def test_given_whole_and_as_parts(run):
    xs = ft.make_jagged_placeholder("xs", (), np.float64, depth=2)
    with pytest.raises(ValueError, match="'xs'"):
        run(xs * 2, xs=[np.ones(3)], xs_values=np.ones(3),
            xs_offsets0=np.array([0, 3]))


def test_missing_input_or_part(run):
    xs = ft.make_jagged_placeholder("xs", (), np.float64, depth=2)
    with pytest.raises(ValueError, match="missing input.* 'xs'$"):
        run(xs * 2)
    with pytest.raises(ValueError, match="missing input.* 'xs_offsets0': "
                       "jagged input 'xs' is given as parts"):
        run(xs * 2, xs_values=np.ones(3))
    with pytest.raises(ValueError, match="missing input.* 'xs_offsets0'"):
        run(ft.map(lambda s: ft.sum(s), xs), xs_values=np.ones(3))


@pytest.mark.parametrize("compiled", [False, True])
def test_a_program_using_only_sizes_takes_the_whole_fractal_tensor(compiled):
    # (it refused xs=: "unexpected input(s) 'xs': the program's inputs are
    # ['xs_n0']", and the user had to pass xs_n0)
    def run(result, **inputs):
        if compiled:
            return ft.compile(result)(**inputs)
        return ft.evaluate_numpy(result, **inputs)

    xs = ft.make_jagged_placeholder("xs", (2,), np.float64, depth=2)
    docs = ft.make_jagged_placeholder("docs", (), np.float64, depth=3)
    given = [np.ones((3, 2)), np.ones((0, 2)), np.ones((1, 2))]
    np.testing.assert_array_equal(run(ft.arange(xs.length) * 2, xs=given),
                                  [0, 2, 4])
    np.testing.assert_array_equal(
        run(ft.arange(xs.length), xs=ft.JaggedArray(np.ones((4, 2)),
                                                  np.array([0, 1, 4]))), [0, 1])
    np.testing.assert_array_equal(
        run(ft.zeros(docs.length), docs=[[np.ones(2)], [], [np.ones(1)] * 3]),
        np.zeros(3))
    # next to a FractalTensor the program reads
    ys = ft.make_jagged_placeholder("ys", (), np.float64, depth=2)
    scaled = ft.map(lambda y: ft.sum(y) * xs.length, ys)
    got = run(scaled, xs=given, ys=[np.ones(2), np.ones(0)])
    np.testing.assert_array_equal(np.asarray(got), [6.0, 0.0])
    with pytest.raises(ValueError, match="'xs_n0' is 2, but the FractalTensor "
                       "'xs' has 3 items"):
        run(ft.arange(xs.length), xs=given, xs_n0=2)


def test_not_a_list(run):
    xs = ft.make_jagged_placeholder("xs", (), np.float64, depth=2)
    with pytest.raises(TypeError, match="'xs'"):
        run(xs * 2, xs=np.ones(3))


@pytest.mark.parametrize("elem_shape", [(), (2,)])
def test_leaves_of_different_shapes(run, elem_shape):
    xs = ft.make_jagged_placeholder("xs", elem_shape, np.float64, depth=2)
    other = (3,) if elem_shape else (2,)
    with pytest.raises(ValueError, match=r"'xs'.*element \[1\]"):
        run(xs * 2, xs=[np.ones((2, *elem_shape)), np.ones((1, *other))])


def test_leaves_of_different_shapes_in_a_list_of_elements(run):
    xs = ft.make_jagged_placeholder("xs", (2,), np.float64, depth=2)
    with pytest.raises(ValueError, match=r"'xs'.*element \[0\]\[1\]"):
        run(xs * 2, xs=[[np.ones(2), np.ones(3)]])


def test_depth3_leaves_of_different_shapes_name_the_path(run):
    d3 = ft.make_jagged_placeholder("docs", (2,), np.float64, depth=3)
    with pytest.raises(ValueError, match=r"'docs'.*element \[1\]\[0\]"):
        run(d3 * 2, docs=[[np.ones((1, 2))], [np.ones((1, 3))]])


def test_leaves_of_uncastable_dtypes(run):
    xs = ft.make_jagged_placeholder("xs", (), np.float64, depth=2)
    with pytest.raises(TypeError, match=r"'xs'.*element \[1\]"):
        run(xs * 2, xs=[np.ones(2), np.ones(2, dtype=np.complex128)])
    ints = ft.make_jagged_placeholder("ints", (), np.int64, depth=2)
    with pytest.raises(TypeError, match=r"'ints'.*element \[1\]"):
        run(ints * 2, ints=[np.ones(2, np.int64), np.ones(2, np.float64)])


def test_leaves_of_different_dtypes(run):
    xs = ft.make_jagged_placeholder("xs", (), np.float64, depth=2)
    with pytest.raises(TypeError, match="'xs'"):
        run(xs * 2, xs=[np.ones(2), np.ones(2, dtype=np.float32)])


def test_leaves_of_different_dtypes_depth3_and_element_lists(run):
    d3 = ft.make_jagged_placeholder("docs", (), np.float64, depth=3)
    with pytest.raises(TypeError, match=r"'docs'.*element \[1\]\[0\].*int32"):
        run(d3 * 2, docs=[[np.ones(2)], [np.ones(1, np.int32)]])
    # a list of elements: numpy scalars of different dtypes
    xs = ft.make_jagged_placeholder("xs", (), np.float64, depth=2)
    with pytest.raises(TypeError, match=r"'xs'.*element \[0\]\[1\]"):
        run(xs * 2, xs=[[np.float64(1.), np.float32(2.)]])
    # Python numbers have no dtype of their own: mixed ints and floats are
    # fine, and so is one dtype throughout
    got = run(xs * 2, xs=[[1, 2.5], [], [3]])
    assert_jagged(got, [np.array([2., 5.]), np.array([]), np.array([6.])], ())
    got = run(xs * 2, xs=[np.ones(2, np.float32), np.ones(1, np.float32)])
    assert_jagged(got, [np.full(2, 2.), np.full(1, 2.)], ())


@pytest.mark.parametrize("value", [
    pytest.param([[[1., 2.]], [[3.]]], id="list_depth3"),
    pytest.param([1., 2.], id="list_depth1"),
    pytest.param(J(np.arange(3.), np.array([0, 1]), np.array([0, 3])),
                 id="jagged_depth3"),
    pytest.param([[1., 2.], [[3.]]], id="inconsistent"),
])
def test_wrong_depth(run, value):
    xs = ft.make_jagged_placeholder("xs", (), np.float64, depth=2)
    with pytest.raises(ValueError, match="'xs'.*depth"):
        run(xs * 2, xs=value)


@pytest.mark.parametrize("value", [
    pytest.param([[1., 2.], [3.]], id="list_depth2"),
    pytest.param(J(np.arange(3.), np.array([0, 2, 3])), id="jagged_depth2"),
    pytest.param([[[1., 2.], [3.]], [np.float64(1.)]], id="inconsistent"),
])
def test_wrong_depth_for_depth3(run, value):
    d3 = ft.make_jagged_placeholder("docs", (), np.float64, depth=3)
    with pytest.raises(ValueError, match="'docs'.*depth"):
        run(d3 * 2, docs=value)


@pytest.mark.parametrize("value", [
    pytest.param([np.ones((2, 2))], id="list"),
    pytest.param(J(np.ones((3, 2)), np.array([0, 2, 3])), id="jagged"),
])
def test_wrong_elem_shape(run, value):
    xs = ft.make_jagged_placeholder("xs", (3,), np.float64, depth=2)
    with pytest.raises(ValueError, match=r"'xs'.*\(2,\)"):
        run(xs * 2, xs=value)


@pytest.mark.parametrize("declared, given", [
    (np.float64, np.complex128), (np.int64, np.float64), (np.int32, np.float32),
    (np.bool_, np.int64),
])
@pytest.mark.parametrize("form", ["list", "jagged"])
def test_wrong_dtype_that_cannot_be_cast(run, declared, given, form):
    xs = ft.make_jagged_placeholder("xs", (), declared, depth=2)
    batch = [np.ones(2, given), np.ones(0, given)]
    value = batch if form == "list" else J.from_list(batch, dtype=given)
    with pytest.raises(TypeError, match="'xs'") as info:
        run(xs * 1, xs=value)
    assert np.dtype(given).name in str(info.value)

# }}}


# {{{ leaf-wise operations

def _dense_layer_inputs(lengths: list[int]):
    rng = np.random.default_rng(3)
    batch = seqs(lengths, (3,))
    return batch, rng.standard_normal((3, 4)), rng.standard_normal(4)


@pytest.mark.parametrize("lengths", LENGTHS.values(), ids=LENGTHS.keys())
def test_leafwise_dense_layer(run, lengths):
    xs = ft.make_jagged_placeholder("xs", (3,), np.float64, depth=2)
    W = ft.make_placeholder("W", (3, 4), np.float64)
    b = ft.make_placeholder("b", (4,), np.float64)
    out = ft.tanh(xs @ W + b)
    assert isinstance(out, ft.Jagged)
    assert out.depth == 2 and tuple(out.elem_shape) == (4,)
    batch, Wv, bv = _dense_layer_inputs(lengths)
    got = run(out, xs=batch, W=Wv, b=bv)
    assert_jagged(got, [np.tanh(s @ Wv + bv) for s in batch], (4,))


@pytest.mark.parametrize("leaf, w_shape", [
    ((2, 3), (3, 4)), ((2, 3), (3,)), ((3,), (3,)), ((5, 2, 3), (3, 4)),
    ((2, 3), (6, 3, 4)), ((3,), (6, 3, 4)), ((1, 2, 3), (6, 3, 4)),
    ((4, 2, 3), (5, 1, 3, 2))], ids=str)
def test_leafwise_matmul_follows_numpy_per_leaf(run, leaf, w_shape):
    # (tile leaves were refused; API.md: @ applies to every leaf)
    xs = ft.make_jagged_placeholder("xs", leaf, np.float64, depth=2)
    W = ft.make_placeholder("W", w_shape, np.float64)
    rng = np.random.default_rng(4)
    batch = [rng.standard_normal((n, *leaf)) for n in (2, 0, 3)]
    Wv = rng.standard_normal(w_shape)
    leaf_out = np.matmul(np.zeros(leaf), Wv).shape
    want = [np.array([x @ Wv for x in s]).reshape((len(s), *leaf_out))
            for s in batch]
    assert_jagged(run(xs @ W, xs=batch, W=Wv), want, leaf_out)
    assert_jagged(run(ft.matmul(xs, W), xs=batch, W=Wv), want, leaf_out)


@pytest.mark.parametrize("leaf, w_shape, match", [
    ((), (3,), r"leaves of shape \(\) and W of shape \(3,\)"),
    ((3,), (), r"leaves of shape \(3,\) and W of shape \(\)"),
    ((3,), (4, 2), r"last axis \(3, leaf shape \(3,\)\) does not match W's "
     r"second-to-last axis \(4, W of shape \(4, 2\)\)"),
    ((2, 3), (2,), r"does not match W's only axis \(2")])
def test_leafwise_matmul_refuses_unaligned_operands(leaf, w_shape, match):
    xs = ft.make_jagged_placeholder("xs", leaf, np.float64, depth=2)
    with pytest.raises(ValueError, match=match):
        xs @ np.ones(w_shape)
    with pytest.raises(TypeError, match="FractalTensor @ FractalTensor"):
        xs @ xs


#: leaf-wise operations on a FractalTensor with elem_shape (3,):
#: (lazy, numpy reference); each must keep the structure
LEAFWISE = {
    "times_2": (lambda x: x * 2, lambda s: s * 2),
    "2_times": (lambda x: 2 * x, lambda s: 2 * s),
    "2_minus": (lambda x: 2 - x, lambda s: 2 - s),
    "minus_2": (lambda x: x - 2, lambda s: s - 2),
    "neg": (lambda x: -x, lambda s: -s),
    "plus_float": (lambda x: x + 1.5, lambda s: s + 1.5),
    "div_2": (lambda x: x / 2, lambda s: s / 2),
    "2_div": (lambda x: 2 / (x * x + 1), lambda s: 2 / (s * s + 1)),
    "plus_vector": (lambda x: x + np.arange(3.), lambda s: s + np.arange(3.)),
    "lazy_vector_times": (lambda x: ft.asarray(np.array([1., -2., 3.])) * x,
                          lambda s: np.array([1., -2., 3.]) * s),
    "exp": (lambda x: ft.exp(x), np.exp),
    "tanh": (lambda x: ft.tanh(x), np.tanh),
    "sin_of_sum": (lambda x: ft.sin(x + x * 3), lambda s: np.sin(s + s * 3)),
    "absolute": (lambda x: ft.absolute(x), np.absolute),
    "maximum": (lambda x: ft.maximum(x, 0.), lambda s: np.maximum(s, 0.)),
    "minimum": (lambda x: ft.minimum(0.5, x), lambda s: np.minimum(0.5, s)),
    "floor_divide_fn": (lambda x: ft.floor_divide(x, 0.5),
                        lambda s: np.floor_divide(s, 0.5)),
    "remainder_fn": (lambda x: ft.remainder(x, 0.5), lambda s: np.remainder(s, 0.5)),
    "sqrt": (lambda x: ft.sqrt(x * x), lambda s: np.sqrt(s * s)),
}
MISSING_OPERATOR = ("the Jagged node lacks the Python operator: {op} raises "
                    "TypeError (unsupported operand type / bad operand type "
                    "for 'Jagged') although API.md says elementwise operators "
                    "apply leaf-wise")
BROKEN_LEAFWISE = {
    "numpy_vector_times": pytest.param(
        (lambda x: np.array([1., -2., 3.]) * x,
         lambda s: np.array([1., -2., 3.]) * s), id="numpy_vector_times",),
    "pow_operator": pytest.param(
        (lambda x: x ** 2, lambda s: s ** 2), id="pow_operator",),
    "power_fn": pytest.param(
        (lambda x: ft.power(x, 2), lambda s: np.power(s, 2)), id="power_fn",),
    "abs_operator": pytest.param(
        (lambda x: abs(x), np.abs), id="abs_operator",),
    "pos_operator": pytest.param(
        (lambda x: +x, lambda s: +s), id="pos_operator",),
    "floordiv_operator": pytest.param(
        (lambda x: x // 0.5, lambda s: s // 0.5), id="floordiv_operator",),
    "mod_operator": pytest.param(
        (lambda x: x % 0.5, lambda s: s % 0.5), id="mod_operator",),
    "greater_operator": pytest.param(
        (lambda x: x > 0, lambda s: s > 0), id="greater_operator",),
    "greater_fn": pytest.param(
        (lambda x: ft.greater(x, 0), lambda s: np.greater(s, 0)), id="greater_fn",),
    "where_fn": pytest.param(
        (lambda x: ft.where(ft.greater(x, 0), x, 0.),
         lambda s: np.where(s > 0, s, 0.)), id="where_fn"),
}


@pytest.mark.parametrize(
    "ops", [pytest.param(v, id=k) for k, v in LEAFWISE.items()]
    + list(BROKEN_LEAFWISE.values()))
@pytest.mark.parametrize("lengths", [LENGTHS["mixed"], LENGTHS["empty_batch"]],
                         ids=["mixed", "empty_batch"])
def test_leafwise_ops_keep_structure(run, ops, lengths):
    lazy, reference = ops
    xs = ft.make_jagged_placeholder("xs", (3,), np.float64, depth=2)
    out = lazy(xs)
    assert isinstance(out, ft.Jagged) and out.depth == 2
    batch = seqs(lengths, (3,))
    expected = [reference(s) for s in batch]
    dtype = expected[0].dtype if expected else out.dtype
    assert_jagged(run(out, xs=batch), expected, (3,), dtype)


@pytest.mark.parametrize("doc_lengths", DOC_LENGTHS.values(), ids=DOC_LENGTHS.keys())
def test_leafwise_ops_depth3(run, doc_lengths):
    d3 = ft.make_jagged_placeholder("docs", (2,), np.float64, depth=3)
    W = ft.make_placeholder("W", (2, 3), np.float64)
    batch = docs(doc_lengths, (2,))
    Wv = np.random.default_rng(5).standard_normal((2, 3))
    got = run(ft.tanh(d3 @ W) * 2 - 1, docs=batch, W=Wv)
    assert_jagged(got, [[np.tanh(s @ Wv) * 2 - 1 for s in d] for d in batch],
                  (3,), depth=3)
    assert_jagged(run(-d3, docs=batch), [[-s for s in d] for d in batch], (2,),
                  depth=3)


def test_leafwise_astype(run):
    xs = ft.make_jagged_placeholder("xs", (), np.float64, depth=2)
    batch = [np.array([1.5, -2.5]), np.array([])]
    got = run(xs.astype(np.float32), xs=batch)
    assert_jagged(got, [s.astype(np.float32) for s in batch], (), np.float32)


@pytest.mark.parametrize("depth", [2, 3])
def test_leafwise_selection_logical_and_casts(run, depth):
    # every elementwise function of ftlazy.ops dispatches on FractalTensors
    xs = ft.make_jagged_placeholder("xs", (3,), np.float64, depth=depth)
    if depth == 2:
        batch = seqs(LENGTHS["mixed"], (3,), seed=4)
        leaves, rebuild = batch, (lambda out: out)
    else:
        batch = docs(DOC_LENGTHS["mixed"], (3,), seed=4)
        leaves = nested_leaves(batch, 3)

        def rebuild(out: list) -> list:
            it = iter(out)
            return [[next(it) for _ in d] for d in batch]
    limit = np.array([0.5, -0.5, 0.])
    cases = [
        # a jagged condition, dense branches (one broadcast against the leaves)
        (ft.where(xs > 0, limit, -1.), lambda s: np.where(s > 0, limit, -1.),
         np.float64),
        # a dense condition, jagged branches
        (ft.where(limit > 0, xs, xs * 2),
         lambda s: np.where(limit > 0, s, s * 2), np.float64),
        (ft.logical_and(xs > 0, ft.logical_not(xs > 1)),
         lambda s: (s > 0) & ~(s > 1), np.bool_),
        (ft.logical_or(xs < -1, xs > 1), lambda s: (s < -1) | (s > 1), np.bool_),
        # (the bitwise operators, as on arrays; a bool on the left)
        ((xs > 0) & ~(xs > 1), lambda s: (s > 0) & ~(s > 1), np.bool_),
        ((xs < -1) | (xs > 1) ^ True, lambda s: (s < -1) | (s > 1) ^ True,
         np.bool_),
        (True & (xs > 0), lambda s: True & (s > 0), np.bool_),
        ((xs * 4).astype(np.int64) & 3 | 8 ^ (xs > 0).astype(np.int64),
         lambda s: (s * 4).astype(np.int64) & 3 | 8 ^ (s > 0).astype(np.int64),
         np.int64),
        (5 | (xs * 4).astype(np.int64) ^ 2,
         lambda s: 5 | (s * 4).astype(np.int64) ^ 2, np.int64),
        (ft.clip(xs, -0.5, None), lambda s: np.clip(s, -0.5, None), np.float64),
        (ft.clip(xs, None, limit), lambda s: np.clip(s, None, limit), np.float64),
        (ft.astype(xs, np.int32), lambda s: s.astype(np.int32), np.int32),
        (ft.real(xs.astype(np.complex128) * 2), lambda s: s * 2, np.float64),
        (ft.imag(xs), lambda s: np.zeros_like(s), np.float64),
    ]
    for lazy, reference, dtype in cases:
        assert isinstance(lazy, ft.Jagged) and lazy.depth == depth
        assert_jagged(run(lazy, xs=batch),
                      rebuild([reference(s) for s in leaves]), (3,), dtype,
                      depth=depth)


@pytest.mark.parametrize("lengths", LENGTHS.values(), ids=LENGTHS.keys())
def test_leafwise_two_placeholders_same_offsets(run, lengths):
    xs = ft.make_jagged_placeholder("xs", (3,), np.float64, depth=2)
    ys = ft.make_jagged_placeholder("ys", (3,), np.float64, depth=2)
    a, b = seqs(lengths, (3,), seed=1), seqs(lengths, (3,), seed=2)
    assert_jagged(run(xs + ys, xs=a, ys=b), [p + q for p, q in zip(a, b)], (3,))
    assert_jagged(run(xs * ys - xs, xs=a, ys=b),
                  [p * q - p for p, q in zip(a, b)], (3,))
    # the same placeholder twice
    assert_jagged(run(xs + xs, xs=a), [p + p for p in a], (3,))


@pytest.mark.parametrize("other_lengths", [[3, 0, 2], [3, 1, 0], [3, 0]],
                         ids=["longer", "moved", "fewer"])
def test_leafwise_two_placeholders_different_lengths(run, other_lengths):
    xs = ft.make_jagged_placeholder("xs", (), np.float64, depth=2)
    ys = ft.make_jagged_placeholder("ys", (), np.float64, depth=2)
    with pytest.raises(ValueError):
        run(xs + ys, xs=seqs([3, 0, 1]), ys=seqs(other_lengths))


def test_leafwise_different_lengths_names_both(run):
    xs = ft.make_jagged_placeholder("xs", (), np.float64, depth=2)
    ys = ft.make_jagged_placeholder("ys", (), np.float64, depth=2)
    with pytest.raises(ValueError, match="xs") as info:
        run(xs + ys, xs=seqs([3, 0, 1]), ys=seqs([3, 0, 2]))
    assert "ys" in str(info.value)


def test_leafwise_two_depth3_placeholders(run):
    d3 = ft.make_jagged_placeholder("docs", (2,), np.float64, depth=3)
    e3 = ft.make_jagged_placeholder("more", (2,), np.float64, depth=3)
    lengths = DOC_LENGTHS["mixed"]
    a, b = docs(lengths, (2,), seed=1), docs(lengths, (2,), seed=2)
    got = run(d3 + e3, docs=a, more=b)
    assert_jagged(got, [[p + q for p, q in zip(x, y)] for x, y in zip(a, b)],
                  (2,), depth=3)


@pytest.mark.parametrize("level, other", [
    (0, [[2, 0], [1], []]),        # a sentence moved to another document
    (1, [[2, 0, 1], [], [0], [3, 5]]),   # a sentence of another length
    (0, [[2, 0, 1], []]),          # fewer documents
], ids=["moved", "longer", "fewer"])
def test_leafwise_depth3_different_structure_names_both_and_the_level(
        run, level, other):
    d3 = ft.make_jagged_placeholder("docs", (), np.float64, depth=3)
    e3 = ft.make_jagged_placeholder("more", (), np.float64, depth=3)
    with pytest.raises(ValueError, match="leaf-wise") as info:
        run(ft.where(d3 > 0, d3, e3), docs=docs(DOC_LENGTHS["mixed"]),
            more=docs(other))
    text = str(info.value)
    assert "'docs'" in text and "'more'" in text
    if "elements" not in text:  # (a different outer length has no level)
        assert f"level {level}" in text


def test_leafwise_three_operands_and_computed_structures(run):
    xs = ft.make_jagged_placeholder("xs", (2,), np.float64, depth=2)
    ys = ft.make_jagged_placeholder("ys", (2,), np.float64, depth=2)
    zs = ft.make_jagged_placeholder("zs", (2,), np.float64, depth=2)
    lengths = [3, 0, 2, 1]
    a, b, c = (seqs(lengths, (2,), seed=k) for k in (1, 2, 3))
    got = run(ft.where(xs > ys, zs, ys * 2) + 1, xs=a, ys=b, zs=c)
    assert_jagged(got, [np.where(p > q, r, q * 2) + 1
                        for p, q, r in zip(a, b, c)], (2,))
    # a FractalTensor computed from xs (a map's jagged result) is named so
    tails = ft.map(lambda s: s[1:], xs)
    with pytest.raises(ValueError, match="computed from 'xs'.*'ys'"):
        run(tails + ys, xs=seqs([3, 1, 1], (2,)), ys=seqs([2, 1, 0], (2,)))
    # a dense operand with more axes than an element is refused on this path
    with pytest.raises(ValueError, match="more axes"):
        tails + ft.ones((2, 2))


def test_leafwise_depth4():
    q = ft.make_jagged_placeholder("q", (), np.float64, depth=4)
    r = ft.make_jagged_placeholder("r", (), np.float64, depth=4)
    nested = [[[np.arange(2.), np.arange(1.)]], [], [[]]]
    got = ft.evaluate_numpy(q * 2 - q, q=nested)
    assert got.depth == 4 and np.array_equal(got.values, [0., 1., 0.])
    # (two inputs: zipped, every level checked at run time; see
    # test_fractal_depth4.py)
    total = ft.evaluate_numpy(q + r, q=nested, r=nested)
    assert total.depth == 4 and np.array_equal(total.values, [0., 2., 0.])


def test_leafwise_map_result_and_input(run):
    # a jagged map result has other offsets nodes than its input: zipped
    xs = ft.make_jagged_placeholder("xs", (), np.float64, depth=2)
    batch = seqs([3, 0, 1, 2])
    got = run(ft.map(lambda s: s * 2, xs) + xs, xs=batch)
    assert_jagged(got, [s * 3 for s in batch], ())
    pairs = ft.map(lambda s: s[1:], xs) * ft.map(lambda s: s[:-1], xs)
    batch = seqs([3, 1, 2])
    assert_jagged(run(pairs, xs=batch), [s[1:] * s[:-1] for s in batch], ())


NUMPY_ON_THE_LEFT = ()  # fixed: Jagged.__array_ufunc__ = None


@pytest.mark.parametrize("make_dense, order", [
    pytest.param(lambda: np.ones((2, 3)), "right", id="numpy_2d-right"),
    pytest.param(lambda: np.ones((1, 1, 3)), "right", id="numpy_3d-right"),
    pytest.param(lambda: ft.make_placeholder("M", (5, 3), np.float64), "right",
                 id="placeholder_2d-right"),
    pytest.param(lambda: ft.make_placeholder("M", (5, 3), np.float64), "left",
                 id="placeholder_2d-left"),
    pytest.param(lambda: ft.asarray(np.ones((2, 3))), "left", id="lazy_2d-left"),
    pytest.param(lambda: np.ones((2, 3)), "left", id="numpy_2d-left",
                 marks=NUMPY_ON_THE_LEFT),
])
def test_leafwise_dense_operand_with_too_many_axes(make_dense, order):
    xs = ft.make_jagged_placeholder("xs", (3,), np.float64, depth=2)
    dense = make_dense()
    with pytest.raises(ValueError, match="more axes"):
        if order == "left":
            dense + xs
        else:
            xs * dense


def test_leafwise_depth3_dense_operand_with_too_many_axes():
    d3 = ft.make_jagged_placeholder("docs", (), np.float64, depth=3)
    with pytest.raises(ValueError, match="more axes"):
        d3 + np.ones(4)


def test_leafwise_build_time_structure_errors():
    xs = ft.make_jagged_placeholder("xs", (3,), np.float64, depth=2)
    zs = ft.make_jagged_placeholder("zs", (2,), np.float64, depth=2)
    d3 = ft.make_jagged_placeholder("docs", (3,), np.float64, depth=3)
    with pytest.raises(ValueError, match="different structure"):
        xs + zs
    with pytest.raises(ValueError, match="different structure"):
        xs - d3
    with pytest.raises(ValueError):
        xs + np.ones(4)  # does not broadcast against the elements (3,)
    with pytest.raises(ValueError, match="does not match W's second-to-last"):
        xs @ ft.make_placeholder("W3", (3, 4, 2), np.float64)
    with pytest.raises(ValueError, match="leaves and a dense W of at least"):
        ft.make_jagged_placeholder("sc", (), np.float64, depth=2) @ np.ones((1, 2))
    with pytest.raises(ValueError):
        xs @ np.ones((2, 4))  # inner dimensions 3 and 2

# }}}


# {{{ flatten and lengths

@pytest.mark.parametrize("elem_shape", [(), (3,)])
@pytest.mark.parametrize("lengths", LENGTHS.values(), ids=LENGTHS.keys())
def test_flatten_and_lengths(run, elem_shape, lengths):
    xs = ft.make_jagged_placeholder("xs", elem_shape, np.float64, depth=2)
    batch = seqs(lengths, elem_shape)
    values = (np.concatenate(batch) if batch else np.empty((0, *elem_shape)))
    assert_dense(run(ft.flatten(xs), xs=batch), values.reshape(-1, *elem_shape))
    assert_dense(run(ft.lengths(xs), xs=batch),
                 np.array([len(s) for s in batch], dtype=np.int64))
    # both are arrays usable in dense code
    assert_dense(run(ft.sum(ft.lengths(xs)) + 0, xs=batch),
                 np.int64(sum(lengths)))
    assert_dense(run(ft.sum(ft.flatten(xs) * 2, axis=0), xs=batch),
                 (values * 2).sum(axis=0).reshape(elem_shape))


@pytest.mark.parametrize("doc_lengths", DOC_LENGTHS.values(), ids=DOC_LENGTHS.keys())
def test_flatten_and_lengths_depth3(run, doc_lengths):
    d3 = ft.make_jagged_placeholder("docs", (2,), np.float64, depth=3)
    batch = docs(doc_lengths, (2,))
    leaves = [s for d in batch for s in d]
    values = np.concatenate(leaves) if leaves else np.empty((0, 2))
    assert_dense(run(ft.flatten(d3), docs=batch), values.reshape(-1, 2))
    # the outer level's elements: documents, whose lengths count sentences
    assert_dense(run(ft.lengths(d3), docs=batch),
                 np.array([len(d) for d in batch], dtype=np.int64))


def test_flatten_and_lengths_of_map_results(run):
    xs = ft.make_jagged_placeholder("xs", (), np.float64, depth=2)
    batch = seqs([3, 0, 1, 2])
    tripled = ft.map(lambda s: ft.concatenate([s, s, s]), xs)
    assert_dense(run(ft.lengths(tripled), xs=batch),
                 np.array([9, 0, 3, 6], dtype=np.int64))
    pair_sums = ft.map(lambda s: s[:-1] + s[1:], xs)
    batch = seqs([3, 1, 2])
    assert_dense(run(ft.flatten(pair_sums), xs=batch),
                 np.concatenate([s[:-1] + s[1:] for s in batch]))


@pytest.mark.parametrize("length", [0, 3])
def test_flatten_of_a_dense_array_is_ravel(run, length):
    # flatten is numpy.ravel for arrays, depth-1 FractalTensors included
    W = ft.make_placeholder("W", (3, 4), np.float64)
    Wv = np.arange(12.).reshape(3, 4)
    assert_dense(run(ft.flatten(W), W=Wv), Wv.ravel())
    assert_dense(run(ft.flatten(W, order="F"), W=Wv), Wv.ravel(order="F"))
    seq = ft.make_jagged_placeholder("seq", (3,), np.float64)
    data = seqs([length], (3,))[0]
    assert_dense(run(ft.flatten(seq), seq=data), data.ravel())


@pytest.mark.parametrize("x", [
    pytest.param(lambda: ft.make_placeholder("W", (3, 4), np.float64), id="array"),
    pytest.param(lambda: ft.make_jagged_placeholder("seq", (3,), np.float64),
                 id="depth1_placeholder"),
    pytest.param(lambda: np.ones(3), id="numpy"),
    pytest.param(lambda: [1, 2], id="list"),
])
def test_lengths_of_a_plain_array(x):
    with pytest.raises(TypeError, match="lengths"):
        ft.lengths(x())


# }}}


# {{{ map over depth 2: dense results

@pytest.mark.parametrize("elem_shape", [(), (3,)])
@pytest.mark.parametrize("lengths", LENGTHS.values(), ids=LENGTHS.keys())
def test_map_sum(run, elem_shape, lengths):
    xs = ft.make_jagged_placeholder("xs", elem_shape, np.float64, depth=2)
    batch = seqs(lengths, elem_shape)
    got = run(ft.map(lambda s: ft.sum(s, axis=0), xs), xs=batch)
    assert_dense(got, _batch_sums(batch, elem_shape))


@pytest.mark.parametrize("lengths", LENGTHS.values(), ids=LENGTHS.keys())
def test_map_sum_of_ints(run, lengths):
    xs = ft.make_jagged_placeholder("xs", (), np.int64, depth=2)
    batch = [np.arange(n, dtype=np.int64) * 3 - 1 for n in lengths]
    got = run(ft.map(lambda s: ft.sum(s), xs), xs=batch)
    assert_dense(got, np.array([s.sum() for s in batch], dtype=np.int64))


@pytest.mark.parametrize("elem_shape", [(), (3,)])
@pytest.mark.parametrize("lengths", NONEMPTY_LENGTHS.values(),
                         ids=NONEMPTY_LENGTHS.keys())
def test_map_mean_via_sum_over_length(run, elem_shape, lengths):
    xs = ft.make_jagged_placeholder("xs", elem_shape, np.float64, depth=2)
    batch = seqs(lengths, elem_shape)
    sums = ft.map(lambda s: ft.sum(s, axis=0), xs)
    n = ft.lengths(xs)
    if elem_shape:
        n = ft.reshape(n, (-1, 1))
    expected = np.array([s.sum(axis=0) / len(s) for s in batch]
                        ).reshape(len(batch), *elem_shape)
    assert_dense(run(sums / n, xs=batch), expected)
    # ft.mean inside the body agrees
    assert_dense(run(ft.map(lambda s: ft.mean(s, axis=0), xs), xs=batch), expected)


def test_map_mean_of_an_empty_sequence_is_nan(run):
    xs = ft.make_jagged_placeholder("xs", (), np.float64, depth=2)
    batch = [np.array([1., 2.]), np.array([]), np.array([4.])]
    got = run(ft.map(lambda s: ft.mean(s), xs), xs=batch)
    assert_dense(got, np.array([1.5, np.nan, 4.]))


def test_map_mean_via_sum_over_element_shape(run):
    xs = ft.make_jagged_placeholder("xs", (), np.float64, depth=2)
    batch = seqs([3, 1, 2])
    got = run(ft.map(lambda s: ft.sum(s) / s.shape[0], xs), xs=batch)
    assert_dense(got, np.array([s.mean() for s in batch]))


#: an element's length used as a value, as numpy's Python ints: (lazy body,
#: reference, result dtype for float32 data)
LENGTH_VALUES = {
    "length": (lambda s: ft.asarray(s.shape[0]), lambda s: len(s), np.int64),
    "times_rows": (lambda s: s * s.shape[0], lambda s: s * len(s), np.float32),
    "reflected": (lambda s: s.shape[0] * s, lambda s: len(s) * s, np.float32),
    "mean": (lambda s: ft.sum(s) / s.shape[0], lambda s: s.sum() / len(s),
             np.float32),
    "tail_half": (lambda s: ft.asarray((s.shape[0] - 1) / 2),
                  lambda s: (len(s) - 1) / 2, np.float64),
    "floor_mod_pow": (lambda s: ft.asarray(s.shape[0] // 2 + s.shape[0] % 2
                                           + s.shape[0] ** 2),
                      lambda s: len(s) // 2 + len(s) % 2 + len(s) ** 2, np.int64),
    "max_1": (lambda s: ft.maximum(s.shape[0], 1), lambda s: max(len(s), 1),
              np.int64),
    "where": (lambda s: ft.where(s > 0, s.shape[0], s),
              lambda s: np.where(s > 0, np.float32(len(s)), s), np.float32),
    # ft.full makes an int64 array of it, as np.full does with an int
    "full": (lambda s: ft.full((s.shape[0],), s.shape[0]) - s,
             lambda s: np.full(len(s), len(s)) - s, np.float64),
}


@pytest.mark.parametrize("name", list(LENGTH_VALUES))
def test_map_element_length_as_a_value(run, name):
    # a shape component in arithmetic is a 0-d int64 array of the size
    # parameter, weak in promotion as numpy's Python ints (float32 stays
    # float32)
    body, reference, dtype = LENGTH_VALUES[name]
    xs = ft.make_jagged_placeholder("xs", (), np.float32, depth=2)
    batch = seqs([3, 0, 1, 4], dtype=np.float32)
    if name == "mean":
        batch = seqs([3, 2, 1, 4], dtype=np.float32)
    result = ft.map(body, xs)
    got = run(result, xs=batch)
    expected = [np.asarray(reference(s)) for s in batch]
    if isinstance(result, ft.Jagged):
        assert_jagged(got, expected, (), dtype)
        return
    assert_dense(got, np.array(expected, dtype=dtype).reshape(len(batch)), dtype)


def test_map_depth3_element_sizes_as_values(run):
    d3 = ft.make_jagged_placeholder("docs", (), np.float64, depth=3)
    batch = docs(DOC_LENGTHS["mixed"])
    # the mean token count per sentence, and the mean of all tokens
    per_sentence = ft.map(
        lambda d: ft.asarray(ft.flatten(d).shape[0]) / ft.maximum(d.length, 1), d3)
    assert_dense(run(per_sentence, docs=batch),
                 np.array([sum(len(s) for s in d) / max(len(d), 1)
                           for d in batch]))
    mean = ft.map(lambda d: ft.sum(ft.flatten(d)) / ft.flatten(d).shape[0], d3)
    nonempty = docs(DOC_LENGTHS["single"] + [[1, 2], [0, 3]])
    assert_dense(run(mean, docs=nonempty),
                 np.array([np.concatenate(d).mean() for d in nonempty]))


def test_dense_symbolic_length_as_a_value():
    n = ft.make_size_param("n")
    x = ft.make_placeholder("x", (n, 3), np.float32)
    a = np.arange(12, dtype=np.float32).reshape(4, 3)
    cases = [
        (ft.sum(x, axis=0) / x.shape[0], a.sum(axis=0) / 4, {"x": a}),
        (x.shape[0] * x - 1, 4 * a - 1, {"x": a}),
        # in a dense map, the outer size parameter is captured
        (ft.map(lambda col: ft.sum(col) / col.shape[0], x.T), a.mean(axis=0),
         {"x": a}),
        # a size parameter alone: given by name
        (ft.asarray(x.shape[0]) * 2, np.int64(10), {"n": 5}),
        (ft.asarray((x.shape[0] + 1) // 2), np.int64(3), {"n": 5}),
    ]
    for lazy, expected, inputs in cases:
        expected = np.asarray(expected)
        assert lazy.dtype == expected.dtype
        np.testing.assert_allclose(ft.evaluate_numpy(lazy, **inputs), expected,
                                   rtol=1e-6)
        np.testing.assert_allclose(ft.compile(lazy)(**inputs), expected,
                                   rtol=1e-6)


def test_non_arithmetic_expression_is_not_an_array():
    import pymbolic.primitives as prim
    with pytest.raises(TypeError, match="arithmetic"):
        ft.asarray(prim.Variable("n")[0])


@pytest.mark.parametrize("elem_shape", [(), (3,)])
@pytest.mark.parametrize("lengths", NONEMPTY_LENGTHS.values(),
                         ids=NONEMPTY_LENGTHS.keys())
def test_map_max(run, elem_shape, lengths):
    xs = ft.make_jagged_placeholder("xs", elem_shape, np.float64, depth=2)
    batch = seqs(lengths, elem_shape)
    got = run(ft.map(lambda s: ft.amax(s, axis=0), xs), xs=batch)
    expected = np.array([s.max(axis=0) for s in batch]
                        ).reshape(len(batch), *elem_shape)
    assert_dense(got, expected)


@pytest.mark.parametrize("empty_at", [0, 2])
def test_map_max_over_an_empty_sequence(run, empty_at):
    xs = ft.make_jagged_placeholder("xs", (), np.float64, depth=2)
    lengths = [2, 1, 3]
    lengths[empty_at] = 0
    with pytest.raises(ValueError, match=f"element {empty_at}"):
        run(ft.map(lambda s: ft.amax(s), xs), xs=seqs(lengths))


def test_map_max_with_initial(run):
    xs = ft.make_jagged_placeholder("xs", (), np.float64, depth=2)
    batch = [np.array([1., 2.]), np.array([])]
    got = run(ft.map(lambda s: ft.amax(s, initial=-np.inf), xs), xs=batch)
    assert_dense(got, np.array([2., -np.inf]))


@pytest.mark.parametrize("lengths", LENGTHS.values(), ids=LENGTHS.keys())
def test_map_static_results_are_stacked(run, lengths):
    xs = ft.make_jagged_placeholder("xs", (3,), np.float64, depth=2)
    W = ft.make_placeholder("W", (3, 4), np.float64)
    batch = seqs(lengths, (3,))
    Wv = np.random.default_rng(7).standard_normal((3, 4))
    # (n, 2): the sum and the sum of squares of the first feature
    moments = ft.map(lambda s: ft.stack([ft.sum(s[:, 0]), ft.sum(s[:, 0] ** 2)]),
                     xs)
    assert moments.shape[1:] == (2,)
    assert_dense(run(moments, xs=batch),
                 np.array([[s[:, 0].sum(), (s[:, 0] ** 2).sum()] for s in batch]
                          ).reshape(len(batch), 2))
    # (n, 4, 4): a Gram matrix of projected rows
    gram = ft.map(lambda s: (s @ W).T @ (s @ W), xs)
    assert gram.shape[1:] == (4, 4)
    assert_dense(run(gram, xs=batch, W=Wv),
                 np.array([(s @ Wv).T @ (s @ Wv) for s in batch]
                          ).reshape(len(batch), 4, 4))


def test_map_result_shape_with_the_length_after_the_first_axis():
    xs = ft.make_jagged_placeholder("xs", (), np.float64, depth=2)
    with pytest.raises(ValueError, match="first axis"):
        ft.map(lambda s: s[:, None] * s[None, :], xs)
    with pytest.raises(ValueError, match="first axis"):
        ft.map(lambda s: ft.reshape(s, (1, -1)), xs)


def test_map_depth4():
    # (more in test_fractal_depth4.py)
    q = ft.make_jagged_placeholder("q", (), np.float64, depth=4)
    nested = [[[np.arange(2.), np.arange(1.)]], [], [[]]]
    got = ft.evaluate_numpy(ft.map(lambda d: ft.sum(ft.flatten(d)), q), q=nested)
    np.testing.assert_array_equal(got, [1.0, 0.0, 0.0])


def test_map_f_not_callable():
    xs = ft.make_jagged_placeholder("xs", (), np.float64, depth=2)
    with pytest.raises(TypeError, match="callable"):
        ft.map(3, xs)


def test_map_body_array_from_the_element_length(run):
    xs = ft.make_jagged_placeholder("xs", (), np.float64, depth=2)
    batch = seqs([3, 0, 2])
    got = run(ft.map(lambda s: ft.sum(s * ft.arange(s.shape[0])), xs), xs=batch)
    assert_dense(got, np.array([(s * np.arange(len(s))).sum() for s in batch]))


def test_map_body_arrays_from_the_element_length_stay_in_the_body(run):
    xs = ft.make_jagged_placeholder("xs", (2,), np.float64, depth=2)
    W = ft.make_placeholder("W", (2, 2), np.float64)
    batch = seqs([3, 0, 2, 1], (2,))
    Wv = np.array([[1., 2.], [3., 4.]])

    def body(s):
        L = s.shape[0]
        positions = ft.arange(L)[:, None] * 1.0            # (L, 1)
        ramp = ft.zeros((L, 2)) + (L - 1 - ft.arange(L))[:, None]
        return s @ W + positions - ramp + ft.ones((2,)) * L

    result = ft.map(body, xs)
    # the arrays built from L alone are body nodes: W and the constant
    # ones((2,)) are captured, nothing of the element's size
    captured = result.values.loop.captured
    assert W in captured and len(captured) == 2
    assert not any(isinstance(c, ft.SizeParam) for c in captured)
    assert all(isinstance(d, int) for c in captured for d in c.shape)
    expected = [s @ Wv + np.arange(len(s))[:, None]
                - np.arange(len(s) - 1, -1, -1)[:, None] + len(s)
                for s in batch]
    assert_jagged(run(result, xs=batch, W=Wv), expected, (2,))
    # a jagged result made from the length alone
    got = run(ft.map(lambda s: ft.arange(s.shape[0]) * 2.0, xs), xs=batch)
    assert_jagged(got, [np.arange(len(s)) * 2.0 for s in batch], ())

# }}}


# {{{ map over depth 2: jagged results

#: (lazy body, numpy reference, the least length allowed)
JAGGED_BODIES = {
    "times_2": (lambda s: s * 2, lambda s: s * 2, 0),
    "tail": (lambda s: s[1:], lambda s: s[1:], 1),
    "init": (lambda s: s[:-1], lambda s: s[:-1], 1),
    "drop_2": (lambda s: s[2:], lambda s: s[2:], 2),
    "reversed": (lambda s: s[::-1], lambda s: s[::-1], 0),
    "twice": (lambda s: ft.concatenate([s, s]),
              lambda s: np.concatenate([s, s]), 0),
    "pair_sums": (lambda s: s[:-1] + s[1:], lambda s: s[:-1] + s[1:], 1),
    "twice_minus_1": (lambda s: ft.concatenate([s, s[1:] * 3]),
                      lambda s: np.concatenate([s, s[1:] * 3]), 1),
    "diff_of_diff": (lambda s: (s[1:] - s[:-1])[1:] - (s[1:] - s[:-1])[:-1],
                     lambda s: np.diff(s, n=2, axis=0), 2),
}


@pytest.mark.parametrize("body", JAGGED_BODIES.values(), ids=JAGGED_BODIES.keys())
@pytest.mark.parametrize("elem_shape", [(), (3,)])
@pytest.mark.parametrize("lengths", [[3, 2, 4, 5], [2], [], [6, 2, 2]],
                         ids=["mixed", "single", "empty_batch", "short"])
def test_map_jagged_results(run, body, elem_shape, lengths):
    lazy, reference, least = body
    xs = ft.make_jagged_placeholder("xs", elem_shape, np.float64, depth=2)
    out = ft.map(lazy, xs)
    assert isinstance(out, ft.Jagged) and out.depth == 2
    batch = seqs(lengths, elem_shape)
    assert all(len(s) >= least for s in batch)
    got = run(out, xs=batch)
    assert_jagged(got, [reference(s) for s in batch], elem_shape)


@pytest.mark.parametrize("body", [v for v in JAGGED_BODIES.values() if v[2] == 0],
                         ids=[k for k, v in JAGGED_BODIES.items() if v[2] == 0])
@pytest.mark.parametrize("lengths", LENGTHS.values(), ids=LENGTHS.keys())
def test_map_jagged_results_with_empty_sequences(run, body, lengths):
    lazy, reference, _ = body
    xs = ft.make_jagged_placeholder("xs", (), np.float64, depth=2)
    batch = seqs(lengths)
    assert_jagged(run(ft.map(lazy, xs), xs=batch), [reference(s) for s in batch], ())


def test_map_jagged_result_with_new_elem_shape(run):
    xs = ft.make_jagged_placeholder("xs", (3,), np.float64, depth=2)
    W = ft.make_placeholder("W", (3, 4), np.float64)
    batch, Wv, _ = _dense_layer_inputs(LENGTHS["mixed"])
    got = run(ft.map(lambda s: ft.tanh(s @ W), xs),
              xs=batch, W=Wv)
    assert_jagged(got, [np.tanh(s @ Wv) for s in batch], (4,))
    # a window of two rows, concatenated along the features: (L - 1, 6)
    win = ft.map(lambda s: ft.concatenate([s[:-1], s[1:]], axis=1), xs)
    batch = seqs([3, 1, 2], (3,))
    assert_jagged(run(win, xs=batch),
                  [np.concatenate([s[:-1], s[1:]], axis=1) for s in batch], (6,))


@pytest.mark.parametrize("body", [v for v in JAGGED_BODIES.values() if v[2] > 0],
                         ids=[k for k, v in JAGGED_BODIES.items() if v[2] > 0])
def test_map_negative_result_length(run, body):
    lazy, _, least = body
    xs = ft.make_jagged_placeholder("xs", (), np.float64, depth=2)
    lengths = [3, least - 1, 4]
    with pytest.raises(ValueError, match="element 1"):
        run(ft.map(lazy, xs), xs=seqs(lengths))


def test_map_tail_of_empty_sequence_names_the_element(run):
    xs = ft.make_jagged_placeholder("xs", (), np.float64, depth=2)
    with pytest.raises(ValueError, match="element 2") as info:
        run(ft.map(lambda s: s[1:], xs), xs=seqs([1, 1, 0, 3]))
    assert "negative" in str(info.value)


@pytest.mark.parametrize("lengths", LENGTHS.values(), ids=LENGTHS.keys())
def test_map_several_results(run, lengths):
    xs = ft.make_jagged_placeholder("xs", (3,), np.float64, depth=2)
    total, doubled = ft.map(lambda s: (ft.sum(s, axis=0), s * 2), xs)
    assert not isinstance(total, ft.Jagged)
    assert isinstance(doubled, ft.Jagged)
    batch = seqs(lengths, (3,))
    got_total, got_doubled = run((total, doubled), xs=batch)
    assert_dense(got_total, _batch_sums(batch, (3,)))
    assert_jagged(got_doubled, [s * 2 for s in batch], (3,))


def test_map_several_results_dict_and_two_jagged(run):
    xs = ft.make_jagged_placeholder("xs", (), np.float64, depth=2)
    out = ft.map(lambda s: {"tail": s[1:], "twice": ft.concatenate([s, s]),
                            "sum": ft.sum(s)}, xs)
    assert set(out) == {"tail", "twice", "sum"}
    batch = seqs([3, 1, 2, 5])
    got = run((out["tail"], out["twice"], out["sum"]), xs=batch)
    assert_jagged(got[0], [s[1:] for s in batch], ())
    assert_jagged(got[1], [np.concatenate([s, s]) for s in batch], ())
    assert_dense(got[2], np.array([s.sum() for s in batch]))


@pytest.mark.parametrize("lengths", LENGTHS.values(), ids=LENGTHS.keys())
def test_map_closure_over_dense_weights(run, lengths):
    xs = ft.make_jagged_placeholder("xs", (3,), np.float64, depth=2)
    W = ft.make_placeholder("W", (3, 4), np.float64)
    b = ft.make_placeholder("b", (4,), np.float64)
    scale = np.array([1., -1., 2., 0.5])  # a numpy constant, captured too
    batch, Wv, bv = _dense_layer_inputs(lengths)

    def body(s):
        h = ft.tanh(s @ W + b) * scale
        return ft.sum(h, axis=0), h

    pooled, hidden = ft.map(body, xs)
    got_pooled, got_hidden = run((pooled, hidden), xs=batch, W=Wv, b=bv)
    ref = [np.tanh(s @ Wv + bv) * scale for s in batch]
    assert_dense(got_pooled, np.array([h.sum(axis=0) for h in ref]).reshape(-1, 4))
    assert_jagged(got_hidden, ref, (4,))


@pytest.mark.parametrize("lengths", LENGTHS.values(), ids=LENGTHS.keys())
def test_map_closure_over_outer_fractal_tensor_values(run, lengths):
    xs = ft.make_jagged_placeholder("xs", (), np.float64, depth=2)
    batch = seqs(lengths)
    total = ft.sum(ft.flatten(xs))
    got = run(ft.map(lambda s: s - total, xs), xs=batch)
    grand = sum(s.sum() for s in batch)
    assert_jagged(got, [s - grand for s in batch], ())


@pytest.mark.parametrize("dense_first", [False, True])
@pytest.mark.parametrize("lengths", LENGTHS.values(), ids=LENGTHS.keys())
def test_map_zip_with_dense(run, dense_first, lengths):
    xs = ft.make_jagged_placeholder("xs", (3,), np.float64, depth=2)
    n = ft.make_size_param("n")
    D = ft.make_placeholder("D", (n, 3), np.float64)
    batch = seqs(lengths, (3,))
    Dv = np.random.default_rng(9).standard_normal((len(lengths), 3))

    def body(s, d):
        return ft.sum(s @ d), s - d  # one dense, one jagged result

    if dense_first:
        dot, centred = ft.map(lambda d, s: body(s, d), D, xs)
    else:
        dot, centred = ft.map(body, xs, D)
    got_dot, got_centred = run((dot, centred), xs=batch, D=Dv)
    assert_dense(got_dot, np.array([(s @ d).sum() for s, d in zip(batch, Dv)]
                                   ).reshape(len(batch)))
    assert_jagged(got_centred, [s - d for s, d in zip(batch, Dv)], (3,))


@pytest.mark.parametrize("rows", [2, 4, 0])
def test_map_zip_with_dense_of_another_length(run, rows):
    xs = ft.make_jagged_placeholder("xs", (), np.float64, depth=2)
    n = ft.make_size_param("n")
    D = ft.make_placeholder("D", (n, 2), np.float64)
    with pytest.raises(ValueError, match="zipped"):
        run(ft.map(lambda s, d: ft.sum(s) * d, xs, D), xs=seqs([3, 0, 1]),
            D=np.ones((rows, 2)))
    S = ft.make_placeholder("S", (5, 2), np.float64)  # static, checked at run time
    with pytest.raises(ValueError, match="zipped"):
        run(ft.map(lambda s, d: ft.sum(s) * d, xs, S), xs=seqs([3, 0, 1]),
            S=np.ones((5, 2)))


@pytest.mark.parametrize("lengths", LENGTHS.values(), ids=LENGTHS.keys())
def test_map_zip_two_fractal_tensors(run, lengths):
    xs = ft.make_jagged_placeholder("xs", (3,), np.float64, depth=2)
    ys = ft.make_jagged_placeholder("ys", (3,), np.float64, depth=2)
    a, b = seqs(lengths, (3,), seed=1), seqs(lengths, (3,), seed=2)
    dots = ft.map(lambda s, t: ft.sum(s * t), xs, ys)
    assert_dense(run(dots, xs=a, ys=b),
                 np.array([(p * q).sum() for p, q in zip(a, b)]).reshape(-1))
    mixed = ft.map(lambda s, t: s - t[::-1], xs, ys)
    assert_jagged(run(mixed, xs=a, ys=b), [p - q[::-1] for p, q in zip(a, b)], (3,))


def test_map_zip_two_fractal_tensors_and_a_dense_array(run):
    xs = ft.make_jagged_placeholder("xs", (), np.float64, depth=2)
    ys = ft.make_jagged_placeholder("ys", (), np.float64, depth=2)
    w = ft.make_placeholder("w", (ft.make_size_param("n"),), np.float64)
    lengths = [2, 0, 3]
    a, b = seqs(lengths, seed=1), seqs(lengths, seed=2)
    wv = np.array([1., 2., -1.])
    got = run(ft.map(lambda s, t, c: s * c + t, xs, ys, w), xs=a, ys=b, w=wv)
    assert_jagged(got, [p * c + q for p, q, c in zip(a, b, wv)], ())


@pytest.mark.parametrize("other_lengths", [[3, 0, 2], [2, 1, 1], [3, 0], [3, 0, 1, 0]],
                         ids=["longer", "moved", "fewer", "more"])
def test_map_zip_two_fractal_tensors_of_different_lengths(run, other_lengths):
    xs = ft.make_jagged_placeholder("xs", (), np.float64, depth=2)
    ys = ft.make_jagged_placeholder("ys", (), np.float64, depth=2)
    with pytest.raises(ValueError, match="zipped") as info:
        run(ft.map(lambda s, t: ft.sum(s * t), xs, ys), xs=seqs([3, 0, 1]),
            ys=seqs(other_lengths))
    # both are named (by position)
    assert "0" in str(info.value) and "1" in str(info.value)


def test_map_zip_fractal_tensors_of_different_depths():
    xs = ft.make_jagged_placeholder("xs", (), np.float64, depth=2)
    d3 = ft.make_jagged_placeholder("docs", (), np.float64, depth=3)
    with pytest.raises(ValueError, match="different depths"):
        ft.map(lambda s, d: ft.sum(s), xs, d3)


H = 4


def _rnn_ref(seq: np.ndarray, W: np.ndarray, U: np.ndarray, h0: np.ndarray):
    h, out = h0, []
    for x in seq:
        h = np.tanh(x @ W + h @ U)
        out.append(h)
    return np.array(out).reshape(len(seq), len(h0)), h


def _rnn_inputs(lengths: list[int]):
    rng = np.random.default_rng(11)
    return (seqs(lengths, (3,)), rng.standard_normal((3, H)) * 0.5,
            rng.standard_normal((H, H)) * 0.5, rng.standard_normal(H))


@pytest.mark.parametrize("lengths", LENGTHS.values(), ids=LENGTHS.keys())
def test_map_rnn_scan_per_sequence(run, lengths):
    xs = ft.make_jagged_placeholder("xs", (3,), np.float64, depth=2)
    W = ft.make_placeholder("W", (3, H), np.float64)
    U = ft.make_placeholder("U", (H, H), np.float64)
    h0 = ft.make_placeholder("h0", (H,), np.float64)
    states = ft.map(
        lambda s: ft.scan(lambda h, x: ft.tanh(x @ W + h @ U), s, h0), xs)
    assert isinstance(states, ft.Jagged)
    batch, Wv, Uv, h0v = _rnn_inputs(lengths)
    got = run(states, xs=batch, W=Wv, U=Uv, h0=h0v)
    assert_jagged(got, [_rnn_ref(s, Wv, Uv, h0v)[0] for s in batch], (H,))


@pytest.mark.parametrize("lengths", LENGTHS.values(), ids=LENGTHS.keys())
def test_map_rnn_fold_per_sequence(run, lengths):
    xs = ft.make_jagged_placeholder("xs", (3,), np.float64, depth=2)
    W = ft.make_placeholder("W", (3, H), np.float64)
    U = ft.make_placeholder("U", (H, H), np.float64)
    h0 = ft.make_placeholder("h0", (H,), np.float64)
    last = ft.map(
        lambda s: ft.fold(lambda h, x: ft.tanh(x @ W + h @ U), s, h0), xs)
    batch, Wv, Uv, h0v = _rnn_inputs(lengths)
    got = run(last, xs=batch, W=Wv, U=Uv, h0=h0v)
    # an empty sequence gives the initial state
    assert_dense(got, np.array([_rnn_ref(s, Wv, Uv, h0v)[1] for s in batch]
                               ).reshape(len(batch), H))


def test_map_scan_with_tuple_carry_and_running_sum(run):
    xs = ft.make_jagged_placeholder("xs", (), np.float64, depth=2)
    batch = seqs([3, 0, 1, 4])

    def body(s):
        cums, counts = ft.scan(lambda c, x: (c[0] + x, c[1] + 1.), s, (0., 0.))
        return cums, counts, ft.fold(lambda m, x: ft.maximum(m, x), s, -np.inf)

    cums, counts, maxes = ft.map(body, xs)
    got_cums, got_counts, got_maxes = run((cums, counts, maxes), xs=batch)
    assert_jagged(got_cums, [np.cumsum(s) for s in batch], ())
    assert_jagged(got_counts, [np.arange(1., len(s) + 1) for s in batch], ())
    assert_dense(got_maxes, np.array([s.max() if len(s) else -np.inf
                                      for s in batch]))


def test_map_over_map_and_leafwise_results(run):
    xs = ft.make_jagged_placeholder("xs", (), np.float64, depth=2)
    batch = seqs([3, 0, 1, 2])
    doubled = ft.map(lambda s: s * 2, xs)
    assert_dense(run(ft.map(lambda t: ft.sum(t), doubled), xs=batch),
                 np.array([(s * 2).sum() for s in batch]))
    assert_dense(run(ft.map(lambda t: ft.sum(t), xs * 2 + 1), xs=batch),
                 np.array([(s * 2 + 1).sum() for s in batch]))
    tails = ft.map(lambda s: s[1:], xs)
    batch = seqs([3, 2, 4])
    assert_jagged(run(ft.map(lambda t: t[1:], tails), xs=batch),
                  [s[2:] for s in batch], ())

# }}}


# {{{ depth 3

@pytest.mark.parametrize("elem_shape", [(), (2,)])
@pytest.mark.parametrize("doc_lengths", DOC_LENGTHS.values(), ids=DOC_LENGTHS.keys())
def test_depth3_per_sentence_sums(run, elem_shape, doc_lengths):
    d3 = ft.make_jagged_placeholder("docs", elem_shape, np.float64, depth=3)
    out = ft.map(lambda d: ft.map(lambda s: ft.sum(s, axis=0), d), d3)
    assert isinstance(out, ft.Jagged) and out.depth == 2
    batch = docs(doc_lengths, elem_shape)
    expected = [np.array([s.sum(axis=0) for s in d]).reshape(len(d), *elem_shape)
                for d in batch]
    assert_jagged(run(out, docs=batch), expected, elem_shape)


@pytest.mark.parametrize("elem_shape", [(), (2,)])
@pytest.mark.parametrize("doc_lengths", DOC_LENGTHS.values(), ids=DOC_LENGTHS.keys())
def test_depth3_per_document_totals(run, elem_shape, doc_lengths):
    d3 = ft.make_jagged_placeholder("docs", elem_shape, np.float64, depth=3)
    batch = docs(doc_lengths, elem_shape)

    def total(d):
        return sum((s.sum(axis=0) for s in d), np.zeros(elem_shape))

    expected = np.array([total(d) for d in batch]).reshape(len(batch), *elem_shape)
    flat = ft.map(lambda d: ft.sum(ft.flatten(d), axis=0), d3)
    assert_dense(run(flat, docs=batch), expected)
    nested = ft.map(lambda d: ft.sum(ft.map(lambda s: ft.sum(s, axis=0), d),
                                     axis=0), d3)
    assert_dense(run(nested, docs=batch), expected)
    # the number of leaves and of sentences of each document
    counts = ft.map(lambda d: (ft.sum(ft.lengths(d)), ft.lengths(d)), d3)
    got_leaves, got_lengths = run(counts, docs=batch)
    assert_dense(got_leaves, np.array([sum(len(s) for s in d) for d in batch],
                                      dtype=np.int64))
    assert_jagged(got_lengths,
                  [np.array([len(s) for s in d], dtype=np.int64) for d in batch],
                  (), np.int64)


@pytest.mark.parametrize("doc_lengths", DOC_LENGTHS.values(), ids=DOC_LENGTHS.keys())
def test_depth3_nested_map_with_closures(run, doc_lengths):
    d3 = ft.make_jagged_placeholder("docs", (2,), np.float64, depth=3)
    w = ft.make_placeholder("w", (2,), np.float64)
    batch = docs(doc_lengths, (2,))
    wv = np.array([2., -1.])

    def doc_body(d):
        mean_leaf = ft.sum(ft.flatten(d) @ w)  # a value of the outer body
        return ft.map(lambda s: ft.sum(s @ w) - mean_leaf, d)

    got = run(ft.map(doc_body, d3), docs=batch, w=wv)
    expected = []
    for d in batch:
        tot = sum((s @ wv).sum() for s in d)
        expected.append(np.array([(s @ wv).sum() - tot for s in d]))
    assert_jagged(got, expected, ())


@pytest.mark.parametrize("doc_lengths", DOC_LENGTHS.values(), ids=DOC_LENGTHS.keys())
def test_depth3_leafwise_inside_the_body(run, doc_lengths):
    d3 = ft.make_jagged_placeholder("docs", (), np.float64, depth=3)
    batch = docs(doc_lengths)
    got = run(ft.map(lambda d: ft.flatten(d * 2 + 1), d3), docs=batch)
    assert_jagged(got, [np.concatenate([s * 2 + 1 for s in d]) if d
                        else np.zeros(0) for d in batch], ())


def test_depth3_fold_over_a_document(run):
    d3 = ft.make_jagged_placeholder("docs", (), np.float64, depth=3)
    batch = docs(DOC_LENGTHS["mixed"])
    got = run(ft.map(lambda d: ft.fold(lambda c, x: c * 0.5 + x, ft.flatten(d), 0.),
                     d3), docs=batch)
    expected = []
    for d in batch:
        c = 0.
        for s in d:
            for x in s:
                c = c * 0.5 + x
        expected.append(c)
    assert_dense(got, np.array(expected))


def test_depth3_zip_with_dense(run):
    d3 = ft.make_jagged_placeholder("docs", (), np.float64, depth=3)
    v = ft.make_placeholder("v", (ft.make_size_param("n"),), np.float64)
    batch = docs(DOC_LENGTHS["mixed"])
    vv = np.arange(len(batch), dtype=np.float64) + 1
    got = run(ft.map(lambda d, c: ft.map(lambda s: ft.sum(s) * c, d), d3, v),
              docs=batch, v=vv)
    assert_jagged(got, [np.array([s.sum() * c for s in d]) for d, c in zip(batch, vv)],
                  ())


def test_depth3_zip_two_fractal_tensors(run):
    d3 = ft.make_jagged_placeholder("docs", (), np.float64, depth=3)
    e3 = ft.make_jagged_placeholder("more", (), np.float64, depth=3)
    lengths = DOC_LENGTHS["mixed"]
    a, b = docs(lengths, seed=1), docs(lengths, seed=2)
    both = ft.map(lambda d, e: ft.sum(ft.flatten(d) * ft.flatten(e)), d3, e3)
    assert_dense(run(both, docs=a, more=b),
                 np.array([sum((p * q).sum() for p, q in zip(x, y))
                           for x, y in zip(a, b)]))
    # documents of the same lengths but other sentence lengths
    other = [[2, 1, 0], [], [0], [3, 4]]
    with pytest.raises(ValueError, match="level 1"):
        run(both, docs=a, more=docs(other))
    with pytest.raises(ValueError, match="level 0"):
        run(both, docs=a, more=docs([[2, 0], [1], [0], [3, 4]]))


def test_depth3_max_over_an_empty_sentence(run):
    d3 = ft.make_jagged_placeholder("docs", (), np.float64, depth=3)
    batch = docs([[2, 1], [1, 0, 2]])
    with pytest.raises(ValueError, match="element 1.*element 1"):
        run(ft.map(lambda d: ft.map(lambda s: ft.amax(s), d), d3), docs=batch)


def test_depth3_inner_map_jagged_result_nests_deeper():
    # API.md: a FractalTensor result nests one level deeper
    d3 = ft.make_jagged_placeholder("docs", (), np.float64, depth=3)
    r = ft.map(lambda d: ft.map(lambda s: s * 2, d), d3)
    assert r.depth == 3
    data = [[[1.0, 2.0], []], [], [[3.0]]]
    got = ft.evaluate_numpy(r, docs=data).tolist()
    assert [[list(s) for s in d] for d in got] == [[[2.0, 4.0], []], [], [[6.0]]]

# }}}


# {{{ empty batches everywhere

#: each op above on an empty batch: (build(xs, ys, docs, W, D), the inputs
#: it reads, the result's kind, its dense shape or jagged elem_shape)
EMPTY_CASES = {
    "leafwise": (lambda xs, ys, d3, W, D: ft.tanh(xs @ W + 1), "xs W",
                 "jagged", (2,)),
    "neg": (lambda xs, ys, d3, W, D: -xs, "xs", "jagged", (3,)),
    "zip_leafwise": (lambda xs, ys, d3, W, D: xs + ys, "xs ys", "jagged", (3,)),
    "flatten": (lambda xs, ys, d3, W, D: ft.flatten(xs), "xs", "dense", (0, 3)),
    "lengths": (lambda xs, ys, d3, W, D: ft.lengths(xs), "xs", "dense", (0,)),
    "sum": (lambda xs, ys, d3, W, D: ft.map(lambda s: ft.sum(s, axis=0), xs), "xs",
            "dense", (0, 3)),
    "max": (lambda xs, ys, d3, W, D: ft.map(lambda s: ft.amax(s), xs), "xs",
            "dense", (0,)),
    "mean": (lambda xs, ys, d3, W, D: ft.map(lambda s: ft.mean(s, axis=0), xs),
             "xs", "dense", (0, 3)),
    "mean_via_lengths": (
        lambda xs, ys, d3, W, D: ft.map(lambda s: ft.sum(s), xs) / ft.lengths(xs),
        "xs", "dense", (0,)),
    "stacked": (lambda xs, ys, d3, W, D: ft.map(lambda s: (s @ W).T @ (s @ W), xs),
                "xs W", "dense", (0, 2, 2)),
    "tail": (lambda xs, ys, d3, W, D: ft.map(lambda s: s[1:], xs), "xs",
             "jagged", (3,)),
    "twice": (lambda xs, ys, d3, W, D: ft.map(lambda s: ft.concatenate([s, s]), xs),
              "xs", "jagged", (3,)),
    "pair_sums": (lambda xs, ys, d3, W, D: ft.map(lambda s: s[:-1] + s[1:], xs),
                  "xs", "jagged", (3,)),
    "zip_dense": (lambda xs, ys, d3, W, D: ft.map(lambda s, d: s * d, xs, D),
                  "xs D", "jagged", (3,)),
    "zip_two": (lambda xs, ys, d3, W, D: ft.map(lambda s, t: ft.sum(s * t), xs, ys),
                "xs ys", "dense", (0,)),
    "scan": (lambda xs, ys, d3, W, D: ft.map(
        lambda s: ft.scan(lambda h, x: ft.tanh(x @ W + h), s, ft.zeros((2,))), xs),
        "xs W", "jagged", (2,)),
    "fold": (lambda xs, ys, d3, W, D: ft.map(
        lambda s: ft.fold(lambda h, x: ft.tanh(x @ W + h), s, ft.zeros((2,))), xs),
        "xs W", "dense", (0, 2)),
    "depth3_sums": (lambda xs, ys, d3, W, D: ft.map(
        lambda d: ft.map(lambda s: ft.sum(s), d), d3), "docs", "jagged", ()),
    "depth3_totals": (lambda xs, ys, d3, W, D: ft.map(
        lambda d: ft.sum(ft.flatten(d)), d3), "docs", "dense", (0,)),
    "depth3_lengths": (lambda xs, ys, d3, W, D: ft.lengths(d3), "docs", "dense",
                       (0,)),
    "depth3_flatten": (lambda xs, ys, d3, W, D: ft.flatten(d3), "docs", "dense",
                       (0,)),
    "depth3_leafwise": (lambda xs, ys, d3, W, D: d3 * 2, "docs", "jagged3", ()),
}


@pytest.mark.parametrize("form", ["lists", "jagged_array"])
@pytest.mark.parametrize("case", EMPTY_CASES.values(), ids=EMPTY_CASES.keys())
def test_empty_batch(run, case, form):
    build, needed, kind, shape = case
    xs = ft.make_jagged_placeholder("xs", (3,), np.float64, depth=2)
    ys = ft.make_jagged_placeholder("ys", (3,), np.float64, depth=2)
    d3 = ft.make_jagged_placeholder("docs", (), np.float64, depth=3)
    W = ft.make_placeholder("W", (3, 2), np.float64)
    D = ft.make_placeholder("D", (ft.make_size_param("n"), 3), np.float64)
    result = build(xs, ys, d3, W, D)
    if form == "lists":
        empty2, empty3 = [], []
    else:
        empty2 = J(np.zeros((0, 3)), np.array([0]))
        empty3 = J(np.zeros(0), np.array([0]), np.array([0]))
    inputs = {"xs": empty2, "ys": empty2, "docs": empty3, "W": np.ones((3, 2)),
              "D": np.zeros((0, 3))}
    got = run(result, **{k: inputs[k] for k in needed.split()})
    if kind == "dense":
        assert isinstance(got, np.ndarray)
        assert got.shape == shape
        assert got.dtype == result.dtype
    elif kind == "jagged":
        assert_jagged(got, [], shape, result.dtype)
    else:
        assert_jagged(got, [], shape, result.dtype, depth=3)

# }}}


# {{{ hypothesis

lengths_strategy = st.lists(st.integers(0, 5), min_size=0, max_size=6)


@pytest.mark.parametrize("evaluator", EVALUATORS, ids=lambda e: e.__name__)
@settings(max_examples=25, deadline=None)
@given(lengths=lengths_strategy, elem_shape=st.sampled_from([(), (3,)]),
       seed=st.integers(0, 2 ** 16))
def test_hypothesis_depth2(evaluator, lengths, elem_shape, seed):
    xs = ft.make_jagged_placeholder("xs", elem_shape, np.float64, depth=2)
    batch = seqs(lengths, elem_shape, seed=seed)
    value = (J.from_list(batch, elem_shape=elem_shape, dtype=np.float64, depth=2)
             if seed % 2 else batch)
    sums, affine = ft.map(lambda s: (ft.sum(s * 2, axis=0),
                                     ft.concatenate([s, s[::-1] * 3])), xs)
    got_sums, got_affine = _call(evaluator, (sums, affine), xs=value)
    assert_dense(got_sums, np.array([(s * 2).sum(axis=0) for s in batch]
                                    ).reshape(len(batch), *elem_shape))
    assert_jagged(got_affine, [np.concatenate([s, s[::-1] * 3]) for s in batch],
                  elem_shape)
    # leaf-wise
    got = _call(evaluator, ft.tanh(xs * 0.5 - 1), xs=value)
    assert_jagged(got, [np.tanh(s * 0.5 - 1) for s in batch], elem_shape)
    assert_dense(_call(evaluator, ft.lengths(xs), xs=value),
                 np.array(lengths, dtype=np.int64))
    # s[1:]-style results where every length allows them
    pair_sums = ft.map(lambda s: s[:-1] + s[1:], xs)
    if all(n >= 1 for n in lengths):
        assert_jagged(_call(evaluator, pair_sums, xs=value),
                      [s[:-1] + s[1:] for s in batch], elem_shape)
    else:
        first_empty = lengths.index(0)
        with pytest.raises(ValueError, match=f"element {first_empty}"):
            _call(evaluator, pair_sums, xs=value)


@pytest.mark.parametrize("evaluator", EVALUATORS, ids=lambda e: e.__name__)
@settings(max_examples=25, deadline=None)
@given(lengths=lengths_strategy, seed=st.integers(0, 2 ** 16))
def test_hypothesis_zip_two(evaluator, lengths, seed):
    xs = ft.make_jagged_placeholder("xs", (3,), np.float64, depth=2)
    ys = ft.make_jagged_placeholder("ys", (3,), np.float64, depth=2)
    a, b = seqs(lengths, (3,), seed=seed), seqs(lengths, (3,), seed=seed + 1)
    got = _call(evaluator, ft.map(lambda s, t: ft.sum(s * t, axis=0), xs, ys),
                xs=a, ys=b)
    assert_dense(got, np.array([(p * q).sum(axis=0) for p, q in zip(a, b)]
                               ).reshape(len(lengths), 3))
    assert_jagged(_call(evaluator, xs - ys, xs=a, ys=b),
                  [p - q for p, q in zip(a, b)], (3,))


@pytest.mark.parametrize("evaluator", EVALUATORS, ids=lambda e: e.__name__)
@settings(max_examples=25, deadline=None)
@given(doc_lengths=st.lists(st.lists(st.integers(0, 4), max_size=4), max_size=5),
       elem_shape=st.sampled_from([(), (3,)]), seed=st.integers(0, 2 ** 16))
def test_hypothesis_depth3(evaluator, doc_lengths, elem_shape, seed):
    d3 = ft.make_jagged_placeholder("docs", elem_shape, np.float64, depth=3)
    batch = docs(doc_lengths, elem_shape, seed=seed)
    sums, totals = ft.map(
        lambda d: (ft.map(lambda s: ft.sum(s, axis=0), d),
                   ft.sum(ft.flatten(d), axis=0)), d3)
    got_sums, got_totals = _call(evaluator, (sums, totals), docs=batch)
    assert_jagged(got_sums,
                  [np.array([s.sum(axis=0) for s in d]).reshape(len(d), *elem_shape)
                   for d in batch], elem_shape)
    assert_dense(got_totals,
                 np.array([sum((s.sum(axis=0) for s in d), np.zeros(elem_shape))
                           for d in batch]).reshape(len(batch), *elem_shape))
    got = _call(evaluator, d3 * 2 - 1, docs=batch)
    assert_jagged(got, [[s * 2 - 1 for s in d] for d in batch], elem_shape, depth=3)

# }}}


def test_lengths_adding_an_outer_size_parameter_are_refused_clearly():
    # each sequence followed by a captured (m, 2) array: the total length,
    # n * m plus the tokens, is not affine; a static pad works
    xs = ft.make_jagged_placeholder("xs", (2,), np.float64, depth=2)
    m = ft.make_size_param("m")
    pad = ft.make_placeholder("pad", (m, 2), np.float64)
    with pytest.raises(NotImplementedError, match="size parameter 'm'.*static shape"):
        ft.map(lambda s: ft.concatenate([s, pad]), xs)
    fixed = ft.make_placeholder("fixed", (3, 2), np.float64)
    result = ft.map(lambda s: ft.concatenate([s, fixed]), xs)
    data = [np.ones((2, 2)), np.zeros((0, 2))]
    fv = np.full((3, 2), 7.0)
    for got in (ft.evaluate_numpy(result, xs=data, fixed=fv),
                ft.compile(result)(xs=data, fixed=fv)):
        for g, x in zip(got.tolist(), data, strict=True):
            np.testing.assert_array_equal(g, np.concatenate([x, fv]))


def test_len_iteration_and_truth_of_a_fractal_tensor():
    # (without __iter__, list(xs) indexed xs[0], xs[1], ... for ever)
    xs = ft.make_jagged_placeholder("xs", (2,), np.float64, depth=2)
    for use in (list, len, lambda v: 3 in v, lambda v: [s for s in v]):
        with pytest.raises(TypeError, match="symbolic number of elements xs_n0"):
            use(xs)
    with pytest.raises(TypeError, match="truth value"):
        bool(xs)
    # (a static number of elements: iterated, as a dense array is)
    picked = ft.gather(xs, np.array([1, 0, 1]))
    assert len(picked) == 3
    data = [np.ones((2, 2)), np.zeros((0, 2))]
    for element, k in zip(picked, [1, 0, 1]):
        np.testing.assert_array_equal(ft.evaluate_numpy(element, xs=data),
                                      data[k])


@pytest.mark.parametrize("compiled", [False, True])
def test_map_over_bundles_holding_fractal_tensors(compiled):
    # (ft.map(f, (xs, ys)) raised "map inputs must be arrays or numbers,
    # got Jagged", though API.md allows bundles as a map's inputs)
    from typing import NamedTuple

    class Pair(NamedTuple):
        words: Any
        weight: Any

    xs = ft.make_jagged_placeholder("xs", (2,), np.float64, depth=2)
    ys = ft.make_jagged_placeholder("ys", (2,), np.float64, depth=2)
    w = ft.make_placeholder("w", (3,), np.float64)
    x_data = [np.arange(4.0).reshape(2, 2), np.ones((0, 2)), np.ones((3, 2))]
    y_data = [np.ones((2, 2)), np.ones((0, 2)), 2 * np.ones((3, 2))]
    w_data = np.array([1.0, 2.0, 3.0])
    results = {
        "tuple": ft.map(lambda p: ft.sum(p[0] * p[1], axis=0), (xs, ys)),
        "dict": ft.map(lambda d: ft.sum(d["a"], axis=0) * d["w"],
                       {"a": xs, "w": w}),
        "named": ft.map(lambda p, q: p.words * p.weight + q,
                        Pair(xs, w), ys),
    }
    wants = {
        "tuple": [np.sum(x * y, axis=0) for x, y in zip(x_data, y_data)],
        "dict": [np.sum(x, axis=0) * c for x, c in zip(x_data, w_data)],
        "named": [x * c + y for x, c, y in zip(x_data, w_data, y_data)],
    }
    for name, result in results.items():
        run = ft.compile(result) if compiled else (
            lambda **kw: ft.evaluate_numpy(result, **kw))
        inputs = {"xs": x_data, "ys": y_data, "w": w_data}
        used = {i.name for i in ft.analysis.get_inputs(result)
                if hasattr(i, "name")}
        got = run(**{k: v for k, v in inputs.items()
                     if k in used or f"{k}_values" in used})
        got = got.tolist() if hasattr(got, "tolist") else list(got)
        assert len(got) == len(wants[name])
        for g, want in zip(got, wants[name]):
            np.testing.assert_allclose(g, want, err_msg=name)


@pytest.mark.parametrize("compiled", [False, True])
def test_a_jagged_array_for_an_array_input_is_named(compiled):
    # (it said "input 'j' has dtype object, expected float64")
    j = ft.make_jagged_placeholder("j", (3,), np.float64, depth=1)
    given = ft.JaggedArray(np.ones((2, 3)), np.array([0, 2]))
    run = (ft.compile(j * 2) if compiled
           else lambda **kw: ft.evaluate_numpy(j * 2, **kw))
    with pytest.raises(TypeError, match="input 'j' is a JaggedArray of depth "
                       r"2, but the program's 'j' is an array of shape "
                       r"\(j_length, 3\)"):
        run(j=given)


def test_a_slice_bound_computed_from_the_length_is_refused_clearly():
    # (the message named the internal '_ft_elem0_L'; as an index the same
    # position works)
    xs = ft.make_jagged_placeholder("xs", (3,), np.float64, depth=2)
    with pytest.raises(ValueError, match=r"slice start L // 2 is not an affine "
                       r"expression of sizes .* works as an index") as info:
        ft.map(lambda s: ft.sum(s[s.shape[0] // 2:], axis=0), xs)
    assert "_ft_elem" not in str(info.value)
    middle = ft.map(lambda s: s[s.shape[0] // 2], xs)
    data = [np.arange(9.0).reshape(3, 3)]
    np.testing.assert_allclose(ft.evaluate_numpy(middle, xs=data), [[3, 4, 5]])


def test_lists_of_a_length_with_a_size_parameter_of_the_body_are_refused():
    # (s[n:] per element: the total length, the element count times n, is
    # not affine; the message said n was "defined inside the body")
    n = ft.make_size_param("n")
    xs = ft.make_jagged_placeholder("xs", (3,), np.float64, depth=2)
    with pytest.raises(NotImplementedError, match="adds the size parameter "
                       "'n' to the element's sizes.*not affine"):
        ft.map(lambda s: s[n:] * 2, xs)
    # reduced in the body, it is a value per element
    summed = ft.map(lambda s: ft.sum(s[n:], axis=0), xs)
    data = [np.arange(9.0).reshape(3, 3), np.ones((2, 3))]
    np.testing.assert_allclose(ft.evaluate_numpy(summed, xs=data, n=1),
                               [s[1:].sum(axis=0) for s in data])
