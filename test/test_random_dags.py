# SPDX-License-Identifier: MIT
"""Random DAGs of elementwise, broadcasting, reduction, reshape, index and
einsum nodes: ``ft.evaluate_numpy`` of the lazy DAG against the same
operations applied directly with numpy."""

from typing import Any, Callable

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import ftlazy as ft

Op = Callable[[Any, Any, Any], Any]  # (module, a, b) -> result


def _random_op(r: np.random.Generator, a_shape: tuple, b_shape: tuple) -> Op:
    """An operation, with all its parameters drawn now, that applies to
    either module (``ft`` or ``np``) with numpy's semantics."""
    ndim = len(a_shape)
    axis = int(r.integers(ndim)) if ndim else None
    kind = r.choice(["add", "mul", "sub_broadcast", "exp", "where", "max",
                     "sum", "prod", "reshape", "transpose", "slice", "take",
                     "einsum", "matmul", "newaxis", "floordiv"])
    if kind == "add":
        try:
            np.broadcast_shapes(a_shape, b_shape)
            return lambda xp, a, b: a + b
        except ValueError:
            return lambda xp, a, b: a + 1.5
    if kind == "mul":
        return lambda xp, a, b: a * 0.5 - 2
    if kind == "sub_broadcast" and ndim:
        return lambda xp, a, b: a - xp.sum(a, axis=-1, keepdims=True)
    if kind == "exp":
        return lambda xp, a, b: xp.exp(xp.tanh(a))
    if kind == "where":
        return lambda xp, a, b: xp.where(a > 0.25, a, -a)
    if kind == "max" and ndim and a_shape[axis]:
        return lambda xp, a, b: xp.max(a, axis=axis)
    if kind == "sum":
        return lambda xp, a, b: xp.sum(a, axis=axis)
    if kind == "prod" and ndim:
        return lambda xp, a, b: xp.prod(a * 0.5 + 0.75, axis=axis)
    if kind == "reshape":
        size = int(np.prod(a_shape))
        divisors = [d for d in range(1, size + 1) if size % d == 0] or [0]
        d = int(r.choice(divisors))
        new = (d, size // d if d else 0)
        order = str(r.choice(["C", "F"]))
        return lambda xp, a, b: xp.reshape(a, new, order=order)
    if kind == "transpose" and ndim:
        perm = tuple(int(p) for p in r.permutation(ndim))
        return lambda xp, a, b: xp.transpose(a, perm)
    if kind == "slice" and ndim:
        start, stop = (int(v) if r.random() < 0.7 else None
                       for v in r.integers(-4, 5, 2))
        step = int(r.choice([1, 2, -1, -2]))
        index = (slice(None),) * axis + (slice(start, stop, step),)
        return lambda xp, a, b: a[index]
    if kind == "take" and ndim and a_shape[axis]:
        n = a_shape[axis]
        idx = r.integers(-n, n, int(r.integers(1, 4)))
        index = (slice(None),) * axis + (idx,)
        return lambda xp, a, b: a[index]
    if kind == "einsum" and ndim:
        letters = "abcd"[:ndim]
        out = "".join(c for c in letters if r.random() < 0.5)[::-1]
        spec = f"{letters},{letters}->{out}"
        return lambda xp, a, b: xp.einsum(spec, a, a)
    if kind == "matmul" and ndim == 2:
        return lambda xp, a, b: a @ xp.transpose(a)
    if kind == "newaxis" and ndim < 3:
        return lambda xp, a, b: a[None, ..., None]
    if kind == "floordiv":
        return lambda xp, a, b: (a * 4) // 1.5
    return lambda xp, a, b: -a


@settings(max_examples=60, derandomize=True, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(2, 8))
def test_random_dag_against_numpy(seed, n_ops):
    r = np.random.default_rng(seed)
    shapes = [tuple(int(s) for s in r.integers(0, 4, r.integers(0, 4)))
              for _ in range(2)]
    lazy = [ft.make_placeholder(f"x{k}", s, np.float64)
            for k, s in enumerate(shapes)]
    values = {f"x{k}": r.standard_normal(s) for k, s in enumerate(shapes)}
    eager = [values[p.name] for p in lazy]
    results = {}
    for step in range(n_ops):
        i, j = r.integers(len(lazy), size=2)
        op = _random_op(r, lazy[i].shape, lazy[j].shape)
        with np.errstate(all="ignore"):
            expected = np.asarray(op(np, eager[i], eager[j]))
        got = op(ft, lazy[i], lazy[j])
        assert got.shape == expected.shape, (got, expected.shape)
        assert got.dtype == expected.dtype
        if expected.size <= 512:
            lazy.append(got)
            eager.append(expected)
        results[f"r{step}"] = (got, expected)
    dag = ft.make_dict_of_named_arrays({k: g for k, (g, _) in results.items()})
    used = {p.name for p in ft.analysis.get_inputs(dag)
            if isinstance(p, ft.Placeholder)}
    out = ft.evaluate_numpy(dag, **{k: v for k, v in values.items() if k in used})
    for name, (_, expected) in results.items():
        np.testing.assert_allclose(out[name], expected, rtol=1e-12, atol=1e-12)
