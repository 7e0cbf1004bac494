# SPDX-License-Identifier: MIT
"""Input forms the compiled program accepts."""

import numpy as np

import ftlazy as ft


def test_numpy_scalars_bind_0d_placeholders():
    c = ft.make_placeholder("c", (), np.float64)
    x = ft.make_placeholder("x", (4,), np.float64)
    f = ft.compile(c * x)
    for value in (np.float64(2.0), 2.0, np.array(2.0)):
        np.testing.assert_array_equal(f(c=value, x=np.ones(4)), np.full(4, 2.0))
