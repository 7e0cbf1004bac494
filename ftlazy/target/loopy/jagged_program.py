# SPDX-License-Identifier: MIT
"""Compiled programs over FractalTensors: the DAG's maps over jagged data
are lowered to dense nodes over the packed values
(:mod:`ftlazy.transform.jagged_lowering`) and compiled as any DAG; each
call splits the jagged inputs into values and offsets, computes on the host
what the lowering asked for (segment ids, largest extents, checks of
zipped offsets) and rebuilds :class:`~ftlazy.JaggedArray` results."""

from __future__ import annotations

from typing import Any

import numpy as np

from ftlazy.array import Array, DictOfNamedArrays, Placeholder
from ftlazy.fractal_tensor import Jagged, JaggedInputPart, JaggedMap
from ftlazy.jagged import JaggedArray
from ftlazy.node import Node, topological_order
from ftlazy.target.binding import collect_inputs, collect_size_names
from ftlazy.target.jagged_inputs import check_zipped, expand_jagged_inputs
from ftlazy.transform.jagged_lowering import HostDerivations, lower_jagged_maps


def _roots(result: Any) -> dict[str, Array]:
    if isinstance(result, Jagged):
        return {"values": result.values} | {
            f"offsets{k}": o for k, o in enumerate(result.offsets)}
    if isinstance(result, DictOfNamedArrays):
        return dict(result.items())
    return {"result": result}


#: results already looked at -> their lowering (None: no jagged data), so
#: that compiling a result again walks its DAG no more (bounded)
_LOWERINGS: dict[Node, _Lowering | None] = {}
_CACHE_LIMIT = 256


def _reads_jagged_data(result: Any) -> bool:
    if isinstance(result, Jagged):
        return True
    for n in topological_order(list(_roots(result).values())):
        if isinstance(n, JaggedMap) or (isinstance(n, Placeholder) and any(
                isinstance(t, JaggedInputPart) for t in n.tags)):
            return True
    return False


class _Lowering:
    """A jagged result lowered to dense nodes, and the names of its inputs."""

    def __init__(self, result: Any) -> None:
        roots = _roots(result)
        self.input_nodes = collect_inputs(roots.values())
        lowered, self.host = lower_jagged_maps(roots)
        self.dense = DictOfNamedArrays(lowered)
        #: what the user may pass, and what the dense program reads
        self.user_names = ({n.name for n in self.input_nodes if n.name}
                           | collect_size_names(roots.values()))
        self.dense_names = ({n.name for n in collect_inputs(lowered.values())
                             if n.name} | collect_size_names(lowered.values()))


def jagged_lowering(result: Any) -> _Lowering | None:
    """The lowering of *result* if it is a FractalTensor or its DAG reads
    one, else None (cached per result node)."""
    if not isinstance(result, (Array, DictOfNamedArrays, Jagged)):
        return None
    if result not in _LOWERINGS:
        if len(_LOWERINGS) >= _CACHE_LIMIT:
            _LOWERINGS.pop(next(iter(_LOWERINGS)))
        _LOWERINGS[result] = (_Lowering(result) if _reads_jagged_data(result)
                              else None)
    return _LOWERINGS[result]


class JaggedCompiledFunction:
    """``f(**inputs)`` for a DAG over FractalTensors (see the module docs);
    FractalTensor results come back as :class:`~ftlazy.JaggedArray`."""

    def __init__(self, result: Any, lowering: _Lowering,
                 compile_dense: Any) -> None:
        self.result = result
        self.lowering = lowering
        self.inner = compile_dense(lowering.dense)

    @property
    def source(self) -> str:
        return self.inner.source

    @property
    def plan(self) -> Any:
        return self.inner.plan

    @property
    def timings(self) -> Any:
        return self.inner.timings

    @property
    def from_cache(self) -> bool:
        return self.inner.from_cache

    def __call__(self, /, **inputs: Any) -> Any:
        lowering = self.lowering
        given = expand_jagged_inputs(lowering.input_nodes, inputs)
        unknown = set(given) - lowering.user_names - lowering.dense_names
        if unknown:
            raise ValueError(f"unexpected input(s) {sorted(unknown)}: the "
                             f"program's inputs are {sorted(lowering.user_names)}")
        derived = _derive(lowering.host, given)
        kernel_inputs = {k: v for k, v in given.items()
                         if k in lowering.dense_names}
        out = self.inner(**kernel_inputs, **derived)
        if isinstance(self.result, Jagged):
            return JaggedArray(out["values"], *(
                out[f"offsets{k}"] for k in range(self.result.depth - 1)))
        if isinstance(self.result, DictOfNamedArrays):
            return out
        return out["result"]


def _evaluate(node: Array, given: dict[str, Any], cache: dict) -> np.ndarray:
    """*node* (offsets, computed from inputs only) evaluated on the host."""
    if node not in cache:
        from ftlazy.target.numpy import evaluate_numpy
        needed = {n.name for n in collect_inputs([node]) if n.name is not None}
        cache[node] = np.asarray(evaluate_numpy(
            node, **{k: v for k, v in given.items() if k in needed}))
    return cache[node]


def _extents(offsets: np.ndarray, form: tuple[int, int]) -> np.ndarray:
    const, coeff = form
    return const + coeff * np.diff(offsets)


def _derive(host: HostDerivations, given: dict[str, Any]) -> dict[str, Any]:
    if host.empty:
        return {}
    cache: dict[Node, np.ndarray] = {}
    for offsets_nodes, dense in host.zipped:
        mapped = [(2, [None, _evaluate(o, given, cache)]) for o in offsets_nodes]
        mapped += [(1, [_evaluate(a, given, cache)]) for a in dense]
        check_zipped("map over a FractalTensor", mapped)
    derived: dict[str, Any] = {}
    for name, (offsets, form) in host.segment_ids.items():
        extents = _extents(_evaluate(offsets, given, cache), form)
        if extents.size and extents.min() < 0:
            raise ValueError(_negative_message(extents, form))
        derived[name] = np.repeat(np.arange(len(extents), dtype=np.int64), extents)
    for name, (offsets, form) in host.max_extents.items():
        extents = _extents(_evaluate(offsets, given, cache), form)
        # (at least 1: a max or min over no step is refused by the size
        # checks, even when no element would run it)
        derived[name] = int(max(extents.max(initial=0), 1))
    for offsets, form, op in host.nonempty:
        extents = _extents(_evaluate(offsets, given, cache), form)
        if extents.size and extents.min() <= 0:
            i = int(np.argmin(extents))
            raise ValueError(
                f"map over a FractalTensor, element {i}: zero-size array to "
                f"reduction operation {'maximum' if op == 'max' else 'minimum'} "
                "which has no identity")
    return derived


def _negative_message(extents: np.ndarray, form: tuple[int, int]) -> str:
    i = int(np.argmin(extents))
    const, coeff = form
    return (f"map over a FractalTensor, element {i}: an array of the body has "
            f"{extents[i]} rows ({coeff}*L + {const} with L = "
            f"{(extents[i] - const) // coeff if coeff else '?'}), which is negative: "
            "an index or slice assumed a longer element")
