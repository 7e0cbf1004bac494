# SPDX-License-Identifier: MIT
"""Device arrays packed into one kernel argument by a kernel.

Small inputs travel in one packed argument per dtype (OpenCL caps the size
of a kernel's parameters; see ``DeviceProfile.pack_max_size``). Where they
are device arrays, the pack is assembled on the device. One
``clEnqueueCopyBuffer`` per member cost about 14 us each on an H100 (1,001
shape-() coefficients: 14 ms a call, for a 43 us kernel) and 3.6 us on
PoCL; :func:`copy_into_pack` instead launches one small kernel per
:data:`MEMBERS_PER_KERNEL` members, its layout (each member's size and
place, known when the program was planned) written into its source, so
that a call sets one pointer per member and launches once per chunk. A
device whose compiler refuses the kernel gets the copies, as before."""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import numpy as np
import pyopencl as cl
import pyopencl.array as cla
import pyopencl.tools as cltools

__all__ = ["MEMBERS_PER_KERNEL", "copy_into_pack", "pack_source"]

#: members copied by one kernel (a pointer argument each: 64 pointers stay
#: well inside the smallest parameter size a device may cap at, 1 KiB)
MEMBERS_PER_KERNEL = 64


def pack_source(ctype: str, layout: tuple[tuple[int, int, int], ...]) -> str:
    """OpenCL source of a kernel ``ftlazy_pack(out, a0, a1, ...)`` that
    writes, for each ``(size, into, start)`` of *layout*, elements
    ``start .. start + size`` of its array to ``out[into ..]``: work item
    ``e`` copies element ``e`` of every member that has one."""
    params = ", ".join(f"__global {ctype} const *a{k}"
                       for k in range(len(layout)))
    body = "\n".join(
        f"  if (e < {size}) out[{into} + e] = a{k}[{start} + e];"
        for k, (size, into, start) in enumerate(layout))
    fp64 = ("#if __OPENCL_C_VERSION__ < 120\n"
            "#pragma OPENCL EXTENSION cl_khr_fp64: enable\n#endif\n"
            if ctype == "double" else "")
    return (f"{fp64}__kernel void ftlazy_pack(__global {ctype} *out, {params})\n"
            f"{{\n  const int e = (int) get_global_id(0);\n{body}\n}}\n")


@lru_cache(maxsize=256)
def _pack_kernel(context: cl.Context, dtype: np.dtype,
                 layout: tuple[tuple[int, int, int], ...]) -> Any:
    """The built kernel of :func:`pack_source`, or None where the device's
    compiler refuses it (the members are then copied one by one)."""
    from ftlazy.target.loopy.device import (
        quiet_build_options, quiet_successful_builds)
    try:
        with quiet_successful_builds():
            program = cl.Program(context, pack_source(
                cltools.dtype_to_ctype(dtype), layout)).build(
                    options=quiet_build_options())
        return program.ftlazy_pack
    except (cl.Error, ValueError):
        return None


def copy_into_pack(queue: cl.CommandQueue, packed: cla.Array,
                   members: list[tuple[cla.Array, int]]) -> list:
    """Copy each contiguous device array of *members* (``(array, element
    offset in the pack)``) into *packed* (of their dtype) with
    :func:`pack_source` kernels; the members it could not copy that way
    (a refused build), which the caller copies itself."""
    left = []
    itemsize = packed.dtype.itemsize
    for first in range(0, len(members), MEMBERS_PER_KERNEL):
        chunk = members[first:first + MEMBERS_PER_KERNEL]
        layout = tuple((a.size, into, a.offset // itemsize)
                       for a, into in chunk)
        kernel = _pack_kernel(queue.context, packed.dtype, layout)
        if kernel is None:
            left += chunk
            continue
        kernel(queue, (max(size for size, _, _ in layout),), None,
               packed.base_data, *(a.base_data for a, _ in chunk),
               wait_for=[e for a, _ in chunk for e in a.events])
    return left
