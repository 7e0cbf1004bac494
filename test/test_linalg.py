# SPDX-License-Identifier: MIT
"""einsum and the matrix products against numpy through the reference
evaluator."""

import numpy as np
import pymbolic.primitives as prim
import pytest
from numpy.exceptions import AxisError

import ftlazy as ft
import helpers

RNG = np.random.default_rng(2)
N = ft.make_size_param("n")


def rand(shape, dtype=np.float64):
    dtype = np.dtype(dtype)
    if dtype.kind == "c":
        return (RNG.standard_normal(shape)
                + 1j * RNG.standard_normal(shape)).astype(dtype)
    if dtype.kind in "iu":
        return RNG.integers(0, 5, shape).astype(dtype)
    if dtype.kind == "b":
        return RNG.integers(0, 2, shape).astype(bool)
    return RNG.standard_normal(shape).astype(dtype)


def lazy_inputs(*values):
    """Placeholders ``a0, a1, ...`` for numpy *values*, and the input dict."""
    phs = [ft.make_placeholder(f"a{i}", v.shape, v.dtype)
           for i, v in enumerate(values)]
    return phs, {f"a{i}": v for i, v in enumerate(values)}


def check(lazy, expected, **inputs):
    helpers.check(lazy, expected, rtol=1e-5, **inputs)


# {{{ einsum

EINSUM = [
    ("ij,jk->ik", [(2, 3), (3, 4)]),
    ("ij,jk", [(2, 3), (3, 4)]),
    (" ij , jk -> ki ", [(2, 3), (3, 4)]),
    ("bij,bjk->bik", [(5, 2, 3), (5, 3, 4)]),
    ("ii", [(3, 3)]),
    ("ii->", [(3, 3)]),
    ("ii->i", [(4, 4)]),
    ("iij->ji", [(3, 3, 2)]),
    ("i,j->ij", [(3,), (4,)]),
    ("i,j", [(3,), (4,)]),
    ("ij->ji", [(2, 5)]),
    ("ij", [(2, 5)]),
    ("ji", [(2, 5)]),
    ("ijk->", [(2, 3, 4)]),
    ("ijk->kj", [(2, 3, 4)]),
    ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 5)]),
    ("ij,jk,kl", [(2, 3), (3, 4), (4, 5)]),
    ("i,i->", [(6,), (6,)]),
    ("i,i", [(6,), (6,)]),
    ("i,i->i", [(6,), (6,)]),
    ("ba,Ab", [(2, 3), (4, 2)]),
    ("ij,jk->ik", [(2, 1), (3, 4)]),
    ("ij,ij->ij", [(2, 3), (1, 3)]),
    (",ij->ij", [(), (2, 3)]),
    ("->", [()]),
    ("ij,jk->ik", [(0, 3), (3, 4)]),
    ("ij,jk->ik", [(2, 0), (0, 4)]),
]


@pytest.mark.parametrize("spec, shapes", EINSUM, ids=[s for s, _ in EINSUM])
def test_einsum(spec, shapes):
    values = [rand(s) for s in shapes]
    phs, inputs = lazy_inputs(*values)
    result = ft.einsum(spec, *phs)
    assert isinstance(result, ft.Einsum) and "->" in result.spec
    check(result, np.einsum(spec, *values), **inputs)


@pytest.mark.parametrize("dtypes", [
    (np.int32, np.float32), (np.int8, np.int8), (np.bool_, np.bool_),
    (np.float32, np.complex64), (np.uint8, np.int8), (np.float32, np.float32),
])
def test_einsum_dtypes(dtypes):
    values = [rand((2, 3), dtypes[0]), rand((3, 4), dtypes[1])]
    phs, inputs = lazy_inputs(*values)
    result = ft.einsum("ij,jk->ik", *phs)
    assert len({a.dtype for a in result.args}) == 1
    check(result, np.einsum("ij,jk->ik", *values), **inputs)


def test_einsum_python_scalars_are_strong():
    v = rand((3,), np.float32)
    (a,), inputs = lazy_inputs(v)
    check(ft.einsum("i,->i", a, 2.0), np.einsum("i,->i", v, 2.0), **inputs)


def test_einsum_symbolic():
    a = ft.make_placeholder("a", (N, 3), np.float64)
    b = ft.make_placeholder("b", (3, N), np.float64)
    av, bv = rand((4, 3)), rand((3, 4))
    r = ft.einsum("ij,jk->ik", a, b)
    assert r.shape == (prim.Variable("n"), prim.Variable("n"))
    check(ft.einsum("ij,jk", a, b), av @ bv, a=av, b=bv)
    check(ft.einsum("ij,ji->", a, b), np.einsum("ij,ji->", av, bv), a=av, b=bv)


@pytest.mark.parametrize("spec, shapes, msg", [
    ("i...,i->", [(2, 3), (2,)], "ellipsis is not supported"),
    ("ij,jk->ik", [(2, 3)], "names 2 operand"),
    ("ij->ij", [(2, 3), (3, 4)], "names 1 operand"),
    ("ij,jk->ik", [(2, 3), (4, 5)], "index 'j' has size 3.*size 4 in operand 1"),
    ("ii->i", [(2, 3)], "index 'i' is repeated in operand 0.*sizes 2 and 3"),
    ("ii->i", [(1, 3)], "sizes 1 and 3"),
    ("i1,i->", [(2, 3), (2,)], "invalid subscript character '1'"),
    ("ij->ii", [(2, 2)], "'i' appears more than once"),
    ("ij->k", [(2, 2)], "'k' appears in no operand"),
    ("ijk->i", [(2, 2)], r"operand 0 has 2 dimension\(s\)"),
    ("ij->i->j", [(2, 2)], "more than one '->'"),
])
def test_einsum_errors(spec, shapes, msg):
    phs, _ = lazy_inputs(*[rand(s) for s in shapes])
    with pytest.raises(ValueError, match=msg):
        ft.einsum(spec, *phs)
    with pytest.raises(ValueError):
        np.einsum(spec, *[rand(s) for s in shapes])


def test_einsum_bad_arguments():
    with pytest.raises(TypeError, match="must be a str"):
        ft.einsum(["ij"], ft.make_placeholder("a", (2, 2), np.float64))
    with pytest.raises(ValueError, match="at least one operand"):
        ft.einsum("ij->")

# }}}


# {{{ matmul

MATMUL = [
    ((3,), (3,)), ((2, 3), (3,)), ((3,), (3, 4)), ((2, 3), (3, 4)),
    ((5, 2, 3), (3, 4)), ((3,), (5, 3, 4)), ((5, 2, 3), (3,)),
    ((5, 2, 3), (5, 3, 4)), ((1, 2, 3), (5, 3, 4)), ((5, 2, 3), (1, 3, 4)),
    ((6, 1, 2, 3), (5, 3, 4)), ((2, 1, 2, 3), (1, 5, 3, 4)),
    ((0, 2, 3), (3, 4)), ((2, 0), (0, 4)), ((1, 1), (1, 1)),
]


@pytest.mark.parametrize("sa, sb", MATMUL, ids=str)
def test_matmul(sa, sb):
    av, bv = rand(sa), rand(sb)
    (a, b), inputs = lazy_inputs(av, bv)
    check(ft.matmul(a, b), np.matmul(av, bv), **inputs)
    check(a @ b, av @ bv, **inputs)


@pytest.mark.parametrize("da, db", [(np.int8, np.int8), (np.int32, np.float32),
                                    (np.bool_, np.bool_), (np.complex64, np.float64),
                                    (np.uint16, np.int16)])
def test_matmul_dtypes(da, db):
    av, bv = rand((4, 2, 3), da), rand((3, 5), db)
    (a, b), inputs = lazy_inputs(av, bv)
    check(a @ b, av @ bv, **inputs)


def test_matmul_numpy_operands_and_symbolic():
    bv = rand((3, 2))
    a = ft.make_placeholder("a", (N, 3), np.float64)
    av = rand((4, 3))
    r = a @ bv
    assert r.shape == (prim.Variable("n"), 2)
    check(r, av @ bv, a=av)
    check(ft.matmul([1.0, 2.0, 3.0], a.T), np.matmul([1.0, 2.0, 3.0], av.T), a=av)


def test_matmul_errors():
    a = ft.make_placeholder("a", (2, 3), np.float64)
    b = ft.make_placeholder("b", (4, 5), np.float64)
    with pytest.raises(ValueError, match=r"shapes \(2, 3\) and \(4, 5\) not "
                       r"aligned: 3 \(dim 1\) != 4 \(dim 0\)"):
        ft.matmul(a, b)
    v = ft.make_placeholder("v", (4,), np.float64)
    with pytest.raises(ValueError, match=r"\(4,\) and \(2, 3\)"):
        v @ a
    with pytest.raises(ValueError, match="0-d"):
        ft.matmul(a, 2.0)
    with pytest.raises(ValueError, match="0-d"):
        ft.matmul(ft.asarray(np.float64(1)), a)
    c = ft.make_placeholder("c", (3, 2, 3), np.float64)
    d = ft.make_placeholder("d", (4, 3, 2), np.float64)
    with pytest.raises(ValueError, match=r"batch dimensions of shapes \(3, 2, 3\) "
                       r"and \(4, 3, 2\)"):
        c @ d
    s = ft.make_placeholder("s", (N,), np.float64)
    with pytest.raises(ValueError, match=r"\(2, 3\) and \(n,\)"):
        a @ s

# }}}


# {{{ dot, vdot, inner, outer, tensordot, trace

DOT = [
    ((), ()), ((3,), ()), ((), (2, 3)), ((3,), (3,)), ((2, 3), (3,)),
    ((3,), (3, 4)), ((2, 3), (3, 4)), ((2, 3, 4), (4,)), ((2, 3, 4), (5, 4, 6)),
    ((4,), (5, 4, 6)), ((2, 3), (2, 3, 2)),
]


@pytest.mark.parametrize("sa, sb", DOT, ids=str)
def test_dot(sa, sb):
    av, bv = rand(sa), rand(sb, np.float32)
    (a, b), inputs = lazy_inputs(av, bv)
    check(ft.dot(a, b), np.dot(av, bv), **inputs)


def test_dot_python_scalar_is_strong():
    av = rand((3,), np.float32)
    (a,), inputs = lazy_inputs(av)
    check(ft.dot(a, 2.0), np.dot(av, 2.0), **inputs)
    check(ft.dot(3, a), np.dot(3, av), **inputs)


def test_dot_errors():
    a = ft.make_placeholder("a", (2, 3), np.float64)
    b = ft.make_placeholder("b", (2, 4, 5), np.float64)
    with pytest.raises(ValueError, match=r"shapes \(2, 3\) and \(2, 4, 5\) not "
                       r"aligned: 3 \(dim 1\) != 4 \(dim 1\)"):
        ft.dot(a, b)
    with pytest.raises(ValueError, match=r"\(2, 3\) and \(2,\)"):
        ft.dot(a, ft.make_placeholder("v", (2,), np.float64))


@pytest.mark.parametrize("sa, sb, dtype", [
    ((3,), (3,), np.float64), ((2, 3), (6,), np.float32),
    ((2, 2), (2, 2), np.complex128), ((4,), (2, 2), np.complex64),
    ((3,), (3,), np.int8), ((), (), np.float64),
])
def test_vdot(sa, sb, dtype):
    av, bv = rand(sa, dtype), rand(sb, dtype)
    (a, b), inputs = lazy_inputs(av, bv)
    check(ft.vdot(a, b), np.vdot(av, bv), **inputs)


def test_vdot_errors():
    a = ft.make_placeholder("a", (2, 3), np.float64)
    with pytest.raises(ValueError, match="vdot: the arrays have different sizes "
                       "6 and 5"):
        ft.vdot(a, ft.make_placeholder("b", (5,), np.float64))


@pytest.mark.parametrize("sa, sb", [((3,), (3,)), ((2, 3), (3,)), ((2, 3), (4, 3)),
                                    ((2, 5, 3), (4, 3)), ((), (2, 3))], ids=str)
def test_inner(sa, sb):
    av, bv = rand(sa), rand(sb, np.int32)
    (a, b), inputs = lazy_inputs(av, bv)
    check(ft.inner(a, b), np.inner(av, bv), **inputs)


def test_inner_error():
    a = ft.make_placeholder("a", (2, 3), np.float64)
    with pytest.raises(ValueError, match=r"\(2, 3\) and \(3, 2\) not aligned"):
        ft.inner(a, ft.make_placeholder("b", (3, 2), np.float64))


@pytest.mark.parametrize("sa, sb", [((3,), (4,)), ((2, 3), (2,)), ((), (3,))],
                         ids=str)
def test_outer(sa, sb):
    av, bv = rand(sa, np.int16), rand(sb, np.float32)
    (a, b), inputs = lazy_inputs(av, bv)
    check(ft.outer(a, b), np.outer(av, bv), **inputs)


@pytest.mark.parametrize("sa, sb, axes", [
    ((2, 3, 4), (3, 4, 5), 2), ((2, 3), (3, 4), 1), ((2, 3), (4, 5), 0),
    ((2, 3, 4), (4, 3, 5), ([1, 2], [1, 0])), ((3, 4), (4, 3), (0, 1)),
    ((2, 3), (2, 3), 2),
], ids=str)
def test_tensordot(sa, sb, axes):
    av, bv = rand(sa), rand(sb)
    (a, b), inputs = lazy_inputs(av, bv)
    check(ft.tensordot(a, b, axes), np.tensordot(av, bv, axes), **inputs)


def test_tensordot_errors():
    a = ft.make_placeholder("a", (2, 3), np.float64)
    b = ft.make_placeholder("b", (4, 3), np.float64)
    with pytest.raises(ValueError, match=r"shape-mismatch for sum: axis 1 of "
                       r"shape \(2, 3\) and axis 0 of shape \(4, 3\)"):
        ft.tensordot(a, b, 1)
    with pytest.raises(ValueError, match="cannot sum over 3 axes"):
        ft.tensordot(a, b, 3)
    with pytest.raises(AxisError):
        ft.tensordot(a, b, ([2], [1]))


@pytest.mark.parametrize("shape, offset, axis1, axis2, dtype", [
    ((3, 3), 0, 0, 1, np.float64), ((3, 4), 1, 0, 1, np.float64),
    ((4, 3), -2, 0, 1, np.float32), ((2, 3, 3), 0, 1, 2, np.float64),
    ((3, 2, 3), 1, 0, -1, np.int8), ((2, 3), 5, 0, 1, np.uint8),
    ((2, 3, 4), 0, 2, 0, np.bool_), ((3, 3), -1, 1, 0, np.int32),
])
def test_trace(shape, offset, axis1, axis2, dtype):
    av = rand(shape, dtype)
    (a,), inputs = lazy_inputs(av)
    check(ft.trace(a, offset, axis1, axis2), np.trace(av, offset, axis1, axis2),
          **inputs)


def test_trace_dtype_symbolic_and_errors():
    av = rand((3, 3), np.int8)
    (a,), inputs = lazy_inputs(av)
    check(ft.trace(a, dtype=np.float32), np.trace(av, dtype=np.float32), **inputs)
    s = ft.make_placeholder("s", (N, N + 1), np.float64)
    sv = rand((3, 4))
    check(ft.trace(s), np.trace(sv), s=sv)
    check(ft.trace(s, 1), np.trace(sv, 1), s=sv)
    m = ft.make_size_param("m")
    t = ft.make_placeholder("t", (N, m), np.float64)
    # (min(n, m) is not affine: a data-dependent length)
    for shape in [(0, 3), (3, 0), (2, 5), (5, 2), (4, 4)]:
        tv = rand(shape)
        for offset in (-2, 0, 1):
            check(ft.trace(t, offset), np.trace(tv, offset), t=tv)
    # a square (n, n) array off its main diagonal: n - |offset| rows, none
    # for n <= |offset| (the build refused a slice to n - 1 before)
    q = ft.make_placeholder("q", (N, N), np.float64)
    for offset in (-2, 1, 3):
        compiled = ft.compile(ft.trace(q, offset))
        for n in (0, 1, 2, 4):
            qv = rand((n, n))
            check(ft.trace(q, offset), np.trace(qv, offset), q=qv)
            np.testing.assert_allclose(compiled(q=qv), np.trace(qv, offset))
    with pytest.raises(ValueError, match="at least two dimensions"):
        ft.trace(ft.make_placeholder("v", (3,), np.float64))
    with pytest.raises(ValueError, match="cannot be the same"):
        ft.trace(a, 0, 1, -1)

# }}}
