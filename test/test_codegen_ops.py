# SPDX-License-Identifier: MIT
"""Every op through the OpenCL target, against the reference evaluator and
numpy.

Building an OpenCL program costs far more than running it, so the ops are
batched: each *group* below is one :func:`ft.make_dict_of_named_arrays`
of a few dozen results over shared placeholders, compiled once. A group is
a function ``group(xp, a)`` of an array namespace and a dict of inputs;
called with ``(ft, placeholders)`` it builds the lazy results, called with
``(numpy, arrays)`` it computes numpy's. Each result is then checked three
ways: compiled == ``ft.evaluate_numpy`` == numpy (values and dtypes).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import ftlazy as ft

# {{{ comparison


def assert_same(actual: Any, expected: Any, what: str) -> None:
    """*actual* equals *expected* in dtype, shape and value: exactly for
    integers and bools; for floats to rtol 1e-12 (float64) or 1e-5
    (float32), with an absolute slack of a few ulps of 1 for sums that
    cancel (OpenCL may add in another order than numpy). NaNs are equal."""
    actual, expected = np.asarray(actual), np.asarray(expected)
    assert actual.dtype == expected.dtype, (
        f"{what}: dtype {actual.dtype}, expected {expected.dtype}")
    assert actual.shape == expected.shape, (
        f"{what}: shape {actual.shape}, expected {expected.shape}")
    if expected.dtype.kind in "fc":
        single = expected.dtype in (np.float32, np.complex64)
        rtol, atol = (1e-5, 1e-6) if single else (1e-12, 1e-14)
        np.testing.assert_allclose(actual, expected, rtol=rtol, atol=atol,
                                   equal_nan=True, err_msg=what)
    else:
        np.testing.assert_array_equal(actual, expected, err_msg=what)

# }}}


# {{{ groups: one compiled program each

def _rng(seed: int) -> np.random.Generator:
    return np.random.default_rng(seed)


S = (3, 4)


def _float_inputs() -> dict[str, np.ndarray]:
    rng = _rng(0)
    x = rng.normal(size=S) * 3
    y = rng.normal(size=S) * 3
    x[1, 1] = np.nan
    y[2, 2] = np.nan
    y[0, 0] = 0.0
    x[0, 3] = y[0, 3]  # an equal pair for the comparisons
    return {
        "x": x, "y": y,
        "p": rng.uniform(0.1, 4.0, S), "u": rng.uniform(-0.9, 0.9, S),
        "xf": (rng.normal(size=S) * 3).astype(np.float32),
        "yf": (rng.normal(size=S) * 3).astype(np.float32),
        "pf": rng.uniform(0.1, 4.0, S).astype(np.float32),
        "b": rng.random(S) < 0.5,
    }


def group_float(xp: Any, a: dict[str, Any]) -> dict[str, Any]:
    """Float64 and float32 arithmetic, comparisons, selection, casts."""
    x, y, p, u, xf, yf, pf, b = (
        a[k] for k in ("x", "y", "p", "u", "xf", "yf", "pf", "b"))
    return {
        "add": x + y, "sub": x - y, "mul": x * y, "div": x / y,
        "add_f32": xf + yf, "div_f32": xf / yf, "mul_f32_f64": xf * y,
        "weak_f32": xf * 2.5 + 1, "weak_f64": 1.5 - x / 4,
        "neg": -x, "pos": +xf, "abs": abs(x), "abs_f32": xp.absolute(xf),
        "sign": xp.sign(x), "square": xp.square(xf), "recip": xp.reciprocal(p),
        "pow": p ** y, "pow_f32": pf ** yf, "pow_half": p ** 0.5,
        "max_nan": xp.maximum(x, y), "min_nan": xp.minimum(x, y),
        "max_f32": xp.maximum(xf, 0.5), "min_weak": xp.minimum(x, 1),
        "eq": xp.equal(x, y), "ne": xp.not_equal(x, y), "lt": xp.less(x, y),
        "le": xp.less_equal(xf, yf), "gt": xp.greater(x, 0.5),
        "ge": xp.greater_equal(x, y),
        "land": xp.logical_and(x, y), "lor": xp.logical_or(xf, yf),
        "lxor": xp.logical_xor(x, y), "lnot": xp.logical_not(x),
        "isnan": xp.isnan(x), "floor": xp.floor(x), "ceil": xp.ceil(xf),
        "where": xp.where(b, x, y), "where_f32": xp.where(b, xf, 2.0),
        "where_cmp": xp.where(x > y, x - y, y * 2),
        "clip": xp.clip(x, -1, 1), "astype_i32": (u * 10).astype(np.int32),
        "astype_bool": x.astype(np.bool_), "astype_f32": x.astype(np.float32),
        "cmp_of_cmp": xp.equal(x > 0, y > 0), "xor_of_cmp": (x > 0) ^ (y < 0),
    }


def _math_inputs() -> dict[str, np.ndarray]:
    rng = _rng(1)
    return {"x": rng.uniform(-3, 3, S), "p": rng.uniform(0.1, 4.0, S),
            "u": rng.uniform(-0.9, 0.9, S),
            "xf": rng.uniform(-3, 3, S).astype(np.float32),
            "pf": rng.uniform(0.1, 4.0, S).astype(np.float32),
            "uf": rng.uniform(-0.9, 0.9, S).astype(np.float32),
            "i": rng.integers(1, 9, S).astype(np.int32)}


def group_math(xp: Any, a: dict[str, Any]) -> dict[str, Any]:
    """Transcendental functions in float64 and float32 (and on ints,
    which numpy computes in float64)."""
    x, p, u, xf, pf, uf, i = (a[k] for k in ("x", "p", "u", "xf", "pf", "uf", "i"))
    out = {}
    for fn in ("exp", "sin", "cos", "tan", "arctan", "sinh", "cosh", "tanh"):
        out[fn] = getattr(xp, fn)(x)
        out[fn + "_f32"] = getattr(xp, fn)(xf)
    for fn in ("log", "log10", "sqrt"):
        out[fn] = getattr(xp, fn)(p)
        out[fn + "_f32"] = getattr(xp, fn)(pf)
    for fn in ("arcsin", "arccos"):
        out[fn] = getattr(xp, fn)(u)
        out[fn + "_f32"] = getattr(xp, fn)(uf)
    out["arctan2"] = xp.arctan2(x, u)
    out["arctan2_f32"] = xp.arctan2(xf, uf)
    out["sqrt_int"] = xp.sqrt(i)
    out["exp_int"] = xp.exp(i)
    return out


def _int_inputs() -> dict[str, np.ndarray]:
    rng = _rng(2)
    num = np.array([[-7, 7, -7, 7], [0, 5, -5, 3], [1, -1, 100, -100]])
    den = np.array([[2, 2, -2, -2], [3, 0, 0, -3], [0, 1, -7, 7]])
    return {"i": num.astype(np.int32), "j": den.astype(np.int32),
            "k": num.astype(np.int64), "m": den.astype(np.int64),
            "nz": np.array([[1, -1, 2, -3]] * 3, np.int32),
            "e": rng.integers(0, 4, S).astype(np.int32),
            "b": rng.random(S) < 0.5, "c": rng.random(S) < 0.5,
            "u8": rng.integers(0, 255, S).astype(np.uint8),
            **_int_edges()}


def _int_edges() -> dict[str, np.ndarray]:
    """Operands at the ends of each integer range, where a floor division
    computed naively in the operands' type overflows."""
    out = {}
    for name, dtype in (("8", np.int8), ("32", np.int32), ("64", np.int64)):
        lo, hi = int(np.iinfo(dtype).min), int(np.iinfo(dtype).max)
        out["n" + name] = np.array([[lo, lo, hi, lo + 1], [lo, -125, 127, 0],
                                    [hi, -1, lo, 100]]).astype(dtype)
        out["d" + name] = np.array([[-1, 2, -3, 2], [3, 5, -3, -7],
                                    [-1, lo, lo, -50]]).astype(dtype)
    return out


def group_int_bool(xp: Any, a: dict[str, Any]) -> dict[str, Any]:
    """Integer and bool arithmetic, including numpy's floor division and
    modulo with negative operands and zero divisors (which give 0)."""
    i, j, k, m, nz, e, b, c, u8 = (
        a[n] for n in ("i", "j", "k", "m", "nz", "e", "b", "c", "u8"))
    edges = {f"{op}_edges_int{w}": fn(a["n" + w], a["d" + w])
             for w in ("8", "32", "64")
             for op, fn in (("floordiv", xp.floor_divide), ("mod", xp.remainder))}
    return {
        **edges,
        "add": i + j, "sub": i - j, "mul": k * m, "add_i32_i64": i + m,
        "floordiv": i // j, "mod": i % j, "floordiv_i64": k // m,
        "mod_i64": xp.remainder(k, m), "floordiv_weak": i // -3, "mod_weak": k % 4,
        "truediv": i / j, "truediv_mixed": i / 2,
        "pow": i ** 2, "pow_i64": k ** 3, "pow_array": xp.power(nz, e),
        "neg": -i, "abs": abs(k), "sign": xp.sign(i), "square": xp.square(i),
        "recip": xp.reciprocal(nz), "max": xp.maximum(i, j), "min": xp.minimum(k, m),
        "bit_and": i & j, "bit_or": k | m, "bit_xor": i ^ j, "invert": ~i,
        "eq": xp.equal(i, j), "lt": i < m, "ge_weak": i >= 5,
        "lt_huge": i < 3_000_000_000, "eq_huge": xp.equal(i, -(2 ** 40)),
        "weak": i * 3 - 1, "float_weak": i * 2.5, "i32_f32": i + xp.ones(S, np.float32),
        "where": xp.where(i > 0, i, 7), "clip": xp.clip(i, -3, 3),
        "u8_add": u8 + 1, "u8_max": xp.maximum(u8, 100),
        "b_add": b + c, "b_mul": b * c, "b_and": b & c, "b_or": b | c,
        "b_xor": b ^ c, "b_not": ~b, "b_max": xp.maximum(b, c),
        "b_min": xp.minimum(b, c),
        "b_eq": xp.equal(b, c), "b_lt": b < c, "b_plus_int": b + 1,
        "b_times_float": b * 0.5, "b_square": xp.square(b), "b_lnot": xp.logical_not(b),
        "b_astype": b.astype(np.int64), "i_astype_b": i.astype(np.bool_),
        "i_astype_f32": k.astype(np.float32),
    }


def _builtin_inputs() -> dict[str, np.ndarray]:
    num = np.array([[7, -7, 7, -7, 0, -0.0, 3, -3],
                    [0.5, -0.5, np.inf, -np.inf, np.nan, 1, 6, -6]])
    den = np.array([[2, 2, -2, -2, 3, 3, 0, 0],
                    [2, 2, 1, 1, 1, np.inf, -3, 3]])
    return {"x": num, "y": den, "xf": num.astype(np.float32),
            "yf": den.astype(np.float32)}


def group_builtins(xp: Any, a: dict[str, Any]) -> dict[str, Any]:
    """Ops whose OpenCL translation calls builtins that loopy must be told
    about (``fmod``, ``copysign``, ``exp2``, ``log2``, ``isinf``)."""
    x, y, xf, yf = a["x"], a["y"], a["xf"], a["yf"]
    return {
        "floordiv": x // y, "mod": x % y, "floordiv_f32": xf // yf,
        "mod_f32": xp.remainder(xf, yf), "floordiv_weak": x // 0.75,
        "exp2": xp.exp2(x), "exp2_f32": xp.exp2(xf),
        "log2": xp.log2(abs(x)), "log2_f32": xp.log2(abs(xf)),
        "isinf": xp.isinf(x), "isinf_f32": xp.isinf(xf), "isfinite": xp.isfinite(x),
    }


def _reduction_inputs() -> dict[str, np.ndarray]:
    rng = _rng(3)
    xn = np.arange(12.0).reshape(3, 4)
    xn[1, 2] = np.nan
    return {"x": rng.normal(size=(3, 4, 5)), "xn": xn,
            "i": rng.integers(-3, 4, (3, 4, 5)).astype(np.int32),
            "b": rng.random((3, 4, 5)) < 0.7,
            "f": rng.normal(size=(3, 4, 5)).astype(np.float32),
            "i8": rng.integers(-100, 100, (3, 4)).astype(np.int8)}


def group_reductions(xp: Any, a: dict[str, Any]) -> dict[str, Any]:
    """All reductions with axis None, int, tuple and keepdims on float,
    int and bool arrays; max and min propagate NaN."""
    x, xn, i, b, f, i8 = (a[k] for k in ("x", "xn", "i", "b", "f", "i8"))
    return {
        "sum": xp.sum(x), "sum_ax1": xp.sum(x, axis=1),
        "sum_i_tuple": xp.sum(i, axis=(0, 2)),
        "sum_b": xp.sum(b), "sum_f32_keep": xp.sum(f, axis=-1, keepdims=True),
        "sum_empty_axes": xp.sum(x, axis=()),
        "prod_ax0": xp.prod(x, axis=0), "prod_i": xp.prod(i, axis=2),
        "prod_b": xp.prod(b, axis=1),
        "amax": xp.amax(x), "amax_tuple": xp.amax(x, axis=(0, 1)),
        "max_i_keep": xp.max(i, axis=2, keepdims=True), "max_b": xp.max(b, axis=0),
        "max_i8": xp.max(i8, axis=1), "max_nan": xp.amax(xn, axis=1),
        "max_nan_all": xp.max(xn),
        "max_f32": xp.amax(f),
        "amin": xp.amin(x, axis=-1), "min_i": xp.min(i),
        "min_b_keep": xp.amin(b, axis=2, keepdims=True),
        "min_i8": xp.min(i8), "min_nan": xp.amin(xn, axis=0),
        "any_f": xp.any(x > 1, axis=1), "any_i": xp.any(i),
        "all_b": xp.all(b, axis=(0, 2), keepdims=True),
        "all_b_none": xp.all(b), "any_float": xp.any(x, axis=0),
        "all_i": xp.all(i, axis=1),
        "mean": xp.mean(x, axis=1), "mean_i": xp.mean(i),
        "mean_f32": xp.mean(f, axis=(0, 1)),
        "sum_of_expr": xp.sum(x * x + 1, axis=(1, 2)),
    }


def _linalg_inputs() -> dict[str, np.ndarray]:
    rng = _rng(4)
    return {"A": rng.normal(size=(3, 4)), "B": rng.normal(size=(4, 5)),
            "T": rng.normal(size=(2, 3, 4)), "U": rng.normal(size=(2, 4, 5)),
            "v": rng.normal(size=4), "w": rng.normal(size=4),
            "Q": rng.normal(size=(4, 4)),
            "M": rng.integers(-9, 9, (3, 4)).astype(np.int32),
            "J": rng.integers(-9, 9, (4, 5)),
            "F": rng.normal(size=(3, 4)).astype(np.float32)}


def group_linalg(xp: Any, a: dict[str, Any]) -> dict[str, Any]:
    """einsum specs, matmul, dot and vdot."""
    A, B, T, U, v, w, Q, M, J, F = (
        a[k] for k in ("A", "B", "T", "U", "v", "w", "Q", "M", "J", "F"))
    return {
        "matmul": A @ B, "batched": T @ U, "mat_vec": A @ v, "vec_mat": v @ B,
        "broadcast_batch": T @ B, "matmul_int": M @ J,
        "matmul_f32": F @ B.astype(np.float32),
        "matmul_mixed": M @ B, "dot_vv": xp.dot(v, w), "dot_mm": xp.dot(A, B),
        "dot_scalar": xp.dot(A, 2.0), "vdot": xp.vdot(v, w), "vdot_2d": xp.vdot(Q, Q),
        "trace": xp.einsum("ii->", Q), "diagonal": xp.einsum("ii->i", Q),
        "outer": xp.einsum("i,j->ij", v, w),
        "three": xp.einsum("ij,jk,k->i", A, B, B[0]),
        "batched_ein": xp.einsum("bij,bjk->bik", T, U),
        "transpose_ein": xp.einsum("ij->ji", A),
        "total": xp.einsum("ij->", A), "implicit": xp.einsum("ij,jk", A, B),
        "bilinear": xp.einsum("i,ij,j->", A[:, 0], A, v),
    }


def _shape_inputs() -> dict[str, np.ndarray]:
    rng = _rng(5)
    return {"A": rng.normal(size=(3, 4)), "T": rng.normal(size=(2, 3, 4)),
            "v": rng.normal(size=4), "M": rng.integers(-9, 9, (3, 4)).astype(np.int32),
            "b": rng.random((3, 4)) < 0.5}


def group_shape(xp: Any, a: dict[str, Any]) -> dict[str, Any]:
    """Reshape (C and F), transposes, roll, stack, concatenate and friends."""
    A, T, v, M, b = (a[k] for k in ("A", "T", "v", "M", "b"))
    return {
        "reshape": xp.reshape(T, (6, 4)), "reshape_f": xp.reshape(T, (4, 6), order="F"),
        "reshape_m1": T.reshape(-1),
        "reshape_f_3d": xp.reshape(A, (2, 2, 3), order="F"),
        "ravel": xp.ravel(A), "transpose": xp.transpose(T, (2, 0, 1)), "T": A.T,
        "transpose_default": xp.transpose(T), "swapaxes": xp.swapaxes(T, 0, 2),
        "moveaxis": xp.moveaxis(T, 0, -1), "roll": xp.roll(A, 2, axis=1),
        "roll_flat": xp.roll(T, -5), "roll_multi": xp.roll(T, (1, -2), axis=(0, 2)),
        "stack": xp.stack([A, A * 2, A + 1], axis=1), "stack_mixed": xp.stack([A, M]),
        "stack_bool": xp.stack([b, ~b], axis=-1),
        "concat": xp.concatenate([A, xp.ones((2, 4))], axis=0),
        "concat_mixed": xp.concatenate([A, M], axis=1),
        "concat_none": xp.concatenate([A, T], axis=None),
        "expand": xp.expand_dims(v, 0), "expand_tuple": xp.expand_dims(A, (0, 2)),
        "squeeze": xp.squeeze(xp.reshape(v, (1, 4, 1))),
        "broadcast_to": xp.broadcast_to(v, (3, 4)),
        "reshape_then_op": xp.reshape(A, (4, 3)).T * A,
    }


def _index_inputs() -> dict[str, np.ndarray]:
    rng = _rng(6)
    return {"A": rng.normal(size=(5, 6)),
            "T": rng.integers(-9, 9, (6, 4, 5)).astype(np.int32),
            "v": rng.normal(size=6), "idx": np.array([0, -1, 3, -5]),
            "idx2": np.array([[1, -2, 0], [4, 4, -6]], np.int32)}


def group_indexing(xp: Any, a: dict[str, Any]) -> dict[str, Any]:
    """Basic indexing (negative steps included) and advanced indexing."""
    A, T, v, idx, idx2 = (a[k] for k in ("A", "T", "v", "idx", "idx2"))
    return {
        "slice": A[1:4, ::2], "neg_step": A[::-1, 4:0:-2], "neg_step_3": v[::-3],
        "int": A[2], "neg_int": A[-1, -2], "none": A[None, :, 1], "ellipsis": T[..., 1],
        "mixed": T[1:, None, ::-2, 3], "step3": v[::3],
        "full_reverse": T[::-1, ::-1, ::-1],
        "adv": A[idx], "adv_pair": A[idx, idx], "adv_cols": A[:, idx],
        "adv_2d": T[idx2],
        "adv_const": A[[0, -1, 2]], "adv_neg_2d": v[idx2],
        "adv_after_int": T[1, :, idx],
        "adv_separated": T[idx[:2], :, idx[:2]],
        "adv_broadcast": A[idx2[:, :1], idx2[:1, :]],
        "adv_computed": v[(idx2 + 6) % 6], "take": xp.take(v, idx),
        "take_axis": xp.take(A, idx, axis=1),
        "adv_then_slice": A[idx][:, 1:3],
    }


def group_creation(xp: Any, a: dict[str, Any]) -> dict[str, Any]:
    """Creation functions, alone and combined with an input."""
    A = a["A"]
    return {
        "zeros": xp.zeros((2, 3)), "ones_i32": xp.ones((3,), dtype=np.int32),
        "full": xp.full((2, 2), 7.5), "full_bool": xp.full((2,), True),
        "full_int": xp.full((3,), -4), "arange": xp.arange(5),
        "arange_float": xp.arange(0.5, 3.0, 0.5),
        "arange_neg": xp.arange(10, 0, -3),
        "arange_f32": xp.arange(4, dtype=np.float32),
        "eye": xp.eye(3), "eye_k": xp.eye(3, 4, k=1, dtype=np.int32),
        "eye_neg_k": xp.eye(4, 3, k=-2),
        "zeros_like": xp.zeros_like(A), "ones_like_i": xp.ones_like(A, dtype=np.int64),
        "full_like": xp.full_like(A, 2.0), "linspace": xp.linspace(0, 1, 5),
        "with_input": A + xp.arange(6) * xp.eye(5, 6),
    }


def _creation_inputs() -> dict[str, np.ndarray]:
    return {"A": _rng(7).normal(size=(5, 6))}

# }}}


def _placeholders(inputs: dict[str, np.ndarray]) -> dict[str, ft.Array]:
    return {name: ft.make_placeholder(name, value.shape, value.dtype)
            for name, value in inputs.items()}


Group = tuple[Callable[[Any, dict[str, Any]], dict[str, Any]],
              Callable[[], dict[str, np.ndarray]]]

#: name -> (group function, inputs)
GROUPS: dict[str, Group] = {
    "float": (group_float, _float_inputs),
    "math": (group_math, _math_inputs),
    "int_bool": (group_int_bool, _int_inputs),
    "builtins": (group_builtins, _builtin_inputs),
    "reductions": (group_reductions, _reduction_inputs),
    "linalg": (group_linalg, _linalg_inputs),
    "shape": (group_shape, _shape_inputs),
    "indexing": (group_indexing, _index_inputs),
    "creation": (group_creation, _creation_inputs),
}

LAZY = {name: group(ft, _placeholders(inputs()))
        for name, (group, inputs) in GROUPS.items()}


def _case_params() -> list[Any]:
    return [pytest.param(group, name, id=f"{group}-{name}")
            for group, cases in LAZY.items() for name in cases]


@pytest.fixture(scope="module")
def group_results() -> Callable[[str], tuple[dict, dict, dict]]:
    """``get(group) -> (compiled, reference, numpy)`` results, each group
    compiled once (a failure to compile is remembered, not retried)."""
    cache: dict[str, Any] = {}

    def get(group: str) -> tuple[dict, dict, dict]:
        if group not in cache:
            fn, make_inputs = GROUPS[group]
            inputs = make_inputs()
            dag = ft.make_dict_of_named_arrays(LAZY[group])
            try:
                compiled = ft.compile(dag)(**inputs)
            except Exception as e:  # noqa: BLE001 - re-raised by every case
                cache[group] = e
            else:
                with np.errstate(all="ignore"), warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    reference = ft.evaluate_numpy(dag, **inputs)
                    direct = fn(np, inputs)
                cache[group] = (compiled, reference, direct)
        result = cache[group]
        if isinstance(result, Exception):
            raise result
        return result
    return get


@pytest.mark.parametrize(("group", "name"), _case_params())
def test_op(group_results, group: str, name: str) -> None:
    compiled, reference, direct = group_results(group)
    assert_same(reference[name], direct[name], f"{name}: evaluate_numpy vs numpy")
    assert_same(compiled[name], reference[name], f"{name}: OpenCL vs evaluate_numpy")


# {{{ symbolic shapes, scalars, data wrappers: reference and hand-written numpy

n = ft.make_size_param("n")
m = ft.make_size_param("m")
SX = ft.make_placeholder("X", (n, 3), np.float64)
SY = ft.make_placeholder("Y", (n, m), np.float64)
SZ = ft.make_placeholder("Z", (2 * n + 1,), np.float64)
S0 = ft.make_placeholder("s0", (), np.float64)
COL = ft.make_placeholder("col", (3, 1), np.float64)
ROW = ft.make_placeholder("row", (1, 4), np.float64)
WRAPPED = np.arange(3.0) - 1
WRAPPED_INT = np.array([[2], [-1], [5]], np.int16)

SYMBOLIC = {
    "times_n": SX * n, "n_plus": n + SX, "n_value": n * 1, "n_float": n / 2,
    "sum_axis0": ft.sum(SX, axis=0), "sum_all": ft.sum(SY),
    "sum_axis1": ft.sum(SY, axis=1),
    "mean_axis0": ft.mean(SX, axis=0),
    "odd": SZ[1::2] + SX[:, 0], "reverse": SZ[::-1], "matmul": SY.T @ SX,
    "stack": ft.stack([SX, SX]), "concat": ft.concatenate([SX, SX * 2]),
    "arange_n": ft.arange(n), "zeros_n": ft.zeros((n, 2)),
    "outer": COL + ROW, "col_scalar": COL * S0, "scalar_out": S0 * 2, "scalar_in": S0,
    "scalar_weak": S0 + 1, "scalar_reduction": ft.sum(S0 * COL),
    "length1_reduction": ft.sum(ROW, axis=0),
    "length1_bcast": SX + ROW[:, :3], "wrapper": SX * ft.make_data_wrapper(WRAPPED),
    "wrapper_int": ft.make_data_wrapper(WRAPPED_INT) * COL,
    "wrapper_out": ft.make_data_wrapper(WRAPPED),
}


def _symbolic_inputs(size: int) -> dict[str, np.ndarray]:
    rng = _rng(8)
    return {"X": rng.normal(size=(size, 3)), "Y": rng.normal(size=(size, 2)),
            "Z": rng.normal(size=2 * size + 1), "s0": np.array(1.5),
            "col": rng.normal(size=(3, 1)), "row": rng.normal(size=(1, 4))}


def _symbolic_numpy(a: dict[str, np.ndarray]) -> dict[str, Any]:
    X, Y, Z, s0, col, row = (a[k] for k in ("X", "Y", "Z", "s0", "col", "row"))
    size = X.shape[0]
    return {
        "times_n": X * size, "n_plus": size + X, "n_value": np.int64(size),
        "n_float": np.float64(size / 2), "sum_axis0": X.sum(axis=0), "sum_all": Y.sum(),
        "sum_axis1": Y.sum(axis=1), "mean_axis0": X.mean(axis=0),
        "odd": Z[1::2] + X[:, 0], "reverse": Z[::-1], "matmul": Y.T @ X,
        "stack": np.stack([X, X]), "concat": np.concatenate([X, X * 2]),
        "arange_n": np.arange(size), "zeros_n": np.zeros((size, 2)),
        "outer": col + row, "col_scalar": col * s0, "scalar_out": s0 * 2,
        "scalar_in": s0, "scalar_weak": s0 + 1, "scalar_reduction": np.sum(s0 * col),
        "length1_reduction": row.sum(axis=0), "length1_bcast": X + row[:, :3],
        "wrapper": X * WRAPPED, "wrapper_int": WRAPPED_INT * col,
        "wrapper_out": WRAPPED,
    }


@pytest.fixture(scope="module")
def symbolic_program() -> Any:
    """The compiled :data:`SYMBOLIC` results."""
    return ft.compile(ft.make_dict_of_named_arrays(SYMBOLIC))


@pytest.mark.parametrize("size", [5, 1, 0], ids=["n5", "length1", "empty"])
def test_symbolic_shapes_and_scalars(symbolic_program, size: int) -> None:
    """One program for every value of the size params: regular, length-1
    and empty axes."""
    inputs = _symbolic_inputs(size)
    compiled = symbolic_program(**inputs)
    dag = ft.make_dict_of_named_arrays(SYMBOLIC)
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        reference = ft.evaluate_numpy(dag, **inputs)
        direct = _symbolic_numpy(inputs)
    for name in reference:
        assert_same(compiled[name], reference[name], f"{name} (n={size})")
        assert_same(reference[name], direct[name], f"{name} numpy (n={size})")

# }}}


# {{{ corners that once failed (each a minimal reproducer)

def test_static_empty_input() -> None:
    e = ft.make_placeholder("e", (0, 3), np.float64)
    out = ft.compile(e + 1)(e=np.zeros((0, 3)))
    assert out.shape == (0, 3) and out.dtype == np.float64


def test_static_empty_input_beside_other_results() -> None:
    """Reductions over an empty axis give the neutral element."""
    e = ft.make_placeholder("e", (0, 3), np.float64)
    x = ft.make_placeholder("x", (3,), np.float64)
    dag = ft.make_dict_of_named_arrays({
        "plus": e + x, "sum": ft.sum(e, axis=0), "prod": ft.prod(e, axis=0),
        "any": ft.any(e, axis=0), "all": ft.all(e > 0, axis=0), "other": x * 2,
        "transposed": e.T @ ft.ones((0, 2))})
    inputs = {"e": np.zeros((0, 3)), "x": np.arange(3.0)}
    compiled = ft.compile(dag)(**inputs)
    reference = ft.evaluate_numpy(dag, **inputs)
    for name in reference:
        assert_same(compiled[name], reference[name], name)
    assert_same(compiled["transposed"], np.zeros((3, 2)), "empty contraction")


def test_empty_slice_beside_nonempty_output() -> None:
    x = ft.make_placeholder("x", (3,), np.float64)
    out = ft.compile(ft.make_dict_of_named_arrays({"a": x[2:1], "b": x + 1}))(
        x=np.arange(3.0))
    assert out["a"].shape == (0,)
    np.testing.assert_array_equal(out["b"], np.arange(3.0) + 1)


def test_symbolic_reshape() -> None:
    size = ft.make_size_param("n")
    x = ft.make_placeholder("x", (size, 3), np.float64)
    value = np.arange(12.0).reshape(4, 3)
    out = ft.compile(ft.reshape(x, (3, size)))(x=value)
    np.testing.assert_array_equal(out, value.reshape(3, 4))


def test_float16_is_a_clear_type_error() -> None:
    """numpy's result dtype for sqrt of bool or int8; OpenCL lacks it."""
    b = ft.make_placeholder("b", (3,), np.bool_)
    with pytest.raises(TypeError, match="float16"):
        ft.compile(ft.sqrt(b))


def test_inlined_float16_is_a_clear_type_error() -> None:
    b = ft.make_placeholder("b", (3,), np.bool_)
    with pytest.raises(TypeError, match="float16"):
        ft.compile(ft.sqrt(b) > 0.5)

# }}}
