# SPDX-License-Identifier: MIT
"""The default device and the compiler warm-up."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pyopencl as cl

import ftlazy as ft
from ftlazy.target.loopy import device


def test_warm_up_runs_once_per_context(cl_queue) -> None:
    """A fresh PoCL context is warmed once; the thread finishes, and a
    program compiled meanwhile is correct."""
    queue = cl.CommandQueue(cl.Context([cl_queue.device]))
    before = len(device._WARM_THREADS)
    device.warm_up_compiler(queue)
    device.warm_up_compiler(queue)
    started = device._WARM_THREADS[before:]
    assert len(started) == (1 if device._is_pocl(queue.device) else 0)
    x = ft.make_placeholder("x", (5,), np.float64)
    out = ft.compile(2 * x + 1, queue=queue)(x=np.arange(5.0))
    np.testing.assert_array_equal(out, 2 * np.arange(5.0) + 1)
    for thread in started:
        thread.join(timeout=60)
        assert not thread.is_alive()


def test_warm_up_leaves_other_platforms_alone() -> None:
    """Only PoCL is warmed: GPU drivers compile lazily or out of process."""
    platform = SimpleNamespace(vendor="NVIDIA Corporation", name="NVIDIA CUDA")
    fake = SimpleNamespace(context=object(),
                           device=SimpleNamespace(platform=platform))
    before = len(device._WARM_THREADS)
    device.warm_up_compiler(fake)
    assert len(device._WARM_THREADS) == before


def test_default_queue_is_shared() -> None:
    assert device.default_queue() is device.default_queue()
