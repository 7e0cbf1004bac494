# SPDX-License-Identifier: MIT
"""Shared vocabulary of kernel construction: argument specs, and the context
a loop nest is built in."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from ftlazy.node import Node
from ftlazy.target.loopy.storage import StoragePlan

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
