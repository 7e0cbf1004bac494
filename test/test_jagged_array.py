# SPDX-License-Identifier: MIT
"""The run-time container of jagged nested data (pure numpy).

Depths are FractalTensor's: a list of sequences has depth 2 (one offsets
array), a list of lists of sequences depth 3, and so on."""

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
def test_depth2_round_trip(elem_shape):
    # a batch of sentences: a list of sequences, one offsets array
    nested = [_seq(3, elem_shape), _seq(0, elem_shape), _seq(1, elem_shape, 10)]
    ja = J.from_list(nested)
    assert ja.depth == 2 and len(ja.offsets) == 1 and len(ja) == 3
    assert ja.elem_shape == elem_shape and ja.dtype == np.float64
    assert ja.values.shape == (4, *elem_shape)
    np.testing.assert_array_equal(ja.offsets[0], [0, 3, 3, 4])
    assert ja.offsets[0].dtype == np.int64
    np.testing.assert_array_equal(ja.lengths(), [3, 0, 1])
    _same_nested(ja.tolist(), nested)
    # tolist() of depth 2: a list of numpy arrays (L_i, *elem_shape)
    assert all(isinstance(x, np.ndarray) for x in ja.tolist())
    assert J.from_list(ja.tolist()).equals(ja)
    assert J.from_list(ja.tolist(), depth=2).equals(ja)


@pytest.mark.parametrize("elem_shape", [(), (2, 3)])
def test_depth3_round_trip_with_empty_documents(elem_shape):
    nested = [[_seq(2, elem_shape), _seq(0, elem_shape)], [],
              [_seq(1, elem_shape, 5)]]
    ja = J.from_list(nested)
    assert ja.depth == 3 and len(ja.offsets) == 2
    assert len(ja) == 3 and ja.elem_shape == elem_shape
    np.testing.assert_array_equal(ja.offsets[0], [0, 2, 2, 3])
    np.testing.assert_array_equal(ja.offsets[1], [0, 2, 2, 3])
    np.testing.assert_array_equal(ja.lengths(0), [2, 0, 1])
    np.testing.assert_array_equal(ja.lengths(1), [2, 0, 1])
    _same_nested(ja.tolist(), nested)
    # tolist() of depth 3: a list of lists of numpy arrays
    assert all(isinstance(d, list) and all(isinstance(x, np.ndarray) for x in d)
               for d in ja.tolist())
    assert J.from_list(ja.tolist(), depth=3).equals(ja)


@pytest.mark.parametrize("elem_shape", [(), (2, 3)])
def test_depth4_round_trip(elem_shape):
    nested = [[[_seq(1, elem_shape)], []],
              [],
              [[_seq(0, elem_shape), _seq(2, elem_shape, 7)]]]
    ja = J.from_list(nested)
    assert ja.depth == 4 and len(ja.offsets) == 3
    assert len(ja) == 3 and ja.nnz == 3
    np.testing.assert_array_equal(ja.offsets[0], [0, 2, 2, 3])
    np.testing.assert_array_equal(ja.offsets[1], [0, 1, 1, 3])
    np.testing.assert_array_equal(ja.offsets[2], [0, 1, 1, 3])
    np.testing.assert_array_equal(ja.lengths(2), [1, 0, 2])
    _same_nested(ja.tolist(), nested)


def test_lists_of_scalars_and_of_element_arrays():
    ja = J.from_list([[[1, 2], [3]], [[]]])
    assert ja.depth == 3 and ja.dtype == np.int64 and ja.elem_shape == ()
    np.testing.assert_array_equal(ja.values, [1, 2, 3])
    np.testing.assert_array_equal(ja.offsets[1], [0, 2, 3, 3])
    # a list of elem_shape arrays, disambiguated by elem_shape
    el = [np.ones((2, 3)), np.zeros((2, 3))]
    jb = J.from_list([el, []], elem_shape=(2, 3))
    assert jb.depth == 2 and jb.nnz == 2
    np.testing.assert_array_equal(jb.lengths(), [2, 0])
    # ... or by depth; with elem_shape, Python lists there are elements
    jc = J.from_list([[[[1, 2], [3, 4]]]], depth=3, elem_shape=(2,))
    assert jc.depth == 3 and jc.elem_shape == (2,) and jc.nnz == 2


def test_empty_batch():
    ja = J.from_list([], elem_shape=(2, 3), dtype=np.float32)
    assert len(ja) == 0 and ja.depth == 2
    assert ja.values.shape == (0, 2, 3) and ja.dtype == np.float32
    assert ja.tolist() == []
    jb = J.from_list([], elem_shape=(), dtype=np.int32, depth=4)
    assert jb.depth == 4 and len(jb) == 0 and len(jb.offsets) == 3
    assert all(len(o) == 1 for o in jb.offsets)
    jc = J.from_list([], elem_shape=(), dtype=np.int32, depth=2)
    assert jc.depth == 2 and len(jc.offsets) == 1 and len(jc) == 0


def test_all_empty_needs_args_or_takes_them():
    ja = J.from_list([[], [[]]], elem_shape=(), dtype=np.int8)
    assert ja.depth == 3 and ja.dtype == np.int8 and ja.nnz == 0
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
    assert ja.depth == 3 and len(ja) == 2 and ja.nnz == 5
    assert ja.offsets[1].dtype == np.int64
    assert ja.values.flags.c_contiguous
    assert not ja.values.flags.writeable
    assert not any(o.flags.writeable for o in ja.offsets)
    with pytest.raises(ValueError):
        ja.values[0] = 3.0
    vals[0] = 99.0  # the container owns a copy
    assert ja.values[0] == 0.0
    r = repr(ja)
    assert "depth=3" in r and "len=2" in r and "nnz=5" in r
    assert "elem_shape=()" in r and "float64" in r and "\n" not in r
    # non-contiguous values are stored contiguously
    jb = J(np.arange(12.0).reshape(3, 4)[:, ::2], np.array([0, 3]))
    assert jb.values.flags.c_contiguous and jb.elem_shape == (2,)
    assert jb.depth == 2 and "depth=2" in repr(jb)


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
    assert ja.depth == 2
    np.testing.assert_array_equal(ja.lengths(0), [2])
    with pytest.raises(ValueError,
                       match="level 1 is out of range.*depth 2: the only "
                             "valid level is 0"):
        ja.lengths(1)
    jb = J.from_list([[[1, 2]], []])
    assert jb.depth == 3
    with pytest.raises(ValueError,
                       match="level 2 is out of range.*depth 3: valid levels "
                             "are 0 to 1"):
        jb.lengths(2)
    with pytest.raises(ValueError, match="level -1 is out of range"):
        jb.lengths(-1)
    with pytest.raises(TypeError, match="level must be an int"):
        jb.lengths(True)


def test_equals():
    a = J.from_list([[[1.0, np.nan]], []])
    b = J.from_list([[[1.0, np.nan]], []])
    assert a.equals(b) and b.equals(a)
    assert not a.equals(J.from_list([[[1.0, 2.0]], []]))
    assert not a.equals(J.from_list([[[1.0], [np.nan]], []]))  # offsets
    assert not a.equals(J.from_list([[[1.0, np.nan]]]))  # length
    assert not a.equals(J.from_list([[1.0, np.nan]]))  # depth 2 vs 3
    assert not a.equals(J.from_list([[[1.0, np.nan]], []], dtype=np.float32))
    assert not a.equals(a.values)
    ints = J.from_list([[1, 2]])
    assert ints.equals(J.from_list([[1, 2]]))

# }}}


# {{{ bad input: constructor

def test_no_offsets():
    with pytest.raises(ValueError,
                       match=r"at least one offsets array \(a JaggedArray of "
                             r"depth d >= 2 has d - 1\)"):
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
    with pytest.raises(ValueError,
                       match=r"inconsistent nesting depth: element \[1\] is a "
                             r"list of depth 2 but element \[0\] is an "
                             r"innermost sequence \(depth 1\)"):
        J.from_list([[1, 2], [[3]]])
    with pytest.raises(ValueError,
                       match=r"inconsistent nesting depth: element \[1\] is a "
                             r"list of depth at least 3 but element \[0\] is "
                             r"a list of depth 2"):
        J.from_list([[[1]], [[[]]]])
    with pytest.raises(ValueError,
                       match=r"inconsistent nesting depth: element \[0\]\[1\] "
                             r"is an element \(depth 0\)"):
        J.from_list([[[1], 2]])


def test_from_list_depth_mismatch():
    # the nesting depth of the messages is the depth= argument's
    with pytest.raises(ValueError, match="nesting depth 2, but depth=3"):
        J.from_list([[1]], depth=3)
    with pytest.raises(ValueError, match="nesting depth 3, but depth=2"):
        J.from_list([[[1]]], depth=2)
    with pytest.raises(ValueError, match="nesting depth at least 4, but depth=3"):
        J.from_list([[[[]]]], depth=3)
    # with a scalar elem_shape, a list at the element level is one level of
    # nesting too many (not an element of shape (n,))
    with pytest.raises(ValueError, match="nesting depth 3, but depth=2"):
        J.from_list([[[1, 2]]], depth=2, elem_shape=())
    for bad in (1, 0, True, 2.0):
        with pytest.raises(ValueError, match="depth must be an int >= 2"):
            J.from_list([[1]], depth=bad)


def test_from_list_cannot_determine_elem_shape_and_dtype():
    with pytest.raises(ValueError, match="elem_shape and dtype.*pass elem_shape="):
        J.from_list([[], []])
    with pytest.raises(ValueError, match="dtype.*pass"):
        J.from_list([], elem_shape=())


def test_from_list_not_a_list_of_sequences():
    with pytest.raises(ValueError,
                       match=r"list of sequences \(depth >= 2\), got a single "
                             r"sequence of elements \(depth 1\)"):
        J.from_list([1, 2])
    with pytest.raises(TypeError, match="expects a .*list"):
        J.from_list(np.ones((2, 2)))

# }}}


# {{{ coerce

def test_coerce_jagged_array_of_the_declared_type_is_returned_as_is():
    ja = J.from_list([_seq(2, (3,)), _seq(0, (3,))])
    assert J.coerce(ja, 2, (3,), np.float64, "x") is ja
    assert J.coerce(ja, np.int64(2), [3], "float64", "x") is ja


@pytest.mark.parametrize("src, dst", [(np.float64, np.float32),
                                      (np.int64, np.float32),
                                      (np.int32, np.int64),
                                      (np.bool_, np.float64)])
def test_coerce_casts_jagged_array_same_kind(src, dst):
    ja = J.from_list([np.arange(3).astype(src), np.zeros(0, src)])
    got = J.coerce(ja, 2, (), dst, "x")
    assert got.dtype == dst and got.depth == 2 and got.elem_shape == ()
    assert all(np.array_equal(a, b) for a, b in zip(got.offsets, ja.offsets))
    np.testing.assert_array_equal(got.values, ja.values.astype(dst))
    assert got.values.flags.c_contiguous and not got.values.flags.writeable
    assert ja.dtype == src  # the input is not changed


def test_coerce_rejects_jagged_array_of_other_kind():
    ja = J.from_list([np.ones(2)])
    with pytest.raises(TypeError,
                       match=r"jagged input 'x' has dtype float64, expected "
                             r"int32 \(no 'same_kind' cast"):
        J.coerce(ja, 2, (), np.int32, "x")
    jc = J.from_list([np.ones(2, np.complex64)])
    with pytest.raises(TypeError, match="'x' has dtype complex64, expected float32"):
        J.coerce(jc, 2, (), np.float32, "x")


@pytest.mark.parametrize("src, dst, bad", [
    (np.uint64, np.int64, 2**63 + 5), (np.int64, np.int32, -2**40),
    (np.uint16, np.int8, 300)])
def test_coerce_refuses_integers_the_cast_would_wrap(src, dst, bad):
    # (same_kind allows uint64 -> int64, which wraps values past 2**63 - 1:
    # those raise, naming the value; values in range are cast)
    fits = [np.array([5, 7], src), np.zeros(0, src)]
    for value in (J.from_list(fits), fits):
        got = J.coerce(value, 2, (), dst, "x")
        assert got.dtype == dst
        np.testing.assert_array_equal(got.values, [5, 7])
    wraps = [np.array([1, bad], src)]
    for value in (J.from_list(wraps), wraps):
        with pytest.raises(ValueError, match=f"'x'.* holds the value {bad}, "
                           f"which {np.dtype(dst)} cannot hold"):
            J.coerce(value, 2, (), dst, "x")


def test_coerce_rejects_jagged_array_of_other_depth_or_elem_shape():
    ja = J.from_list([[_seq(2, (3,))], []])  # depth 3
    with pytest.raises(ValueError,
                       match=r"jagged input 'docs' has depth 3, expected depth 2"):
        J.coerce(ja, 2, (3,), np.float64, "docs")
    with pytest.raises(ValueError,
                       match=r"'docs' has depth 3, expected depth 4"):
        J.coerce(ja, 4, (3,), np.float64, "docs")
    with pytest.raises(ValueError,
                       match=r"jagged input 'docs' has elem_shape \(3,\), "
                             r"expected \(2,\)"):
        J.coerce(ja, 3, (2,), np.float64, "docs")
    with pytest.raises(ValueError, match=r"elem_shape \(3,\), expected \(\)"):
        J.coerce(ja, 3, (), np.float64, "docs")


def test_coerce_nested_lists():
    nested = [_seq(2, (3,)), _seq(0, (3,)), _seq(1, (3,), 6)]
    got = J.coerce(nested, 2, (3,), np.float32, "x")
    assert got.depth == 2 and got.dtype == np.float32 and got.elem_shape == (3,)
    np.testing.assert_array_equal(got.offsets[0], [0, 2, 2, 3])
    np.testing.assert_array_equal(got.values, np.concatenate(nested))
    # Python scalars and leaves of different (castable) dtypes
    got = J.coerce([[1, 2], [], (3.5,)], 2, (), np.float32, "x")
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got.values, [1, 2, 3.5])
    got = J.coerce([np.arange(2, dtype=np.int8), np.array([0.5])], 2, (),
                   np.float64, "x")
    np.testing.assert_array_equal(got.values, [0, 1, 0.5])
    # with elem_shape declared, Python lists at the element level are elements
    got = J.coerce([[[1, 2], [3, 4]], []], 2, (2,), np.int64, "x")
    assert got.values.shape == (2, 2) and got.dtype == np.int64
    np.testing.assert_array_equal(got.lengths(), [2, 0])


def test_coerce_nested_lists_depth3():
    docs = [[_seq(2, (2,)), _seq(0, (2,))], [], [_seq(1, (2,), 4)]]
    got = J.coerce(docs, 3, (2,), np.float64, "docs")
    assert got.depth == 3 and len(got) == 3 and got.nnz == 3
    np.testing.assert_array_equal(got.offsets[0], [0, 2, 2, 3])
    np.testing.assert_array_equal(got.offsets[1], [0, 2, 2, 3])
    _same_nested(got.tolist(), docs)
    assert J.coerce(got, 3, (2,), np.float64, "docs") is got
    # depth 3 from element lists (scalars)
    got = J.coerce([[[1, 2]], [[], [3]]], 3, (), np.float32, "docs")
    assert got.depth == 3 and got.dtype == np.float32
    np.testing.assert_array_equal(got.lengths(1), [2, 0, 1])


def test_coerce_empty_batches():
    for depth in (2, 3, 4):
        got = J.coerce([], depth, (2, 3), np.float32, "x")
        assert got.depth == depth and len(got) == 0 and got.nnz == 0
        assert got.values.shape == (0, 2, 3) and got.dtype == np.float32
        assert all(len(o) == 1 for o in got.offsets)
    # two empty sequences (depth 2) or two empty documents (depth 3)
    two = J.coerce([[], []], 2, (), np.int32, "x")
    assert two.depth == 2 and two.dtype == np.int32
    np.testing.assert_array_equal(two.lengths(), [0, 0])
    docs = J.coerce([[], [[]]], 3, (), np.int32, "x")
    assert docs.depth == 3
    np.testing.assert_array_equal(docs.lengths(0), [0, 1])
    np.testing.assert_array_equal(docs.lengths(1), [0])
    # an empty JaggedArray of another castable dtype
    e = J.from_list([], elem_shape=(), dtype=np.int64)
    got = J.coerce(e, 2, (), np.float32, "x")
    assert got.dtype == np.float32 and len(got) == 0


def _nested_lengths(depth):
    """Nested lists of sequence lengths (hypothesis), *depth* levels."""
    lengths = st.integers(0, 3)
    for _ in range(depth - 1):
        lengths = st.lists(lengths, max_size=3)
    return lengths


@given(data=st.data(), depth=st.sampled_from([2, 3, 4]))
def test_coerce_numpy_leaves_in_bulk_as_from_list(data, depth):
    # nested lists of numpy sequences of the declared dtype and elem shape
    # (what callers pass) are converted in bulk; the same JaggedArray as
    # from_list builds, a fresh and read-only copy
    lengths = data.draw(_nested_lengths(depth))

    def build(x, start=0):
        if isinstance(x, int):
            return _seq(x, (2,), start)
        return [build(y, 10 * k + start) for k, y in enumerate(x)]
    nested = build(lengths)
    got = J.coerce(nested, depth, (2,), np.float64, "x")
    want = J.from_list(nested, elem_shape=(2,), dtype=np.float64, depth=depth)
    assert got.depth == depth and got.dtype == np.float64
    np.testing.assert_array_equal(got.values, want.values)
    for a, b in zip(got.offsets, want.offsets, strict=True):
        np.testing.assert_array_equal(a, b)
        assert a.dtype == np.int64 and not a.flags.writeable
    assert not got.values.flags.writeable

    def leaves(x):
        return [a for y in x for a in leaves(y)] if isinstance(x, list) else [x]
    assert not any(np.shares_memory(got.values, a) for a in leaves(nested))


def test_coerce_rejects_bad_nested_lists():
    with pytest.raises(ValueError,
                       match=r"jagged input 'x': the nested list has nesting "
                             r"depth 3, but depth=2 was given"):
        J.coerce([[[1.0]]], 2, (), np.float64, "x")
    with pytest.raises(ValueError,
                       match=r"'x': the nested list has nesting depth 2, but "
                             r"depth=3 was given"):
        J.coerce([np.ones(2)], 3, (), np.float64, "x")
    with pytest.raises(ValueError,
                       match=r"'x': .*nesting depth at least 4, but depth=3"):
        J.coerce([[[[]]]], 3, (), np.float64, "x")
    with pytest.raises(ValueError,
                       match=r"jagged input 'x': element \[1\] has elem shape "
                             r"\(3,\), but elem_shape has \(2,\)"):
        J.coerce([np.ones((1, 2)), np.ones((2, 3))], 2, (2,), np.float64, "x")
    with pytest.raises(TypeError,
                       match=r"jagged input 'x': element \[0\] has dtype "
                             r"float64, expected int32 \(no 'same_kind' cast"):
        J.coerce([np.ones(2)], 2, (), np.int32, "x")
    with pytest.raises(TypeError,
                       match=r"'x': element \[1\]\[0\] has dtype float64, "
                             r"expected int64"):
        J.coerce([[1], [2.5]], 2, (), np.int64, "x")
    with pytest.raises(ValueError, match=r"'x': inconsistent nesting depth"):
        J.coerce([[np.ones(1)], np.ones(1)], 3, (), np.float64, "x")
    with pytest.raises(TypeError, match=r"'x': element \[0\] is not numeric"):
        J.coerce([np.array(["a"], dtype=object)], 2, (), np.float64, "x")


def test_coerce_rejects_other_values_and_bad_declarations():
    with pytest.raises(TypeError,
                       match=r"jagged input 'x' must be a JaggedArray or nested "
                             r"lists of depth 2, got ndarray"):
        J.coerce(np.ones((2, 3)), 2, (), np.float64, "x")
    with pytest.raises(TypeError, match="'x' must be .* got int"):
        J.coerce(3, 2, (), np.float64, "x")
    with pytest.raises(ValueError, match="depth must be an int >= 2"):
        J.coerce([np.ones(2)], 1, (), np.float64, "x")

# }}}


# {{{ random structures

@st.composite
def _structures(draw):
    """A FractalTensor depth 2-4, a nested length structure of depth - 1
    levels (lists of ints at the bottom give sequence lengths) and an elem
    shape."""
    depth = draw(st.integers(2, 4))
    elem_shape = draw(st.sampled_from([(), (2,), (2, 3)]))

    def level(d):
        if d == 0:
            return draw(st.integers(0, 3))
        return [level(d - 1) for _ in range(draw(st.integers(0, 3)))]

    return depth, elem_shape, level(depth - 1)


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

    nested = fill(lengths, depth - 1)
    ja = J.from_list(nested, elem_shape=elem_shape, dtype=np.float64, depth=depth)
    assert ja.depth == depth and len(ja.offsets) == depth - 1
    assert len(ja) == len(nested)
    assert ja.elem_shape == elem_shape
    _same_nested(ja.tolist(), nested)
    assert J.from_list(ja.tolist(), elem_shape=elem_shape, dtype=np.float64,
                       depth=depth).equals(ja)

    # straightforward construction: breadth-first per level
    offsets = []
    frontier = [nested]  # the nodes of level k
    for _ in range(depth - 1):
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
    for k in range(depth - 1):
        np.testing.assert_array_equal(ja.lengths(k), np.diff(offsets[k]))
    # the constructor accepts what from_list built
    assert J(ja.values, *ja.offsets).equals(ja)
    # coerce agrees with from_list, from nested lists and from a JaggedArray
    assert J.coerce(nested, depth, elem_shape, np.float64, "x").equals(ja)
    assert J.coerce(ja, depth, elem_shape, np.float64, "x") is ja
    f32 = J.coerce(nested, depth, elem_shape, np.float32, "x")
    assert f32.dtype == np.float32 and f32.depth == depth
    assert J.coerce(ja, depth, elem_shape, np.float32, "x").equals(f32)

# }}}
