# SPDX-License-Identifier: MIT
"""Loops over FractalTensors that the compiled program cannot lower,
evaluated on the host at each call.

Some constructs over FractalTensors are not lowered to kernels (a map over
documents whose lists are counted from the whole document, a scan whose
carry has the element's length, ...): lowering raises
:class:`NotImplementedError` naming the construct. Rather than refuse the
whole program, :func:`lowering_with_host_loops` finds the top-level loops
(:class:`~ftlazy.fractal.Loop` nodes outside any body) whose lowering
refuses, and replaces each of their results by a placeholder
``_ft_hostloop<j>_<k>``. At each call :class:`HostLoops` evaluates those
loops with the reference evaluator (numpy, one element at a time) from the
user's inputs and passes their results to the compiled program, which
computes everything else, as torch.compile runs the part of a program
after a graph break. :func:`ftlazy.compile` warns with
:class:`HostEvaluationWarning` naming each such loop and why; make the
warning an error (:func:`warnings.simplefilter`) to refuse instead.

.. autoclass:: HostEvaluationWarning
.. autoclass:: HostLoops
.. autofunction:: lowering_with_host_loops
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pyopencl.array as cla

from ftlazy import shapes as sh
from ftlazy.array import Array, DictOfNamedArrays, Placeholder
from ftlazy.fractal import Loop, LoopResult
from ftlazy.node import Node, topological_order
from ftlazy.transform.mappers import CopyMapper

__all__ = ["HostEvaluationWarning", "HostLoops", "lowering_with_host_loops"]


class HostEvaluationWarning(UserWarning):
    """:func:`ftlazy.compile` evaluates part of a program over
    FractalTensors on the host (numpy, element by element) at each call,
    because its lowering to kernels is not supported; the message names the
    loop and the reason. The results are those of
    :func:`ftlazy.evaluate_numpy`; only the speed differs."""


def describe_loop(loop: Loop) -> str:
    """How messages name *loop*: its kind and what it runs over (``map over
    a FractalTensor 'docs'``, ``fold over a FractalTensor 'xs'``)."""
    from ftlazy.target.jagged_inputs import fractal_tensor_label
    what = getattr(loop, "what", None)
    if what is None:    # (a loop over a dense axis)
        return f"{type(loop).__name__.lower()} of {loop.length} steps"
    labels = [fractal_tensor_label(arrays[1])
              for depth, arrays in loop.mapped_parts() if depth > 1]
    return " ".join([what] + [label for label in labels[:1] if label])


class _LoopResultsReplaced(CopyMapper):
    """The top scope with the results of the given loops replaced by
    placeholders; bodies (scopes that read outer arrays only through their
    loop's inputs) are kept."""

    def __init__(self, loops: dict[Loop, int]) -> None:
        super().__init__()
        self.loops = loops
        #: placeholder name -> the loop result it stands for
        self.results: dict[str, LoopResult] = {}
        self.placeholders: list[Placeholder] = []

    def map_loop_result(self, expr: LoopResult) -> Node:
        if expr.loop not in self.loops:
            return self.map_node(expr)
        name = f"_ft_hostloop{self.loops[expr.loop]}_{expr.index}"
        self.results[name] = expr
        self.placeholders.append(Placeholder(name, expr.shape, expr.dtype))
        return self.placeholders[-1]

    def map_body(self, body: Node) -> Node:
        return body


class HostLoops:
    """The loops of a DAG evaluated on the host (see the module docs).

    :attr roots: the DAG's roots, each loop result replaced by a placeholder.
    :attr results: placeholder name -> the :class:`~ftlazy.fractal.LoopResult`
        it stands for.
    :attr reasons: each loop -> why its lowering was refused."""

    def __init__(self, roots: dict[str, Array], reasons: dict[Loop, str],
                 inputs: list[Array]) -> None:
        """*inputs* are the input nodes of the DAG of *roots*."""
        from ftlazy.target.binding import collect_size_names
        self.reasons = reasons
        replace = _LoopResultsReplaced({loop: j for j, loop
                                        in enumerate(reasons)})
        self.roots = {name: replace(a) for name, a in roots.items()}
        self.results = replace.results
        self.placeholders = replace.placeholders
        reachable = set(topological_order(list(self.results.values())))
        #: the inputs the loops read, and the sizes of their inputs and
        #: bodies (not those the loops count)
        self._inputs = [n for n in inputs
                        if n.name is not None and n in reachable]
        self._size_names = collect_size_names(list(reasons))
        #: the sizes of the results' shapes, which the loops define where
        #: they are data-dependent (the rows of a join of filtered lists)
        self._result_sizes = {name for p in self.placeholders
                              for c in p.shape for name in sh.size_param_names(c)}

    def compute(self, given: dict[str, Any]) -> dict[str, np.ndarray]:
        """Each placeholder's value: its loop result evaluated from *given*
        (the values of the DAG's inputs; device arrays are fetched)."""
        if not self.results:
            return {}
        from ftlazy.target.binding import bind_inputs
        from ftlazy.target.numpy import NumpyEvaluator
        # (size parameters given, or inferred from the arrays' shapes)
        names = ({n.name for n in self._inputs} | self._size_names) & set(given)
        env, arrays = bind_inputs(
            self._inputs, {k: on_host(given[k]) for k in names},
            self._size_names)
        evaluator = NumpyEvaluator(env, arrays)
        evaluator.bind_derived_sizes(list(self.results.values()))
        # (the loop's tuple of results: the sizes it counts, which shape its
        # results, are bound by the compiled program from their values)
        values: dict[str, Any] = {
            name: np.asarray(evaluator.rec(result.loop)[result.index])
            for name, result in self.results.items()}
        # (data-dependent sizes of the results' shapes, which the loops'
        # inputs define: the compiled rest reads them as sizes)
        values.update((name, evaluator.env[name]) for name in self._result_sizes
                      if name in evaluator.env and name not in given)
        return values

    def described(self) -> tuple[str, ...]:
        """Each loop, named by :func:`describe_loop`."""
        return tuple(describe_loop(loop) for loop in self.reasons)

    def warn(self, stacklevel: int = 3) -> None:
        """One :class:`HostEvaluationWarning` per loop, attributed to the
        caller *stacklevel* - 1 frames up from the caller of this."""
        for loop, reason in self.reasons.items():
            warnings.warn(
                f"ft.compile: the {describe_loop(loop)} runs on the host, "
                "in numpy, element by element, at each call; the rest of the "
                f"program is compiled. Its lowering to kernels: {reason}",
                HostEvaluationWarning, stacklevel=stacklevel)


def on_host(value: Any) -> Any:
    """*value*, a device array fetched (the first phase leaves offsets and
    segment ids on the device: fetched only where the host reads them)."""
    return value.get() if isinstance(value, cla.Array) else value


def top_level_loops(roots: dict[str, Array]) -> list[Loop]:
    """The loops of *roots*' top scope, in topological order."""
    return [n for n in topological_order(list(roots.values()))
            if isinstance(n, Loop)]


def _results_of(loop: Loop) -> DictOfNamedArrays:
    return DictOfNamedArrays({f"result{k}": LoopResult(loop, k)
                              for k in range(loop.num_outputs)})


def lowering_with_host_loops(lower: Callable[[Any, dict[Loop, str]], Any],
                             result: Any, roots: dict[str, Array]) -> Any:
    """``lower(result, reasons)``, the lowering of *result* (whose roots are
    *roots*) with the loops that *reasons* names evaluated on the host:
    first with none; if that raises :class:`NotImplementedError`, with each
    top-level loop whose own results (its inputs lowered, with the loops
    before it already chosen on the host) do not lower; then with those
    among them whose host evaluation the rest needs; then with every
    top-level loop. The first lowering that succeeds is returned; if none
    does, the first refusal is raised."""
    try:
        return lower(result, {})
    except NotImplementedError as refusal:
        first = refusal
    refused: dict[Loop, str] = {}
    loops = top_level_loops(roots)
    for loop in loops:
        try:
            lower(_results_of(loop), dict(refused))
        except NotImplementedError as err:
            refused[loop] = str(err)
    attempts = []
    if refused:
        # (a loop may refuse alone and lower with its consumers, e.g. lists
        # counted in a map's body that the next map zips: kept compiled)
        needed = dict(refused)
        for loop in list(refused):
            fewer = {k: v for k, v in needed.items() if k is not loop}
            if not fewer:
                continue    # (with none on the host: the first refusal)
            try:
                lower(result, fewer)
            except NotImplementedError:
                continue
            needed = fewer
        attempts.append(needed)
    attempts.append({loop: refused.get(loop, str(first)) for loop in loops})
    for reasons in attempts:
        if not reasons:
            continue
        try:
            return lower(result, reasons)
        except NotImplementedError:
            continue
    raise first
