# SPDX-License-Identifier: MIT
"""Loop rolling: repeated private statements become one statement in a loop.

A deep chain is cut into private statements (see :mod:`.storage`). When the
chain repeats one step, as a Python loop unrolled into the DAG does
(``p = p * x + c[k]``), its statements are the same expression up to the
previous statement's variable and integer offsets that advance by a
constant stride, such as the element of a packed argument each one reads::

    p5 = ((p4 * x + pack[34]) * x + pack[35]) ...
    p6 = ((p5 * x + pack[66]) * x + pack[67]) ...

Such a run becomes ``p = p_before`` and one statement in a sequential loop,
``p = ((p * x + pack[34 + 32*k]) * x + pack[35 + 32*k]) ...``.
Floating-point constants may differ between steps too (Horner with literal
coefficients, ``y = y * 0.5 + k`` for a Python loop counter): those that do
are read from a ``__constant`` table laid out step by step. Loopy, the
OpenCL compiler and the work-group compiler then see a few small statements
instead of thousands of operations: compile time stops growing with the
chain's length, and the loop body is still a straight run of several steps.

A chain that repeats no step but takes each step from a few kinds (``y *
0.999``, ``y + x``, ``cos(y)`` in any order) is rolled on GPUs too, whose
compilers take time in proportion to the code (NVIDIA's about 11 ms per
operation): the loop reads each step's kind from a table and picks the
kind's expression, ``y = kind[k] == 0 ? y * 0.999 : kind[k] == 1 ? y + x :
cos(y)`` (C evaluates only the branch taken, and every work item takes the
same one). Each kind reads the same array elements at every step; its
constants may differ per step (a table again).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import loopy as lp
import numpy as np
import pymbolic.primitives as prim
from loopy.symbolic import UncachedIdentityMapper

#: shortest run of statements worth a loop
MIN_RUN = 3

_HOLE = "_ft_roll_previous"
_OFFSET = "_ft_roll_offset"
_CONSTANT = "_ft_roll_constant"

#: largest table of per-step constants a rolled loop reads (bytes; OpenCL
#: guarantees 64 KiB of constant memory)
MAX_TABLE_BYTES = 16384


def _is_float_constant(expr: Any) -> bool:
    return isinstance(expr, (float, np.floating))


class _Template(UncachedIdentityMapper):
    """An expression with the previous statement's variable replaced by a
    hole and the integer part of every subscript index by a numbered
    offset variable; the integers are collected in traversal order."""

    def __init__(self, previous: str) -> None:
        super().__init__()
        self.previous = previous
        self.offsets: list[int] = []
        self.constants: list[Any] = []
        self.reads_previous = False

    def map_constant(self, expr: Any) -> Any:
        if not _is_float_constant(expr):
            return expr
        self.constants.append(expr)
        return prim.Variable(f"{_CONSTANT}{len(self.constants) - 1}")

    def map_variable(self, expr: prim.Variable) -> Any:
        if expr.name == self.previous:
            self.reads_previous = True
            return prim.Variable(_HOLE)
        return expr

    def map_subscript(self, expr: prim.Subscript) -> Any:
        index = []
        for idx in expr.index_tuple:
            rest, offset = _split_integer(idx)
            index.append(prim.Sum((self.rec(rest),
                                   prim.Variable(f"{_OFFSET}{len(self.offsets)}"))))
            self.offsets.append(offset)
        return prim.Subscript(self.rec(expr.aggregate), tuple(index))


def _split_integer(idx: Any) -> tuple[Any, int]:
    """``idx`` as (non-constant part, integer constant part)."""
    if isinstance(idx, int):
        return 0, idx
    if isinstance(idx, prim.Sum):
        ints = [c for c in idx.children if isinstance(c, int)]
        others = tuple(c for c in idx.children if not isinstance(c, int))
        rest = others[0] if len(others) == 1 else prim.Sum(others) if others else 0
        return rest, sum(ints)
    return idx, 0


class _Fill(UncachedIdentityMapper):
    """The inverse of :class:`_Template`: fills the hole, the offsets and
    the constants."""

    def __init__(self, hole: Any, offsets: list[Any], constants: list[Any]
                 ) -> None:
        super().__init__()
        self.hole = hole
        self.offsets = offsets
        self.constants = constants

    def map_variable(self, expr: prim.Variable) -> Any:
        if expr.name == _HOLE:
            return self.hole
        if expr.name.startswith(_OFFSET):
            return self.offsets[int(expr.name[len(_OFFSET):])]
        if expr.name.startswith(_CONSTANT):
            return self.constants[int(expr.name[len(_CONSTANT):])]
        return expr

    def map_subscript(self, expr: prim.Subscript) -> Any:
        index = []
        for idx in expr.index_tuple:  # (rest + offset variable)
            rest, offset = (self.rec(c) for c in idx.children)
            index.append(offset if rest == 0 else rest + offset)
        return prim.Subscript(self.rec(expr.aggregate), tuple(index))


@dataclass
class _Step:
    """A private statement seen as one step after the statement before."""

    insn: lp.Assignment
    template: Any
    offsets: tuple[int, ...]
    #: the floating-point constants, in traversal order
    constants: tuple[Any, ...]
    #: everything but the variable, the offsets and the constants' values
    #: that must match
    key: tuple


def _assigned_name(insn: Any) -> str | None:
    lhs = getattr(insn, "assignee", None)
    if isinstance(lhs, prim.Subscript):
        lhs = lhs.aggregate
    return lhs.name if isinstance(lhs, prim.Variable) else None


def _step(insn: lp.Assignment, previous: lp.Assignment) -> _Step | None:
    """*insn* as a step after *previous*, if it reads *previous*'s result."""
    prev_name = _assigned_name(previous)
    template_of = _Template(prev_name)
    template = template_of(insn.expression)
    if not template_of.reads_previous or previous.id not in insn.depends_on:
        return None
    lhs_shape = type(insn.assignee).__name__
    constant_types = tuple(np.asarray(c).dtype for c in template_of.constants)
    key = (template, lhs_shape, constant_types, insn.within_inames,
           insn.depends_on - {previous.id}, insn.predicates)
    return _Step(insn, template, tuple(template_of.offsets),
                 tuple(template_of.constants), key)


def roll_repeated_statements(
        insns: list[Any], private_names: set[str],
        new_loop: Callable[[int], str],
        new_table: Callable[[np.ndarray], str], max_kinds: int = 1
        ) -> tuple[list[Any], set[str]]:
    """Replace each run of at least :data:`MIN_RUN` repeated private
    statements in *insns* (a loop nest's instructions, in order) by a loop.

    :arg private_names: the variables private statements assign.
    :arg new_loop: makes a sequential iname over ``range(count)``.
    :arg new_table: makes a read-only array holding the given values (the
        floating-point constants that differ between steps, the kind of
        each step); returns its name.
    :arg max_kinds: more than 1 also rolls runs of steps of up to that many
        kinds into one loop that picks each step's kind from a table.
    :returns: the instructions and the private variables no longer used.
    """
    readers: dict[str, int] = {}
    for insn in insns:
        for name in insn.read_dependency_names():
            readers[name] = readers.get(name, 0) + 1

    def is_private(insn: Any) -> bool:
        return (isinstance(insn, lp.Assignment)
                and _assigned_name(insn) in private_names)

    def only_feeds_next(insn: Any) -> bool:
        return readers.get(_assigned_name(insn), 0) == 1

    result: list[Any] = []
    unused: set[str] = set()
    #: ids of rolled-away statements -> the loop statement's id
    replaced: dict[str, str] = {}
    i = 0
    while i < len(insns):
        mixed = (_mixed_run_at(insns, i, is_private, only_feeds_next, max_kinds)
                 if max_kinds > 1 else None)
        run = None if mixed else _run_at(insns, i, is_private, only_feeds_next)
        if mixed:
            steps = mixed
            init, update = _rolled_mixed(steps, insns[i - 1], new_loop,
                                         new_table)
        elif run is not None:
            steps, stride = run
            init, update = _rolled(steps, insns[i - 1], stride, new_loop,
                                   new_table)
        else:
            result.append(insns[i])
            i += 1
            continue
        result += [init, update]
        unused |= {_assigned_name(s.insn) for s in steps[:-1]}
        replaced.update((s.insn.id, update.id) for s in steps[:-1])
        i += len(steps)
    if replaced:
        result = [_redirect_dependencies(insn, replaced) for insn in result]
    return result, unused


def _redirect_dependencies(insn: Any, replaced: dict[str, str]) -> Any:
    if not insn.depends_on & replaced.keys():
        return insn
    return insn.copy(depends_on=frozenset(
        replaced.get(dep, dep) for dep in insn.depends_on) - {insn.id})


def _run_at(insns: list[Any], start: int, is_private: Callable,
            only_feeds_next: Callable) -> tuple[list[_Step], tuple] | None:
    """The run of repeated steps starting at ``insns[start]`` and its offset
    stride, or None if it is shorter than :data:`MIN_RUN`."""
    if start == 0 or not (is_private(insns[start - 1]) and is_private(insns[start])):
        return None
    first = _step(insns[start], insns[start - 1])
    if first is None:
        return None
    steps = [first]
    stride: tuple | None = None
    j = start + 1
    while j < len(insns) and is_private(insns[j]) and only_feeds_next(insns[j - 1]):
        step = _step(insns[j], insns[j - 1])
        if step is None or step.key != first.key:
            break
        delta = tuple(b - a for a, b in zip(steps[-1].offsets, step.offsets))
        if stride is None:
            stride = delta
        elif delta != stride:
            break
        steps.append(step)
        j += 1
    steps = steps[:_max_steps(steps)]
    if len(steps) < MIN_RUN:
        return None
    return steps, stride


def _mixed_run_at(insns: list[Any], start: int, is_private: Callable,
                  only_feeds_next: Callable, max_kinds: int
                  ) -> list[_Step] | None:
    """The run of steps of two to *max_kinds* kinds starting at
    ``insns[start]``, each kind reading the same offsets at every step, or
    None if it is shorter than :data:`MIN_RUN` or of one kind only."""
    if start == 0 or not (is_private(insns[start - 1]) and is_private(insns[start])):
        return None
    steps: list[_Step] = []
    offsets_of: dict[tuple, tuple] = {}
    j = start
    while j < len(insns) and is_private(insns[j]) and (
            j == start or only_feeds_next(insns[j - 1])):
        step = _step(insns[j], insns[j - 1])
        if step is None or (steps and _context(step) != _context(steps[0])):
            break
        known = offsets_of.get(step.key)
        if known is None and len(offsets_of) == max_kinds:
            break
        if known is not None and known != step.offsets:
            break
        offsets_of[step.key] = step.offsets
        steps.append(step)
        j += 1
    steps = steps[:_max_mixed_steps(steps)] if steps else steps
    kinds = [s.key for s in steps]
    if len(steps) < MIN_RUN or len(set(kinds)) < 2:
        return None
    if kinds.count(kinds[0]) == 1:
        # (a first step of its own kind, such as the chain's bottom, the
        # nodes inlined below its first cut, stays a statement: the run
        # starts after it)
        return None
    return steps


def _context(step: _Step) -> tuple:
    """What the steps of different kinds in one loop must share: the
    assignee's form, the loops around them and their predicates (see
    :func:`_step`'s key; the loop depends on every kind's other
    dependencies)."""
    _, lhs_shape, _, inames, _, predicates = step.key
    return lhs_shape, inames, predicates


def _max_steps(steps: list[_Step]) -> int:
    """How many steps one loop may take, given the bytes of table each step
    adds (see :data:`MAX_TABLE_BYTES`)."""
    constants = [s.constants for s in steps]
    per_step = sum(np.asarray(constants[0][j]).dtype.itemsize
                   for j in _varying_constants(constants))
    return MAX_TABLE_BYTES // per_step if per_step else len(steps)


def _max_mixed_steps(steps: list[_Step]) -> int:
    """:func:`_max_steps` for a run of several kinds: a byte of kind per
    step, and each kind's varying constants at every step."""
    per_step = 1 + sum(
        np.asarray(constants[0][j]).dtype.itemsize
        for key in dict.fromkeys(s.key for s in steps)
        for constants in [_kind_constants(steps, key)]
        for j in _varying_constants(constants))
    return min(len(steps), MAX_TABLE_BYTES // per_step)


def _kind_constants(steps: list[_Step], key: tuple) -> list[tuple]:
    """The constants of the steps of kind *key* at each step of *steps*
    (at a step of another kind, those of the kind's first step: they are
    never read there)."""
    first = next(s for s in steps if s.key == key).constants
    return [s.constants if s.key == key else first for s in steps]


def _varying_constants(constants: list[tuple]) -> list[int]:
    """Indices of the constants whose value (bit pattern) differs between
    steps (*constants*: each step's)."""
    first = constants[0]
    return [j for j in range(len(first))
            if any(np.asarray(c[j]).tobytes() != np.asarray(first[j]).tobytes()
                   for c in constants[1:])]


def _rolled(steps: list[_Step], before: lp.Assignment, stride: tuple,
            new_loop: Callable[[int], str],
            new_table: Callable[[np.ndarray], str]) -> tuple[Any, Any]:
    """``last = before`` and the loop statement replacing *steps*."""
    last = steps[-1].insn
    first = steps[0]
    loop = new_loop(len(steps))
    k = prim.Variable(loop)
    offsets = [off + (k if dk == 1 else dk * k) if dk else off
               for off, dk in zip(first.offsets, stride)]
    constants = _constant_reads([s.constants for s in steps], k, new_table)
    body = _Fill(prim.Variable(_assigned_name(last)), offsets,
                 constants)(first.template)
    return _loop_statements(steps, before, loop, body)


def _rolled_mixed(steps: list[_Step], before: lp.Assignment,
                  new_loop: Callable[[int], str],
                  new_table: Callable[[np.ndarray], str]) -> tuple[Any, Any]:
    """``last = before`` and the loop statement replacing *steps* of
    several kinds: each kind's expression, picked by a table of kinds."""
    loop = new_loop(len(steps))
    k = prim.Variable(loop)
    keys = list(dict.fromkeys(s.key for s in steps))
    kinds = np.array([keys.index(s.key) for s in steps], np.int8)
    kind = prim.Subscript(prim.Variable(new_table(kinds)), (k,))
    previous = prim.Variable(_assigned_name(steps[-1].insn))
    branches = []
    for key in keys:
        mine = next(s for s in steps if s.key == key)
        constants = _constant_reads(_kind_constants(steps, key), k, new_table)
        branches.append(_Fill(previous, list(mine.offsets),
                              constants)(mine.template))
    body = branches[-1]
    for j in range(len(keys) - 2, -1, -1):
        body = prim.If(prim.Comparison(kind, "==", j), branches[j], body)
    return _loop_statements(steps, before, loop, body)


def _loop_statements(steps: list[_Step], before: lp.Assignment, loop: str,
                     body: Any) -> tuple[Any, Any]:
    """``last = before`` and ``last = body`` in *loop*, in place of *steps*
    (the last step's variable carries the value from step to step)."""
    last = steps[-1].insn
    first = steps[0]
    target = last.assignee
    previous_value = _rename_aggregate(target, _assigned_name(before))
    init = lp.Assignment(
        target, previous_value, id=last.id + "_init",
        within_inames=first.insn.within_inames, within_inames_is_final=True,
        depends_on=frozenset({before.id}), predicates=first.insn.predicates)
    chain = {before.id} | {s.insn.id for s in steps}
    others = frozenset().union(*(s.insn.depends_on for s in steps)) - chain
    update = lp.Assignment(
        target, body, id=last.id,
        within_inames=first.insn.within_inames | {loop},
        within_inames_is_final=True, depends_on=others | {init.id},
        predicates=first.insn.predicates)
    return init, update


def _constant_reads(constants: list[tuple], k: prim.Variable,
                    new_table: Callable[[np.ndarray], str]) -> list[Any]:
    """What each constant of the template becomes in the loop (*constants*:
    each step's): itself when all steps share it, else a read of a table
    (one per dtype) laid out step by step."""
    result = list(constants[0])
    by_dtype: dict[np.dtype, list[int]] = {}
    for j in _varying_constants(constants):
        by_dtype.setdefault(np.asarray(result[j]).dtype, []).append(j)
    for dtype, slots in by_dtype.items():
        values = np.array([[c[j] for j in slots] for c in constants],
                          dtype=dtype)
        table = prim.Variable(new_table(values.reshape(-1)))
        width = len(slots)
        for pos, j in enumerate(slots):
            index = k if width == 1 else (k * width + pos if pos else k * width)
            result[j] = prim.Subscript(table, (index,))
    return result


def _rename_aggregate(lhs: Any, name: str) -> Any:
    if isinstance(lhs, prim.Subscript):
        return prim.Subscript(prim.Variable(name), lhs.index_tuple)
    return prim.Variable(name)
