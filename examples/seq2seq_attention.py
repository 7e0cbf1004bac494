# SPDX-License-Identifier: MIT
"""Encoder-decoder with attention
==============================

An RNN encoder-decoder with attention over a jagged batch of
(source, target) pairs, after FractalTensor's ``examples/rnn_attention``:
the encoder is ``ft.map`` over the sources of ``ft.scan`` over time; the
decoder is ``ft.map`` over the targets of ``ft.scan`` over the target
tokens (teacher forcing), each step attending over the encoder states of
its own source (scores, softmax, weighted sum):

    ctx_t = softmax(E h_{t-1}) E,   h_t = tanh(y_t Wd + h_{t-1} Ud + ctx_t Cd)

A source and its target have different lengths, so the two FractalTensors
cannot be zipped by ``ft.map`` directly (it zips only when every length
agrees). FractalTensor's per-pair zip is written here as a map over the
targets zipped with the pair index ``ft.arange(n)``, the body reading its
source's encoder states as ``enc[i]``, an element of another
FractalTensor at the map's own index. ``ft.compile`` recognizes that read
as a zip of ``enc`` with the targets whose elements have lengths of their
own (:mod:`ftlazy.transform.jagged_element_reads`): each step's scores,
softmax and weighted sum run over the pair's own encoder rows. Both the
encoder and the decoder are compiled, and checked against a per-pair numpy
loop and the reference evaluator on two length distributions with empty
sources and targets (an empty source gives a zero context).

Run: ``python examples/seq2seq_attention.py``
"""

import numpy as np

import ftlazy as ft

H = 6

srcs = ft.make_jagged_placeholder("srcs", (H,), np.float64, depth=2)
trgs = ft.make_jagged_placeholder("trgs", (H,), np.float64, depth=2)
weights = {name: ft.make_placeholder(name, (H, H), np.float64)
           for name in ("We", "Ue", "Wd", "Ud", "Cd")}
We, Ue, Wd, Ud, Cd = weights.values()

# encoder: one RNN per source
enc = ft.map(lambda s: ft.scan(lambda h, xw: ft.tanh(xw + h @ Ue), s @ We,
                               ft.zeros(H)), srcs)


def decoder(y, i):
    memory = enc[i]                          # (Ls_i, H): pair i's source states

    def step(h, yw):
        scores = memory @ h                  # (Ls_i,)
        # (initial=: an empty source has no scores; its context is 0)
        e = ft.exp(scores - ft.amax(scores, initial=-np.inf))
        ctx = (e @ memory) / ft.maximum(ft.sum(e), 1e-300)
        return ft.tanh(yw + h @ Ud + ctx @ Cd)
    return ft.scan(step, y @ Wd, ft.zeros(H))


pair_index = ft.arange(ft.lengths(trgs).shape[0])
dec = ft.map(decoder, trgs, pair_index)       # jagged like the targets

f_enc = ft.compile(enc)
f_dec = ft.compile(dec)

rng = np.random.default_rng(0)
values = {n: rng.standard_normal((H, H)) * 0.4 for n in weights}


def numpy_seq2seq(x, y):
    E, h = np.zeros((len(x), H)), np.zeros(H)
    for t in range(len(x)):
        h = np.tanh(x[t] @ values["We"] + h @ values["Ue"])
        E[t] = h
    out, h = np.zeros((len(y), H)), np.zeros(H)
    for t in range(len(y)):
        ctx = np.zeros(H)
        if len(x):
            s = E @ h
            p = np.exp(s - s.max())
            ctx = (p / p.sum()) @ E
        h = np.tanh(y[t] @ values["Wd"] + h @ values["Ud"] + ctx @ values["Cd"])
        out[t] = h
    return E, out


for pairs in [[(4, 3), (0, 2), (6, 0), (2, 5)], [(3, 3), (1, 7)]]:
    x = [rng.standard_normal((ls, H)) for ls, _ in pairs]
    y = [rng.standard_normal((lt, H)) for _, lt in pairs]
    got_enc = f_enc(srcs=x, **{n: values[n] for n in ("We", "Ue")})
    got_dec = f_dec(srcs=x, trgs=y, **values)
    ref_dec = ft.evaluate_numpy(dec, srcs=x, trgs=y, **values)
    assert got_dec.lengths().tolist() == [lt for _, lt in pairs]
    for (xe, ye), ge, gd, rd in zip(map(numpy_seq2seq, x, y), got_enc.tolist(),
                                    got_dec.tolist(), ref_dec.tolist(),
                                    strict=True):
        np.testing.assert_allclose(ge, xe, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(gd, ye, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(rd, ye, rtol=1e-10, atol=1e-12)
    print(f"pairs (source, target lengths) {pairs}: the compiled encoder and "
          "attention decoder match numpy")
