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
``p = ((p * x + pack[34 + 32*k]) * x + pack[35 + 32*k]) ...``. Loopy, the
OpenCL compiler and the work-group compiler then see a few small statements
instead of thousands of operations: compile time stops growing with the
chain's length, and the loop body is still a straight run of several steps.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import loopy as lp
import pymbolic.primitives as prim
from loopy.symbolic import UncachedIdentityMapper

#: shortest run of statements worth a loop
MIN_RUN = 3

_HOLE = "_ft_roll_previous"
_OFFSET = "_ft_roll_offset"


class _Template(UncachedIdentityMapper):
    """An expression with the previous statement's variable replaced by a
    hole and the integer part of every subscript index by a numbered
    offset variable; the integers are collected in traversal order."""

    def __init__(self, previous: str) -> None:
        super().__init__()
        self.previous = previous
        self.offsets: list[int] = []
        self.reads_previous = False

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
    """The inverse of :class:`_Template`: fills the hole and the offsets."""

    def __init__(self, hole: Any, offsets: list[Any]) -> None:
        super().__init__()
        self.hole = hole
        self.offsets = offsets

    def map_variable(self, expr: prim.Variable) -> Any:
        if expr.name == _HOLE:
            return self.hole
        if expr.name.startswith(_OFFSET):
            return self.offsets[int(expr.name[len(_OFFSET):])]
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
    #: everything but the variable and the offsets that must match
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
    key = (template, lhs_shape, insn.within_inames,
           insn.depends_on - {previous.id}, insn.predicates)
    return _Step(insn, template, tuple(template_of.offsets), key)


def roll_repeated_statements(
        insns: list[Any], private_names: set[str],
        new_loop: Callable[[int], str]) -> tuple[list[Any], set[str], list[str]]:
    """Replace each run of at least :data:`MIN_RUN` repeated private
    statements in *insns* (a loop nest's instructions, in order) by a loop.

    :arg private_names: the variables private statements assign.
    :arg new_loop: makes a sequential iname over ``range(count)``.
    :returns: the instructions, the private variables no longer used, and
        the inames of the new loops.
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
    loops: list[str] = []
    #: ids of rolled-away statements -> the loop statement's id
    replaced: dict[str, str] = {}
    i = 0
    while i < len(insns):
        run = _run_at(insns, i, is_private, only_feeds_next)
        if run is None:
            result.append(insns[i])
            i += 1
            continue
        steps, stride = run
        init, update, loop = _rolled(steps, insns[i - 1], stride, new_loop)
        result += [init, update]
        loops.append(loop)
        unused |= {_assigned_name(s.insn) for s in steps[:-1]}
        replaced.update((s.insn.id, update.id) for s in steps[:-1])
        i += len(steps)
    if replaced:
        result = [_redirect_dependencies(insn, replaced) for insn in result]
    return result, unused, loops


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
    if len(steps) < MIN_RUN:
        return None
    return steps, stride


def _rolled(steps: list[_Step], before: lp.Assignment, stride: tuple,
            new_loop: Callable[[int], str]) -> tuple[Any, Any, str]:
    """``last = before`` and the loop statement replacing *steps*."""
    last = steps[-1].insn
    first = steps[0]
    loop = new_loop(len(steps))
    k = prim.Variable(loop)
    offsets = [off + (k if dk == 1 else dk * k) if dk else off
               for off, dk in zip(first.offsets, stride)]
    target = last.assignee
    previous_value = _rename_aggregate(target, _assigned_name(before))
    init = lp.Assignment(
        target, previous_value, id=last.id + "_init",
        within_inames=first.insn.within_inames, within_inames_is_final=True,
        depends_on=frozenset({before.id}), predicates=first.insn.predicates)
    update = lp.Assignment(
        target, _Fill(prim.Variable(_assigned_name(last)), offsets)(first.template),
        id=last.id,
        within_inames=first.insn.within_inames | {loop},
        within_inames_is_final=True,
        depends_on=(first.insn.depends_on - {before.id}) | {init.id},
        predicates=first.insn.predicates)
    return init, update, loop


def _rename_aggregate(lhs: Any, name: str) -> Any:
    if isinstance(lhs, prim.Subscript):
        return prim.Subscript(prim.Variable(name), lhs.index_tuple)
    return prim.Variable(name)
