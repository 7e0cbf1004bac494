# SPDX-License-Identifier: MIT
"""A size parameter and a placeholder (or data wrapper) with one name cannot
be bound by name: a ValueError at build time where they meet in one node,
and in any case before evaluation binds the inputs (it used to be
``TypeError: size parameter 'n' must be an int`` from the binding)."""

import numpy as np
import pytest

import ftlazy as ft
from ftlazy.analysis import (
    check_inputs_against_size_names, check_unique_input_names)

F64 = np.float64
CLASH = "two different inputs are named 'n'"


def test_placeholder_named_like_its_own_size_param():
    n = ft.make_size_param("n")
    with pytest.raises(ValueError, match=CLASH) as info:
        ft.make_placeholder("n", (n,), F64)
    assert "placeholder 'n' of shape (n,)" in str(info.value)
    with pytest.raises(ValueError, match=CLASH):
        ft.make_placeholder("n", (3, 2 * n + 1), F64)


def test_data_wrapper_named_like_its_own_size_param():
    n = ft.make_size_param("n")
    with pytest.raises(ValueError, match=CLASH) as info:
        ft.make_data_wrapper(np.ones(3), name="n", shape=(n,))
    assert "data wrapper 'n'" in str(info.value)


def test_clash_between_operands_of_one_node():
    n = ft.make_size_param("n")
    y = ft.make_placeholder("n", (1,), F64)
    z = ft.make_placeholder("z", (n,), F64)
    with pytest.raises(ValueError, match=CLASH) as info:
        y + z
    assert "the size parameter 'n' in the shape (n,)" in str(info.value)
    with pytest.raises(ValueError, match=CLASH):
        z * y


def test_clash_between_results_combined_in_a_dict():
    # a DictOfNamedArrays is no operation: it is checked when evaluated
    n = ft.make_size_param("n")
    y = ft.make_placeholder("n", (4,), F64)
    z = ft.make_placeholder("z", (n,), F64)
    d = ft.make_dict_of_named_arrays({"a": y, "b": z})
    with pytest.raises(ValueError, match=CLASH):
        ft.evaluate_numpy(d, n=np.ones(4), z=np.ones(3))
    with pytest.raises(ValueError, match=CLASH):
        check_unique_input_names(d)


def test_clash_between_a_size_param_node_and_a_placeholder_operand():
    n = ft.make_size_param("n")
    with pytest.raises(ValueError, match=CLASH):
        ft.make_placeholder("n", (2,), np.int64) + n


def test_clash_through_a_map_input():
    n = ft.make_size_param("n")
    y = ft.make_placeholder("n", (3, 2), F64)
    z = ft.make_placeholder("z", (3, n), F64)
    with pytest.raises(ValueError, match=CLASH):
        ft.map(lambda a, b: ft.sum(a) + ft.sum(b), y, z)


def test_indirect_clash_is_caught_before_evaluation_binds_inputs():
    # the two only meet through reductions: no node sees both directly
    n = ft.make_size_param("n")
    y = ft.make_placeholder("n", (4,), F64)
    z = ft.make_placeholder("z", (n,), F64)
    total = ft.sum(y) + ft.sum(z)
    with pytest.raises(ValueError, match=CLASH) as info:
        ft.evaluate_numpy(total, n=np.ones(4), z=np.ones(3))
    assert "size parameter in shape (n,)" in str(info.value)
    with pytest.raises(ValueError, match=CLASH):
        check_unique_input_names(total)
    d = ft.make_dict_of_named_arrays({"a": ft.sum(y), "b": ft.sum(z)})
    with pytest.raises(ValueError, match=CLASH):
        ft.evaluate_numpy(d, n=np.ones(4), z=np.ones(3))


def test_clash_inside_a_loop_body_shape_is_caught_before_evaluation():
    n = ft.make_size_param("n")
    y = ft.make_placeholder("n", (3,), F64)
    xs = ft.make_placeholder("xs", (2, 3), F64)
    # the body's zeros((n,)) is the only use of the size param n
    mapped = ft.map(lambda row: ft.sum(ft.zeros((n,))) + ft.sum(row), xs)
    total = ft.sum(mapped) + ft.sum(y)
    with pytest.raises(ValueError, match=CLASH):
        check_unique_input_names(total)
    with pytest.raises(ValueError, match=CLASH):
        ft.evaluate_numpy(total, n=np.ones(3), xs=np.ones((2, 3)))


def test_check_inputs_against_size_names_is_a_set_check():
    y = ft.make_placeholder("n", (4,), F64)
    x = ft.make_placeholder("x", (4,), F64)
    check_inputs_against_size_names([x, y], {"m"})
    with pytest.raises(ValueError, match=CLASH):
        check_inputs_against_size_names([x, y], {"n"})


def test_distinct_names_still_evaluate():
    n = ft.make_size_param("n")
    x = ft.make_placeholder("x", (n,), F64)
    result = ft.evaluate_numpy(ft.sum(x) + n, x=np.ones(3))
    assert result == 6.0
