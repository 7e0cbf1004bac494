# SPDX-License-Identifier: MIT
"""Compiled programs against :func:`ft.evaluate_numpy` and numpy where the
compiled path used to differ: aliased 0-d outputs, run-time errors that
numpy raises (negative integer powers, max/min of nothing, negative shapes,
indices out of range, arrays too large for the device), the accuracy of
float sums, and inputs whose names are parameter names of ``__call__``."""

from __future__ import annotations

import itertools
import re
import warnings
from typing import Any

import numpy as np
import pyopencl.array as cla
import pytest

import ftlazy as ft
from ftlazy.ops.elementwise import numpy_where_wraps_python_integers
from ftlazy.tags import Named
from ftlazy.target.loopy.device import default_queue

N = ft.make_size_param("n")
M = ft.make_size_param("m")


def _numpy_error(result: Any, **inputs: Any) -> BaseException:
    """The exception :func:`ft.evaluate_numpy` raises for *inputs*."""
    with pytest.raises(Exception) as info:
        ft.evaluate_numpy(result, **inputs)
    return info.value


def _assert_same(compiled: Any, expected: Any) -> None:
    expected = np.asarray(expected)
    compiled = np.asarray(compiled)
    assert compiled.shape == expected.shape and compiled.dtype == expected.dtype
    np.testing.assert_array_equal(compiled, expected)


# {{{ 1. 0-d outputs that alias each other

S = ft.make_placeholder("s", (), np.float64)
ZERO_D = {"sum": ft.sum(S), "max": ft.max(S), "min": ft.min(S), "prod": ft.prod(S),
          "index": S[()], "itself": S, "twice": S * 2}


@pytest.mark.parametrize("keys", [
    keys for r in (2, 3) for keys in itertools.permutations(
        ["sum", "index", "max", "itself"], r)] + [("min", "prod", "twice", "index")],
    ids="-".join)
def test_zero_d_outputs_in_any_order(keys: tuple[str, ...]) -> None:
    """Outputs that lower to the same node (the sum of a 0-d array is the
    array) share one kernel output, whatever their order."""
    result = ft.make_dict_of_named_arrays({k: ZERO_D[k] for k in keys})
    f = ft.compile(result)
    for value in (3.5, -2.25):
        out = f(s=np.float64(value))
        expected = ft.evaluate_numpy(result, s=np.float64(value))
        assert set(out) == set(keys)
        for k in keys:
            _assert_same(out[k], expected[k])


def test_zero_d_outputs_on_device_arrays() -> None:
    queue = default_queue()
    result = ft.make_dict_of_named_arrays({"b": ft.sum(S), "c": S[()]})
    _, out = ft.generate_loopy(result)(queue, s=cla.to_device(
        queue, np.array(1.25)))
    assert out["b"].get() == 1.25 and out["c"].get() == 1.25

# }}}


# {{{ 2. integer powers with negative exponents

XI = ft.make_placeholder("xi", (3,), np.int64)
YI = ft.make_placeholder("yi", (3,), np.int64)
NEGATIVE_POWER = "Integers to negative integer powers are not allowed."


@pytest.mark.parametrize("dtype", [np.int64, np.int32, np.int8])
def test_negative_integer_power_raises(dtype: type) -> None:
    x = ft.make_placeholder("x", (3,), dtype)
    y = ft.make_placeholder("y", (3,), dtype)
    f = ft.compile(x ** y)
    base = np.array([1, 2, 3], dtype)
    good = np.array([0, 1, 2], dtype)
    _assert_same(f(x=base, y=good), base ** good)
    bad = np.array([0, -1, 2], dtype)
    numpy_error = _numpy_error(x ** y, x=base, y=bad)
    assert isinstance(numpy_error, ValueError)
    with pytest.raises(ValueError, match=re.escape(str(numpy_error))):
        f(x=base, y=bad)
    # the program stays usable
    _assert_same(f(x=base, y=good), base ** good)


def test_negative_power_in_an_unused_branch_raises() -> None:
    """numpy computes both branches of ``where``: so does the check."""
    result = ft.where(YI >= 0, XI ** YI, 0)
    inputs = {"xi": np.array([1, 2, 3]), "yi": np.array([1, -1, 2])}
    assert isinstance(_numpy_error(result, **inputs), ValueError)
    with pytest.raises(ValueError, match=re.escape(NEGATIVE_POWER)):
        ft.compile(result)(**inputs)


def test_negative_power_in_a_reduction_and_symbolic_shape() -> None:
    x = ft.make_placeholder("x", (N, M), np.int64)
    y = ft.make_placeholder("y", (M,), np.int64)
    result = ft.sum(x ** y, axis=1)
    f = ft.compile(result)
    xv = np.arange(6).reshape(2, 3)
    _assert_same(f(x=xv, y=np.array([2, 0, 1])),
                 ft.evaluate_numpy(result, x=xv, y=np.array([2, 0, 1])))
    with pytest.raises(ValueError, match=re.escape(NEGATIVE_POWER)):
        f(x=xv, y=np.array([2, 0, -3]))
    # nothing to compute: nothing raises, as in numpy
    _assert_same(f(x=np.zeros((0, 3), np.int64), y=np.array([-1, -1, -1])),
                 np.zeros(0, np.int64))


def test_negative_power_in_loop_bodies() -> None:
    mapped = ft.map(lambda row: row ** YI, ft.make_placeholder("rows", (N, 3),
                                                                np.int64))
    f = ft.compile(mapped)
    rows = np.arange(6).reshape(2, 3) + 1
    _assert_same(f(rows=rows, yi=np.array([1, 2, 0])), rows ** [1, 2, 0])
    with pytest.raises(ValueError, match=re.escape(NEGATIVE_POWER)):
        f(rows=rows, yi=np.array([1, -2, 0]))

    xs = ft.make_placeholder("xs", (N,), np.int64)
    folded = ft.fold(lambda c, e: c + 2 ** e, xs, ft.zeros((), np.int64))
    g = ft.compile(folded)
    assert g(xs=np.array([0, 3, 1])) == 11
    with pytest.raises(ValueError, match=re.escape(NEGATIVE_POWER)):
        g(xs=np.array([0, 3, -1]))


@pytest.mark.parametrize("exponent", ["unsigned", "constant"])
def test_no_power_check_where_the_exponent_is_non_negative(exponent: str) -> None:
    if exponent == "unsigned":
        result = ft.make_placeholder("u", (3,), np.uint32) ** ft.make_placeholder(
            "v", (3,), np.uint32)
        inputs = {"u": np.array([1, 2, 3], np.uint32),
                  "v": np.array([3, 2, 1], np.uint32)}
    else:
        result = XI ** 3
        inputs = {"xi": np.array([1, -2, 3])}
    prg = ft.generate_loopy(result)
    assert not prg.artifact.checks.kernel
    _, (out,) = prg(default_queue(), **inputs)
    _assert_same(out, ft.evaluate_numpy(result, **inputs))

# }}}


# {{{ 3. max and min over nothing

@pytest.mark.parametrize(("fn", "name"), [(ft.amax, "maximum"), (ft.max, "maximum"),
                                          (ft.amin, "minimum"), (ft.min, "minimum")])
def test_max_min_of_symbolic_empty_axis_raise(fn: Any, name: str) -> None:
    x = ft.make_placeholder("x", (N,), np.float64)
    f = ft.compile(fn(x))
    assert f(x=np.array([3.0, -1.0])) == (3.0 if name == "maximum" else -1.0)
    message = str(_numpy_error(fn(x), x=np.zeros(0)))
    with pytest.raises(ValueError, match=re.escape(message)) as info:
        f(x=np.zeros(0))
    assert "the reduced axis has length n, which is 0" in str(info.value)
    assert f"reduction operation {name}" in str(info.value)


def test_max_over_an_axis_of_a_2d_array() -> None:
    x = ft.make_placeholder("x", (M, N), np.int32)
    f = ft.compile(ft.max(x, axis=1))
    _assert_same(f(x=np.arange(6, dtype=np.int32).reshape(2, 3)),
                 np.array([2, 5], np.int32))
    with pytest.raises(ValueError, match="reduction operation maximum which has "
                                         "no identity: the reduced axis has "
                                         "length n, which is 0"):
        f(x=np.zeros((2, 0), np.int32))
    with pytest.raises(ValueError, match="maximum"):
        f(x=np.zeros((0, 0), np.int32))  # numpy raises here too
    _assert_same(f(x=np.zeros((0, 3), np.int32)), np.zeros(0, np.int32))


def test_max_in_a_map_body_only_raises_when_the_body_runs() -> None:
    x = ft.make_placeholder("x", (M, N), np.float64)
    result = ft.map(lambda row: ft.max(row) + 1, x)
    f = ft.compile(result)
    with pytest.raises(ValueError, match="maximum"):
        f(x=np.zeros((2, 0)))
    for shape in ((0, 0), (0, 2), (2, 3)):
        value = np.arange(float(np.prod(shape))).reshape(shape)
        _assert_same(f(x=value), ft.evaluate_numpy(result, x=value))


def test_max_extent_that_is_never_zero_needs_no_check() -> None:
    x = ft.make_placeholder("x", (N + 1,), np.float64)
    prg = ft.generate_loopy(ft.max(x))
    assert not prg.artifact.checks.sizes.extrema
    _, (out,) = prg(default_queue(), x=np.array([2.0]))
    assert out == 2.0

# }}}


# {{{ 4. shapes made negative by the size parameters

def test_negative_slice_length_gives_evaluate_numpys_error() -> None:
    x = ft.make_placeholder("x", (N,), np.float64)
    result = x[2:] * 2
    f = ft.compile(result)
    _assert_same(f(x=np.arange(4.0)), [4.0, 6.0])
    _assert_same(f(x=np.arange(2.0)), np.zeros(0))
    message = str(_numpy_error(result, x=np.zeros(1)))
    assert "negative" in message
    with pytest.raises(ValueError, match=re.escape(message)):
        f(x=np.zeros(1))


def test_negative_shape_in_a_loop_body() -> None:
    x = ft.make_placeholder("x", (M, N), np.float64)
    result = ft.map(lambda row: ft.sum(row[3:]), x)
    f = ft.compile(result)
    value = np.arange(8.0).reshape(2, 4)
    _assert_same(f(x=value), ft.evaluate_numpy(result, x=value))
    with pytest.raises(ValueError, match=r"the shape \(n \+ -3,\) of .* is \(-1,\)"):
        f(x=np.zeros((2, 2)))
    # a map of no steps runs no body, as in numpy
    _assert_same(f(x=np.zeros((0, 2))), ft.evaluate_numpy(result,
                                                          x=np.zeros((0, 2))))


def test_shape_checks_are_collected_once() -> None:
    x = ft.make_placeholder("x", (N,), np.float64)
    prg = ft.generate_loopy(x[2:] + x[:-2] + 1)
    shapes = prg.artifact.checks.sizes.shapes
    assert len(shapes) == 1  # one distinct shape, n - 2
    assert not ft.generate_loopy(x * 2).artifact.checks.sizes.shapes

# }}}


# {{{ 5. arrays larger than the device allocates

def _limit() -> int:
    return default_queue().device.max_mem_alloc_size


def test_output_too_large_raises_memory_error() -> None:
    n = 2**40
    f = ft.compile(ft.zeros((N,)) + 1)
    with pytest.raises(MemoryError, match=re.escape(
            f"the output of shape ({n},) needs {8 * n} bytes, more than the "
            f"{_limit()} bytes")) as info:
        f(n=n)
    assert "max_mem_alloc_size" in str(info.value)
    _assert_same(f(n=3), np.ones(3))


def test_named_output_and_intermediate_too_large() -> None:
    big = ft.make_dict_of_named_arrays({"small": ft.zeros((2,)) + 1,
                                        "huge": ft.ones((N, 3), np.int32) * 2})
    with pytest.raises(MemoryError, match=r"output 'huge' of shape \(\d+, 3\) "
                                          r"needs \d+ bytes"):
        ft.compile(big)(n=_limit())
    stored = (ft.ones((N,)) * 2).tagged(Named("twice"))
    result = ft.sum(stored) + ft.max(stored)
    f = ft.compile(result)
    with pytest.raises(MemoryError, match=r"intermediate array 'twice' of shape "
                                          rf"\({2**40},\) needs {2**43} bytes"):
        f(n=2**40)
    assert f(n=4) == 10.0


def test_blocked_sum_partials_count_too() -> None:
    """The partial sums of a long float sum are intermediate arrays."""
    f = ft.compile(ft.sum(ft.ones((N,), np.float32)))
    with pytest.raises(MemoryError, match="intermediate array"):
        f(n=2**42 * 129)
    assert f(n=1000) == 1000.0

# }}}


# {{{ 6. indices out of range name the index and its position

EMB = ft.make_placeholder("emb", (5, 2), np.float64)
EMB_VALUE = np.arange(10.0).reshape(5, 2)


def test_gather_names_the_first_bad_index() -> None:
    ids = ft.make_placeholder("ids", (2, 3), np.int64)
    result = ft.gather(EMB, ids)
    f = ft.compile(result)
    bad = np.array([[0, 1, 2], [9, -6, 7]])
    numpy_message = str(_numpy_error(result, emb=EMB_VALUE, ids=bad))
    assert numpy_message == "gather index 9 is out of range for axis 0 with size 5"
    with pytest.raises(IndexError, match=re.escape(
            numpy_message + " (at position (1, 0) of the index array)")):
        f(emb=EMB_VALUE, ids=bad)
    with pytest.raises(IndexError, match=re.escape(
            "gather index -6 is out of range for axis 0 with size 5 (at position "
            "(0, 2)")):
        f(emb=EMB_VALUE, ids=np.array([[0, 1, -6], [4, -5, 0]]))
    good = np.array([[0, 1, 2], [4, -5, 0]])
    _assert_same(f(emb=EMB_VALUE, ids=good), EMB_VALUE[good])


def test_advanced_index_names_value_and_position_with_symbolic_shapes() -> None:
    a = ft.make_placeholder("a", (N,), np.float32)
    idx = ft.make_placeholder("idx", (M, 2), np.int32)
    f = ft.compile(a[idx + 1])
    value = np.arange(4, dtype=np.float32)
    with pytest.raises(IndexError, match=re.escape(
            "index 4 is out of range for axis 0 with size 4 (at position (2, 1) "
            "of the index array)")):
        f(a=value, idx=np.array([[0, 1], [2, -5], [1, 3]], np.int32))
    with pytest.raises(IndexError, match=re.escape("index -5 is out of range")):
        f(a=value, idx=np.array([[0, 1], [2, -6], [1, 2]], np.int32))
    ok = np.array([[0, 1], [-5, 2]], np.int32)
    _assert_same(f(a=value, idx=ok), value[ok + 1])


def test_unsigned_indices_beyond_int64() -> None:
    idx = ft.make_placeholder("idx", (2,), np.uint64)
    f = ft.compile(ft.gather(EMB, idx))
    with pytest.raises(IndexError, match=f"gather index {2**64 - 1} is out of range"):
        f(emb=EMB_VALUE, idx=np.array([0, 2**64 - 1], np.uint64))
    with pytest.raises(IndexError, match="gather index 5 is out of range"):
        f(emb=EMB_VALUE, idx=np.array([5, 0], np.uint64))


def test_index_errors_in_loops_name_value_and_step() -> None:
    ids = ft.make_placeholder("ids", (N, 2), np.int64)
    mapped = ft.map(lambda row: ft.sum(ft.gather(EMB, row), axis=0), ids)
    f = ft.compile(mapped)
    with pytest.raises(IndexError, match=re.escape(
            "gather index 8 is out of range for axis 0 with size 5 (in step 2 of "
            "a map)")):
        f(emb=EMB_VALUE, ids=np.array([[0, 1], [2, 3], [1, 8], [9, 0]]))
    good = np.array([[0, 1], [2, -1]])
    _assert_same(f(emb=EMB_VALUE, ids=good), EMB_VALUE[good].sum(axis=1))

    for keep_all in (True, False):
        loop = ft.scan if keep_all else ft.fold
        result = loop(lambda c, i: c + ft.gather(EMB, i[None])[0], ids[:, 0],
                      ft.zeros((2,)))
        g = ft.compile(result)
        with pytest.raises(IndexError, match=re.escape(
                "gather index 7 is out of range for axis 0 with size 5 (in a "
                "step of a scan)")):
            g(emb=EMB_VALUE, ids=np.array([[1, 0], [7, 0], [-9, 0]]))
        _assert_same(g(emb=EMB_VALUE, ids=good),
                     ft.evaluate_numpy(result, emb=EMB_VALUE, ids=good))

# }}}


# {{{ 7. the accuracy of float sums

def _float32_sum_error(result: ft.Array, value: np.ndarray) -> float:
    exact = value.astype(np.float64).sum(axis=-1)
    return float(np.max(np.abs(ft.compile(result)(x=value) - exact)))


@pytest.mark.parametrize("symbolic", [False, True], ids=["concrete", "symbolic"])
def test_float32_sum_is_as_accurate_as_numpys(symbolic: bool) -> None:
    """A sum of 10**6 float32 values of 0.1: numpy's pairwise sum is off by
    0.0063; a sequential sum by about 1, chunks of 8192 by 0.87."""
    value = np.full(10**6, 0.1, np.float32)
    x = ft.make_placeholder("x", (N,) if symbolic else value.shape, np.float32)
    numpy_error = abs(float(value.sum()) - float(value.astype(np.float64).sum()))
    assert _float32_sum_error(ft.sum(x), value) <= 4 * numpy_error
    rows = np.full((4, 10**6), 0.1, np.float32)
    rows[1] *= 3
    xr = ft.make_placeholder("x", (4, N) if symbolic else rows.shape, np.float32)
    assert _float32_sum_error(ft.sum(xr, axis=1), rows) <= 12 * numpy_error


def test_float32_sum_of_random_values() -> None:
    value = np.random.default_rng(3).random(3 * 10**5 + 17, dtype=np.float32)
    x = ft.make_placeholder("x", (N,), np.float32)
    numpy_error = abs(float(value.sum()) - value.astype(np.float64).sum())
    assert _float32_sum_error(ft.sum(x), value) <= max(4 * numpy_error, 0.01)


@pytest.mark.parametrize("length", [0, 1, 127, 128, 129, 256, 257, 1000,
                                    128**2 + 3, 3 * 128**3 + 5])
def test_blocked_sums_of_any_length(length: int) -> None:
    """Exact sums (small integers in float64) of every blocking case:
    concrete and symbolic lengths, rows, several axes and means."""
    rng = np.random.default_rng(length)
    value = rng.integers(-8, 9, length).astype(np.float64)
    x = ft.make_placeholder("x", (length,), np.float64)
    xs = ft.make_placeholder("xs", (N,), np.float64)
    r = ft.make_placeholder("r", (3, N), np.float64)
    results = {"concrete": ft.sum(x), "symbolic": ft.sum(xs),
               "rows": ft.sum(r, axis=1), "all": ft.sum(r),
               "cols": ft.sum(r, axis=0), "scaled": ft.sum(xs * 2 + 1)}
    if length:
        results["mean"] = ft.mean(xs)
    rows = np.stack([value, -value, value * 3])
    inputs = {"x": value, "xs": value, "r": rows}
    compiled = ft.compile(ft.make_dict_of_named_arrays(results))(**inputs)
    expected = ft.evaluate_numpy(ft.make_dict_of_named_arrays(results), **inputs)
    for key in results:
        _assert_same(compiled[key], expected[key])


def test_sum_over_several_axes_and_complex() -> None:
    x = ft.make_placeholder("x", (3, N, 200), np.complex128)
    value = (np.arange(3 * 700 * 200).reshape(3, 700, 200) % 7
             + 1j * (np.arange(3 * 700 * 200).reshape(3, 700, 200) % 5))
    result = ft.make_dict_of_named_arrays({
        "axes12": ft.sum(x, axis=(1, 2)), "all": ft.sum(x),
        "axes01": ft.sum(x, axis=(0, 1))})
    compiled = ft.compile(result)(x=value)
    np.testing.assert_array_equal(compiled["axes12"], value.sum(axis=(1, 2)))
    np.testing.assert_array_equal(compiled["all"], value.sum())
    np.testing.assert_array_equal(compiled["axes01"], value.sum(axis=(0, 1)))


def _global_temporaries(result: Any) -> list[str]:
    import loopy as lp
    knl = ft.generate_loopy(result).program.default_entrypoint
    return [name for name, tv in knl.temporary_variables.items()
            if tv.address_space == lp.AddressSpace.GLOBAL]


def test_integer_and_short_sums_are_not_blocked() -> None:
    """Integer sums are exact in any order; float64 rows up to 16384 long
    keep their one loop nest (its accumulator lanes keep the error far
    below float32's), as do short float32 rows; longer float32 rows sum
    partial sums of blocks."""
    x = ft.make_placeholder("x", (N,), np.int64)
    y = ft.make_placeholder("y", (5, 256), np.float32)
    z = ft.make_placeholder("z", (8, 4096), np.float64)
    assert not _global_temporaries(ft.make_dict_of_named_arrays(
        {"ints": ft.sum(x), "short_rows": ft.sum(y, axis=1),
         "double_rows": ft.sum(z, axis=1)}))
    assert _global_temporaries(ft.sum(z.astype(np.float32), axis=1))
    assert _global_temporaries(ft.sum(ft.make_placeholder("w", (8, 4096 * 5),
                                                          np.float64), axis=1))


# }}}


# {{{ 8. inputs named like the parameters of __call__

def test_inputs_named_self_queue_result() -> None:
    names = ("self", "queue", "result")
    arrays = [ft.make_placeholder(name, (2,), np.float64) for name in names]
    total = arrays[0] + 2 * arrays[1] + 3 * arrays[2]
    inputs = {name: np.array([1.0, 2.0]) * (k + 1) for k, name in enumerate(names)}
    expected = inputs["self"] + 2 * inputs["queue"] + 3 * inputs["result"]
    _assert_same(ft.compile(total)(**inputs), expected)
    _, (out,) = ft.generate_loopy(total)(default_queue(), **inputs)
    _assert_same(out, expected)
    with pytest.raises(TypeError):
        ft.compile(total)(default_queue(), **inputs)

# }}}


def _wrapping_cases():
    u8 = ft.make_placeholder("x", (3,), np.uint8)
    i8 = ft.make_placeholder("x", (3,), np.int8)
    i16 = ft.make_placeholder("x", (3,), np.int16)
    u32 = ft.make_placeholder("x", (3,), np.uint32)
    i32 = ft.make_placeholder("x", (3,), np.int32)
    big = ft.make_placeholder("x", (5000,), np.int8)
    i64 = ft.make_placeholder("x", (4,), np.int64)
    info = np.iinfo(np.int64)
    int64_edges = np.array([info.max, -5, info.min, 7], np.int64)
    return [
        ((u8 - 1) > 0, np.array([0, 1, 200], np.uint8)),
        (ft.sum(i8 * 100), np.array([2, 3, 4], np.int8)),
        ((i8 * 100).astype(np.int64), np.array([2, 3, 4], np.int8)),
        (ft.cumsum(i8 * 100), np.array([2, 3, 4], np.int8)),
        (ft.amax(i8 * 100), np.array([2, 3, 4], np.int8)),
        (-i8 > 0, np.array([-128, 1, 2], np.int8)),
        (abs(i8).astype(np.int64), np.array([-128, -1, 2], np.int8)),
        ((~u8).astype(np.int64), np.array([3, 0, 255], np.uint8)),
        ((i16 + i16) > 0, np.array([30000, 1, -3], np.int16)),
        ((u32 - 2).astype(np.int64), np.array([2, 1, 7], np.uint32)),
        ((i32 + i32) > 0, np.array([2**30, 1, -5], np.int32)),
        (ft.sum((i32 + i32) // 2), np.array([2**30, 2**30, 3], np.int32)),
        (big * 100 + 1, (np.arange(5000) % 100).astype(np.int8)),
        # (int64: the compiler took x + 1 > x and (2 * x) // 2 == x as true
        # for int64's largest value)
        (ft.greater(i64 + 1, i64), int64_edges),
        (ft.equal((i64 * 2) // 2, i64), int64_edges),
        (ft.less(i64 - 1, i64), int64_edges),
        (ft.sum(ft.stack([i64, i64 * 3, -i64]), axis=0), int64_edges),
        ((~i64 + 1) < 0, int64_edges),
    ]


@pytest.mark.parametrize("case", range(18))
def test_integers_wrap_as_numpys(case):
    # (OpenCL C computes char and short in int, widens to wider literals
    # and leaves signed overflow undefined: intermediates that another
    # operation read in the same kernel did not wrap)
    lazy, data = _wrapping_cases()[case]
    with np.errstate(over="ignore"):
        want = ft.evaluate_numpy(lazy, x=data)
    got = ft.compile(lazy)(x=data)
    assert np.asarray(got).dtype == np.asarray(want).dtype
    np.testing.assert_array_equal(got, want)


def test_complex_powers_compile():
    # (c ** 2 failed inside loopy)
    c = ft.make_placeholder("c", (3,), np.complex128)
    data = np.array([1 + 2j, 3 - 1j, -0.5j])
    for lazy in (c ** 2, c ** 3, c ** 2.0, c ** (2 + 0j), c ** -1, c ** 0.5,
                 ft.sum(c * c)):
        np.testing.assert_allclose(ft.compile(lazy)(c=data),
                                   ft.evaluate_numpy(lazy, c=data), rtol=1e-12)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_complex_values_inside_a_kernel_of_real_arrays(dtype):
    # (complex products of real inputs whose results are real again failed
    # to build: loopy emitted a * b for cdouble_t values, its complex
    # arithmetic being on only in kernels with a complex array)
    x = ft.make_placeholder("x", (5,), dtype)
    data = np.array([0.0, 1.5, -2.0, 3.25, 4.0], dtype)
    cases = {
        "imag": (ft.imag(x * 2j), lambda v: np.imag(v * 2j)),
        "real": (ft.real(x * (1 + 1j)), lambda v: np.real(v * (1 + 1j))),
        "abs": (ft.abs(x * 1j - 1), lambda v: np.abs(v * 1j - 1)),
        "isnan": (ft.isnan(x * 1j), lambda v: np.isnan(v * 1j)),
        "equal": (ft.equal(x * 1j, 0), lambda v: np.equal(v * 1j, 0)),
        "cast": (ft.imag(x.astype(np.complex128) + 1j) * 3,
                 lambda v: np.imag(v.astype(np.complex128) + 1j) * 3),
        "sum": (ft.sum(ft.abs(x + 1j)), lambda v: np.sum(np.abs(v + 1j))),
        "amax": (ft.amax(ft.abs(x * x * 1j + 2)),
                 lambda v: np.amax(np.abs(v * v * 1j + 2))),
        "map": (ft.map(lambda v: ft.abs(v * 1j), x), lambda v: np.abs(v * 1j)),
    }
    got = ft.compile(ft.make_dict_of_named_arrays(
        {k: lazy for k, (lazy, _) in cases.items()}))(x=data)
    for name, (lazy, reference) in cases.items():
        want = reference(data)
        single = ft.compile(lazy)(x=data)
        for value in (got[name], single):
            assert value.dtype == want.dtype, name
            np.testing.assert_allclose(value, want, rtol=1e-6, err_msg=name)


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
def test_complex_logarithms_and_inverse_trigonometry(dtype):
    # (log2, log10 and exp2 of complex values, and the inverse trigonometric
    # functions, failed inside loopy: OpenCL has none for complex values)
    data = np.array([0.5 + 0.5j, 1j, -2, 3 - 4j, 1e-3 + 1e3j, 0j, 1], dtype)
    z = ft.make_placeholder("z", data.shape, dtype)
    names = ("log2", "log10", "exp2")
    got = ft.compile(ft.make_dict_of_named_arrays(
        {name: getattr(ft, name)(z) for name in names}))(z=data)
    with np.errstate(all="ignore"):
        for name in names:
            want = getattr(np, name)(data)
            assert got[name].dtype == want.dtype
            np.testing.assert_allclose(
                got[name], want, rtol=1e-5 if dtype == np.complex64 else 1e-13)
    for name in ("arcsin", "arccos", "arctan"):
        lazy = getattr(ft, name)(z)
        with pytest.raises(TypeError, match=f"compiling {name}\\(\\) of "
                           f"complex values \\({np.dtype(dtype)}\\) is not "
                           "supported yet"):
            ft.compile(lazy)
        with np.errstate(all="ignore"):
            np.testing.assert_allclose(ft.evaluate_numpy(lazy, z=data),
                                       getattr(np, name)(data), rtol=1e-6)


def _power_rtol(base, exponent, dtype):
    """The tolerance of ``base ** exponent`` against numpy: *dtype*'s
    rounding of ``exponent * log(base)``, which the power magnifies by that
    product's magnitude (``(-1 + 0.001j) ** 100`` turns by about 314
    radians, where one float32 ulp is 3e-5; NVIDIA's float32 ``log`` and
    ``atan2`` are as accurate as OpenCL asks, and numpy's ``cpowf``, which
    works in double, is better there)."""
    eps = np.finfo(dtype).eps
    with np.errstate(all="ignore"):
        magnified = np.abs(np.asarray(exponent, np.complex128)
                           * np.log(np.asarray(base, np.complex128)))
    magnified = np.where(np.isfinite(magnified), magnified, 0)
    return (1e-5 if dtype == np.complex64 else 1e-12) + 4 * eps * magnified


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
def test_complex_powers_as_numpys(dtype):
    # (pyopencl's power is exp(b log a): a zero base gave nan+nanj where
    # numpy gives 0, and integer exponents rounded otherwise than numpy's
    # repeated squaring)
    parts = [0.0, -0.0, 1.0, -1.0, 2.5, -0.5, 1e-3]
    bases = np.array([complex(a, b) for a in parts for b in parts], dtype)
    exponents = np.array([complex(a, b) for a in (
        0, 1, 2, 3, 4, 5, 7, -1, -2, -3, 0.5, -0.5, 17, 99, 100, -99)
        for b in (0, 1, -0.5)], dtype)
    a_data = np.repeat(bases, len(exponents))
    b_data = np.tile(exponents, len(bases))
    real = a_data.real.copy()
    ints = np.resize(np.array([0, 1, 2, 3, -1, -4, 9, 98, 99]), len(a_data))
    a = ft.make_placeholder("a", a_data.shape, dtype)
    b = ft.make_placeholder("b", a_data.shape, dtype)
    x = ft.make_placeholder("x", a_data.shape, real.dtype)
    k = ft.make_placeholder("k", a_data.shape, ints.dtype)
    result = ft.make_dict_of_named_arrays({
        "pow": a ** b, "real_base": x ** b, "real_exponent": a ** x,
        "int_exponent": a ** k, "root": a ** 0.5, "cube": a ** 3,
        "inverse_square": a ** -2, "zero_base": (a * 0) ** b})
    got = ft.compile(result)(a=a_data, b=b_data, x=real, k=ints)
    with np.errstate(all="ignore"):
        wants = {"pow": a_data ** b_data, "real_base": real ** b_data,
                 "real_exponent": a_data ** real, "int_exponent": a_data ** ints,
                 "root": a_data ** 0.5, "cube": a_data ** 3,
                 "inverse_square": a_data ** -2,
                 "zero_base": (a_data * 0) ** b_data}
    operands = {"pow": (a_data, b_data), "real_base": (real, b_data),
                "real_exponent": (a_data, real), "int_exponent": (a_data, ints),
                "root": (a_data, 0.5), "cube": (a_data, 3),
                "inverse_square": (a_data, -2), "zero_base": (a_data * 0, b_data)}
    for name, want in wants.items():
        assert got[name].dtype == want.dtype, name
        finite = np.isfinite(want)
        assert np.isfinite(got[name]).tolist() == finite.tolist(), name
        rtol = np.broadcast_to(_power_rtol(*operands[name], dtype), want.shape)
        g, w, r = got[name][finite], want[finite], rtol[finite]
        off = ~(np.abs(g - w) <= r * np.abs(w))
        assert not off.any(), (name, g[off][:5], w[off][:5], r[off][:5])
    # 0 to a power of positive real part is 0, to the power 0 is 1, to any
    # other power NaN
    zero_base = got["zero_base"]
    assert (zero_base[b_data.real > 0] == 0).all()
    assert (zero_base[b_data == 0] == 1).all()
    assert np.isnan(zero_base[(b_data.real <= 0) & (b_data != 0)]).all()


def _special_complex_pairs(dtype):
    """Every pair of complex values whose parts are -inf, -1, 0, 1, inf or
    NaN: numpy's order is lexicographic, except that the real parts decide
    only where neither imaginary part is NaN."""
    parts = [-np.inf, -1.0, 0.0, 1.0, np.inf, np.nan]
    values = np.array([complex(a, b) for a in parts for b in parts], dtype)
    return np.repeat(values, len(values)), np.tile(values, len(values))


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
def test_complex_comparisons_casts_and_extrema_as_numpys(dtype):
    # (they raised a TypeError at compile time; before that, an OpenCL
    # build error)
    a_data, b_data = _special_complex_pairs(dtype)
    n = len(a_data)
    a = ft.make_placeholder("a", (n,), dtype)
    b = ft.make_placeholder("b", (n,), dtype)
    cases = {
        "lt": (a < b, np.less), "le": (a <= b, np.less_equal),
        "gt": (a > b, np.greater), "ge": (a >= b, np.greater_equal),
        "eq": (ft.equal(a, b), np.equal),
        "ne": (ft.not_equal(a, b), np.not_equal),
        "max": (ft.maximum(a, b), np.maximum),
        "min": (ft.minimum(a, b), np.minimum),
        "lt_zero": (a < 0, lambda x, y: x < 0),
        "truth": (a.astype(bool), lambda x, y: x.astype(bool)),
        "where": (ft.where(a, b, 2), lambda x, y: np.where(x, y, 2)),
        "both": (ft.logical_and(a, b), np.logical_and),
        "negated": (ft.logical_not(a), lambda x, y: np.logical_not(x)),
        "real_part": ((a * 0.5).astype(np.float32),
                      lambda x, y: (x * 0.5).real.astype(np.float32)),
        "isnan": (ft.isnan(a), lambda x, y: np.isnan(x)),
        "isfinite": (ft.isfinite(a), lambda x, y: np.isfinite(x)),
    }
    got = ft.compile(ft.make_dict_of_named_arrays(
        {name: lazy for name, (lazy, _) in cases.items()}))(a=a_data, b=b_data)
    with np.errstate(invalid="ignore"):
        for name, (_, reference) in cases.items():
            want = reference(a_data, b_data)
            assert np.asarray(got[name]).dtype == want.dtype, name
            np.testing.assert_array_equal(got[name], want, err_msg=name)


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
def test_complex_reductions_by_numpys_order(dtype):
    rng = np.random.default_rng(3)
    n = ft.make_size_param("n")
    c = ft.make_placeholder("c", (n, 70), dtype)
    parts = np.array([-1.0, 0.0, 1.0, np.nan])
    lazies = [ft.amax(c), ft.amin(c), ft.amax(c, axis=0), ft.amin(c, axis=1),
              ft.any(c, axis=1), ft.all(c)]
    compiled = [ft.compile(lazy) for lazy in lazies]
    for rows, nan_share in ((1, 0.0), (5, 0.02), (300, 0.0), (300, 0.001)):
        data = (rng.choice(parts[:3], (rows, 70))
                + 1j * rng.choice(parts[:3], (rows, 70))).astype(dtype)
        data[rng.random(data.shape) < nan_share] = complex(0, np.nan)
        for lazy, fn in zip(lazies, compiled):
            np.testing.assert_array_equal(fn(c=data),
                                          ft.evaluate_numpy(lazy, c=data))
    np.testing.assert_array_equal(compiled[0](c=data), np.max(data))


@pytest.mark.parametrize("dtype", [np.bool_, np.int8, np.uint8, np.int16,
                                   np.uint16, np.int32, np.uint32, np.int64,
                                   np.uint64])
def test_extrema_with_python_numbers_in_every_integer_dtype(dtype):
    # (uint32 with a Python int failed to build: loopy prints the constant
    # as an unsigned long, min(u, 5ul) is ambiguous; uint64's amin had a
    # neutral element loopy could not type)
    data = np.array([7, 1, 3, 9, 0], dtype)
    x = ft.make_placeholder("x", (5,), dtype)
    bound = True if dtype == np.bool_ else 5
    cases = [(ft.minimum(x, bound), np.minimum(data, bound)),
             (ft.maximum(x, bound), np.maximum(data, bound)),
             (ft.amin(x), np.amin(data)), (ft.amax(x), np.amax(data)),
             (ft.amin(x, initial=bound), np.amin(data, initial=bound)),
             (ft.amax(x, initial=bound), np.amax(data, initial=bound))]
    if dtype != np.bool_:
        cases.append((ft.clip(x, 2, 8), np.clip(data, 2, 8)))
    for lazy, want in cases:
        got = ft.compile(lazy)(x=data)
        assert np.asarray(got).dtype == want.dtype
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int16, np.uint16,
                                   np.int32, np.uint32, np.int64, np.uint64])
def test_extrema_of_long_integer_arrays(dtype):
    # (from about 32,768 elements, reductions in lanes used loopy's max and
    # min: no neutral element for char and short, UINT_MAX and ULONG_MAX
    # untyped, max(ushort, ushort) ambiguous)
    square = ft.make_placeholder("square", (64, 64), dtype)
    flat = ft.make_placeholder("flat", (40000,), dtype)
    rng = np.random.default_rng(2)
    info = np.iinfo(dtype)
    square_data = rng.integers(info.min, info.max, (64, 64), dtype=dtype,
                               endpoint=True)
    flat_data = rng.integers(info.min, info.max, 40000, dtype=dtype,
                             endpoint=True)
    cases = {}
    for name, fn, ref in (("max", ft.amax, np.amax), ("min", ft.amin, np.amin),
                          ("argmax", ft.argmax, np.argmax),
                          ("argmin", ft.argmin, np.argmin)):
        for axis in (0, 1):
            cases[f"{name}{axis}"] = (fn(square, axis=axis),
                                      ref(square_data, axis=axis))
        cases[f"{name}_flat"] = (fn(flat), ref(flat_data))
    got = ft.compile(ft.make_dict_of_named_arrays(
        {name: lazy for name, (lazy, _) in cases.items()}))(
            square=square_data, flat=flat_data)
    for name, (_, want) in cases.items():
        np.testing.assert_array_equal(got[name], want, err_msg=name)


@pytest.mark.parametrize("evaluator", ["compile", "evaluate_numpy"])
def test_results_are_arrays_of_their_own(evaluator):
    # (two names of one array returned one buffer: changing one result
    # changed the other; evaluate_numpy returned the caller's input itself)
    x = ft.make_placeholder("x", (3,), np.float64)
    wrapped = ft.make_data_wrapper(np.arange(3.0))
    results = ft.make_dict_of_named_arrays(
        {"a": 2 * x, "b": 2 * x, "same": x, "tail": x[1:], "w": wrapped})
    data = np.ones(3)
    run = (ft.compile(results) if evaluator == "compile"
           else lambda **kw: ft.evaluate_numpy(results, **kw))
    got = run(x=data)
    for name in got:
        got[name][...] = -7
    np.testing.assert_array_equal(data, np.ones(3))
    np.testing.assert_array_equal(wrapped.data, np.arange(3.0))
    again = run(x=data)
    np.testing.assert_array_equal(again["a"], [2.0, 2.0, 2.0])
    np.testing.assert_array_equal(again["b"], [2.0, 2.0, 2.0])
    single = (ft.compile(x)(x=data) if evaluator == "compile"
              else ft.evaluate_numpy(x, x=data))
    assert not np.may_share_memory(single, data)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_nan_constants(dtype):
    # (a NaN constant made every node unequal to its twin, so each compile
    # missed the caches, with loopy's "bare NaN" and collision warnings)
    x = ft.make_placeholder("x", (5,), dtype)
    data = np.array([1, np.nan, -2, 0, np.inf], dtype)
    masked = ft.where(ft.isnan(x), np.nan, x * 2)
    assert masked is ft.where(ft.isnan(x), np.nan, x * 2)
    cases = {
        "masked": (masked, np.where(np.isnan(data), np.nan, data * 2)),
        "full": (ft.full((5,), np.nan, dtype) + x,
                 np.full(5, np.nan, dtype) + data),
        "equal": (ft.equal(x, np.nan), data == np.nan),
        "unequal": (ft.not_equal(x, np.nan), data != np.nan),
        "maximum": (ft.maximum(x, np.nan), np.maximum(data, np.nan)),
        "clip": (ft.clip(x, np.nan, 1), np.clip(data, np.nan, 1)),
        "amax": (ft.amax(x, initial=np.nan), np.amax(data, initial=np.nan)),
        "pad": (ft.pad(x, 1, constant_values=np.nan),
                np.pad(data, 1, constant_values=np.nan)),
    }
    results = ft.make_dict_of_named_arrays(
        {name: lazy for name, (lazy, _) in cases.items()})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = ft.compile(results)(x=data)
        assert ft.compile(ft.make_dict_of_named_arrays(
            {name: lazy for name, (lazy, _) in cases.items()})).from_cache
    reference = ft.evaluate_numpy(results, x=data)
    for name, (_, want) in cases.items():
        for value in (got[name], reference[name]):
            assert np.asarray(value).dtype == np.asarray(want).dtype, name
            np.testing.assert_array_equal(value, want, err_msg=name)


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
def test_complex_division_as_numpys(dtype):
    # (pyopencl's division gave nan+nanj for a zero divisor, numpy infinities;
    # now numpy's algorithm, bit for bit on these values)
    parts = [-np.inf, -2.5, -0.0, 0.0, 1e-30, 1.0, 3.0, 1e30, np.inf, np.nan]
    values = np.array([complex(a, b) for a in parts for b in parts], dtype)
    a_data = np.repeat(values, len(values))
    b_data = np.tile(values, len(values))
    a = ft.make_placeholder("a", a_data.shape, dtype)
    b = ft.make_placeholder("b", a_data.shape, dtype)
    got = ft.compile(ft.make_dict_of_named_arrays(
        {"q": a / b, "zero": a / 0, "real": a / 2.0, "inverse": 1 / b}))(
            a=a_data, b=b_data)
    with np.errstate(all="ignore"):
        wants = {"q": a_data / b_data, "zero": a_data / 0,
                 "real": a_data / 2.0, "inverse": 1 / b_data}
    for name, want in wants.items():
        assert got[name].dtype == want.dtype
        for part in ("real", "imag"):
            g, w = getattr(got[name], part), getattr(want, part)
            np.testing.assert_array_equal(np.signbit(g) | np.isnan(g),
                                          np.signbit(w) | np.isnan(w),
                                          err_msg=name)
            np.testing.assert_array_equal(g, w, err_msg=name)


def _bitwise_comparison_cases():
    x = ft.make_placeholder("x", (16,), np.int32)
    return [
        ft.equal(x & 1, 0), ft.greater(x | 4, 4), ft.less(x ^ 1, 3),
        ft.not_equal(x & 3, x | 3), (x & 2).astype(bool), ft.any(x & 16),
        ft.where(x & 2, 1, 0), ft.logical_not(x & 4),
        ft.equal(ft.equal(x, 3), ft.less(x, 5)),
    ]


@pytest.mark.parametrize("case", range(9))
def test_bitwise_operands_of_comparisons(case):
    # (loopy printed (x & 1) == 0 with Python's precedences, as
    # x & 1 == 0, which C reads as x & (1 == 0))
    lazy = _bitwise_comparison_cases()[case]
    data = np.arange(16, dtype=np.int32)
    np.testing.assert_array_equal(ft.compile(lazy)(x=data),
                                  ft.evaluate_numpy(lazy, x=data))


def test_conditions_keep_the_widening_of_data():
    # (int64 casts were dropped in every condition: the square of an int32
    # read overflowed in int32 inside a where)
    y = ft.make_placeholder("y", (4,), np.int32)
    square = y.astype(np.int64) * y.astype(np.int64)
    data = np.array([50000, 3, -50000, 70000], np.int32)
    for lazy in (ft.where(square > 2**31, 1, 0),
                 ft.where(y.astype(np.int64) + 2**31 > 2**32, y, -y)):
        np.testing.assert_array_equal(ft.compile(lazy)(y=data),
                                      ft.evaluate_numpy(lazy, y=data))


def _non_finite_constant_cases():
    w = ft.make_placeholder("w", (5,), np.float64)
    v = ft.make_placeholder("w", (5,), np.float32)
    return [
        ft.maximum(w, -np.inf), ft.minimum(w, np.inf), ft.clip(w, -np.inf, np.inf),
        w % np.inf, w // np.inf, w % np.nan, w // np.nan, np.inf % w, np.inf // w,
        ft.arctan2(np.inf, w), ft.arctan2(w, -np.inf), ft.where(w > 0, np.inf, w),
        ft.maximum(v, -np.inf), v // np.float32(np.inf), w ** 0.5, v ** 0.5,
    ]


@pytest.mark.parametrize("case", range(16))
def test_non_finite_constants_as_numpys(case):
    # (a float infinity or NaN constant in a condition crashed loopy's
    # bounds check; a double infinity printed as OpenCL's float INFINITY made
    # calls ambiguous; w // nan read garbage; x ** 0.5 is sqrt in numpy)
    lazy = _non_finite_constant_cases()[case]
    data = np.array([1.5, -2.0, np.nan, -np.inf, -0.0], lazy.dtype)
    with np.errstate(all="ignore"):
        want = ft.evaluate_numpy(lazy, w=data)
    got = ft.compile(lazy)(w=data)
    assert got.dtype == want.dtype
    numbers = ~np.isnan(want)
    np.testing.assert_array_equal(np.signbit(got[numbers]), np.signbit(want[numbers]))
    np.testing.assert_allclose(got, want, rtol=1e-6)


def test_unsigned_constants_beyond_int64():
    # (loopy typed a comparison by its operands' difference and overflowed
    # negating 2**63 and more; ft.where took 2**63 for an int64)
    u = ft.make_placeholder("u", (3,), np.uint64)
    i = ft.make_placeholder("i", (3,), np.int64)
    top = np.uint64(2**64 - 1)
    uv = np.array([0, 2**63, 2**64 - 1], np.uint64)
    iv = np.array([-1, 0, 2**63 - 1], np.int64)
    cases = [
        (ft.greater(2**63, u), np.greater(2**63, uv), {"u": uv}),
        (ft.equal(2**64 - 1, u), np.equal(2**64 - 1, uv), {"u": uv}),
        (ft.less(i, top), np.less(iv, top), {"i": iv}),
        (ft.where(u > 1, u, 2**63), np.where(uv > 1, uv, 2**63), {"u": uv}),
        (ft.where(u > 1, 2**64 - 1, u), np.where(uv > 1, 2**64 - 1, uv), {"u": uv}),
    ]
    if numpy_where_wraps_python_integers():
        cases.append((ft.where(i > 0, i, 2**63), np.where(iv > 0, iv, 2**63),
                      {"i": iv}))
    else:
        # (numpy 2.5 raises where older versions wrapped; ftlazy follows)
        with pytest.raises(OverflowError, match="out of bounds for int64"):
            ft.where(i > 0, i, 2**63)
    for lazy, want, inputs in cases:
        for got in (ft.evaluate_numpy(lazy, **inputs), ft.compile(lazy)(**inputs)):
            assert got.dtype == want.dtype
            np.testing.assert_array_equal(got, want)
    with pytest.raises(OverflowError, match="out of bounds for uint64"):
        ft.where(u > 1, u, 2**64)


def test_float16_inside_a_comparison_is_refused_clearly():
    # (a float16 scalar made the comparison float16 inside: loopy failed
    # with "unable to map dtype 'float16'")
    b = ft.make_placeholder("b", (3,), np.bool_)
    lazy = ft.equal(b, np.float16(1.0))
    data = np.array([True, False, True])
    np.testing.assert_array_equal(ft.evaluate_numpy(lazy, b=data), data)
    with pytest.raises(TypeError, match="float16 values are not supported.*"
                       "cast to float32"):
        ft.compile(lazy)
    # a float16 input is named as the user named it (the message named the
    # renamed input '_ft_in0')
    h = ft.make_placeholder("h_input", (3,), np.float16)
    with pytest.raises(TypeError, match="float16 values are not supported.*"
                       "name='h_input'"):
        ft.compile(h + 1)


def test_products_in_indices_compute_in_64_bits():
    # (int64 casts were dropped in indices: a product of int32 reads, or of
    # positions past 2**16, overflowed in 32 bits: a wrong element, and
    # after the int64 wrapping of guards, a read far out of range)
    i = ft.make_placeholder("i", (1,), np.int32)
    c = ft.make_placeholder("c", (1,), np.int64)
    y = ft.make_placeholder("y", (4,), np.float64)
    k = i.astype(np.int64)
    lazy = y[k * k - c]
    inputs = dict(i=np.array([65536], np.int32), c=np.array([2**32 - 1]),
                  y=np.arange(4.0))
    np.testing.assert_array_equal(ft.compile(lazy)(**inputs), [1.0])
    n = 70000
    positions = ft.arange(n)
    x = ft.make_placeholder("x", (n,), np.float32)
    xv = np.random.default_rng(0).random(n).astype(np.float32)
    want = xv[(np.arange(n) * np.arange(n)) % n]
    for lazy in (x[(positions * positions) % n],
                 ft.gather(x, (positions * positions) % n)):
        np.testing.assert_array_equal(ft.compile(lazy)(x=xv), want)
