# SPDX-License-Identifier: MIT
"""Bundles of names (pytrees): ft.map, ft.scan, ft.fold and ft.reduce over
nested tuples, lists, NamedTuples and dicts of arrays, through the
reference evaluator and through OpenCL; structure errors; the
tree_flatten / tree_unflatten helpers."""

from __future__ import annotations

import re
from collections import OrderedDict
from typing import Any, NamedTuple

import numpy as np
import pytest

import ftlazy as ft
from ftlazy.fractal import LEAF, TreeStructure, tree_flatten, tree_unflatten

rng = np.random.default_rng(5)

N = ft.make_size_param("n")


class Params(NamedTuple):
    W: Any
    U: Any


class Cell(NamedTuple):
    h: Any
    c: Any


def assert_tree_close(actual: Any, expected: Any, rtol: float = 1e-12) -> None:
    """Same structure (types, dict key order) and values."""
    a_leaves, a_structure = tree_flatten(actual)
    e_leaves, e_structure = tree_flatten(expected)
    assert a_structure == e_structure, (str(a_structure), str(e_structure))
    for a, e in zip(a_leaves, e_leaves):
        e = np.asarray(e)
        assert a.dtype == e.dtype and a.shape == e.shape
        np.testing.assert_allclose(a, e, rtol=rtol, atol=rtol)


def evaluate_both(tree: Any, **inputs: Any) -> list[Any]:
    """*tree* (of lazy arrays) evaluated by evaluate_numpy and by one
    compiled program, each rebuilt into *tree*'s structure."""
    leaves, structure = tree_flatten(tree)
    d = ft.make_dict_of_named_arrays({f"out{i}": a for i, a in enumerate(leaves)})
    results = []
    for out in (ft.evaluate_numpy(d, **inputs), ft.compile(d)(**inputs)):
        results.append(tree_unflatten([out[f"out{i}"] for i in range(len(leaves))],
                                      structure))
    return results


# {{{ fold, scan, reduce

def test_fold_over_a_tuple_of_stacked_layer_parameters():
    """FractalTensor's stacked layers: fold(layer, (Ws, Us, bs), init=xs)."""
    layers, batch, width = 3, 4, 5
    Ws = ft.make_placeholder("Ws", (layers, width, width), np.float64)
    Us = ft.make_placeholder("Us", (layers, width, width), np.float64)
    bs = ft.make_placeholder("bs", (layers, width), np.float64)
    xs = ft.make_placeholder("xs", (batch, width), np.float64)

    def layer(x, params):
        W, U, b = params
        return ft.tanh(x @ W + ft.sin(x) @ U + b)

    out = ft.fold(layer, (Ws, Us, bs), init=xs)
    assert out.shape == (batch, width)
    vals = dict(Ws=rng.random((layers, width, width)) - 0.5,
                Us=rng.random((layers, width, width)) - 0.5,
                bs=rng.random((layers, width)), xs=rng.random((batch, width)))
    x = vals["xs"]
    for k in range(layers):
        x = np.tanh(x @ vals["Ws"][k] + np.sin(x) @ vals["Us"][k] + vals["bs"][k])
    for result in evaluate_both(out, **vals):
        assert_tree_close(result, x)


def lstm_reference(xs, h, c, W, U):
    hs, cs = [], []
    for x in xs:
        gates = x @ W + h @ U
        c = c * (1 / (1 + np.exp(-gates))) + np.tanh(gates)
        h = np.tanh(c) * 0.5
        hs.append(h)
        cs.append(c)
    return hs, cs


def test_scan_with_a_dict_carry_and_namedtuple_parameters():
    t, b, d = 6, 2, 3
    xs = ft.make_placeholder("xs", (N, b, d), np.float64)
    h0 = ft.make_placeholder("h0", (b, d), np.float64)
    c0 = ft.make_placeholder("c0", (b, d), np.float64)
    params = Params(W=ft.make_placeholder("W", (d, d), np.float64),
                    U=ft.make_placeholder("U", (d, d), np.float64))
    seen = []

    def step(carry, x):
        seen.append(carry)
        gates = x @ params.W + carry["h"] @ params.U
        c = carry["c"] * (1 / (1 + ft.exp(-gates))) + ft.tanh(gates)
        # keys in another order than init: matched by key
        return {"c": c, "h": ft.tanh(c) * 0.5}

    history = ft.scan(step, xs, {"h": h0, "c": c0})
    last = ft.fold(step, xs, {"h": h0, "c": c0})
    assert isinstance(seen[0], dict) and list(seen[0]) == ["h", "c"]
    assert list(history) == ["h", "c"] and list(last) == ["h", "c"]
    assert history["h"].shape == xs.shape
    for length in (t, 0):
        vals = dict(xs=rng.random((length, b, d)), h0=rng.random((b, d)),
                    c0=rng.random((b, d)), W=rng.random((d, d)),
                    U=rng.random((d, d)))
        hs, cs = lstm_reference(vals["xs"], vals["h0"], vals["c0"], vals["W"],
                                vals["U"])
        expected_history = {"h": np.array(hs).reshape(length, b, d),
                            "c": np.array(cs).reshape(length, b, d)}
        expected_last = ({"h": hs[-1], "c": cs[-1]} if length
                         else {"h": vals["h0"], "c": vals["c0"]})
        for result in evaluate_both({"history": history, "last": last}, **vals):
            assert_tree_close(result, {"history": expected_history,
                                       "last": expected_last})


def test_fold_over_namedtuple_of_sequences_with_namedtuple_carry():
    """Parameters per step as a NamedTuple of stacked arrays; the carry a
    NamedTuple holding a list and a number."""
    Ws = ft.make_placeholder("Ws", (N, 2, 2), np.float64)
    Us = ft.make_placeholder("Us", (N, 2), np.float64)

    def step(carry, p):
        assert isinstance(p, Params) and isinstance(carry, Cell)
        h = carry.h @ p.W + p.U
        return Cell(h=h, c=[carry.c[0] + ft.sum(h), carry.c[1] * 2])

    init = Cell(h=ft.ones((2,)), c=[0.0, np.float32(1)])
    out = ft.fold(step, Params(W=Ws, U=Us), init)
    assert isinstance(out, Cell) and isinstance(out.c, list)
    assert out.c[1].dtype == np.float32
    for n in (4, 0):
        vals = dict(Ws=rng.random((n, 2, 2)), Us=rng.random((n, 2)))
        h, s, p = np.ones(2), 0.0, np.float32(1)
        for k in range(n):
            h = h @ vals["Ws"][k] + vals["Us"][k]
            s, p = s + h.sum(), p * np.float32(2)
        expected = Cell(h=h, c=[np.float64(s), np.float32(p)])
        for result in evaluate_both(out, **vals):
            assert_tree_close(result, expected)


def test_scan_over_a_dict_of_sequences():
    seqs = {"price": ft.make_placeholder("price", (N,), np.float64),
            "volume": ft.make_placeholder("volume", (N,), np.int64),
            "flags": [ft.make_placeholder("flag", (N, 2), np.bool_)]}

    def step(carry, x):
        assert list(x) == ["price", "volume", "flags"]
        total, count = carry
        return (total + x["price"] * x["volume"].astype(np.float64),
                count + ft.sum(x["flags"][0].astype(np.int64)))

    totals, counts = ft.scan(step, seqs, (0.0, ft.zeros((), np.int64)))
    vals = dict(price=rng.random(7), volume=rng.integers(0, 10, 7),
                flag=rng.random((7, 2)) < 0.5)
    expected = (np.cumsum(vals["price"] * vals["volume"]),
                np.cumsum(vals["flag"].sum(axis=1)))
    for result in evaluate_both((totals, counts), **vals):
        assert_tree_close(result, expected)


def test_reduce_over_pytrees():
    xs = {"a": ft.make_placeholder("a", (N, 3), np.float64),
          "b": ft.make_placeholder("b", (N,), np.int64)}

    def combine(acc, x):
        return {"sum": acc["sum"] + x["a"], "max": ft.maximum(acc["max"], x["b"])}

    init = {"sum": ft.zeros((3,)), "max": ft.full((), -1, np.int64)}
    out = ft.reduce(combine, xs, init)
    assert list(out) == ["sum", "max"]
    for n in (5, 0):
        vals = dict(a=rng.random((n, 3)), b=rng.integers(0, 9, n))
        expected = {"sum": vals["a"].sum(axis=0) if n else np.zeros(3),
                    "max": np.int64(max([-1, *vals["b"].tolist()]))}
        for result in evaluate_both(out, **vals):
            assert_tree_close(result, expected)

# }}}


# {{{ map

def test_map_over_a_namedtuple_returning_a_dict():
    params = Params(W=ft.make_placeholder("W", (N, 2, 3), np.float64),
                    U=ft.make_placeholder("U", (N, 3), np.float64))
    x = ft.make_placeholder("x", (2,), np.float64)

    def f(p):
        assert isinstance(p, Params) and p.W.shape == (2, 3)
        y = x @ p.W + p.U
        return {"y": y, "stats": (ft.sum(y), [ft.amax(y)])}

    out = ft.map(f, params)
    assert list(out) == ["y", "stats"] and isinstance(out["stats"][1], list)
    vals = dict(W=rng.random((4, 2, 3)), U=rng.random((4, 3)), x=rng.random(2))
    y = np.einsum("i,nij->nj", vals["x"], vals["W"]) + vals["U"]
    expected = {"y": y, "stats": (y.sum(axis=1), [y.max(axis=1)])}
    for result in evaluate_both(out, **vals):
        assert_tree_close(result, expected)


def test_map_over_several_pytree_arguments():
    a = ft.make_placeholder("a", (4, 2), np.float64)
    b = ft.make_placeholder("b", (4,), np.int32)
    c = ft.make_placeholder("c", (4, 3), np.float64)

    def f(pair, plain, nested):
        (u, v), w = pair, plain
        assert isinstance(nested, dict) and isinstance(nested["l"], list)
        return [u * v.astype(np.float64), w + ft.sum(nested["l"][0])]

    out = ft.map(f, (a, b), c[:, 0], {"l": [c]})
    assert isinstance(out, list) and len(out) == 2
    vals = dict(a=rng.random((4, 2)), b=rng.integers(0, 5, 4).astype(np.int32),
                c=rng.random((4, 3)))
    expected = [vals["a"] * vals["b"][:, None],
                vals["c"][:, 0] + vals["c"].sum(axis=1)]
    for result in evaluate_both(out, **vals):
        assert_tree_close(result, expected)


def test_map_keeps_dict_key_order_and_dict_subclasses():
    x = ft.make_placeholder("x", (3,), np.float64)
    out = ft.map(lambda d: OrderedDict([("z", d["b"] * 2), ("a", d["a"])]),
                 {"b": x, "a": x + 1})
    assert type(out) is OrderedDict and list(out) == ["z", "a"]
    xv = rng.random(3)
    for result in evaluate_both(out, x=xv):
        assert_tree_close(result, OrderedDict([("z", xv * 2), ("a", xv + 1)]))

# }}}


# {{{ errors

def test_carry_structure_mismatch_names_both_structures():
    xs = ft.make_placeholder("xs", (5, 2), np.float64)
    h = ft.make_placeholder("h", (2,), np.float64)
    cases = [
        (lambda c, x: {"h": c["h"]}, {"h": h, "c": h},
         "{'h': *} instead of {'h': *, 'c': *}"),
        (lambda c, x: {"h": c["h"], "k": c["c"]}, {"h": h, "c": h},
         "{'h': *, 'k': *} instead of {'h': *, 'c': *}"),
        (lambda c, x: (c.W, c.U), Params(W=h, U=h),
         "(*, *) instead of Params(W=*, U=*)"),
        (lambda c, x: [c[0], c[1]], (h, h), "[*, *] instead of (*, *)"),
        (lambda c, x: ((c[0], c[1]),), (h, h), "((*, *),) instead of (*, *)"),
        (lambda c, x: (c, c), h, "(*, *) instead of *"),
    ]
    for loop in (ft.scan, ft.fold, ft.reduce):
        what = loop.__name__
        for f, init, shown in cases:
            with pytest.raises(ValueError, match=re.escape(
                    f"{what}: the carry the body returns is structured "
                    f"differently from init: {shown}")):
                loop(f, xs, init)


def test_pytree_input_errors():
    xs = ft.make_placeholder("xs", (5, 2), np.float64)
    ys = ft.make_placeholder("ys", (4,), np.float64)
    with pytest.raises(ValueError, match=r"different lengths.*\(5, 2\).*\(4,\)"):
        ft.map(lambda d: d["x"], {"x": xs, "y": ys})
    with pytest.raises(ValueError, match="different lengths"):
        ft.scan(lambda c, d: c, Params(W=xs, U=ys), 0.0)
    with pytest.raises(ValueError, match=re.escape(
            "map needs at least one sequence, got inputs of the structures "
            "(), {} with no arrays")):
        ft.map(lambda a, b: 1.0, (), {})
    with pytest.raises(ValueError, match="fold needs at least one sequence"):
        ft.fold(lambda c, x: c, {"a": []}, 0.0)
    with pytest.raises(TypeError, match=re.escape(
            "scan initial carries must be arrays or numbers, got str 'h'")):
        ft.scan(lambda c, x: c, xs, {"h": "h"})
    with pytest.raises(TypeError, match="map inputs: a set has no order"):
        ft.map(lambda s: s, {xs})
    with pytest.raises(TypeError, match="map results must be arrays or numbers"):
        ft.map(lambda x: {"r": None}, xs)
    with pytest.raises(ValueError, match="map: the function returned no arrays"):
        ft.map(lambda x: {"r": ()}, xs)

# }}}


# {{{ the helpers

def test_tree_flatten_and_unflatten_round_trip():
    a, b, c = object(), object(), object()
    tree = {"p": Params(W=a, U=[b, (c,)]), "q": (), "r": OrderedDict(s=a)}
    leaves, structure = tree_flatten(tree, "test")
    assert leaves == [a, b, c, a]
    assert structure.num_leaves == 4
    assert str(structure) == ("{'p': Params(W=*, U=[*, (*,)]), 'q': (), "
                              "'r': OrderedDict({'s': *})}")
    rebuilt = tree_unflatten(leaves, structure)
    assert rebuilt == tree and list(rebuilt) == ["p", "q", "r"]
    assert isinstance(rebuilt["p"], Params)
    assert type(rebuilt["r"]) is OrderedDict
    assert tree_flatten(a) == ([a], LEAF)
    assert tree_unflatten([b], LEAF) is b
    # dicts with other key orders are other structures
    assert tree_flatten({"x": a, "y": b})[1] != tree_flatten({"y": b, "x": a})[1]
    assert isinstance(structure, TreeStructure) and hash(structure) is not None
    with pytest.raises(ValueError, match="3 leaves for the structure"):
        tree_unflatten([a, b, c], structure)

# }}}
