# SPDX-License-Identifier: MIT
"""Structural identity of nodes: interning, hashing, equality, deep chains."""

import pickle
import sys

import numpy as np
import pytest

import ftlazy as ft
from ftlazy.node import topological_order


def test_structurally_equal_nodes_are_identical():
    x1 = ft.make_placeholder("x", (3, 4), np.float64)
    x2 = ft.make_placeholder("x", (3, 4), "float64")
    assert x1 is x2
    assert (x1 + 1) == (x2 + 1)
    assert hash(x1 * 2) == hash(x2 * 2)
    assert (x1 + 1) != (x1 + 2)
    assert ft.make_placeholder("x", (3, 4), np.float32) != x1


def test_tags_take_part_in_identity():
    x = ft.make_placeholder("x", (3,), np.float64)
    tagged = x.tagged(ft.tags.ImplStored())
    assert tagged != x
    assert tagged.tags == frozenset({ft.tags.ImplStored()})
    assert tagged.without_tags(ft.tags.ImplStored()) is x
    axis_tagged = x.with_tagged_axis(0, ft.tags.Named("i"))
    assert axis_tagged.axes[0].tags == frozenset({ft.tags.Named("i")})
    assert axis_tagged != x
    with pytest.raises(IndexError, match="axis 1 out of range"):
        x.with_tagged_axis(1, ft.tags.ImplStored())


def test_data_wrappers_compare_by_data_identity():
    a = np.arange(3.0)
    assert ft.make_data_wrapper(a) is ft.make_data_wrapper(a)
    assert ft.make_data_wrapper(a) != ft.make_data_wrapper(a.copy())


def test_repr_shows_kind_shape_dtype():
    n = ft.make_size_param("n")
    x = ft.make_placeholder("x", (n, 2 * n + 1), np.float32)
    assert repr(x) == "Placeholder(shape=(n, 2*n + 1), dtype=float32, name='x')"
    assert x.ndim == 2
    assert str(x.size) == "n*(2*n + 1)"


def test_nodes_are_immutable():
    x = ft.make_placeholder("x", (3,), np.float64)
    with pytest.raises(AttributeError, match="cannot set 'name' on a "
                       "Placeholder: ftlazy nodes are immutable"):
        x.name = "y"
    # (an attribute that is no field failed inside Python: "super(type,
    # obj): obj must be an instance or subtype of type")
    with pytest.raises(AttributeError, match="cannot set 'foo'"):
        (x * 2).foo = 1
    with pytest.raises(AttributeError, match="cannot delete 'name'"):
        del x.name


@pytest.mark.parametrize("order", [">", "<"])
def test_arrays_of_either_byte_order(order):
    # (big-endian data failed to compile, "unable to map dtype '>f8'", and
    # was refused as the input of a float64 placeholder)
    data = np.arange(3.0).astype(f"{order}f8")
    index = np.array([2, 0], f"{order}i8")
    wrapped = ft.make_data_wrapper(data)
    assert wrapped.dtype == np.float64 and wrapped.dtype.isnative
    x = ft.make_placeholder("x", (3,), f"{order}f8")
    assert x.dtype == np.float64
    for result, inputs, want in (
            (wrapped * 2, {}, [0.0, 2.0, 4.0]),
            (x * 2, {"x": data}, [0.0, 2.0, 4.0]),
            (x[ft.make_data_wrapper(index)], {"x": data}, [2.0, 0.0])):
        np.testing.assert_array_equal(ft.compile(result)(**inputs), want)
        np.testing.assert_array_equal(ft.evaluate_numpy(result, **inputs), want)


def test_pickle_roundtrip_preserves_identity():
    x = ft.make_placeholder("x", (3,), np.float64)
    y = ft.exp(x) + 1
    assert pickle.loads(pickle.dumps(y)) is y


def test_deep_graphs_pickle_and_deepcopy():
    # (nested nodes pickled recursively: a chain of about 100 nodes hit the
    # recursion limit, as did copy.deepcopy)
    import copy
    x = ft.make_placeholder("x", (3,), np.float64)
    xs = ft.make_jagged_placeholder("xs", (3,), np.float64, depth=2)
    chain = x
    for _ in range(3000):
        chain = chain * 1.0001 + 1
    looped = ft.make_dict_of_named_arrays({
        "scan": ft.scan(lambda h, row: ft.tanh(h + row), ft.ones((4, 3)) * x,
                        ft.zeros(3)),
        "map": ft.map(lambda s: ft.sum(s, axis=0), xs),
        "nan": ft.where(ft.isnan(x), np.nan, x)})
    for obj in (chain, looped, xs * 2):
        assert pickle.loads(pickle.dumps(obj)) is obj
        assert copy.deepcopy(obj) is obj


def test_deep_chain_hash_eq_and_walk_without_recursion():
    depth = 20_000
    assert depth > sys.getrecursionlimit()
    x = ft.make_placeholder("x", (2,), np.float64)
    y = x
    for _ in range(depth):
        y = y + 1.0
    z = x
    for _ in range(depth):
        z = z + 1.0
    assert y is z
    assert len(topological_order([y])) == depth + 1
    np.testing.assert_allclose(ft.evaluate_numpy(y, x=np.zeros(2)), depth)


@pytest.mark.parametrize("name", ["1x", "x-y", "", "_x", "_ft_a", "for", "ä"])
def test_bad_names_rejected(name):
    with pytest.raises(ValueError, match="name"):
        ft.make_placeholder(name, (3,), np.float64)


def test_name_must_be_str():
    with pytest.raises(TypeError, match="must be a str"):
        ft.make_placeholder(3, (3,), np.float64)


def test_bad_dtype_rejected():
    with pytest.raises(TypeError, match="dtype"):
        ft.make_placeholder("x", (3,), "not-a-dtype")
    with pytest.raises(TypeError, match="unsupported dtype"):
        ft.make_placeholder("x", (3,), object)


def test_array_has_no_truth_value():
    x = ft.make_placeholder("x", (3,), np.float64)
    with pytest.raises(TypeError, match="truth value"):
        bool(x)


def test_tags_must_be_tags_and_unique_tags_unique():
    # (as pytato refuses them: two strategies, two names; a string is not
    # an iterable of tags)
    from pytools.tag import NonUniqueTagError

    from ftlazy.tags import ImplInlined, ImplStored, Named
    x = ft.make_placeholder("x", (3,), np.float64)
    with pytest.raises(NonUniqueTagError, match="ImplementationStrategy"):
        (x * 2).tagged(ImplStored()).tagged(ImplInlined())
    with pytest.raises(NonUniqueTagError):
        (x * 2).tagged(Named("a")).tagged(Named("b"))
    with pytest.raises(TypeError, match="got the string 'foo'"):
        (x * 2).tagged("foo")
    with pytest.raises(TypeError, match="Tag instances, got int 3"):
        ft.make_placeholder("y", (2,), np.float64, tags=[3])
    # (the class for an instance was "'type' object is not iterable", a
    # string of tags at make_placeholder "'c' is not an instance")
    with pytest.raises(TypeError, match="got the class Named: pass an instance"):
        x.tagged(Named)
    with pytest.raises(TypeError, match="got the class Named .pass an instance"):
        x.tagged([Named])
    with pytest.raises(TypeError, match="got the string 'abc'"):
        ft.make_placeholder("y", (2,), np.float64, tags="abc")
    with pytest.raises(TypeError, match="a Tag instance or an iterable of "
                       "them, got int 3"):
        x.tagged(3)
    with pytest.raises(TypeError, match="got the string"):
        x.with_tagged_axis(0, "ab")
    # (the same tag twice is one tag)
    assert (x * 2).tagged(ImplStored()).tagged(ImplStored()).tags == {
        ImplStored()}


def test_without_tags_takes_pytatos_verbose():
    from ftlazy.tags import ImplStored
    x = ft.make_placeholder("x", (3,), np.float64)
    assert x.tagged(ImplStored()).without_tags(ImplStored(), verbose=False) is x
    with pytest.warns(UserWarning, match="has no tag"):
        assert x.without_tags(ImplStored()) is x
