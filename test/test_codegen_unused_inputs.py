# SPDX-License-Identifier: MIT
"""Inputs of a DAG that the compiled kernel does not read: an array that
only a map's other (uncompiled) output captures. As in the programs over
FractalTensors, ``ft.compile`` does not require such an input (nor the
sizes only it has); given, it is checked like every input and ignored."""

from __future__ import annotations

import numpy as np
import pytest

import ftlazy as ft

H = 2


def test_map_output_that_does_not_read_a_captured_array():
    n, m = ft.make_size_param("n"), ft.make_size_param("m")
    a = ft.make_placeholder("a", (n, 3, H), np.float64)
    w = ft.make_placeholder("w", (m, H), np.float64)
    const = np.array([0.5, -2.0])
    # w (with a size of its own) and the captured numpy constant are read
    # only by the first output
    _, sums = ft.map(lambda x: (ft.tanh(x * ft.sum(w, axis=0)) + const,
                                ft.sum(x, axis=1)), a)
    program = ft.compile(sums)
    rng = np.random.default_rng(0)
    for rows in (2, 1, 0):
        data = rng.standard_normal((rows, 3, H))
        given = {"a": data, "w": rng.standard_normal((4, H))}
        want = ft.evaluate_numpy(sums, **given)
        np.testing.assert_allclose(want, data.sum(axis=2), rtol=1e-12)
        for inputs in (given, {"a": data}, {"a": data, "m": 3}):
            got = program(**inputs)
            assert got.shape == (rows, 3)
            np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14)
    with pytest.raises(ValueError, match="'w' has shape"):
        program(a=np.ones((2, 3, H)), w=np.ones((4, H + 1)))
    with pytest.raises(TypeError, match="'w' has dtype"):
        program(a=np.ones((2, 3, H)), w=np.ones((4, H), np.float32))
    with pytest.raises(ValueError, match=r"unexpected input.*'v'.*'a', 'm', 'n', 'w'"):
        program(a=np.ones((2, 3, H)), v=np.ones(H))
    with pytest.raises(ValueError, match="missing input.*'a'"):
        program(w=np.ones((4, H)))
