# SPDX-License-Identifier: MIT
"""Counted rows read where they compile since this benchmark was written,
warm, against the numpy loop over the elements.

Run by hand: ``python benchmarks/bench_counted_rows.py [--documents 512]
[--sequences 4096] [--hidden 32]``. Float32 data:

* ``lead sentences``: ``ft.map(lambda d: ft.sum(ft.map(encode, d)[:2],
  axis=0), docs)``, the first two sentence encodings of each document
  (U[0,20) sentences of U[0,30) tokens); the map over documents is
  flattened into maps over depth 2 before its counted list is zipped
  (:mod:`ftlazy.transform.jagged_counted`);
* ``last tokens``: ``ft.sum(ft.flatten(d)[-3:] @ W, axis=0)`` per document;
* ``fold over heads``: ``ft.fold(lambda c, s: ft.tanh(c + ft.sum(s[:2] *
  c, axis=0)), xs, h0)`` over sequences of U[0,64) rows, the counts of
  ``s[:2]`` padded to their largest value
  (:mod:`ftlazy.transform.jagged_outer_scan`).

The "loop" column says whether a loop ran on the host (ft.compile's
fallback) or was compiled. Nothing here asserts on a time.
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
    parser.add_argument("--documents", type=int, default=512)
    parser.add_argument("--sequences", type=int, default=4096)
    parser.add_argument("--hidden", type=int, default=32)
    args = parser.parse_args()
    h = args.hidden
    print_header("counted rows in document maps and folds")
    rng = np.random.default_rng(0)
    documents = [[rng.standard_normal((int(k), h)).astype(np.float32)
                  for k in rng.integers(0, 30, rng.integers(0, 20))]
                 for _ in range(args.documents)]
    sequences = [(rng.standard_normal((int(k), h)) * 0.1).astype(np.float32)
                 for k in rng.integers(0, 64, args.sequences)]
    w = (rng.standard_normal((h, h)) * 0.1).astype(np.float32)
    h0 = np.full(h, 0.1, np.float32)
    docs_in = ft.JaggedArray.from_list(documents, (h,), np.float32, depth=3)
    xs_in = ft.JaggedArray.from_list(sequences, (h,), np.float32, depth=2)

    docs = ft.make_jagged_placeholder("docs", (h,), np.float32, depth=3)
    xs = ft.make_jagged_placeholder("xs", (h,), np.float32, depth=2)
    wp = ft.make_placeholder("W", (h, h), np.float32)
    hp = ft.make_placeholder("h0", (h,), np.float32)

    def encode(s):
        return ft.sum(s, axis=0)

    def tokens(d):
        return np.concatenate(d + [np.zeros((0, h), np.float32)])

    def fold_heads():
        c = h0
        for s in sequences:
            c = np.tanh(c + (s[:2] * c).sum(axis=0))
        return c

    workloads = {
        "lead sentences": (
            ft.map(lambda d: ft.sum(ft.map(encode, d)[:2], axis=0), docs),
            {"docs": docs_in},
            lambda: np.array([sum((s.sum(axis=0) for s in d[:2]),
                                  np.zeros(h, np.float32)) for d in documents])),
        "last tokens": (
            ft.map(lambda d: ft.sum(ft.flatten(d)[-3:] @ wp, axis=0), docs),
            {"docs": docs_in, "W": w},
            lambda: np.array([tokens(d)[-3:].sum(axis=0) @ w
                              for d in documents])),
        "fold over heads": (
            ft.fold(lambda c, s: ft.tanh(c + ft.sum(s[:2] * c, axis=0)), xs,
                    hp),
            {"xs": xs_in, "h0": h0}, fold_heads),
    }
    rows = [compiled_against_loop(name, result, inputs, reference,
                                  loop_repeat=5)
            for name, (result, inputs, reference) in workloads.items()]
    print(f"{len(documents)} documents, {len(sequences)} sequences, H={h}, "
          "float32")
    print_table(["workload", "loop", "ftlazy", "numpy loop", "loop / ftlazy"],
                rows, "warm calls with JaggedArrays, best of 9 (numpy: 5)")


if __name__ == "__main__":
    main()
