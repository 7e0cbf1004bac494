# SPDX-License-Identifier: MIT
"""Shared vocabulary of kernel construction: the loopy kernel under
construction (:class:`KernelParts`, the emitters' explicit state), argument
specs, and the context a loop nest is built in."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import loopy as lp
import numpy as np

from ftlazy import shapes as sh
from ftlazy.target.loopy.expressions import storage_dtype

from ftlazy.node import Node
from ftlazy.target.loopy.storage import StoragePlan

@dataclass
class KernelParts:
    """The loopy kernel under construction: what every emitter adds to and
    nothing else. Names it hands out (:meth:`fresh`) are unique in the
    kernel."""

    #: isl set strings, one per loop nest
    domains: list[str] = field(default_factory=list)
    #: (segment, instruction): a segment is a kernel launch (see kernel.py)
    instructions: list[tuple[Any, Any]] = field(default_factory=list)
    temporaries: dict[str, Any] = field(default_factory=dict)
    iname_tags: dict[str, str] = field(default_factory=dict)
    #: (outer, inner) loop priorities
    priorities: list[tuple[str, str]] = field(default_factory=list)
    #: size parameters the domains use
    params: set[str] = field(default_factory=set)
    #: instruction id prefixes of each scan's instructions
    scan_prefixes: list[str] = field(default_factory=list)
    #: global arrays a loop reads and writes in place (a rolled chain's
    #: results, see :mod:`.scan_chains`): their readers get no dependency
    #: on their writer (see :func:`.kernel.without_in_place_writers`)
    in_place: set[str] = field(default_factory=set)
    counter: int = 0
    #: iname of a block domain -> (index in :attr:`domains`, its size
    #: parameters, inames and constraints), so that guarded loops nested in
    #: it join its domain (see :meth:`add_guarded_domain`)
    block_domains: dict[str, tuple[int, set, list, list]] = field(
        default_factory=dict)

    def fresh(self, prefix: str) -> str:
        """A new name starting with *prefix*."""
        self.counter += 1
        return f"{prefix}{self.counter}"

    def add_domain(self, inames: list[str], bounds: list[Any]) -> None:
        """``0 <= iname < bound`` for each pair (bounds are affine shapes)."""
        if not inames:
            return
        params: set[str] = set()
        for b in bounds:
            params |= sh.size_param_names(b)
        self.params |= params
        conds = " and ".join(
            f"0 <= {i} < {sh.to_affine(b).to_isl()}" for i, b in zip(inames, bounds))
        self.domains.append(
            f"[{', '.join(sorted(params))}] -> {{ [{', '.join(inames)}]: {conds} }}")

    def add_split_domain(self, outer: str, inner: str, size: int, bound: Any
                         ) -> None:
        """``0 <= size*outer + inner < bound`` with ``0 <= inner < size``."""
        params = sorted(sh.size_param_names(bound))
        self.params |= set(params)
        self.domains.append(
            f"[{', '.join(params)}] -> {{ [{outer}, {inner}]: 0 <= {inner} < {size}"
            f" and 0 <= {size}*{outer} + {inner} < {sh.to_affine(bound).to_isl()} }}")

    def add_guarded_domain(self, inames: list[str], bounds: list[Any],
                           guard: str, limit: Any,
                           enclosing: tuple[str, ...] = ()) -> None:
        """``0 <= iname < bound`` for each pair and ``guard < limit``, where
        *guard* is an isl affine expression in these inames and the block
        iname *enclosing* (of :meth:`add_blocks_domain`; a partial block:
        its loops end early in the last group). The inames join the block's
        domain: a domain whose parameters are inames of another one trips
        loopy 2025.2 with islpy 2026.2 (``BasicSet`` has no
        ``find_dim_by_name``)."""
        (outer,) = enclosing
        index, params, names, conds = self.block_domains[outer]
        for b in bounds + [limit]:
            params |= sh.size_param_names(b)
        self.params |= params
        names += inames
        conds += [f"0 <= {i} < {sh.to_affine(b).to_isl()}"
                  for i, b in zip(inames, bounds)]
        conds.append(f"{guard} < {sh.to_affine(limit).to_isl()}")
        self._write_block_domain(outer)

    def _write_block_domain(self, outer: str) -> None:
        index, params, names, conds = self.block_domains[outer]
        self.domains[index] = (f"[{', '.join(sorted(params))}] -> "
                               f"{{ [{', '.join(names)}]: {' and '.join(conds)} }}")

    def add_blocks_domain(self, outer: str, size: int, bound: Any) -> None:
        """``0 <= outer < ceil(bound / size)``: the blocks of *size* that
        cover ``[0, bound)``, the last one possibly partial."""
        params = set(sh.size_param_names(bound))
        self.params |= params
        self.block_domains[outer] = (
            len(self.domains), params, [outer],
            [f"0 <= {outer}", f"{size}*{outer} < {sh.to_affine(bound).to_isl()}"])
        self.domains.append("")
        self._write_block_domain(outer)

    def fresh_reduction_iname(self, upper: Any) -> str:
        """A new iname over ``[0, upper)``."""
        name = self.fresh("_ft_r")
        self.add_domain([name], [upper])
        return name

    def global_temporary(self, name: str, shape: tuple, dtype: np.dtype) -> None:
        """A global temporary array *name*."""
        self.temporaries[name] = lp.TemporaryVariable(
            name, storage_dtype(dtype), shape=tuple(shape) or (1,),
            address_space=lp.AddressSpace.GLOBAL)

    def private_array(self, prefix: str, dtype: np.dtype, shape: tuple,
                      dim_tags: Any = None) -> str:
        """A fresh private temporary; returns its name."""
        name = self.fresh(prefix)
        self.temporaries[name] = lp.TemporaryVariable(
            name, storage_dtype(dtype), shape=shape, dim_tags=dim_tags,
            address_space=lp.AddressSpace.PRIVATE)
        return name


@dataclass(frozen=True)
class ArgSpec:
    """A kernel argument as the host sees it."""

    name: str
    shape: tuple
    dtype: np.dtype


@dataclass
class Scope:
    """Where an array is being computed: the outer DAG or a scan body."""

    plan: StoragePlan
    names: dict[Node, str]
    #: BodyParam index -> reader of that parameter at an index tuple
    params: dict[int, Callable[[tuple], Any]] = field(default_factory=dict)
    #: inames every instruction of the scope lies in (the time loop)
    outer_inames: tuple[str, ...] = ()
    #: 'global' (work groups) or 'local' (one work group)
    parallel: str = "global"
    #: in a scan whose rows are independent: (row count, rows per group);
    #: each work group then runs the time loop for its own rows
    batch: tuple | None = None
    #: in a scan whose work groups are single work items (CPUs): program
    #: order replaces barriers, and loops over a group's rows are flat
    single_item_groups: bool = False
    #: in a row-blocked scan that blocks its elements in another order
    #: (``ScanPlan.sorted_rows``): ``(group, row in block)`` -> the element
    #: there (the row of every ``(n, ...)`` array); None: element order
    element_at: Callable[[Any, Any], Any] | None = None

    def element_row(self, group: Any, row: Any) -> Any:
        """The row of the element that row *row* of work group *group*'s
        block runs in a row-blocked scan."""
        if self.element_at is None:
            return group * self.batch[1] + row
        return self.element_at(group, row)


@dataclass
class StoreContext:
    """Per stored array: its inames, the arrays it reads, private statements."""

    scope: Scope
    inames: list[str]
    index: tuple
    #: the shape the loop nest spans (None: not a plain loop nest)
    shape: tuple | None = None
    reads: set = field(default_factory=set)
    deps: set = field(default_factory=set)
    privates: dict = field(default_factory=dict)
    pending: list = field(default_factory=list)
    #: ids of statements that run outside a padded array's guards (its
    #: bounds' loads, see ``KernelBuilder._padding_guards``)
    unguarded: frozenset = frozenset()
