# SPDX-License-Identifier: MIT
"""Float ``amax``/``amin`` over a long concrete axis run in independent
lanes on CPUs (the ``split_reduction`` plan), and still propagate NaN as
numpy does: a NaN in any lane, at any position, wins."""

from __future__ import annotations

import numpy as np
import pytest

import ftlazy as ft


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("op", ["amax", "amin"])
def test_split_float_extrema_propagate_nan(op, dtype):
    rows, cols = 9, 64
    x = ft.make_placeholder("x", (rows, cols), dtype)
    f = ft.compile(getattr(ft, op)(x, axis=1))
    if f.plan.profile.kind == "cpu":
        (plan,) = f.plan.arrays.values()
        assert plan.strategy == "split_reduction"
    xv = np.random.default_rng(5).standard_normal((rows, cols)).astype(dtype)
    for row, col in enumerate([0, 1, 7, 8, 33, 62, 63]):
        xv[row, col] = np.nan  # first, in each lane, last
    xv[7, :] = np.inf if op == "amin" else -np.inf
    xv[8, 5] = -np.inf if op == "amin" else np.inf
    np.testing.assert_array_equal(f(x=xv), getattr(np, op)(xv, axis=1))
