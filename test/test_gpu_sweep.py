# SPDX-License-Identifier: MIT
"""``benchmarks/gpu_sweep.py``, the GPU tuning sweep, on this machine's
device with GPU plans forced: a variant's row is checked against numpy,
and ``--kernels`` lists the device time of each kernel it launched."""

from __future__ import annotations

import dataclasses
import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "benchmarks"))


def test_sweep_rows_and_kernel_times(capsys):
    import pyopencl as cl
    from bench_codegen import QUICK_SIZES, w3
    from gpu_sweep import parse_variant, sweep
    from kernel_profile import record_launches

    from ftlazy.target.loopy.device import default_queue
    from ftlazy.target.loopy.profile import device_profile

    plain = default_queue()
    queue = cl.CommandQueue(
        plain.context, plain.device,
        properties=cl.command_queue_properties.PROFILING_ENABLE)
    base = dataclasses.replace(device_profile(plain.device), kind="gpu")
    events: list = []
    enqueue = cl.enqueue_nd_range_kernel
    try:
        record_launches(events)
        sums = [w for w in w3(QUICK_SIZES["W3"] // 8) if w.key == "W3-sum"]
        sweep(sums, queue, base, 2, 10.0,
              [parse_variant("gpu_local_size=64")], events)
    finally:
        cl.enqueue_nd_range_kernel = enqueue
    out = capsys.readouterr().out
    row = next(line for line in out.splitlines() if line.startswith("W3-sum"))
    assert "gpu_local_size=64" in row and "failed" not in row
    assert float(row.split()[-1]) < 1e-12     # the relative error
    kernels = next(line for line in out.splitlines() if "kernels (fastest" in line)
    # a full sum on a GPU plan: a stage per row block, then one short stage,
    # each launched once per timed call (2 best + 2 queued + 1 warm-up)
    per_kernel = kernels.split(": ", 1)[1].split("; ")
    assert [k.split()[0] for k in per_kernel] == ["ftlazy_kernel",
                                                  "ftlazy_kernel_0"]
    assert all(k.count(" / ") == 2 for k in per_kernel)
    assert len(events) == 2 * 5


def test_variants_must_be_field_equals_int():
    from gpu_sweep import parse_variant
    assert parse_variant("gpu_local_size=128, gpu_matmul_block=2") == {
        "gpu_local_size": 128, "gpu_matmul_block": 2}
    with pytest.raises(ValueError, match="gpu_local_size"):
        parse_variant("gpu_local_size")
