# SPDX-License-Identifier: MIT
"""1-D convolutions over a jagged batch
====================================

A two-layer 1-D convolution over a jagged batch of sequences, written
FractalTensor-style: ``ft.map`` over a jagged placeholder, each layer
``ft.slide`` (windows of every sequence, zero padded) contracted with a
filter bank by ``ft.einsum``; the second layer is dilated. Compiled with
``ft.compile`` (one OpenCL program for every length distribution, no
padding of the batch), checked against a per-sequence numpy loop.

Run: ``python examples/conv1d_jagged.py``
"""

import numpy as np

import ftlazy as ft

C_IN, C_HID, C_OUT = 4, 8, 3   # channels per token
K = 3                          # taps per filter

rng = np.random.default_rng(0)
W1 = (rng.standard_normal((K, C_IN, C_HID)) / np.sqrt(K * C_IN)).astype(np.float32)
b1 = rng.standard_normal(C_HID).astype(np.float32)
W2 = (rng.standard_normal((K, C_HID, C_OUT)) / np.sqrt(K * C_HID)).astype(np.float32)
b2 = rng.standard_normal(C_OUT).astype(np.float32)

# A batch of sequences of C_IN-vectors: a depth-2 FractalTensor. In the map
# body each sequence is an array (L, C_IN) with a symbolic length L.
xs = ft.make_jagged_placeholder("xs", (C_IN,), np.float32, depth=2)


def conv1d(seq, W, b, dilation):
    # "same" padding: L windows (L + 2*pad - dilation*(K - 1) - 1 + 1 = L)
    pad = dilation * (K - 1) // 2
    windows = ft.slide(seq, K, dilation=dilation, padding=pad)  # (L, K, C)
    return ft.einsum("wkc,kco->wo", windows, W) + b             # (L, C')


def network(seq):
    h = ft.maximum(conv1d(seq, W1, b1, dilation=1), 0)   # ReLU
    return conv1d(h, W2, b2, dilation=2)                  # (L, C_OUT)


# The result's first axis is L, so it comes back jagged (a JaggedArray).
ys = ft.map(network, xs)
f = ft.compile(ys)


# Reference: a plain per-sequence, per-position numpy loop.
def conv1d_reference(x, W, b, dilation):
    pad = dilation * (K - 1) // 2
    padded = np.concatenate([np.zeros((pad, x.shape[1]), x.dtype), x,
                             np.zeros((pad, x.shape[1]), x.dtype)])
    out = np.empty((len(x), W.shape[2]), np.float32)
    for t in range(len(x)):
        out[t] = b + sum(padded[t + k * dilation] @ W[k] for k in range(K))
    return out


def network_reference(x):
    return conv1d_reference(np.maximum(conv1d_reference(x, W1, b1, 1), 0),
                            W2, b2, 2)


# Data: lengths 5, 1, 9, 2; a list of numpy arrays.
batch = [rng.standard_normal((n, C_IN)).astype(np.float32) for n in (5, 1, 9, 2)]
out = f(xs=batch)                       # ft.JaggedArray, packed, no padding
for x, y in zip(batch, out.tolist(), strict=True):
    assert y.shape == (len(x), C_OUT)
    np.testing.assert_allclose(y, network_reference(x), rtol=1e-4, atol=1e-5)

# The same compiled function takes any other lengths (no recompilation);
# a JaggedArray(values, offsets) is the packed form of the input.
values = rng.standard_normal((20, C_IN)).astype(np.float32)
offsets = np.array([0, 3, 4, 20])
out2 = f(xs=ft.JaggedArray(values, offsets))
for k, y in enumerate(out2.tolist()):
    x = values[offsets[k]:offsets[k + 1]]
    np.testing.assert_allclose(y, network_reference(x), rtol=1e-4, atol=1e-5)

# Empty sequences are valid: "same" padding gives one window per position,
# so an empty sequence has none and its output is empty too.
out3 = f(xs=[batch[1], np.zeros((0, C_IN), np.float32), batch[3]])
assert out3.lengths().tolist() == [1, 0, 2]
for x, y in zip([batch[1], batch[3]], [out3.tolist()[0], out3.tolist()[2]],
                strict=True):
    np.testing.assert_allclose(y, network_reference(x), rtol=1e-4, atol=1e-5)
print("lengths:", out.lengths().tolist())
print("offsets:", out.offsets[0].tolist())
print("sequence 1 (length 1), output channels:",
      [round(float(v), 4) for v in out.tolist()[1][0]])
print("second call, lengths", out2.lengths().tolist(), "- ok")
print("with an empty sequence, lengths", out3.lengths().tolist(), "- ok")
