# SPDX-License-Identifier: MIT
"""The first phase of a compiled program over FractalTensors whose sizes
depend on what maps compute: those maps, compiled and run before the host
derives the sizes.

The host computes data-dependent sizes and host index arrays (see
:mod:`ftlazy.target.loopy.jagged_program`) with the reference evaluator.
Where they read results of maps over FractalTensors (each element's count
of a list computed in a map's body, the per-row lengths of a selection in
it: :mod:`ftlazy.transform.jagged_counted`; the mask of ``ft.filter`` over a
FractalTensor's elements), evaluating those maps element by element on the
host would cost more than the whole compiled program. :class:`FirstPhase`
compiles them into one program of their own (lazily, at the first call),
runs it on the device, and hands the results to the host's evaluator,
which then computes only the running sums, segment ids and totals, and
reads the totals back to size the second phase, the program itself. A
first phase that cannot be compiled (a depth-3 map) is evaluated on the
host as before.

.. autoclass:: FirstPhase
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ftlazy.array import Array, DictOfNamedArrays
from ftlazy.fractal import LoopResult
from ftlazy.fractal_access import DerivedSize, HostIndexArray
from ftlazy.fractal_tensor import JaggedMap
from ftlazy.node import topological_order

__all__ = ["FirstPhase"]


def _first_phase_results(order: list[Any]) -> list[LoopResult]:
    """The results of maps over FractalTensors that the data-dependent
    sizes and host index arrays among *order* (a topological order) read."""
    host = [n for n in order if isinstance(n, (DerivedSize, HostIndexArray))]
    read = [n.value for n in host if isinstance(n, DerivedSize)]
    read += [a for n in host if isinstance(n, HostIndexArray) for a in n.args]
    return [n for n in topological_order(read)
            if isinstance(n, LoopResult) and isinstance(n.loop, JaggedMap)]


class FirstPhase:
    """The map results that the host's derivations read (see the module
    docs), compiled and computed before them."""

    def __init__(self, order: list[Any]) -> None:
        self.results = _first_phase_results(order)
        self._compiled: Any = None
        self._failed = not self.results

    def _program(self) -> Any:
        if self._compiled is None and not self._failed:
            from ftlazy.target.loopy.program import compile
            try:
                self._compiled = compile(DictOfNamedArrays({
                    f"first{k}": r for k, r in enumerate(self.results)}))
            except NotImplementedError:
                self._failed = True
        return self._compiled

    def seed(self, cache: dict[Array, Any], given: dict[str, Any]) -> None:
        """Puts the first phase's values for *given* (the program's inputs,
        by name) into *cache* (a reference evaluator's, by node)."""
        program = self._program()
        if program is None:
            return
        names = program.lowering.user_names
        out = program(**{k: v for k, v in given.items() if k in names})
        for k, r in enumerate(self.results):
            cache[r] = np.asarray(out[f"first{k}"])
