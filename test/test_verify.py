# SPDX-License-Identifier: MIT
"""ft.verify: every rule fires on a DAG that breaks it (built by bypassing
the constructors, or by a user's CopyMapper), and the DAGs the front end
builds (random dense programs, maps, scans, jagged maps and scans) pass."""

from __future__ import annotations

import dataclasses

import numpy as np
import pymbolic.primitives as prim
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_codegen_jagged_random_programs import ENDS, H, STEPS
from test_codegen_random import DTYPES, SHAPES, _step
from test_display import Note

import ftlazy as ft
from ftlazy.array import Axis, Einsum, IndexLambda, Placeholder
from ftlazy.fractal import Body, BodyParam, LoopResult, Map
from ftlazy.scalar_expr import Reduce, TypeCast
from ftlazy.transform import CopyMapper
from ftlazy.verification import RULES

F64 = np.dtype(np.float64)


def forged(node, **changes):
    """A copy of *node* with *changes*, bypassing its constructor (no
    validation, no interning), as a buggy transform might make one."""
    obj = object.__new__(type(node))
    for f in dataclasses.fields(node):
        if f.name in changes:
            object.__setattr__(obj, f.name, changes[f.name])
        elif hasattr(node, f.name):
            object.__setattr__(obj, f.name, getattr(node, f.name))
    object.__setattr__(obj, "scopes", node.scopes)
    object.__setattr__(obj, "_hash", id(obj))
    return obj


def broken(rule, expr, match):
    with pytest.raises(ft.VerificationError, match=match) as info:
        ft.verify(expr)
    assert info.value.rule == rule
    assert isinstance(info.value, ValueError)
    assert f"rule {rule!r} broken by %" in str(info.value) or \
        info.value.statement.startswith("the ")
    return info.value


X = ft.make_placeholder("x", (4, 3), F64)


def _lambda(expr, shape=(4, 3), dtype=F64, **bindings):
    return IndexLambda(expr, shape, dtype, bindings)


def _read(name, *idx):
    return prim.Subscript(prim.Variable(name), tuple(prim.Variable(i) for i in idx))


# {{{ each rule fires

def test_node_rule_child_that_is_not_an_array():
    y = forged(ft.exp(X), bindings={"_in0": np.zeros((4, 3))})
    broken("node", y, r"a child is a ndarray, not an array")


def test_a_broken_node_still_has_a_repr():
    y = forged(ft.exp(X), bindings={"_in0": np.zeros((4, 3))})
    assert repr(y) == "IndexLambda(shape=(4, 3), dtype=float64, <broken DAG>)"


def test_node_rule_missing_field():
    y = ft.exp(X)
    obj = object.__new__(IndexLambda)
    for name in ("shape", "dtype", "bindings", "tags", "axes", "scopes"):
        object.__setattr__(obj, name, getattr(y, name))
    object.__setattr__(obj, "_hash", 1)
    err = broken("node", obj + 1, r"field 'expr' is not set")
    assert "%1" in err.statement and "unprintable" in err.statement


def test_names_rule_reserved_input_name_from_a_mapper():
    class Rename(CopyMapper):
        def map_placeholder(self, expr):
            return Placeholder("_" + expr.name, expr.shape, expr.dtype)
    renamed = Rename()(ft.sin(X) * 2)
    broken("names", renamed, r"%0: float64\[4, 3\] = placeholder '_x': input "
                             r"name '_x' starts with '_' but not with '_ft'")


def test_names_rule_result_name():
    dag = ft.make_dict_of_named_arrays({"a": X})
    bad = forged(dag, data={"_a": X})
    broken("names", bad, r"the DictOfNamedArrays of the results: result name "
                         r"'_a' starts with '_'")


def test_names_rule_two_inputs_with_one_name():
    other = ft.make_placeholder("x", (4, 4), F64)
    y = ft.sum(X * 2) + ft.sum(other * 2)  # not direct children: no build error
    broken("names", y, r"the inputs of the DAG: two different inputs are named "
                       r"'x'")


@pytest.mark.parametrize(("shape", "match"), [
    ((-1, 3), r"axis 0 of shape \(-1, 3\): -1 is negative"),
    ((prim.Variable("n") * prim.Variable("n"), 3), r"not an affine integer"),
    ((prim.Sum((prim.Variable("n"), 0)), 3), r"not in canonical form"),
    ((prim.Sum((prim.Product((-1, prim.Variable("n"))), -1)), 3),
     r"negative for every value of its size parameters"),
    ((2.5, 3), r"2.5 \(float\) is not an int or an expression"),
    ((True, 3), r"True is a bool"),
    ((prim.Variable("_n"), 3), r"size parameter name '_n' starts with '_'"),
])
def test_shape_rule(shape, match):
    broken("shape", forged(X, shape=shape), match)


def test_dtype_rule():
    broken("dtype", forged(X, dtype=np.dtype("U3")), r"dtype dtype\('<U3'\) is "
                                                     "not a numpy bool")


def test_tags_rule():
    broken("tags", forged(X, tags=frozenset({"stored"})), r"are not a frozenset "
                                                         "of pytools.tag.Tag")
    broken("tags", forged(X, axes=(Axis(),)), r"are not 2 Axis objects")
    broken("tags", forged(X, axes=(Axis(), Axis(frozenset({1})))),
           r"the tags of axis 1")


def test_construction_rule_wrong_inferred_shape():
    w = ft.make_placeholder("w", (3, 5), F64)
    e = forged(X @ w, shape=(4, 6))
    assert isinstance(e, Einsum)
    broken("construction", e, r"its inputs give shape \(4, 5\) and dtype float64, "
                               r"the node has \(4, 6\) and float64")


def test_construction_rule_constructor_check_fails():
    w = ft.make_placeholder("w", (3, 5), F64)
    broken("construction", forged(X @ w, spec="abc,bc->ac"),
           r"building the node again from its fields fails: ValueError: einsum "
           r"spec 'abc,bc->ac': operand 0 has 2 dimensions")
    y = ft.map(lambda r: ft.sum(r), X)
    broken("construction", forged(y, index=3), r"IndexError: loop has 1 results")


def test_bindings_rule_unbound_variable_from_a_mapper():
    class Typo(CopyMapper):
        def map_index_lambda(self, expr):
            mapped = self.map_node(expr)
            return IndexLambda(prim.Variable("y") + mapped.expr, mapped.shape,
                               mapped.dtype, mapped.bindings)
    err = broken("bindings", Typo()(ft.exp(X)),
                 r"variable 'y' is neither a binding \(bindings: \['_in0'\]\), "
                 "an index nor a size parameter")
    assert err.statement == "%1: float64[4, 3] = index_lambda(y + exp(%0[_0, _1]))"


@pytest.mark.parametrize(("expr", "match"), [
    (_read("a", "_0", "_2"), r"index variable _2 is out of range for an array "
                             "of 2 axes"),
    (_read("a", "_0"), r"reads binding 'a' of 2 axes with 1 indices"),
    (prim.Variable("a"), r"binding 'a' has 2 axes and is read without indices"),
    (_read("b", "_0", "_1"), r"reads b, which is not a binding"),
    (_read("a", "_0", "_r0"), r"reduction index _r0 is used outside a "
                              "reduction"),
    (prim.Variable("expo")(_read("a", "_0", "_1")), r"call of expo"),
    (Reduce("sum", Reduce("sum", _read("a", "_r0", "_1"),
                          (("_r0", 0, 4),)), (("_r0", 0, 4),)),
     r"reduction index '_r0' is not a fresh name"),
    (Reduce("sum", _read("a", "_r0", "_1"), (("_r0", 0, prim.Variable("m")),)),
     r"reduction bound m of _r0: \['m'\] are not size parameters"),
])
def test_bindings_rule_expression(expr, match):
    shape = (4,) if isinstance(expr, Reduce) else (4, 3)
    broken("bindings", _lambda(expr, shape=shape, a=X), match)


def test_bindings_rule_binding_name():
    broken("bindings", _lambda(_read("_1", "_0", "_1"), **{"_1": X}),
           r"binding name '_1' is not an identifier other than an index name")


def test_types_rule():
    i32 = ft.make_placeholder("i", (4, 3), np.int32)
    broken("types", _lambda(prim.Comparison(_read("a", "_0", "_1"), "<",
                                            np.float64(0)), a=X),
           r"a comparison or logical expression gives bool, the node's dtype "
           "is float64")
    broken("types", _lambda(_read("a", "_0", "_1") + _read("b", "_0", "_1"),
                            a=X, b=i32),
           r"the operands of .* have dtypes \['float64', 'int32'\]")
    broken("types", _lambda(TypeCast(np.dtype(np.int32), _read("a", "_0", "_1")),
                            a=X),
           r"the expression casts to int32, the node's dtype is float64")
    broken("types", _lambda(_read("b", "_0", "_1"), b=i32),
           r"the expression computes int32, the node's dtype is float64")
    broken("types", _lambda(prim.Comparison(_read("a", "_0", "_1"), "<",
                                            _read("b", "_0", "_1")),
                            dtype=np.bool_, a=X, b=i32),
           r"compares float64 with int32")


def test_scope_rule_body_parameter_outside_its_body():
    class Leak(CopyMapper):
        def map_placeholder(self, expr):
            return BodyParam(0, expr.shape, expr.dtype)
    broken("scope", Leak()(ft.exp(X)), r"%0: float64\[4, 3\] = param 0: body "
                                       "parameter 0 is used outside any loop body")


def test_scope_rule_parameter_of_another_body():
    p0, p1 = BodyParam(0, (3,), F64), BodyParam(1, (3,), F64)
    body = Body((p0,), (_lambda(_read("a", "_0"), shape=(3,), a=p1),))
    loop = Map(body, (X,), 1)
    err = broken("scope", LoopResult(loop, 0),
                 r"body parameter 1 is not a parameter of its body \(1 "
                 r"parameters\): it leaked in from another body")
    assert err.statement == "%3: float64[3] = param 1 (in the body of %1)"


def test_scope_rule_input_in_a_body():
    # (a rewrite that added an outer placeholder inside a scan's body
    # passed ft.verify; both evaluators then failed with KeyErrors)
    p = ft.make_placeholder("p", (3,), F64)
    scanned = ft.scan(lambda h, row: ft.tanh(h + row), X, ft.zeros(3))

    class Leak(CopyMapper):
        def map_index_lambda(self, expr):
            new = super().map_index_lambda(expr)
            return new + p if "tanh(" in str(new.expr) else new

    broken("scope", Leak()(scanned), r"placeholder 'p' \(in the body of "
           r"%\d+\): the input Placeholder 'p' is a node of a loop body")


def test_scope_rule_parameters_out_of_order():
    p1 = BodyParam(1, (3,), F64)
    loop = Map(Body((p1,), (p1 * 2,)), (X,), 1)
    broken("scope", LoopResult(loop, 0), r"parameter 0 of its body is "
                                         r"BodyParam\(shape=\(3,\)")


def test_scope_rule_trace_parameter():
    def body(row):
        doubled = row * 2
        with pytest.raises(ft.VerificationError, match="trace parameter") as info:
            ft.verify(doubled)
        assert info.value.rule == "scope"
        return doubled
    ft.map(body, X)


def test_every_rule_has_a_test():
    import inspect
    import sys
    source = inspect.getsource(sys.modules[__name__])
    for rule in RULES:
        assert f'broken("{rule}"' in source or f'"{rule}"' in source

# }}}


# {{{ valid DAGs pass

def test_hand_built_valid_dags_pass():
    n = ft.make_size_param("n")
    x = ft.make_placeholder("x", (n, 3), F64)
    w = ft.make_data_wrapper(np.eye(3), name="w")
    y = (ft.exp(x) @ w).tagged(Note("hello")).with_tagged_axis(0, Note("rows"))
    ft.verify(y)
    ft.verify(ft.make_dict_of_named_arrays({"y": y, "s": ft.sum(y, axis=0),
                                            "n1": n + 1}))
    ft.verify(_lambda(Reduce("sum", _read("a", "_0", "_r0"), (("_r0", 0, 3),)),
                      shape=(4,), a=X))
    ft.verify(ft.gather(x, ft.make_placeholder("i", (5,), np.int64)))
    ft.verify(ft.scatter(x, ft.arange(2), ft.zeros((2, 3))))
    ft.verify(ft.concatenate([x, x[1:]]))
    ft.verify(ft.stack([x, x], axis=1).reshape(-1, 3, order="F"))
    ft.verify(ft.roll(x, 2, axis=0))


def test_loops_pass():
    n = ft.make_size_param("n")
    x = ft.make_placeholder("x", (n, 4, 3), F64)
    w = ft.make_placeholder("w", (3, 3), F64)
    h0 = ft.zeros(3)
    rnn = ft.map(lambda seq: ft.scan(lambda h, xi: ft.tanh(h @ w + xi), seq, h0),
                 x)
    ft.verify(rnn)
    ft.verify(ft.fold(lambda c, m: c + ft.sum(m, axis=0), x, h0))
    ft.verify(ft.reduce(lambda a, b: a + b, x, ft.zeros((4, 3))))
    ft.verify(rnn.loop)
    pair = ft.map(lambda m: (ft.sum(m), m @ w), x)
    ft.verify(ft.make_dict_of_named_arrays({"a": pair[0], "b": pair[1]}))
    ft.verify(pair[1].loop.body)


def test_jagged_dags_pass():
    xs = ft.make_jagged_placeholder("xs", (H,), F64, depth=2)
    docs = ft.make_jagged_placeholder("docs", (H,), F64, depth=3)
    ft.verify(xs)
    ft.verify(docs * 2 + 1)
    ft.verify(ft.map(lambda d: ft.map(lambda s: ft.sum(s, axis=0), d), docs))
    ft.verify(ft.fold(lambda c, s: c + ft.sum(s, axis=0), xs, ft.zeros(H)))
    ft.verify(ft.map(lambda s: ft.slide(s, 2), xs))
    ft.verify(ft.filter(lambda r: ft.sum(r) > 0, xs))
    ft.verify(ft.flatten(docs))
    ft.verify(ft.lengths(docs))
    ft.verify(xs[1:])


@settings(max_examples=60, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.data())
def test_random_dense_programs_pass(data):
    draw = data.draw
    n_inputs = draw(st.integers(2, 3), label="inputs")
    shapes = [(3, 4)] + [draw(st.sampled_from(SHAPES)) for _ in range(n_inputs - 1)]
    dtypes = [np.float64] + [draw(st.sampled_from(DTYPES))
                             for _ in range(n_inputs - 1)]
    pool = [ft.make_placeholder(f"p{k}", shape, dtype)
            for k, (shape, dtype) in enumerate(zip(shapes, dtypes))]
    for _ in range(draw(st.integers(2, 7), label="steps")):
        pool.append(_step(draw, pool))
    ft.verify(ft.make_dict_of_named_arrays(
        {f"r{i}": a for i, a in enumerate(pool[n_inputs:])}))


@settings(max_examples=30, deadline=None, derandomize=True)
@given(steps=st.lists(st.sampled_from(sorted(STEPS)), min_size=1, max_size=3),
       end=st.sampled_from(sorted(ENDS)))
def test_random_jagged_map_bodies_pass(steps, end):
    xs = ft.make_jagged_placeholder("xs", (H,), F64, depth=2)
    ids = ft.make_jagged_placeholder("ids", (), np.int64, depth=2)
    w = ft.make_placeholder("w", (H, H), F64)

    def body(s, i):
        for name in steps:
            s = STEPS[name](s, i, w)
        return ENDS[end](s)
    ft.verify(ft.map(body, xs, ids))


def test_a_copy_mapper_that_keeps_invariants_passes():
    class Double(CopyMapper):
        def map_placeholder(self, expr):
            return expr * 2
    y = ft.map(lambda r: ft.sum(r * r), X) + ft.sum(X, axis=1)
    ft.verify(Double()(y))


def test_a_deep_chain_verifies_without_recursion():
    y = X
    for _ in range(20_000):
        y = ft.sin(y)
    ft.verify(y)
    bad = forged(y, dtype=np.dtype(np.float32))
    broken("types", bad + 1, r"%20000: float32\[4, 3\] = index_lambda\(sin\("
                             r"%19999\[_0, _1\]\)\): the expression computes "
                             "float64, the node's dtype is float32")


def test_bad_input_is_a_type_error():
    with pytest.raises(TypeError, match=r"ft\.verify expects an ftlazy array or "
                                        "node, got list"):
        ft.verify([X])

# }}}


@pytest.mark.parametrize("step", sorted(STEPS))
def test_dags_after_ftlazys_own_jagged_lowering_pass(step):
    # (ragged scans, host index arrays, derived sizes: internal node kinds)
    from ftlazy.target.loopy.jagged_program import jagged_lowering
    xs = ft.make_jagged_placeholder("xs", (H,), F64, depth=2)
    ids = ft.make_jagged_placeholder("ids", (), np.int64, depth=2)
    w = ft.make_placeholder("w", (H, H), F64)
    for end in sorted(ENDS):
        out = ft.map(lambda s, i: ENDS[end](STEPS[step](s, i, w)), xs, ids)
        ft.verify(jagged_lowering(out).dense)
