# SPDX-License-Identifier: MIT
"""Maps over documents that read each document through a view (see
:mod:`ftlazy.fractal_element_views`), warm, against the per-document numpy
loop, and what converting nested lists of numpy arrays costs per call.

Run by hand: ``python benchmarks/bench_document_views.py [--docs 2000]
[--hidden 32]``. Float32 documents of 1-8 sentences of 0-16 tokens.
Workloads:

* ``titled fold``: each document's first sentence's sum starts a
  recurrence ``h = tanh(h @ W + sum(s))`` over its other sentences
  (``doc[0]`` next to ``doc[1:]``);
* ``token filter``: each document's tokens whose sum is positive (a list
  counted from the whole document);
* ``sentence filter``: the sums of each document's sentences whose sum is
  positive (``ft.filter(p, doc)``, a filter of the document's sentences,
  then a map over those kept);
* ``question attention`` (its own table): each document has a question of
  1-12 tokens, read at the document's index; each sentence's tokens
  attend to it (``tanh(s @ q.T).sum(axis=1)``).

Each is timed as a call with nested lists of numpy arrays (what a user
passes; converted to the packed form at every call) and with a
:class:`ftlazy.JaggedArray` (already packed), next to the numpy loop over
the nested lists. The last table times the conversion alone next to
``np.concatenate`` of the same leaves, its floor. Nothing here asserts on a
time.
"""

from __future__ import annotations

import argparse
import os
import sys
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import best_of, fmt_seconds, print_header, print_table  # noqa: E402


def documents(n: int, h: int, seed: int = 0) -> list[list[np.ndarray]]:
    rng = np.random.default_rng(seed)
    return [[rng.standard_normal((int(t), h)).astype(np.float32)
             for t in rng.integers(0, 17, rng.integers(1, 9))]
            for _ in range(n)]


def packed(data: list[list[np.ndarray]]) -> tuple:
    sentences = [s for d in data for s in d]
    docs = np.zeros(len(data) + 1, np.int64)
    np.cumsum([len(d) for d in data], out=docs[1:])
    rows = np.zeros(len(sentences) + 1, np.int64)
    np.cumsum([len(s) for s in sentences], out=rows[1:])
    return np.concatenate(sentences), docs, rows


def main() -> None:
    import ftlazy as ft
    from ftlazy.jagged import JaggedArray

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=2000)
    parser.add_argument("--hidden", type=int, default=32)
    args = parser.parse_args()
    h = args.hidden
    print_header("maps over documents read through a view")
    data = documents(args.docs, h)
    print(f"{len(data)} documents, {sum(len(d) for d in data)} sentences, "
          f"{sum(len(s) for d in data for s in d)} tokens, H={h}, float32")
    w = (np.random.default_rng(1).standard_normal((h, h)) * 0.2
         ).astype(np.float32)
    docs = ft.make_jagged_placeholder("docs", (h,), np.float32, depth=3)

    def numpy_titled(data):
        out = []
        for d in data:
            state = d[0].sum(axis=0)
            for s in d[1:]:
                state = np.tanh(state @ w + s.sum(axis=0))
            out.append(state)
        return out

    def numpy_filter(data):
        out = []
        for d in data:
            tokens = np.concatenate(d)
            out.append(tokens[tokens.sum(axis=1) > 0])
        return out

    def numpy_kept_sums(data):
        return [np.array([s.sum(axis=0) for s in d if s.sum() > 0],
                         np.float32).reshape(-1, h) for d in data]

    programs = {
        "titled fold": (ft.map(lambda d: ft.fold(
            lambda s_, s: ft.tanh(s_ @ w + ft.sum(s, axis=0)), d[1:],
            ft.sum(d[0], axis=0)), docs), numpy_titled),
        "token filter": (ft.map(lambda d: ft.filter(
            lambda r: ft.sum(r) > 0, d.values), docs), numpy_filter),
        "sentence filter": (ft.map(lambda d: ft.map(
            lambda s: ft.sum(s, axis=0), ft.filter(lambda s: ft.sum(s) > 0, d)),
            docs), numpy_kept_sums),
    }
    packed_docs = JaggedArray(*packed(data))
    rows = []
    for name, (result, reference) in programs.items():
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", ft.HostEvaluationWarning)
            f = ft.compile(result)
        host = "on the host" if caught else "compiled"
        lists = best_of(lambda: f(docs=data), repeat=9)
        ready = best_of(lambda: f(docs=packed_docs), repeat=9)
        loop = best_of(lambda: reference(data), repeat=9)
        rows.append([name, host, fmt_seconds(lists.best),
                     fmt_seconds(ready.best), fmt_seconds(loop.best),
                     f"{loop.best / lists.best:.2f}x",
                     f"{loop.best / ready.best:.2f}x"])
    print_table(["workload", "map", "ftlazy (lists)", "ftlazy (JaggedArray)",
                 "numpy loop", "loop / lists", "loop / JaggedArray"], rows,
                "warm calls, best of 9")

    # (each document with a question of its own length, read at the
    # document's index: each sentence attends to the question's tokens)
    rng = np.random.default_rng(2)
    asked = [rng.standard_normal((int(k), h)).astype(np.float32)
             for k in rng.integers(1, 13, len(data))]
    questions = ft.make_jagged_placeholder("questions", (h,), np.float32,
                                           depth=2)
    attention = ft.map(lambda d, i: ft.map(
        lambda s: ft.sum(ft.tanh(s @ questions[i].T), axis=1), d),
        docs, ft.arange(docs.length))

    def numpy_attention(data, asked):
        return [[np.tanh(s @ q.T).sum(axis=1) for s in d]
                for d, q in zip(data, asked)]

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ft.HostEvaluationWarning)
        f = ft.compile(attention)
    packed_questions = JaggedArray.from_list(asked, (h,), np.float32, depth=2)
    ready = best_of(lambda: f(docs=packed_docs, questions=packed_questions),
                    repeat=9)
    loop = best_of(lambda: numpy_attention(data, asked), repeat=9)
    print_table(["workload", "map", "ftlazy (JaggedArray)", "numpy loop",
                 "loop / ftlazy"],
                [["question attention", "on the host" if caught else
                  "compiled", fmt_seconds(ready.best), fmt_seconds(loop.best),
                  f"{loop.best / ready.best:.2f}x"]],
                "each sentence attends to its document's question (1-12 "
                "tokens), warm, best of 9")

    leaves = [s for d in data for s in d]
    convert = best_of(lambda: JaggedArray.coerce(data, 3, (h,), np.float32,
                                                 "docs", True), repeat=9)
    floor = best_of(lambda: np.concatenate(leaves), repeat=9)
    print_table(["step", "time", "of the floor"],
                [["nested lists -> JaggedArray", fmt_seconds(convert.best),
                  f"{convert.best / floor.best:.2f}x"],
                 ["np.concatenate of the leaves", fmt_seconds(floor.best),
                  "1.00x"]],
                "input conversion per call")


if __name__ == "__main__":
    main()
