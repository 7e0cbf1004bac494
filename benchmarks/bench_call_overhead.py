# SPDX-License-Identifier: MIT
"""Per-call overhead of compiled programs: what a call of ``ft.compile``'s
function costs next to enqueueing the same kernels by hand.

Run by hand: ``python benchmarks/bench_call_overhead.py [--calls 2000]
[--batches 5]``. Workloads:

* ``1 kernel``: ``2*x + 1`` on 16 float32 (one kernel);
* ``10 kernels``: nine steps ``y = sin(y) - sum(y)/16`` on 16 float32 (each
  sum a kernel of its own: ten kernels);
* ``J10``: the 3-layer LSTM over 64 sequences of
  ``bench_jagged_sequences.py`` (a FractalTensor input);
  ``J10, new lengths``: the same with another length distribution at each
  call (20 batches in turn: the shapes change, so what a call derives from
  them is derived again; no raw enqueue).

Each is timed as a call of the compiled function (numpy inputs and
outputs, the results fetched) and as the *raw enqueue* of the same
kernels: loopy's host code, which sets each kernel's arguments and
enqueues it (and takes the global temporaries from a memory pool), called
with the buffers and sizes that one call of the function used, prepared
once, then ``queue.finish()``. Both are timed in wall-clock time and in
CPU time of the calling thread (``time.thread_time``: the host's own work,
without the OpenCL device's worker threads, which on a CPU device share
the cores). The difference of the two CPU times is ftlazy's host work per
call (for ``J10, new lengths``: against J10's raw enqueue). numpy on the same inputs is printed for scale (``10 kernels``: the
same chain; ``J10``: the time-major loop of ``bench_jagged_sequences.py``).
The best of *batches* batches of *calls* calls each (the machine's other
work only ever adds time); nothing here asserts on a time.
"""

from __future__ import annotations

import argparse
import itertools
import os
import sys
import time
from collections.abc import Callable
from typing import Any

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from common import fmt_seconds, print_header, print_table  # noqa: E402


def per_call(fn: Callable[[], Any], calls: int, batches: int
             ) -> tuple[float, float]:
    """The best over *batches* of the wall-clock and of the calling-thread
    CPU seconds per call of *fn*, in batches of *calls* calls (after one
    batch of warm-up)."""
    walls, cpus = [], []
    for batch in range(batches + 1):
        cpu, wall = time.thread_time(), time.perf_counter()
        for _ in range(calls):
            fn()
        if batch:
            walls.append((time.perf_counter() - wall) / calls)
            cpus.append((time.thread_time() - cpu) / calls)
    return min(walls), min(cpus)


def raw_enqueue(f: Any, inputs: dict[str, Any], queue: Any
                ) -> tuple[Callable[[], Any], int]:
    """The raw enqueue of the kernels of the compiled function *f* (see
    the module docs), with the buffers and sizes of one call of
    ``f(**inputs)``, and the number of kernel launches of a call."""
    import pyopencl as cl

    from ftlazy.target.loopy import program
    captured = []
    launch = program._Launcher.__call__

    def capture(self, queue, allocator, wait_for, args):
        captured.append((self, allocator, dict(args)))
        return launch(self, queue, allocator, wait_for, args)
    program._Launcher.__call__ = capture
    try:
        f(**inputs)
    finally:
        program._Launcher.__call__ = launch
    (launcher, allocator, args), = captured

    def run() -> None:
        launcher.host(launcher.kernels, queue, wait_for=None,
                      allocator=allocator, **args)
        queue.finish()

    launches = []
    enqueue = cl.enqueue_nd_range_kernel
    cl.enqueue_nd_range_kernel = lambda *a, **k: launches.append(a) or enqueue(*a, **k)
    try:
        run()
    finally:
        cl.enqueue_nd_range_kernel = enqueue
    return run, len(launches)


def chain(x: np.ndarray, steps: int) -> np.ndarray:
    for _ in range(steps):
        x = np.sin(x) - x.sum() / np.float32(len(x))
    return x


def workloads(ft: Any) -> list[tuple[str, Any, dict, Callable[[], Any]]]:
    """(name, compiled function, inputs, the numpy computation); the last
    workload's inputs are those of J10 with ``xs`` cycling over batches of
    other lengths (see the module docs)."""
    import bench_jagged_sequences as seq
    x = ft.make_placeholder("x", (16,), np.float32)
    xv = np.linspace(-1, 1, 16, dtype=np.float32)
    y = x
    for _ in range(9):
        y = ft.sin(y) - ft.sum(y) / 16
    n, lo, hi, h, depth = seq.FULL["J10"]
    values, offsets = seq.jagged(n, lo, hi, h, seed=2)
    rng = np.random.default_rng(3)
    params = {"W": (rng.standard_normal((depth, h, 4 * h)) * 0.3).astype(np.float32),
              "U": (rng.standard_normal((depth, h, 4 * h)) * 0.3).astype(np.float32),
              "b": (rng.standard_normal((depth, 4 * h)) * 0.1).astype(np.float32)}
    j10 = seq.j10_ftlazy(h, depth)
    batches = itertools.cycle([ft.JaggedArray(*seq.jagged(n, lo, hi, h, seed=s))
                               for s in range(3, 23)])
    return [
        ("1 kernel", ft.compile(2 * x + 1), {"x": xv}, lambda: 2 * xv + 1),
        ("10 kernels", ft.compile(y), {"x": xv}, lambda: chain(xv, 9)),
        ("J10", j10, {"xs": ft.JaggedArray(values, offsets), **params},
         lambda: seq.j10_time_major(values, offsets, params)),
        ("J10, new lengths", lambda **p: j10(**p, xs=next(batches)), params,
         None)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--calls", type=int, default=2000,
                        help="calls per timed batch (J10: a tenth)")
    parser.add_argument("--batches", type=int, default=5)
    args = parser.parse_args()

    import ftlazy as ft
    from ftlazy.target.loopy.device import default_queue
    queue = default_queue()
    print_header("ftlazy per-call overhead of compiled functions vs the raw "
                 "enqueue of their kernels (best batch, per call)", queue)
    rows = []
    # (a workload without numpy is compared with the one before it)
    kernels, raw_cpu = 0, 0.0
    for name, f, inputs, numpy_fn in workloads(ft):
        calls = args.calls // 10 if name.startswith("J10") else args.calls
        wall, cpu = per_call(lambda: f(**inputs), calls, args.batches)
        if numpy_fn is None:
            rows.append([name, kernels, fmt_seconds(wall), "-", "-",
                         fmt_seconds(cpu), "-", fmt_seconds(cpu - raw_cpu),
                         "-", "-"])
            continue
        got, want = f(**inputs), numpy_fn()
        np.testing.assert_allclose(getattr(got, "values", got), want,
                                   rtol=1e-4, atol=1e-5)
        raw, kernels = raw_enqueue(f, inputs, queue)
        raw_wall, raw_cpu = per_call(raw, calls, args.batches)
        np_wall, _ = per_call(numpy_fn, max(calls // 10, 1), args.batches)
        rows.append([name, kernels, fmt_seconds(wall), fmt_seconds(raw_wall),
                     f"{wall / raw_wall:.2f}x", fmt_seconds(cpu),
                     fmt_seconds(raw_cpu), fmt_seconds(cpu - raw_cpu),
                     f"{cpu / raw_cpu:.2f}x", fmt_seconds(np_wall)])
    print_table(["workload", "launches", "ftlazy call", "raw enqueue", "ratio",
                 "ftlazy thread CPU", "raw thread CPU", "host work",
                 "CPU ratio", "numpy"], rows,
                title="Per call: wall-clock time, and CPU time of the calling "
                "thread (host work = the difference of the CPU times)")


if __name__ == "__main__":
    main()
