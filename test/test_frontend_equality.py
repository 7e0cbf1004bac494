# SPDX-License-Identifier: MIT
"""``==`` and ``!=`` on arrays: structural between arrays (hashing and
dictionaries rely on it), an error against values numpy would compare
elementwise."""

import numpy as np
import pytest

import ftlazy as ft


@pytest.fixture
def x():
    return ft.make_placeholder("x", (3,), np.float64)


@pytest.mark.parametrize("value", [
    0, 0.5, True, 1j, np.float64(0), np.int32(2), np.zeros(3), np.float64(0)[()],
    np.array(1.0), np.zeros((2, 3), np.int8)])
def test_comparing_with_a_value_is_a_type_error(x, value):
    with pytest.raises(TypeError, match=r"use ft\.equal\(x, y\)"):
        x == value  # noqa: B015
    with pytest.raises(TypeError, match=r"use ft\.not_equal\(x, y\)"):
        x != value  # noqa: B015


def test_message_names_the_array_and_the_value(x):
    with pytest.raises(TypeError, match=r"Placeholder\(shape=\(3,\), dtype=float64, "
                       r"name='x'\) with int 0 by '=='.*compares graphs"):
        x == 0  # noqa: B015
    with pytest.raises(TypeError, match=r"array \(ndarray\) of shape \(2, 5\) and "
                       "dtype int8"):
        x != np.zeros((2, 5), np.int8)  # noqa: B015


def test_reflected_comparison_with_a_python_number_raises(x):
    with pytest.raises(TypeError, match="ft.equal"):
        0 == x  # noqa: B015
    with pytest.raises(TypeError, match="ft.not_equal"):
        1.5 != x  # noqa: B015


def test_where_on_array_equals_number_raises_instead_of_false(x):
    # used to build where(False, 1.0, x) silently
    with pytest.raises(TypeError, match="ft.equal"):
        ft.where(x == 0, 1.0, x)
    result = ft.where(ft.equal(x, 0), 1.0, x)
    np.testing.assert_array_equal(
        ft.evaluate_numpy(result, x=np.array([0.0, 2.0, 0.0])), [1.0, 2.0, 1.0])


def test_every_node_class_refuses_value_comparison(x):
    n = ft.make_size_param("n")
    derived = [x + 1, x.reshape(3, 1), x[1:], ft.sum(x), n,
               ft.make_data_wrapper(np.ones(2)), ft.stack([x, x])]
    for a in derived:
        with pytest.raises(TypeError, match="ft.equal"):
            a == 1  # noqa: B015


def test_structural_equality_and_hashing_between_arrays_stay(x):
    y = ft.make_placeholder("y", (3,), np.float64)
    assert (x + 1) == (x + 1)
    assert not ((x + 1) != (x + 1))
    assert x != y and not (x == y)
    table = {x + 1: "a", y: "b"}
    assert table[x + 1] == "a" and table[y] == "b"
    assert hash(x * 2) == hash(x * 2)
    assert len({x, y, x + 0.5, x + 0.5}) == 3


def test_other_objects_compare_unequal(x):
    assert not (x == None)  # noqa: E711
    assert x != None  # noqa: E711
    assert not (x == "x")
    assert x != object()
    # containers of nodes may hold tuples: membership tests keep working
    assert x in [(1, 2), x] and (x + 1) not in [(), [0.0], x]


def test_arange_with_an_array_step_reports_the_step():
    # the symbolic arange check compared the step with 1 by ==
    n = ft.make_size_param("n")
    with pytest.raises(ValueError, match="needs an integer start and step 1"):
        ft.arange(0, n, n)
    assert str(ft.arange(0, n, 1).shape[0]) == "n"
