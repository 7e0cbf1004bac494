# SPDX-License-Identifier: MIT
"""Sequence access operations: ``ft.slide``, ``ft.shifted_slide`` and
``ft.dilated_map`` on axis 0 of dense arrays of static and symbolic length,
and on the elements of a FractalTensor inside ``ft.map``.

Every result is checked against a numpy loop written from the definitions
(one window, one position, one subsequence at a time; never
``sliding_window_view``, which the operations could be mistaken for).
Hypothesis drives the reference evaluator; compiled programs (about one
second of OpenCL build each) are checked on a few fixed cases, each
program called on several lengths.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ftlazy as ft

RTOL = 1e-12


# {{{ references: loops over windows, positions and subsequences

def ref_slide(x: np.ndarray, size: int, stride: int = 1, dilation: int = 1,
              padding: int = 0, pad_value: Any = 0) -> np.ndarray:
    """Windows of *x* from the definition, or None if their count
    ``(n + 2*padding - span) // stride + 1`` is negative."""
    n = len(x)

    def padded(j: int) -> Any:
        i = j - padding
        return x[i] if 0 <= i < n else np.full(x.shape[1:], pad_value, x.dtype)

    span = dilation * (size - 1) + 1
    if (n + 2 * padding - span) // stride + 1 < 0:
        return None
    windows = []
    w = 0
    while w * stride + span <= n + 2 * padding:
        windows.append([padded(w * stride + k * dilation) for k in range(size)])
        w += 1
    return np.array(windows, dtype=x.dtype).reshape((len(windows), size)
                                                    + x.shape[1:])


def ref_shifted_slide(x: np.ndarray, size: int, dilation: int = 1) -> np.ndarray:
    n = len(x)
    out = np.zeros((n, size) + x.shape[1:], x.dtype)
    for p in range(n):
        for k in range(size):
            out[p, k] = x[(p + dilation * (k - size // 2)) % n]
    return out


def ref_dilated_map(g: Callable[[np.ndarray], np.ndarray], x: np.ndarray,
                    dilation: int) -> np.ndarray:
    """``out[r::d] = g(x[r::d])``, one subsequence at a time."""
    out = None
    for r in range(dilation):
        sub = np.array([x[j] for j in range(r, len(x), dilation)],
                       dtype=x.dtype).reshape((-1,) + x.shape[1:])
        res = g(sub)
        if out is None:
            out = np.zeros((len(x),) + res.shape[1:], res.dtype)
        for i, j in enumerate(range(r, len(x), dilation)):
            out[j] = res[i]
    return out


def running_sum(s: Any) -> Any:
    """A scan (prefix sums along axis 0) written with ``ft.scan``."""
    return ft.scan(lambda c, v: c + v, s, ft.zeros(s.shape[1:], s.dtype))


def mix(s: Any) -> Any:
    """A length-preserving function that is not causal: ``2*s - s[::-1]``."""
    return 2 * s - s[::-1]


def ref_mix(s: np.ndarray) -> np.ndarray:
    return 2 * s - s[::-1]


def ref_running_sum(s: np.ndarray) -> np.ndarray:
    return np.cumsum(s, axis=0)


def seq_data(rng: np.random.Generator, length: int, elem: tuple,
             dtype: Any = np.float64) -> np.ndarray:
    if np.dtype(dtype).kind == "f":
        return rng.standard_normal((length,) + elem).astype(dtype)
    return rng.integers(-50, 50, (length,) + elem).astype(dtype)


n = ft.make_size_param("n")

# }}}


# {{{ argument checks at build time

X_STATIC = ft.make_placeholder("x", (6, 2), np.float64)
X_SYMBOLIC = ft.make_placeholder("xs", (n, 2), np.float64)


@pytest.mark.parametrize(("kwargs", "name"), [
    ({"size": 0}, "size"),
    ({"size": -2}, "size"),
    ({"size": 2, "stride": 0}, "stride"),
    ({"size": 2, "dilation": 0}, "dilation"),
    ({"size": 2, "padding": -1}, "padding"),
])
def test_slide_bad_values(kwargs, name):
    for x in (X_STATIC, X_SYMBOLIC):
        with pytest.raises(ValueError, match=name):
            ft.slide(x, **kwargs)


@pytest.mark.parametrize(("kwargs", "name"), [
    ({"size": 2.0}, "size"),
    ({"size": "3"}, "size"),
    ({"size": True}, "size"),
    ({"size": None}, "size"),
    ({"size": 2, "stride": 1.5}, "stride"),
    ({"size": 2, "dilation": np.float64(2)}, "dilation"),
    ({"size": 2, "padding": [1]}, "padding"),
    ({"size": ft.make_size_param("k")}, "size"),
])
def test_slide_non_integer_arguments(kwargs, name):
    with pytest.raises(TypeError, match=name):
        ft.slide(X_STATIC, **kwargs)


def test_slide_numpy_integers_accepted():
    w = ft.slide(X_STATIC, np.int64(2), stride=np.int32(2))
    assert w.shape == (3, 2, 2)


@pytest.mark.parametrize(("kwargs", "length"), [
    ({"size": 8}, 6),
    ({"size": 4, "dilation": 2}, 5),          # spans 7
    ({"size": 10, "padding": 1}, 6),          # 8 padded positions
    ({"size": 2}, 0),
    ({"size": 5, "stride": 2}, 2),            # (2 - 5) // 2 + 1 = -1
])
def test_slide_window_longer_than_static_sequence(kwargs, length):
    x = ft.make_placeholder("x", (length,), np.float64)
    with pytest.raises(ValueError, match="size=") as info:
        ft.slide(x, **kwargs)
    assert f"length {length}" in str(info.value)
    assert "is negative" in str(info.value)


@pytest.mark.parametrize(("kwargs", "length"), [
    ({"size": 7}, 6),
    ({"size": 4, "dilation": 2}, 6),
    ({"size": 1}, 0),
    ({"size": 3, "padding": 1}, 0),
    ({"size": 5, "stride": 2}, 3),            # (3 - 5) // 2 + 1 = 0
])
def test_slide_with_no_window_is_empty(kwargs, length):
    # API.md's count (L + 2*padding - span) // stride + 1 is 0 here
    x = ft.make_placeholder("x", (length,), np.float64)
    w = ft.slide(x, **kwargs)
    assert w.shape == (0, kwargs["size"])
    assert ref_slide(np.ones(length), **kwargs).shape == (0, kwargs["size"])
    assert ft.evaluate_numpy(w, x=np.ones(length)).shape == (0, kwargs["size"])


def test_slide_window_exactly_fits_static_sequence():
    assert ft.slide(X_STATIC, 6).shape == (1, 6, 2)
    assert ft.slide(X_STATIC, 8, padding=1).shape == (1, 8, 2)
    assert ft.slide(X_STATIC, 3, dilation=3, padding=1).shape == (2, 3, 2)
    x0 = ft.make_placeholder("x0", (0, 3), np.float64)
    assert ft.slide(x0, 2, padding=1).shape == (1, 2, 3)


def test_slide_pad_value_checks():
    xi = ft.make_placeholder("xi", (5,), np.int32)
    with pytest.raises(ValueError, match="pad_value"):
        ft.slide(xi, 2, padding=1, pad_value=0.5)
    with pytest.raises(ValueError, match="pad_value"):
        ft.slide(ft.make_placeholder("x8", (5,), np.int8), 2, padding=1,
                 pad_value=300)
    for bad in ("0", None, [0], X_STATIC[0, 0]):
        with pytest.raises(TypeError, match="pad_value"):
            ft.slide(xi, 2, padding=1, pad_value=bad)
    assert ft.slide(xi, 2, padding=1, pad_value=-7).dtype == np.int32
    assert ft.slide(X_STATIC, 2, padding=1, pad_value=np.nan).dtype == np.float64


def test_sequence_must_have_an_axis():
    s = ft.make_placeholder("s", (), np.float64)
    for op in (lambda a: ft.slide(a, 1), lambda a: ft.shifted_slide(a, 1),
               lambda a: ft.dilated_map(mix, a, 2)):
        with pytest.raises(ValueError, match="0-d"):
            op(s)


def test_fractal_tensor_argument_points_to_map():
    xs = ft.make_jagged_placeholder("batch", (2,), np.float64, depth=2)
    for name, op in (("slide", lambda a: ft.slide(a, 2)),
                     ("shifted_slide", lambda a: ft.shifted_slide(a, 2)),
                     ("dilated_map", lambda a: ft.dilated_map(mix, a, 2))):
        with pytest.raises(TypeError, match=rf"ft\.map\(lambda s: ft\.{name}"):
            op(xs)


def test_shifted_slide_bad_arguments():
    with pytest.raises(ValueError, match="size"):
        ft.shifted_slide(X_SYMBOLIC, 0)
    with pytest.raises(ValueError, match="dilation"):
        ft.shifted_slide(X_SYMBOLIC, 3, dilation=0)
    with pytest.raises(TypeError, match="size"):
        ft.shifted_slide(X_SYMBOLIC, 2.5)
    with pytest.raises(TypeError, match="dilation"):
        ft.shifted_slide(X_SYMBOLIC, 3, dilation="2")


def test_dilated_map_bad_arguments():
    with pytest.raises(ValueError, match="dilation"):
        ft.dilated_map(mix, X_SYMBOLIC, 0)
    with pytest.raises(TypeError, match="dilation"):
        ft.dilated_map(mix, X_SYMBOLIC, 2.0)
    with pytest.raises(TypeError, match="callable"):
        ft.dilated_map(3, X_SYMBOLIC, 2)
    for x in (X_STATIC, X_SYMBOLIC):
        with pytest.raises(ValueError, match="as long as its input"):
            ft.dilated_map(lambda s: s[1:], x, 2)
        with pytest.raises(ValueError, match="as long as its input"):
            ft.dilated_map(lambda s: ft.sum(s, axis=0), x, 2)
        with pytest.raises(TypeError, match="must return arrays"):
            ft.dilated_map(lambda s: "nope", x, 2)


def test_slide_stride_on_symbolic_length():
    # (n - 3) // 2 + 1 windows is not affine: a data-dependent size
    windows = ft.slide(X_SYMBOLIC, 3, stride=2)
    assert str(windows.shape[0]).startswith("_ft_dyn")
    for length in (0, 1, 2, 3, 4, 7):
        data = np.arange(2.0 * length).reshape(length, 2)
        check_symbolic_slide(lambda w, x: ft.evaluate_numpy(w, xs=x), windows,
                             data, {"size": 3, "stride": 2})
    # a length 2*n + 1: (2*n + 1 + 2 - 3) // 2 + 1 = n + 1 windows
    x = ft.make_placeholder("x", (2 * n + 1,), np.float64)
    windows = ft.slide(x, 3, stride=2, padding=1).shape[0]
    assert ft.shapes.prove_equal(windows, ft.shapes.normalize_component(n + 1))
    # a count that is provably not negative needs no run-time guard: an
    # empty sequence has no window of size 1, or of "same" padding (API.md's
    # count, 0; numpy's sliding_window_view refuses it)
    for size, padding in ((1, 0), (3, 1), (5, 2)):
        w = ft.slide(X_SYMBOLIC, size, padding=padding)
        assert "_fits" not in w.bindings
        got = ft.evaluate_numpy(w, xs=np.zeros((0, 2)))
        assert got.shape == (0, size, 2)
    assert "_fits" in ft.slide(X_SYMBOLIC, 2).bindings
    with pytest.raises(ValueError, match="ft.slide: a sequence of fewer than "
                       "2 rows gives a negative number of windows of size 3"):
        ft.evaluate_numpy(ft.slide(X_SYMBOLIC, 3), xs=np.zeros((0, 2)))
    np.testing.assert_array_equal(  # one row short of a window: none
        ft.evaluate_numpy(ft.slide(X_SYMBOLIC, 3), xs=np.ones((2, 2))),
        np.zeros((0, 3, 2)))

# }}}


# {{{ dense sequences, reference evaluator (hypothesis)

def check_symbolic_slide(evaluate: Callable[..., Any], windows: Any,
                         data: np.ndarray, params: dict) -> None:
    """``evaluate(windows, x=data)`` equals the reference, or raises a
    :class:`ValueError` at run time where no window fits (never garbage)."""
    want = ref_slide(data, **params)
    if want is None:
        with pytest.raises(ValueError, match="ft.slide: .* negative number of "
                           "windows"):
            evaluate(windows, x=data)
    else:
        np.testing.assert_array_equal(evaluate(windows, x=data), want)


slide_params = st.fixed_dictionaries({
    "size": st.integers(1, 4), "stride": st.integers(1, 3),
    "dilation": st.integers(1, 3), "padding": st.integers(0, 3),
    "pad_value": st.sampled_from([0, -1.5, 7]),
})


@settings(max_examples=60)
@given(params=slide_params, length=st.integers(0, 9),
       elem=st.sampled_from([(), (2,), (2, 3)]), seed=st.integers(0, 2**16))
def test_slide_static_matches_reference(params, length, elem, seed):
    data = seq_data(np.random.default_rng(seed), length, elem)
    x = ft.make_placeholder("x", (length,) + elem, np.float64)
    want = ref_slide(data, **params)
    if want is None:
        with pytest.raises(ValueError, match="size="):
            ft.slide(x, **params)
        return
    w = ft.slide(x, **params)
    assert w.shape == want.shape
    np.testing.assert_array_equal(ft.evaluate_numpy(w, x=data), want)


@settings(max_examples=60)
@given(params=slide_params, lengths=st.lists(st.integers(0, 9), min_size=1,
                                             max_size=4),
       elem=st.sampled_from([(), (3,)]), seed=st.integers(0, 2**16))
def test_slide_symbolic_matches_reference(params, lengths, elem, seed):
    rng = np.random.default_rng(seed)
    x = ft.make_placeholder("x", (n,) + elem, np.float64)
    w = ft.slide(x, **params)
    for length in lengths:
        check_symbolic_slide(ft.evaluate_numpy, w, seq_data(rng, length, elem),
                             params)


@settings(max_examples=30)
@given(size=st.integers(1, 4), dilation=st.integers(1, 2),
       padding=st.integers(0, 2), stride=st.sampled_from([2, 3]),
       m=st.integers(0, 6), seed=st.integers(0, 2**16))
def test_slide_stride_on_divisible_symbolic_length(size, dilation, padding,
                                                   stride, m, seed):
    # a length stride*n + c: the stride divides its coefficient
    c = 1
    x = ft.make_placeholder("x", (stride * n + c,), np.float64)
    params = {"size": size, "stride": stride, "dilation": dilation,
              "padding": padding}
    check_symbolic_slide(ft.evaluate_numpy, ft.slide(x, **params),
                         seq_data(np.random.default_rng(seed), stride * m + c, ()),
                         params)


@settings(max_examples=60)
@given(size=st.integers(1, 6), dilation=st.integers(1, 4),
       lengths=st.lists(st.integers(0, 8), min_size=1, max_size=3),
       elem=st.sampled_from([(), (2,)]), symbolic=st.booleans(),
       seed=st.integers(0, 2**16))
def test_shifted_slide_matches_reference(size, dilation, lengths, elem,
                                         symbolic, seed):
    rng = np.random.default_rng(seed)
    for length in lengths:
        x = ft.make_placeholder("x", ((n,) if symbolic else (length,)) + elem,
                                np.int64)
        w = ft.shifted_slide(x, size, dilation)
        data = seq_data(rng, length, elem, np.int64)
        got = ft.evaluate_numpy(w, x=data)
        assert got.shape == (length, size) + elem
        np.testing.assert_array_equal(got, ref_shifted_slide(data, size, dilation))


def test_shifted_slide_centring():
    # window p holds p at k = size//2; even sizes reach one step further
    # back; a window longer than the sequence wraps more than once
    x = np.arange(5)
    got = ft.evaluate_numpy(ft.shifted_slide(ft.make_placeholder(
        "x", (n,), np.int64), 4, dilation=2), x=x)
    np.testing.assert_array_equal(got[0], [1, 3, 0, 2])
    np.testing.assert_array_equal(got[4], [0, 2, 4, 1])
    got = ft.evaluate_numpy(ft.shifted_slide(ft.make_placeholder(
        "x", (n,), np.int64), 7), x=np.arange(2))
    np.testing.assert_array_equal(got, [[1, 0, 1, 0, 1, 0, 1],
                                        [0, 1, 0, 1, 0, 1, 0]])


FUNCTIONS = {"mix": (mix, ref_mix), "running_sum": (running_sum, ref_running_sum),
             "pair": (lambda s: (s * 3, ft.exp(s)),
                      lambda s: np.concatenate([s * 3, np.exp(s)], axis=-1))}


def _as_numpy_result(name: str, result: Any) -> np.ndarray:
    """*result* of FUNCTIONS[name] (evaluated), comparable to its reference."""
    if name == "pair":
        return np.concatenate(result, axis=-1)
    return result


def _evaluate_tree(result: Any, **inputs: Any) -> Any:
    if isinstance(result, tuple):
        return tuple(ft.evaluate_numpy(r, **inputs) for r in result)
    return ft.evaluate_numpy(result, **inputs)


@settings(max_examples=40)
@given(fname=st.sampled_from(sorted(FUNCTIONS)), dilation=st.integers(1, 4),
       lengths=st.lists(st.integers(0, 9), min_size=1, max_size=3),
       symbolic=st.booleans(), seed=st.integers(0, 2**16))
def test_dilated_map_matches_reference(fname, dilation, lengths, symbolic, seed):
    f, ref = FUNCTIONS[fname]
    rng = np.random.default_rng(seed)
    if symbolic:
        x = ft.make_placeholder("x", (n, 2), np.float64)
        result = ft.dilated_map(f, x, dilation)
    for length in lengths:
        if not symbolic:
            x = ft.make_placeholder("x", (length, 2), np.float64)
            result = ft.dilated_map(f, x, dilation)
        data = seq_data(rng, length, (2,))
        got = _as_numpy_result(fname, _evaluate_tree(result, x=data))
        np.testing.assert_allclose(got, ref_dilated_map(ref, data, dilation),
                                   rtol=RTOL)


def test_dilated_map_keeps_structure():
    x = ft.make_placeholder("x", (n, 2), np.float64)
    out = ft.dilated_map(lambda s: {"a": s, "b": [s * 2]}, x, 3)
    assert set(out) == {"a", "b"} and isinstance(out["b"], list)
    data = np.arange(10.0).reshape(5, 2)
    np.testing.assert_array_equal(ft.evaluate_numpy(out["b"][0], x=data),
                                  2 * data)

# }}}


# {{{ dense sequences, compiled

@pytest.fixture(scope="module")
def compiled_slides():
    """Compiled slides of a symbolic sequence, one program each."""
    x = ft.make_placeholder("x", (n, 3), np.float32)
    xi = ft.make_placeholder("x", (n,), np.int32)
    cases = [
        (x, {"size": 3}),
        (x, {"size": 2, "dilation": 3, "padding": 2, "pad_value": -1.0}),
        (xi, {"size": 4, "padding": 1, "pad_value": 9}),
        # (counts not affine in n: data-dependent sizes)
        (x, {"size": 3, "stride": 2}),
        (xi, {"size": 2, "stride": 3, "dilation": 2, "padding": 1,
              "pad_value": 4}),
    ]
    return [(x.shape[1:], x.dtype, p, ft.compile(ft.slide(x, **p)))
            for x, p in cases]


def test_slide_compiled_symbolic(compiled_slides):
    rng = np.random.default_rng(1)
    for elem, dtype, params, f in compiled_slides:
        for length in (0, 1, 2, 3, 4, 9, 33):
            check_symbolic_slide(lambda _, **inputs: f(**inputs), None,
                                 seq_data(rng, length, elem, dtype), params)


def test_slide_compiled_static_with_stride():
    rng = np.random.default_rng(2)
    data = seq_data(rng, 11, (2,))
    x = ft.make_placeholder("x", (11, 2), np.float64)
    for params in ({"size": 3, "stride": 2, "dilation": 2, "padding": 1,
                    "pad_value": 0.5},
                   {"size": 2, "stride": 3}):
        np.testing.assert_array_equal(ft.compile(ft.slide(x, **params))(x=data),
                                      ref_slide(data, **params))


def test_slide_compiled_stride_on_divisible_symbolic_length():
    x = ft.make_placeholder("x", (2 * n + 1,), np.float64)
    f = ft.compile(ft.slide(x, 3, stride=2, padding=1))
    rng = np.random.default_rng(3)
    for m in (0, 1, 4):
        data = seq_data(rng, 2 * m + 1, ())
        np.testing.assert_array_equal(f(x=data), ref_slide(data, 3, 2, 1, 1))


def test_slide_of_computed_sequence_compiled():
    x = ft.make_placeholder("x", (n,), np.float64)
    w = ft.slide(ft.exp(x) + 1, 3, dilation=2)
    f = ft.compile(w)
    rng = np.random.default_rng(4)
    for length in (5, 8):
        data = seq_data(rng, length, ())
        np.testing.assert_allclose(f(x=data), ref_slide(np.exp(data) + 1, 3, 1, 2),
                                   rtol=1e-12)
    assert f(x=np.ones(4)).shape == (0, 3)
    with pytest.raises(ValueError, match="fewer than 4 rows gives a negative "
                       "number of windows of size 3 \\(dilation 2"):
        f(x=np.ones(3))


def test_shifted_slide_compiled():
    x = ft.make_placeholder("x", (n, 2), np.float64)
    rng = np.random.default_rng(5)
    for size, dilation in ((3, 1), (4, 3)):
        f = ft.compile(ft.shifted_slide(x, size, dilation))
        for length in (0, 1, 2, 7):
            data = seq_data(rng, length, (2,))
            np.testing.assert_array_equal(
                f(x=data), ref_shifted_slide(data, size, dilation))
    xs = ft.make_placeholder("x", (6,), np.int64)
    np.testing.assert_array_equal(
        ft.compile(ft.shifted_slide(xs, 5, 2))(x=np.arange(6)),
        ref_shifted_slide(np.arange(6), 5, 2))


@pytest.mark.parametrize("fname", ["running_sum", "mix"])
def test_dilated_map_compiled(fname):
    f, ref = FUNCTIONS[fname]
    rng = np.random.default_rng(6)
    # static length: the subsequences are unrolled
    x7 = ft.make_placeholder("x", (7, 2), np.float64)
    data = seq_data(rng, 7, (2,))
    np.testing.assert_allclose(ft.compile(ft.dilated_map(f, x7, 3))(x=data),
                               ref_dilated_map(ref, data, 3), rtol=RTOL)
    # symbolic length: a map over the subsequences as a FractalTensor
    x = ft.make_placeholder("x", (n, 2), np.float64)
    g = ft.compile(ft.dilated_map(f, x, 3))
    for length in (0, 2, 3, 10):
        data = seq_data(rng, length, (2,))
        np.testing.assert_allclose(g(x=data), ref_dilated_map(ref, data, 3),
                                   rtol=RTOL)


def test_dilated_map_compiled_computed_sequence():
    x = ft.make_placeholder("x", (n,), np.float64)
    g = ft.compile(ft.dilated_map(mix, ft.sin(x), 2))
    data = seq_data(np.random.default_rng(7), 5, ())
    np.testing.assert_allclose(g(x=data), ref_dilated_map(ref_mix, np.sin(data), 2),
                               rtol=RTOL)

# }}}


# {{{ on the elements of a FractalTensor

def _jagged_batch(rng: np.random.Generator, lengths: list[int], elem: tuple,
                  dtype: Any = np.float64) -> list[np.ndarray]:
    return [seq_data(rng, length, elem, dtype) for length in lengths]


def evaluate_numpy_eval(result: Any, **inputs: Any) -> Any:
    return ft.evaluate_numpy(result, **inputs)


def compile_eval(result: Any, **inputs: Any) -> Any:
    return ft.compile(result)(**inputs)


EVALUATORS = [evaluate_numpy_eval, compile_eval]


@pytest.fixture(params=EVALUATORS, ids=lambda e: e.__name__)
def run(request):
    return request.param


def _check_jagged(got: ft.JaggedArray, want: list[np.ndarray]) -> None:
    rows = got.tolist()
    assert len(rows) == len(want)
    for g, w in zip(rows, want):
        assert g.shape == w.shape
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-12)


XS = ft.make_jagged_placeholder("xs", (2,), np.float64, depth=2)

#: lengths with empty elements and elements shorter than a window of 3
BATCHES = {"mixed": [4, 0, 1, 7, 2], "empty_batch": [], "all_empty": [0, 0]}


@pytest.mark.parametrize("lengths", list(BATCHES.values()), ids=list(BATCHES))
def test_jagged_slide_padded(run, lengths):
    # with padding 2 an empty element has 0 + 4 - 3 + 1 = 2 windows of 3
    params = {"size": 3, "dilation": 1, "padding": 2, "pad_value": -2.0}
    ys = ft.map(lambda s: ft.slide(s, **params), XS)
    batch = _jagged_batch(np.random.default_rng(8), lengths, (2,))
    _check_jagged(run(ys, xs=batch), [ref_slide(b, **params) for b in batch])


def test_jagged_slide_dilated(run):
    params = {"size": 2, "dilation": 3, "padding": 1}
    ys = ft.map(lambda s: ft.slide(s, **params), XS)
    batch = _jagged_batch(np.random.default_rng(9), [2, 5, 2, 8], (2,))
    _check_jagged(run(ys, xs=batch), [ref_slide(b, **params) for b in batch])


def test_jagged_slide_element_too_short(run):
    ys = ft.map(lambda s: ft.slide(s, 3), XS)
    rng = np.random.default_rng(10)
    ok = _jagged_batch(rng, [3, 5], (2,))
    _check_jagged(run(ys, xs=ok), [ref_slide(b, 3) for b in ok])
    # an element one row short of a window has none; shorter ones (one
    # row, or empty) are refused, naming the element
    short = _jagged_batch(rng, [3, 2, 5], (2,))
    _check_jagged(run(ys, xs=short), [ref_slide(b, 3) for b in short])
    for lengths in ([3, 1, 5], [4, 0]):
        with pytest.raises(ValueError, match="element 1: ft.slide: a sequence "
                           "of fewer than 2 rows gives a negative number of "
                           "windows of size 3"):
            run(ys, xs=_jagged_batch(rng, lengths, (2,)))


def test_jagged_conv1d(run):
    # windows times a filter bank: (L - 2, 3, 2) x (3, 2, 4) -> (L - 2, 4)
    bank = np.random.default_rng(11).standard_normal((3, 2, 4))
    ys = ft.map(lambda s: ft.einsum("wkc,kco->wo", ft.slide(s, 3, padding=1),
                                    bank), XS)
    # (an empty sequence: "same" padding gives it no windows, no output)
    batch = _jagged_batch(np.random.default_rng(12), [4, 1, 0, 6, 1], (2,))
    want = [np.einsum("wkc,kco->wo", ref_slide(b, 3, padding=1), bank)
            for b in batch]
    _check_jagged(run(ys, xs=batch), want)


def test_jagged_shifted_slide(run):
    ys = ft.map(lambda s: ft.shifted_slide(s, 4, dilation=2), XS)
    batch = _jagged_batch(np.random.default_rng(13), [3, 0, 1, 6], (2,))
    _check_jagged(run(ys, xs=batch), [ref_shifted_slide(b, 4, 2) for b in batch])


@pytest.mark.parametrize("lengths", list(BATCHES.values()), ids=list(BATCHES))
def test_jagged_slide_strided(run, lengths):
    # (L + 2 - 3) // 2 + 1 windows per element, not affine in L: counted per
    # element; an empty element has none
    params = {"size": 3, "stride": 2, "padding": 1, "pad_value": 0.5}
    ys = ft.map(lambda s: ft.slide(s, **params), XS)
    pooled = ft.map(lambda s: ft.sum(ft.slide(s, 2, stride=3), axis=(0, 1)),
                    XS)
    batch = _jagged_batch(np.random.default_rng(11), lengths, (2,))
    _check_jagged(run(ys, xs=batch), [ref_slide(b, **params) for b in batch])
    want = np.array([ref_slide(b, 2, stride=3).sum(axis=(0, 1))
                     for b in batch]).reshape(-1, 2)
    np.testing.assert_allclose(run(pooled, xs=batch), want, rtol=1e-12)
    # (5 rows by 2: (L - 5) // 2 + 1 is negative for L < 3)
    wide = ft.map(lambda s: ft.slide(s, 5, stride=2), XS)
    if any(len(b) < 3 for b in batch):
        with pytest.raises(ValueError, match="fewer than 3 rows gives a "
                           "negative number of windows"):
            run(wide, xs=batch)
    _check_jagged(run(wide, xs=[b for b in batch if len(b) >= 3]),
                  [ref_slide(b, 5, stride=2) for b in batch if len(b) >= 3])


@settings(max_examples=25)
@given(params=slide_params,
       lengths=st.lists(st.integers(0, 7), min_size=0, max_size=4),
       seed=st.integers(0, 2**16))
def test_jagged_slide_matches_reference(params, lengths, seed):
    ys = ft.map(lambda s: ft.slide(s, **params), XS)
    batch = _jagged_batch(np.random.default_rng(seed), lengths, (2,))
    want = [ref_slide(b, **params) for b in batch]
    if any(w is None for w in want):
        first = next(i for i, w in enumerate(want) if w is None)
        with pytest.raises(ValueError, match=f"element {first}"):
            ft.evaluate_numpy(ys, xs=batch)
    else:
        _check_jagged(ft.evaluate_numpy(ys, xs=batch), want)


@pytest.mark.parametrize("fname", ["mix", "running_sum"])
def test_jagged_dilated_map(fname):
    f, ref = FUNCTIONS[fname]
    ys = ft.map(lambda s: ft.dilated_map(f, s, 2), XS)
    batch = _jagged_batch(np.random.default_rng(14), [4, 0, 1, 5], (2,))
    want = [ref_dilated_map(ref, b, 2) for b in batch]
    _check_jagged(ft.evaluate_numpy(ys, xs=batch), want)
    # a map over the subsequences inside a map over the batch compiles as one
    # map over all subsequences
    _check_jagged(ft.compile(ys)(xs=batch), want)

# }}}
