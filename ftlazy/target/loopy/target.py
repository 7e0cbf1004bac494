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

Loopy declares every global array argument ``__restrict__``. That promise
is false for memory that work items of one group share through barriers
(a scan's carries and body arrays: one work item writes what another reads
after a barrier), and NVIDIA's compiler acts on it by hoisting such loads
out of the time loop, giving wrong results. The arrays named in
:attr:`FtlazyOpenCLTarget.shared_arrays` are therefore declared without
``__restrict__``.
"""

from __future__ import annotations

from typing import Any

from cgen import Const, Pointer
from loopy.kernel.data import AddressSpace
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

    def _unrestricted(self, ary: Any, is_written: bool) -> Any:
        decl = Pointer(self.wrap_decl_for_address_space(
            self.get_array_base_declarator(ary), AddressSpace.GLOBAL))
        return decl if is_written else Const(decl)

    def get_array_arg_declarator(self, arg: Any, is_written: bool) -> Any:
        if arg.name in self.target.shared_arrays:
            return self._unrestricted(arg, is_written)
        return super().get_array_arg_declarator(arg, is_written)

    def get_temporary_arg_decl(self, temp_var: Any, is_written: bool) -> Any:
        if (temp_var.name in self.target.shared_arrays
                and temp_var.address_space == AddressSpace.GLOBAL):
            return self._unrestricted(temp_var, is_written)
        return super().get_temporary_arg_decl(temp_var, is_written)


class FtlazyOpenCLTarget(PyOpenCLTarget):
    """:class:`loopy.PyOpenCLTarget` whose device code knows OpenCL's and
    pyopencl's functions but not Random123's, and which declares the global
    arrays in *shared_arrays* without ``__restrict__``."""

    hash_fields = (*PyOpenCLTarget.hash_fields, "shared_arrays")
    comparison_fields = (*PyOpenCLTarget.comparison_fields, "shared_arrays")

    def __init__(self, shared_arrays: tuple[str, ...] = ()) -> None:
        super().__init__()
        #: names of global arrays that work items share through barriers
        self.shared_arrays = tuple(sorted(set(shared_arrays)))

    def get_device_ast_builder(self) -> _CASTBuilder:
        return _CASTBuilder(self)
