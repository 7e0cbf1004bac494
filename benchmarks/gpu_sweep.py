# SPDX-License-Identifier: MIT
"""Sweep the GPU tuning fields of the device profile over the workloads of
``bench_codegen.py``, to choose the profile's defaults on a real GPU.

For each workload and each value of a field (``gpu_local_size``, the tiled
product's ``gpu_matmul_items`` x ``gpu_matmul_block``, ``gpu_max_nest_cost``)
it compiles the program for the probed profile with that field replaced,
checks the result against numpy, and prints

- the best wall-clock time of one call that waits for its result,
- the mean time of calls queued back to back (host overhead hidden),
- the bandwidth of the latter for memory-bound workloads,
- the time to the first result (build, ``ft.generate_loopy``, first call).

With ``--cold`` the process starts with empty disk caches (``XDG_CACHE_HOME``
and ``POCL_CACHE_DIR`` in a temporary directory, ``CUDA_CACHE_DISABLE=1``), so
each variant's first result includes the driver's build. With ``--kernels``
the queue profiles, and each variant's row is followed by the device time
of each of its kernels over the timed calls (fastest, median, slowest):
where a variant's time goes, and which kernel varies. Only prints; run
``python benchmarks/gpu_sweep.py --device gpu``.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
import tempfile
import time
from typing import Any

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

#: the fields swept for each group of workloads (or one workload), as lists
#: of replacements
SWEEPS: dict[str, list[dict[str, Any]]] = {
    "W1": [{"gpu_local_size": s} for s in (64, 128, 256, 512, 1024)],
    "W3": [{"gpu_local_size": s} for s in (64, 128, 256, 512, 1024)],
    # (0: a layer norm's x - mean stored and read back, as before 16; 40: a
    # softmax's exp(x - max) computed twice instead)
    **{key: [{"gpu_recompute_cost_limit": c} for c in (0, 16, 40)]
       for key in ("W3-softmax", "W3-layernorm")},
    "W4": [{"gpu_local_size": s} for s in (64, 128, 256, 512, 1024)],
    "W2": [{"gpu_matmul_items": i, "gpu_matmul_block": b}
           for i, b in ((16, 4), (16, 2), (8, 4), (8, 8), (16, 8), (32, 2))],
    "W6": [{"gpu_matmul_items": i, "gpu_matmul_block": b}
           for i, b in ((16, 4), (16, 2), (8, 4))]
          + [{"gpu_local_size": s} for s in (128, 512)]
          # (rows per work group of the scan: 32 rows in blocks of 8 make
          # 4 groups, on a GPU of 132 compute units)
          + [{"scan_rows_per_group": r} for r in ((4,), (2,), (1,))],
    "W5": [{"gpu_max_nest_cost": c} for c in (500, 1500, 4000, 12000)],
}


def _time_calls(run: Any, queue: Any, repeat: int) -> tuple[float, float]:
    """Best time of one waited-for call, and the mean of *repeat* calls
    queued back to back."""
    run()
    queue.finish()
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        queue.finish()
        best = min(best, time.perf_counter() - start)
    start = time.perf_counter()
    for _ in range(repeat):
        run()
    queue.finish()
    return best, (time.perf_counter() - start) / repeat


def _fmt(t: float) -> str:
    return f"{t * 1e6:.0f} us" if t < 1e-2 else f"{t * 1e3:.2f} ms"


def parse_variant(text: str) -> dict[str, int]:
    """``"gpu_local_size=128,gpu_matmul_block=2"`` as a dict of ints."""
    variant = {}
    for item in text.split(","):
        key, sep, value = item.partition("=")
        if not sep:
            raise ValueError(f"--variant: expected field=value, got {item!r}")
        variant[key.strip()] = int(value)
    return variant


def kernel_times(events: list) -> str:
    """Fastest, median and slowest device time of each kernel among the
    ``(kernel name, event)`` pairs *events*, in launch order."""
    durations: dict[str, list[float]] = {}
    for name, event in events:
        event.wait()
        durations.setdefault(name, []).append(
            (event.profile.end - event.profile.start) * 1e-9)
    return "; ".join(
        f"{name} {_fmt(min(d))} / {_fmt(float(np.median(d)))} / {_fmt(max(d))}"
        for name, d in durations.items())


def sweep(workloads: list, queue: Any, base: Any, repeat: int,
          copy_gbs: float, variants: list[dict] | None = None,
          events: list | None = None) -> None:
    """Print one row per workload and variant (*variants*, default
    :data:`SWEEPS` of the workload's group), then the compile stages, and,
    given the list *events* that kernel launches are recorded into (see
    ``kernel_profile.record_launches``), each kernel's device times."""
    import pyopencl.array as cla

    import ftlazy as ft
    from bench_codegen import _max_rel_err, _to_host

    print(f"{'workload':<14} {'variant':<46} {'first':>9} {'best call':>10} "
          f"{'queued':>10} {'GB/s':>7} {'% copy':>7} {'rel err':>8}")
    for wl in workloads:
        inputs = wl.make_inputs()
        want = wl.numpy_fn(inputs)
        dev_inputs = {k: cla.to_device(queue, np.asarray(v))
                      for k, v in inputs.items()}
        for variant in variants or SWEEPS.get(wl.key,
                                              SWEEPS.get(wl.group, [])):
            label = ", ".join(f"{k}={v}" for k, v in variant.items())
            try:
                profile = dataclasses.replace(base, **variant)
                start = time.perf_counter()
                prg = ft.generate_loopy(wl.build(""), profile=profile)
                _, outputs = prg(queue, **dev_inputs)
                got = _to_host(outputs)
                first = time.perf_counter() - start
                err = _max_rel_err(got, want)
                if events is not None:
                    queue.finish()
                    events.clear()
                best, queued = _time_calls(
                    lambda: prg(queue, **dev_inputs), queue, repeat)
            except Exception as exc:  # noqa: BLE001 (report, go on)
                msg = (str(exc).strip().splitlines() or [""])[-1][:120]
                print(f"{wl.key:<14} {label:<46} failed: "
                      f"{type(exc).__name__}: {msg}", flush=True)
                continue
            gbs = (wl.bytes_moved / queued / 1e9 if wl.bytes_moved else None)
            bw = (f"{gbs:7.0f} {100 * gbs / copy_gbs:6.0f}%"
                  if gbs else f"{'-':>7} {'-':>7}")
            print(f"{wl.key:<14} {label:<46} {first:8.2f}s {_fmt(best):>10} "
                  f"{_fmt(queued):>10} {bw} {err:8.1e}", flush=True)
            print(f"{'':<14} compile stages: {prg.timings}; "
                  f"{prg.source.count('__kernel')} kernels", flush=True)
            if events is not None:
                print(f"{'':<14} kernels (fastest / median / slowest): "
                      f"{kernel_times(events)}", flush=True)


def main() -> None:
    """Parse arguments, set up the caches and the queue, and sweep."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--device", choices=("default", "gpu", "cpu"),
                        default="gpu")
    parser.add_argument("--only", default="",
                        help="comma-separated workloads or groups, e.g. W1,W3-rows")
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--quick", action="store_true", help="small sizes")
    parser.add_argument("--cold", action="store_true",
                        help="empty disk caches for this process")
    parser.add_argument("--variant", action="append", default=[],
                        help="only these replacements, e.g. "
                        "gpu_max_nest_cost=500 (repeatable)")
    parser.add_argument("--kernels", action="store_true",
                        help="profile the queue and print each kernel's "
                        "device times")
    parser.add_argument("--force-gpu-plans", action="store_true",
                        help="plan for a GPU on any device (to try the "
                        "script on PoCL)")
    args = parser.parse_args()
    if args.cold:
        tmp = tempfile.mkdtemp(prefix="ftlazy-sweep-cache-")
        os.environ["XDG_CACHE_HOME"] = tmp
        os.environ["POCL_CACHE_DIR"] = os.path.join(tmp, "pocl")
        os.environ["CUDA_CACHE_DISABLE"] = "1"

    from bench_codegen import FULL_SIZES, QUICK_SIZES, all_workloads
    from common import opencl_copy, print_header, select_queue

    from ftlazy.target.loopy.profile import device_profile

    queue = select_queue(args.device)
    events = None
    if args.kernels:
        import pyopencl as cl

        from kernel_profile import record_launches
        queue = cl.CommandQueue(
            queue.context, queue.device,
            properties=cl.command_queue_properties.PROFILING_ENABLE)
        events = []
        record_launches(events)
    print_header("GPU tuning sweep", queue)
    base = device_profile(queue.device, queue)
    if args.force_gpu_plans:
        base = dataclasses.replace(base, kind="gpu")
    sizes = QUICK_SIZES if args.quick else FULL_SIZES
    n = sizes["triad"]
    copy_gbs = 2 * 8 * n / opencl_copy(queue, n).best / 1e9
    print(f"profile: kind {base.kind}, gpu_local_size {base.gpu_local_size}, "
          f"matmul tile {base.gpu_matmul_items}x{base.gpu_matmul_block}, "
          f"max nest cost {base.gpu_max_nest_cost}; copy {copy_gbs:.0f} GB/s; "
          f"cold caches: {args.cold}")
    only = {s.strip() for s in args.only.split(",") if s.strip()}
    workloads = [w for w in all_workloads(sizes)
                 if not only or w.key in only or w.group in only]
    sweep(workloads, queue, base, args.repeat, copy_gbs,
          [parse_variant(v) for v in args.variant] or None, events)


if __name__ == "__main__":
    main()
