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


def test_rebuilt_dag_with_same_names_skips_canonicalization():
    def build():
        x = ft.make_placeholder("x", (5,), np.float64)
        return ft.sin(x) * 2 + 1

    f1 = ft.compile(build())
    f2 = ft.compile(build())
    assert f2.from_cache
    assert f2.program.canon is f1.program.canon
    np.testing.assert_allclose(f2(x=np.ones(5)), np.sin(1) * 2 + 1)
