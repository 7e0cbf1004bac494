# SPDX-License-Identifier: MIT
"""A map over a FractalTensor whose body maps over another list: every
pair of elements.

All-pairs scores between sequences are written as a map over one list
whose body maps over another (or the same) list, closed over::

    scores = ft.map(lambda a: ft.map(lambda b: score(a, b), ys), xs)

The inner map runs over a list computed outside the body, once per outer
element, with the outer element captured; maps over FractalTensors nested
that way have no lowering (a compiled program would run the outer map on
the host). :func:`pair_map_result` computes the inner map for every pair
first, as one map over ``n_x * n_y`` pairs zipped with each pair's inner
index ``p % n_y``, which replays the inner body:

* what the inner map captured from the outer element (``a @ W``, ``a``
  itself, its length) is computed once per outer element, by a map over
  ``xs``, and picked per pair at ``p // n_y`` (rows gathered, elements
  gathered as a FractalTensor zipped with the pairs); what has another
  shape is recomputed per pair from the outer element gathered;
* what the inner body computes from its element alone, of a static shape
  (``ft.sum(b, axis=0)``, ``b.shape[0]``), is computed once per inner
  element, by a map over ``ys``, and picked per pair; where that is all
  the body reads of it, the pairs are a dense map;
* otherwise each pair reads ``ys`` at its inner index (a read that maps
  over depth 2 compile, see :mod:`ftlazy.transform.jagged_element_reads`;
  its rows padded to the longest element).

The results, of a static shape per pair, are viewed as ``(n_x, n_y, ...)``
and zipped into the outer map, rebuilt, as a row per element in place of
the inner map's results. Both evaluators run the rebuilt graph.

It applies to a map over one depth-2 FractalTensor (dense arrays zipped
along), outside any loop body, whose result reads one such inner map over
a depth-2 FractalTensor computed outside it that captured something of
the outer element; inner results whose shape depends on an element's
length (a row per token of ``a``) and other bodies stay as they are.

.. autofunction:: pair_map_result
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pymbolic.primitives as prim

from ftlazy import shapes as sh
from ftlazy.array import Array, IndexLambda, SizeParam
from ftlazy.fractal import LoopResult
from ftlazy.fractal_step_reads import names_in_bodies
from ftlazy.fractal_tensor import Jagged, JaggedMap
from ftlazy.node import Node, iter_children, topological_order
from ftlazy.scalar_expr import index_var

__all__ = ["pair_map_result"]

_INT64 = np.dtype(np.int64)


def _reads_outer(node: Node, params: set[int], symbols: set[str]) -> bool:
    """Whether *node* is computed from the outer map's element: its
    parameters (ids *params*) or its sizes *symbols* (by name, or as size
    parameters: ``a.shape[0]`` as a value)."""
    from ftlazy.fractal_element_views import _names_used
    return any(id(n) in params or _names_used(n) & symbols
               or (isinstance(n, SizeParam) and n.name in symbols)
               for n in topological_order([node]))


def _inner_list_map(parts: list[Node], params: Any,
                    symbols: tuple[str, ...]) -> JaggedMap | None:
    """The one map over a depth-2 FractalTensor computed outside the body
    (reading none of its *params*, nor its element's sizes *symbols*) whose
    results the result *parts* read, or None."""
    own = {id(p) for p in params}
    local = set(symbols)

    def outside(node: Node) -> bool:
        return not _reads_outer(node, own, local)

    found = {n.loop for n in topological_order(parts)
             if isinstance(n, LoopResult) and isinstance(n.loop, JaggedMap)}
    # (one that captured nothing of the outer element is the same map for
    # every element: computed once, outside, as any loop-invariant array)
    inner = [loop for loop in found if loop.depths == (2,)
             and not loop.counted and not loop.element_index
             and all(outside(a) for a in loop.inputs[:2])
             and (not all(outside(c) for c in loop.captured)
                  or names_in_bodies(loop) & local)]
    return inner[0] if len(inner) == 1 else None


def _scalar(c: Any) -> Any:
    return c if isinstance(c, int) else sh.to_affine(c).to_expr()


def _pair_index(n_x: Any, n_y: Any, which: str) -> IndexLambda:
    """``p // n_y`` (*which* ``"outer"``) or ``p % n_y`` for every pair
    ``p`` of ``n_x * n_y`` (a size the host computes where both are
    symbolic: not affine)."""
    from ftlazy.fractal_access import _lam, _size
    p, m = index_var(0), _scalar(n_y)
    expr = prim.FloorDiv(p, m) if which == "outer" else prim.Remainder(p, m)
    return _lam(expr, (_size(_scalar(n_x) * m),), _INT64, {})


def _as_grid(per_pair: Array, n_x: Any, n_y: Any) -> IndexLambda:
    """``(n_x * n_y, ...)`` pair results as ``(n_x, n_y, ...)``."""
    from ftlazy.fractal_access import _lam
    rest = tuple(index_var(i + 2) for i in range(per_pair.ndim - 1))
    pair = index_var(0) * _scalar(n_y) + index_var(1)
    return _lam(prim.Variable("_in0")[(pair,) + rest],
                (n_x, n_y) + tuple(per_pair.shape[1:]), per_pair.dtype,
                {"_in0": per_pair})


def _per_element(captured: Array, symbols: tuple[str, ...],
                 params: set[int]) -> bool:
    """Whether a map over the outer list computes *captured* (an array the
    inner map captured from the outer element, whose sizes are *symbols*
    and parameters' ids *params*) as a row per element: its shape static,
    or its first axis the element's length alone (a list zipped with the
    element's). Not where its shape names a size computed from the element
    (``a[:2]``, a filter of ``a``): replayed per pair."""
    from ftlazy.fractal_access import sizes_computed_from
    if sh.shape_size_param_names(captured.shape) & sizes_computed_from(
            [captured], symbols, lambda m: id(m) in params):
        return False
    names = [sh.size_param_names(c) & set(symbols) for c in captured.shape]
    if not any(names):
        return True
    return (not any(names[1:]) and len(symbols) == 1
            and sh.prove_equal(captured.shape[0], prim.Variable(symbols[0])))


def _inner_rows(loop: JaggedMap) -> list[Array] | None:
    """The arrays of a static shape that the body of the inner map *loop*
    computes from its element alone (``ft.sum(b, axis=0)``) and that the
    rest of it (what reads the captured arrays too) or its results read;
    None where the rest reads the element otherwise (``a @ b.T``)."""
    from ftlazy.fractal_element_views import _names_used
    params = loop.body.params
    symbols = set(loop.symbols[0])
    order = topological_order(list(loop.body.outputs))
    from_element: dict[Node, bool] = {}
    from_rest: dict[Node, bool] = {}
    for n in order:
        children = list(iter_children(n))
        from_element[n] = (n is params[0] or bool(_names_used(n) & symbols)
                           or any(from_element[c] for c in children))
        from_rest[n] = (any(n is p for p in params[1:])
                        or any(from_rest[c] for c in children))
    rows: dict[Node, None] = {}
    for n in order:
        if from_element[n] and from_rest[n]:
            rows.update((c, None) for c in iter_children(n)
                        if from_element[c] and not from_rest[c])
    rows.update((o, None) for o in loop.body.outputs
                if from_element[o] and not from_rest[o])
    for r in rows:
        if (not isinstance(r, Array) or r is params[0]
                or any(symbols & sh.size_param_names(c) for c in r.shape)
                or not _per_element(r, tuple(symbols), {id(params[0])})):
            return None
    return list(rows)


def pair_map_result(xs: list[Any], params: Any, leaves: list[Any],
                    depths: list[int], symbols: tuple[str, ...],
                    structure: Any, what: str) -> Any:
    """The result of the map over *xs* (one depth-2 FractalTensor, dense
    arrays besides), traced with the flat *params* and the element sizes
    *symbols*, whose *leaves* (of *structure*) read a map over another
    list, rebuilt with that map computed for every pair first (see the
    module docs); None where it does not apply."""
    from ftlazy.fractal_access import elements_at, element_read_length, getitem
    from ftlazy.fractal_element_views import (
        _computed_per_element, _element_params, _replayed_map, _result_parts)
    from ftlazy.fractal_tensor import map as ft_map
    from ftlazy.ops import take
    from ftlazy.transform.jagged_element_reads import BodyReplay
    from ftlazy.fractal_tensor import _map_nesting
    jagged = [k for k, d in enumerate(depths) if d >= 2]
    if len(jagged) != 1 or depths[jagged[0]] != 2 or _map_nesting[0]:
        # (in a loop body the number of pairs would be a size computed in
        # the body, which the host computes: not rebuilt there)
        return None
    k = jagged[0]
    loop = _inner_list_map(_result_parts(leaves), params, symbols)
    if loop is None:
        return None
    inner_symbols = set(loop.symbols[0])
    local = inner_symbols | set(symbols)
    if any(local & sh.size_param_names(c)
           for out in loop.body.outputs for c in out.shape):
        return None     # (a result of an element's length per pair)
    elements = [_element_params(params, depths, j) for j in range(len(xs))]
    ys = Jagged(loop.inputs[0], (loop.inputs[1],))
    n_x, n_y = xs[k].length, ys.length
    outer = _pair_index(n_x, n_y, "outer")
    own = {id(p) for p in params}
    # (what the inner map captured from the outer elements: computed once
    # per element where it is a row of a static shape or has the element's
    # rows, then picked per pair; else replayed per pair from the element)
    from_outer = [c for c in loop.captured
                  if _reads_outer(c, own, set(symbols))]
    once = [c for c in from_outer if _per_element(c, symbols, own)]
    per_element = _computed_per_element(xs, elements, once, what) if once \
        else ()
    if not isinstance(per_element, tuple):
        per_element = (per_element,)
    picked = [elements_at(v, outer) if isinstance(v, Jagged)
              else take(v, outer, axis=0) for v in per_element]
    replayed = [c for c in from_outer if c not in once]
    # (the outer elements themselves, where a capture is replayed per pair
    # or the inner body uses their sizes by name)
    firsts = [elements_at(xs[k], outer)] if (
        replayed or names_in_bodies(loop) & set(symbols)) else []
    others = [take(xs[j], outer, axis=0) for j in range(len(xs)) if j != k]
    inner_params = loop.body.params
    inner = _pair_index(n_x, n_y, "inner")
    # (what the inner body computes from its element alone, of a static
    # shape: once per inner element, then picked per pair; where that is
    # all it reads of it, no pair reads the inner element)
    inner_rows = _inner_rows(loop)
    # (the inner element's length used as a value, b.shape[0])
    lengths = [n for n in topological_order(list(loop.body.outputs))
               if isinstance(n, SizeParam) and n.name in loop.symbols[0]]

    def as_element(b: Array) -> tuple[dict, dict]:
        """What a replay of the inner body puts in place of its element to
        read *b* instead."""
        length = element_read_length(b) if isinstance(b, IndexLambda) else None
        replace = {inner_params[0]: b}
        replace.update((n, length if length is not None
                        else SizeParam(b.shape[0].name)) for n in lengths)
        return replace, {loop.symbols[0][0]: b.shape[0].name}

    seconds: list[Any] = []
    if inner_rows:
        def inner_row(b: Array) -> tuple:
            replay = BodyReplay(*as_element(b))
            return tuple(replay(r) for r in inner_rows)

        per_inner = ft_map(inner_row, ys)
        if not isinstance(per_inner, tuple):
            per_inner = (per_inner,)
        seconds = [take(v, inner, axis=0) for v in per_inner]
    reads_element = inner_rows is None or any(
        n is inner_params[0] or n in lengths for n in topological_order(
            list(loop.body.outputs), skip=set(inner_rows)))

    def pair(*args: Any) -> tuple:
        a, args = (args[0], args[1:]) if firsts else (None, args)
        now, args = args[:len(once)], args[len(once):]
        second, args = args[:len(seconds)], args[len(seconds):]
        rows, j = args[:-1], args[-1]
        replace: dict[Any, Any] = {} if a is None else {elements[k][0]: a}
        replace.update((e[0], row) for e, row in zip(
            [e for i, e in enumerate(elements) if i != k], rows))
        outer_replay = BodyReplay(replace, {})
        values = dict(zip(once, now))
        captured = [values[c] if c in values else outer_replay(c)
                    for c in loop.captured]
        inner_replace = dict(zip(inner_params[1:], captured))
        inner_replace.update(zip(inner_rows or (), second))
        renames: dict = {}
        if reads_element:
            element_replace, renames = as_element(getitem(ys, j))
            inner_replace.update(element_replace)
        inner_replay = BodyReplay(inner_replace, renames)
        return tuple(inner_replay(o) for o in loop.body.outputs)

    per_pair = ft_map(pair, *firsts, *picked, *seconds, *others, inner)
    if not isinstance(per_pair, tuple):
        per_pair = (per_pair,)
    if any(isinstance(r, Jagged) for r in per_pair):
        return None     # (a list per pair, of rows counted from an element)
    # (the inner map's results the body reads, built when it was traced)
    frontier = [n for n in topological_order(_result_parts(leaves))
                if isinstance(n, LoopResult) and n.loop is loop]
    rows = tuple(_as_grid(per_pair[n.index], n_x, n_y) for n in frontier)

    def replacements(new: Any) -> tuple[dict, dict]:
        return {elements[k][0]: new}, {}

    return _replayed_map(xs, k, xs[k], params, leaves, depths, structure,
                         what, replacements, frontier, rows)
