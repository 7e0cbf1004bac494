# SPDX-License-Identifier: MIT
"""ftlazy.analysis: node counts, inputs, users, input-name checks."""

from __future__ import annotations

import numpy as np
import pymbolic.primitives as prim
import pytest
from hypothesis import given
from hypothesis import strategies as st

import ftlazy as ft
from ftlazy.analysis import (
    check_unique_input_names, get_inputs, get_num_nodes, get_users)
from ftlazy.array import Einsum, IndexLambda
from ftlazy.fractal import Body
from ftlazy.node import Node

F64 = np.float64


def _add(*arrays):
    """An IndexLambda summing 1-d arrays elementwise, one binding each."""
    names = [f"_in{i}" for i in range(len(arrays))]
    expr = prim.Sum(tuple(prim.Subscript(prim.Variable(n), (prim.Variable("_0"),))
                          for n in names))
    return IndexLambda(expr, arrays[0].shape, arrays[0].dtype,
                       dict(zip(names, arrays)))


def _matvec(w, v):
    return Einsum("ij,j->i", (w, v))


# {{{ reference implementations (recursive, for small DAGs)

def _children(n):
    from ftlazy.node import iter_children
    return list(iter_children(n))


def _bodies(n):
    return [getattr(n, f) for f in n._body_fields]


def _counted(n):
    return not isinstance(n, (ft.DictOfNamedArrays, Body))


def _ref_distinct(root):
    seen = set()

    def walk(n):
        if n in seen:
            return 0
        seen.add(n)
        total = int(_counted(n)) + sum(walk(c) for c in _children(n))
        return total + sum(_ref_distinct(b) for b in _bodies(n))
    return walk(root)


def _ref_tree(n):
    return (int(_counted(n)) + sum(_ref_tree(c) for c in _children(n))
            + sum(_ref_tree(b) for b in _bodies(n)))


def _ref_inputs(root):
    found = set()

    def walk(n):
        if isinstance(n, (ft.Placeholder, ft.SizeParam, ft.DataWrapper)):
            found.add(n)
        for c in _children(n):
            walk(c)
        for b in _bodies(n):
            walk(b)
    walk(root)
    return frozenset(found)

# }}}


# {{{ node counts

def test_num_nodes_shared_subexpression_counted_once():
    x = ft.make_placeholder("x", (3,), F64)
    y = _add(x, x)
    z = _add(y, y, x)
    assert get_num_nodes(z) == 3
    # unfolded: z, y (twice, each with x twice), x
    assert get_num_nodes(z, count_duplicates=True) == 1 + 2 * 3 + 1


def test_num_nodes_dict_of_named_arrays_not_counted():
    x = ft.make_placeholder("x", (3,), F64)
    y = _add(x, x)
    d = ft.make_dict_of_named_arrays({"a": y, "b": x})
    assert get_num_nodes(d) == 2
    assert get_num_nodes(d, count_duplicates=True) == 3 + 1


def test_num_nodes_counts_map_bodies():
    x = ft.make_placeholder("x", (5, 3), F64)
    w = ft.make_placeholder("w", (3, 3), F64)
    y = ft.map(lambda xi: _matvec(w, xi), x)
    # outer: x, w, Map, LoopResult; body: two params and the einsum
    assert get_num_nodes(y) == 4 + 3
    assert get_num_nodes(y) == _ref_distinct(y)


def test_num_nodes_same_body_in_two_loops_counted_per_loop():
    x1 = ft.make_placeholder("x1", (5, 3), F64)
    x2 = ft.make_placeholder("x2", (5, 3), F64)
    w = ft.make_placeholder("w", (3, 3), F64)
    y1 = ft.map(lambda xi: _matvec(w, xi), x1)
    y2 = ft.map(lambda xi: _matvec(w, xi), x2)
    assert y1.loop.body is y2.loop.body  # interned: one Body object
    d = ft.make_dict_of_named_arrays({"y1": y1, "y2": y2})
    assert get_num_nodes(d) == (3 + 2 * 2) + 2 * 3


def test_num_nodes_nested_map_and_scan():
    x = ft.make_placeholder("x", (4, 5, 3), F64)
    w = ft.make_placeholder("w", (3, 3), F64)
    inner = ft.map(lambda row: ft.map(lambda v: _matvec(w, v), row), x)
    h0 = ft.make_placeholder("h0", (3,), F64)
    hs = ft.scan(lambda h, v: _add(_matvec(w, h), v), inner[0], h0)
    for expr in (inner, hs):
        assert get_num_nodes(expr) == _ref_distinct(expr)
        assert (get_num_nodes(expr, count_duplicates=True)
                == _ref_tree(expr))
    # outer map: x, w, Map, LoopResult; its body: 2 params, Map, LoopResult;
    # the inner body: 2 params, einsum
    assert get_num_nodes(inner) == 4 + 4 + 3


def test_num_nodes_rejects_non_arrays():
    with pytest.raises(TypeError, match="get_num_nodes expects an Array"):
        get_num_nodes([1, 2])


@st.composite
def random_dags(draw):
    """Random DAGs of elementwise sums over two placeholders and a data
    wrapper, with much sharing."""
    pool = [ft.make_placeholder("a", (3,), F64),
            ft.make_placeholder("b", (3,), F64),
            ft.make_data_wrapper(np.arange(3.0))]
    for _ in range(draw(st.integers(1, 12))):
        picks = draw(st.lists(st.integers(0, len(pool) - 1), min_size=1,
                              max_size=3))
        pool.append(_add(*[pool[i] for i in picks]))
    nresults = draw(st.integers(1, 3))
    results = {f"r{i}": pool[draw(st.integers(0, len(pool) - 1))]
               for i in range(nresults)}
    return ft.make_dict_of_named_arrays(results)


@given(random_dags())
def test_analyses_match_reference_on_random_dags(d):
    assert get_num_nodes(d) == _ref_distinct(d)
    assert get_num_nodes(d, count_duplicates=True) == _ref_tree(d)
    assert get_inputs(d) == _ref_inputs(d)
    users = get_users(d)
    for n, us in users.items():
        for u in us:
            assert any(c is n for c in _children(u))
        for c in _children(n):
            assert n in users[c]
    assert users[d] == frozenset()

# }}}


# {{{ inputs

def test_get_inputs_kinds_and_names_only_size_params():
    n = ft.make_size_param("n")
    x = ft.make_placeholder("x", (n,), F64)
    y = ft.make_placeholder("y", (prim.Variable("m"),), F64)  # m: by name only
    data = ft.make_data_wrapper(np.ones(2))
    expr = ft.make_dict_of_named_arrays(
        {"a": _add(x, x), "b": y, "c": data, "n": n})
    assert get_inputs(expr) == frozenset({n, x, y, data})
    assert get_inputs(y) == frozenset({y})
    assert all(isinstance(i, Node) for i in get_inputs(expr))


def test_get_inputs_sees_captured_arrays_of_bodies():
    x = ft.make_placeholder("x", (5, 3), F64)
    w = ft.make_data_wrapper(np.eye(3), name="weights")
    y = ft.map(lambda xi: _matvec(w, xi), x)
    assert get_inputs(y) == frozenset({x, w})


def test_check_unique_input_names_clash_names_shapes():
    x3 = ft.make_placeholder("x", (3,), F64)
    x4 = ft.make_placeholder("x", (4,), F64)
    d = ft.make_dict_of_named_arrays({"a": x3, "b": x4})
    with pytest.raises(ValueError, match=r"named 'x'") as info:
        check_unique_input_names(d)
    assert "(3,)" in str(info.value) and "(4,)" in str(info.value)


def test_check_unique_input_names_across_kinds():
    n = ft.make_size_param("n")
    also_n = ft.make_placeholder("n", (2,), np.int64)
    d = ft.make_dict_of_named_arrays({"a": n, "b": also_n})
    with pytest.raises(ValueError, match="named 'n'") as info:
        check_unique_input_names(d)
    assert "SizeParam of shape ()" in str(info.value)
    assert "Placeholder of shape (2,)" in str(info.value)


def test_check_unique_input_names_shape_name_clash():
    n_array = ft.make_placeholder("n", (2,), F64)
    x = ft.make_placeholder("x", (prim.Variable("n"),), F64)
    d = ft.make_dict_of_named_arrays({"a": n_array, "b": x})
    with pytest.raises(ValueError, match=r"'n' is used as a size parameter in "
                                         r"shape \(n,\)"):
        check_unique_input_names(d)


def test_check_unique_input_names_accepts_consistent_inputs():
    n = ft.make_size_param("n")
    x = ft.make_placeholder("x", (n,), F64)
    unnamed = [ft.make_data_wrapper(np.ones(3)), ft.make_data_wrapper(np.ones(3))]
    d = ft.make_dict_of_named_arrays(
        {"a": _add(x, x), "n": n, "u": _add(*unnamed)})
    check_unique_input_names(d)

# }}}


# {{{ users

def test_get_users_diamond():
    x = ft.make_placeholder("x", (3,), F64)
    left = _add(x, x)
    right = _add(x)
    top = _add(left, right)
    users = get_users(top)
    assert users == {x: frozenset({left, right}), left: frozenset({top}),
                     right: frozenset({top}), top: frozenset()}
    assert list(users)[-1] is top  # children first


def test_get_users_outer_dag_only():
    x = ft.make_placeholder("x", (5, 3), F64)
    w = ft.make_placeholder("w", (3, 3), F64)
    y = ft.map(lambda xi: _matvec(w, xi), x)
    loop = y.loop
    users = get_users(y)
    assert set(users) == {x, w, loop, y}
    assert users[x] == users[w] == frozenset({loop})
    assert users[loop] == frozenset({y})

# }}}


# {{{ deep chains

def test_deep_chain_of_100k_front_end_adds():
    x = ft.make_placeholder("x", (3,), F64)
    y = x
    for _ in range(100_000):
        y = y + 1.0
    count = get_num_nodes(y)
    assert count >= 100_001
    from ftlazy.node import topological_order
    assert count == len(topological_order([y]))
    # a chain has no shared subexpressions to unfold
    assert get_num_nodes(y, count_duplicates=True) == count
    assert get_inputs(y) == frozenset({x})
    users = get_users(y)
    assert len(users) == count and users[y] == frozenset()
    check_unique_input_names(y)

# }}}

# vim: foldmethod=marker


def test_analyses_of_a_fractal_tensor():
    # (a map over a FractalTensor returns one: its inputs, size and users)
    xs = ft.make_jagged_placeholder("xs", (2,), np.float64, depth=2)
    w = ft.make_placeholder("W", (2, 2), np.float64)
    mapped = ft.map(lambda s: ft.tanh(s @ w), xs)
    assert {n.name for n in get_inputs(mapped)} == {
        "xs_values", "xs_offsets0", "W"}
    assert get_num_nodes(mapped) > get_num_nodes(ft.tanh(xs)) > 1
    users = get_users(ft.tanh(xs))
    assert any(isinstance(n, ft.Jagged) for n in users)
    with pytest.raises(TypeError, match="get_inputs expects an Array, a "
                       "FractalTensor or a DictOfNamedArrays, got list"):
        get_inputs([w])
