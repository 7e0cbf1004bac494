# SPDX-License-Identifier: MIT
"""Shared helpers for the ftlazy benchmark scripts: timing, machine info,
tables and a STREAM-like triad reference.

The scripts are run by hand and only print; nothing here asserts on a time.
"""

from __future__ import annotations

import gc
import json
import os
import platform
import shlex
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

BENCH_DIR = os.path.dirname(os.path.abspath(__file__))
REPO_DIR = os.path.dirname(BENCH_DIR)


# {{{ timing

@dataclass
class Timing:
    """Best and median wall-clock time of the timed repetitions of one
    function, and its best process CPU time (seconds). For single-threaded
    Python work, CPU time is barely disturbed by other processes."""

    best: float
    median: float
    repeats: int
    cpu_best: float

    def __str__(self) -> str:
        return (f"best {fmt_seconds(self.best)}, median "
                f"{fmt_seconds(self.median)} (n={self.repeats})")


def best_of(fn: Callable[[], Any], repeat: int = 5, warmup: int = 1,
            budget_s: float = 10.0, min_repeat: int = 2,
            warmup_s: float = 0.0) -> Timing:
    """Time *fn* with :func:`time.perf_counter`: *warmup* untimed calls (and
    more until they have taken *warmup_s* seconds), then up to *repeat*
    timed calls. Stops early (after at least *min_repeat* timed calls) once
    the timed calls have used *budget_s* seconds, so slow workloads do not
    take minutes. *fn* must block until its work is done (e.g. call
    ``queue.finish()``)."""
    calls, start = 0, time.perf_counter()
    while calls < warmup or time.perf_counter() - start < warmup_s:
        fn()
        calls += 1
    times: list[float] = []
    cpu_times: list[float] = []
    spent = 0.0
    while len(times) < repeat:
        cpu_start = time.process_time()
        start = time.perf_counter()
        fn()
        elapsed = time.perf_counter() - start
        cpu_times.append(time.process_time() - cpu_start)
        times.append(elapsed)
        spent += elapsed
        if len(times) >= min_repeat and spent > budget_s:
            break
    return Timing(min(times), float(np.median(times)), len(times),
                  min(cpu_times))


def compiled_against_loop(name: str, result: Any, inputs: dict[str, Any],
                          loop: Callable[[], Any], repeat: int = 9,
                          loop_repeat: int | None = None, rtol: float = 1e-3,
                          atol: float = 1e-3) -> list[str]:
    """A table row ``[name, where it ran, ftlazy, numpy loop, loop /
    ftlazy]``: *result* compiled (with "on the host" where a loop of it
    falls back, see ``ft.HostEvaluationWarning``), checked against
    *loop()*, then both timed warm (best of *repeat*, and *loop_repeat*
    for the loop)."""
    import warnings

    import ftlazy as ft
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ft.HostEvaluationWarning)
        f = ft.compile(result)
        np.testing.assert_allclose(f(**inputs), loop(), rtol=rtol, atol=atol)
    warm = best_of(lambda: f(**inputs), repeat=repeat)
    reference = best_of(loop, repeat=loop_repeat or repeat)
    return [name, "on the host" if caught else "compiled",
            fmt_seconds(warm.best), fmt_seconds(reference.best),
            f"{reference.best / warm.best:.1f}x"]


def time_once(fn: Callable[[], Any]) -> tuple[float, float, Any]:
    """Wall-clock and process CPU seconds for one call of *fn*, and its
    result."""
    cpu_start = time.process_time()
    start = time.perf_counter()
    result = fn()
    return (time.perf_counter() - start, time.process_time() - cpu_start,
            result)

# }}}


# {{{ formatting

def fmt_seconds(t: float | None) -> str:
    """A time in s, ms or us with 3 significant digits; '-' for None."""
    if t is None:
        return "-"
    if t >= 1.0:
        return f"{t:.3g} s"
    if t >= 1e-3:
        return f"{t * 1e3:.3g} ms"
    return f"{t * 1e6:.3g} us"


def fmt_rate(x: float | None) -> str:
    """A rate (items per second) with an SI suffix; '-' for None."""
    if x is None:
        return "-"
    for scale, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if x >= scale:
            return f"{x / scale:.3g}{suffix}"
    return f"{x:.3g}"


def print_table(headers: Sequence[str], rows: Sequence[Sequence[Any]],
                title: str | None = None) -> None:
    """Print *rows* as a Markdown-style table with aligned columns."""
    cells = [[str(c) for c in headers]] + [[str(c) for c in r] for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    if title:
        print(f"\n{title}")

    def line(row: list[str]) -> str:
        padded = (c.ljust(w) for c, w in zip(row, widths, strict=True))
        return "| " + " | ".join(padded) + " |"

    print(line(cells[0]))
    print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    for r in cells[1:]:
        print(line(r))
    sys.stdout.flush()

# }}}


# {{{ machine information

def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def _git_revision() -> str:
    try:
        out = subprocess.run(["git", "-C", REPO_DIR, "rev-parse", "--short", "HEAD"],
                             capture_output=True, text=True, timeout=10,
                             check=False)
        dirty = subprocess.run(["git", "-C", REPO_DIR, "status", "--porcelain",
                                "--untracked-files=no"],
                               capture_output=True, text=True, timeout=10,
                               check=False)
        rev = out.stdout.strip() or "unknown"
        return rev + (" (+ uncommitted changes)" if dirty.stdout.strip() else "")
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def _version(package: str) -> str:
    from importlib import metadata
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return "not installed"


def print_header(title: str, queue: Any = None) -> None:
    """Print the command line and the machine: CPUs, OpenCL device,
    library versions. *queue*: a pyopencl queue whose device to describe."""
    print(f"# {title}")
    print(f"command: {shlex.join([os.path.basename(sys.executable)] + sys.argv)}")
    print(f"python {platform.python_version()} on {platform.platform()}")
    affinity = (len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity")
                else "?")
    print(f"CPU: {_cpu_model()}; os.cpu_count()={os.cpu_count()}, "
          f"usable={affinity}")
    versions = ", ".join(f"{pkg} {_version(pkg)}"
                         for pkg in ("numpy", "pyopencl", "loopy", "islpy"))
    print(f"versions: {versions}; ftlazy git {_git_revision()}")
    if queue is not None:
        dev = queue.device
        print(f"OpenCL device: {dev.name.strip()} [{dev.platform.name.strip()} "
              f"{dev.platform.version.strip()}], {dev.max_compute_units} compute "
              f"units, {dev.global_mem_size / 2**30:.1f} GiB")
    load = os.getloadavg() if hasattr(os, "getloadavg") else "?"
    print(f"gc enabled: {gc.isenabled()}; load average (1, 5, 15 min): {load}")
    sys.stdout.flush()

# }}}


# {{{ memory bandwidth reference (STREAM-like triad a = b + s*c)

TRIAD_SOURCE = """
__kernel void triad(__global double *restrict a,
                    __global const double *restrict b,
                    __global const double *restrict c, const double s)
{
    size_t i = get_global_id(0);
    a[i] = b[i] + s * c[i];
}
"""


def triad_bytes(n: int) -> int:
    """Bytes a triad over *n* float64 moves (write-allocate not counted)."""
    return 3 * 8 * n


def numpy_triad(n: int, repeat: int = 7) -> Timing:
    """Best time of numpy's triad, done in place in two passes (no
    temporaries: ``np.multiply(c, s, out=a); np.add(a, b, out=a)``)."""
    rng = np.random.default_rng(0)
    b, c = rng.random(n), rng.random(n)
    a = np.empty(n)
    s = 3.0

    def run() -> None:
        np.multiply(c, s, out=a)
        np.add(a, b, out=a)

    timing = best_of(run, repeat=repeat, warmup=2)
    np.testing.assert_allclose(a, b + s * c)
    return timing


def opencl_triad(queue: Any, n: int, repeat: int = 9) -> Timing:
    """Best time of a plain one-element-per-work-item OpenCL triad on
    *queue*'s device (default work-group size)."""
    import pyopencl as cl
    import pyopencl.array as cla

    rng = np.random.default_rng(0)
    b_host, c_host = rng.random(n), rng.random(n)
    b, c = cla.to_device(queue, b_host), cla.to_device(queue, c_host)
    a = cla.empty_like(b)
    kernel = cl.Kernel(cl.Program(queue.context, TRIAD_SOURCE).build(), "triad")
    s = np.float64(3.0)

    def run() -> None:
        kernel(queue, (n,), None, a.data, b.data, c.data, s)
        queue.finish()

    timing = best_of(run, repeat=repeat, warmup=2)
    np.testing.assert_allclose(a.get(), b_host + s * c_host)
    return timing

# }}}


# {{{ devices

def select_queue(kind: str = "default") -> Any:
    """A command queue on the first OpenCL device of *kind* (``"gpu"`` or
    ``"cpu"``) over all platforms, or ftlazy's default queue for
    ``"default"`` (``PYOPENCL_CTX`` picks it). Exits with a message when no
    device of *kind* is found."""
    import pyopencl as cl

    from ftlazy.target.loopy.device import default_queue, queue_on_first_device
    if kind == "default":
        return default_queue()
    wanted = {"gpu": cl.device_type.GPU, "cpu": cl.device_type.CPU}[kind]
    queue = queue_on_first_device((wanted,))
    if queue is None:
        raise SystemExit(f"no OpenCL {kind.upper()} device found on "
                         f"{[p.name for p in cl.get_platforms()]}")
    return queue


def opencl_copy(queue: Any, n: int, repeat: int = 9) -> Timing:
    """Best time of a device-to-device copy of *n* doubles on *queue*'s
    device (``clEnqueueCopyBuffer``): the bandwidth the memory-bound
    workloads are compared with (it moves ``2 * 8 * n`` bytes)."""
    import pyopencl as cl
    import pyopencl.array as cla

    src = cla.to_device(queue, np.arange(n, dtype=np.float64))
    dst = cla.empty_like(src)

    def run() -> None:
        cl.enqueue_copy(queue, dst.data, src.data, byte_count=src.nbytes)
        queue.finish()

    timing = best_of(run, repeat=repeat, warmup=2)
    assert dst.get()[-1] == n - 1
    return timing

# }}}


def run_cold_child(script: str, args: list[str], marker: str) -> dict:
    """Run ``python script *args`` in a fresh interpreter whose loopy and
    pyopencl (``XDG_CACHE_HOME``) and PoCL (``POCL_CACHE_DIR``) disk caches
    are empty, and return the JSON it prints after *marker*. The device
    probe's cache (``FTLAZY_CACHE_DIR``) is kept: a measurement of the
    device made once, not a compile cache."""
    from ftlazy.target.loopy.probe import probe_cache_dir
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ)
        env.setdefault("FTLAZY_CACHE_DIR", str(probe_cache_dir().parent))
        env["XDG_CACHE_HOME"] = tmp
        env["POCL_CACHE_DIR"] = os.path.join(tmp, "pocl")
        proc = subprocess.run([sys.executable, os.path.abspath(script), *args],
                              capture_output=True, text=True, env=env,
                              timeout=900, check=False)
    for line in proc.stdout.splitlines():
        if line.startswith(marker):
            return json.loads(line[len(marker):])
    raise RuntimeError(f"child failed ({proc.returncode}): {proc.stderr[-2000:]}")
