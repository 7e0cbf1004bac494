# SPDX-License-Identifier: MIT
"""loopy's whole-kernel grid while it inserts barriers.

After scheduling, loopy 2025.2 (``loopy.schedule._postprocess_schedule``)
asks for the grid that fits every instruction of the kernel, the maximum
of all group and local iname lengths, and then uses only which hardware
axes it has: whether the kernel is parallel at all, and, in its barrier
race checks, the names ``g.i`` and ``l.i``. The maximum of lengths that
isl cannot order (unrelated size parameters: eight outputs of eight
symbolic lengths, or the partial sums of several blocked sums) is a
piecewise function whose pieces multiply with each length, and loopy's
search for a static maximum over them took 13 s for eight elementwise
outputs, 90 s for nine and longer than ten minutes for the blocked sums
of four vectors. Each launch's own grid, computed when code is
generated, is unaffected.

:func:`_patch_loopy` (applied once at import) gives that step the axes
alone, as a dict from axis to ``None`` (a value would fail loudly if
loopy ever read one there), and leaves every other caller the real
sizes.
"""

from __future__ import annotations

from typing import Any

import loopy.schedule
from loopy.kernel.data import (
    AutoLocalInameTagBase, GroupInameTag, LocalInameTag)
from loopy.kernel.function_interface import CallableKernel
from loopy.kernel.instruction import CallInstruction
from loopy.symbolic import ResolvedFunction


def hardware_axes(kernel: Any, callables_table: Any
                  ) -> tuple[dict[int, None], dict[int, None]] | None:
    """The group and local axes of *kernel*'s instructions, each mapped to
    ``None``; None where a call to another kernel may add axes of its own
    or an iname has an automatic local axis (loopy's own answer is
    needed)."""
    groups: dict[int, None] = {}
    locals_: dict[int, None] = {}
    inames: set[str] = set()
    for insn in kernel.instructions:
        if (isinstance(insn, CallInstruction)
                and isinstance(insn.expression.function, ResolvedFunction)
                and isinstance(callables_table[insn.expression.function.name],
                               CallableKernel)):
            return None
        inames |= kernel.insn_inames(insn)
    for iname in inames:
        for tag in kernel.iname_tags(iname):
            if isinstance(tag, AutoLocalInameTagBase):
                return None
            if isinstance(tag, GroupInameTag):
                groups[tag.axis] = None
            elif isinstance(tag, LocalInameTag):
                locals_[tag.axis] = None
    return groups, locals_


def _patch_loopy() -> None:
    original = getattr(loopy.schedule, "_postprocess_schedule", None)
    if original is None or getattr(original, "_ftlazy", False):
        return

    def _postprocess_schedule(kernel: Any, callables_table: Any,
                              gen_sched: Any) -> Any:
        axes = hardware_axes(kernel, callables_table)
        if axes is None:
            return original(kernel, callables_table, gen_sched)
        real = type(kernel).get_grid_size_upper_bounds

        def axes_only(callables_table: Any, ignore_auto: bool = False,
                      return_dict: bool = False) -> Any:
            if return_dict:
                return axes
            return real(kernel, callables_table, ignore_auto=ignore_auto,
                        return_dict=return_dict)

        # (on this kernel only, which the step copies into its result; the
        # attribute is not a dataclass field, so the copy drops it)
        object.__setattr__(kernel, "get_grid_size_upper_bounds", axes_only)
        try:
            return original(kernel, callables_table, gen_sched)
        finally:
            object.__delattr__(kernel, "get_grid_size_upper_bounds")

    _postprocess_schedule._ftlazy = True  # type: ignore[attr-defined]
    loopy.schedule._postprocess_schedule = _postprocess_schedule


_patch_loopy()
