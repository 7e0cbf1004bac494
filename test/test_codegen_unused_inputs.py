# SPDX-License-Identifier: MIT
"""Inputs of a DAG that the compiled kernel does not read: an array that
only a map's other (uncompiled) output captures. Like ``ft.evaluate_numpy``,
``ft.compile`` asks for every input of the DAG and validates it, and the
kernel ignores what it does not read."""

from __future__ import annotations

import numpy as np
import pytest

import ftlazy as ft

H = 2


def test_map_output_that_does_not_read_a_captured_array():
    n = ft.make_size_param("n")
    a = ft.make_placeholder("a", (n, 3, H), np.float64)
    w = ft.make_placeholder("w", (H,), np.float64)
    const = np.array([0.5, -2.0])
    # w and the captured numpy constant are read only by the first output
    _, sums = ft.map(lambda x: (ft.tanh(x * w) + const, ft.sum(x, axis=1)), a)
    program = ft.compile(sums)
    rng = np.random.default_rng(0)
    for rows in (2, 1, 0):
        data = rng.standard_normal((rows, 3, H))
        inputs = {"a": data, "w": rng.standard_normal(H)}
        want = ft.evaluate_numpy(sums, **inputs)
        np.testing.assert_allclose(want, data.sum(axis=2), rtol=1e-12)
        got = program(**inputs)
        assert got.shape == (rows, 3)
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14)
    # the unread input is still an input of the DAG: required and checked,
    # as the reference evaluator requires and checks it
    for call in (program, lambda **kw: ft.evaluate_numpy(sums, **kw)):
        with pytest.raises(ValueError, match="missing input.*'w'"):
            call(a=np.ones((2, 3, H)))
        with pytest.raises(ValueError, match="'w' has shape"):
            call(a=np.ones((2, 3, H)), w=np.ones((H, 1)))
        with pytest.raises(TypeError, match="'w' has dtype"):
            call(a=np.ones((2, 3, H)), w=np.ones(H, np.float32))

