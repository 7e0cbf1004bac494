# SPDX-License-Identifier: MIT
"""How kernels that loop over barrier-separated stages are built, and the
probe that decides it.

A scan that one work group runs (see :mod:`.scan`) is a loop over the steps
whose body is separated by work-group barriers, its carry kept in global
memory. PoCL 3.0 (LLVM 14), optimizing, dropped every global store of such
a kernel when its carry slot was written ``t - 2*(t/2)`` (loopy's form of
``t % 2``): the carries never changed. Scans now index their slots
``t & 1``, which it builds correctly. :func:`barrier_loop_build` runs a
small kernel of that shape, as ftlazy writes it, once per device, and
chooses the first build of :data:`BARRIER_LOOP_BUILDS` that runs it
correctly:

* ``"optimize"``: like every other kernel;
* ``"optnone"``: the program optimized, the kernels with barriers inside
  loops declared ``__attribute__((optnone))`` (the compiler leaves them
  alone, the other kernels of the program stay optimized);
* ``"separate"`` (where neither runs it correctly, or neither builds):
  the kernels with barriers inside loops in an OpenCL program of their own
  built with ``-cl-opt-disable``, the others in one built as usual.

A device that cannot run the probe kernel (work groups under 256 items,
no doubles) gets ``"optimize"``: nothing was seen failing there.

:class:`BarrierLoopExecutor` builds a loopy program that way.
"""

from __future__ import annotations

import hashlib
import json
import os
import pathlib
from typing import Any

import numpy as np
from loopy.target.pyopencl_execution import (
    PyOpenCLExecutor, _KernelInfo, _Kernels)
from pytools import memoize_method

__all__ = ["BARRIER_LOOP_BUILDS", "barrier_loop_build", "barrier_loop_kernels",
           "opencl_programs", "program_executor", "program_sources",
           "BarrierLoopExecutor"]

#: the builds of kernels with barriers inside loops, best first
BARRIER_LOOP_BUILDS = ("optimize", "optnone", "separate")
#: what ``"optnone"`` declares such kernels with
OPTNONE = "__attribute__((optnone, noinline))"
#: what ``"separate"`` builds their program with
OPT_DISABLE = "-cl-opt-disable"

#: a two-slot carry updated in a loop of barrier-separated stages, with the
#: loop bounds loopy writes and the slot index ``t & 1`` that scans write
PROBE_SOURCE = """
#define lid(N) ((int) get_local_id(N))
__kernel void __attribute__ ((reqd_work_group_size(256, 1, 1)))
probe(__global double *out, long const n, long const steps,
      __global double *carry, __global double const *__restrict__ init,
      __global char const *__restrict__ mask, __global double *a,
      __global double *b)
{
  double v;
  if (-1 + -1 * lid(0) + n >= 0)
    for (int k = 0; k <= 2; ++k)
      for (int o = 0; o <= -1 + -1 * lid(0) + (255 + n + 255 * lid(0)) / 256; ++o)
        carry[3 * (256 * o + lid(0)) + k] = init[3 * (256 * o + lid(0)) + k];
  barrier(CLK_GLOBAL_MEM_FENCE);
  for (int t = 0; t <= -1 + steps; ++t)
  {
    if (lid(0) < n)
      for (int k = 0; k <= 2; ++k)
        a[3 * lid(0) + k] = 1.0;
    barrier(CLK_GLOBAL_MEM_FENCE);
    if (-1 + -1 * lid(0) + n >= 0)
      for (int k = 0; k <= 2; ++k)
        for (int o = 0; o <= -1 + -1 * lid(0) + (255 + n + 255 * lid(0)) / 256; ++o)
        {
          v = a[3 * (256 * o + lid(0)) + k];
          b[3 * (256 * o + lid(0)) + k] = ((char) (mask[n * t + 256 * o + lid(0)])
              ? carry[3 * n * (t & 1) + 3 * (256 * o + lid(0)) + k] + v
              : carry[3 * n * (t & 1) + 3 * (256 * o + lid(0)) + k]);
        }
    barrier(CLK_GLOBAL_MEM_FENCE);
    if (-1 + -1 * lid(0) + n >= 0)
      for (int k = 0; k <= 2; ++k)
        for (int o = 0; o <= -1 + -1 * lid(0) + (255 + n + 255 * lid(0)) / 256; ++o)
          carry[3 * n * (t + 1 & 1) + 3 * (256 * o + lid(0)) + k]
              = b[3 * (256 * o + lid(0)) + k];
    barrier(CLK_GLOBAL_MEM_FENCE);
  }
  if (-1 + -1 * lid(0) + n >= 0)
    for (int k = 0; k <= 2; ++k)
      for (int o = 0; o <= -1 + -1 * lid(0) + (255 + n + 255 * lid(0)) / 256; ++o)
        out[3 * (256 * o + lid(0)) + k] = carry[3 * n * (steps & 1) + 3 * (256 * o + lid(0)) + k];
}
"""


# {{{ the probe

_RESULTS: dict[Any, str] = {}


def probe_source(build: str, source: str | None = None) -> str:
    """*source* (default: the probe kernel), as *build* declares it."""
    source = PROBE_SOURCE if source is None else source
    return (source.replace("__kernel", f"{OPTNONE} __kernel", 1)
            if build == "optnone" else source)


def build_options(build: str) -> list[str]:
    """The build options *build* gives a program of barrier loops."""
    return [OPT_DISABLE] if build == "separate" else []


def run_probe_kernel(queue: Any, build: str, source: str | None = None,
                     n: int = 5, steps: int = 5) -> bool:
    """Whether the probe kernel (or *source*, of its signature), built as
    *build* builds barrier loops, adds 1 to every carry element per step
    (*n* carry rows, at most 256: one per work item)."""
    import pyopencl as cl
    import pyopencl.array as cla
    kernel = cl.Program(queue.context, probe_source(build, source)).build(
        options=build_options(build)).probe
    out = cla.zeros(queue, (n, 3), np.float64)
    init = cla.to_device(queue, np.ones((n, 3)))
    mask = cla.to_device(queue, np.ones((steps, n), np.int8))
    carry = cla.zeros(queue, (2, n, 3), np.float64)
    a = cla.zeros(queue, (n, 3), np.float64)
    b = cla.zeros(queue, (n, 3), np.float64)
    kernel(queue, (256,), (256,), out.data, np.int64(n), np.int64(steps),
           carry.data, init.data, mask.data, a.data, b.data)
    return bool(np.array_equal(out.get(), np.full((n, 3), 1.0 + steps)))


def _choose(device: Any) -> tuple[str, bool]:
    """The first build that runs the probe kernel correctly on *device*,
    and whether the answer may be cached (every build tried built and ran)."""
    import pyopencl as cl
    if device.max_work_group_size < 256 or not device.double_fp_config:
        return "optimize", True     # cannot run here; nothing was seen failing
    queue = cl.CommandQueue(cl.Context([device]))
    clean = True
    for build in BARRIER_LOOP_BUILDS[:-1]:
        try:
            if run_probe_kernel(queue, build):
                return build, clean
        except Exception:  # noqa: BLE001 (a build that fails is not chosen)
            clean = False
    return BARRIER_LOOP_BUILDS[-1], clean


def _cache_file() -> pathlib.Path:
    from ftlazy.target.loopy.probe import probe_cache_dir
    return probe_cache_dir() / "barrier_loops.json"


def _disk_key(device: Any) -> str:
    digest = hashlib.sha256(
        "\0".join((PROBE_SOURCE, OPTNONE, *BARRIER_LOOP_BUILDS)).encode()
    ).hexdigest()[:16]
    return " | ".join((f"{device.platform.name} {device.platform.version}".strip(),
                       device.name, device.driver_version, f"probe {digest}"))


def _load(key: str) -> str | None:
    try:
        value = json.loads(_cache_file().read_text()).get(key)
    except (OSError, ValueError, AttributeError):
        return None
    return value if value in BARRIER_LOOP_BUILDS else None


def _store(key: str, value: str) -> None:
    path = _cache_file()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            known = json.loads(path.read_text())
        except (OSError, ValueError):
            known = {}
        if not isinstance(known, dict):
            known = {}
        known[key] = value
        tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(known, indent=1, sort_keys=True))
        os.replace(tmp, path)
    except OSError:
        pass    # an unwritable cache only costs the probe again


def barrier_loop_build(device: Any) -> str:
    """How *device*'s kernels with barriers inside loops are built: the
    first of :data:`BARRIER_LOOP_BUILDS` that runs the probe kernel
    correctly (see the module docs). Computed once per device and process,
    and cached on disk (``barrier_loops.json`` in
    :func:`~.probe.probe_cache_dir`, keyed by platform, device, driver and
    the probe). An answer that a build or run failing decided is not
    cached."""
    key = (device.platform.name, device.name, device.driver_version,
           device.int_ptr)
    if key not in _RESULTS:
        disk_key = _disk_key(device)
        cached = _load(disk_key)
        if cached is not None:
            _RESULTS[key] = cached
        else:
            try:
                build, clean = _choose(device)
            except Exception:  # noqa: BLE001 (no answer: the safe build)
                build, clean = BARRIER_LOOP_BUILDS[-1], False
            _RESULTS[key] = build
            if clean:
                _store(disk_key, build)
    return _RESULTS[key]

# }}}


# {{{ building programs

def barrier_loop_kernels(kernel: Any) -> frozenset[str]:
    """The OpenCL kernels of the linearized loopy *kernel* that have a
    work-group barrier inside a loop."""
    from loopy.schedule import Barrier, CallKernel, EnterLoop, LeaveLoop
    names: set[str] = set()
    current, depth = None, 0
    for item in kernel.linearization:
        if isinstance(item, CallKernel):
            current, depth = item.kernel_name, 0
        elif isinstance(item, EnterLoop):
            depth += 1
        elif isinstance(item, LeaveLoop):
            depth -= 1
        elif isinstance(item, Barrier) and depth and current is not None:
            names.add(current)
    return frozenset(names)


def opencl_programs(codegen_result: Any, looping: frozenset[str], build: str
                    ) -> list[tuple[str, list[str]]]:
    """``(source, build options)`` of each OpenCL program that loopy's
    *codegen_result* is built as, the kernels named in *looping* (see
    :func:`barrier_loop_kernels`) built as *build* says."""
    import cgen
    from loopy.codegen.result import process_preambles
    programs = list(codegen_result.device_programs)
    if build == "optimize" or not any(p.name in looping for p in programs):
        return [(codegen_result.device_code(), [])]
    preamble = "".join(process_preambles(codegen_result.device_preambles)) + "\n"
    if build == "optnone":
        asts = [cgen.FunctionBody(cgen.DeclSpecifier(p.ast.fdecl, OPTNONE),
                                  p.ast.body) if p.name in looping else p.ast
                for p in programs]
        return [(preamble + "\n\n".join(map(str, asts)), [])]
    if build != "separate":
        raise ValueError(f"unknown barrier loop build {build!r}; known: "
                         f"{BARRIER_LOOP_BUILDS}")
    rest = [p for p in programs if p.name not in looping]
    own = [p for p in programs if p.name in looping]
    result = [(preamble + "\n\n".join(str(p.ast) for p in rest), [])] if rest else []
    note = (f"/* kernels with barriers inside loops: a program of their own, "
            f"built with {OPT_DISABLE} (see ftlazy's barrier_probe) */\n")
    result.append((note + preamble + "\n\n".join(str(p.ast) for p in own),
                   build_options(build)))
    return result


def program_sources(t_unit: Any, build: str) -> list[tuple[str, list[str]]]:
    """:func:`opencl_programs` of the loopy translation unit *t_unit*."""
    import loopy as lp
    if build == "optimize":
        return [(lp.generate_code_v2(t_unit).device_code(), [])]
    t_unit = lp.linearize(lp.preprocess_program(t_unit))
    return opencl_programs(lp.generate_code_v2(t_unit),
                           barrier_loop_kernels(t_unit.default_entrypoint), build)


def program_executor(t_unit: Any, context: Any, build: str) -> Any:
    """Loopy's executor of *t_unit* on *context*, building its kernels with
    barriers inside loops as *build* says."""
    if build == "optimize":
        return t_unit.executor(context)
    return BarrierLoopExecutor(context, t_unit, t_unit.default_entrypoint.name,
                               build)


class BarrierLoopExecutor(PyOpenCLExecutor):
    """Loopy's PyOpenCL executor, whose OpenCL programs are
    :func:`opencl_programs` (one, or two for ``"separate"``)."""

    def __init__(self, context: Any, t_unit: Any, entrypoint: str,
                 build: str) -> None:
        super().__init__(context, t_unit, entrypoint)
        self.build = build

    @memoize_method
    def translation_unit_info(self, arg_to_dtype: Any = None) -> Any:
        import pyopencl as cl
        from loopy.codegen import generate_code_v2
        t_unit = self.get_typed_and_scheduled_translation_unit(arg_to_dtype)
        codegen_result = generate_code_v2(t_unit)
        kernels = _Kernels()
        looping = barrier_loop_kernels(t_unit[self.entrypoint])
        for source, options in opencl_programs(codegen_result, looping,
                                               self.build):
            program = cl.Program(self.context, source).build(options=options)
            for name in program.kernel_names.split(";"):
                setattr(kernels, name, getattr(program, name))
        return _KernelInfo(cl_kernels=kernels, invoker=self.get_invoker(
            t_unit, self.entrypoint, codegen_result))

# }}}
