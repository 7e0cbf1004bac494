# SPDX-License-Identifier: MIT
"""Lowering to IndexLambda (to_index_lambda, lower_to_index_lambdas) and
map batching (batch_maps), checked against the reference evaluator on the
unlowered DAG and against numpy."""

from __future__ import annotations

import numpy as np
import pymbolic.primitives as prim
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pytools.tag import Tag, tag_dataclass

import ftlazy as ft
from ftlazy import shapes as sh
from ftlazy.analysis import get_inputs
from ftlazy.array import (
    AdvancedIndex, AxisPermutation, BasicIndex, Concatenate, Einsum, IndexLambda,
    NormalizedSlice, Reshape, Roll, Stack)
from ftlazy.fractal import Gather, LoopResult, Map, Scan, Scatter
from ftlazy.scalar_expr import ExprWalkMapper, Reduce, TypeCast, index_var
from ftlazy.tags import ImplStored, Named
from ftlazy.transform.batch import batch_maps
from ftlazy.transform.lower import LOWERABLE, lower_to_index_lambdas, to_index_lambda
from ftlazy.transform.mappers import CachedWalkMapper

rng = np.random.default_rng(1234)


@tag_dataclass
class AxisMark(Tag):
    """A test tag for axes."""

    label: str


# {{{ helpers

def _data(shape, dtype=np.int64):
    dtype = np.dtype(dtype)
    if dtype.kind == "b":
        return rng.random(shape) < 0.5
    if dtype.kind in "iu":
        lo = 0 if dtype.kind == "u" else -9
        return rng.integers(lo, 10, shape).astype(dtype)
    return rng.random(shape).astype(dtype)


def _tag(x):
    """*x* with a node tag and a tag on every axis."""
    x = x.tagged(Named("result"))
    for i in range(x.ndim):
        x = x.with_tagged_axis(i, AxisMark(f"ax{i}"))
    return x


def _assert_same(actual, expected, exact=True):
    actual, expected = np.asarray(actual), np.asarray(expected)
    assert actual.dtype == expected.dtype
    assert actual.shape == expected.shape
    if exact:
        np.testing.assert_array_equal(actual, expected)
    else:
        np.testing.assert_allclose(actual, expected, rtol=1e-12, atol=1e-12)


def check_lowering(node, inputs, reference=None, exact=True):
    """Lower the tagged *node*; compare against the unlowered node and
    against *reference* (a numpy value)."""
    node = _tag(node)
    lowered = to_index_lambda(node)
    assert isinstance(lowered, IndexLambda)
    assert lowered.tags == node.tags and lowered.axes == node.axes
    assert lowered.shape == node.shape and lowered.dtype == node.dtype
    assert get_inputs(lowered) == get_inputs(node)
    expected = ft.evaluate_numpy(node, **inputs)
    _assert_same(ft.evaluate_numpy(lowered, **inputs), expected, exact)
    if reference is not None:
        _assert_same(ft.evaluate_numpy(lowered, **inputs), reference, exact)
    return lowered


class _NodeKinds(CachedWalkMapper):
    """Collects the classes of all nodes, bodies included."""

    def __init__(self) -> None:
        super().__init__()
        self.kinds: set[type] = set()

    def visit(self, expr) -> bool:
        self.kinds.add(type(expr))
        return True


def _node_kinds(expr) -> set[type]:
    walker = _NodeKinds()
    walker(expr)
    return walker.kinds


def _expr_nodes(expr) -> list:
    found = []

    class Collect(ExprWalkMapper):
        def visit(self, e, *args, **kwargs):
            found.append(e)
            return True

    Collect()(expr)
    return found

# }}}


# {{{ einsum

EINSUM_CASES = [
    ("ij,jk->ik", [(2, 3), (3, 4)], np.int64),
    ("ij,jk->ik", [(2, 0), (0, 4)], np.int64),
    ("ii->", [(4, 4)], np.int64),
    ("ii->i", [(3, 3)], np.int32),
    ("iij->ji", [(3, 3, 2)], np.int64),
    ("bij,bjk->bik", [(2, 3, 4), (2, 4, 2)], np.int64),
    ("i,j,k->ijk", [(2,), (3,), (1,)], np.int64),
    ("ij,jk,kl->il", [(2, 3), (3, 2), (2, 4)], np.int64),
    ("ij->", [(3, 5)], np.int16),
    ("ij->ji", [(3, 5)], np.float32),
    ("i,i->", [(6,), (6,)], np.bool_),
    ("ij,j->i", [(3, 4), (4,)], np.int8),
    (",i->i", [(), (3,)], np.int64),
    ("ij,ij->ij", [(1, 3), (1, 3)], np.float64),
]


@pytest.mark.parametrize("spec, shapes, dtype", EINSUM_CASES)
def test_einsum(spec, shapes, dtype):
    arrays = [ft.make_placeholder(f"a{k}", s, dtype) for k, s in enumerate(shapes)]
    values = {f"a{k}": _data(s, dtype) for k, s in enumerate(shapes)}
    node = Einsum(spec, tuple(arrays))
    exact = np.dtype(dtype).kind != "f"
    lowered = check_lowering(node, values, np.einsum(spec, *values.values()), exact)
    reductions = [e for e in _expr_nodes(lowered.expr) if isinstance(e, Reduce)]
    n_reduced = len(set(spec.split("->")[0].replace(",", ""))
                    - set(spec.split("->")[1]))
    assert len(reductions) == (1 if n_reduced else 0)
    if reductions:
        assert [b[0] for b in reductions[0].bounds] == [f"_r{k}"
                                                        for k in range(n_reduced)]


def test_einsum_mixed_dtypes_are_cast():
    a = ft.make_placeholder("a", (2, 3), np.int32)
    b = ft.make_placeholder("b", (3,), np.float32)
    node = Einsum("ij,j->i", (a, b))
    values = {"a": _data((2, 3), np.int32), "b": _data((3,), np.float32)}
    lowered = check_lowering(node, values,
                             np.einsum("ij,j->i", values["a"], values["b"]),
                             exact=False)
    casts = [e for e in _expr_nodes(lowered.expr) if isinstance(e, TypeCast)]
    assert {c.dtype for c in casts} == {np.dtype(np.float64)}
    assert len(casts) == 2


def test_einsum_on_booleans_is_any_of_and():
    a = ft.make_placeholder("a", (2, 3), np.bool_)
    lowered = to_index_lambda(Einsum("ij,ij->i", (a, a)))
    assert isinstance(lowered.expr, Reduce) and lowered.expr.op == "any"
    assert isinstance(lowered.expr.inner, prim.LogicalAnd)


def test_einsum_symbolic():
    n = ft.make_size_param("n")
    a = ft.make_placeholder("a", (n, 3), np.int64)
    b = ft.make_placeholder("b", (3, n), np.int64)
    for nv in (0, 1, 4):
        values = {"a": _data((nv, 3)), "b": _data((3, nv))}
        check_lowering(ft.einsum("ij,jk->ik", a, b), values, values["a"] @ values["b"])
        check_lowering(ft.einsum("ij,ji->", a, b), values,
                       np.einsum("ij,ji->", values["a"], values["b"]))

# }}}


# {{{ reshape

RESHAPE_CASES = [
    ((2, 3, 4), (6, 4)),
    ((2, 3, 4), (4, 6)),
    ((2, 3, 4), (3, 8)),
    ((2, 3, 4), (24,)),
    ((24,), (2, 3, 4)),
    ((2, 3), (3, 2)),
    ((1, 4, 1), (4,)),
    ((4,), (1, 1, 4, 1)),
    ((2, 1, 6), (3, 1, 4)),
    ((), (1, 1)),
    ((1, 1), ()),
    ((0, 3), (3, 0)),
    ((2, 0, 3), (0,)),
    ((6, 5), (5, 6)),
]


@pytest.mark.parametrize("order", ["C", "F"])
@pytest.mark.parametrize("old, new", RESHAPE_CASES)
def test_reshape(old, new, order):
    x = ft.make_placeholder("x", old, np.int32)
    xv = _data(old, np.int32)
    check_lowering(Reshape(x, new, order), {"x": xv},
                   np.reshape(xv, new, order=order))


def test_reshape_skips_unit_axes_and_keeps_matching_axes():
    x = ft.make_placeholder("x", (5, 1, 3, 4), np.float64)
    lowered = to_index_lambda(Reshape(x, (5, 12)))
    index = lowered.expr.index_tuple
    assert index[0] == index_var(0)
    assert index[1] == 0
    assert index[2] == prim.FloorDiv(index_var(1), 4)


@pytest.mark.parametrize("order", ["C", "F"])
@pytest.mark.parametrize("make_shapes", [
    lambda n: ((n, 6), (n, 2, 3)),
    lambda n: ((n, 6), (2, n, 3)),
    lambda n: ((n, 2, 3), (n, 6)),
    lambda n: ((2, n), (2 * n,)),
    lambda n: ((2 * n, 3), (n, 6)),
    lambda n: ((n, 3), (3, n)),
    lambda n: ((n, 1), (1, n)),
])
def test_reshape_symbolic(make_shapes, order):
    old, new = make_shapes(prim.Variable("n"))
    x = ft.make_placeholder("x", old, np.int64)
    node = Reshape(x, new, order)
    for nv in (0, 1, 3):
        shape_old = sh.evaluate_shape(x.shape, {"n": nv})
        shape_new = sh.evaluate_shape(node.shape, {"n": nv})
        xv = _data(shape_old)
        check_lowering(node, {"x": xv}, np.reshape(xv, shape_new, order=order))

# }}}


# {{{ permutation, roll, stack, concatenate

@pytest.mark.parametrize("shape, perm", [
    ((2, 3, 4), (2, 0, 1)), ((2, 3), (1, 0)), ((0, 3), (1, 0)), ((5,), (0,)),
    ((1, 2, 1, 3), (3, 1, 0, 2)),
])
def test_axis_permutation(shape, perm):
    x = ft.make_placeholder("x", shape, np.float32)
    xv = _data(shape, np.float32)
    check_lowering(AxisPermutation(x, perm), {"x": xv}, np.transpose(xv, perm))


@pytest.mark.parametrize("shape, shift, axis", [
    ((4, 3), 1, 0), ((4, 3), -1, 0), ((4, 3), -7, 0), ((4, 3), 11, 0),
    ((4, 3), 3, 1), ((4, 3), 0, 1), ((4, 3), 6, 1), ((0, 3), 2, 0),
    ((1,), 5, 0), ((2, 5, 2), -12, 1),
])
def test_roll(shape, shift, axis):
    x = ft.make_placeholder("x", shape, np.int64)
    xv = _data(shape)
    check_lowering(Roll(x, shift, axis), {"x": xv}, np.roll(xv, shift, axis))


def test_roll_shift_is_normalized():
    x = ft.make_placeholder("x", (4, 3), np.int64)
    expected = prim.Remainder(prim.Sum((index_var(0), 3)), 4)
    for shift in (-7, 1, 5, 9):
        assert to_index_lambda(Roll(x, shift, 0)).expr.index_tuple[0] == expected
    assert to_index_lambda(Roll(x, 8, 0)).expr.index_tuple[0] == index_var(0)


@pytest.mark.parametrize("shift", [-9, -1, 1, 2, 5, 13])
def test_roll_symbolic(shift):
    n = ft.make_size_param("n")
    x = ft.make_placeholder("x", (n, 2), np.int64)
    for nv in (0, 1, 3, 5):
        xv = _data((nv, 2))
        check_lowering(Roll(x, shift, 0), {"x": xv}, np.roll(xv, shift, 0))


@pytest.mark.parametrize("shape, count, axis", [
    ((2, 3), 3, 0), ((2, 3), 2, 1), ((2, 3), 4, 2), ((), 3, 0), ((0, 2), 2, 1),
    ((3,), 1, 0),
])
def test_stack(shape, count, axis):
    xs = [ft.make_placeholder(f"x{k}", shape, np.int16) for k in range(count)]
    values = {f"x{k}": _data(shape, np.int16) for k in range(count)}
    check_lowering(Stack(tuple(xs), axis), values,
                   np.stack(list(values.values()), axis))


@pytest.mark.parametrize("shapes, axis", [
    ([(2, 3), (4, 3)], 0), ([(2, 3), (2, 1), (2, 0), (2, 4)], 1),
    ([(0, 3), (1, 3)], 0), ([(0, 3), (0, 3)], 0), ([(5,)], 0),
    ([(2, 2, 1), (2, 2, 3), (2, 2, 2)], 2),
])
def test_concatenate(shapes, axis):
    xs = [ft.make_placeholder(f"x{k}", s, np.int64) for k, s in enumerate(shapes)]
    values = {f"x{k}": _data(s) for k, s in enumerate(shapes)}
    check_lowering(Concatenate(tuple(xs), axis), values,
                   np.concatenate(list(values.values()), axis))


def test_stack_and_concatenate_symbolic():
    n, m = ft.make_size_param("n"), ft.make_size_param("m")
    a = ft.make_placeholder("a", (n, 2), np.int64)
    b = ft.make_placeholder("b", (3, 2), np.int64)
    c = ft.make_placeholder("c", (m, 2), np.int64)
    node = Concatenate((a, b, c, a), 0)
    for nv, mv in [(0, 0), (1, 2), (3, 0), (2, 5)]:
        values = {"a": _data((nv, 2)), "b": _data((3, 2)), "c": _data((mv, 2))}
        check_lowering(node, values, np.concatenate(
            [values["a"], values["b"], values["c"], values["a"]]))
        check_lowering(Stack((a, a), 1), {"a": values["a"]},
                       np.stack([values["a"], values["a"]], 1))

# }}}


# {{{ indexing and gather

BASIC_INDEX_CASES = [
    (lambda x: x[1], (4, 3)),
    (lambda x: x[-1, 1:], (4, 3)),
    (lambda x: x[::-1], (4, 3)),
    (lambda x: x[::-2, 2], (5, 3)),
    (lambda x: x[3:0:-2, ::2], (5, 3)),
    (lambda x: x[2:2], (4, 3)),
    (lambda x: x[:, 1:2], (4, 3)),
    (lambda x: x[1, 2], (4, 3)),
    (lambda x: x[0, ::-1], (1, 0)),
    (lambda x: x[5:1:-1, -2:], (7, 3)),
]


@pytest.mark.parametrize("index, shape", BASIC_INDEX_CASES)
def test_basic_index(index, shape):
    x = ft.make_placeholder("x", shape, np.float64)
    xv = _data(shape, np.float64)
    node = index(x)
    assert isinstance(node, BasicIndex)
    check_lowering(node, {"x": xv}, index(xv))


def test_basic_index_direct_and_symbolic():
    n = ft.make_size_param("n")
    x = ft.make_placeholder("x", (n, 4), np.int64)
    nexpr = prim.Variable("n")
    negative = BasicIndex(x, (NormalizedSlice(0, 1, nexpr), -1))
    symbolic = BasicIndex(x, (NormalizedSlice(sh.sub(nexpr, 1), -1, nexpr),
                              NormalizedSlice(3, -2, 2)))
    tail = x[1:]
    for nv in (1, 2, 5):
        xv = _data((nv, 4))
        check_lowering(negative, {"x": xv}, xv[:, -1])
        check_lowering(symbolic, {"x": xv}, xv[::-1, 3::-2])
        check_lowering(tail, {"x": xv}, xv[1:])


ADVANCED_CASES = [
    (lambda x, i, j: x[i], (5, 3), (4,), (4,)),
    (lambda x, i, j: x[:, i], (5, 3), (2, 2), (1,)),
    (lambda x, i, j: x[i, j], (5, 3), (2, 1), (4,)),
    (lambda x, i, j: x[i, :, j], (5, 2, 3), (4,), (4,)),
    (lambda x, i, j: x[1:, i], (5, 3, 2), (3,), (1,)),
    (lambda x, i, j: x[::-1, i, 1:], (5, 3, 2), (2, 3), (1,)),
    (lambda x, i, j: x[i, 1:, j], (3, 4, 3), (2, 1), (1, 3)),
    (lambda x, i, j: x[i], (3, 0), (0,), (1,)),
    (lambda x, i, j: x[i, 2], (5, 3), (3,), (1,)),
]


@pytest.mark.parametrize("dtype", [np.int64, np.int16, np.uint8])
@pytest.mark.parametrize("index, shape, ishape, jshape", ADVANCED_CASES)
def test_advanced_index(index, shape, ishape, jshape, dtype):
    x = ft.make_placeholder("x", shape, np.int64)
    i = ft.make_placeholder("i", ishape, dtype)
    j = ft.make_placeholder("j", jshape, dtype)
    xv = _data(shape)
    lo = 0 if np.dtype(dtype).kind == "u" else -1
    # entries valid for every axis the cases index (lengths >= 3)
    iv = rng.integers(lo * 3, 3, ishape).astype(dtype)
    jv = rng.integers(lo * 3, 3, jshape).astype(dtype)
    node = index(x, i, j)
    assert isinstance(node, AdvancedIndex)
    uses_j = j in node.index_arrays
    values = {"x": xv, "i": iv, **({"j": jv} if uses_j else {})}
    check_lowering(node, values, index(xv, iv, jv))


def test_advanced_index_symbolic_wraps_negative_entries():
    n = ft.make_size_param("n")
    x = ft.make_placeholder("x", (n, 2), np.float32)
    i = ft.make_placeholder("i", (3,), np.int32)
    node = x[i]
    lowered = to_index_lambda(node)
    casts = [e for e in _expr_nodes(lowered.expr) if isinstance(e, TypeCast)]
    assert casts and all(c.dtype == np.int64 for c in casts)
    for nv in (1, 4):
        xv = _data((nv, 2), np.float32)
        iv = np.array([-1, 0, -nv], np.int32)
        check_lowering(node, {"x": xv, "i": iv}, xv[iv])


@pytest.mark.parametrize("shape, ishape, axis", [
    ((5, 3), (4,), 0), ((5, 3), (2, 2), 1), ((4, 3, 2), (), 1),
    ((4, 3, 2), (3, 1), 2), ((4, 3), (0,), 0),
])
@pytest.mark.parametrize("dtype", [np.int64, np.int32, np.uint16])
def test_gather(shape, ishape, axis, dtype):
    x = ft.make_placeholder("x", shape, np.float64)
    idx = ft.make_placeholder("idx", ishape, dtype)
    xv = _data(shape, np.float64)
    lo = 0 if np.dtype(dtype).kind == "u" else -shape[axis]
    iv = np.asarray(rng.integers(lo, shape[axis], ishape)).astype(dtype)
    node = ft.gather(x, idx, axis)
    assert isinstance(node, Gather)
    check_lowering(node, {"x": xv, "idx": iv}, np.take(xv, iv, axis))

# }}}


# {{{ to_index_lambda corner cases

def test_index_lambda_is_returned_unchanged():
    x = ft.make_placeholder("x", (3,), np.float64)
    y = (x + 1).tagged(ImplStored())
    assert to_index_lambda(y) is y


@pytest.mark.parametrize("make", [
    lambda: ft.make_placeholder("x", (3,), np.float64),
    lambda: ft.make_size_param("n"),
    lambda: ft.map(lambda r: r, ft.make_placeholder("x", (3,), np.float64)),
])
def test_to_index_lambda_rejects_leaves_and_loops(make):
    node = make()
    with pytest.raises(TypeError, match=type(node).__name__):
        to_index_lambda(node)


def test_lowerable_covers_every_high_level_node():
    assert set(LOWERABLE) == {Einsum, Reshape, AxisPermutation, Roll, Stack,
                              Concatenate, BasicIndex, AdvancedIndex, Gather,
                              Scatter}

# }}}


# {{{ lower_to_index_lambdas

def test_lower_dag_and_dict_of_named_arrays():
    x = ft.make_placeholder("x", (4, 6), np.int64)
    i = ft.make_placeholder("i", (3,), np.int64)
    a = ft.roll(x.reshape(6, 4).T, 2, axis=0)[::-1, 1:]
    b = ft.einsum("ij,kj->ik", a, a).tagged(Named("gram"))
    c = ft.concatenate([x[i], ft.stack([x[0], x[1]])])
    result = ft.make_dict_of_named_arrays({"b": b, "c": c})
    lowered = lower_to_index_lambdas(result)
    assert isinstance(lowered, ft.DictOfNamedArrays)
    assert lowered["b"].tags == b.tags
    assert not _node_kinds(lowered) & set(LOWERABLE)
    values = {"x": _data((4, 6)), "i": np.array([0, -1, 2])}
    expected = ft.evaluate_numpy(result, **values)
    actual = ft.evaluate_numpy(lowered, **values)
    for name in expected:
        _assert_same(actual[name], expected[name])
    assert lower_to_index_lambdas(lowered) is lowered
    assert lower_to_index_lambdas(x) is x


def test_lower_enters_loop_bodies():
    xs = ft.make_placeholder("xs", (5, 2, 3), np.float64)
    w = ft.make_placeholder("w", (3, 3), np.float64)
    mapped = ft.map(lambda m: ft.einsum("ij,jk->ik", m, w).T.reshape(6), xs)
    scanned = ft.scan(lambda c, m: c + ft.roll(m, 1, axis=1)[0], xs, ft.zeros(3))
    result = ft.make_dict_of_named_arrays({"m": mapped, "s": scanned})
    lowered = lower_to_index_lambdas(result)
    kinds = _node_kinds(lowered)
    assert Map in kinds and Scan in kinds
    assert not kinds & set(LOWERABLE)
    values = {"xs": _data((5, 2, 3), np.float64), "w": _data((3, 3), np.float64)}
    expected = ft.evaluate_numpy(result, **values)
    actual = ft.evaluate_numpy(lowered, **values)
    for name in expected:
        _assert_same(actual[name], expected[name], exact=False)


def test_lower_rejects_non_nodes():
    with pytest.raises(TypeError, match="ndarray"):
        lower_to_index_lambdas(np.zeros(3))
    with pytest.raises(TypeError, match="list"):
        batch_maps([1])

# }}}


# {{{ random DAGs

_KINDS = ["einsum", "roll", "reshape", "transpose", "slice", "concatenate",
          "stack", "take", "broadcast", "sum", "add", "mul_scalar"]


def _apply_random_op(r, pool):
    """One random op (choices from the numpy generator *r*) on arrays of
    *pool* (int64, concrete shapes)."""
    a = pool[r.integers(len(pool))]
    kind = _KINDS[r.integers(len(_KINDS))]
    shape = a.shape
    if kind == "add":
        b = pool[r.integers(len(pool))]
        try:
            np.broadcast_shapes(a.shape, b.shape)
        except ValueError:
            return a + 1
        return a + b
    if kind == "mul_scalar":
        return a * int(r.integers(-3, 4))
    if kind == "broadcast":
        return ft.broadcast_to(a, (int(r.integers(0, 4)),) + shape)
    if kind == "reshape":
        size = int(np.prod(shape))
        divisors = [d for d in range(1, size + 1) if size % d == 0]
        if divisors:
            d = divisors[r.integers(len(divisors))]
            new = (d, size // d)
        else:
            new = (0, int(r.integers(0, 3)))
        if r.random() < 0.3:
            new = (1,) + new
        return ft.reshape(a, new, order="CF"[r.integers(2)])
    if not shape:
        return a - 2
    axis = int(r.integers(a.ndim))
    if kind == "transpose":
        return ft.transpose(a, tuple(r.permutation(a.ndim).tolist()))
    if kind == "roll":
        return ft.roll(a, int(r.integers(-7, 8)), axis=axis)
    if kind == "slice":
        def bound():
            return None if r.random() < 0.3 else int(r.integers(-4, 5))
        step = [None, 1, 2, -1, -2, 3][r.integers(6)]
        index = [slice(None)] * a.ndim
        index[axis] = slice(bound(), bound(), step)
        return a[tuple(index)]
    if kind == "concatenate":
        tail = a[tuple([slice(None)] * axis + [slice(1, None)])]
        return ft.concatenate([a, tail, a], axis=axis)
    if kind == "stack":
        return ft.stack([a, -a], axis=int(r.integers(a.ndim + 1)))
    if kind == "einsum":
        letters = "abcdefgh"[:a.ndim]
        out = "".join(c for c in letters if r.random() < 0.5)
        if r.random() < 0.5:
            out = out[::-1]
        return ft.einsum(f"{letters},{letters}->{out}", a, a)
    if kind == "sum":
        return ft.sum(a, axis=axis)
    length = shape[axis]
    if length == 0:
        return a
    idx = r.integers(-length, length, int(r.integers(0, 4)))
    return a[tuple([slice(None)] * axis + [idx])]


@settings(max_examples=50, derandomize=True, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 2), st.integers(2, 7))
def test_random_dag_lowering(seed, n_inputs, n_ops):
    r = np.random.default_rng(seed)
    inputs = [ft.make_placeholder(f"x{k}", tuple(r.integers(0, 4, r.integers(1, 4))),
                                  np.int64)
              for k in range(n_inputs)]
    pool = list(inputs)
    for _ in range(n_ops):
        result = _apply_random_op(r, pool)
        if result.size <= 200:
            pool.append(result)
    # every intermediate is a result, so each node kind built is checked
    result = ft.make_dict_of_named_arrays(
        {f"r{k}": a for k, a in enumerate(pool[len(inputs):] or inputs)})
    lowered = lower_to_index_lambdas(result)
    assert not _node_kinds(lowered) & set(LOWERABLE)
    assert get_inputs(lowered) == get_inputs(result)
    used = {p.name for p in get_inputs(result) if isinstance(p, ft.Placeholder)}
    values = {p.name: r.integers(-5, 6, p.shape) for p in inputs if p.name in used}
    expected = ft.evaluate_numpy(result, **values)
    actual = ft.evaluate_numpy(lowered, **values)
    for name in expected:
        _assert_same(actual[name], expected[name])

# }}}


# {{{ batch_maps

def _check_batched(result, values, reference=None):
    batched = batch_maps(result)
    kinds = _node_kinds(batched)
    assert Map not in kinds
    assert get_inputs(batched) == get_inputs(result)
    expected = ft.evaluate_numpy(result, **values)
    actual = ft.evaluate_numpy(batched, **values)
    if isinstance(expected, dict):
        for name in expected:
            _assert_same(actual[name], expected[name], exact=False)
            if reference is not None:
                _assert_same(actual[name], reference[name], exact=False)
    else:
        _assert_same(actual, expected, exact=False)
        if reference is not None:
            _assert_same(actual, reference, exact=False)
    return batched


def test_batch_map_with_closure_and_tuple_result():
    x = ft.make_placeholder("x", (5, 3), np.float64)
    w = ft.make_placeholder("w", (4, 3), np.float64)
    y, s, ww = ft.map(lambda r: (w @ r, ft.sum(r * r), w), x)
    result = ft.make_dict_of_named_arrays({"y": y, "s": s, "w": ww})
    xv, wv = _data((5, 3), np.float64), _data((4, 3), np.float64)
    _check_batched(result, {"x": xv, "w": wv},
                   {"y": xv @ wv.T, "s": (xv * xv).sum(1),
                    "w": np.broadcast_to(wv, (5, 4, 3))})


def test_batch_map_keeps_result_tags_and_hoists_invariants():
    x = ft.make_placeholder("x", (4, 3), np.int64)
    w = ft.make_placeholder("w", (3,), np.int64)
    y = ft.map(lambda r: r * ft.sum(w) + r[::-1], x)
    y = y.tagged(Named("y")).with_tagged_axis(1, AxisMark("hidden"))
    ident = ft.map(lambda r: r, x).tagged(ImplStored())
    result = ft.make_dict_of_named_arrays({"y": y, "i": ident})
    xv, wv = _data((4, 3)), _data((3,))
    batched = _check_batched(result, {"x": xv, "w": wv},
                             {"y": xv * wv.sum() + xv[:, ::-1], "i": xv})
    assert Named("y") in batched["y"].tags
    assert AxisMark("hidden") in batched["y"].axes[1].tags
    assert ImplStored() in batched["i"].tags
    # sum(w) does not depend on the mapped row: it stays without a map axis
    sums = [n for n in _all_nodes(batched["y"]) if isinstance(n, IndexLambda)
            and n.shape == () and w in n.bindings.values()]
    assert sums


def _all_nodes(expr):
    found = []

    class Walk(CachedWalkMapper):
        def visit(self, e):
            found.append(e)
            return True

    Walk()(expr)
    return found


def test_batch_nested_map_and_reduction():
    x = ft.make_placeholder("x", (3, 4, 2), np.float64)
    y = ft.map(lambda mat: ft.map(lambda row: row * ft.sum(mat) + ft.amax(row),
                                  mat), x)
    xv = _data((3, 4, 2), np.float64)
    _check_batched(y, {"x": xv}, xv * xv.sum(axis=(1, 2))[:, None, None]
                   + xv.max(axis=2)[:, :, None])


def test_batch_map_over_several_inputs_with_einsum_and_gather():
    x = ft.make_placeholder("x", (4, 2, 3), np.float64)
    i = ft.make_placeholder("i", (4, 2), np.int64)
    table = ft.make_placeholder("table", (5, 3), np.float64)

    def f(m, idx):
        return ft.einsum("ij,kj->ik", m, ft.gather(table, idx)).reshape(4)

    y = ft.map(f, x, i)
    values = {"x": _data((4, 2, 3), np.float64), "i": rng.integers(-5, 5, (4, 2)),
              "table": _data((5, 3), np.float64)}
    ref = np.einsum("bij,bkj->bik", values["x"], values["table"][values["i"]])
    _check_batched(y, values, ref.reshape(4, 4))


def test_batch_map_inside_scan_body():
    xs = ft.make_placeholder("xs", (5, 3), np.float64)

    def step(c, row):
        return c + ft.map(lambda e: e * 2.0 + ft.sum(c), row)

    hs = ft.scan(step, xs, ft.zeros(3))
    xv = _data((5, 3), np.float64)
    ref, c = [], np.zeros(3)
    for row in xv:
        c = c + row * 2.0 + c.sum()
        ref.append(c)
    batched = _check_batched(hs, {"xs": xv}, np.array(ref))
    assert Scan in _node_kinds(batched)


@pytest.mark.parametrize("keep_all", [True, False])
def test_batch_scan_inside_map_body(keep_all):
    x = ft.make_placeholder("x", (4, 2, 3), np.float64)
    w = ft.make_placeholder("w", (3, 3), np.float64)
    loop = ft.scan if keep_all else ft.fold

    def per_sequence(seq):
        return loop(lambda h, v: ft.tanh(h @ w + v), seq, ft.zeros(3))

    y = ft.map(per_sequence, x)
    xv, wv = _data((4, 2, 3), np.float64), _data((3, 3), np.float64)
    hs = []
    h = np.zeros((4, 3))
    for t in range(2):
        h = np.tanh(h @ wv + xv[:, t])
        hs.append(h)
    ref = np.stack(hs, axis=1) if keep_all else h
    batched = _check_batched(y, {"x": xv, "w": wv}, ref)
    scans = [n for n in _all_nodes(batched) if isinstance(n, LoopResult)]
    assert scans and all(isinstance(s.loop, Scan) for s in scans)


def test_batch_scan_in_map_with_tuple_carry_and_batched_capture():
    x = ft.make_placeholder("x", (3, 2), np.float64)
    seqs = ft.make_placeholder("seqs", (4, 2), np.float64)

    def f(r):
        return ft.scan(lambda c, v: (c[0] * 0.5 + v * r, c[1] + 1.0), seqs,
                       (r, ft.ones(2)))

    a, b = ft.map(f, x)
    xv, sv = _data((3, 2), np.float64), _data((4, 2), np.float64)
    ra, rb = [], []
    c0, c1 = xv, np.ones((3, 2))
    for v in sv:
        c0, c1 = c0 * 0.5 + v * xv, c1 + 1.0
        ra.append(c0)
        rb.append(c1)
    _check_batched(ft.make_dict_of_named_arrays({"a": a, "b": b}),
                   {"x": xv, "seqs": sv},
                   {"a": np.stack(ra, 1), "b": np.stack(rb, 1)})


def test_batch_symbolic_and_zero_length():
    n = ft.make_size_param("n")
    x = ft.make_placeholder("x", (n, 2), np.float32)
    e = ft.make_placeholder("e", (0, 2), np.float32)
    y = ft.map(lambda r: (r * 2 + 1, ft.scan(lambda c, v: c + v * r, e, r)), x)
    result = ft.make_dict_of_named_arrays({"y": y[0], "s": y[1]})
    for nv in (0, 1, 3):
        xv = _data((nv, 2), np.float32)
        ev = np.zeros((0, 2), np.float32)
        out = _check_batched(result, {"x": xv, "e": ev},
                             {"y": xv * 2 + 1, "s": np.zeros((nv, 0, 2), np.float32)})
        assert out["s"].shape == (prim.Variable("n"), 0, 2)


def test_batch_zero_length_map_with_reduction():
    x = ft.make_placeholder("x", (0, 3, 2), np.int64)
    y = ft.map(lambda m: ft.einsum("ij,ij->i", m, m) + ft.sum(m, axis=0)[0], x)
    _check_batched(y, {"x": np.zeros((0, 3, 2), np.int64)},
                   np.zeros((0, 3), np.int64))

# }}}


def test_batch_keeps_inputs_that_only_give_the_length():
    x = ft.make_placeholder("x", (3, 2), np.float64)
    y = ft.make_placeholder("y", (3, 4), np.float64)
    w = ft.make_placeholder("w", (2,), np.float64)
    result = ft.map(lambda a, b: w, x, y)
    wv = _data((2,), np.float64)
    values = {"x": _data((3, 2), np.float64), "y": _data((3, 4), np.float64),
              "w": wv}
    _check_batched(result, values, np.broadcast_to(wv, (3, 2)))


def test_batch_deeply_nested_map_scan_map():
    x = ft.make_placeholder("x", (2, 3, 4, 2), np.float64)

    def outer(block):
        def inner(seq):
            def step(c, v):
                return c * 0.5 + ft.map(lambda e: e * ft.sum(c), v)
            return ft.scan(step, seq, ft.ones(2))
        return ft.map(inner, block)

    y = ft.map(outer, x)
    xv = _data((2, 3, 4, 2), np.float64)
    c = np.ones((2, 3, 2))
    hist = []
    for t in range(4):
        c = c * 0.5 + xv[:, :, t] * c.sum(axis=-1, keepdims=True)
        hist.append(c)
    _check_batched(y, {"x": xv}, np.stack(hist, axis=2))
