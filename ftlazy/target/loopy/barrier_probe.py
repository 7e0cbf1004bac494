# SPDX-License-Identifier: MIT
"""How kernels that loop over barrier-separated stages are built, and the
probe that decides it.

A scan that one work group runs (see :mod:`.scan`) is a loop over the steps
whose body is separated by work-group barriers, its carry kept in global
memory. PoCL 3.0 (LLVM 14), optimizing, dropped every global store of such
a kernel when its carry slot was written ``t - 2*(t/2)`` (loopy's form of
``t % 2``): the carries never changed. Scans now index their slots
``t & 1``, which it builds correctly for one loop, but not for a scan
nested in a scan's step (loops of barrier-separated stages inside such a
loop): the carries came out wrong. :func:`barrier_loop_build` runs small
kernels of both shapes, as ftlazy writes them, once per device, and
chooses the first build of :data:`BARRIER_LOOP_BUILDS` that runs both
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
from typing import Any

import numpy as np
from loopy.target.pyopencl_execution import (
    PyOpenCLExecutor, _KernelInfo, _Kernels)
from pytools import memoize_method

from ftlazy.target.loopy.disk_answers import read_answer, write_answer

__all__ = ["BARRIER_LOOP_BUILDS", "barrier_loop_build", "barrier_loop_kernels",
           "run_probe_kernel", "run_nested_probe_kernel",
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


#: a scan nested in a scan's step as ftlazy writes it for the GPU flavour (a
#: fold over each sequence's rows whose step folds over two rows, inner
#: carry ``+`` row): loops of barrier-separated stages inside such a loop.
#: PoCL 3.0 optimizing returned wrong carries for it even with ``t & 1``
#: slots, which :data:`PROBE_SOURCE` alone runs correctly
NESTED_PROBE_SOURCE = """
#define lid(N) ((int) get_local_id(N))
__kernel void __attribute__ ((reqd_work_group_size(256, 1, 1))) probe_nested(__global double const *__restrict__ _ft_in0, __global long const *__restrict__ _ft_in1, __global double *_ft_out0, long const _ft_n0, long const _ft_n1, long const _ft_n2, __global double *_ft_carry11, __global double *_ft_carry24, __global double const *__restrict__ _ft_t1, __global double *_ft_t17, __global double *_ft_t30, __global double *_ft_t41, __global double *_ft_t46, __global long const *__restrict__ _ft_t6)
{
  double _ft_v50;

  if (-1 + -1 * lid(0) + _ft_n0 >= 0)
    for (int _ft_i1_14 = 0; _ft_i1_14 <= 2; ++_ft_i1_14)
      for (int _ft_o12 = 0; _ft_o12 <= -1 + -1 * lid(0) + (255 + _ft_n0 + 255 * lid(0)) / 256; ++_ft_o12)
        _ft_carry11[3 * (256 * _ft_o12 + lid(0)) + _ft_i1_14] = _ft_t1[3 * (256 * _ft_o12 + lid(0)) + _ft_i1_14];
  barrier(CLK_GLOBAL_MEM_FENCE) /* Barrier inserted due to _ft_scan64__ft_lbarrier16 */;
  for (int _ft_t10 = 0; _ft_t10 <= -1 + _ft_n2; ++_ft_t10)
  {
    if (1 + -1 * lid(0) >= 0)
      for (int _ft_i1_20 = 0; _ft_i1_20 <= -1 + _ft_n0; ++_ft_i1_20)
        for (int _ft_i2_21 = 0; _ft_i2_21 <= 2; ++_ft_i2_21)
        {
          int const _ft_o18 = 0;

          _ft_t17[3 * _ft_n0 * lid(0) + 3 * _ft_i1_20 + _ft_i2_21] = ((_ft_o18 * 2 + lid(0) == 0) ? ((_ft_t10 < 0 + 1 * (_ft_in1[1 + _ft_i1_20] + -1 * _ft_in1[_ft_i1_20])) ? _ft_in0[3 * min(_ft_in1[_ft_i1_20] + _ft_t10, _ft_n1 + -1) + _ft_i2_21] : (double) (0.0)) : _ft_carry11[3 * _ft_n0 * (_ft_t10 & 1) + 3 * _ft_i1_20 + _ft_i2_21]);
        }
    barrier(CLK_GLOBAL_MEM_FENCE) /* Barrier inserted due to _ft_scan64__ft_lbarrier52 */;
    if (-1 + -1 * lid(0) + _ft_n0 >= 0)
      for (int _ft_i1_27 = 0; _ft_i1_27 <= 2; ++_ft_i1_27)
        for (int _ft_o25 = 0; _ft_o25 <= -1 + -1 * lid(0) + (255 + _ft_n0 + 255 * lid(0)) / 256; ++_ft_o25)
          _ft_carry24[3 * (256 * _ft_o25 + lid(0)) + _ft_i1_27] = _ft_carry11[3 * _ft_n0 * (_ft_t10 & 1) + 3 * (256 * _ft_o25 + lid(0)) + _ft_i1_27];
    barrier(CLK_GLOBAL_MEM_FENCE) /* Barrier inserted due to _ft_scan64__ft_lbarrier29 */;
    for (int _ft_t23 = 0; _ft_t23 <= 1; ++_ft_t23)
    {
      if (-1 + -1 * lid(0) + _ft_n0 >= 0)
        for (int _ft_i1_33 = 0; _ft_i1_33 <= 2; ++_ft_i1_33)
          for (int _ft_o31 = 0; _ft_o31 <= -1 + -1 * lid(0) + (255 + _ft_n0 + 255 * lid(0)) / 256; ++_ft_o31)
            _ft_t30[3 * (256 * _ft_o31 + lid(0)) + _ft_i1_33] = (_ft_carry24[3 * _ft_n0 * (_ft_t23 & 1) + 3 * (256 * _ft_o31 + lid(0)) + _ft_i1_33] + _ft_t17[3 * _ft_n0 * _ft_t23 + 3 * (256 * _ft_o31 + lid(0)) + _ft_i1_33]);
      barrier(CLK_GLOBAL_MEM_FENCE) /* Barrier inserted due to _ft_scan64__ft_lbarrier35 */;
      if (-1 + -1 * lid(0) + _ft_n0 >= 0)
        for (int _ft_i1_38 = 0; _ft_i1_38 <= 2; ++_ft_i1_38)
          for (int _ft_o36 = 0; _ft_o36 <= -1 + -1 * lid(0) + (255 + _ft_n0 + 255 * lid(0)) / 256; ++_ft_o36)
            _ft_carry24[3 * _ft_n0 * (_ft_t23 + 1 & 1) + 3 * (256 * _ft_o36 + lid(0)) + _ft_i1_38] = _ft_t30[3 * (256 * _ft_o36 + lid(0)) + _ft_i1_38];
      barrier(CLK_GLOBAL_MEM_FENCE) /* Barrier inserted due to _ft_scan64__ft_lbarrier40 */;
    }
    if (-1 + -1 * lid(0) + _ft_n0 >= 0)
      for (int _ft_i1_44 = 0; _ft_i1_44 <= 2; ++_ft_i1_44)
        for (int _ft_o42 = 0; _ft_o42 <= -1 + -1 * lid(0) + (255 + _ft_n0 + 255 * lid(0)) / 256; ++_ft_o42)
          _ft_t41[3 * (256 * _ft_o42 + lid(0)) + _ft_i1_44] = _ft_carry24[3 * _ft_n0 * (2 & 1) + 3 * (256 * _ft_o42 + lid(0)) + _ft_i1_44];
    barrier(CLK_GLOBAL_MEM_FENCE) /* Barrier inserted due to _ft_scan64__ft_lbarrier53 */;
    if (-1 + -1 * lid(0) + _ft_n0 >= 0)
      for (int _ft_i1_49 = 0; _ft_i1_49 <= 2; ++_ft_i1_49)
        for (int _ft_o47 = 0; _ft_o47 <= -1 + -1 * lid(0) + (255 + _ft_n0 + 255 * lid(0)) / 256; ++_ft_o47)
        {
          _ft_v50 = _ft_t41[3 * (256 * _ft_o47 + lid(0)) + _ft_i1_49];
          _ft_t46[3 * (256 * _ft_o47 + lid(0)) + _ft_i1_49] = ((_ft_t6[_ft_t10] < 0l + 1l * (_ft_in1[1 + 256 * _ft_o47 + lid(0)] + -1l * _ft_in1[256 * _ft_o47 + lid(0)])) ? _ft_v50 : _ft_carry11[3 * _ft_n0 * (_ft_t10 & 1) + 3 * (256 * _ft_o47 + lid(0)) + _ft_i1_49]);
        }
    barrier(CLK_GLOBAL_MEM_FENCE) /* Barrier inserted due to _ft_scan64__ft_lbarrier54 */;
    if (-1 + -1 * lid(0) + _ft_n0 >= 0)
      for (int _ft_i1_57 = 0; _ft_i1_57 <= 2; ++_ft_i1_57)
        for (int _ft_o55 = 0; _ft_o55 <= -1 + -1 * lid(0) + (255 + _ft_n0 + 255 * lid(0)) / 256; ++_ft_o55)
          _ft_carry11[3 * _ft_n0 * (_ft_t10 + 1 & 1) + 3 * (256 * _ft_o55 + lid(0)) + _ft_i1_57] = _ft_t46[3 * (256 * _ft_o55 + lid(0)) + _ft_i1_57];
    barrier(CLK_GLOBAL_MEM_FENCE) /* Barrier inserted due to _ft_scan64__ft_lbarrier59 */;
  }
  if (-1 + -1 * lid(0) + _ft_n0 >= 0)
    for (int _ft_i1_62 = 0; _ft_i1_62 <= 2; ++_ft_i1_62)
      for (int _ft_o60 = 0; _ft_o60 <= -1 + -1 * lid(0) + (255 + _ft_n0 + 255 * lid(0)) / 256; ++_ft_o60)
        _ft_out0[3 * (256 * _ft_o60 + lid(0)) + _ft_i1_62] = _ft_carry11[3 * _ft_n0 * (_ft_n2 & 1) + 3 * (256 * _ft_o60 + lid(0)) + _ft_i1_62];
}
"""


# {{{ the probe

_RESULTS: dict[Any, str] = {}


def _with_optnone(source: str) -> str:
    """*source* with its first kernel declared :data:`OPTNONE`."""
    return source.replace("__kernel", f"{OPTNONE} __kernel", 1)


def probe_source(build: str, source: str | None = None) -> str:
    """*source* (default: the probe kernel), as *build* declares it."""
    source = PROBE_SOURCE if source is None else source
    return _with_optnone(source) if build == "optnone" else source


def build_options(build: str) -> list[str]:
    """The build options *build* gives a program of barrier loops."""
    from ftlazy.target.loopy.device import quiet_build_options
    return ([OPT_DISABLE] if build == "separate" else []) + quiet_build_options()


def run_probe_kernel(queue: Any, build: str, source: str | None = None,
                     n: int = 5, steps: int = 5) -> bool:
    """Whether the probe kernel (or *source*, of its signature), built as
    *build* builds barrier loops, adds 1 to every carry element per step
    (*n* carry rows, at most 256: one per work item). Without *source*,
    the nested probe (:func:`run_nested_probe_kernel`) must pass too."""
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
    flat = bool(np.array_equal(out.get(), np.full((n, 3), 1.0 + steps)))
    return flat and (source is not None
                     or run_nested_probe_kernel(queue, build, n))


def run_nested_probe_kernel(queue: Any, build: str, n: int = 5) -> bool:
    """Whether :data:`NESTED_PROBE_SOURCE`, built as *build* builds
    barrier loops, folds *n* sequences (at most 256) of lengths ``i % 4``
    whose rows are all ones with the step ``h = (h + x) + h``: each
    sequence of length ``L`` ends at ``2**L - 1``."""
    import pyopencl as cl
    import pyopencl.array as cla
    kernel = cl.Program(queue.context, probe_source(
        build, NESTED_PROBE_SOURCE.replace("probe_nested", "probe", 1))).build(
        options=build_options(build)).probe
    lengths = np.arange(n) % 4
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    nnz, steps = int(offsets[-1]), int(lengths.max(initial=0))

    def zeros(*shape: int) -> Any:
        return cla.zeros(queue, shape, np.float64).data

    out = cla.zeros(queue, (n, 3), np.float64)
    kernel(queue, (256,), (256,),
           cla.to_device(queue, np.ones((max(nnz, 1), 3))).data,
           cla.to_device(queue, offsets).data, out.data, np.int64(n),
           np.int64(nnz), np.int64(steps), zeros(2, n, 3), zeros(2, n, 3),
           zeros(n, 3), zeros(2, n, 3), zeros(n, 3), zeros(n, 3), zeros(n, 3),
           cla.to_device(queue, np.arange(max(steps, 1), dtype=np.int64)).data)
    want = np.repeat((2.0 ** lengths - 1)[:, None], 3, axis=1)
    return bool(np.array_equal(out.get(), want))


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


def _disk_key(device: Any) -> str:
    digest = hashlib.sha256(
        "\0".join((PROBE_SOURCE, NESTED_PROBE_SOURCE, OPTNONE,
                   *BARRIER_LOOP_BUILDS)).encode()
    ).hexdigest()[:16]
    return " | ".join((f"{device.platform.name} {device.platform.version}".strip(),
                       device.name, device.driver_version, f"probe {digest}"))


#: the file of the probe's answers (see :mod:`.disk_answers`)
CACHE_FILE = "barrier_loops.json"


def _load(key: str) -> str | None:
    value = read_answer(CACHE_FILE, key)
    return value if value in BARRIER_LOOP_BUILDS else None


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
                write_answer(CACHE_FILE, disk_key, build)
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
    from loopy.codegen.result import process_preambles
    programs = list(codegen_result.device_programs)
    if build == "optimize" or not any(p.name in looping for p in programs):
        return [(codegen_result.device_code(), [])]
    preamble = "".join(process_preambles(codegen_result.device_preambles)) + "\n"
    if build == "optnone":
        # (a program's AST may be a cgen Collection around the function: the
        # declaration is marked in its text, as in the probe)
        texts = [_with_optnone(str(p.ast)) if p.name in looping
                 else str(p.ast) for p in programs]
        return [(preamble + "\n\n".join(texts), [])]
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
        looping = barrier_loop_kernels(t_unit[self.entrypoint])
        if not looping:     # built as loopy builds it
            return super().translation_unit_info(arg_to_dtype)
        codegen_result = generate_code_v2(t_unit)
        kernels = _Kernels()
        for source, options in opencl_programs(codegen_result, looping,
                                               self.build):
            program = cl.Program(self.context, source).build(options=options)
            for name in program.kernel_names.split(";"):
                setattr(kernels, name, getattr(program, name))
        return _KernelInfo(cl_kernels=kernels, invoker=self.get_invoker(
            t_unit, self.entrypoint, codegen_result))

# }}}
