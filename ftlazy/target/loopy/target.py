# SPDX-License-Identifier: MIT
"""The loopy target ftlazy generates code for: loopy's PyOpenCL target
without its random-number library.

Loopy's OpenCL code generator resolves function names against every library
it knows, and the first resolution in a process imports its Random123
library and, with it, the mako template engine: about 0.1 s of every fresh
process's first compile. ftlazy never calls those functions (it registers
its own builtins, see :mod:`.expressions`), so its target leaves them out.
Loopy's own ``VolatileMemPyOpenCLTarget`` customizes the target the same
way.
"""

from __future__ import annotations

from typing import Any

from loopy.target.opencl import OpenCLCASTBuilder
from loopy.target.pyopencl import (
    PyOpenCLCASTBuilder, PyOpenCLTarget, get_pyopencl_callables)


class _CASTBuilder(PyOpenCLCASTBuilder):
    @property
    def known_callables(self) -> dict[str, Any]:
        # PyOpenCLCASTBuilder's, minus Random123
        callables = OpenCLCASTBuilder.known_callables.fget(self)
        callables.update(get_pyopencl_callables())
        return callables


class FtlazyOpenCLTarget(PyOpenCLTarget):
    """:class:`loopy.PyOpenCLTarget` whose device code knows OpenCL's and
    pyopencl's functions but not Random123's."""

    def get_device_ast_builder(self) -> _CASTBuilder:
        return _CASTBuilder(self)
