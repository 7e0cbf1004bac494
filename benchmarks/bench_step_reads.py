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

Nothing here asserts on a time.
"""

from __future__ import annotations

import argparse
import os
import sys
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import best_of, fmt_seconds, print_header, print_table  # noqa: E402


def main() -> None:
    import ftlazy as ft

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sequences", type=int, default=2000)
    parser.add_argument("--hidden", type=int, default=32)
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
    rows = []
    for name, result in programs.items():
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", ft.HostEvaluationWarning)
            f = ft.compile(result)
        np.testing.assert_allclose(f(xs=packed, W=w), references[name](),
                                   rtol=1e-3, atol=1e-4)
        warm = best_of(lambda: f(xs=packed, W=w), repeat=9)
        loop = best_of(references[name], repeat=9)
        rows.append([name, "on the host" if caught else "compiled",
                     fmt_seconds(warm.best), fmt_seconds(loop.best),
                     f"{loop.best / warm.best:.1f}x"])
    print_table(["fold", "loop", "ftlazy", "numpy loop", "loop / ftlazy"],
                rows, "warm calls with a JaggedArray, best of 9")


if __name__ == "__main__":
    main()
