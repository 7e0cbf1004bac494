# SPDX-License-Identifier: MIT
"""Random DAGs (elementwise, broadcasting, reductions, reshapes, transposes,
slices, einsum) over a few float64, int32 and bool placeholders: the OpenCL
result must equal the reference evaluator's. Every example builds an OpenCL
program, so the number of examples is small and fixed (derandomized).

The generator draws only ops that numpy accepts for the operands' dtypes
(and that give dtypes OpenCL has), so an error from the front end, a
TypeError included, fails the test instead of being replaced by another op.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ftlazy as ft

UNARY = {
    "sin": ft.sin, "cos": ft.cos, "tanh": ft.tanh, "abs": ft.abs,
    "negative": ft.negative, "affine": lambda a: a * 2 + 1,
    "sqrt_abs": lambda a: ft.sqrt(ft.abs(a) + 1.0),
    "floordiv": lambda a: a // 3, "mod": lambda a: a % -3,
    "is_positive": lambda a: a > 0,
}
BINARY = {
    "add": ft.add, "subtract": ft.subtract, "multiply": ft.multiply,
    "maximum": ft.maximum, "minimum": ft.minimum,
    "select": lambda a, b: ft.where(a > b, a, b * 2),
    "floordiv": ft.floor_divide,
}
REDUCTIONS = {"sum": ft.sum, "amax": ft.amax, "amin": ft.amin, "mean": ft.mean,
              "any": ft.any, "all": ft.all}
DTYPES = [np.float64, np.float64, np.int32, np.bool_]


def _broadcastable(a: tuple, b: tuple) -> bool:
    try:
        np.broadcast_shapes(a, b)
    except ValueError:
        return False
    return True


def _slice_for(draw: Any, length: int) -> slice:
    """A random slice that keeps at least one element of an axis."""
    step = draw(st.sampled_from([1, 2, -1, -2]))
    if step > 0:
        start = draw(st.integers(0, length - 1))
        stop = draw(st.integers(start + 1, length))
    else:
        start = draw(st.integers(0, length - 1))
        stop = draw(st.sampled_from([None, *range(-length - 1, start - length)]))
    return slice(start, stop, step)


def _einsum(draw: Any, a: ft.Array) -> ft.Array:
    specs = {0: ["->"], 1: ["i,i->", "i,j->ij", "i->i"],
             2: ["ij->ji", "ij,ij->i", "ij,kj->ik", "ij->"],
             3: ["ijk->kij", "ijk,ijk->j", "ijk,ikl->jl"]}[a.ndim]
    spec = draw(st.sampled_from(specs))
    if spec == "ijk,ikl->jl":
        other = ft.transpose(a, (0, 2, 1))
        return ft.einsum(spec, a, other)
    return ft.einsum(spec, *([a] * len(spec.split("->")[0].split(","))))


#: unary ops that compute in a floating-point loop chosen by numpy
FLOAT_MATH = {"sin": np.sin, "cos": np.cos, "tanh": np.tanh}


def _valid_unary(name: str, dtype: np.dtype) -> bool:
    """Whether numpy accepts unary op *name* on *dtype* and gives a dtype
    OpenCL has (``sin`` of a bool or int8 is float16, which it lacks)."""
    if name in FLOAT_MATH:
        _, out = FLOAT_MATH[name].resolve_dtypes((dtype, None))
        return out != np.float16
    if name == "negative":
        return dtype != np.bool_       # numpy: use ~ for bools
    return True


def _valid_binary(name: str, dtype1: np.dtype, dtype2: np.dtype) -> bool:
    """Whether numpy accepts binary op *name* on the dtypes."""
    if name == "subtract":
        return not (dtype1 == np.bool_ and dtype2 == np.bool_)
    return True


def _step(draw: Any, pool: list[ft.Array]) -> ft.Array:
    """One random op on arrays of *pool*. The generator only draws ops that
    numpy accepts for the operands' dtypes, so any error from the front end
    (TypeError included) is a bug and fails the test."""
    result = _op(draw, pool, draw(st.sampled_from(pool)))
    assert result.dtype != np.float16, "the generator drew a float16 op"
    return result


def _op(draw: Any, pool: list[ft.Array], a: ft.Array) -> ft.Array:
    kind = draw(st.sampled_from(
        ["unary", "binary", "binary", "reduce", "reshape", "transpose", "slice",
         "einsum"]))
    if kind == "unary":
        names = [n for n in sorted(UNARY) if _valid_unary(n, a.dtype)]
        return UNARY[draw(st.sampled_from(names))](a)
    if kind == "binary":
        b = draw(st.sampled_from(pool))
        if not _broadcastable(a.shape, b.shape):
            b = ft.sum(b)
        if draw(st.booleans()):
            a, b = b, a
        names = [n for n in sorted(BINARY) if _valid_binary(n, a.dtype, b.dtype)]
        return BINARY[draw(st.sampled_from(names))](a, b)
    if kind == "reduce" and a.ndim:
        axes = draw(st.sampled_from(
            [None, *range(a.ndim), tuple(range(a.ndim))[:2]]))
        return REDUCTIONS[draw(st.sampled_from(sorted(REDUCTIONS)))](
            a, axis=axes, keepdims=draw(st.booleans()))
    if kind == "reshape":
        size = int(np.prod(a.shape))
        divisors = [d for d in range(1, size + 1) if size % d == 0]
        d = draw(st.sampled_from(divisors))
        return ft.reshape(a, (d, size // d), order=draw(st.sampled_from("CF")))
    if kind == "transpose" and a.ndim >= 2:
        return ft.transpose(a, tuple(draw(st.permutations(range(a.ndim)))))
    if kind == "slice" and a.ndim:
        return a[tuple(_slice_for(draw, n) for n in a.shape)]
    if kind == "einsum":
        return _einsum(draw, a)
    return UNARY["affine"](a)


SHAPES = [(3, 4), (4,), (3, 1), (1, 4), (), (2, 3, 4), (4, 3)]


@settings(max_examples=12, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.data())
def test_random_dag_matches_reference(data: st.DataObject) -> None:
    draw = data.draw
    n_inputs = draw(st.integers(2, 3), label="inputs")
    shapes = [(3, 4)] + [draw(st.sampled_from(SHAPES)) for _ in range(n_inputs - 1)]
    dtypes = [np.float64] + [draw(st.sampled_from(DTYPES))
                             for _ in range(n_inputs - 1)]
    pairs = zip(shapes, dtypes, strict=True)
    placeholders = [ft.make_placeholder(f"p{k}", shape, dtype)
                    for k, (shape, dtype) in enumerate(pairs)]
    pool: list[ft.Array] = list(placeholders)
    for _ in range(draw(st.integers(2, 7), label="steps")):
        pool.append(_step(draw, pool))
    outputs = {"last": pool[-1]}
    if draw(st.booleans()):
        outputs["other"] = draw(st.sampled_from(pool[n_inputs:]))
    rng = np.random.default_rng(draw(st.integers(0, 2**16), label="seed"))
    inputs = {p.name: np.asarray(rng.normal(size=p.shape) * 3).astype(p.dtype)
              for p in placeholders
              if any(p is q for q in _reachable_inputs(outputs))}
    dag = ft.make_dict_of_named_arrays(outputs)

    compiled = ft.compile(dag)(**inputs)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        reference = ft.evaluate_numpy(dag, **inputs)
    for name in outputs:
        got, want = np.asarray(compiled[name]), np.asarray(reference[name])
        assert got.dtype == want.dtype and got.shape == want.shape, name
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12,
                                   equal_nan=True, err_msg=name)


def _reachable_inputs(outputs: dict[str, ft.Array]) -> list[ft.Array]:
    from ftlazy.analysis import get_inputs
    return list(get_inputs(ft.make_dict_of_named_arrays(outputs)))
