# SPDX-License-Identifier: MIT
"""The cold first-result measurement of ``benchmarks/bench_jagged_sequences.py``
runs the same workloads as its warm table (checked against the per-segment
numpy loops at the quick sizes), and ``common.best_of`` warms up for the
time it is given."""

from __future__ import annotations

import json
import os
import sys
import time

import numpy as np
import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "benchmarks"))

import bench_jagged_sequences as bench  # noqa: E402
from common import best_of  # noqa: E402


def _values(result):
    return result.values if hasattr(result, "values") else np.asarray(result)


@pytest.mark.parametrize("key", bench.WORKLOADS)
def test_cold_first_result_runs_the_timed_workload(key):
    build, inputs = bench.first_inputs(key, bench.QUICK)
    got = _values(build()(**inputs))
    xs = inputs.get("xs", inputs.get("docs"))
    values, offsets = xs.values, xs.offsets
    want = {
        "J8": lambda: bench.j8_loop(values, offsets[0], inputs["a"]),
        "J10": lambda: bench.j10_loop(values, offsets[0], {
            k: inputs[k] for k in ("W", "U", "b")}),
        "J7": lambda: bench.j7_loop(values, offsets[0], bench.QUICK["J7"][3]),
        "J11": lambda: bench.j11_loop(values, *offsets),
        "J12": lambda: bench.j12_loop(values, offsets[0]),
        "J13": lambda: bench.j13_loop(values, *offsets, {
            k: inputs[k] for k in ("Us", "Ud")}),
    }[key]()
    np.testing.assert_allclose(got, want, rtol=2e-4, atol=2e-4)


def test_child_prints_its_stage_times(capsys):
    bench.child_first_result("J12", quick=True)
    line, = [ln for ln in capsys.readouterr().out.splitlines()
             if ln.startswith(bench.CHILD_MARKER)]
    report = json.loads(line[len(bench.CHILD_MARKER):])
    assert report["total"] >= report["compile"] > 0
    assert {"kernel_creation", "scheduling", "opencl_build"} <= set(report)


def test_best_of_warms_up_for_the_given_time():
    calls = []

    def work():
        calls.append(time.perf_counter())
        time.sleep(0.01)
    timing = best_of(work, repeat=3, warmup=1, warmup_s=0.06)
    # (the first timed call starts once the warm-up has taken 0.06 s; a
    # loaded machine makes fewer, longer warm-up calls, not a shorter one)
    first_timed = calls[-3]
    assert first_timed - calls[0] >= 0.059
    assert len(calls) >= 3 + 2
    assert timing.median >= 0.01
