# SPDX-License-Identifier: MIT
"""A stacked dilated RNN
=====================

A stacked dilated RNN (dilations 1, 2, 4) over a jagged batch, written
as FractalTensor's ``examples/dilated_rnn``: each layer is ``ft.map`` over
the sequences of ``ft.dilated_map`` (the ``dilation`` interleaved
subsequences ``seq[r::d]``) of ``ft.scan`` over time, so that layer ``k``
computes ``h_t = tanh(x_t W_k + h_{t-d} U_k + b_k)`` with zero state for
``t < d``. Checked against a per-sequence numpy loop.

Both formulations compile with ``ft.compile``. In the first, each
``dilated_map`` inside the map over the sequences is a map over the
FractalTensor of every sequence's subsequences, with a scan inside; the
compiler runs it as one map over all subsequences of all sequences at
once (a ragged scan over them). The second writes the same recurrence as
one scan per sequence whose carry keeps the last ``d`` states (a ring
buffer).

Run: ``python examples/dilated_rnn.py``
"""

from typing import NamedTuple

import numpy as np

import ftlazy as ft

H = 6                      # hidden size (and input size)
DILATIONS = (1, 2, 4)      # one layer per dilation


class Layer(NamedTuple):
    W: object    # (H, H) input projection
    U: object    # (H, H) recurrent projection
    b: object    # (H,)


xs = ft.make_jagged_placeholder("xs", (H,), np.float64, depth=2)
Ws = ft.make_placeholder("W", (len(DILATIONS), H, H), np.float64)
Us = ft.make_placeholder("U", (len(DILATIONS), H, H), np.float64)
bs = ft.make_placeholder("b", (len(DILATIONS), H), np.float64)
layers = [Layer(Ws[k], Us[k], bs[k]) for k in range(len(DILATIONS))]


# {{{ FractalTensor's formulation: dilated_map of a scan, mapped over the batch

def dilated_layer(batch, p: Layer, dilation):
    def rnn(sub):                           # one subsequence seq[r::dilation]
        return ft.scan(lambda h, xw: ft.tanh(xw + h @ p.U), sub @ p.W + p.b,
                       ft.zeros(H))
    return ft.map(lambda seq: ft.dilated_map(rnn, seq, dilation), batch)


def stacked(batch, layer_fn):
    # the dilation differs per layer, so the layers are a Python loop (a
    # fold over the layers would need one body for every layer)
    for p, d in zip(layers, DILATIONS):
        batch = layer_fn(batch, p, d)
    return batch


hidden = stacked(xs, dilated_layer)

# }}}


# {{{ the same recurrence as one scan per sequence

def ring_buffer_layer(batch, p: Layer, dilation):
    def step(carry, x):
        buf, _ = carry                      # buf[t % d] holds h_{t-d}
        xw, t = x
        # row t % d as a one-hot selection (inside a map over a FractalTensor
        # a gather compiles only from an array the body does not compute)
        slot = ft.equal(ft.arange(dilation), t % dilation)        # (d,)
        h_prev = ft.sum(ft.where(slot[:, None], buf, 0.0), axis=0)
        h = ft.tanh(xw + h_prev @ p.U)
        return ft.where(slot[:, None], h[None, :], buf), h

    def over_one_sequence(seq):
        xw = seq @ p.W + p.b
        t = ft.arange(seq.shape[0])
        init = (ft.zeros((dilation, H)), ft.zeros(H))
        return ft.scan(step, (xw, t), init)[1]
    return ft.map(over_one_sequence, batch)


hidden_ring = stacked(xs, ring_buffer_layer)
f_ring = ft.compile(hidden_ring)

# }}}

rng = np.random.default_rng(0)
values = {"W": rng.standard_normal((len(DILATIONS), H, H)) * 0.4,
          "U": rng.standard_normal((len(DILATIONS), H, H)) * 0.4,
          "b": rng.standard_normal((len(DILATIONS), H)) * 0.1}


def numpy_dilated_rnn(seq):
    for k, d in enumerate(DILATIONS):
        out = np.zeros_like(seq)
        for t in range(len(seq)):
            prev = out[t - d] if t >= d else np.zeros(H)
            out[t] = np.tanh(seq[t] @ values["W"][k] + values["b"][k]
                             + prev @ values["U"][k])
        seq = out
    return seq


f_dilated = ft.compile(hidden)

for lengths in [(5, 0, 11, 1, 4), (3, 9)]:
    batch = [rng.standard_normal((n, H)) for n in lengths]
    want = [numpy_dilated_rnn(seq) for seq in batch]
    for name, run in [("ft.compile (dilated_map)", f_dilated),
                      ("ft.compile (ring buffer)", f_ring)]:
        out = run(xs=batch, **values)
        assert out.lengths().tolist() == list(lengths), out.lengths()
        for got, w in zip(out.tolist(), want, strict=True):
            np.testing.assert_allclose(got, w, rtol=1e-10, atol=1e-12)
        print(f"lengths {list(lengths)}: {name} matches numpy")
