# SPDX-License-Identifier: MIT
"""Flash attention over a jagged batch
===================================

Multi-head self-attention within each sequence of a jagged batch,
written as FractalTensor's ``examples/flash_attention``: the keys are
folded over with the online softmax (a running max ``m``, running sum
``l`` and accumulator ``acc`` per query and head, rescaled whenever the max
grows), so the ``L x L`` score matrix is never formed. Compiled once with
``ft.compile`` and compared with plain softmax attention in numpy (and with
the same attention written with an explicit softmax in ftlazy).

Run: ``python examples/flash_attention.py``
"""

import numpy as np

import ftlazy as ft

H = 8          # model width
HEADS = 2
D = H // HEADS  # head width

xs = ft.make_jagged_placeholder("xs", (H,), np.float64, depth=2)
Wq = ft.make_placeholder("Wq", (H, H), np.float64)
Wk = ft.make_placeholder("Wk", (H, H), np.float64)
Wv = ft.make_placeholder("Wv", (H, H), np.float64)
Wo = ft.make_placeholder("Wo", (H, H), np.float64)


def heads(x):
    """(L, H) -> (L, HEADS, D)."""
    return x.reshape(x.shape[0], HEADS, D)


def flash_attention(seq):
    """seq: (L, H), L symbolic. Every query folds over every key."""
    q = heads(seq @ Wq) / np.sqrt(D)                     # (L, HEADS, D)
    k, v = heads(seq @ Wk), heads(seq @ Wv)

    def attn_step(carry, kv):
        m, l, acc = carry                                # (L, HEADS) x2, (L, HEADS, D)
        k_j, v_j = kv                                    # one key and value (HEADS, D)
        score = ft.einsum("qhd,hd->qh", q, k_j)          # (L, HEADS)
        m_new = ft.maximum(m, score)
        correction = ft.exp(m - m_new)                   # rescales the old sums
        p = ft.exp(score - m_new)
        return (m_new, l * correction + p,
                acc * correction[:, :, None] + p[:, :, None] * v_j[None])

    zeros = q[:, :, 0] * 0                               # (L, HEADS)
    init = (zeros - np.inf, zeros, q * 0)
    m, l, acc = ft.fold(attn_step, (k, v), init)
    out = acc / l[:, :, None]                            # (L, HEADS, D)
    return out.reshape(seq.shape[0], H) @ Wo


def softmax_attention(seq):
    """The same attention with the whole score matrix and a softmax."""
    q = heads(seq @ Wq) / np.sqrt(D)
    k, v = heads(seq @ Wk), heads(seq @ Wv)
    s = ft.einsum("qhd,khd->hqk", q, k)                  # (HEADS, L, L)
    e = ft.exp(s - ft.amax(s, axis=2)[:, :, None])
    p = e / ft.sum(e, axis=2)[:, :, None]
    return ft.einsum("hqk,khd->qhd", p, v).reshape(seq.shape[0], H) @ Wo


f = ft.compile(ft.map(flash_attention, xs))
f_softmax = ft.compile(ft.map(softmax_attention, xs))

rng = np.random.default_rng(0)
weights = {name: rng.standard_normal((H, H)) / np.sqrt(H)
           for name in ("Wq", "Wk", "Wv", "Wo")}


def numpy_attention(seq):
    """Plain per-head softmax attention, one head at a time."""
    out = np.zeros((len(seq), H))
    q, k, v = (seq @ weights[n] for n in ("Wq", "Wk", "Wv"))
    for h in range(HEADS):
        cols = slice(h * D, (h + 1) * D)
        if len(seq):
            s = q[:, cols] @ k[:, cols].T / np.sqrt(D)
            p = np.exp(s - s.max(axis=1, keepdims=True))
            out[:, cols] = (p / p.sum(axis=1, keepdims=True)) @ v[:, cols]
    return out @ weights["Wo"]


for lengths in [(4, 0, 9, 1), (6, 6, 2)]:
    # scaled so that the scores are large: the running max must do its job
    batch = [3 * rng.standard_normal((n, H)) for n in lengths]
    want = [numpy_attention(seq) for seq in batch]
    flash = f(xs=batch, **weights)
    assert flash.lengths().tolist() == list(lengths)
    for got, w in zip(flash.tolist(), want, strict=True):
        np.testing.assert_allclose(got, w, rtol=1e-9, atol=1e-12)
    # (softmax over an empty sequence would take the max of no scores)
    nonempty = [seq for seq in batch if len(seq)]
    for got, w in zip(f_softmax(xs=nonempty, **weights).tolist(),
                      [numpy_attention(seq) for seq in nonempty], strict=True):
        np.testing.assert_allclose(got, w, rtol=1e-9, atol=1e-12)
    print(f"lengths {list(lengths)}: online-softmax attention ({HEADS} heads) "
          "matches plain softmax attention")
