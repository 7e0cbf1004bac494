# SPDX-License-Identifier: MIT
"""Embedding bag
=============

Embedding bag (sum pooling, as ``torch.nn.EmbeddingBag(mode="sum")``):
each bag is a variable-length list of token ids; its vector is the sum of
the embedding rows of its tokens. Written FractalTensor-style with
``ft.map`` over a jagged placeholder of token ids and ``ft.gather`` into a
dense embedding table, compiled with ``ft.compile``, checked against a
per-bag numpy loop.

Run: ``python examples/embedding_bag.py``
"""

import numpy as np

import ftlazy as ft

V, D = 50, 8  # vocabulary size, embedding width

# A batch of bags of token ids: a depth-2 FractalTensor of int64 scalars.
# Each bag is seen in the map body as an array (L,) with symbolic length L.
bags = ft.make_jagged_placeholder("bags", (), np.int64, depth=2)
table = ft.make_placeholder("table", (V, D), np.float32)


def pool(tokens):
    rows = ft.gather(table, tokens)   # (L, D): an embedding lookup
    return ft.sum(rows, axis=0)       # (D,): sum pooling (0 for an empty bag)


# The body's result has a static shape (D,), so the map's result is dense:
# (number of bags, D).
pooled = ft.map(pool, bags)

# %%
# The DAG, drawn by ``ft.to_svg`` (``None`` without a layout engine:
# ``pip install ftlazy[viz]``): the map's body is the cluster, the gather
# inside it reads the dense table.

picture = ft.to_svg(pooled)

# %%
# Compiled once, run on bags of any lengths.

f = ft.compile(pooled)

rng = np.random.default_rng(0)
emb = rng.standard_normal((V, D)).astype(np.float32)
data = [rng.integers(0, V, n) for n in (4, 0, 7, 2, 1)]   # bag 1 is empty

out = f(bags=data, table=emb)

# Reference: a plain per-bag numpy loop.
want = np.stack([emb[b].sum(0) if len(b) else np.zeros(D, np.float32)
                 for b in data])
assert out.shape == (len(data), D)
np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-5)
assert not out[1].any()  # the empty bag pools to zeros

# Mean pooling from the same program: divide by the bag lengths
# (ft.lengths of the input, int64, cast to float32), guarding the empty bag.
counts = ft.maximum(ft.lengths(bags).astype(np.float32), np.float32(1))
mean = ft.map(pool, bags) / counts[:, None]
out_mean = ft.compile(mean)(bags=data, table=emb)
np.testing.assert_allclose(
    out_mean, want / np.maximum([len(b) for b in data], 1)[:, None],
    rtol=1e-5, atol=1e-5)

# An out-of-range token id is caught at run time.
try:
    f(bags=[np.array([0, V])], table=emb)
except IndexError as exc:
    print("out-of-range token rejected:", str(exc).splitlines()[0][:70])
else:
    raise AssertionError("out-of-range token id was not rejected")

print("bag lengths:", [len(b) for b in data])
print("pooled shape:", out.shape)
print("bag 0, first 4 features:", np.round(out[0, :4], 4).tolist())
