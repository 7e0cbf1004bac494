# SPDX-License-Identifier: MIT
"""A scan's, fold's or map's step reading a FractalTensor's element (or
its length) at the step's index, as a zip with the elements it reads.

Users of JAX's ``fori_loop`` write a loop over a list by index::

    ft.fold(lambda h, t: step(h, xs[t]), ft.arange(xs.length), h0)
    ft.map(lambda i: encode(xs[i]), ft.arange(xs.length))

``xs[t]`` has a data-dependent length, defined in the step's body per
step, which a compiled program cannot compute (it would run on the host).
The step reads one element per step, so the loop is a loop over those
elements: :func:`zipped_step_reads` rebuilds it, when ``ft.scan``,
``ft.fold``, ``ft.reduce`` or ``ft.map`` is traced, as the same loop over
a list of the read elements zipped with its sequences (a loop over the
outer list of a FractalTensor, :mod:`ftlazy.jagged_scan_outer`, or a map
over it), whose step replays the traced body with the read element
replaced by the new element (and its length by the new element's). Both
evaluators run the rebuilt loop. (A map's results of the element's length,
``xs[i] * 2``, are then FractalTensors, as a map over the list gives.)

The list is ``xs`` itself where the index is the step's own (the loop is
over ``ft.arange(n)``, ``n`` proved equal to ``xs``'s length); for any
other index computed from the step's elements and arrays captured from
outside (``ft.maximum(t - 1, 0)``, ``perm[t]``), it is ``ft.gather(xs,
J)``, ``J`` the index computed for every step first by a map over the
loop's sequences. An index out of range raises :class:`IndexError` at run
time, as the reference does.

A step that reads elements of two lists, or of one list at two indices,
reads elements of different lengths, which the elements of one loop over
FractalTensors cannot have (they share their sizes). Where the step uses
all but one of them only through arrays of a static shape computed from
them (and from its sequences and captured arrays, not from its carries:
``ft.sum(ys[t], axis=0)``, an attention of ``ys[t]`` to a fixed query),
those arrays are computed first, for every step, by a map over the
elements read (:func:`_rows_per_step`), and the loop is rebuilt over the
one element left with them zipped as dense sequences. A length read
alone (``xs[t].shape[0]`` as a value, the element itself not read) is such
an array too, computed from the offsets for every step; a step that reads
only lengths becomes a dense loop over them. Other such steps,
reads whose index uses a carry or a size or index computed in the body,
and reads of depth-3 FractalTensors (whose element is a FractalTensor)
are left as they are (a loop that runs on the host when compiled).

.. autofunction:: zipped_step_reads
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pymbolic.primitives as prim

from ftlazy import shapes as sh
from ftlazy.array import Array
from ftlazy.fractal import (
    Body, BodyParam, Map, Scan, tree_flatten, tree_unflatten)
from ftlazy.node import Node, iter_children, topological_order
from ftlazy.scalar_expr import index_var
from ftlazy.shapes import ShapeComponent

__all__ = ["zipped_step_reads"]


@dataclass(frozen=True)
class _Steps:
    """A scan (or fold) or a map, as this module reads it: a map is a loop
    with no carries whose sequences are the mapped arrays."""

    body: Body
    num_carries: int
    scanned: tuple[Array, ...]
    captured: tuple[Array, ...]
    length: ShapeComponent

    @staticmethod
    def of(loop: Scan | Map) -> "_Steps":
        if isinstance(loop, Scan):
            return _Steps(loop.body, loop.num_carries, loop.scanned,
                          loop.captured, loop.length)
        return _Steps(loop.body, 0, loop.mapped, loop.captured, loop.length)

    @property
    def num_scanned(self) -> int:
        return len(self.scanned)


def _step_reads(loop: _Steps) -> dict[Array, tuple]:
    """The element reads in *loop*'s body (its top scope) of a depth-2
    FractalTensor the loop captured, at an index computed without its
    carries or the body's host values: read -> (values param, offsets
    param, index); and the reads of an element's length alone
    (``xs[t].shape[0]`` as a value, the element itself not read): length
    -> (None, offsets param, index)."""
    from ftlazy.fractal_access import element_length_read, element_read_length
    from ftlazy.transform.jagged_element_reads import (
        _reads_host_values, captured_element_reads)
    carries = {id(p) for p in loop.body.params[:loop.num_carries]}
    first = loop.num_carries + loop.num_scanned

    def carry_free(index: Array) -> bool:
        return not any(id(n) in carries for n in topological_order([index]))

    reads: dict[Array, tuple] = {
        node: found for node, found in captured_element_reads(
            loop.body, first).items() if carry_free(found[2])}
    covered = {element_read_length(read) for read in reads}
    captured = set(loop.body.params[first:])
    for n in topological_order(list(loop.body.outputs)):
        found = element_length_read(n) if isinstance(n, Array) else None
        if (found is not None and n not in covered and found[0] in captured
                and carry_free(found[1]) and not _reads_host_values(found[1])):
            reads[n] = (None, *found)
    return reads


def _own_index(loop: _Steps, index: Array) -> bool:
    """Whether *index* is the step's element of a sequence that is
    ``arange(n)`` (the step's own index)."""
    from ftlazy.transform.jagged_element_reads import _is_own_index
    params = loop.body.params[loop.num_carries:
                              loop.num_carries + loop.num_scanned]
    return any(index is p and _is_own_index(seq)
               for p, seq in zip(params, loop.scanned))


def _outer(loop: _Steps) -> dict[BodyParam, Array]:
    """The arrays the loop captured, by their parameters in its body."""
    first = loop.num_carries + loop.num_scanned
    return dict(zip(loop.body.params[first:], loop.captured))


def _indices_per_step(loop: _Steps, index: Array) -> Array:
    """*index* (computed in the step from its sequences and captured
    arrays) for every step, by a map over the loop's sequences."""
    from ftlazy.fractal import map as ft_map
    from ftlazy.transform.batch import batch_maps
    from ftlazy.transform.jagged_element_reads import BodyReplay
    params = loop.body.params
    first = loop.num_carries + loop.num_scanned
    outer = _outer(loop)

    def index_of(*rows: Any) -> Array:
        return BodyReplay({**dict(zip(params[loop.num_carries:first], rows)),
                           **outer})(index)

    steps = ft_map(index_of, *loop.scanned)
    try:
        # (batched into dense nodes: the host that checks the indices
        # computes them vectorized, not step by step)
        return batch_maps(steps)
    except NotImplementedError:
        return steps


def _read_list(loop: _Steps, values: BodyParam, offsets: BodyParam,
               index: Array) -> Any:
    """The list whose element ``t`` the step ``t`` reads as
    ``xs[index]``, *xs* the FractalTensor of the captured *values* and
    *offsets* (see the module docs)."""
    from ftlazy.fractal_access import elements_at
    from ftlazy.fractal_tensor import Jagged
    outer = _outer(loop)
    xs = Jagged(outer[values], (outer[offsets],))
    if _own_index(loop, index) and sh.prove_equal(xs.length, loop.length):
        return xs
    return elements_at(xs, _indices_per_step(loop, index))


def _lengths_per_step(loop: _Steps, offsets: BodyParam, index: Array
                      ) -> Array:
    """The length of the element that step ``t`` reads as
    ``xs[index].shape[0]``, for every step: ``(n,)``."""
    from ftlazy.fractal_access import _lam, element_lengths_at
    o = _outer(loop)[offsets]
    if _own_index(loop, index) and sh.prove_equal(sh.sub(o.shape[0], 1),
                                                  loop.length):
        p, old = index_var(0), prim.Variable("_in0")
        return _lam(old[p + 1] - old[p], (loop.length,), np.int64,
                    {"_in0": o})
    return element_lengths_at(o, _indices_per_step(loop, index))


def _grouped(reads: dict[Array, tuple]) -> dict[tuple, list[Array]]:
    """The *reads* by what they read: ``(values, offsets, index)`` -> the
    nodes that read it."""
    groups: dict[tuple, list[Array]] = {}
    for read, found in reads.items():
        groups.setdefault(found, []).append(read)
    return groups


def names_in_bodies(n: Node) -> set[str]:
    """The sizes that the nodes of *n*'s loop bodies (nested ones too) use
    by name."""
    from ftlazy.fractal_element_views import _names_used
    names: set[str] = set()
    for field in getattr(n, "_body_fields", ()):
        for m in topological_order(list(getattr(n, field).outputs)):
            names |= _names_used(m) | names_in_bodies(m)
    return names


def _static_rows(loop: _Steps, groups: dict[tuple, list[Array]],
                 kept: tuple) -> dict[tuple, list[Array]] | None:
    """For each group of reads but *kept*: the arrays of a static shape
    computed from its reads alone (with the step's sequences and captured
    arrays) that the rest of the step reads, or returns. None where a
    group's reads, or their lengths, are used otherwise (with a carry,
    with another group's reads, in a shape)."""
    from ftlazy.fractal_access import (
        DerivedSize, element_read_length, is_static_row)
    from ftlazy.fractal_element_views import _names_used
    carries = {id(p) for p in loop.body.params[:loop.num_carries]}
    source: dict[Node, Any] = {}
    lengths: dict[str, Any] = {}
    elements = set()
    for key, nodes in groups.items():
        for read in nodes:
            source[read] = key
            if key[0] is None:
                continue    # (a length alone)
            elements.add(read)
            lengths[read.shape[0].name] = key
            value = element_read_length(read)
            if value is not None:
                source[value] = key
    outputs = list(loop.body.outputs)
    # (the names of lengths read alone, in shapes: ft.ones(xs[t].shape[0]))
    lengths.update((n.name, source[n.value])
                   for n in topological_order(outputs)
                   if isinstance(n, DerivedSize) and n.value in source)
    # (what each node is computed from: groups, and the carries as None)
    origin: dict[Node, frozenset] = {}
    for n in topological_order(outputs):
        if n in source:
            origin[n] = frozenset({source[n]})
            continue
        found = {lengths[name] for name in (_names_used(n)
                                            | names_in_bodies(n)) & set(lengths)}
        if id(n) in carries:
            found.add(None)
        for c in iter_children(n):
            found |= origin[c]
        origin[n] = frozenset(found)
    rows: dict[tuple, list[Array]] = {key: [] for key in groups if key != kept}
    for n in topological_order(outputs):
        users = [c for c in iter_children(n) if len(origin[n]) > 1]
        for c in users + [o for o in outputs if o is n]:
            (key,) = origin[c] if len(origin[c]) == 1 else (None,)
            if key in rows and c not in rows[key]:
                rows[key].append(c)
    if any(not found or any(f in elements or not is_static_row(f)
                            for f in found) for found in rows.values()):
        return None
    return rows


def _rows_per_step(loop: _Steps, key: tuple, reads: list[Array],
                   rows: list[Array], what: str) -> tuple[Array, ...]:
    """The arrays *rows*, computed from the *reads* of the element *key*,
    for every step at once: a map over the elements the steps read, zipped
    with the loop's sequences; each ``(n, *row.shape)``."""
    from ftlazy.fractal_access import read_replacements
    from ftlazy.fractal_tensor import jagged_map
    from ftlazy.transform.jagged_element_reads import BodyReplay
    from ftlazy.fractal import map as ft_map
    params = loop.body.params
    first = loop.num_carries + loop.num_scanned

    def computed(element: Array, *steps: Any) -> tuple:
        replace: dict[Any, Any] = dict(zip(params[loop.num_carries:first],
                                           steps))
        replace.update(zip(params[first:], loop.captured))
        if key[0] is None:
            # (the length read alone: the element's length, a row)
            replace.update((read, element) for read in reads)
            replay = BodyReplay(replace, {})
        else:
            read_replace, renames = read_replacements(reads, element)
            replace.update(read_replace)
            replay = BodyReplay(replace, renames)
        return tuple(replay(r) for r in rows)

    if key[0] is None:
        return tuple(ft_map(computed, _lengths_per_step(loop, *key[1:]),
                            *loop.scanned))
    return tuple(jagged_map(computed, _read_list(loop, *key), *loop.scanned,
                            what=what))


def _split_reads(loop: _Steps, reads: dict[Array, tuple]
                 ) -> tuple[tuple, dict[tuple, list[Array]]] | None:
    """The element the rebuilt loop zips (one of the *reads*' keys, see
    :func:`_grouped`) and, for each other, the arrays of a static shape
    the step computes from its reads (see :func:`_static_rows`), or None."""
    groups = _grouped(reads)
    for kept in [key for key in groups if key[0] is not None] or [None]:
        rows = _static_rows(loop, groups, kept)
        if rows is not None:
            return kept, rows
    return None


def zipped_step_reads(loop: Scan | Map, structure: Any, what: str) -> Any:
    """The results of *loop* (a ``scan``, ``fold`` or ``reduce``, whose
    carries have *structure*, or a ``map``, whose results have it; *what*
    names it) rebuilt as a loop over the FractalTensor elements its step
    reads, zipped with its sequences (see the module docs); None where its
    step reads none, or elements of two lists or at two indices used other
    than through arrays of a static shape."""
    from ftlazy.fractal_access import element_read_length, read_replacements
    from ftlazy.fractal_tensor import jagged_map
    from ftlazy.jagged_scan_outer import jagged_scan
    from ftlazy.transform.jagged_element_reads import BodyReplay
    steps = _Steps.of(loop)
    all_reads = _step_reads(steps)
    if not all_reads:
        return None
    split = _split_reads(steps, all_reads)
    if split is None:
        # (the elements of a loop over FractalTensors share their lengths:
        # two lists, or one at two indices, would need one each)
        return None
    kept, rows = split
    reads = {read: found for read, found in all_reads.items() if found == kept}
    # (the other reads' arrays, computed for every step first)
    computed = [(old, new) for key, found in rows.items()
                for old, new in zip(found, _rows_per_step(
                    steps, key, _grouped(all_reads)[key], found, what))]
    # (each read, and its length where the body uses it as a value)
    lengths = {read: element_read_length(read) for read in reads}
    lengths = {read: n for read, n in lengths.items() if n is not None}
    params = steps.body.params
    carries = params[:steps.num_carries]
    first = steps.num_carries + steps.num_scanned
    # (sequences that the step reads besides the reads' indices)
    used = {id(n) for n in topological_order(
        list(steps.body.outputs), skip=set(reads) | set(lengths.values())
        | {old for old, _ in computed})}
    kept_seqs = [(p, seq) for p, seq in zip(params[steps.num_carries:first],
                                            steps.scanned) if id(p) in used]

    def replayed(carry_leaves: list, element: Any, x: tuple) -> Any:
        others, rows_now = x[:len(computed)], x[len(computed):]
        replace: dict[Any, Any] = dict(zip(carries, carry_leaves))
        replace.update((p, row) for (p, _), row in zip(kept_seqs, rows_now))
        replace.update(zip(params[first:], steps.captured))
        replace.update((old, row) for (old, _), row in zip(computed, others))
        renames: dict = {}
        if element is not None:
            read_replace, renames = read_replacements(reads, element)
            replace.update(read_replace)
        replay = BodyReplay(replace, renames)
        return tree_unflatten([replay(o) for o in steps.body.outputs],
                              structure)

    sequences = (*(new for _, new in computed),
                 *(seq for _, seq in kept_seqs))
    if kept is None:
        # (only lengths read: a dense loop over them)
        from ftlazy.fractal import _scan_node, map as ft_map
        if isinstance(loop, Map):
            return ft_map(lambda *x: replayed([], None, x), *sequences)
        init = tree_unflatten(list(loop.inits), structure)
        return _scan_node(lambda carry, x: replayed(
            tree_flatten(carry)[0], None, x), sequences, init, loop.keep_all,
            what)
    elements = _read_list(steps, *kept)
    if isinstance(loop, Map):
        return jagged_map(lambda e, *x: replayed([], e, x), elements,
                          *sequences, what=what)
    init = tree_unflatten(list(loop.inits), structure)
    return jagged_scan(lambda carry, x: replayed(tree_flatten(carry)[0], x[0],
                                                 x[1:]),
                       (elements, *sequences), init, loop.keep_all, what)
