# SPDX-License-Identifier: MIT
"""Run-time side of FractalTensors shared by the reference evaluator and
compiled programs: splitting a jagged input into its placeholders' parts,
checking zipped offsets, and evaluating a :class:`~ftlazy.fractal_tensor.JaggedMap`
element by element (the reference semantics)."""

from __future__ import annotations

from functools import lru_cache
from typing import Any, Callable, Iterable, Mapping

import numpy as np

from ftlazy.array import Placeholder
from ftlazy.fractal_tensor import Jagged, JaggedInputPart, JaggedMap
from ftlazy.jagged import JaggedArray
from ftlazy.node import Node, topological_order
from ftlazy.shapes import evaluate_shape


def jagged_parts(inputs: Iterable[Node]) -> dict[str, dict[str, Placeholder]]:
    """The placeholders of each jagged input, by input name and part."""
    groups: dict[str, dict[str, Placeholder]] = {}
    for n in inputs:
        if isinstance(n, Placeholder):
            for t in n.tags:
                if isinstance(t, JaggedInputPart):
                    groups.setdefault(t.name, {})[t.part] = n
    return groups


def _coerce(value: Any, name: str, dtype: np.dtype, depth: int,
            elem_shape: tuple) -> JaggedArray:
    return JaggedArray.coerce(value, depth, elem_shape, dtype, name,
                              uniform=True)


@lru_cache(maxsize=256)
def _jagged_inputs(inputs: tuple[Node, ...]) -> tuple[tuple, ...]:
    """Per jagged input among *inputs*: its name, its tag, its parts'
    names (``values``, ``offsets<k>``), their placeholders' names (also of
    parts the program does not read) and the parts the program reads."""
    result = []
    for name, parts in jagged_parts(inputs).items():
        tag = next(t for p in parts.values() for t in p.tags
                   if isinstance(t, JaggedInputPart))
        part_names = ["values"] + [f"offsets{k}" for k in range(tag.depth - 1)]
        names = {p: f"{name}_{p}" for p in part_names}
        result.append((name, tag, part_names, names, frozenset(parts)))
    return tuple(result)


def expand_jagged_inputs(inputs: Iterable[Node], given: Mapping[str, Any]
                         ) -> dict[str, Any]:
    """*given* with each FractalTensor input (a :class:`~ftlazy.JaggedArray`
    or nested lists, passed by its declared name) replaced by its values and
    offsets under their placeholders' names. Parts passed directly are
    validated as a whole."""
    result = dict(given)
    for name, tag, part_names, names, read in _jagged_inputs(tuple(inputs)):
        if name in result:
            direct = [names[p] for p in part_names if names[p] in result]
            if direct:
                raise ValueError(f"jagged input {name!r} is given both whole and "
                                 f"as its part(s) {direct}")
            ja = _coerce(result.pop(name), name, np.dtype(tag.dtype), tag.depth,
                         tag.elem_shape)
        elif all(names[p] in result for p in part_names):
            ja = JaggedArray._from_parts(
                name, result[names["values"]],
                tuple(result[names[p]] for p in part_names[1:]))
        else:
            # (none given: reported as a missing input by the binding; parts
            # given one by one: those the program reads are needed, as a
            # program that another passes its inputs on to may read some)
            missing = [names[p] for p in part_names
                       if p in read and names[p] not in result]
            if missing and any(names[p] in result for p in part_names):
                raise ValueError(
                    f"missing input(s) {', '.join(map(repr, missing))}: "
                    f"jagged input {name!r} is given as parts, which needs "
                    f"all of {[names[p] for p in part_names if p in read]}")
            continue
        if ja.depth != tag.depth:
            raise ValueError(f"jagged input {name!r} has depth {ja.depth}, "
                             f"declared {tag.depth}")
        for part, array in zip(part_names, (ja.values,) + ja.offsets):
            if part in read:
                result[names[part]] = array
    return result


def fractal_tensor_label(offsets: Node) -> str | None:
    """How messages name the FractalTensor whose outer offsets are the node
    *offsets*: ``'xs'`` for the jagged input ``xs`` (and anything leaf-wise
    computed from it, which keeps its offsets), ``a FractalTensor computed
    from 'xs'`` for offsets computed from those of inputs (a map's jagged
    result), else None."""
    def input_name(n: Node) -> str | None:
        if isinstance(n, Placeholder):
            for t in n.tags:
                if isinstance(t, JaggedInputPart):
                    return t.name
        return None

    name = input_name(offsets)
    if name is not None:
        return repr(name)
    sources = sorted({input_name(n) for n in topological_order([offsets])}
                     - {None})
    if sources:
        return ("a FractalTensor computed from "
                + " and ".join(repr(s) for s in sources))
    return None


def check_zipped(what: str, mapped: list[tuple[int, list[np.ndarray]]],
                 labels: list[str | None] | None = None) -> int:
    """The common outer length of the mapped inputs (``(depth, arrays)``
    with numpy values); :class:`ValueError` if zipped inputs differ in
    their outer length or, for FractalTensors, in any offsets. *what* names
    the operation (``map over a FractalTensor``) and *labels*, where given,
    the inputs (see :func:`fractal_tensor_label`), else they are numbered."""
    def outer(depth: int, arrays: list[np.ndarray]) -> int:
        return len(arrays[0]) if depth == 1 else len(arrays[1]) - 1

    def label(k: int) -> str:
        given = labels[k] if labels is not None and k < len(labels) else None
        kind = "zipped FractalTensor" if mapped[k][0] > 1 else "zipped input"
        return f"{kind} {k}" + ("" if given is None else f" ({given})")

    n = outer(*mapped[0])
    first_jagged = next(((k, a) for k, (d, a) in enumerate(mapped) if d > 1), None)
    for k, (depth, arrays) in enumerate(mapped):
        if outer(depth, arrays) != n:
            raise ValueError(f"{what}: {label(k)} has {outer(depth, arrays)} "
                             f"elements, {label(0)} has {n}")
        if depth > 1 and first_jagged is not None and first_jagged[0] != k:
            j, ref = first_jagged
            for level, (a, b) in enumerate(zip(ref[1:], arrays[1:])):
                if a.shape != b.shape or not np.array_equal(a, b):
                    inner = ("their elements' lengths" if level == 0 else
                             f"the lengths of their lists at depth "
                             f"{level + 1}")
                    raise ValueError(
                        f"{what}: {label(j)} and {label(k)} have different "
                        f"lengths at level {level} ({inner} differ): offsets "
                        f"{a.tolist()[:8]} and {b.tolist()[:8]}")
    return n


def element_arrays(depth: int, arrays: list[np.ndarray],
                   symbols: tuple[str, ...], i: int, local: dict[str, int]
                   ) -> list[np.ndarray]:
    """The body parameters of element *i* of one input (*arrays*: a dense
    array, or a FractalTensor's values then offsets, outermost first) of a
    loop over the elements: a row; or the element's values, then its
    offsets rebased to start at 0 (see
    :func:`ftlazy.fractal_tensor.element_views`). Binds the element's sizes
    *symbols* in *local*."""
    if depth == 1:
        return [arrays[0][i]]
    values, offsets = arrays[0], arrays[1:]
    # (the element's range at each level: its lists, then its leaves)
    lo, hi = int(offsets[0][i]), int(offsets[0][i + 1])
    rebased = []
    for off, m in zip(offsets[1:], symbols):
        local[m] = hi - lo
        rebased.append(off[lo:hi + 1] - off[lo])
        lo, hi = int(off[lo]), int(off[hi])
    local[symbols[-1]] = hi - lo
    return [values[lo:hi]] + rebased


def evaluate_jagged_map(expr: JaggedMap, rec: Callable[[Node], Any],
                        env: Mapping[str, int],
                        run_body: Callable[[dict, tuple], list[np.ndarray]]
                        ) -> tuple[np.ndarray, ...]:
    """The results of *expr*, one body evaluation per element (the
    reference semantics). *run_body(env, params)* evaluates the body."""
    parts = expr.mapped_parts()
    mapped = [(depth, [np.asarray(rec(a)) for a in arrays])
              for depth, arrays in parts]
    captured = tuple(rec(a) for a in expr.captured)
    n = check_zipped(expr.what, mapped, [
        fractal_tensor_label(arrays[1]) if depth > 1 else None
        for depth, arrays in parts])
    per_element = []
    for i in range(n):
        params: list[np.ndarray] = []
        local = dict(env)
        for (depth, arrays), symbols in zip(mapped, expr.symbols):
            params += element_arrays(depth, arrays, symbols, i, local)
        try:
            per_element.append(run_body(local, tuple(params) + captured))
        except (ValueError, IndexError) as err:
            # (the element's sizes under the names users know: L, not
            # _ft_elem0_L)
            from ftlazy.fractal_tensor import readable_sizes
            kind = ValueError if isinstance(err, ValueError) else IndexError
            raise kind(f"{expr.what}, element {i}: {readable_sizes(err)}"
                       ) from err
    results = []
    for k in range(expr.num_outputs):
        out = expr.body.outputs[k]
        parts = [step[k] for step in per_element]
        if expr.is_jagged_output(k):
            if parts:
                results.append(np.concatenate(parts, axis=0))
            else:
                results.append(np.empty((0,) + evaluate_shape(
                    out.shape[1:], env), out.dtype))
        elif parts:
            results.append(np.stack(parts))
        else:
            # (no element: the shape of the outer sizes, ft.lengths(xs)'s)
            results.append(np.empty((0,) + evaluate_shape(out.shape, env),
                                    out.dtype))
    return tuple(results)


def jagged_result(value: Jagged, rec: Callable[[Node], Any]) -> JaggedArray:
    """A :class:`Jagged` result as a :class:`~ftlazy.JaggedArray`."""
    return JaggedArray(rec(value.values), *(rec(o) for o in value.offsets))
