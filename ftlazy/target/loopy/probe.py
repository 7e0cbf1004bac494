# SPDX-License-Identifier: MIT
"""What an OpenCL device computes right: math builtins at each vector width.

Drivers miscompile vector math builtins. PoCL 3.0 on an AVX-512 CPU, for
instance, crashes (``LLVM ERROR: Cannot emit physreg copy instruction``,
``Cannot select: ... vselect``, segfaults) or hangs compiling nearly every
builtin in 512-bit vectors (``double8``, ``float16``), ``fabs`` included,
while their arithmetic and all narrower vectors are right. :func:`probe_device`
finds out, for each dtype of :data:`PROBE_DTYPES`, each builtin of
:data:`PROBED_BUILTINS` (and ``"arith"``: ``+ - * /`` and a fused
expression) and each width of :data:`PROBE_WIDTHS`, whether a kernel builds,
runs and matches numpy, and caches the answer on disk (see
:func:`probe_cache_dir`). The kernels have the form of ftlazy's own vector
kernels (arguments of the vector type, ``reqd_work_group_size``): compilers
fail differently on other forms (PoCL 3.0 hangs for minutes over ``vload8``
of doubles, and its ``double16`` ``vload16``/``vstore16`` return garbage).

A driver crash kills its process, so nothing is built or run in the
calling process. The probe runs ``python -m ftlazy.target.loopy.probe
--child ...``, one child per dtype (the dtypes concurrently), and talks to
it line by line: the parent writes a case (``float64 8 all``), the child
prints ``START float64 8 all`` (flushed) before the risky build and run, and
a JSON line with the result after it. A child that dies or hangs (it is
killed after a timeout) takes the case in flight with it; the parent
records that case and starts a new child for the rest. At each width one
kernel runs every builtin that passed every narrower width; each builtin
writes its own outputs, so wrong values are attributed to builtins
directly. If that kernel crashes, fails to build or hangs, each builtin is
tried alone at that width (:func:`_probe_dtype` says when it gives up).

Children run with ``POCL_KERNEL_CACHE=0``, ``PYOPENCL_NO_CACHE=1`` and a
private, temporary ``POCL_CACHE_DIR``, so that a crash leaves nothing in
PoCL's or pyopencl's disk caches, and without core dumps.

``python -m ftlazy.target.loopy.probe [--refresh]`` probes the default
device (see :mod:`ftlazy.target.loopy.device`), or reads its cached probe,
and prints a table.
"""

from __future__ import annotations

import argparse
import collections
import hashlib
import json
import os
import pathlib
import queue
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager, suppress
from dataclasses import dataclass, replace
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    import pyopencl as cl

#: the dtypes probed, by numpy name
PROBE_DTYPES = ("float32", "float64")
#: the vector widths probed (1 is the scalar type)
PROBE_WIDTHS = (1, 2, 4, 8, 16)
#: OpenCL builtins probed: every one of these must be covered
PROBED_BUILTINS = ("exp", "exp2", "log", "log2", "log10", "sin", "cos", "tan",
                   "asin", "acos", "atan", "atan2", "sinh", "cosh", "tanh",
                   "sqrt", "fabs", "floor", "ceil", "fmod", "pow", "fmin",
                   "fmax", "copysign")
#: the family of plain arithmetic (``+ - * /`` and a fused expression)
ARITH = "arith"
#: the family of a vector's lanes read at a run-time index (``v[k]`` in a
#: loop over ``k``, a clang extension of OpenCL C): code generation keeps
#: a loop over the lanes where it passed, instead of unrolling it
LANES = "lanes"
#: a case that is still running after this many seconds is counted as failed
#: (the bound for the first case of a dtype; see :func:`_probe_dtype`)
CASE_TIMEOUT_S = 60.0
#: families tried alone at one width that may crash, fail to build or time
#: out (and of those, time out) before the rest are given up at that width
_FAILURES_PER_WIDTH = 4
_TIMEOUTS_PER_WIDTH = 2

#: every family a probe reports on
_FAMILIES = (*PROBED_BUILTINS, ARITH, LANES)
#: the order in which families are tried alone: arithmetic first (every
#: vector kernel needs it), then what compiles to a few instructions, then
#: the library functions that compilers get wrong
_BISECT_ORDER = (ARITH, LANES, "fabs", "floor", "ceil", "fmin", "fmax", "copysign",
                 "sqrt", "fmod", *(name for name in PROBED_BUILTINS if name not in
                                   ("fabs", "floor", "ceil", "fmin", "fmax",
                                    "copysign", "sqrt", "fmod")))
#: values per family: a multiple of the widest width times the group size
_N_VALUES = 1024
#: work items per work group
_LOCAL_SIZE = 64
#: bumped whenever the probe's kernels or verdicts change: part of the key
_SCHEMA = 4
_MODULE = "ftlazy.target.loopy.probe"
_KERNEL_NAME = "ftlazy_probe"
_C_SCALAR = {"float32": "float", "float64": "double"}
#: test hooks, ``dtype:width:builtin[,...]``: the child aborts at (crash),
#: perturbs the outputs of (corrupt) or sleeps for an hour at (hang) every
#: case that runs a named builtin at that dtype and width
_CRASH_HOOK = "FTLAZY_PROBE_CRASH_ON"
_CORRUPT_HOOK = "FTLAZY_PROBE_CORRUPT_ON"
_HANG_HOOK = "FTLAZY_PROBE_HANG_ON"
#: test hook: the widths probed (comma-separated; the probe stops at the
#: first width of :data:`PROBE_WIDTHS` not listed)
_WIDTHS_HOOK = "FTLAZY_PROBE_WIDTHS"


# {{{ the result

@dataclass(frozen=True)
class ProbeResult:
    """What :func:`probe_device` found out about one device."""

    #: ``platform name and version | device | driver version | ftlazy version``
    device_key: str
    #: dtype name -> builtin (or ``"arith"``) -> the widths (ascending,
    #: a subset of :data:`PROBE_WIDTHS`) that ran and matched numpy
    passing_widths: Mapping[str, Mapping[str, tuple[int, ...]]]
    #: (dtype, builtin, width) -> short reason for each failure, e.g.
    #: ``"crashed (signal 11)"``, ``"wrong values (max rel err 3.1e-02)"``,
    #: ``"build failed: ..."``
    failures: Mapping[tuple[str, str, int], str]
    #: seconds the probe took when it ran (kept when loaded from a cache)
    seconds: float
    #: whether this result was loaded from a cache instead of probed now
    from_cache: bool

    def __hash__(self) -> int:
        return hash((self.device_key, self.seconds, self.from_cache))

    def widest(self, dtype: str, builtins: Iterable[str] | None = None) -> int:
        """Widest width at which every given builtin (default: all probed)
        and ``"arith"`` passed, and every narrower width passed too; 1 at
        least. ``"arith"`` always counts: every vector kernel does
        arithmetic. :class:`ValueError` for a dtype or builtin that was not
        probed."""
        if dtype not in self.passing_widths:
            raise ValueError(f"dtype {dtype!r} was not probed; probed dtypes: "
                             f"{', '.join(self.passing_widths)}")
        by_family = self.passing_widths[dtype]
        if isinstance(builtins, str):
            builtins = (builtins,)
        names = set(PROBED_BUILTINS if builtins is None else builtins)
        names.add(ARITH)
        unknown = sorted(names - set(by_family))
        if unknown:
            raise ValueError(f"builtins {', '.join(unknown)} were not probed; "
                             f"probed: {', '.join(by_family)}")
        best = 1
        for width in PROBE_WIDTHS:
            if not all(width in by_family[name] for name in names):
                break
            best = width
        return best

    def to_json(self) -> dict[str, Any]:
        """This result as JSON data (the disk cache's format)."""
        return {
            "schema": _SCHEMA,
            "device_key": self.device_key,
            "passing_widths": {dtype: {name: list(widths)
                                       for name, widths in by_family.items()}
                               for dtype, by_family in self.passing_widths.items()},
            "failures": [[dtype, name, width, reason] for (dtype, name, width),
                         reason in sorted(self.failures.items())],
            "seconds": self.seconds,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any], *,
                  from_cache: bool = True) -> ProbeResult:
        """The result that :meth:`to_json` wrote (:class:`ValueError` if
        *data* is not in the current format)."""
        if data.get("schema") != _SCHEMA:
            raise ValueError(f"probe cache schema {data.get('schema')!r}, "
                             f"expected {_SCHEMA}")
        return _make_result(
            str(data["device_key"]),
            {dtype: {name: [int(w) for w in widths]
                     for name, widths in by_family.items()}
             for dtype, by_family in data["passing_widths"].items()},
            {(str(dtype), str(name), int(width)): str(reason)
             for dtype, name, width, reason in data["failures"]},
            float(data["seconds"]), from_cache)


def _make_result(device_key: str,
                 passing: Mapping[str, Mapping[str, Iterable[int]]],
                 failures: Mapping[tuple[str, str, int], str],
                 seconds: float, from_cache: bool) -> ProbeResult:
    return ProbeResult(
        device_key=device_key,
        passing_widths=MappingProxyType({
            dtype: MappingProxyType({name: tuple(sorted(set(widths)))
                                     for name, widths in by_family.items()})
            for dtype, by_family in passing.items()}),
        failures=MappingProxyType(dict(sorted(failures.items()))),
        seconds=seconds, from_cache=from_cache)

# }}}


# {{{ the cases: inputs, kernels, references

@dataclass(frozen=True)
class _Family:
    """One probed family: the domains of its arguments ``a`` (and ``b``),
    and its outputs, each an OpenCL expression and its numpy reference."""

    name: str
    domains: tuple[tuple[float, float], ...]
    outputs: tuple[tuple[str, Callable[..., np.ndarray]], ...]
    #: OpenCL functions the outputs call, given the scalar type, the vector
    #: type and the width
    helpers: Callable[[str, str, int], str] | None = None
    #: magnitudes put in every other input lane, next to values of the
    #: domain scaled down to tiny ones (see :func:`_inputs`): a vector
    #: builtin whose slow path for large arguments runs for the whole vector
    #: (PoCL 3.0's float32 ``sin``, ``cos``, ``tan``) gets the small lanes
    #: wrong, which a probe within the domain alone never shows
    large: tuple[float, ...] = ()


def _lanes_helper(scalar: str, vec: str, width: int) -> str:
    """``ftlazy_probe_lanes(a, b)``: ``a * b``, each lane read with a
    run-time index (as a loop over a vector's lanes reads them) into a
    private array, and the result built from that array's elements by
    constant index (so lanes read out of order do not pass)."""
    if width == 1:
        body = "    return a * b;"
    else:
        elements = ", ".join(f"p[{k}]" for k in range(width))
        body = (f"    {scalar} p[{width}];\n"
                f"    for (int k = 0; k < {width}; ++k)\n"
                "        p[k] = a[k] * b[k];\n"
                f"    return ({vec})({elements});")
    return (f"static inline {vec} ftlazy_probe_lanes({vec} a, {vec} b)\n"
            f"{{\n{body}\n}}")


def _builtin(name: str, ref: Callable[..., np.ndarray],
             *domains: tuple[float, float],
             large: tuple[float, ...] = ()) -> _Family:
    args = ", ".join("ab"[:len(domains)])
    return _Family(name, domains, ((f"{name}({args})", ref),), large=large)


#: large arguments of both signs (finite in float32), and positive ones
_LARGE = (1e5, -3e7, 1e10, -1e30)
_LARGE_POSITIVE = (1e5, 3e7, 1e10, 1e30)


_SPECS: dict[str, _Family] = {family.name: family for family in (
    _builtin("exp", np.exp, (-10, 10), large=_LARGE),
    _builtin("exp2", np.exp2, (-10, 10), large=_LARGE),
    _builtin("log", np.log, (0.1, 10), large=_LARGE_POSITIVE),
    _builtin("log2", np.log2, (0.1, 10), large=_LARGE_POSITIVE),
    _builtin("log10", np.log10, (0.1, 10), large=_LARGE_POSITIVE),
    _builtin("sin", np.sin, (-10, 10), large=_LARGE),
    _builtin("cos", np.cos, (-10, 10), large=_LARGE),
    _builtin("tan", np.tan, (-1.4, 1.4), large=_LARGE),
    _builtin("asin", np.arcsin, (-0.9, 0.9)),
    _builtin("acos", np.arccos, (-0.9, 0.9)),
    _builtin("atan", np.arctan, (-10, 10), large=_LARGE),
    _builtin("atan2", np.arctan2, (-5, 5), (-5, 5)),
    _builtin("sinh", np.sinh, (-5, 5), large=_LARGE),
    _builtin("cosh", np.cosh, (-5, 5), large=_LARGE),
    _builtin("tanh", np.tanh, (-5, 5), large=_LARGE),
    _builtin("sqrt", np.sqrt, (0.01, 100), large=_LARGE_POSITIVE),
    _builtin("fabs", np.abs, (-10, 10)),
    _builtin("floor", np.floor, (-10, 10)),
    _builtin("ceil", np.ceil, (-10, 10)),
    _builtin("fmod", np.fmod, (-10, 10), (0.5, 3)),
    _builtin("pow", np.power, (0.1, 10), (-3, 3)),
    _builtin("fmin", np.fmin, (-10, 10), (-10, 10)),
    _builtin("fmax", np.fmax, (-10, 10), (-10, 10)),
    _builtin("copysign", np.copysign, (-10, 10), (-10, 10)),
    # positive operands: the fused expression is products and quotients of
    # correctly rounded sums, so its error stays within a few ulp however
    # the compiler contracts it
    _Family(ARITH, ((0.5, 10), (0.5, 5)), (
        ("a + b", np.add), ("a - b", np.subtract), ("a * b", np.multiply),
        ("a / b", np.divide),
        ("(a - b) * (a + b) / (b * b + a * b)",
         lambda a, b: (a - b) * (a + b) / (b * b + a * b)))),
    _Family(LANES, ((-10, 10), (-10, 10)),
            (("ftlazy_probe_lanes(a, b)", np.multiply),), _lanes_helper),
)}
assert tuple(_SPECS) == _FAMILIES


def _case_families(name: str) -> tuple[str, ...]:
    """The families a case runs: ``"all"`` or a comma-separated list."""
    if name == "all":
        return _FAMILIES
    families = tuple(name.split(","))
    unknown = [family for family in families if family not in _SPECS]
    if unknown:
        raise ValueError(f"unknown probe families {', '.join(unknown)}")
    return families


def _layout(families: Iterable[str]
            ) -> Iterator[tuple[_Family, int, tuple[int, ...]]]:
    """Each family with the offset of its inputs in ``x`` and ``y`` and the
    offsets of its outputs in ``out`` (:data:`_N_VALUES` values each)."""
    n_out = 0
    for k, name in enumerate(families):
        family = _SPECS[name]
        offsets = tuple(range(n_out, n_out + len(family.outputs)))
        n_out += len(family.outputs)
        yield family, k * _N_VALUES, tuple(j * _N_VALUES for j in offsets)


def _inputs(families: tuple[str, ...], dtype: str
            ) -> tuple[np.ndarray, np.ndarray]:
    """Deterministic inputs spread over each family's domains (a Weyl
    sequence: well spread, never exactly an integer or zero)."""
    i = np.arange(_N_VALUES) + 0.5
    steps = (0.6180339887498949, 0.4142135623730951)
    x = np.ones(len(families) * _N_VALUES)
    y = np.ones(len(families) * _N_VALUES)
    for family, offset, _ in _layout(families):
        for arr, (lo, hi), step in zip((x, y), family.domains, steps):
            arr[offset:offset + _N_VALUES] = lo + (hi - lo) * ((i * step) % 1.0)
        if family.large:
            # (every vector of two or more lanes mixes a large argument with
            # the domain's values, scaled by 1, 1e-1, 1e-2 and 1e-3)
            values = x[offset:offset + _N_VALUES]
            values[0::2] *= 10.0 ** -(np.arange(_N_VALUES // 2) % 4)
            values[1::2] = np.resize(family.large, _N_VALUES // 2)
    return x.astype(dtype), y.astype(dtype)


def _kernel_source(dtype: str, width: int, families: tuple[str, ...]) -> str:
    """One kernel in which each family reads its inputs and writes its
    outputs as ``width``-wide vectors, in the form of ftlazy's own vector
    kernels: arguments of the vector type, work groups of a required size,
    one vector per work item."""
    scalar = _C_SCALAR[dtype]
    vec = scalar if width == 1 else f"{scalar}{width}"
    lines = []
    if dtype == "float64":
        lines.append("#pragma OPENCL EXTENSION cl_khr_fp64 : enable")
    for family, _, _ in _layout(families):
        if family.helpers is not None:
            lines.append(family.helpers(scalar, vec, width))
    lines += [(f"__kernel void __attribute__ ((reqd_work_group_size("
               f"{_LOCAL_SIZE}, 1, 1))) {_KERNEL_NAME}("),
              f"    __global {vec} const *__restrict__ x,",
              f"    __global {vec} const *__restrict__ y,",
              f"    __global {vec} *__restrict__ out)",
              "{",
              (f"    const int i = {_LOCAL_SIZE} * (int) get_group_id(0)"
               " + (int) get_local_id(0);")]
    for family, in_offset, out_offsets in _layout(families):
        lines.append(f"    {{  /* {family.name} */")
        for arg, src in zip("ab", "xy"[:len(family.domains)]):
            lines.append(f"        const {vec} {arg} = "
                         f"{src}[{in_offset // width} + i];")
        for (expr, _), out_offset in zip(family.outputs, out_offsets):
            lines.append(f"        out[{out_offset // width} + i] = {expr};")
        lines.append("    }")
    lines.append("}")
    return "\n".join(lines) + "\n"


def _tolerance(dtype: str) -> float:
    """Largest relative error accepted: 64 ulp (OpenCL allows up to 16 for
    ``pow``, numpy's float64 reference a few more)."""
    return 64 * float(np.finfo(dtype).eps)


def _max_rel_errors(families: tuple[str, ...], x: np.ndarray, y: np.ndarray,
                    out: np.ndarray) -> dict[str, float]:
    """Each family's largest relative error against its numpy reference
    (computed in float64; ``inf`` for a NaN or infinite result)."""
    errors = {}
    a64, b64, got = (arr.astype(np.float64) for arr in (x, y, out))
    for family, in_offset, out_offsets in _layout(families):
        sl = slice(in_offset, in_offset + _N_VALUES)
        args = (a64[sl], b64[sl])[:len(family.domains)]
        worst = 0.0
        for (_, ref_fn), out_offset in zip(family.outputs, out_offsets):
            with np.errstate(all="ignore"):
                ref = ref_fn(*args)
            res = got[out_offset:out_offset + _N_VALUES]
            with np.errstate(all="ignore"):
                err = np.abs(res - ref) / np.maximum(np.abs(ref),
                                                     np.finfo(np.float64).tiny)
            # (an overflow to the reference's infinity is exact)
            err = np.where(res == ref, 0.0, err)
            err = np.where(np.isfinite(err), err, np.inf)
            worst = max(worst, float(err.max()))
        errors[family.name] = worst
    return errors

# }}}


# {{{ the child

#: addresses in compiler messages (LLVM's nodes), which differ every run
_ADDRESS = re.compile(r"0x[0-9a-fA-F]+")


def _parse_hook(var: str) -> set[tuple[str, int, str]]:
    """The cases named by test hook *var*: ``dtype:width:builtin,...``."""
    cases = set()
    for item in os.environ.get(var, "").split(","):
        if item.strip():
            dtype, width, name = item.strip().split(":")
            cases.add((dtype, int(width), name))
    return cases


def _short_message(text: str) -> str:
    """The most telling line of a driver's message, shortened."""
    lines = [_ADDRESS.sub("0x..", line.strip()) for line in text.splitlines()
             if line.strip()]
    for line in lines:
        if "error" in line.lower() and not line.lower().startswith("build on"):
            return line[:160]
    return (lines[0] if lines else "no message")[:160]


def _run_case(ctx: cl.Context, cq: cl.CommandQueue, dtype: str, width: int,
              name: str, corrupt: set[tuple[str, int, str]]) -> dict[str, Any]:
    """Build and run one case; its outcome as JSON data."""
    import pyopencl as cl

    families = _case_families(name)
    x, y = _inputs(families, dtype)
    out = np.zeros(sum(len(f.outputs) for f, _, _ in _layout(families))
                   * _N_VALUES, dtype=dtype)
    try:
        program = cl.Program(ctx, _kernel_source(dtype, width, families)).build(
            cache_dir=False)
    except cl.Error as exc:
        return {"status": "build failed", "message": _short_message(str(exc))}
    try:
        mf = cl.mem_flags
        x_buf = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=x)
        y_buf = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=y)
        out_buf = cl.Buffer(ctx, mf.WRITE_ONLY, out.nbytes)
        getattr(program, _KERNEL_NAME)(cq, (_N_VALUES // width,), (_LOCAL_SIZE,),
                                       x_buf, y_buf, out_buf)
        cl.enqueue_copy(cq, out, out_buf)
        cq.finish()
    except cl.Error as exc:
        return {"status": "run failed", "message": _short_message(str(exc))}
    for family, _, out_offsets in _layout(families):
        if (dtype, width, family.name) in corrupt:
            for offset in out_offsets:
                seg = out[offset:offset + _N_VALUES]
                seg[...] = seg * np.asarray(1.001, dtype) + np.asarray(1e-3, dtype)
    return {"status": "ok", "errors": _max_rel_errors(families, x, y, out)}


def _child_main(platform_index: int, device_index: int, platform_name: str,
                device_name: str) -> int:
    """Serve cases read from stdin (``dtype width name`` per line) on one
    device until stdin closes: print ``START dtype width name`` before each
    and a JSON line with its outcome after it."""
    with suppress(ImportError, ValueError, OSError):  # no core dumps
        import resource
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    import pyopencl as cl

    platform = cl.get_platforms()[platform_index]
    device = platform.get_devices()[device_index]
    if platform.name != platform_name or device.name != device_name:
        print(json.dumps({"status": "device mismatch", "message":
                          f"device {platform_index}.{device_index} is "
                          f"{platform.name!r} | {device.name!r}, expected "
                          f"{platform_name!r} | {device_name!r}"}), flush=True)
        return 3
    ctx = cl.Context([device])
    cq = cl.CommandQueue(ctx)
    crash_on = _parse_hook(_CRASH_HOOK)
    corrupt_on = _parse_hook(_CORRUPT_HOOK)
    hang_on = _parse_hook(_HANG_HOOK)
    print("READY", flush=True)
    while True:
        line = sys.stdin.readline()
        if not line or line.strip() == "quit":
            return 0
        dtype, width_text, name = line.split()
        width = int(width_text)
        print(f"START {dtype} {width} {name}", flush=True)
        cases = {(dtype, width, family) for family in _case_families(name)}
        if cases & crash_on:
            os.abort()
        if cases & hang_on:
            time.sleep(3600)
        result = _run_case(ctx, cq, dtype, width, name, corrupt_on)
        result.update(dtype=dtype, width=width, case=name)
        print(json.dumps(result), flush=True)

# }}}


# {{{ the parent

@dataclass(frozen=True)
class _Target:
    """The device as a child finds it, and its cache key."""

    platform_index: int
    device_index: int
    platform_name: str
    device_name: str
    fp64: bool
    key: str

    @classmethod
    def of(cls, device: cl.Device) -> _Target:
        import pyopencl as cl

        platforms = cl.get_platforms()
        for pi, platform in enumerate(platforms):
            if platform != device.platform:
                continue
            for di, candidate in enumerate(platform.get_devices()):
                if candidate == device:
                    return cls(pi, di, platform.name, device.name,
                               _has_fp64(device), _device_key(
                                   platform.name, platform.version, device.name,
                                   device.driver_version, _ftlazy_version()))
        raise ValueError(f"device {device.name!r} is not one of its platform's "
                         "devices (a sub-device?): it cannot be probed")


def _has_fp64(device: cl.Device) -> bool:
    try:
        return int(device.double_fp_config) != 0
    except Exception:  # noqa: BLE001 (some drivers refuse the query)
        return "cl_khr_fp64" in device.extensions.split()


def _ftlazy_version() -> str:
    import ftlazy

    version = getattr(ftlazy, "__version__", None)
    if version is None:  # asked while ftlazy is still being imported
        from importlib.metadata import PackageNotFoundError
        from importlib.metadata import version as dist_version
        try:
            version = dist_version("ftlazy")
        except PackageNotFoundError:
            version = "unknown"
    return str(version)


def _device_key(platform: str, platform_version: str, device: str,
                driver_version: str, ftlazy_version: str) -> str:
    """The human-readable key of a probe: what identifies the compiler that
    was probed, and the probe itself. Test hooks in the environment are part
    of it, so that they never reach a real result's cache entry."""
    parts = [f"{platform} {platform_version}".strip(), device, driver_version,
             f"ftlazy {ftlazy_version} (probe {_SCHEMA})"]
    hooks = [f"{var}={os.environ[var]}"
             for var in (_CRASH_HOOK, _CORRUPT_HOOK, _HANG_HOOK, _WIDTHS_HOOK)
             if os.environ.get(var)]
    if hooks:
        parts.append("test hooks " + " ".join(hooks))
    return " | ".join(parts)


def _key_file_name(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()[:24] + ".json"


class _ChildDied(Exception):
    """The child exited or was killed while a case was in flight."""


class _Child:
    """One child process serving cases, with threads draining its pipes."""

    def __init__(self, target: _Target, env: Mapping[str, str]) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", _MODULE, "--child", str(target.platform_index),
             str(target.device_index), target.platform_name, target.device_name],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            text=True, bufsize=1, env=dict(env))
        self.lines: queue.Queue[str | None] = queue.Queue()
        self.stderr: collections.deque[str] = collections.deque(maxlen=100)
        self._threads = [
            threading.Thread(target=self._drain, args=(self.proc.stdout, True),
                             daemon=True),
            threading.Thread(target=self._drain, args=(self.proc.stderr, False),
                             daemon=True)]
        for thread in self._threads:
            thread.start()

    def _drain(self, stream: Any, is_stdout: bool) -> None:
        for line in stream:
            if is_stdout:
                self.lines.put(line.rstrip("\n"))
            else:
                self.stderr.append(line.rstrip("\n"))
        if is_stdout:
            self.lines.put(None)

    def _next_line(self, deadline: float) -> str:
        """The next line of stdout; :class:`TimeoutError` after *deadline*,
        :class:`_ChildDied` at the end of the output."""
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError
        try:
            line = self.lines.get(timeout=remaining)
        except queue.Empty:
            raise TimeoutError from None
        if line is None:
            self.lines.put(None)
            raise _ChildDied
        return line

    def wait_ready(self, timeout: float) -> None:
        """Wait for the child's ``READY``; :class:`RuntimeError` if it
        never comes."""
        deadline = time.monotonic() + timeout
        try:
            while True:
                line = self._next_line(deadline)
                if line == "READY":
                    return
                if line.startswith("{"):
                    raise RuntimeError(json.loads(line).get("message", line))
        except (TimeoutError, _ChildDied):
            why = (f"did not start within {timeout:.0f} s"
                   if self.proc.poll() is None else self._death())
            self.kill()
            raise RuntimeError(f"the probe's child process {why}: "
                               + " / ".join(list(self.stderr)[-5:])) from None

    def run(self, dtype: str, width: int, name: str,
            timeout: float) -> dict[str, Any] | str:
        """Run one case: its JSON outcome, or why the child failed on it
        (the child is then gone)."""
        deadline = time.monotonic() + timeout
        self.stderr.clear()
        try:
            assert self.proc.stdin is not None
            self.proc.stdin.write(f"{dtype} {width} {name}\n")
            self.proc.stdin.flush()
            while True:
                line = self._next_line(deadline)
                if line.startswith("{"):
                    return json.loads(line)
        except TimeoutError:
            self.kill()
            return f"timed out ({timeout:.0f} s)"
        except (_ChildDied, BrokenPipeError, OSError):
            return self._death()

    def _death(self) -> str:
        try:
            rc = self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.kill()
            rc = self.proc.returncode
        for thread in self._threads:
            thread.join(timeout=5)
        if rc is not None and rc < 0:
            try:
                what = f"signal {-rc}, {signal.Signals(-rc).name}"
            except ValueError:
                what = f"signal {-rc}"
        else:
            what = f"exit code {rc}"
        lines = [_ADDRESS.sub("0x..", line.strip()) for line in self.stderr
                 if line.strip()]
        errors = [line for line in lines if "error" in line.lower()]
        detail = (errors or lines or [""])[-1][:160]
        return f"crashed ({what})" + (f": {detail}" if detail else "")

    def kill(self) -> None:
        """End the child now."""
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()

    def close(self) -> None:
        """Ask the child to exit; kill it if it does not."""
        try:
            assert self.proc.stdin is not None
            self.proc.stdin.write("quit\n")
            self.proc.stdin.close()
            self.proc.wait(timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            self.kill()


def _case_name(families: Iterable[str]) -> str:
    """How a case names its families on the wire: ``all`` or a list."""
    families = tuple(families)
    return "all" if families == _FAMILIES else ",".join(families)


def _probe_dtype(target: _Target, dtype: str, env: Mapping[str, str],
                 widths: tuple[int, ...], timeout: float
                 ) -> tuple[dict[str, set[int]], dict[tuple[str, str, int], str]]:
    """Probe every family at each of *widths* for one dtype, in children
    started one after another: the passing widths and the failures.

    At each width one kernel runs every family that passed every narrower
    width (a width only counts when the narrower ones pass, so the others
    are skipped). If it does not build, run or finish, each of them runs
    alone, in :data:`_BISECT_ORDER`.

    Some compilers take minutes over a vector builtin before they crash,
    and a kernel that slow to compile is no use anyway. So once the first
    case (the kernel of all families at the narrowest width, child start
    included) has taken ``t`` seconds, a kernel of several families gets
    ``15 t`` seconds and one of a single family ``5 t`` (at least 10 and
    5 s, at most *timeout*). Each crash costs a new child, and at some
    widths a compiler fails on nearly everything (PoCL 3.0 on AVX-512 on
    every builtin in 512-bit vectors, arithmetic excepted). So once
    :data:`_FAILURES_PER_WIDTH` families alone have crashed, failed to
    build or timed out at a width, or :data:`_TIMEOUTS_PER_WIDTH` have
    timed out, the rest are not tried there."""
    passing: dict[str, set[int]] = {name: set() for name in _FAMILIES}
    failures: dict[tuple[str, str, int], str] = {}
    tolerance = _tolerance(dtype)
    child: _Child | None = None
    group_timeout = single_timeout = timeout

    def run(width: int, families: tuple[str, ...]) -> dict[str, Any] | str:
        nonlocal child
        if child is None:
            child = _Child(target, env)
            child.wait_ready(timeout)
        outcome = child.run(dtype, width, _case_name(families),
                            group_timeout if len(families) > 1 else single_timeout)
        if isinstance(outcome, str):
            child = None
        return outcome

    def record(width: int, families: tuple[str, ...],
               outcome: dict[str, Any] | str) -> bool:
        """Record a case's outcome: whether its kernel ran."""
        if isinstance(outcome, str):
            reason = outcome
        elif outcome.get("status") == "ok":
            for family, err in outcome["errors"].items():
                if err <= tolerance:
                    passing[family].add(width)
                else:
                    failures[dtype, family, width] = (
                        f"wrong values (max rel err {err:.1e})")
            return True
        else:
            reason = f"{outcome.get('status')}: {outcome.get('message')}"
        if len(families) == 1:
            failures[dtype, families[0], width] = reason
        return False

    alive = _FAMILIES
    try:
        for width in PROBE_WIDTHS:
            for family in _FAMILIES:
                if family not in alive:
                    failed_at = min(w for w in PROBE_WIDTHS if w < width
                                    and (dtype, family, w) in failures)
                    failures[dtype, family, width] = (
                        f"skipped (failed at width {failed_at})")
            if width not in widths:
                for family in alive:
                    failures[dtype, family, width] = f"not probed ({_WIDTHS_HOOK})"
                alive = ()
            if not alive:
                continue
            start = time.monotonic()
            ran = record(width, alive, run(width, alive))
            if group_timeout == timeout:
                t = time.monotonic() - start
                group_timeout = min(timeout, max(10.0, 15 * t))
                single_timeout = min(timeout, max(5.0, 5 * t))
            if not ran and len(alive) > 1:
                failed = timeouts = 0
                for family in sorted(alive, key=_BISECT_ORDER.index):
                    if failed >= _FAILURES_PER_WIDTH:
                        failures[dtype, family, width] = (
                            f"not tried ({failed} builtins failed alone "
                            "at this width)")
                        continue
                    if timeouts >= _TIMEOUTS_PER_WIDTH:
                        failures[dtype, family, width] = (
                            f"not tried ({timeouts} builtins timed out "
                            "at this width)")
                        continue
                    outcome = run(width, (family,))
                    failed += not record(width, (family,), outcome)
                    timeouts += isinstance(outcome, str) and \
                        outcome.startswith("timed out")
            alive = tuple(f for f in alive if width in passing[f])
    finally:
        if child is not None:
            child.close()
    return passing, failures


def _child_env(pocl_cache: str) -> dict[str, str]:
    """The children's environment: no disk caches that a crash could leave
    half-written, PoCL's scratch files in *pocl_cache*, and this ftlazy
    first on the path."""
    env = dict(os.environ)
    env.update(POCL_KERNEL_CACHE="0", PYOPENCL_NO_CACHE="1",
               PYOPENCL_COMPILER_OUTPUT="0", POCL_CACHE_DIR=pocl_cache)
    root = str(pathlib.Path(__file__).resolve().parents[3])
    env["PYTHONPATH"] = os.pathsep.join(
        [root] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    return env


def _run_probe(target: _Target, timeout: float = CASE_TIMEOUT_S) -> ProbeResult:
    """Probe *target* now, in child processes."""
    start = time.perf_counter()
    widths = PROBE_WIDTHS
    if os.environ.get(_WIDTHS_HOOK):
        widths = tuple(int(w) for w in os.environ[_WIDTHS_HOOK].split(","))
    dtypes = [d for d in PROBE_DTYPES if d != "float64" or target.fp64]
    passing: dict[str, dict[str, set[int]]] = {
        dtype: {name: set() for name in _FAMILIES} for dtype in PROBE_DTYPES}
    failures: dict[tuple[str, str, int], str] = {}
    if not target.fp64:
        failures.update({("float64", name, width): "unsupported (no cl_khr_fp64)"
                         for name in _FAMILIES for width in PROBE_WIDTHS})
    pocl_cache = tempfile.mkdtemp(prefix="ftlazy-probe-pocl-")
    try:
        env = _child_env(pocl_cache)
        with ThreadPoolExecutor(max_workers=len(dtypes)) as pool:
            futures = {dtype: pool.submit(_probe_dtype, target, dtype, env, widths,
                                           timeout)
                       for dtype in dtypes}
            for dtype, future in futures.items():
                passing[dtype], dtype_failures = future.result()
                failures.update(dtype_failures)
    finally:
        shutil.rmtree(pocl_cache, ignore_errors=True)
    return _make_result(target.key, passing, failures,
                        time.perf_counter() - start, from_cache=False)


@contextmanager
def _file_lock(path: pathlib.Path) -> Iterator[None]:
    """Hold an exclusive lock on *path* (where ``fcntl`` exists and the
    file can be opened), so that processes probing one device at once probe
    it once."""
    try:
        import fcntl
        f = open(path, "a")  # noqa: SIM115 (closed below)
    except (ImportError, OSError):
        yield
        return
    with f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def _load(path: pathlib.Path, key: str) -> ProbeResult | None:
    try:
        with open(path) as f:
            result = ProbeResult.from_json(json.load(f))
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return result if result.device_key == key else None


def _store(path: pathlib.Path, result: ProbeResult) -> None:
    """Write *result* to *path* atomically (a warning if it cannot)."""
    try:
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.stem,
                                   suffix=".tmp")
        try:
            with os.fdopen(fd, "w") as f:
                json.dump(result.to_json(), f, indent=1)
            os.replace(tmp, path)
        except BaseException:
            os.unlink(tmp)
            raise
    except OSError as exc:
        warnings.warn(f"ftlazy cannot write its probe cache {path} ({exc})",
                      stacklevel=3)


_RESULTS: dict[str, ProbeResult] = {}
_RESULTS_LOCK = threading.Lock()


def probe_device(device: cl.Device, *, refresh: bool = False) -> ProbeResult:
    """What *device* computes right (see the module's docstring).

    Cached in the process and on disk under :func:`probe_cache_dir`, by the
    platform, device, driver and ftlazy versions; ``refresh=True`` probes
    again and replaces the cached result. A fresh probe takes seconds; a
    cached one spawns nothing. :class:`RuntimeError` if a child process
    cannot even open the device."""
    target = _Target.of(device)
    with _RESULTS_LOCK:
        if not refresh and target.key in _RESULTS:
            return _RESULTS[target.key]
        path = probe_cache_dir() / _key_file_name(target.key)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            warnings.warn(f"ftlazy cannot create its probe cache {path.parent} "
                          f"({exc})", stacklevel=2)
        with _file_lock(path.with_suffix(".lock")):
            result = None if refresh else _load(path, target.key)
            if result is None:
                result = _run_probe(target)
                _store(path, result)
        _RESULTS[target.key] = replace(result, from_cache=True)
        return result


def probe_cache_dir() -> pathlib.Path:
    """Where probe results are cached: ``probe`` under ``$FTLAZY_CACHE_DIR``,
    else under ``$XDG_CACHE_HOME/ftlazy``, else under ``~/.cache/ftlazy``."""
    if os.environ.get("FTLAZY_CACHE_DIR"):
        root = pathlib.Path(os.environ["FTLAZY_CACHE_DIR"])
    elif os.environ.get("XDG_CACHE_HOME"):
        root = pathlib.Path(os.environ["XDG_CACHE_HOME"]) / "ftlazy"
    else:
        root = pathlib.Path.home() / ".cache" / "ftlazy"
    return root / "probe"


def pocl_cache_dir() -> pathlib.Path | None:
    """Where PoCL keeps its kernel cache, as PoCL 3 decides it:
    ``$POCL_CACHE_DIR``, else ``$XDG_CACHE_HOME/pocl/kcache``, else
    ``~/.cache/pocl/kcache`` (``%LOCALAPPDATA%\\pocl`` on Windows). None
    where this process's PoCL keeps no kernel cache (``POCL_KERNEL_CACHE``
    set to anything not starting with ``1``)."""
    enabled = os.environ.get("POCL_KERNEL_CACHE")
    if enabled is not None and not enabled.startswith("1"):
        return None
    if os.environ.get("POCL_CACHE_DIR") is not None:
        return pathlib.Path(os.environ["POCL_CACHE_DIR"])
    if sys.platform == "win32":
        base = os.environ.get("LOCALAPPDATA") or os.environ.get("TEMP")
        return pathlib.Path(base) / "pocl" if base else None
    if os.environ.get("XDG_CACHE_HOME"):
        return pathlib.Path(os.environ["XDG_CACHE_HOME"]) / "pocl" / "kcache"
    if os.environ.get("HOME") is not None:
        return pathlib.Path(os.environ["HOME"]) / ".cache" / "pocl" / "kcache"
    return pathlib.Path("/tmp/pocl/kcache")


#: the entries PoCL makes in its cache directory: program directories (two
#: letters of the build hash, ``A`` to ``P``) and scratch files
_POCL_ENTRY = re.compile(r"[A-P]{2}|tempfile.*|tempdir.*|_UNCACHED.*")


def purge_pocl_kernel_cache() -> None:
    """Delete PoCL's kernel cache (:func:`pocl_cache_dir`): every entry of
    the shape PoCL makes there, and nothing else, since ``POCL_CACHE_DIR``
    may name a directory shared with other files. A no-op where there is
    none. Other processes using PoCL's cache at the same time may find
    their entries gone and rebuild them."""
    directory = pocl_cache_dir()
    if directory is None or not directory.is_dir():
        return
    for entry in directory.iterdir():
        if not _POCL_ENTRY.fullmatch(entry.name):
            continue
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry, ignore_errors=True)
        else:
            entry.unlink(missing_ok=True)

# }}}


# {{{ by hand

#: table cells, by a failure reason's first word
_CELLS = {"crashed": "crash", "build": "build", "run": "run", "timed": "hang",
          "wrong": "wrong", "skipped": "skip", "not": "-", "unsupported": "n/a"}


def format_result(result: ProbeResult) -> str:
    """*result* as text tables (builtin x width, one per dtype) followed by
    the reasons of the failures, for people."""
    lines = [f"device: {result.device_key}",
             f"probe took {result.seconds:.1f} s"
             + (" (loaded from cache)" if result.from_cache else ""),
             ("ok: ran and matched numpy; crash; build: failed to build; "
              "run: failed to run; hang: timed out; wrong: wrong values; "
              "skip: failed at a narrower width; -: not tried; n/a: unsupported")]
    for dtype, by_family in result.passing_widths.items():
        lines += ["", f"{dtype} (widest for all: {result.widest(dtype)})",
                  f"{'':10}" + "".join(f"{w:>7}" for w in PROBE_WIDTHS)]
        for name, widths in by_family.items():
            cells = [
                "ok" if width in widths else _CELLS.get(
                    result.failures.get((dtype, name, width), "?").split()[0], "?")
                for width in PROBE_WIDTHS]
            lines.append(f"{name:10}" + "".join(f"{c:>7}" for c in cells))
    listed = [f"  {dtype} {name} x{width}: {reason}"
              for (dtype, name, width), reason in result.failures.items()
              if _CELLS.get(reason.split()[0]) not in ("skip", "-", "n/a")]
    if listed:
        lines += ["", "failures:", *listed]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """``python -m ftlazy.target.loopy.probe [--refresh]``: probe the
    default device and print :func:`format_result`. (``--child`` is the
    probe's own child process.)"""
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["--child"]:
        pi, di, platform_name, device_name = args[1:]
        return _child_main(int(pi), int(di), platform_name, device_name)
    parser = argparse.ArgumentParser(
        prog=f"python -m {_MODULE}",
        description="Probe which vector widths of OpenCL math builtins the "
                    "default device computes right.")
    parser.add_argument("--refresh", action="store_true",
                        help="probe again instead of reading the cache")
    options = parser.parse_args(args)
    from ftlazy.target.loopy.device import default_queue
    device = default_queue().device
    print(format_result(probe_device(device, refresh=options.refresh)))
    return 0


if __name__ == "__main__":
    sys.exit(main())

# }}}

# vim: foldmethod=marker
