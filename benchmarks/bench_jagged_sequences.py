# SPDX-License-Identifier: MIT
"""Whole-sequence bodies over jagged batches (recurrences and attention):
ftlazy's compiled maps over FractalTensors versus numpy anchors.

Run by hand: ``python benchmarks/bench_jagged_sequences.py [--quick]
[--repeat 5] [--warmup 5] [--warmup-seconds 0.3] [--only J10,J8]
[--no-subprocess]``. Workloads and anchors follow
``shared/research/jagged_anchors.md`` §4 (float32):

* J8, segmented diagonal linear recurrence ``h_t = a ⊙ h_{t-1} + x_t``,
  ``h`` starting at 0 in every segment, every ``h`` emitted; n=1024,
  lengths U[1,256], D=64. Anchors: the time-major masked numpy loop (all
  segments advance together, the active ones selected per step) and the
  per-segment numpy loop. Target: 4x faster than the numpy loop.
* J10, a 3-layer LSTM (H=32) over n=64 sequences of lengths U[4,27]
  (FractalTensor's flagship, ``examples/stacked_lstm.py``): a fold over
  layers whose carry is the batch, each layer a map of a scan. Anchors: the
  time-major numpy loop with the hoisted input product (numpy over BLAS),
  and the padded batch (every step runs all sequences, a mask keeps the
  state of finished ones, as padded frameworks do). Target: within 2x of
  the BLAS loop and 3x faster than padding.
* J11, two-level pooling over a depth-3 FractalTensor (documents of
  sentences of tokens): the mean of each sentence's tokens, then of each
  document's sentences; 512 documents, U[1,32] sentences, U[1,48] tokens,
  H=64. Anchors: two scipy CSR products (when scipy is importable) and the
  per-document numpy loop.
* J12 (a variant), within-event pairs: for each event of U[0,8] particles
  ``(E, px, py, pz)``, the largest pair mass ``sqrt((E_j+E_k)^2 -
  |p_j+p_k|^2)`` over ``j < k`` (0 for fewer than two particles), 100k
  events. The anchor's jagged output of every pair mass (``L(L-1)/2`` per
  event) is not an affine length, so ftlazy reduces the pairs in the map;
  anchors: numpy with a precomputed pair index and ``np.maximum.at``, and
  the per-event loop. Target: 4x faster than the loop.
* J13, a hierarchical RNN over documents (H=32): per sentence a tanh RNN
  over its tokens, then per document a tanh RNN over its sentences'
  encodings; 256 documents of U[1,16] sentences of U[4,32] tokens (the
  fold over sentences in the map over documents is split into a map over
  all sentences and a scan over the encodings,
  ``ftlazy.fractal_fold_split``). Anchors: the per-sentence numpy loop
  (BLAS per step) and the time-major numpy loop (all sentences advance
  together, then all documents, the finished ones masked). No target in
  the issue; printed for scale.
* J7, self-attention within each sequence, ``softmax(Q Kᵀ/√d) V`` per head
  (Q = K = V = the sequence, 4 heads of d=32), 32 sequences of lengths
  U[16,512]. Anchors: the per-sequence numpy loop (BLAS) and the padded
  batch with a mask. Target: within 2x of the loop, 3x faster than padding.

Every ftlazy result is checked against the per-segment numpy loop before
timing. Times are warm medians (numpy inputs and outputs, transfers
included); "kernels only" times the compiled dense program alone, its
inputs and the host's derivations from the offsets already on the device
(the rest of the ftlazy time is the host's work per call). The OpenCL triad bandwidth of the device is printed for scale.
Also printed: a second call with a new length distribution (OpenCL builds
counted: the compiled program serves every length), and the first result of
each workload in a fresh process whose loopy, pyopencl and PoCL disk caches
are empty (the issue's target: under 2 s), with the share of code
generation (loopy kernel, schedule, OpenCL source and build). Warm-up calls
go on for ``--warmup-seconds``: PoCL's worker threads reach their steady
pace only after some tenths of a second of work. Nothing here asserts on a
time.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from typing import Any, NamedTuple

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from common import run_cold_child  # noqa: E402
from common import (  # noqa: E402
    best_of, fmt_seconds, opencl_triad, print_header, print_table, triad_bytes)

CHILD_MARKER = "FIRST_RESULT_JSON "

FULL = {"J8": (1024, 1, 256, 64), "J10": (64, 4, 27, 32, 3),
        "J7": (32, 16, 512, 4, 32), "J11": (512, 32, 48, 64),
        "J12": (100_000, 8), "J13": (256, 16, 4, 32, 32), "triad": 2**24}
QUICK = {"J8": (32, 1, 16, 8), "J10": (8, 1, 6, 4, 2), "J7": (4, 1, 9, 2, 4),
         "J11": (8, 4, 5, 4), "J12": (50, 5), "J13": (6, 3, 1, 5, 4),
         "triad": 2**20}


def _offsets(lens: np.ndarray) -> np.ndarray:
    return np.concatenate([[0], np.cumsum(lens)]).astype(np.int64)


def jagged(n: int, lo: int, hi: int, h: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    off = _offsets(rng.integers(lo, hi + 1, n))
    return rng.standard_normal((off[-1], h)).astype(np.float32), off


def ratio(a: float, b: float) -> str:
    return f"{a / b:.2f}x"


# {{{ J8: segmented linear recurrence

def j8_loop(x: np.ndarray, off: np.ndarray, a: np.ndarray) -> np.ndarray:
    out = np.empty_like(x)
    for i in range(len(off) - 1):
        h = np.zeros(x.shape[1], x.dtype)
        for t in range(off[i], off[i + 1]):
            h = a * h + x[t]
            out[t] = h
    return out


def j8_time_major(x: np.ndarray, off: np.ndarray, a: np.ndarray) -> np.ndarray:
    lens = np.diff(off)
    h = np.zeros((len(lens), x.shape[1]), x.dtype)
    out = np.empty_like(x)
    for t in range(int(lens.max(initial=0))):
        active = np.nonzero(lens > t)[0]
        rows = off[active] + t
        h[active] = a * h[active] + x[rows]
        out[rows] = h[active]
    return out


def j8_ftlazy(d: int) -> Any:
    import ftlazy as ft
    xs = ft.make_jagged_placeholder("xs", (d,), np.float32, depth=2)
    a = ft.make_placeholder("a", (d,), np.float32)
    return ft.compile(ft.map(lambda s: ft.scan(lambda h, x: a * h + x, s,
                                               ft.zeros(d, np.float32)), xs))

# }}}


# {{{ J10: stacked LSTM

class Layer(NamedTuple):
    W: Any
    U: Any
    b: Any


class State(NamedTuple):
    h: Any
    c: Any


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 1 / (1 + np.exp(-x))


def lstm_gates(g: np.ndarray, c: np.ndarray, h_size: int) -> tuple:
    H = h_size
    c = _sigmoid(g[..., H:2 * H]) * c + _sigmoid(g[..., :H]) * np.tanh(g[..., 3 * H:])
    return _sigmoid(g[..., 2 * H:3 * H]) * np.tanh(c), c


def j10_loop(x: np.ndarray, off: np.ndarray, p: dict) -> np.ndarray:
    """Per sequence, per layer, per step (the reference)."""
    H = x.shape[1]
    out = np.empty_like(x)
    for i in range(len(off) - 1):
        seq = x[off[i]:off[i + 1]]
        for d in range(p["W"].shape[0]):
            xw = seq @ p["W"][d] + p["b"][d]
            h, c = np.zeros(H, x.dtype), np.zeros(H, x.dtype)
            rows = []
            for t in range(len(seq)):
                h, c = lstm_gates(xw[t] + h @ p["U"][d], c, H)
                rows.append(h)
            seq = np.array(rows, x.dtype).reshape(len(seq), H)
        out[off[i]:off[i + 1]] = seq
    return out


def j10_time_major(x: np.ndarray, off: np.ndarray, p: dict) -> np.ndarray:
    """Layer by layer, the input product hoisted (one GEMM over all tokens),
    then all active sequences advanced together per step (numpy over BLAS)."""
    H = x.shape[1]
    lens = np.diff(off)
    inp = x
    for d in range(p["W"].shape[0]):
        xw = inp @ p["W"][d] + p["b"][d]
        h = np.zeros((len(lens), H), x.dtype)
        c = np.zeros_like(h)
        out = np.empty_like(x)
        for t in range(int(lens.max(initial=0))):
            active = np.nonzero(lens > t)[0]
            rows = off[active] + t
            h[active], c[active] = lstm_gates(xw[rows] + h[active] @ p["U"][d],
                                              c[active], H)
            out[rows] = h[active]
        inp = out
    return inp


def j10_padded(x: np.ndarray, off: np.ndarray, p: dict) -> np.ndarray:
    """Pad to (n, max_len, H), run every sequence for max_len steps, keep the
    state of finished sequences with a mask, then unpad."""
    H = x.shape[1]
    lens = np.diff(off)
    n, T = len(lens), int(lens.max(initial=0))
    mask = np.arange(T)[None, :] < lens[:, None]
    padded = np.zeros((n, T, H), x.dtype)
    padded[mask] = x
    for d in range(p["W"].shape[0]):
        xw = padded @ p["W"][d] + p["b"][d]
        h = np.zeros((n, H), x.dtype)
        c = np.zeros_like(h)
        out = np.zeros_like(padded)
        for t in range(T):
            hn, cn = lstm_gates(xw[:, t] + h @ p["U"][d], c, H)
            m = mask[:, t, None]
            h, c = np.where(m, hn, h), np.where(m, cn, c)
            out[:, t] = h
        padded = out
    return padded[mask]


def j10_ftlazy(h_size: int, depth: int) -> Any:
    import ftlazy as ft
    H = h_size

    def sigmoid(v: Any) -> Any:
        return 1 / (1 + ft.exp(-v))

    def layer(batch: Any, p: Layer) -> Any:
        def cell(state: State, xw: Any) -> State:
            g = xw + state.h @ p.U
            c = (sigmoid(g[H:2 * H]) * state.c
                 + sigmoid(g[:H]) * ft.tanh(g[3 * H:]))
            return State(sigmoid(g[2 * H:3 * H]) * ft.tanh(c), c)
        zeros = ft.zeros(H, np.float32)
        return ft.map(lambda s: ft.scan(cell, s @ p.W + p.b,
                                        State(zeros, zeros)).h, batch)

    xs = ft.make_jagged_placeholder("xs", (H,), np.float32, depth=2)
    params = Layer(ft.make_placeholder("W", (depth, H, 4 * H), np.float32),
                   ft.make_placeholder("U", (depth, H, 4 * H), np.float32),
                   ft.make_placeholder("b", (depth, 4 * H), np.float32))
    return ft.compile(ft.fold(layer, params, xs))

# }}}


# {{{ J7: attention within each sequence

def _softmax_last(scores: np.ndarray) -> np.ndarray:
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def j7_loop(x: np.ndarray, off: np.ndarray, heads: int) -> np.ndarray:
    out = np.empty_like(x)
    d = x.shape[1] // heads
    for i in range(len(off) - 1):
        s = x[off[i]:off[i + 1]].reshape(-1, heads, d).transpose(1, 0, 2)
        p = _softmax_last(s @ s.transpose(0, 2, 1) / np.float32(np.sqrt(d)))
        out[off[i]:off[i + 1]] = (p @ s).transpose(1, 0, 2).reshape(-1, heads * d)
    return out


def j7_padded(x: np.ndarray, off: np.ndarray, heads: int) -> np.ndarray:
    lens = np.diff(off)
    n, T, d = len(lens), int(lens.max(initial=0)), x.shape[1] // heads
    mask = np.arange(T)[None, :] < lens[:, None]
    padded = np.zeros((n, T, heads * d), x.dtype)
    padded[mask] = x
    s = padded.reshape(n, T, heads, d).transpose(0, 2, 1, 3)
    scores = s @ s.transpose(0, 1, 3, 2) / np.float32(np.sqrt(d))
    scores = np.where(mask[:, None, None, :], scores, -np.inf)
    out = (_softmax_last(scores) @ s).transpose(0, 2, 1, 3).reshape(n, T, heads * d)
    return out[mask]


def j7_ftlazy(heads: int, d: int) -> Any:
    import ftlazy as ft

    def attention(seq: Any) -> Any:
        s = ft.reshape(seq, (seq.shape[0], heads, d))
        scores = ft.einsum("qhd,khd->hqk", s, s) / np.float32(np.sqrt(d))
        p = ft.exp(scores - ft.amax(scores, axis=2, keepdims=True))
        p = p / ft.sum(p, axis=2, keepdims=True)
        out = ft.einsum("hqk,khd->qhd", p, s)
        return ft.reshape(out, (seq.shape[0], heads * d))

    xs = ft.make_jagged_placeholder("xs", (heads * d,), np.float32, depth=2)
    return ft.compile(ft.map(attention, xs))

# }}}


# {{{ J11: two-level pooling; J12: within-event pairs

def j11_data(n: int, max_sent: int, max_tok: int, h: int, seed: int) -> tuple:
    rng = np.random.default_rng(seed)
    off0 = _offsets(rng.integers(1, max_sent + 1, n))
    off1 = _offsets(rng.integers(1, max_tok + 1, off0[-1]))
    return rng.standard_normal((off1[-1], h)).astype(np.float32), off0, off1


def j11_loop(x: np.ndarray, off0: np.ndarray, off1: np.ndarray) -> np.ndarray:
    out = np.empty((len(off0) - 1, x.shape[1]), x.dtype)
    for d in range(len(off0) - 1):
        sents = [x[off1[s]:off1[s + 1]].mean(axis=0)
                 for s in range(off0[d], off0[d + 1])]
        out[d] = np.mean(sents, axis=0)
    return out


def j11_csr(x: np.ndarray, off0: np.ndarray, off1: np.ndarray) -> Any:
    """Two scipy CSR products (None without scipy)."""
    try:
        import scipy.sparse as sp
    except ImportError:
        return None

    def mean_matrix(off: np.ndarray, cols: int) -> Any:
        lens = np.diff(off)
        rows = np.repeat(np.arange(len(lens)), lens)
        return sp.csr_matrix(((1 / lens[rows]).astype(np.float32),
                              (rows, np.arange(cols))), shape=(len(lens), cols))
    a, b = mean_matrix(off1, len(x)), mean_matrix(off0, len(off1) - 1)
    return lambda: b @ (a @ x)


def j11_ftlazy(h: int) -> Any:
    import ftlazy as ft
    docs = ft.make_jagged_placeholder("docs", (h,), np.float32, depth=3)

    def document_mean(doc: Any) -> Any:
        sentences = ft.map(lambda s: ft.sum(s, axis=0) / s.shape[0], doc)
        return ft.sum(sentences, axis=0) / sentences.shape[0]
    return ft.compile(ft.map(document_mean, docs))


def j12_data(n: int, max_len: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    off = _offsets(rng.integers(0, max_len + 1, n))
    p = rng.standard_normal((off[-1], 3)).astype(np.float32)
    e = (np.sqrt((p * p).sum(axis=1) + 0.1) + 0.5).astype(np.float32)
    return np.concatenate([e[:, None], p], axis=1), off


def _pair_mass(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    t = a + b
    return np.sqrt(np.maximum(t[..., 0] ** 2 - (t[..., 1:] ** 2).sum(axis=-1), 0))


def j12_loop(x: np.ndarray, off: np.ndarray) -> np.ndarray:
    out = np.zeros(len(off) - 1, x.dtype)
    for i in range(len(off) - 1):
        ev = x[off[i]:off[i + 1]]
        j, k = np.triu_indices(len(ev), 1)
        if len(j):
            out[i] = _pair_mass(ev[j], ev[k]).max()
    return out


def j12_pair_index(off: np.ndarray) -> tuple[np.ndarray, ...]:
    """The anchor's precomputed pairs: first, second particle, event."""
    firsts, seconds, events = [], [], []
    for size in np.unique(np.diff(off)):
        starts = np.nonzero(np.diff(off) == size)[0]
        j, k = np.triu_indices(size, 1)
        firsts.append((off[starts][:, None] + j).ravel())
        seconds.append((off[starts][:, None] + k).ravel())
        events.append(np.repeat(starts, len(j)))
    return tuple(np.concatenate(a) for a in (firsts, seconds, events))


def j12_vectorized(x: np.ndarray, off: np.ndarray, pairs: tuple) -> np.ndarray:
    j, k, ev = pairs
    out = np.zeros(len(off) - 1, x.dtype)
    np.maximum.at(out, ev, _pair_mass(x[j], x[k]))
    return out


def j12_ftlazy() -> Any:
    import ftlazy as ft
    xs = ft.make_jagged_placeholder("xs", (4,), np.float32, depth=2)

    def largest_pair_mass(ev: Any) -> Any:
        t = ev[:, None, :] + ev[None, :, :]                         # (L, L, 4)
        mass = ft.sqrt(ft.maximum(t[:, :, 0] ** 2
                                  - ft.sum(t[:, :, 1:] ** 2, axis=2), 0))
        index = ft.arange(ev.shape[0])
        below = ft.less(index[:, None], index[None, :])
        return ft.amax(ft.where(below, mass, 0), initial=0)
    return ft.compile(ft.map(largest_pair_mass, xs))

# }}}


# {{{ J13: hierarchical RNN

def j13_data(n: int, max_sent: int, min_tok: int, max_tok: int, h: int,
             seed: int) -> tuple:
    rng = np.random.default_rng(seed)
    off0 = _offsets(rng.integers(1, max_sent + 1, n))
    off1 = _offsets(rng.integers(min_tok, max_tok + 1, off0[-1]))
    x = rng.standard_normal((off1[-1], h)).astype(np.float32)
    weights = (rng.standard_normal((2, h, h)) * 0.3).astype(np.float32)
    return x, off0, off1, {"Us": weights[0], "Ud": weights[1]}


def j13_loop(x: np.ndarray, off0: np.ndarray, off1: np.ndarray,
             p: dict) -> np.ndarray:
    def rnn(rows: Any, u: np.ndarray) -> np.ndarray:
        h = np.zeros(x.shape[1], x.dtype)
        for row in rows:
            h = np.tanh(row + h @ u)
        return h
    encodings = [rnn(x[off1[s]:off1[s + 1]], p["Us"])
                 for s in range(len(off1) - 1)]
    return np.array([rnn(encodings[off0[d]:off0[d + 1]], p["Ud"])
                     for d in range(len(off0) - 1)]).reshape(-1, x.shape[1])


def _time_major_rnn(x: np.ndarray, off: np.ndarray, u: np.ndarray) -> np.ndarray:
    """The last state of a tanh RNN over each segment, all segments
    advancing together (the finished ones keep their state)."""
    lens = np.diff(off)
    h = np.zeros((len(lens), x.shape[1]), x.dtype)
    for t in range(int(lens.max(initial=0))):
        active = np.nonzero(lens > t)[0]
        h[active] = np.tanh(x[off[active] + t] + h[active] @ u)
    return h


def j13_time_major(x: np.ndarray, off0: np.ndarray, off1: np.ndarray,
                   p: dict) -> np.ndarray:
    return _time_major_rnn(_time_major_rnn(x, off1, p["Us"]), off0, p["Ud"])


def j13_ftlazy(h: int) -> Any:
    import ftlazy as ft
    docs = ft.make_jagged_placeholder("docs", (h,), np.float32, depth=3)
    us = ft.make_placeholder("Us", (h, h), np.float32)
    ud = ft.make_placeholder("Ud", (h, h), np.float32)

    def encode(s: Any) -> Any:
        return ft.fold(lambda st, x: ft.tanh(x + st @ us), s,
                       ft.zeros(h, np.float32))
    return ft.compile(ft.map(lambda doc: ft.fold(
        lambda st, s: ft.tanh(encode(s) + st @ ud), doc,
        ft.zeros(h, np.float32)), docs))

# }}}


def builds_during(fn: Any) -> tuple[float, int]:
    """Seconds and OpenCL program builds of one call of *fn*."""
    import pyopencl as cl
    count = [0]
    original = cl.Program.build

    def counting(self: Any, *args: Any, **kwargs: Any) -> Any:
        count[0] += 1
        return original(self, *args, **kwargs)
    cl.Program.build = counting
    try:
        start = time.perf_counter()
        fn()
        return time.perf_counter() - start, count[0]
    finally:
        cl.Program.build = original


#: the workloads, in the order they run
WORKLOADS = ("J8", "J10", "J7", "J11", "J12", "J13")


class _RowsAsTheyCome(list):
    """Table rows that are also printed when they are added: a run cut at
    its time limit (a lent GPU machine's) still reports what it timed."""

    def append(self, row: Any) -> None:
        super().append(row)
        print("  timed: " + " | ".join(map(str, row)), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="tiny sizes (a smoke run)")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--warmup", type=int, default=5,
                        help="untimed calls before each timing")
    parser.add_argument("--warmup-seconds", type=float, default=0.3,
                        help="untimed calls go on until they took this long "
                        "(PoCL's worker threads need some tenths of a second "
                        "of work to reach their steady pace)")
    parser.add_argument("--no-subprocess", action="store_true",
                        help="skip the cold first results (a fresh process each)")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--only", default=",".join(WORKLOADS),
                        help="comma-separated workloads to run (default: "
                        f"{','.join(WORKLOADS)})")
    args = parser.parse_args()
    if args.child:
        child_first_result(args.child, args.quick)
        return
    sizes = QUICK if args.quick else FULL
    chosen = set(args.only.split(","))
    if chosen - set(WORKLOADS):
        parser.error(f"unknown workload(s) {sorted(chosen - set(WORKLOADS))}; "
                     f"choose from {','.join(WORKLOADS)}")

    import ftlazy as ft
    from ftlazy.target.loopy.device import default_queue
    queue = default_queue()
    print_header("ftlazy jagged recurrences (scans in maps over FractalTensors), "
                 "float32, warm medians", queue)
    triad = opencl_triad(queue, sizes["triad"])
    print(f"OpenCL triad: {triad_bytes(sizes['triad']) / triad.best / 1e9:.1f} GB/s")

    rows, reuse_rows = _RowsAsTheyCome(), _RowsAsTheyCome()
    # (a few warm-up calls: PoCL's worker threads take some calls to reach
    # their steady pace after the previous workload's pause)
    timed = lambda fn: best_of(fn, repeat=args.repeat,  # noqa: E731
                               warmup=args.warmup,
                               warmup_s=args.warmup_seconds).median

    def ft_times(f: Any, inputs: dict[str, Any]) -> tuple[float, float]:
        """Median seconds of ``f(**inputs)`` and of its kernels alone
        (inputs and host-derived arrays already on the device, see
        ``bench_jagged.kernels_only``)."""
        from bench_jagged import kernels_only
        return timed(lambda: f(**inputs)), timed(kernels_only(f, inputs, queue))

    # J8
    if "J8" in chosen:
        n, lo, hi, d = sizes["J8"]
        x, off = jagged(n, lo, hi, d, seed=0)
        a = np.random.default_rng(1).uniform(0.5, 1.0, d).astype(np.float32)
        f = j8_ftlazy(d)
        want = j8_loop(x, off, a)
        got = f(xs=ft.JaggedArray(x, off), a=a)
        np.testing.assert_allclose(got.values, want, rtol=2e-4, atol=2e-4)
        np.testing.assert_allclose(j8_time_major(x, off, a), want, rtol=1e-5, atol=1e-5)
        t_ft, t_k = ft_times(f, dict(xs=ft.JaggedArray(x, off), a=a))
        t_loop = timed(lambda: j8_loop(x, off, a))
        t_tm = timed(lambda: j8_time_major(x, off, a))
        rows.append(["J8 linear recurrence", f"nnz={off[-1]}, D={d}", fmt_seconds(t_ft), fmt_seconds(t_k),
                     fmt_seconds(t_tm), fmt_seconds(t_loop), "-",
                     ratio(t_loop, t_ft) + " faster than loop",
                     ratio(t_tm, t_ft) + " vs time-major"])
        x2, off2 = jagged(n // 2 + 1, lo, hi * 2, d, seed=5)
        reuse_rows.append(["J8", *_reuse(lambda: f(xs=ft.JaggedArray(x2, off2), a=a))])

    # J10
    if "J10" in chosen:
        n, lo, hi, H, depth = sizes["J10"]
        x, off = jagged(n, lo, hi, H, seed=2)
        rng = np.random.default_rng(3)
        p = {"W": (rng.standard_normal((depth, H, 4 * H)) * 0.3).astype(np.float32),
             "U": (rng.standard_normal((depth, H, 4 * H)) * 0.3).astype(np.float32),
             "b": (rng.standard_normal((depth, 4 * H)) * 0.1).astype(np.float32)}
        f = j10_ftlazy(H, depth)
        want = j10_loop(x, off, p)
        got = f(xs=ft.JaggedArray(x, off), **p)
        np.testing.assert_allclose(got.values, want, rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(j10_time_major(x, off, p), want, rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(j10_padded(x, off, p), want, rtol=1e-4, atol=1e-5)
        t_ft, t_k = ft_times(f, dict(xs=ft.JaggedArray(x, off), **p))
        t_loop = timed(lambda: j10_loop(x, off, p))
        t_tm = timed(lambda: j10_time_major(x, off, p))
        t_pad = timed(lambda: j10_padded(x, off, p))
        rows.append([f"J10 {depth}-layer LSTM", f"nnz={off[-1]}, H={H}", fmt_seconds(t_ft), fmt_seconds(t_k),
                     fmt_seconds(t_tm), fmt_seconds(t_loop), fmt_seconds(t_pad),
                     ratio(t_ft, t_tm) + " of BLAS loop",
                     ratio(t_pad, t_ft) + " faster than padded"])
        x2, off2 = jagged(n * 2, lo, hi + 10, H, seed=6)
        reuse_rows.append(["J10", *_reuse(lambda: f(xs=ft.JaggedArray(x2, off2), **p))])

    # J7
    if "J7" in chosen:
        n, lo, hi, heads, d = sizes["J7"]
        x, off = jagged(n, lo, hi, heads * d, seed=4)
        f = j7_ftlazy(heads, d)
        want = j7_loop(x, off, heads)
        got = f(xs=ft.JaggedArray(x, off))
        np.testing.assert_allclose(got.values, want, rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(j7_padded(x, off, heads), want, rtol=1e-4, atol=1e-5)
        t_ft, t_k = ft_times(f, dict(xs=ft.JaggedArray(x, off)))
        t_loop = timed(lambda: j7_loop(x, off, heads))
        t_pad = timed(lambda: j7_padded(x, off, heads))
        rows.append([f"J7 attention, {heads} heads", f"nnz={off[-1]}, d={d}",
                     fmt_seconds(t_ft), fmt_seconds(t_k), "-", fmt_seconds(t_loop), fmt_seconds(t_pad),
                     ratio(t_ft, t_loop) + " of BLAS loop",
                     ratio(t_pad, t_ft) + " faster than padded"])
        x2, off2 = jagged(n + 3, lo, hi // 2, heads * d, seed=7)
        reuse_rows.append(["J7", *_reuse(lambda: f(xs=ft.JaggedArray(x2, off2)))])

    # J11
    if "J11" in chosen:
        n, max_sent, max_tok, h = sizes["J11"]
        x, off0, off1 = j11_data(n, max_sent, max_tok, h, seed=8)
        f = j11_ftlazy(h)
        docs = ft.JaggedArray(x, off0, off1)
        want = j11_loop(x, off0, off1)
        np.testing.assert_allclose(f(docs=docs), want, rtol=1e-4, atol=1e-5)
        csr = j11_csr(x, off0, off1)
        t_ft, t_k = ft_times(f, dict(docs=docs))
        t_loop = timed(lambda: j11_loop(x, off0, off1))
        t_csr = None
        if csr is not None:
            np.testing.assert_allclose(csr(), want, rtol=1e-4, atol=1e-5)
            t_csr = timed(csr)
        rows.append(["J11 two-level pooling (depth 3)", f"nnz={off1[-1]}, H={h}",
                     fmt_seconds(t_ft), fmt_seconds(t_k), "-", fmt_seconds(t_loop), "-",
                     ratio(t_loop, t_ft) + " faster than loop",
                     (ratio(t_csr, t_ft) + " vs scipy CSR") if t_csr else "no scipy"])

    # J12 (variant)
    if "J12" in chosen:
        n, max_len = sizes["J12"]
        x, off = j12_data(n, max_len, seed=9)
        f = j12_ftlazy()
        want = j12_loop(x, off)
        np.testing.assert_allclose(f(xs=ft.JaggedArray(x, off)), want, rtol=1e-4,
                                   atol=1e-4)
        pairs = j12_pair_index(off)
        np.testing.assert_allclose(j12_vectorized(x, off, pairs), want, rtol=1e-5)
        t_ft, t_k = ft_times(f, dict(xs=ft.JaggedArray(x, off)))
        t_loop = timed(lambda: j12_loop(x, off))
        t_vec = timed(lambda: j12_vectorized(x, off, pairs))
        rows.append(["J12 largest pair mass", f"{n} events, nnz={off[-1]}",
                     fmt_seconds(t_ft), fmt_seconds(t_k), fmt_seconds(t_vec), fmt_seconds(t_loop), "-",
                     ratio(t_loop, t_ft) + " faster than loop",
                     ratio(t_vec, t_ft) + " vs pair index"])

    # J13
    if "J13" in chosen:
        x, off0, off1, p = j13_data(*sizes["J13"], seed=10)
        f = j13_ftlazy(sizes["J13"][-1])
        docs = ft.JaggedArray(x, off0, off1)
        want = j13_loop(x, off0, off1, p)
        np.testing.assert_allclose(f(docs=docs, **p), want, rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(j13_time_major(x, off0, off1, p), want,
                                   rtol=1e-4, atol=1e-5)
        t_ft, t_k = ft_times(f, dict(docs=docs, **p))
        t_loop = timed(lambda: j13_loop(x, off0, off1, p))
        t_tm = timed(lambda: j13_time_major(x, off0, off1, p))
        rows.append(["J13 hierarchical RNN (depth 3)",
                     f"nnz={off1[-1]}, {len(off1) - 1} sentences",
                     fmt_seconds(t_ft), fmt_seconds(t_k), fmt_seconds(t_tm),
                     fmt_seconds(t_loop), "-",
                     ratio(t_loop, t_ft) + " faster than loop",
                     ratio(t_tm, t_ft) + " vs time-major"])
        n, max_sent, lo, hi, h = sizes["J13"]
        x2, o0, o1, _ = j13_data(n // 2 + 1, max_sent * 2, lo, hi, h, seed=11)
        reuse_rows.append(["J13", *_reuse(lambda: f(docs=ft.JaggedArray(
            x2, o0, o1), **p))])

    print_table(["workload", "size", "ftlazy", "kernels only",
                 "numpy time-major (J12: pair index)",
                 "numpy per-segment",
                 "numpy padded", "ratio", "ratio"], rows,
                title="Warm times (median), numpy inputs and outputs")
    print_table(["workload", "new lengths: first call", "OpenCL builds"], reuse_rows,
                title="One compiled program for all lengths")
    if not args.no_subprocess:
        print_table(["workload", "ft.compile", "of which code generation",
                     "first call", "first result", "target"],
                    cold_rows([w for w in WORKLOADS if w in chosen], args.quick),
                    title="First result in a fresh process, empty loopy/pyopencl/"
                    "PoCL disk caches (imports excluded; code generation: loopy "
                    "kernel, schedule, OpenCL source and build)")


# {{{ cold first result in a fresh process

def first_inputs(key: str, sizes: dict) -> tuple[Any, dict[str, Any]]:
    """``(build, inputs)`` of workload *key*: ``build()`` is its
    ``ft.compile`` result (the same programs and data as :func:`main`)."""
    import ftlazy as ft
    if key == "J8":
        n, lo, hi, d = sizes["J8"]
        x, off = jagged(n, lo, hi, d, seed=0)
        a = np.random.default_rng(1).uniform(0.5, 1.0, d).astype(np.float32)
        return lambda: j8_ftlazy(d), dict(xs=ft.JaggedArray(x, off), a=a)
    if key == "J10":
        n, lo, hi, H, depth = sizes["J10"]
        x, off = jagged(n, lo, hi, H, seed=2)
        rng = np.random.default_rng(3)
        p = {k: (rng.standard_normal(shape) * scale).astype(np.float32)
             for k, shape, scale in (("W", (depth, H, 4 * H), 0.3),
                                     ("U", (depth, H, 4 * H), 0.3),
                                     ("b", (depth, 4 * H), 0.1))}
        return lambda: j10_ftlazy(H, depth), dict(xs=ft.JaggedArray(x, off), **p)
    if key == "J7":
        n, lo, hi, heads, d = sizes["J7"]
        x, off = jagged(n, lo, hi, heads * d, seed=4)
        return lambda: j7_ftlazy(heads, d), dict(xs=ft.JaggedArray(x, off))
    if key == "J11":
        n, max_sent, max_tok, h = sizes["J11"]
        x, off0, off1 = j11_data(n, max_sent, max_tok, h, seed=8)
        return lambda: j11_ftlazy(h), dict(docs=ft.JaggedArray(x, off0, off1))
    if key == "J13":
        x, off0, off1, p = j13_data(*sizes["J13"], seed=10)
        return (lambda: j13_ftlazy(sizes["J13"][-1]),
                dict(docs=ft.JaggedArray(x, off0, off1), **p))
    n, max_len = sizes["J12"]
    x, off = j12_data(n, max_len, seed=9)
    return j12_ftlazy, dict(xs=ft.JaggedArray(x, off))


def child_first_result(key: str, quick: bool) -> None:
    """Print (after a marker) the seconds of ``ft.compile`` and of the first
    call of *key*, in this (fresh) process."""
    build, inputs = first_inputs(key, QUICK if quick else FULL)
    start = time.perf_counter()
    f = build()
    compiled = time.perf_counter()
    f(**inputs)
    done = time.perf_counter()
    stages = {k: getattr(f.timings, k, None) for k in
              ("kernel_creation", "scheduling", "opencl_build")}
    print(CHILD_MARKER + json.dumps({"compile": compiled - start,
                                     "first_call": done - compiled,
                                     "total": done - start, **stages}))


def first_result_cold(key: str, quick: bool) -> dict:
    """:func:`child_first_result` in a fresh interpreter whose loopy,
    pyopencl (``XDG_CACHE_HOME``) and PoCL (``POCL_CACHE_DIR``) disk caches
    are empty; the device probe's cache is kept (a measurement of the
    device made once, not a compile cache). Imports are excluded."""
    return run_cold_child(__file__, ["--child", key] + (["--quick"] if quick else []),
                          CHILD_MARKER)


def cold_rows(chosen: list[str], quick: bool) -> list[list[str]]:
    rows = []
    for key in chosen:
        try:
            d = first_result_cold(key, quick)
        except (RuntimeError, subprocess.TimeoutExpired) as exc:
            rows.append([key, "-", "-", "-", "-", f"failed: {str(exc)[:80]}"])
            continue
        codegen = sum(d[k] or 0 for k in ("kernel_creation", "scheduling",
                                          "opencl_build"))
        rows.append([key, fmt_seconds(d["compile"]), fmt_seconds(codegen),
                     fmt_seconds(d["first_call"]), fmt_seconds(d["total"]),
                     "under 2 s" if d["total"] < 2 else "OVER 2 s"])
    return rows

# }}}


def _reuse(fn: Any) -> list[str]:
    seconds, builds = builds_during(fn)
    return [fmt_seconds(seconds), str(builds)]


if __name__ == "__main__":
    main()
