# SPDX-License-Identifier: MIT
"""The default OpenCL device: ``PYOPENCL_CTX`` if set, else a GPU, else the
CPU (PoCL, which ``pip install ftlazy`` brings on Linux x86_64, serves)."""

from __future__ import annotations

import atexit
import contextlib
import os
import threading
import warnings
from collections.abc import Iterator
from functools import lru_cache

import numpy as np
import pyopencl as cl


def default_queue() -> cl.CommandQueue:
    """A command queue on the default device, created once per process; its
    compiler starts warming up at once (see :func:`warm_up_compiler`)."""
    queue = _make_default_queue()
    warm_up_compiler(queue)
    return queue


#: what to do when no OpenCL driver is found
_INSTALL_A_DRIVER = (
    "ftlazy runs its kernels through an OpenCL driver. On Linux x86_64, "
    "'pip install ftlazy' brings one, PoCL (the pocl-binary-distribution "
    "package): reinstall it with \"pip install 'pyopencl[pocl]'\". "
    "Elsewhere, install a GPU vendor's OpenCL driver or your system's PoCL "
    "(Debian and Ubuntu: apt-get install pocl-opencl-icd)")


@lru_cache(maxsize=1)
def _make_default_queue() -> cl.CommandQueue:
    ctx_spec = os.environ.get("PYOPENCL_CTX")
    if ctx_spec:
        try:
            ctx = cl.create_some_context(interactive=False)
        except (cl.Error, RuntimeError) as err:
            if not _get_platforms():
                raise RuntimeError(
                    f"no OpenCL platform found (PYOPENCL_CTX={ctx_spec!r} "
                    f"can select none). {_INSTALL_A_DRIVER}") from err
            raise RuntimeError(
                f"PYOPENCL_CTX={ctx_spec!r} selects no OpenCL device here "
                f"({err}). Unset PYOPENCL_CTX to use the default device, or "
                "set it to 'PLATFORM:DEVICE' (numbers or name fragments) "
                f"from: {_describe_devices()}") from err
        return cl.CommandQueue(ctx)
    platforms = _get_platforms()
    if not platforms:
        raise RuntimeError(f"no OpenCL platform found. {_INSTALL_A_DRIVER}")
    queue = queue_on_first_device((cl.device_type.GPU, cl.device_type.CPU,
                                   cl.device_type.ALL))
    if queue is None:
        raise RuntimeError("no OpenCL device found on the platforms "
                           f"{[p.name for p in platforms]}. {_INSTALL_A_DRIVER}")
    return queue


def queue_on_first_device(device_types: tuple) -> cl.CommandQueue | None:
    """A queue on the first device of the first of *device_types* that any
    platform has (``pyopencl.device_type`` flags), or None."""
    for device_type in device_types:
        for platform in _get_platforms():
            try:
                devices = platform.get_devices(device_type=device_type)
            except cl.Error:
                continue
            if devices:
                return cl.CommandQueue(cl.Context([devices[0]]))
    return None


def _get_platforms() -> list[cl.Platform]:
    """The OpenCL platforms, ``[]`` where there are none: the ICD loader
    then makes ``clGetPlatformIDs`` fail (``PLATFORM_NOT_FOUND_KHR``)
    rather than return an empty list."""
    try:
        return cl.get_platforms()
    except cl.Error:
        return []


def _describe_devices() -> str:
    """The platforms and devices, numbered as ``PYOPENCL_CTX`` counts them."""
    parts = []
    for i, platform in enumerate(_get_platforms()):
        try:
            devices = platform.get_devices()
        except cl.Error:
            devices = []
        names = ", ".join(f"{j}: {d.name.strip()!r}"
                          for j, d in enumerate(devices))
        parts.append(f"platform {i}: {platform.name.strip()!r} ({names})")
    return "; ".join(parts)


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


def silence_compiler_output() -> None:
    """Keep a user's output clean of harmless compiler chatter.

    PoCL's OpenCL compiler (clang inside libpocl) writes ``1 warning
    generated.`` straight to file descriptor 2 when a kernel it builds has
    a warning (for instance clang's note that a ``double8`` argument
    changes the ABI without AVX-512), whatever pyopencl's settings; pyopencl
    then repeats the build log as a :class:`pyopencl.CompilerWarning`.
    ``-w`` in ``POCL_EXTRA_BUILD_FLAGS`` (which PoCL reads at each build)
    turns clang's warnings off for every program PoCL builds in this
    process and in the child processes that inherit the variable; a build
    error is still printed and raised with its log. Loopy warns that it
    cannot infer size parameters such as ``n`` from a ``2*n + 1`` shape,
    which ftlazy always passes itself.

    Other drivers' compilers print such lines too (NVIDIA's did on an
    H100): ftlazy builds its own programs with OpenCL's ``-w`` option
    (:func:`quiet_build_options`).

    ``PYOPENCL_COMPILER_OUTPUT=1``, pyopencl's switch for showing compiler
    output, keeps the warnings and the build logs."""
    from loopy.diagnostic import ParameterFinderWarning
    warnings.filterwarnings("ignore", category=ParameterFinderWarning)
    if os.environ.get("PYOPENCL_COMPILER_OUTPUT") == "1":
        return
    flags = os.environ.get("POCL_EXTRA_BUILD_FLAGS", "")
    if "-w" not in flags.split():
        os.environ["POCL_EXTRA_BUILD_FLAGS"] = f"{flags} -w".strip()
    warnings.filterwarnings("ignore", category=cl.CompilerWarning)


def quiet_build_options() -> list[str]:
    """The OpenCL build options that turn a compiler's warnings off (``-w``,
    which every OpenCL compiler accepts), for the programs ftlazy builds;
    none where ``PYOPENCL_COMPILER_OUTPUT=1`` asks for the compiler's
    output. A build error is still raised with its log."""
    if os.environ.get("PYOPENCL_COMPILER_OUTPUT") == "1":
        return []
    return ["-w"]


@contextlib.contextmanager
def quiet_successful_builds() -> Iterator[None]:
    """Within it, a build that succeeds with a non-empty log raises no
    :class:`pyopencl.CompilerWarning`, also where the caller turned warnings
    into errors: NVIDIA's compiler logs "Function ftlazy_kernel_1 is a
    kernel, so overriding noinline attribute" for programs of several
    kernels whatever ``-w`` says (an H200, CUDA 13). A failed build still
    raises with its log; ``PYOPENCL_COMPILER_OUTPUT=1`` keeps the
    warnings."""
    if os.environ.get("PYOPENCL_COMPILER_OUTPUT") == "1":
        yield
        return
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", category=cl.CompilerWarning)
        yield


#: OpenCL's build option for float32 division and square roots rounded as
#: IEEE 754 (and numpy) round them
CORRECTLY_ROUNDED_DIVIDE_SQRT = "-cl-fp32-correctly-rounded-divide-sqrt"


def kernel_build_options(correctly_rounded_divide_sqrt: bool) -> list[str]:
    """The OpenCL build options of ftlazy's kernels: :func:`quiet_build_options`
    and, where the device supports it, :data:`CORRECTLY_ROUNDED_DIVIDE_SQRT`
    (``DeviceProfile.correctly_rounded_divide_sqrt``)."""
    return quiet_build_options() + (
        [CORRECTLY_ROUNDED_DIVIDE_SQRT] if correctly_rounded_divide_sqrt else [])
