# SPDX-License-Identifier: MIT
"""Arrays computed inside a traced ``map``/``scan``/``fold`` body belong to
that body. Using one outside it was an ``AssertionError: unexpected node in
code generation`` at compile time; it is a ValueError naming the array when
the outer node is built (or the loop that would capture it)."""

import numpy as np
import pytest

import ftlazy as ft
from ftlazy.node import CLOSED_BODY_SCOPE

F64 = np.float64
X = ft.make_placeholder("X", (4, 3), F64)
XV = np.arange(12.0).reshape(4, 3)
LEAKED = (r"IndexLambda\(shape=\(3,\), dtype=float64, inputs=\[[^]]*_TraceParam"
          r"[^]]*\], nodes=\d+\) was computed inside the body")


def _leaky_map():
    leaked = []

    def body(row):
        r = row * 2
        leaked.append(r)
        return r + 1
    return ft.map(body, X), leaked[0]


def test_leaked_intermediate_used_after_the_map():
    result, leaked = _leaky_map()
    with pytest.raises(ValueError, match=LEAKED + r" of an ft\.map") as info:
        result + leaked
    assert "return it from the body" in str(info.value)
    with pytest.raises(ValueError, match=LEAKED):
        ft.sum(leaked)
    with pytest.raises(ValueError, match=LEAKED):
        ft.stack([leaked, leaked])


def test_leaked_trace_parameter_itself():
    params = []
    ft.map(lambda row: params.append(row) or row * 2, X)
    with pytest.raises(ValueError, match=r"_TraceParam\(shape=\(3,\).*inside the "
                                         r"body of an ft\.map"):
        params[0] + 1


def test_leaked_array_used_in_another_maps_body():
    _, leaked = _leaky_map()
    with pytest.raises(ValueError, match=LEAKED):
        ft.map(lambda row: row + leaked, X)


def test_leaked_array_returned_by_another_maps_body_is_not_captured():
    _, leaked = _leaky_map()
    with pytest.raises(ValueError, match=r"the body of this map reads "
                                         r"IndexLambda.*earlier ft\.map"):
        ft.map(lambda row: (row, leaked), X)


def test_leaked_array_as_map_input_or_result():
    _, leaked = _leaky_map()
    with pytest.raises(ValueError, match=LEAKED):
        ft.map(lambda v: v * 3, leaked)
    with pytest.raises(ValueError, match=LEAKED):
        ft.make_dict_of_named_arrays({"a": leaked})


def test_evaluating_a_leaked_array_directly():
    _, leaked = _leaky_map()
    with pytest.raises(ValueError, match=r"evaluate_numpy: IndexLambda\(shape="
                                         r"\(3,\), dtype=float64, .*\) was computed "
                                         r"inside the body of an ft\.map"):
        ft.evaluate_numpy(leaked, X=XV)


def test_evaluating_inside_the_body_while_it_is_traced():
    def body(row):
        ft.evaluate_numpy(row * 2, X=XV)
        return row
    with pytest.raises(ValueError, match=r"evaluate_numpy: .* only exists inside "
                                         "that loop"):
        ft.map(body, X)


def test_scan_and_fold_carries_leak_too():
    leaked = []

    def step(carry, x):
        new = carry + x
        leaked.append(new)
        return new
    ft.scan(step, X, ft.zeros(3))
    with pytest.raises(ValueError, match=LEAKED + r" of an ft\.scan"):
        leaked[0] * 2
    ft.fold(step, X, ft.zeros(3))
    with pytest.raises(ValueError, match=LEAKED + r" of an ft\.fold"):
        leaked[1] * 2


def test_inner_body_array_leaking_into_the_outer_body():
    batch = ft.make_placeholder("B", (2, 4, 3), F64)
    leaked = []

    def outer(mat):
        def inner(row):
            t = row * 2
            leaked.append(t)
            return t
        return ft.sum(ft.map(inner, mat)) + ft.sum(leaked[-1])
    with pytest.raises(ValueError, match=LEAKED):
        ft.map(outer, batch)


def test_body_that_raises_still_closes_its_scope():
    leaked = []

    def body(row):
        leaked.append(row + 1)
        raise RuntimeError("user error")
    with pytest.raises(RuntimeError, match="user error"):
        ft.map(body, X)
    with pytest.raises(ValueError, match=r"inside the body of an ft\.map"):
        leaked[0] * 2


def test_nodes_of_a_closed_body_cannot_be_captured_or_evaluated():
    result = ft.map(lambda row: ft.tanh(row) * 2, X)
    body_output = result.loop.body.outputs[0]
    assert CLOSED_BODY_SCOPE in body_output.scopes
    with pytest.raises(ValueError, match="belongs to the body of another loop"):
        ft.map(lambda row: row + body_output, X)
    with pytest.raises(ValueError, match="evaluate_numpy: .*belongs to the body "
                                         "of a loop"):
        ft.evaluate_numpy(body_output, X=XV)


def test_nested_bodies_may_read_the_enclosing_bodys_arrays():
    batch = ft.make_placeholder("B", (2, 4, 3), F64)
    w = ft.make_placeholder("w", (3,), F64)

    def outer(mat):
        scale = ft.sum(mat) * w          # depends on the outer parameter
        return ft.map(lambda row: row * scale + 1, mat)
    result = ft.map(outer, batch)
    assert result.scopes == frozenset()
    bv, wv = np.arange(24.0).reshape(2, 4, 3), np.array([1.0, 0.5, -1.0])
    expected = np.stack([m * (m.sum() * wv) + 1 for m in bv])
    np.testing.assert_allclose(ft.evaluate_numpy(result, B=bv, w=wv), expected)


def test_returning_intermediates_is_the_way_out():
    def body(row):
        r = row * 2
        return r + 1, r
    plus, doubled = ft.map(body, X)
    np.testing.assert_allclose(ft.evaluate_numpy(plus + doubled, X=XV),
                               4 * XV + 1)


def test_outer_nodes_carry_no_scopes():
    y = ft.exp(X) + 1
    assert y.scopes == frozenset() and X.scopes == frozenset()


def test_compiling_a_leaked_array_is_a_value_error():
    """ft.compile checks like evaluate_numpy (it used to fail with an
    AssertionError deep in code generation)."""
    _, leaked = _leaky_map()
    with pytest.raises(ValueError, match=LEAKED):
        ft.compile(leaked)
    with pytest.raises(ValueError, match=LEAKED):
        ft.compile(ft.make_dict_of_named_arrays({"ok": X * 1.0, "bad": leaked}))


def test_compiling_an_input_named_like_a_size_param_is_a_value_error():
    n = ft.make_size_param("n")
    a = ft.make_placeholder("a", (n,), F64)
    other = ft.make_placeholder("n", (3,), F64)
    d = ft.make_dict_of_named_arrays({"a": a * 2, "b": other + 1})
    with pytest.raises(ValueError, match="two different inputs are named 'n'"):
        ft.compile(d)
