# SPDX-License-Identifier: MIT
"""The run-time container of jagged nested data (pure numpy)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import ftlazy as ft

J = ft.JaggedArray


def _same_nested(a: Any, b: Any) -> None:
    """Assert two tolist()-style nested lists are equal (arrays at the
    bottom compared with shape and dtype)."""
    if isinstance(a, np.ndarray):
        assert isinstance(b, np.ndarray)
        assert a.shape == b.shape and a.dtype == b.dtype
        np.testing.assert_array_equal(a, b)
        return
    assert isinstance(a, list) and isinstance(b, list) and len(a) == len(b)
    for x, y in zip(a, b):
        _same_nested(x, y)


def _seq(n: int, elem_shape: tuple[int, ...], start: int = 0) -> np.ndarray:
    size = n * int(np.prod(elem_shape, dtype=np.int64))
    return np.arange(start, start + size, dtype=np.float64).reshape(n, *elem_shape)


# {{{ round trips

@pytest.mark.parametrize("elem_shape", [(), (2, 3)])
def test_depth1_round_trip(elem_shape):
    nested = [_seq(3, elem_shape), _seq(0, elem_shape), _seq(1, elem_shape, 10)]
    ja = J.from_list(nested)
    assert ja.depth == 1 and len(ja) == 3
    assert ja.elem_shape == elem_shape and ja.dtype == np.float64
    assert ja.values.shape == (4, *elem_shape)
    np.testing.assert_array_equal(ja.offsets[0], [0, 3, 3, 4])
    assert ja.offsets[0].dtype == np.int64
    np.testing.assert_array_equal(ja.lengths(), [3, 0, 1])
    _same_nested(ja.tolist(), nested)
    assert J.from_list(ja.tolist()).equals(ja)


@pytest.mark.parametrize("elem_shape", [(), (2, 3)])
def test_depth2_round_trip_with_empty_documents(elem_shape):
    nested = [[_seq(2, elem_shape), _seq(0, elem_shape)], [],
              [_seq(1, elem_shape, 5)]]
    ja = J.from_list(nested)
    assert ja.depth == 2 and len(ja) == 3 and ja.elem_shape == elem_shape
    np.testing.assert_array_equal(ja.offsets[0], [0, 2, 2, 3])
    np.testing.assert_array_equal(ja.offsets[1], [0, 2, 2, 3])
    np.testing.assert_array_equal(ja.lengths(0), [2, 0, 1])
    np.testing.assert_array_equal(ja.lengths(1), [2, 0, 1])
    _same_nested(ja.tolist(), nested)


@pytest.mark.parametrize("elem_shape", [(), (2, 3)])
def test_depth3_round_trip(elem_shape):
    nested = [[[_seq(1, elem_shape)], []],
              [],
              [[_seq(0, elem_shape), _seq(2, elem_shape, 7)]]]
    ja = J.from_list(nested)
    assert ja.depth == 3 and len(ja) == 3 and ja.nnz == 3
    np.testing.assert_array_equal(ja.offsets[0], [0, 2, 2, 3])
    np.testing.assert_array_equal(ja.offsets[1], [0, 1, 1, 3])
    np.testing.assert_array_equal(ja.offsets[2], [0, 1, 1, 3])
    np.testing.assert_array_equal(ja.lengths(2), [1, 0, 2])
    _same_nested(ja.tolist(), nested)


def test_lists_of_scalars_and_of_element_arrays():
    ja = J.from_list([[[1, 2], [3]], [[]]])
    assert ja.depth == 2 and ja.dtype == np.int64 and ja.elem_shape == ()
    np.testing.assert_array_equal(ja.values, [1, 2, 3])
    np.testing.assert_array_equal(ja.offsets[1], [0, 2, 3, 3])
    # a list of elem_shape arrays, disambiguated by elem_shape
    el = [np.ones((2, 3)), np.zeros((2, 3))]
    jb = J.from_list([el, []], elem_shape=(2, 3))
    assert jb.depth == 1 and jb.nnz == 2
    np.testing.assert_array_equal(jb.lengths(), [2, 0])
    # ... or by depth; with elem_shape, Python lists there are elements
    jc = J.from_list([[[[1, 2], [3, 4]]]], depth=2, elem_shape=(2,))
    assert jc.depth == 2 and jc.elem_shape == (2,) and jc.nnz == 2


def test_empty_batch():
    ja = J.from_list([], elem_shape=(2, 3), dtype=np.float32)
    assert len(ja) == 0 and ja.depth == 1
    assert ja.values.shape == (0, 2, 3) and ja.dtype == np.float32
    assert ja.tolist() == []
    jb = J.from_list([], elem_shape=(), dtype=np.int32, depth=3)
    assert jb.depth == 3 and len(jb) == 0
    assert all(len(o) == 1 for o in jb.offsets)


def test_all_empty_needs_args_or_takes_them():
    ja = J.from_list([[], [[]]], elem_shape=(), dtype=np.int8)
    assert ja.depth == 2 and ja.dtype == np.int8 and ja.nnz == 0
    np.testing.assert_array_equal(ja.lengths(0), [0, 1])
    # an empty sibling takes elem_shape and dtype from the others
    jb = J.from_list([[], [np.ones((1, 4), np.float32)]])
    assert jb.elem_shape == (4,) and jb.dtype == np.float32


def test_dtype_argument_casts():
    ja = J.from_list([[1, 2.5], [3]], dtype=np.float32)
    assert ja.dtype == np.float32
    np.testing.assert_array_equal(ja.values, [1, 2.5, 3])


def test_constructor_and_attributes():
    vals = np.arange(5.0)
    ja = J(vals, np.array([0, 2, 2]), np.array([0, 1, 5], dtype=np.int32))
    assert ja.depth == 2 and len(ja) == 2 and ja.nnz == 5
    assert ja.offsets[1].dtype == np.int64
    assert ja.values.flags.c_contiguous
    assert not ja.values.flags.writeable
    assert not any(o.flags.writeable for o in ja.offsets)
    with pytest.raises(ValueError):
        ja.values[0] = 3.0
    vals[0] = 99.0  # the container owns a copy
    assert ja.values[0] == 0.0
    r = repr(ja)
    assert "depth=2" in r and "len=2" in r and "nnz=5" in r
    assert "elem_shape=()" in r and "float64" in r and "\n" not in r
    # non-contiguous values are stored contiguously
    jb = J(np.arange(12.0).reshape(3, 4)[:, ::2], np.array([0, 3]))
    assert jb.values.flags.c_contiguous and jb.elem_shape == (2,)


def test_device_like_arrays_are_fetched():
    class FakeDevice:
        def __init__(self, a):
            self.a = a

        def get(self):
            return self.a

    ja = J(FakeDevice(np.arange(3.0)), FakeDevice(np.array([0, 1, 3])))
    assert ja.nnz == 3 and len(ja) == 2


def test_lengths_level_out_of_range():
    ja = J.from_list([[1, 2]])
    with pytest.raises(ValueError, match="level 1 is out of range.*depth 1"):
        ja.lengths(1)


def test_equals():
    a = J.from_list([[[1.0, np.nan]], []])
    b = J.from_list([[[1.0, np.nan]], []])
    assert a.equals(b) and b.equals(a)
    assert not a.equals(J.from_list([[[1.0, 2.0]], []]))
    assert not a.equals(J.from_list([[[1.0], [np.nan]], []]))  # offsets
    assert not a.equals(J.from_list([[[1.0, np.nan]]]))  # length
    assert not a.equals(J.from_list([[1.0, np.nan]]))  # depth
    assert not a.equals(J.from_list([[[1.0, np.nan]], []], dtype=np.float32))
    assert not a.equals(a.values)
    ints = J.from_list([[1, 2]])
    assert ints.equals(J.from_list([[1, 2]]))

# }}}


# {{{ bad input: constructor

def test_no_offsets():
    with pytest.raises(ValueError, match="at least one offsets array"):
        J(np.ones(3))


@pytest.mark.parametrize("dtype", [np.float64, np.bool_])
def test_non_integer_offsets(dtype):
    with pytest.raises(TypeError,
                       match=f"offsets of level 0 .*integer.*{np.dtype(dtype)}"):
        J(np.ones(1), np.array([0, 1], dtype=dtype))


def test_offsets_must_be_1d():
    with pytest.raises(ValueError, match=r"offsets of level 0 must be 1-D.*\(1, 2\)"):
        J(np.ones(1), np.array([[0, 1]]))


def test_offsets_must_start_at_zero():
    with pytest.raises(ValueError, match="offsets of level 1 must start at 0, got 1"):
        J(np.ones(3), np.array([0, 1]), np.array([1, 3]))


def test_offsets_must_not_decrease():
    with pytest.raises(ValueError,
                       match=r"offsets of level 0 must not decrease.*position 2 "
                             r"\(2 -> 1\)"):
        J(np.ones(3), np.array([0, 2, 1, 3]))


def test_innermost_offsets_past_or_short_of_values():
    with pytest.raises(ValueError,
                       match="offsets of level 0 end at 4, but values has 3 rows"):
        J(np.ones(3), np.array([0, 4]))
    with pytest.raises(ValueError,
                       match="offsets of level 1 end at 2, but values has 3 rows"):
        J(np.ones(3), np.array([0, 1]), np.array([0, 2]))


def test_outer_offsets_must_end_at_next_level_entries():
    with pytest.raises(ValueError,
                       match="offsets of level 0 end at 2, but level 1 has 3 "
                             "entries"):
        J(np.ones(3), np.array([0, 2]), np.array([0, 1, 2, 3]))


def test_values_must_not_be_0d():
    with pytest.raises(ValueError, match="values must have at least one dimension"):
        J(np.float64(1.0), np.array([0]))

# }}}


# {{{ bad input: from_list

def test_from_list_mixed_elem_shapes():
    with pytest.raises(ValueError,
                       match=r"element \[2\]\[0\] has elem shape \(3,\), but "
                             r"element \[0\]\[0\] has \(2,\)"):
        J.from_list([[np.ones((1, 2))], [], [np.ones((1, 3))]])
    with pytest.raises(ValueError, match=r"element \[0\] .*\(3,\).*elem_shape"):
        J.from_list([np.ones((1, 3))], elem_shape=(2,))


def test_from_list_mixed_dtypes():
    with pytest.raises(TypeError,
                       match=r"element \[1\]\[0\] has dtype float64, but "
                             r"element \[0\]\[0\] has dtype int64"):
        J.from_list([[1], [2.0]])


def test_from_list_inconsistent_nesting():
    with pytest.raises(ValueError, match=r"inconsistent nesting depth: element \[1\]"):
        J.from_list([[1, 2], [[3]]])
    with pytest.raises(ValueError,
                       match=r"inconsistent nesting depth: element \[1\] is a "
                             r"list nested at least 2 levels.*element \[0\]"):
        J.from_list([[[1]], [[[]]]])
    with pytest.raises(ValueError,
                       match=r"inconsistent nesting depth: element \[0\]\[1\]"):
        J.from_list([[[1], 2]])


def test_from_list_depth_mismatch():
    with pytest.raises(ValueError, match="nesting depth 1, but depth=2"):
        J.from_list([[1]], depth=2)
    with pytest.raises(ValueError, match="nesting depth 2, but depth=1"):
        J.from_list([[[1]]], depth=1)
    with pytest.raises(ValueError, match="depth must be an int >= 1"):
        J.from_list([[1]], depth=0)


def test_from_list_cannot_determine_elem_shape_and_dtype():
    with pytest.raises(ValueError, match="elem_shape and dtype.*pass elem_shape="):
        J.from_list([[], []])
    with pytest.raises(ValueError, match="dtype.*pass"):
        J.from_list([], elem_shape=())


def test_from_list_not_a_list_of_sequences():
    with pytest.raises(ValueError, match="single sequence"):
        J.from_list([1, 2])
    with pytest.raises(TypeError, match="expects a .*list"):
        J.from_list(np.ones((2, 2)))

# }}}


# {{{ random structures

@st.composite
def _structures(draw):
    """A nested length structure of depth 1-3 (lists of ints at the bottom
    give sequence lengths) and an elem shape."""
    depth = draw(st.integers(1, 3))
    elem_shape = draw(st.sampled_from([(), (2,), (2, 3)]))

    def level(d):
        if d == 0:
            return draw(st.integers(0, 3))
        return [level(d - 1) for _ in range(draw(st.integers(0, 3)))]

    return depth, elem_shape, level(depth)


@given(_structures())
def test_random_structures_round_trip(structure):
    depth, elem_shape, lengths = structure
    counter = [0]

    def fill(node, d):
        if d == 0:
            a = _seq(node, elem_shape, counter[0])
            counter[0] += a.size
            return a
        return [fill(x, d - 1) for x in node]

    nested = fill(lengths, depth)
    ja = J.from_list(nested, elem_shape=elem_shape, dtype=np.float64, depth=depth)
    assert ja.depth == depth and len(ja) == len(nested)
    assert ja.elem_shape == elem_shape
    _same_nested(ja.tolist(), nested)
    assert J.from_list(ja.tolist(), elem_shape=elem_shape, dtype=np.float64,
                       depth=depth).equals(ja)

    # straightforward construction: breadth-first per level
    offsets = []
    frontier = [nested]  # the nodes of level k
    for _ in range(depth):
        frontier = [x for node in frontier for x in node]  # of level k + 1
        lens = [len(x) for x in frontier]
        offsets.append(np.concatenate([[0], np.cumsum(lens, dtype=np.int64)]))
    for got, want in zip(ja.offsets, offsets):
        np.testing.assert_array_equal(got, want)
    leaves = frontier
    want_values = (np.concatenate(leaves) if leaves
                   else np.empty((0, *elem_shape)))
    np.testing.assert_array_equal(ja.values, want_values)
    assert ja.values.shape == (int(offsets[-1][-1]), *elem_shape)
    for k in range(depth):
        np.testing.assert_array_equal(ja.lengths(k), np.diff(offsets[k]))
    # the constructor accepts what from_list built
    assert J(ja.values, *ja.offsets).equals(ja)

# }}}
