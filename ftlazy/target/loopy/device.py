# SPDX-License-Identifier: MIT
"""The default OpenCL device: ``PYOPENCL_CTX`` if set, else a GPU, else the
CPU (PoCL from ``pip install ftlazy[pocl]`` serves)."""

from __future__ import annotations

import os
import warnings
from functools import lru_cache

import pyopencl as cl


@lru_cache(maxsize=1)
def default_queue() -> cl.CommandQueue:
    """A command queue on the default device, created once per process."""
    if os.environ.get("PYOPENCL_CTX"):
        ctx = cl.create_some_context(interactive=False)
        return cl.CommandQueue(ctx)
    platforms = cl.get_platforms()
    if not platforms:
        raise RuntimeError("no OpenCL platform found: install PoCL with "
                           "'pip install ftlazy[pocl]' or a GPU driver")
    for device_type in (cl.device_type.GPU, cl.device_type.CPU,
                        cl.device_type.ALL):
        for platform in platforms:
            try:
                devices = platform.get_devices(device_type=device_type)
            except cl.Error:
                continue
            if devices:
                return cl.CommandQueue(cl.Context([devices[0]]))
    raise RuntimeError("no OpenCL device found")


def device_kind(device: cl.Device) -> str:
    """'gpu' or 'cpu': decides how loops are parallelized."""
    return "gpu" if device.type & cl.device_type.GPU else "cpu"


def silence_compiler_output() -> None:
    """PoCL prints harmless build logs as warnings, and loopy warns that it
    cannot infer size parameters such as ``n`` from a ``2*n + 1`` shape,
    which ftlazy always passes itself; keep user output clean."""
    from loopy.diagnostic import ParameterFinderWarning
    warnings.filterwarnings("ignore", category=cl.CompilerWarning)
    warnings.filterwarnings("ignore", category=ParameterFinderWarning)
