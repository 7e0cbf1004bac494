# SPDX-License-Identifier: MIT
"""``FTLAZY_POISON_ALLOCATIONS=1``: every buffer a compiled program
allocates (outputs, global temporaries) is filled with NaN / -1 first, so
that a kernel reading memory nothing wrote gives a visibly wrong answer
instead of what an earlier call left in the memory pool. The examples run
with it (``test_examples.py``); here, the fill itself, and programs with
global temporaries and offsets computed on the device, called repeatedly."""

from __future__ import annotations

import numpy as np
import pyopencl as cl

import ftlazy as ft
from ftlazy.target.loopy.program import POISON_BYTE, poisoning_allocations


def test_the_switch(monkeypatch):
    monkeypatch.delenv("FTLAZY_POISON_ALLOCATIONS", raising=False)
    assert not poisoning_allocations()
    monkeypatch.setenv("FTLAZY_POISON_ALLOCATIONS", "1")
    assert poisoning_allocations()


def test_allocations_are_filled(monkeypatch, cl_queue):
    monkeypatch.setenv("FTLAZY_POISON_ALLOCATIONS", "1")
    x = ft.make_placeholder("x", (5,), np.float64)
    f = ft.compile(2 * x + 1)
    allocate = f.program._allocator(cl_queue)
    buf = allocate(64)
    got = np.zeros(64, np.uint8)
    cl.enqueue_copy(cl_queue, got, buf)
    assert (got == POISON_BYTE).all()
    np.testing.assert_allclose(f(x=np.arange(5.0)), 2 * np.arange(5.0) + 1)


def test_jagged_programs_under_poison(monkeypatch):
    monkeypatch.setenv("FTLAZY_POISON_ALLOCATIONS", "1")
    xs = ft.make_jagged_placeholder("xs", (3,), np.float32, depth=2)

    def body(s):
        scores = s @ s.T
        weights = ft.exp(scores - ft.amax(scores, axis=1)[:, None])
        return (weights / ft.sum(weights, axis=1)[:, None]) @ s
    f = ft.compile(ft.map(body, xs))
    rng = np.random.default_rng(0)
    for lengths in ([3, 1, 9, 1], [17, 2], []):
        values = rng.standard_normal((sum(lengths), 3)).astype(np.float32)
        offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
        got = f(xs=ft.JaggedArray(values, offsets))
        for i, n in enumerate(lengths):
            s = values[offsets[i]:offsets[i + 1]]
            scores = s @ s.T
            w = np.exp(scores - scores.max(axis=1, initial=-np.inf)[:, None])
            want = (w / w.sum(axis=1)[:, None]) @ s
            np.testing.assert_allclose(got.values[offsets[i]:offsets[i + 1]],
                                       want, rtol=1e-4, atol=1e-5)
