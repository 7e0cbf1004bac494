# SPDX-License-Identifier: MIT
"""Ragged softmax
==============

Softmax over the tokens of every sequence of a ragged batch (FBGEMM's
``jagged_softmax``), written FractalTensor-style: ``ft.map`` over a jagged
placeholder, compiled with ``ft.compile`` (one OpenCL program for every
length distribution), checked against a per-sequence numpy loop.

Run: ``python examples/ragged_softmax.py``
"""

import numpy as np

import ftlazy as ft

# %%
# The program
# -----------

H = 4  # features per token

# A batch of sequences of H-vectors: a depth-2 FractalTensor. Each sequence
# is seen in the map body as an array (L, H) with a symbolic length L.
xs = ft.make_jagged_placeholder("xs", (H,), np.float32, depth=2)

# A row of -inf appended before taking the max keeps the max defined for an
# empty sequence (ft.amax over L = 0 rows raises, as numpy's does).
NEG_INF_ROW = np.full((1, H), -np.inf, np.float32)


def softmax_over_tokens(seq):
    m = ft.amax(ft.concatenate([seq, NEG_INF_ROW]), axis=0)   # (H,) per sequence
    e = ft.exp(seq - m)                                         # (L, H), broadcast back
    return e / ft.sum(e, axis=0)                                # (L, H)


# The result's first axis is L, so it comes back jagged (a JaggedArray).
probs = ft.map(softmax_over_tokens, xs)

# %%
# Compiled once
# -------------

f = ft.compile(probs)
f

# %%
# Run on a ragged batch
# ---------------------

# Data: lengths 3, 0 (an empty sequence), 5, 1; a list of numpy arrays.
rng = np.random.default_rng(0)
batch = [rng.standard_normal((n, H)).astype(np.float32) for n in (3, 0, 5, 1)]

out = f(xs=batch)                       # ft.JaggedArray, packed, no padding
got = out.tolist()

# %%
# Checked against a plain per-sequence numpy loop.
for seq, p in zip(batch, got, strict=True):
    if len(seq):
        e = np.exp(seq - seq.max(0))
        want = e / e.sum(0)
    else:
        want = np.zeros((0, H), np.float32)
    assert p.shape == seq.shape
    np.testing.assert_allclose(p, want, rtol=1e-5, atol=1e-6)
    if len(seq):
        np.testing.assert_allclose(p.sum(0), 1.0, rtol=1e-5)

# %%
# The same compiled function takes any other lengths (no recompilation);
# a ``JaggedArray(values, offsets)`` is the packed form of the input.

values = rng.standard_normal((10, H)).astype(np.float32)
offsets = np.array([0, 0, 7, 10])
out2 = f(xs=ft.JaggedArray(values, offsets))
np.testing.assert_allclose(out2.values[:7].sum(0), 1.0, rtol=1e-5)

print("lengths:", out.lengths().tolist())
print("offsets:", out.offsets[0].tolist())
print("softmax of sequence 0, feature 0:", np.round(got[0][:, 0], 4).tolist())
print("second call, lengths", out2.lengths().tolist(), "- ok")
out
