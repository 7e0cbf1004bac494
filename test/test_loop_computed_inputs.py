# SPDX-License-Identifier: MIT
"""Loop inputs that a scan computes where it reads them instead of reading
them from memory (``storage.loop_computable``): constants, aranges and
slices along leading axes of inputs (a layer's weights ``w[d]``). Each is
then no kernel of its own."""

from __future__ import annotations

import numpy as np
import pymbolic.primitives as prim
import pytest

import ftlazy as ft
from ftlazy.array import IndexLambda
from ftlazy.scalar_expr import index_var
from ftlazy.target.loopy.storage import loop_computable

H = 4
RNG = np.random.default_rng(2)


def _lambda(expr, shape, bindings):
    return IndexLambda(expr, shape, np.dtype(np.float64), bindings)


def test_which_inputs_are_computed_where_read():
    w = ft.make_placeholder("w", (3, H, H), np.float64)
    i, j = index_var(0), index_var(1)

    def read(*idx):
        return prim.Subscript(prim.Variable("_w"), idx)
    layer = _lambda(read(1, i, j), (H, H), {"_w": w})
    transposed = _lambda(read(1, j, i), (H, H), {"_w": w})
    zeros = _lambda(0.0, (H,), {})
    arange = IndexLambda(i, (H,), np.dtype(np.int64), {})
    broadcast = _lambda(read(j), (5, H), {"_w": zeros})
    assert loop_computable(layer) and loop_computable(zeros)
    assert loop_computable(arange) and loop_computable(broadcast)
    # a transpose would make the loop's contiguous reads strided
    assert not loop_computable(transposed)
    # reading a computed array, or too much work per read, is stored
    costly = _lambda(read(1, i, j), (H, H), {"_w": layer})
    assert not loop_computable(costly)
    heavy = ft.exp(ft.sin(ft.make_placeholder("x", (H,), np.float64)) * 2 + 1)
    assert not loop_computable(heavy)


@pytest.mark.parametrize("kind", ["cpu", "gpu"])
def test_layers_read_their_weights_in_place(kind):
    # a fold over layers of scans: each layer's weights w[d], the zero
    # carries and the step index are computed where read, not stored first
    w = ft.make_placeholder("w", (2, H, H), np.float64)
    xs = ft.make_placeholder("xs", (7, 3, H), np.float64)

    def layer(seq, wd):
        return ft.scan(lambda h, x: ft.tanh(x + h @ wd), seq, ft.zeros((3, H)))
    result = ft.fold(layer, w, xs)
    f = ft.compile(result, options={"device_kind": kind})
    stored_slices = [n for n in f.plan.arrays if isinstance(n, IndexLambda)
                     and any(getattr(b, "name", None) == "w"
                             for b in n.bindings.values())
                     and n.shape == (H, H)]
    assert not stored_slices
    wv, xv = RNG.standard_normal((2, H, H)) * 0.5, RNG.standard_normal((7, 3, H))
    want = xv
    for d in range(2):
        h, out = np.zeros((3, H)), []
        for x in want:
            h = np.tanh(x + h @ wv[d])
            out.append(h)
        want = np.array(out)
    np.testing.assert_allclose(f(w=wv, xs=xv), want, rtol=1e-12, atol=1e-12)
