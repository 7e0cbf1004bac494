# SPDX-License-Identifier: MIT
"""Compiled programs launch their kernels through the host function of
loopy's invoker (``program._Launcher``); where a loopy version generates
an invoker without one by the expected name, they fall back to the invoker
itself (``program._InvokerLauncher``). This path, which no pinned loopy
takes, is forced here and checked against numpy: dense kernels with
temporaries and vectors, run-time index checks, device inputs and
outputs, empty results, and a map over a FractalTensor with a scan."""

from __future__ import annotations

import numpy as np
import pyopencl.array as cla
import pytest

import ftlazy as ft
from ftlazy.target.loopy import program as program_module
from ftlazy.target.loopy.device import default_queue

RNG = np.random.default_rng(7)


@pytest.fixture
def invoker_only(monkeypatch):
    """Compiled programs made in the test see no host function; returns
    the launchers their artifacts used."""
    monkeypatch.setattr(program_module, "_host_function", lambda *a: None)
    used = []
    original = program_module.CompiledArtifact.launcher

    def launcher(self, context):
        launch = original(self, context)
        used.append(launch)
        return launch
    monkeypatch.setattr(program_module.CompiledArtifact, "launcher", launcher)
    return used


def test_dense_programs_through_the_invoker(invoker_only):
    n = ft.make_size_param("fallback_n")
    a = ft.make_placeholder("fallback_a", (n, 17), np.float64)
    ids = ft.make_placeholder("fallback_ids", (n,), np.int64)
    w = ft.make_placeholder("fallback_w", (17, 5), np.float64)
    out = ft.make_dict_of_named_arrays({
        "soft": ft.exp(a - ft.amax(a, axis=1, keepdims=True)) @ w,
        "picked": ft.gather(a, ids) * 2.0,
        "total": ft.sum(a)})
    f = ft.compile(out)
    for rows in (9, 1, 0):
        av = RNG.standard_normal((rows, 17))
        wv = RNG.standard_normal((17, 5))
        iv = RNG.integers(0, rows, rows) if rows else np.zeros(0, np.int64)
        got = f(fallback_a=av, fallback_ids=iv, fallback_w=wv)
        np.testing.assert_allclose(
            got["soft"], np.exp(av - av.max(axis=1, keepdims=True,
                                              initial=-np.inf)) @ wv,
            rtol=1e-12)
        np.testing.assert_allclose(got["picked"], av[iv] * 2.0, rtol=1e-12)
        np.testing.assert_allclose(got["total"], av.sum(), rtol=1e-12)
    with pytest.raises(IndexError, match="index 5 is out of range"):
        f(fallback_a=np.ones((2, 17)), fallback_ids=np.array([0, 5]),
          fallback_w=np.ones((17, 5)))
    # the bound program: device inputs give device outputs
    queue = default_queue()
    _, dev = f.program(queue, fallback_a=cla.to_device(queue, np.ones((3, 17))),
                       fallback_ids=cla.to_device(queue, np.array([2, 0, 1])),
                       fallback_w=cla.to_device(queue, np.ones((17, 5))))
    assert isinstance(dev["picked"], cla.Array)
    np.testing.assert_allclose(dev["picked"].get(), np.full((3, 17), 2.0))
    assert invoker_only and all(isinstance(x, program_module._InvokerLauncher)
                                for x in invoker_only)


def test_jagged_scan_through_the_invoker(invoker_only):
    xs = ft.make_jagged_placeholder("fallback_xs", (3,), np.float64, depth=2)
    u = RNG.standard_normal((3, 3))
    out = ft.map(lambda s: ft.scan(lambda h, x: ft.tanh(x + h @ u), s,
                                   ft.zeros(3)), xs)
    f = ft.compile(out)

    def reference(s):
        h, rows = np.zeros(3), []
        for x in s:
            h = np.tanh(x + h @ u)
            rows.append(h)
        return np.array(rows).reshape(len(s), 3)
    for lengths in ((3, 0, 5), (0, 0), ()):
        data = [RNG.standard_normal((k, 3)) for k in lengths]
        got = f(fallback_xs=data)
        assert len(got.tolist()) == len(data)
        for g, s in zip(got.tolist(), data):
            np.testing.assert_allclose(g, reference(s), rtol=1e-12)
    assert invoker_only and all(isinstance(x, program_module._InvokerLauncher)
                                for x in invoker_only)
