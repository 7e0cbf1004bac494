# SPDX-License-Identifier: MIT
"""A scan's or fold's step reading a FractalTensor's element at the step's
index, as a zip with the elements it reads.

Users of JAX's ``fori_loop`` write a loop over a list by index::

    ft.fold(lambda h, t: step(h, xs[t]), ft.arange(xs.length), h0)

``xs[t]`` has a data-dependent length, defined in the step's body per
step, which a compiled program cannot compute (it would run on the host).
The step reads one element per step, so the loop is a loop over those
elements: :func:`zipped_step_reads` rebuilds it, when ``ft.scan``,
``ft.fold`` or ``ft.reduce`` is traced, as the same loop over a list of
the read elements zipped with its sequences (a loop over the outer list
of a FractalTensor, :mod:`ftlazy.jagged_scan_outer`), whose step replays
the traced body with the read element replaced by the new element (and
its length by the new element's). Both evaluators run the rebuilt loop.

The list is ``xs`` itself where the index is the step's own (the loop is
over ``ft.arange(n)``, ``n`` proved equal to ``xs``'s length); for any
other index computed from the step's elements and arrays captured from
outside (``ft.maximum(t - 1, 0)``, ``perm[t]``), it is ``ft.gather(xs,
J)``, ``J`` the index computed for every step first by a map over the
loop's sequences. An index out of range raises :class:`IndexError` at run
time, as the reference does. A step that reads elements of two lists, or
of one list at two indices, reads elements of different lengths, which the
elements of one loop over FractalTensors cannot have (they share their
sizes); such steps, reads whose index uses a carry or a size or index
computed in the body, and reads of depth-3 FractalTensors (whose element
is a FractalTensor) are left as they are (a loop that runs on the host
when compiled).

.. autofunction:: zipped_step_reads
"""

from __future__ import annotations

from typing import Any

from ftlazy import shapes as sh
from ftlazy.array import Array
from ftlazy.fractal import BodyParam, Scan, tree_flatten, tree_unflatten
from ftlazy.node import topological_order

__all__ = ["zipped_step_reads"]


def _step_reads(loop: Scan) -> dict[Array, tuple[BodyParam, BodyParam, Array]]:
    """The element reads in *loop*'s body (its top scope) of a depth-2
    FractalTensor the loop captured, at an index computed without its
    carries or the body's host values: read -> (values param, offsets
    param, index)."""
    from ftlazy.transform.jagged_element_reads import captured_element_reads
    carries = {id(p) for p in loop.body.params[:loop.num_carries]}
    return {node: found for node, found in captured_element_reads(
                loop.body, loop.num_carries + loop.num_scanned).items()
            if not any(id(n) in carries for n in topological_order([found[2]]))}


def _own_index(loop: Scan, index: Array) -> bool:
    """Whether *index* is the step's element of a sequence that is
    ``arange(n)`` (the step's own index)."""
    from ftlazy.transform.jagged_element_reads import _is_own_index
    params = loop.body.params[loop.num_carries:
                              loop.num_carries + loop.num_scanned]
    return any(index is p and _is_own_index(seq)
               for p, seq in zip(params, loop.scanned))


def _read_list(loop: Scan, values: BodyParam, offsets: BodyParam,
               index: Array) -> Any:
    """The list whose element ``t`` the step ``t`` reads as
    ``xs[index]``, *xs* the FractalTensor of the captured *values* and
    *offsets* (see the module docs)."""
    from ftlazy.fractal import map as ft_map
    from ftlazy.fractal_access import elements_at
    from ftlazy.fractal_tensor import Jagged
    from ftlazy.transform.batch import batch_maps
    from ftlazy.transform.jagged_element_reads import BodyReplay
    params = loop.body.params
    first = loop.num_carries + loop.num_scanned
    outer = dict(zip(params[first:], loop.captured))
    xs = Jagged(outer[values], (outer[offsets],))
    if _own_index(loop, index) and sh.prove_equal(xs.length, loop.length):
        return xs

    def index_of(*rows: Any) -> Array:
        return BodyReplay({**dict(zip(params[loop.num_carries:first], rows)),
                           **outer})(index)

    steps = ft_map(index_of, *loop.scanned)
    try:
        # (batched into dense nodes: the host that checks the indices
        # computes them vectorized, not step by step)
        steps = batch_maps(steps)
    except NotImplementedError:
        pass
    return elements_at(xs, steps)


def zipped_step_reads(loop: Scan, init_structure: Any, what: str) -> Any:
    """The results of *loop* (a ``scan``, ``fold`` or ``reduce``, as
    *what* names it, whose carries have *init_structure*) rebuilt as a loop
    over the FractalTensor elements its step reads, zipped with its
    sequences (see the module docs); None where its step reads none, or
    elements of two lists or at two indices."""
    from ftlazy.fractal_access import element_read_length, read_replacements
    from ftlazy.jagged_scan_outer import jagged_scan
    from ftlazy.transform.jagged_element_reads import BodyReplay
    reads = _step_reads(loop)
    if len(set(reads.values())) != 1:
        # (the elements of a loop over FractalTensors share their lengths:
        # two lists, or one at two indices, would need one each)
        return None
    elements = _read_list(loop, *next(iter(reads.values())))
    # (each read, and its length where the body uses it as a value)
    lengths = {read: element_read_length(read) for read in reads}
    lengths = {read: n for read, n in lengths.items() if n is not None}
    params = loop.body.params
    carries = params[:loop.num_carries]
    first = loop.num_carries + loop.num_scanned
    # (sequences that the step reads besides the reads' indices)
    used = {id(n) for n in topological_order(
        list(loop.body.outputs), skip=set(reads) | set(lengths.values()))}
    kept = [(p, seq) for p, seq in zip(params[loop.num_carries:first],
                                       loop.scanned) if id(p) in used]

    def step(carry: Any, x: tuple) -> Any:
        element, rows = x[0], x[1:]
        replace: dict[Any, Any] = dict(zip(carries, tree_flatten(carry)[0]))
        replace.update((p, row) for (p, _), row in zip(kept, rows))
        replace.update(zip(params[first:], loop.captured))
        read_replace, renames = read_replacements(reads, element)
        replace.update(read_replace)
        replay = BodyReplay(replace, renames)
        return tree_unflatten([replay(o) for o in loop.body.outputs],
                              init_structure)

    init = tree_unflatten(list(loop.inits), init_structure)
    return jagged_scan(step, (elements, *(seq for _, seq in kept)), init,
                       loop.keep_all, what)
