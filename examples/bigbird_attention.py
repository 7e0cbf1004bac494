# SPDX-License-Identifier: MIT
"""BigBird sparse attention
========================

BigBird-style sparse attention within each sequence of a jagged batch,
written as FractalTensor's ``examples/sparse_attention``: every query
attends to a circular window of keys around it (``ft.shifted_slide`` of
the keys and of the values, window 5, dilation 2) and to a few global
tokens (learned key/value pairs shared by all sequences, as BigBird-ETC's
extra global tokens). One ``ft.map`` over the sequences, compiled with
``ft.compile``, checked against a per-query numpy loop.

Run: ``python examples/bigbird_attention.py``
"""

import numpy as np

import ftlazy as ft

H = 8          # model width
WINDOW = 5     # keys per query in the sliding window (centred on the query)
DILATION = 2
GLOBAL = 2     # global tokens

xs = ft.make_jagged_placeholder("xs", (H,), np.float64, depth=2)
Wq = ft.make_placeholder("Wq", (H, H), np.float64)
Wk = ft.make_placeholder("Wk", (H, H), np.float64)
Wv = ft.make_placeholder("Wv", (H, H), np.float64)
Kg = ft.make_placeholder("Kg", (GLOBAL, H), np.float64)   # global keys
Vg = ft.make_placeholder("Vg", (GLOBAL, H), np.float64)   # global values


def bigbird(seq):
    """seq: (L, H), L symbolic."""
    q = seq @ Wq / np.sqrt(H)                                   # (L, H)
    # window p holds positions (p + DILATION*(w - WINDOW//2)) % L
    k_win = ft.shifted_slide(seq @ Wk, WINDOW, dilation=DILATION)  # (L, W, H)
    v_win = ft.shifted_slide(seq @ Wv, WINDOW, dilation=DILATION)
    s_win = ft.einsum("ph,pwh->pw", q, k_win)                   # (L, W)
    s_glob = q @ Kg.T                                           # (L, G)
    scores = ft.concatenate([s_win, s_glob], axis=1)            # (L, W + G)
    e = ft.exp(scores - ft.amax(scores, axis=1)[:, None])
    p = e / ft.sum(e, axis=1)[:, None]
    return (ft.einsum("pw,pwh->ph", p[:, :WINDOW], v_win)
            + p[:, WINDOW:] @ Vg)                               # (L, H)


f = ft.compile(ft.map(bigbird, xs))

rng = np.random.default_rng(0)
values = {name: rng.standard_normal((H, H)) / np.sqrt(H)
          for name in ("Wq", "Wk", "Wv")}
values.update(Kg=rng.standard_normal((GLOBAL, H)),
              Vg=rng.standard_normal((GLOBAL, H)))


def numpy_bigbird(seq):
    """One query at a time: its window's keys (indices wrap around the
    sequence) and the global keys, a softmax over them."""
    q = seq @ values["Wq"] / np.sqrt(H)
    k, v = seq @ values["Wk"], seq @ values["Wv"]
    out = np.zeros((len(seq), H))
    for i in range(len(seq)):
        idx = [(i + DILATION * (w - WINDOW // 2)) % len(seq)
               for w in range(WINDOW)]
        keys = np.concatenate([k[idx], values["Kg"]])
        vals = np.concatenate([v[idx], values["Vg"]])
        s = keys @ q[i]
        p = np.exp(s - s.max())
        out[i] = (p / p.sum()) @ vals
    return out


for lengths in [(7, 0, 3, 12), (1, 2, 9)]:
    batch = [rng.standard_normal((n, H)) for n in lengths]
    out = f(xs=batch, **values)
    assert out.lengths().tolist() == list(lengths)
    for got, seq in zip(out.tolist(), batch, strict=True):
        np.testing.assert_allclose(got, numpy_bigbird(seq), rtol=1e-10,
                                   atol=1e-12)
    print(f"lengths {list(lengths)}: windowed + global attention matches numpy")
