# SPDX-License-Identifier: MIT
"""The probe of loops with barriers (PoCL 3.0's optimizer dropped the
stores of whole-group scans) and its fallback: such programs are built
with the optimizer off where the probe fails."""

from __future__ import annotations

import numpy as np
import pytest

import ftlazy as ft
from ftlazy.target.loopy.barrier_probe import (
    PROBE_SOURCE, barrier_loops_run_correctly)
from ftlazy.target.loopy.profile import device_profile, synthetic_profile


def test_probe_answers_once_per_device(cl_queue):
    device = cl_queue.device
    first = barrier_loops_run_correctly(device)
    assert isinstance(first, bool)
    assert barrier_loops_run_correctly(device) is first
    assert device_profile(device).optimize_barrier_loops is first


def test_the_fallback_runs_the_probe_kernel_correctly(cl_queue):
    # what programs get where the probe fails: the optimizer off
    import pyopencl as cl
    import pyopencl.array as cla
    ctx = cl_queue.context
    if ctx.devices[0].max_work_group_size < 256:
        pytest.skip("the probe kernel needs work groups of 256")
    kernel = cl.Program(ctx, PROBE_SOURCE).build(
        options=["-cl-opt-disable"]).probe
    n, steps = 5, 7
    out = cla.zeros(cl_queue, (n, 3), np.float64)
    arrays = [cla.zeros(cl_queue, (2, n, 3), np.float64),
              cla.to_device(cl_queue, np.ones((n, 3))),
              cla.to_device(cl_queue, np.ones((steps, n), np.int8)),
              cla.zeros(cl_queue, (n, 3), np.float64),
              cla.zeros(cl_queue, (n, 3), np.float64)]
    kernel(cl_queue, (256,), (256,), out.data, np.int64(n), np.int64(steps),
           *(a.data for a in arrays))
    np.testing.assert_array_equal(out.get(), np.full((n, 3), 1.0 + steps))


def _build_options(result, profile):
    prg = ft.generate_loopy(result, profile=profile)
    return list(prg.program.default_entrypoint.options.build_options)


def test_only_programs_with_barriers_in_loops_lose_the_optimizer():
    n = ft.make_size_param("n")
    x = ft.make_placeholder("x", (ft.make_size_param("t"), n), np.float64)
    # a scan whose rows are coupled runs in one work group with barriers
    coupled = ft.scan(lambda h, row: h * 0.5 + row + ft.sum(h) * 0.01, x,
                      ft.zeros(n))
    elementwise = ft.exp(x) + 1
    broken = synthetic_profile("gpu", 1, optimize_barrier_loops=False)
    fine = synthetic_profile("gpu", 1)
    assert _build_options(coupled, broken) == ["-cl-opt-disable"]
    assert _build_options(coupled, fine) == []
    assert _build_options(elementwise, broken) == []


def test_the_answer_is_cached_on_disk(cl_queue, tmp_path, monkeypatch):
    import ftlazy.target.loopy.barrier_probe as bp
    monkeypatch.setenv("FTLAZY_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(bp, "_RESULTS", {})
    device = cl_queue.device
    first = bp.barrier_loops_run_correctly(device)
    cache = tmp_path / "probe" / "barrier_loops.json"
    assert cache.exists()
    # a fresh process (empty memory cache) reads the file, not the device
    monkeypatch.setattr(bp, "_RESULTS", {})
    monkeypatch.setattr(bp, "_run", lambda d: pytest.fail("probed again"))
    assert bp.barrier_loops_run_correctly(device) is first
    # a corrupt file is probed again, not trusted
    cache.write_text("not json")
    monkeypatch.setattr(bp, "_RESULTS", {})
    monkeypatch.setattr(bp, "_run", lambda d: not first)
    assert bp.barrier_loops_run_correctly(device) is (not first)
