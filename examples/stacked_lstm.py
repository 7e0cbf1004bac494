# SPDX-License-Identifier: MIT
"""A stacked LSTM
==============

A stacked LSTM over a jagged batch of sequences, written as
FractalTensor's flagship example: a fold over the layers whose carry is the
whole batch, each layer a map over the sequences of a scan over time, with
the parameters bundled in NamedTuples. Compiled once with ``ft.compile``
(one OpenCL program for every length distribution, no padding in memory)
and checked against a per-sequence numpy loop.

Run: ``python examples/stacked_lstm.py``
"""

from typing import NamedTuple

import numpy as np

import ftlazy as ft

H = 8        # hidden size (and input size)
DEPTH = 3    # layers


class Layer(NamedTuple):
    """One layer's parameters; the fold steps over their leading axis."""
    W: object    # (H, 4H) input projection
    U: object    # (H, 4H) recurrent projection
    b: object    # (4H,)


class State(NamedTuple):
    h: object    # (H,)
    c: object    # (H,)


def sigmoid(x):
    return 1 / (1 + ft.exp(-x))


def lstm_layer(batch, p: Layer):
    """One layer over every sequence of the batch (a FractalTensor)."""
    def cell(state: State, xw):
        g = xw + state.h @ p.U                      # (4H,) gates
        i, f, o = sigmoid(g[:H]), sigmoid(g[H:2 * H]), sigmoid(g[2 * H:3 * H])
        c = f * state.c + i * ft.tanh(g[3 * H:])
        return State(o * ft.tanh(c), c)

    def over_one_sequence(seq):                     # seq: (L, H), L symbolic
        # the input projection does not depend on the carry: one product
        # for the whole sequence, outside the scan
        xw = seq @ p.W + p.b                        # (L, 4H)
        return ft.scan(cell, xw, State(ft.zeros(H), ft.zeros(H))).h

    return ft.map(over_one_sequence, batch)


# %%
# Compiled once
# -------------
# The fold over the layers carries the whole jagged batch. The compiled
# function's display lists its inputs, the time of each compile stage, the
# plan and the generated OpenCL.

xs = ft.make_jagged_placeholder("xs", (H,), np.float64, depth=2)
params = Layer(W=ft.make_placeholder("W", (DEPTH, H, 4 * H), np.float64),
               U=ft.make_placeholder("U", (DEPTH, H, 4 * H), np.float64),
               b=ft.make_placeholder("b", (DEPTH, 4 * H), np.float64))

# fold over the layers: the carry is the whole jagged batch
hidden = ft.fold(lstm_layer, params, xs)
f = ft.compile(hidden)
f

# %%
# Run on three length distributions
# ---------------------------------
# (an empty sequence and an empty batch included), each checked against a
# per-sequence numpy loop.

rng = np.random.default_rng(0)
values = {"W": rng.standard_normal((DEPTH, H, 4 * H)) * 0.3,
          "U": rng.standard_normal((DEPTH, H, 4 * H)) * 0.3,
          "b": rng.standard_normal((DEPTH, 4 * H)) * 0.1}


def numpy_stacked_lstm(seq):
    def sig(x):
        return 1 / (1 + np.exp(-x))
    for d in range(DEPTH):
        h, c, out = np.zeros(H), np.zeros(H), []
        for xw in seq @ values["W"][d] + values["b"][d]:
            g = xw + h @ values["U"][d]
            c = sig(g[H:2 * H]) * c + sig(g[:H]) * np.tanh(g[3 * H:])
            h = sig(g[2 * H:3 * H]) * np.tanh(c)
            out.append(h)
        seq = np.array(out).reshape(len(seq), H)
    return seq


for lengths in [(5, 0, 12, 1, 7), (3, 3), ()]:
    batch = [rng.standard_normal((n, H)) for n in lengths]
    out = f(xs=batch, **values)            # a JaggedArray, packed
    for seq, got in zip(batch, out.tolist(), strict=True):
        np.testing.assert_allclose(got, numpy_stacked_lstm(seq), rtol=1e-10,
                                   atol=1e-12)
    print(f"lengths {list(lengths)}: top layer matches numpy "
          f"(nnz {out.values.shape[0]})")
