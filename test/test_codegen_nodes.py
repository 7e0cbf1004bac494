# SPDX-License-Identifier: MIT
"""Map, Gather and the shapes of results (DictOfNamedArrays with shared
arrays, placeholder and 0-d outputs) through the OpenCL target, against the
reference evaluator. All results are one program, compiled once."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest

import ftlazy as ft


def assert_same(actual: Any, expected: Any, what: str) -> None:
    """*actual* equals *expected* in dtype, shape and value (exactly for
    integers and bools; floats to rtol 1e-12 or 1e-5 for float32, with a
    few ulps of 1 of absolute slack for reordered sums)."""
    actual, expected = np.asarray(actual), np.asarray(expected)
    assert actual.dtype == expected.dtype, (
        f"{what}: dtype {actual.dtype}, expected {expected.dtype}")
    assert actual.shape == expected.shape, (
        f"{what}: shape {actual.shape}, expected {expected.shape}")
    if expected.dtype.kind in "fc":
        single = expected.dtype in (np.float32, np.complex64)
        rtol, atol = (1e-5, 1e-6) if single else (1e-12, 1e-14)
        np.testing.assert_allclose(actual, expected, rtol=rtol, atol=atol,
                                   equal_nan=True, err_msg=what)
    else:
        np.testing.assert_array_equal(actual, expected, err_msg=what)


X = ft.make_placeholder("X", (4, 3), np.float64)
W = ft.make_placeholder("W", (3, 2), np.float64)
Y = ft.make_placeholder("Y", (4, 2, 3), np.float64)
XF = ft.make_placeholder("XF", (4, 3), np.float32)
EMB = ft.make_placeholder("emb", (6, 3), np.float64)
IDS = ft.make_placeholder("ids", (5,), np.int64)
IDS2 = ft.make_placeholder("ids2", (2, 2), np.int32)
WEIGHTS = np.linspace(-1.0, 1.0, 6).reshape(3, 2)

PAIR = ft.map(lambda row: (row * 2, ft.sum(row)), X)
SHARED = X * 3 + 1
ROW_SUMS = ft.sum(X, axis=1)
DOUBLED = ft.map(lambda row: row * 2, X)
TOTAL = ft.sum(X)

RESULTS = {
    # Map
    "map_closure": ft.map(lambda row: ft.tanh(row @ W), X),
    "map_wrapped_weight": ft.map(lambda row: row @ ft.make_data_wrapper(WEIGHTS), X),
    "map_tuple_first": PAIR[0], "map_tuple_second": PAIR[1],
    "map_nested": ft.map(lambda mat: ft.map(lambda row: row * ft.max(row), mat), Y),
    "map_reduction": ft.map(lambda mat: ft.sum(mat, axis=0) / ft.amax(mat), Y),
    "map_two_inputs": ft.map(lambda a, b: a @ b, Y,
                             ft.reshape(ft.arange(24, dtype=np.float64), (4, 3, 2))),
    "map_float32": ft.map(lambda row: ft.exp(row) * 2, XF),
    "map_then_op": ft.map(lambda row: row - ft.sum(row) / 3, X) * 2,
    "map_to_scalar_bool": ft.map(lambda row: ft.any(row > 0.5), X),
    # Gather
    "gather": ft.gather(EMB, IDS), "gather_axis1": ft.gather(EMB, IDS2, axis=1),
    "gather_negative": ft.gather(EMB, -IDS - 1),
    "gather_of_expr": ft.gather(EMB * 2, IDS % 6),
    "gather_2d_ids": ft.gather(EMB, IDS2), "gather_in_map": ft.map(
        lambda ids: ft.sum(ft.gather(EMB, ids), axis=0), IDS2),
    "gather_then_reduce": ft.sum(ft.gather(EMB, IDS), axis=1),
    # results that other results read
    "row_sums": ROW_SUMS, "scaled_by_row_sums": ROW_SUMS[:, None] * X,
    "doubled": DOUBLED, "doubled_plus_one": DOUBLED + 1, "total": TOTAL,
    "normalized": X / TOTAL,
    "softmax": ft.exp(X - ft.amax(X, axis=1, keepdims=True)) / ft.sum(
        ft.exp(X - ft.amax(X, axis=1, keepdims=True)), axis=1, keepdims=True),
    "variance": ft.var(X, axis=0),
    # result shapes
    "shared_a": SHARED, "shared_b": SHARED, "placeholder_out": X,
    "placeholder_twice": X, "zero_d": ft.sum(X), "zero_d_int": ft.sum(IDS),
    "zero_d_bool": ft.any(IDS2 < 0), "zero_d_index": X[1, 2],
}

IDS_VALUE = np.array([0, 5, -1, 2, -6])


def _inputs(**changes: np.ndarray) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(11)
    inputs = {"X": rng.normal(size=(4, 3)), "W": rng.normal(size=(3, 2)),
              "Y": rng.normal(size=(4, 2, 3)),
              "XF": rng.normal(size=(4, 3)).astype(np.float32),
              "emb": rng.normal(size=(6, 3)), "ids": IDS_VALUE,
              "ids2": np.array([[0, 1], [-1, 2]], np.int32)}
    inputs.update(changes)
    return inputs


@pytest.fixture(scope="module")
def program() -> Any:
    """All :data:`RESULTS`, compiled once."""
    return ft.compile(ft.make_dict_of_named_arrays(RESULTS))


@pytest.fixture(scope="module")
def results(program) -> tuple[dict, dict]:
    inputs = _inputs()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        reference = ft.evaluate_numpy(ft.make_dict_of_named_arrays(RESULTS), **inputs)
    return program(**inputs), reference


@pytest.mark.parametrize("name", list(RESULTS))
def test_matches_reference(results, name: str) -> None:
    compiled, reference = results
    assert_same(compiled[name], reference[name], name)


def test_against_numpy(results) -> None:
    """A few results against numpy directly (the evaluator's own tests
    cover the rest)."""
    compiled, _ = results
    a = _inputs()
    X, W, emb, ids = a["X"], a["W"], a["emb"], a["ids"]
    assert_same(compiled["map_closure"], np.tanh(X @ W), "map_closure")
    assert_same(compiled["map_tuple_second"], X.sum(axis=1), "map_tuple_second")
    assert_same(compiled["gather"], emb[ids], "gather")
    assert_same(compiled["gather_axis1"], emb[:, a["ids2"]], "gather_axis1")
    assert_same(compiled["gather_in_map"], emb[a["ids2"]].sum(axis=1), "gather_in_map")
    assert_same(compiled["placeholder_out"], X, "placeholder_out")
    assert_same(compiled["zero_d"], X.sum(), "zero_d")
    assert compiled["zero_d"].shape == () and compiled["zero_d_bool"].shape == ()
    np.testing.assert_array_equal(compiled["shared_a"], compiled["shared_b"])


def test_result_names_are_the_users(results) -> None:
    compiled, _ = results
    assert set(compiled) == set(RESULTS)


@pytest.mark.parametrize("bad", [[0, 6, 1, 1, 1], [0, 1, -7, 1, 1]],
                         ids=["too_large", "too_negative"])
def test_gather_out_of_range(program, bad: list[int]) -> None:
    with pytest.raises(IndexError, match="out of range for axis 0 with size 6"):
        program(**_inputs(ids=np.array(bad)))


def test_gather_out_of_range_inside_map(program) -> None:
    with pytest.raises(IndexError, match="out of range"):
        program(**_inputs(ids2=np.array([[0, 1], [6, 2]], np.int32)))


def test_program_still_works_after_index_error(program) -> None:
    """A failed index check leaves the program usable."""
    with pytest.raises(IndexError):
        program(**_inputs(ids=np.array([9, 0, 0, 0, 0])))
    out = program(**_inputs())
    assert_same(out["gather"], _inputs()["emb"][IDS_VALUE], "gather after error")


def test_advanced_index_out_of_range() -> None:
    a = ft.make_placeholder("a", (5,), np.float64)
    idx = ft.make_placeholder("idx", (3,), np.int32)
    f = ft.compile(a[idx] * 2)
    value = np.arange(5.0)
    np.testing.assert_array_equal(f(a=value, idx=np.array([4, -5, 0], np.int32)),
                                  value[[4, -5, 0]] * 2)
    with pytest.raises(IndexError, match="out of range for axis 0 with size 5"):
        f(a=value, idx=np.array([0, 5, 0], np.int32))


N = ft.make_size_param("n")
SX = ft.make_placeholder("SX", (N, 3), np.float64)
SI = ft.make_placeholder("SI", (N, 2), np.int32)
V = ft.make_placeholder("V", (5,), np.float64)
SYMBOLIC_MAPS = {
    "centered": ft.map(lambda row: row - ft.sum(SX, axis=0) / N, SX),
    "int_body": ft.map(lambda row: row * 2 + 1, SI),
    "constant_body": ft.map(lambda row: ft.sum(V), SX),
    "zero_d_body": ft.map(lambda row: ft.amax(row), SX),
    "indexing_body": ft.map(lambda idx: V[idx], SI),
    "map_of_map": ft.map(lambda row: ft.sum(row), ft.map(lambda row: row * row, SX)),
    "two_inputs": ft.map(lambda a, b: a[:2] * b, SX, SI),
    "reversed_body": ft.map(lambda row: row[::-1], SX),
    "outer_body": ft.map(lambda row: ft.einsum("i,j->ij", row, row), SX),
    "gather_body": ft.map(lambda idx: ft.gather(V, idx), SI),
}


@pytest.fixture(scope="module")
def symbolic_maps() -> Any:
    """:data:`SYMBOLIC_MAPS`, compiled once for every length."""
    return ft.compile(ft.make_dict_of_named_arrays(SYMBOLIC_MAPS))


@pytest.mark.parametrize("length", [4, 1, 0])
def test_maps_over_a_symbolic_length(symbolic_maps, length: int) -> None:
    rng = np.random.default_rng(12)
    inputs = {"SX": rng.normal(size=(length, 3)),
              "SI": rng.integers(0, 5, (length, 2)).astype(np.int32),
              "V": rng.normal(size=5)}
    compiled = symbolic_maps(**inputs)
    reference = ft.evaluate_numpy(ft.make_dict_of_named_arrays(SYMBOLIC_MAPS),
                                  **inputs)
    for name in SYMBOLIC_MAPS:
        assert_same(compiled[name], reference[name], f"{name} (n={length})")
    assert compiled["outer_body"].shape == (length, 3, 3)


def test_single_array_result_is_an_array() -> None:
    """A single array compiles to a callable returning one numpy array."""
    f = ft.compile(ft.sum(X, axis=0))
    out = f(X=np.ones((4, 3)))
    assert isinstance(out, np.ndarray)
    assert_same(out, np.full(3, 4.0), "sum")


def test_placeholder_as_single_output() -> None:
    f = ft.compile(X)
    value = np.arange(12.0).reshape(4, 3)
    out = f(X=value)
    assert_same(out, value, "placeholder")
    assert out is not value
