# SPDX-License-Identifier: MIT
"""Device time of each OpenCL kernel of one workload of
``bench_jagged_sequences.py``, from a profiling queue, next to the plan.

Run by hand: ``python benchmarks/kernel_profile.py J7 [--calls 10]
[--quick]``. The compiled function runs on a queue with profiling enabled
(ftlazy's default queue is replaced before anything is compiled); every
kernel launch's event is kept, and the table gives each kernel's mean
device time per call, in launch order, and the wall-clock time per call.
Where a call's time goes is what tells which plan to work on."""

from __future__ import annotations

import argparse
import collections
import os
import sys
import time
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from common import fmt_seconds, print_table  # noqa: E402


def profiling_queue() -> Any:
    """A profiling queue on the device ftlazy would pick (``PYOPENCL_CTX``
    included), installed as ftlazy's default queue."""
    import pyopencl as cl

    import ftlazy.target.loopy.device as device
    plain = device._make_default_queue()
    queue = cl.CommandQueue(
        plain.context, plain.device,
        properties=cl.command_queue_properties.PROFILING_ENABLE)
    device._make_default_queue.cache_clear()
    device._make_default_queue = lambda: queue
    return queue


def record_launches(events: list) -> None:
    """Keep ``(kernel name, event)`` of every kernel enqueued from now on
    (loopy's host code enqueues through ``enqueue_nd_range_kernel``)."""
    import pyopencl as cl
    enqueue = cl.enqueue_nd_range_kernel

    def recorded(queue: Any, kernel: Any, *args: Any, **kwargs: Any) -> Any:
        event = enqueue(queue, kernel, *args, **kwargs)
        events.append((kernel.function_name, event))
        return event
    cl.enqueue_nd_range_kernel = recorded


def main() -> None:
    import bench_jagged_sequences as bench
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("workload", choices=bench.WORKLOADS)
    parser.add_argument("--calls", type=int, default=10)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()

    queue = profiling_queue()
    events: list = []
    record_launches(events)
    build, inputs = bench.first_inputs(args.workload,
                                       bench.QUICK if args.quick else bench.FULL)
    f = build()
    for _ in range(5):
        f(**inputs)
    queue.finish()
    events.clear()
    start = time.perf_counter()
    for _ in range(args.calls):
        f(**inputs)
    wall = (time.perf_counter() - start) / args.calls
    total: dict[str, float] = collections.defaultdict(float)
    for name, event in events:
        event.wait()
        total[name] += (event.profile.end - event.profile.start) * 1e-9
    print(f"# {args.workload}: {queue.device.name}, {args.calls} calls")
    print(f.plan)
    rows = [[name, fmt_seconds(seconds / args.calls)] for name, seconds in total.items()]
    rows.append(["all kernels", fmt_seconds(sum(total.values()) / args.calls)])
    rows.append(["wall-clock per call", fmt_seconds(wall)])
    print_table(["kernel", "device time per call"], rows,
                title="Kernels in launch order")


if __name__ == "__main__":
    main()
