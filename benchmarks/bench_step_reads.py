# SPDX-License-Identifier: MIT
"""Folds over a list written by index (JAX's ``fori_loop`` habit, see
:mod:`ftlazy.fractal_step_reads`), warm, against the same fold over the
list itself and the numpy loop.

Run by hand: ``python benchmarks/bench_step_reads.py [--sequences 2000]
[--hidden 32]``. Float32 sequences of 0-63 rows; the step is
``h = tanh(h @ W + sum(x))``:

* ``over the list``: ``ft.fold(step, xs, h0)``;
* ``by index``: ``ft.fold(lambda h, t: step(h, xs[t]), ft.arange(n), h0)``
  (the list itself, zipped);
* ``by the previous index``: ``xs[ft.maximum(t - 1, 0)]`` (the elements
  gathered first, their indices checked on the host).

A second table times maps over every pair of sequences
(:mod:`ftlazy.fractal_pair_maps`), ``ft.map(lambda a: ft.map(lambda b:
score(a, b), xs), xs)`` over ``--pairs`` sequences of 0-32 rows, against
the numpy loop over the pairs:

* ``attention``: ``sum(tanh(a @ W @ b.T))`` (``a @ W`` once per sequence,
  each pair reading both sequences' rows);
* ``mean similarity``: ``mean(a) @ mean(b)`` (both means once per
  sequence: the pairs are a dense map).

Nothing here asserts on a time.
"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import compiled_against_loop, print_header, print_table  # noqa: E402


def main() -> None:
    import ftlazy as ft

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sequences", type=int, default=2000)
    parser.add_argument("--hidden", type=int, default=32)
    parser.add_argument("--pairs", type=int, default=100)
    args = parser.parse_args()
    h = args.hidden
    print_header("folds over a list by index")
    rng = np.random.default_rng(0)
    lengths = rng.integers(0, 64, args.sequences)
    data = [rng.standard_normal((int(k), h)).astype(np.float32)
            for k in lengths]
    packed = ft.JaggedArray.from_list(data, (h,), np.float32, depth=2)
    w = (rng.standard_normal((h, h)) * 0.1).astype(np.float32)
    print(f"{len(data)} sequences, {int(lengths.sum())} rows, H={h}, float32")

    xs = ft.make_jagged_placeholder("xs", (h,), np.float32, depth=2)
    wp = ft.make_placeholder("W", (h, h), np.float32)
    n, h0 = xs.length, ft.zeros(h, np.float32)

    def step(state, x):
        return ft.tanh(state @ wp + ft.sum(x, axis=0))

    programs = {
        "over the list": ft.fold(step, xs, h0),
        "by index": ft.fold(lambda s, t: step(s, xs[t]), ft.arange(n), h0),
        "by the previous index": ft.fold(
            lambda s, t: step(s, xs[ft.maximum(t - 1, 0)]), ft.arange(n), h0),
    }

    def numpy_loop(pick):
        state = np.zeros(h, np.float32)
        for t in range(len(data)):
            state = np.tanh(state @ w + data[pick(t)].sum(axis=0))
        return state

    references = {"over the list": lambda: numpy_loop(lambda t: t),
                  "by index": lambda: numpy_loop(lambda t: t),
                  "by the previous index": lambda: numpy_loop(
                      lambda t: max(t - 1, 0))}
    rows = [compiled_against_loop(name, result, {"xs": packed, "W": w},
                                  references[name], atol=1e-4)
            for name, result in programs.items()]
    print_table(["fold", "loop", "ftlazy", "numpy loop", "loop / ftlazy"],
                rows, "warm calls with a JaggedArray, best of 9")
    _pairs(ft, rng, args.pairs, h, w)


def _pairs(ft, rng, count: int, h: int, w: np.ndarray) -> None:
    """The table of maps over every pair of *count* sequences."""
    data = [rng.standard_normal((int(k), h)).astype(np.float32)
            for k in rng.integers(0, 33, count)]
    packed = ft.JaggedArray.from_list(data, (h,), np.float32, depth=2)
    xs = ft.make_jagged_placeholder("xs", (h,), np.float32, depth=2)
    wp = ft.make_placeholder("W", (h, h), np.float32)

    def mean(s):
        return ft.sum(s, axis=0) / ft.maximum(s.shape[0], 1)

    def numpy_mean(s):
        return s.sum(axis=0) / max(len(s), 1)

    programs = {
        "attention": (
            ft.map(lambda a: ft.map(
                lambda b: ft.sum(ft.tanh(a @ wp @ b.T)), xs), xs),
            lambda: np.array([[np.tanh(a @ w @ b.T).sum() for b in data]
                              for a in data], np.float32)),
        "mean similarity": (
            ft.map(lambda a: ft.map(lambda b: mean(a) @ mean(b), xs), xs),
            lambda: np.array([[numpy_mean(a) @ numpy_mean(b) for b in data]
                              for a in data], np.float32)),
    }
    rows = [compiled_against_loop(
        name, result, {"xs": packed} | ({"W": w} if name == "attention" else {}),
        reference, repeat=5) for name, (result, reference) in programs.items()]
    print_table(["pairs", "map", "ftlazy", "numpy loop", "loop / ftlazy"],
                rows, f"maps over all {count * count} pairs of {count} "
                "sequences of 0-32 rows, warm, best of 5")


if __name__ == "__main__":
    main()
