# SPDX-License-Identifier: MIT
"""Shape operations against numpy through the reference evaluator."""

import numpy as np
import pymbolic.primitives as prim
import pytest
from numpy.exceptions import AxisError

import ftlazy as ft
from helpers import check
from ftlazy import shapes as sh

RNG = np.random.default_rng(1)
XV = RNG.standard_normal((2, 3, 4))
X = ft.make_placeholder("x", (2, 3, 4), np.float64)
N = ft.make_size_param("n")
M = ft.make_size_param("m")
VN, VM = prim.Variable("n"), prim.Variable("m")


# {{{ reshape

@pytest.mark.parametrize("order", ["C", "F"])
@pytest.mark.parametrize("shape", [
    (24,), (4, 6), (6, -1), (-1,), (2, 3, 2, 2), (1, 24, 1), (-1, 1, 4),
    (3, 8), 24,
])
def test_reshape(shape, order):
    check(ft.reshape(X, shape, order=order), np.reshape(XV, shape, order=order),
          x=XV)


def test_reshape_method_and_identity():
    check(X.reshape(4, 6), XV.reshape(4, 6), x=XV)
    check(X.reshape((3, 8), order="F"), XV.reshape((3, 8), order="F"), x=XV)
    assert ft.reshape(X, (2, 3, 4)) is X
    assert ft.reshape(X, (2, -1, 4), order="F") is X
    assert isinstance(ft.reshape(X, (6, 4)), ft.Reshape)


def test_reshape_symbolic():
    x = ft.make_placeholder("x", (N, 4), np.float64)
    xv = RNG.standard_normal((5, 4))
    flat = ft.reshape(x, (-1,))
    assert flat.shape == (sh.normalize_component(4 * VN),)
    check(flat, xv.reshape(-1), x=xv)
    check(ft.reshape(x, (2, -1), order="F"), xv.reshape((2, -1), order="F"),
          x=xv)
    check(ft.reshape(x, (4 * N,)), xv.reshape(20), x=xv)
    check(ft.ravel(x), xv.ravel(), x=xv)
    y = ft.make_placeholder("y", (N, M), np.float64)
    yv = RNG.standard_normal((2, 3))
    check(ft.reshape(y, (N, -1)), yv, y=yv)
    check(ft.reshape(y, (M, N)), yv.reshape(3, 2), y=yv)
    check(ft.reshape(y, (1, N, 1, M)), yv.reshape(1, 2, 1, 3), y=yv)
    z = ft.make_placeholder("z", (2 * N + 2, 3), np.float64)
    zv = RNG.standard_normal((6, 3))
    check(ft.reshape(z, (-1, 6)), zv.reshape(-1, 6), z=zv)


@pytest.mark.parametrize("shape, newshape, msg", [
    ((N, M), (-1,), "affine"),
    ((N, M), (N * M,), "affine"),
    ((N, 4), (M, -1), "non-affine"),
    ((N,), (-1, 2), "non-affine"),
    ((N, 4), (N, 5), r"shape \(n, 4\).*into shape \(n, 5\)"),
    ((2, 3, 4), (5, 5), r"shape \(2, 3, 4\) \(size 24\) into shape \(5, 5\)"),
    ((2, 3, 4), (5, -1), r"size 24 is not divisible by 5"),
    ((2, 3, 4), (-1, -1), "only one entry may be -1"),
    ((2, 3, 4), (-2, 12), "negative dimension -2"),
    ((0, 3), (0, -1), "ambiguous"),
])
def test_reshape_errors(shape, newshape, msg):
    x = ft.make_placeholder("x", shape, np.float64)
    with pytest.raises(ValueError, match=msg):
        ft.reshape(x, newshape)


def test_reshape_bad_order_and_type():
    with pytest.raises(ValueError, match="order must be 'C' or 'F'"):
        ft.reshape(X, (24,), order="A")
    with pytest.raises(TypeError, match="shape"):
        ft.reshape(X, 2.5)


def test_ravel_non_affine():
    y = ft.make_placeholder("y", (N, M), np.float64)
    with pytest.raises(ValueError, match="not affine"):
        ft.ravel(y)
    check(ft.flatten(X, order="F"), XV.flatten(order="F"), x=XV)

# }}}


# {{{ axis permutations

@pytest.mark.parametrize("axes", [None, (0, 2, 1), (2, 0, 1), (-1, 0, -2)])
def test_transpose(axes):
    check(ft.transpose(X, axes), np.transpose(XV, axes), x=XV)


def test_transpose_forms():
    check(X.T, XV.T, x=XV)
    check(X.transpose(1, 0, 2), XV.transpose(1, 0, 2), x=XV)
    assert ft.transpose(X, (0, 1, 2)) is X
    assert isinstance(ft.transpose(X), ft.AxisPermutation)
    v = ft.make_placeholder("v", (3,), np.int32)
    assert ft.transpose(v) is v


@pytest.mark.parametrize("axes, exc, msg", [
    ((0, 0, 1), ValueError, "repeated axis"),
    ((0, 1), ValueError, "don't match"),
    ((0, 1, 3), AxisError, "axis 3 is out of bounds for array of dimension 3"),
    ((0, 1, 2.0), TypeError, "integer"),
])
def test_transpose_errors(axes, exc, msg):
    with pytest.raises(exc, match=msg):
        ft.transpose(X, axes)


@pytest.mark.parametrize("a1, a2", [(0, 2), (-1, 0), (1, 1)])
def test_swapaxes(a1, a2):
    check(ft.swapaxes(X, a1, a2), np.swapaxes(XV, a1, a2), x=XV)


@pytest.mark.parametrize("src, dst", [(0, 2), (-1, 0), ((0, 1), (2, 0)),
                                      ((2, 0), (0, 1)), ([], [])])
def test_moveaxis(src, dst):
    check(ft.moveaxis(X, src, dst), np.moveaxis(XV, src, dst), x=XV)


def test_moveaxis_errors():
    with pytest.raises(ValueError, match="same number of elements"):
        ft.moveaxis(X, (0, 1), 2)
    with pytest.raises(AxisError, match="axis 5 is out of bounds"):
        ft.moveaxis(X, 5, 0)

# }}}


# {{{ expand_dims, squeeze

@pytest.mark.parametrize("axis", [0, 3, -1, -4, (0, 1), (0, 4), (-1, 1)])
def test_expand_dims(axis):
    check(ft.expand_dims(X, axis), np.expand_dims(XV, axis), x=XV)


def test_expand_dims_errors():
    with pytest.raises(ValueError, match="repeated axis"):
        ft.expand_dims(X, (0, 0))
    with pytest.raises(AxisError, match="axis 4 is out of bounds for array of "
                       "dimension 4"):
        ft.expand_dims(X, 4)


@pytest.mark.parametrize("axis", [None, 0, 2, -1, (0, 2), (0, 2, 4)])
def test_squeeze(axis):
    yv = RNG.standard_normal((1, 3, 1, 2, 1))
    y = ft.make_placeholder("y", (1, 3, 1, 2, 1), np.float64)
    check(ft.squeeze(y, axis), np.squeeze(yv, axis), y=yv)


def test_squeeze_symbolic_and_errors():
    y = ft.make_placeholder("y", (1, N, 1), np.float64)
    assert ft.squeeze(y).shape == (VN,)
    assert ft.squeeze(X) is X
    with pytest.raises(ValueError, match=r"cannot squeeze axis 1 of an array of "
                       r"shape \(1, n, 1\)"):
        ft.squeeze(y, 1)
    with pytest.raises(ValueError, match="axis 0.*length 2 is not 1"):
        ft.squeeze(X, 0)
    with pytest.raises(AxisError):
        ft.squeeze(X, 3)

# }}}


# {{{ broadcast_to

@pytest.mark.parametrize("in_shape, shape", [
    ((3,), (4, 3)), ((1, 3), (2, 3)), ((2, 1, 4), (5, 2, 3, 4)), ((), (2, 2)),
    ((1,), (0,)), ((3, 1), (3, 0)), ((2,), (2,)),
])
def test_broadcast_to(in_shape, shape):
    av = RNG.integers(-5, 5, in_shape).astype(np.int16)
    a = ft.make_placeholder("a", in_shape, np.int16)
    check(ft.broadcast_to(a, shape), np.broadcast_to(av, shape), a=av)


def test_broadcast_to_symbolic_and_errors():
    a = ft.make_placeholder("a", (1, 3), np.float32)
    av = np.arange(3, dtype=np.float32).reshape(1, 3)
    b = ft.broadcast_to(a, (N, 3))
    assert b.shape == (VN, 3)
    check(b, np.broadcast_to(av, (4, 3)), a=av, n=4)
    assert ft.broadcast_to(a, (1, 3)) is a
    with pytest.raises(ValueError, match=r"cannot broadcast an array of shape "
                       r"\(1, 3\) to shape \(4, 2\)"):
        ft.broadcast_to(a, (4, 2))
    with pytest.raises(ValueError, match=r"shape \(1, 3\) to shape \(3,\)"):
        ft.broadcast_to(a, (3,))
    c = ft.make_placeholder("c", (N,), np.float32)
    with pytest.raises(ValueError, match=r"\(n,\) to shape \(m,\)"):
        ft.broadcast_to(c, (M,))

# }}}


# {{{ roll

@pytest.mark.parametrize("shift, axis", [
    (1, 0), (-1, 1), (5, 2), (-7, 2), (0, 1), (4, 2), (2, None), (-25, None),
    (13, None), ((1, 2), (0, 1)), ((1, -2), 2), (1, (0, 2)), ((1, 1), (1, 1)),
    (3, -1),
])
def test_roll(shift, axis):
    check(ft.roll(X, shift, axis), np.roll(XV, shift, axis), x=XV)


def test_roll_nodes_and_symbolic():
    r = ft.roll(X, 5, 1)
    assert isinstance(r, ft.Roll) and r.shift == 2
    assert ft.roll(X, 4, 2) is X
    assert ft.roll(X, (1, -1), (0, 0)) is X
    x = ft.make_placeholder("x", (N, 3), np.float64)
    xv = RNG.standard_normal((5, 3))
    check(ft.roll(x, 7, 0), np.roll(xv, 7, 0), x=xv)
    check(ft.roll(x, -1, 0), np.roll(xv, -1, 0), x=xv)
    check(ft.roll(x, 2), np.roll(xv, 2), x=xv)
    e = ft.make_placeholder("e", (0, 3), np.float64)
    check(ft.roll(e, 2, 0), np.roll(np.ones((0, 3)), 2, 0), e=np.ones((0, 3)))


def test_roll_errors():
    with pytest.raises(AxisError, match="axis 3 is out of bounds"):
        ft.roll(X, 1, 3)
    with pytest.raises(ValueError, match="cannot be broadcast"):
        ft.roll(X, (1, 2, 3), (0, 1))
    with pytest.raises(TypeError, match="shift must be an integer"):
        ft.roll(X, 1.5, 0)

# }}}


# {{{ stack, concatenate

def test_stack():
    av = RNG.standard_normal((2, 3))
    bv = RNG.integers(0, 9, (2, 3)).astype(np.int32)
    a = ft.make_placeholder("a", (2, 3), np.float64)
    b = ft.make_placeholder("b", (2, 3), np.int32)
    for axis in (0, 1, 2, -1, -3):
        check(ft.stack([a, b, a], axis), np.stack([av, bv, av], axis), a=av, b=bv)
    check(ft.stack([b]), np.stack([bv]), b=bv)
    c = ft.make_placeholder("c", (2, 3), np.float32)
    cv = bv.astype(np.float32)
    check(ft.stack([c, b]), np.stack([cv, bv]), c=cv, b=bv)
    check(ft.stack([b, b], dtype=np.float32), np.stack([bv, bv], dtype=np.float32),
          b=bv)
    s = ft.make_placeholder("s", (N,), np.float64)
    sv = np.arange(4.0)
    assert ft.stack([s, s], 1).shape == (VN, 2)
    check(ft.stack([s, s], 1), np.stack([sv, sv], 1), s=sv)


def test_stack_errors():
    a = ft.make_placeholder("a", (2, 3), np.float64)
    b = ft.make_placeholder("b", (3, 2), np.float64)
    with pytest.raises(ValueError, match=r"array 0 has shape \(2, 3\) and array 1 "
                       r"has shape \(3, 2\)"):
        ft.stack([a, b])
    with pytest.raises(ValueError, match="need at least one array to stack"):
        ft.stack([])
    with pytest.raises(AxisError, match="axis 3 is out of bounds for array of "
                       "dimension 3"):
        ft.stack([a, a], 3)
    with pytest.raises(TypeError, match="same_kind"):
        ft.stack([a, a], dtype=np.int64)
    s = ft.make_placeholder("s", (N,), np.float64)
    t = ft.make_placeholder("t", (M,), np.float64)
    with pytest.raises(ValueError, match=r"\(n,\).*\(m,\)"):
        ft.stack([s, t])


def test_concatenate():
    av = RNG.standard_normal((2, 3))
    bv = RNG.integers(0, 9, (4, 3)).astype(np.int8)
    ev = np.zeros((0, 3))
    a = ft.make_placeholder("a", (2, 3), np.float64)
    b = ft.make_placeholder("b", (4, 3), np.int8)
    e = ft.make_placeholder("e", (0, 3), np.float64)
    inputs = {"a": av, "b": bv}
    check(ft.concatenate([a, b, a]), np.concatenate([av, bv, av]), **inputs)
    check(ft.concatenate([a, e, b], axis=-2), np.concatenate([av, ev, bv]),
          e=ev, **inputs)
    check(ft.concatenate([a, b], axis=None), np.concatenate([av, bv], axis=None),
          **inputs)
    check(ft.concatenate([a.T, a.T], axis=1), np.concatenate([av.T, av.T], 1),
          a=av)
    check(ft.concatenate([b, b], dtype=np.int64),
          np.concatenate([bv, bv], dtype=np.int64), b=bv)
    assert ft.concatenate([a]) is a
    assert isinstance(ft.concatenate([a, a]), ft.Concatenate)
    z = ft.make_placeholder("z", (2, 0), np.float64)
    check(ft.concatenate([z, z], axis=1), np.zeros((2, 0)), z=np.zeros((2, 0)))


def test_concatenate_symbolic():
    s = ft.make_placeholder("s", (N, 3), np.float64)
    t = ft.make_placeholder("t", (M, 3), np.float64)
    sv, tv = RNG.standard_normal((2, 3)), RNG.standard_normal((5, 3))
    c = ft.concatenate([s, t, s])
    assert c.shape == (sh.normalize_component(2 * VN + VM), 3)
    check(c, np.concatenate([sv, tv, sv]), s=sv, t=tv)
    check(ft.concatenate([s, s], axis=1), np.concatenate([sv, sv], 1), s=sv)


def test_concatenate_errors():
    a = ft.make_placeholder("a", (2, 3), np.float64)
    b = ft.make_placeholder("b", (2, 4), np.float64)
    v = ft.make_placeholder("v", (3,), np.float64)
    with pytest.raises(ValueError, match=r"array 0 has shape \(2, 3\) and array 1 "
                       r"has shape \(2, 4\) \(axis 1 differs\)"):
        ft.concatenate([a, b])
    with pytest.raises(ValueError, match=r"number of dimensions.*\(2, 3\).*\(3,\)"):
        ft.concatenate([a, v])
    with pytest.raises(ValueError, match="need at least one array to concatenate"):
        ft.concatenate([])
    with pytest.raises(ValueError, match="zero-dimensional"):
        ft.concatenate([ft.asarray(1.0), ft.asarray(2.0)])
    with pytest.raises(AxisError, match="axis 2 is out of bounds for array of "
                       "dimension 2"):
        ft.concatenate([a, a], 2)
    with pytest.raises(TypeError, match="sequence of arrays"):
        ft.concatenate(a)
    s = ft.make_placeholder("s", (3, N), np.float64)
    with pytest.raises(ValueError, match=r"\(2, 3\).*\(3, n\)"):
        ft.concatenate([a, s])

# }}}
