# SPDX-License-Identifier: MIT
"""The mapper family: dispatch, caching, bodies, deep chains."""

import numpy as np
import pytest

import ftlazy as ft
from ftlazy.array import IndexLambda, Placeholder
from ftlazy.transform import (
    CachedWalkMapper, CombineMapper, CopyMapper, Mapper, UnsupportedNodeError,
    WalkMapper, map_and_copy)


def _graph():
    x = ft.make_placeholder("x", (4, 3), np.float64)
    w = ft.make_placeholder("w", (3, 3), np.float64)
    y = ft.map(lambda r: ft.exp(w @ r), x)
    return x, w, ft.sum(y * y + y)


def test_copy_mapper_identity_returns_same_graph():
    _, _, z = _graph()
    assert CopyMapper()(z) is z


def test_copy_mapper_renames_placeholders_including_captured():
    x, w, z = _graph()

    class Rename(CopyMapper):
        def map_placeholder(self, expr):
            return ft.make_placeholder(expr.name + "2", expr.shape, expr.dtype)

    z2 = Rename()(z)
    assert z2 is not z
    xv, wv = np.random.rand(4, 3), np.random.rand(3, 3)
    np.testing.assert_allclose(ft.evaluate_numpy(z2, x2=xv, w2=wv),
                               ft.evaluate_numpy(z, x=xv, w=wv))


def test_super_call_to_named_method_and_fallback_along_hierarchy():
    _, _, z = _graph()
    seen = []

    class Spy(CopyMapper):
        def map_einsum(self, expr):
            seen.append("einsum")
            return super().map_einsum(expr)

        def map_array(self, expr):
            seen.append(type(expr).__name__)
            return super().map_array(expr)

    assert Spy()(z) is z
    assert "einsum" in seen
    assert "Placeholder" in seen  # map_placeholder falls back to map_array


def test_combine_mapper_counts_and_enters_bodies():
    x = ft.make_placeholder("x", (4, 3), np.float64)
    w = ft.make_placeholder("w", (3, 3), np.float64)
    y = ft.map(lambda r: ft.exp(w @ r) + w @ (2 * r), x)
    z = ft.sum(y)

    class CountEinsums(CombineMapper):
        def combine(self, *values):
            return sum(values)

        def map_einsum(self, expr):
            return 1 + self.combine(*[self.rec(a) for a in expr.args])

    assert CountEinsums()(z) == 2


def test_walk_mappers():
    x = ft.make_placeholder("x", (3,), np.float64)
    shared = x + 1
    z = ft.stack([shared, shared])

    class Count(WalkMapper):
        def __init__(self):
            self.n = 0

        def visit(self, expr):
            self.n += 1
            return True

    class CountOnce(CachedWalkMapper):
        def __init__(self):
            super().__init__()
            self.n = 0

        def visit(self, expr):
            self.n += 1
            return True

    tree, dag = Count(), CountOnce()
    tree(z)
    dag(z)
    assert (tree.n, dag.n) == (5, 3)


def test_unsupported_node_is_a_clear_error():
    class OnlyPlaceholders(Mapper):
        def map_placeholder(self, expr):
            return expr

    x = ft.make_placeholder("x", (3,), np.float64)
    assert OnlyPlaceholders()(x) is x
    with pytest.raises(UnsupportedNodeError, match="IndexLambda"):
        OnlyPlaceholders()(x + 1)


def test_map_and_copy_and_deep_chain():
    x = ft.make_placeholder("x", (2,), np.float64)
    y = x
    for _ in range(30_000):
        y = y * 1.0
    visited = []

    def fn(node):
        if isinstance(node, Placeholder):
            visited.append(node)
            return ft.make_placeholder("x_new", node.shape, node.dtype)
        return node

    y2 = map_and_copy(y, fn)
    assert visited == [x]
    assert isinstance(y2, IndexLambda)
    np.testing.assert_allclose(ft.evaluate_numpy(y2, x_new=np.ones(2)), 1.0)


def test_a_rewrite_breaking_a_loops_captured_shape_is_refused():
    # (the dense map checked its body against its inputs; maps and folds
    # over FractalTensors computed with the wrong shape)
    xs = ft.make_jagged_placeholder("xs", (2,), np.float64, depth=2)
    w = ft.make_placeholder("W", (2, 2), np.float64)

    class Widen(CopyMapper):
        def map_placeholder(self, expr):
            if expr.name == "W":
                return ft.make_placeholder("W", (3, 3), np.float64)
            return expr

    for loop, what in ((ft.map(lambda s: ft.sum(s @ w, axis=0), xs), "map"),
                       (ft.fold(lambda h, s: h @ w + ft.sum(s, axis=0), xs,
                                ft.zeros(2)), "fold")):
        with pytest.raises(ValueError, match=f"{what} over a FractalTensor: "
                           r"body parameter \d+ has shape \(2, 2\).*captured "
                           r"\(3, 3\)"):
            Widen()(loop)


def test_mapper_mistakes_are_named():
    # (a map_* method that forgot its return; a CombineMapper without
    # combine)
    x = ft.make_placeholder("x", (3,), np.float64)

    class Forgets(CopyMapper):
        def map_placeholder(self, expr):
            expr.name   # no return

    class NoCombine(CombineMapper):
        def map_placeholder(self, expr):
            return 1

    with pytest.raises(TypeError, match="Forgets.map_placeholder returned "
                       "NoneType for Placeholder"):
        Forgets()(x * 2)
    with pytest.raises(NotImplementedError, match="NoCombine must implement "
                       "combine"):
        NoCombine()(x * 2)


def test_a_mapper_returning_data_is_named():
    # (an ndarray was "unhashable type: 'numpy.ndarray'", an int an
    # AttributeError inside ftlazy)
    x = ft.make_placeholder("x", (3,), np.float64)

    class ReturnsData(CopyMapper):
        def __init__(self, value):
            super().__init__()
            self.value = value

        def map_placeholder(self, expr):
            return self.value

    for value, shown in ((np.ones(3), "ndarray"), (3, "int")):
        with pytest.raises(TypeError, match=f"ReturnsData.map_placeholder "
                           f"returned {shown} for Placeholder.*wrap data with "
                           "ft.make_data_wrapper"):
            ReturnsData(value)(x * 2)


@pytest.mark.parametrize("data", [np.ones((6, 3)), np.ones((2, 3)),
                                  np.arange(12).reshape(4, 3)])
def test_swapping_an_input_for_another_shape_or_dtype_is_refused(data):
    # (the tutorial's BindData with data of another shape gave the sum of
    # the first 4 rows ([4, 4, 4] for 6 rows), or clipped reads for 2, and
    # ft.verify passed; int data kept the float body's types)
    class BindData(CopyMapper):
        def __init__(self, data):
            super().__init__()
            self.data = data

        def map_placeholder(self, expr):
            if expr.name in self.data:
                return ft.make_data_wrapper(self.data[expr.name])
            return expr

    x = ft.make_placeholder("x", (4, 3), np.float64)
    with pytest.raises(ValueError, match=r"BindData replaced an operand of "
                       r"IndexLambda .* of shape \(4, 3\) and dtype float64 by "
                       r"one of shape"):
        BindData({"x": data})(ft.sum(x, axis=0))
    # data of the placeholder's shape and dtype: bound
    bound = BindData({"x": np.full((4, 3), 2.0)})(ft.sum(x, axis=0))
    np.testing.assert_array_equal(ft.compile(bound)(), [8.0, 8.0, 8.0])


@pytest.mark.parametrize("index", [
    (slice(None), -1), (slice(None), slice(None, None, -1)),
    (np.array([2, 0]),), (slice(None), np.array([-1]))],
    ids=["int", "reversed", "rows", "negative_rows"])
@pytest.mark.parametrize("data", [np.arange(15.0).reshape(3, 5),
                                  np.arange(6.0).reshape(3, 2)])
def test_swapping_an_indexed_input_for_another_shape_is_refused(index, data):
    # (the indices were normalized against the old shape: x[:, -1] gave
    # column 3 of a (3, 5) array, and x[[2, 0]] of a (3, 2) one read past
    # its buffer)
    class Swap(CopyMapper):
        def map_placeholder(self, expr):
            return ft.make_data_wrapper(data)

    x = ft.make_placeholder("x", (3, 4), np.float64)
    with pytest.raises(ValueError, match=r"Swap replaced an operand of "
                       r"(Basic|Advanced)Index .* of shape \(3, 4\)"):
        Swap()(x[index])
    same = np.arange(12.0).reshape(3, 4)

    class SwapSame(CopyMapper):
        def map_placeholder(self, expr):
            return ft.make_data_wrapper(same)

    np.testing.assert_array_equal(ft.compile(SwapSame()(x[index]))(), same[index])
