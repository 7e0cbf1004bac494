# SPDX-License-Identifier: MIT
"""The first phase of a compiled program over FractalTensors whose sizes
depend on what maps compute: those maps, and the running sums and segment
ids over their results, computed on the device before the second phase.

The host computes data-dependent sizes and host index arrays (see
:mod:`ftlazy.target.loopy.jagged_program`) with the reference evaluator.
Where they read results of maps over FractalTensors (each element's count
of a list computed in a map's body, the per-row lengths of a selection in
it: :mod:`ftlazy.transform.jagged_counted`; the mask of ``ft.filter`` over a
FractalTensor's elements), evaluating those maps element by element on the
host would cost more than the whole compiled program. :class:`FirstPhase`
compiles them into one program of their own (lazily, at the first call)
and runs it on the device.

Where every host node of the DAG is a running sum of lengths
(``offsets``), the segment ids of offsets, or a size read from such
offsets, and what they read compiles (no other host node), the first
phase computes all of them on the device (:class:`_DevicePlan`): its
program returns each running sum (a scan, :func:`running_offsets`) and,
in one small array read back to the host, each data-dependent size, the
length of each segment-id array and a count of negative lengths; a second
kernel writes each row's segment id from the offsets
(:func:`_segment_ids`). The offsets and segment ids stay on the device as
inputs of the second phase, the program itself; the host fetches only
those its own derivations read. Otherwise the first phase returns the map
results to the host, whose evaluator computes the rest; a first phase that
cannot be compiled (a depth-3 map) is evaluated on the host as before.

.. autoclass:: FirstPhase
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import numpy as np
import pymbolic.primitives as prim
import pyopencl as cl
import pyopencl.array as cla

from ftlazy import shapes as sh
from ftlazy.array import Array, DictOfNamedArrays, IndexLambda
from ftlazy.fractal import LoopResult
from ftlazy.fractal_access import (
    DERIVED_SIZE_PREFIX, DerivedSize, HostIndexArray)
from ftlazy.fractal_nested import running_offsets
from ftlazy.fractal_tensor import JaggedInputPart, JaggedMap
from ftlazy.node import Node, topological_order
from ftlazy.scalar_expr import index_var
from ftlazy.transform.jagged_counted import last_entry_of
from ftlazy.transform.mappers import CopyMapper

__all__ = ["FirstPhase"]

_INT64 = np.dtype(np.int64)


def _host_nodes(order: list[Any]) -> list[Array]:
    return [n for n in order if isinstance(n, (DerivedSize, HostIndexArray))]


def _first_phase_results(order: list[Any]) -> list[LoopResult]:
    """The results of maps over FractalTensors that the data-dependent
    sizes and host index arrays among *order* (a topological order) read."""
    host = _host_nodes(order)
    read = [n.value for n in host if isinstance(n, DerivedSize)]
    read += [a for n in host if isinstance(n, HostIndexArray) for a in n.args]
    return [n for n in topological_order(read)
            if isinstance(n, LoopResult) and isinstance(n.loop, JaggedMap)]


# {{{ running sums, sizes and segment ids on the device

class _RunningSums(CopyMapper):
    """Each ``offsets`` host index array as the running sum of its lengths
    (a scan the device runs); :meth:`total` is their sum."""

    def map_host_index_array(self, expr: HostIndexArray) -> Node:
        assert expr.op == "offsets"
        return running_offsets(self.rec(expr.args[0]))

    def total(self, offsets: HostIndexArray) -> Array:
        # (a reduction: the last entry of a scan's output is not proved in
        # bounds by loopy)
        from ftlazy.ops import sum as total
        return total(self.rec(offsets.args[0]))


def _last(array: Array) -> Array:
    """The last entry of the 1-D *array* as a reduction (see above)."""
    from ftlazy.ops import sum as total
    last = sh.to_affine(sh.sub(array.shape[0], 1)).to_expr()
    p = index_var(0)
    return total(IndexLambda(
        prim.If(prim.Comparison(p, "==", last), prim.Variable("_in0")[p], 0),
        array.shape, array.dtype, {"_in0": array}))


def _compiles(array: Array, offsets: set[Node]) -> bool:
    """Whether *array* reads no host node but the ``offsets`` nodes
    *offsets* and no shape of it depends on a data-dependent size."""
    for n in topological_order([array]):
        if isinstance(n, (DerivedSize, HostIndexArray)) and n not in offsets:
            return False
        if any(name.startswith(DERIVED_SIZE_PREFIX)
               for c in getattr(n, "shape", ()) for name in
               sh.size_param_names(c)):
            return False
    return True


class _DevicePlan:
    """The program computing every host node of a DAG on the device (see
    the module docs); :attr:`ok` False where one does not compile."""

    def __init__(self, order: list[Any]) -> None:
        host = _host_nodes(order)
        self.offsets = [n for n in host if isinstance(n, HostIndexArray)
                        and n.op == "offsets"]
        self.ids = [n for n in host if isinstance(n, HostIndexArray)
                    and n.op == "segment_ids"]
        self.sizes = [n for n in host if isinstance(n, DerivedSize)]
        done = set(self.offsets)
        read = ([n.args[0] for n in self.offsets + self.ids]
                + [n.value for n in self.sizes])
        self.ok = (len(self.offsets) + len(self.ids) + len(self.sizes)
                   == len(host) and all(_compiles(a, done) for a in read))

    def outputs(self) -> DictOfNamedArrays:
        """The first phase's program: ``offsets<k>`` and ``ids_from<k>``
        (the offsets of segment-id array ``k``) per node, and ``scalars``:
        the sizes, the segment-id counts and the negative-length counts."""
        from ftlazy.ops import stack, sum as total
        sums = _RunningSums()
        outputs: dict[str, Array] = {}
        scalars = [sums(n.value) if last_entry_of(n.value) is None
                   else sums.total(last_entry_of(n.value)) for n in self.sizes]
        for k, n in enumerate(self.ids):
            offsets = n.args[0]
            outputs[f"ids_from{k}"] = sums(offsets)
            scalars.append(sums.total(offsets) if offsets in self.offsets
                           else _last(sums(offsets)))
        for k, n in enumerate(self.offsets):
            outputs[f"offsets{k}"] = sums(n)
            scalars.append(total((sums(n.args[0]) < 0).astype(_INT64)))
        outputs["scalars"] = stack([s.astype(_INT64) for s in scalars])
        return DictOfNamedArrays(outputs)

    def seed(self, out: dict[str, Any], queue: cl.CommandQueue,
             cache: dict[Array, Any]) -> None:
        """Puts the device's results *out* into *cache*: the sizes (read
        back), the offsets and segment ids (device arrays)."""
        scalars = out["scalars"].get()
        n_sizes, n_ids = len(self.sizes), len(self.ids)
        for k, n in enumerate(self.offsets):
            if scalars[n_sizes + n_ids + k]:
                # (the host's running sum names the negative entry)
                n.compute([np.diff(out[f"offsets{k}"].get())], {})
            cache[n] = out[f"offsets{k}"]
        for n, value in zip(self.sizes, scalars):
            cache[n.value] = np.int64(value)
        for k, n in enumerate(self.ids):
            cache[n] = _segment_ids(queue, out[f"ids_from{k}"],
                                    int(scalars[n_sizes + k]))


@lru_cache(maxsize=8)
def _ids_kernel(context: cl.Context) -> Any:
    from pyopencl.elementwise import ElementwiseKernel
    return ElementwiseKernel(
        context, "const long *offsets, long *ids",
        "for (long j = offsets[i]; j < offsets[i + 1]; ++j) ids[j] = i;",
        name="ft_segment_ids")


def _segment_ids(queue: cl.CommandQueue, offsets: Any, total: int) -> Any:
    """For each row ``p < total`` the ``e`` with ``offsets[e] <= p <
    offsets[e + 1]``, written on the device (one work item per segment)."""
    ids = cla.empty(queue, (total,), _INT64)
    segments = offsets.shape[0] - 1
    if total and segments:
        _ids_kernel(queue.context)(offsets, ids, range=slice(segments),
                                   queue=queue)
    return ids

# }}}


def _whole(inputs: list[Any], given: dict[str, Any]) -> dict[str, Any]:
    """*given* (the second phase's inputs, FractalTensors as their parts,
    already checked) with each FractalTensor of *inputs* whole again, so
    that the first phase neither checks nor copies it again."""
    from ftlazy.jagged import JaggedArray
    from ftlazy.target.jagged_inputs import jagged_parts
    given = dict(given)
    for name, parts in jagged_parts(inputs).items():
        depth = next(t.depth for p in parts.values() for t in p.tags
                     if isinstance(t, JaggedInputPart))
        names = [f"{name}_values"] + [f"{name}_offsets{k}"
                                      for k in range(depth - 1)]
        if all(n in given for n in names):
            values, *offsets = (given.pop(n) for n in names)
            given[name] = JaggedArray._trusted(values, tuple(offsets))
    return given


class _DeviceOutputs:
    """A compiled function's program called with device results."""

    def __init__(self, compiled: Any) -> None:
        self.program, self.queue = compiled.program, compiled.queue

    def __call__(self, /, **inputs: Any) -> dict[str, Any]:
        return self.program._run(self.queue, inputs, out_host=False)[1]


class FirstPhase:
    """The map results that the host's derivations read (see the module
    docs), compiled and computed before them."""

    def __init__(self, order: list[Any]) -> None:
        self.results = _first_phase_results(order)
        self._plan = _DevicePlan(order) if self.results else None
        self._compiled: Any = None
        self._queue: Any = None
        self._failed = not self.results

    def _program(self) -> Any:
        if self._compiled is None and not self._failed:
            if self._plan is not None and self._plan.ok:
                self._compiled = self._compile(self._plan.outputs(), True)
                if self._compiled is not None:
                    return self._compiled
                self._plan.ok = False
            self._compiled = self._compile(DictOfNamedArrays({
                f"first{k}": r for k, r in enumerate(self.results)}), False)
            self._failed = self._compiled is None
        return self._compiled

    def _compile(self, outputs: DictOfNamedArrays, on_device: bool) -> Any:
        from ftlazy.target.loopy.program import compile
        try:
            compiled = compile(outputs)
        except NotImplementedError:
            return None
        if on_device:
            # (the dense program's results stay on the device)
            inner = getattr(compiled, "inner", compiled)
            self._queue = inner.queue
            device = _DeviceOutputs(inner)
            if inner is compiled:
                compiled = device
            else:
                compiled.inner = device
        return compiled

    def seed(self, cache: dict[Array, Any], given: dict[str, Any]) -> None:
        """Puts the first phase's values for *given* (the program's inputs,
        by name) into *cache* (a reference evaluator's, by node)."""
        program = self._program()
        if program is None:
            return
        lowering = program.lowering
        out = program(**_whole(lowering.input_nodes, {
            k: v for k, v in given.items() if k in lowering.user_names}))
        if self._plan is not None and self._plan.ok:
            self._plan.seed(out, self._queue, cache)
            return
        for k, r in enumerate(self.results):
            cache[r] = np.asarray(out[f"first{k}"])
