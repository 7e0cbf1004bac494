# SPDX-License-Identifier: MIT
"""The default OpenCL device: ``PYOPENCL_CTX`` if set, else a GPU, else the
CPU (PoCL from ``pip install ftlazy[pocl]`` serves)."""

from __future__ import annotations

import atexit
import os
import threading
import warnings
from functools import lru_cache

import numpy as np
import pyopencl as cl


def default_queue() -> cl.CommandQueue:
    """A command queue on the default device, created once per process; its
    compiler starts warming up at once (see :func:`warm_up_compiler`)."""
    queue = _make_default_queue()
    warm_up_compiler(queue)
    return queue


@lru_cache(maxsize=1)
def _make_default_queue() -> cl.CommandQueue:
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


#: contexts whose compiler is warmed up (or being warmed up), by id
_WARMED: set[int] = set()
_WARM_THREADS: list[threading.Thread] = []
_WARM_UP_SOURCE = ("__kernel void _ftlazy_warm_up(__global int *out) "
                   "{ out[0] = 1; }")


def _is_pocl(device: cl.Device) -> bool:
    return "pocl" in device.platform.vendor.lower() or \
        "portable computing language" in device.platform.name.lower()


def warm_up_compiler(queue: cl.CommandQueue) -> None:
    """Start loading the OpenCL compiler in the background (once per context).

    PoCL spends about 0.35 s loading its kernel library into a context on
    the first program build, and more on the first launch. A tiny program
    built and run on a background thread (pyopencl releases the GIL while
    the driver compiles) overlaps that with ftlazy's own code generation.
    Other platforms compile out of process or load lazily; they are left
    alone."""
    if id(queue.context) in _WARMED or not _is_pocl(queue.device):
        return
    _WARMED.add(id(queue.context))

    def warm() -> None:
        try:
            prg = cl.Program(queue.context, _WARM_UP_SOURCE).build(cache_dir=False)
            out = cl.Buffer(queue.context, cl.mem_flags.WRITE_ONLY, 4)
            prg._ftlazy_warm_up(queue, (1,), None, out)
            flag = np.zeros(1, np.int32)
            cl.enqueue_copy(queue, flag, out)
        except Exception:  # noqa: BLE001 (only a warm-up: real builds report)
            pass

    thread = threading.Thread(target=warm, name="ftlazy-compiler-warm-up",
                              daemon=True)
    _WARM_THREADS.append(thread)
    thread.start()


@atexit.register
def _join_warm_up_threads() -> None:
    # exiting while a thread is inside the driver's compiler can crash it
    for thread in _WARM_THREADS:
        thread.join(timeout=30)


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
