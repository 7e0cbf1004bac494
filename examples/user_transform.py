# SPDX-License-Identifier: MIT
"""Your own transforms
===================

Writing your own transforms: two small passes over an ftlazy DAG.

A transform is a mapper: subclass :class:`ftlazy.transform.CopyMapper` and
override ``map_<node>`` for the node kinds you rewrite; every other node is
copied (or kept, where nothing below it changed). Mappers visit the bodies
of ``ft.map``/``ft.scan`` loops too, each body in its own scope.

1. :class:`ExpToExp2` rewrites every ``exp(x)`` inside
   :class:`~ftlazy.IndexLambda` bodies into ``exp2(x * log2(e))``. The
   node-level pass (a ``CopyMapper``) delegates the expression-level rewrite
   to a pymbolic mapper from :mod:`ftlazy.scalar_expr`.
2. :class:`TagEinsums` tags every :class:`~ftlazy.Einsum` with a tag class
   defined here. Tags are metadata: they never change a result.

Both are checked with the reference evaluator, ``ft.evaluate_numpy``.
Run: ``python examples/user_transform.py``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pymbolic.primitives as prim
from pytools.tag import Tag, tag_dataclass

import ftlazy as ft
from ftlazy.scalar_expr import ExprIdentityMapper, TypeCast
from ftlazy.transform import CachedWalkMapper, CopyMapper

# {{{ 1. exp(x) -> exp2(x * log2(e))

#: functions whose result has the dtype of their (real float) argument
_SAME_DTYPE_FUNCTIONS = frozenset({"exp", "exp2", "log", "sqrt", "sin", "cos"})


def scalar_dtype(expr: Any, bindings: Mapping[str, ft.Array]) -> np.dtype | None:
    """The dtype of a subexpression of an IndexLambda body, where it is evident.

    IndexLambda bodies are *well typed* (see ``doc/design.rst``): casts are
    explicit and constants are numpy scalars of the operation's dtype, so the
    dtype of an arithmetic operation is the dtype of any operand. Returns
    *None* where this small helper cannot tell (index arithmetic, say).
    """
    if isinstance(expr, TypeCast):
        return expr.dtype
    if isinstance(expr, np.generic):
        return expr.dtype
    if isinstance(expr, prim.Subscript) and isinstance(expr.aggregate, prim.Variable):
        array = bindings.get(expr.aggregate.name)
        return array.dtype if array is not None else None
    if isinstance(expr, prim.Variable):
        array = bindings.get(expr.name)
        return array.dtype if array is not None else None
    if isinstance(expr, (prim.Sum, prim.Product)):
        for child in expr.children:
            dtype = scalar_dtype(child, bindings)
            if dtype is not None:
                return dtype
        return None
    if isinstance(expr, prim.Quotient):
        return scalar_dtype(expr.numerator, bindings)
    if (isinstance(expr, prim.Call) and isinstance(expr.function, prim.Variable)
            and expr.function.name in _SAME_DTYPE_FUNCTIONS):
        return scalar_dtype(expr.parameters[0], bindings)
    return None


class _ExpToExp2Expr(ExprIdentityMapper):
    """The expression-level rewrite, for the body of one IndexLambda."""

    def __init__(self, bindings: Mapping[str, ft.Array]) -> None:
        self.bindings = bindings
        self.count = 0

    def map_call(self, expr: prim.Call) -> Any:
        args = tuple(self.rec(a) for a in expr.parameters)
        fn = expr.function
        if isinstance(fn, prim.Variable) and fn.name == "exp":
            dtype = scalar_dtype(args[0], self.bindings)
            if dtype is not None and dtype.kind == "f":
                self.count += 1
                # the constant has the argument's dtype: the body stays well typed
                log2_e = dtype.type(np.log2(np.e))
                return prim.Call(prim.Variable("exp2"),
                                 (prim.Product((args[0], log2_e)),))
        if all(a is b for a, b in zip(args, expr.parameters)):
            return expr
        return prim.Call(fn, args)


class ExpToExp2(CopyMapper):
    """Rewrite ``exp(x)`` as ``exp2(x * log2(e))`` in every IndexLambda
    (real floating-point arguments only; others are left alone)."""

    def __init__(self) -> None:
        super().__init__()
        self.rewritten = [0]  # a list: body-scope clones share it

    def map_index_lambda(self, expr: ft.IndexLambda) -> ft.Array:
        # children first: the generic copy maps the bindings
        new = super().map_index_lambda(expr)
        rewriter = _ExpToExp2Expr(new.bindings)
        body = rewriter(new.expr)
        if body is new.expr:
            return new
        self.rewritten[0] += rewriter.count
        return new.copy(expr=body)


def count_calls(result: ft.Array | ft.DictOfNamedArrays, fn_name: str) -> int:
    """How many calls of *fn_name* the IndexLambda bodies of *result* make,
    loop bodies included."""

    class Counter(CachedWalkMapper):
        def __init__(self) -> None:
            super().__init__()
            self.total = [0]

        def visit(self, expr: Any) -> bool:
            if isinstance(expr, ft.IndexLambda):
                self.total[0] += str(expr.expr).count(f"{fn_name}(")
            return True

    counter = Counter()
    counter(result)
    return counter.total[0]

# }}}


# {{{ 2. tag every einsum

@tag_dataclass
class FoundByUserPass(Tag):
    """Marks the einsums that :class:`TagEinsums` visited."""

    pass_name: str


class TagEinsums(CopyMapper):
    """Tag every :class:`~ftlazy.Einsum` with :class:`FoundByUserPass`."""

    def map_einsum(self, expr: ft.Einsum) -> ft.Array:
        return super().map_einsum(expr).tagged(FoundByUserPass("tag-einsums"))


def einsums_of(result: ft.Array | ft.DictOfNamedArrays) -> list[ft.Einsum]:
    """Every einsum in the DAG of *result*, loop bodies included."""

    class Collector(CachedWalkMapper):
        def __init__(self) -> None:
            super().__init__()
            self.found: list[ft.Einsum] = []

        def visit(self, expr: Any) -> bool:
            if isinstance(expr, ft.Einsum):
                self.found.append(expr)
            return True

    collector = Collector()
    collector(result)
    return collector.found

# }}}


def build_graph(dtype: Any) -> tuple[ft.DictOfNamedArrays, dict[str, np.ndarray]]:
    """A small softmax-attention-like graph with exps inside and outside a
    ``ft.map`` body, and its random inputs."""
    n = ft.make_size_param("n")
    x = ft.make_placeholder("x", (n, 4), dtype)
    w = ft.make_placeholder("w", (4, 4), dtype)
    scores = ft.exp(x @ w)
    softmax = scores / ft.sum(scores, axis=1)[:, None]
    # a body with its own exp and einsum, closing over w
    rows = ft.map(lambda row: ft.exp(-(w @ row)) + 1, x)
    result = ft.make_dict_of_named_arrays({"softmax": softmax, "rows": rows})
    rng = np.random.default_rng(0)
    inputs = {"x": rng.standard_normal((6, 4)).astype(dtype),
              "w": rng.standard_normal((4, 4)).astype(dtype)}
    return result, inputs


def main() -> None:
    for dtype in (np.float64, np.float32):
        result, inputs = build_graph(dtype)
        expected = ft.evaluate_numpy(result, **inputs)

        rewriter = ExpToExp2()
        rewritten = rewriter(result)
        assert count_calls(rewritten, "exp") == 0
        assert count_calls(rewritten, "exp2") == count_calls(result, "exp")
        got = ft.evaluate_numpy(rewritten, **inputs)
        rtol = 1e-12 if dtype == np.float64 else 1e-5
        for name in expected:
            assert got[name].dtype == expected[name].dtype
            np.testing.assert_allclose(got[name], expected[name], rtol=rtol)
        print(f"[{np.dtype(dtype)}] exp -> exp2: rewrote {rewriter.rewritten[0]} "
              f"calls; results agree to rtol={rtol}")

        tagged = TagEinsums()(result)
        found = einsums_of(tagged)
        assert found and all(FoundByUserPass("tag-einsums") in e.tags
                             for e in found)
        got = ft.evaluate_numpy(tagged, **inputs)
        for name in expected:
            np.testing.assert_array_equal(got[name], expected[name])
        print(f"[{np.dtype(dtype)}] tagged {len(found)} einsums "
              f"({', '.join(sorted(e.spec for e in found))}); results unchanged")


if __name__ == "__main__":
    main()

# vim: foldmethod=marker
