# SPDX-License-Identifier: MIT
"""Graph construction and DAG passes scale linearly in the number of nodes.

Run by hand: ``python benchmarks/bench_dag.py [--sizes 10000,100000]
[--repeat 3] [--no-gc]``. Prints one table (workload, nodes, stage, seconds,
nodes/s) and a linearity table (time per node at each size). Workloads:

* ``chain``: ``y = y + x`` repeated N times over one placeholder ``x``;
* ``horner``: ``p = p * x + c[k % 100]`` over 100 coefficient placeholders,
  N/2 steps (2 nodes per step), so about N nodes.

Stages: build (fresh placeholder names on every repetition, so interning
cannot reuse an earlier build), a rebuild of the same DAG (interning makes it
the same object), ``hash(root)``, ``y1 == y2`` for two independent builds,
an identity :class:`~ftlazy.transform.CopyMapper` pass, a renaming
CopyMapper, :func:`~ftlazy.analysis.get_num_nodes` and
:func:`ftlazy.evaluate_numpy` on length-4 arrays.
"""

from __future__ import annotations

import argparse
import gc
import itertools
import os
import sys
from collections.abc import Callable
from typing import Any

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from common import (
    best_of, fmt_rate, fmt_seconds, print_header, print_table, time_once)

import ftlazy as ft
from ftlazy.analysis import get_num_nodes
from ftlazy.transform import CopyMapper

ELEM_SHAPE = (4,)
NUM_COEFFS = 100
_fresh = itertools.count()


# {{{ workloads

def build_chain(n: int, tag: str) -> tuple[Any, dict[str, np.ndarray]]:
    """A chain of *n* adds ``y = y + x``; returns the root and its inputs."""
    x = ft.make_placeholder(f"x_{tag}", ELEM_SHAPE, np.float64)
    y = x
    for _ in range(n):
        y = y + x
    return y, {f"x_{tag}": np.full(ELEM_SHAPE, 1e-3)}


def build_horner(n: int, tag: str) -> tuple[Any, dict[str, np.ndarray]]:
    """``p = p * x + c_k`` for n // 2 steps, ``c_k`` cycling through
    :data:`NUM_COEFFS` placeholders; returns the root and its inputs."""
    x = ft.make_placeholder(f"x_{tag}", ELEM_SHAPE, np.float64)
    coeffs = [ft.make_placeholder(f"c{k}_{tag}", ELEM_SHAPE, np.float64)
              for k in range(NUM_COEFFS)]
    p = coeffs[0]
    for step in range(n // 2):
        p = p * x + coeffs[(step + 1) % NUM_COEFFS]
    rng = np.random.default_rng(0)
    inputs = {f"c{k}_{tag}": rng.random(ELEM_SHAPE) for k in range(NUM_COEFFS)}
    inputs[f"x_{tag}"] = np.full(ELEM_SHAPE, 0.5)
    return p, inputs


WORKLOADS: dict[str, Callable[[int, str], tuple[Any, dict]]] = {
    "chain": build_chain,
    "horner": build_horner,
}

# }}}


class RenamingCopyMapper(CopyMapper):
    """Copies the DAG with every placeholder renamed ``<name>_r``."""

    def map_placeholder(self, expr: Any) -> Any:
        return ft.make_placeholder(expr.name + "_r", expr.shape, expr.dtype,
                                   tags=expr.tags)


def run_stages(workload: str, n: int, repeat: int, budget_s: float
               ) -> list[tuple[str, int, str, float, float | None]]:
    """All stages for one workload and size: rows of (workload, nodes,
    stage, seconds, nodes/s)."""
    build = WORKLOADS[workload]
    rows: list[tuple[str, int, str, float, float | None]] = []

    # build: every repetition uses fresh names so nothing is interned yet
    build_times = []
    root = inputs = None
    for _ in range(repeat):
        root = inputs = None
        gc.collect()
        tag = f"{n}_{next(_fresh)}"
        t, (root, inputs) = time_once(lambda tag=tag: build(n, tag))
        build_times.append(t)
        if sum(build_times) > budget_s:
            break
    nodes = get_num_nodes(root)

    def row(stage: str, seconds: float, per_node: bool = True) -> None:
        rows.append((workload, nodes, stage, seconds,
                     nodes / seconds if per_node and seconds > 0 else None))

    row(f"build (best of {len(build_times)})", min(build_times))
    # the same names again: interning returns the existing nodes
    t_rebuild, (rebuilt, _) = time_once(lambda: build(n, tag))
    row("rebuild same DAG (interned lookups)", t_rebuild)

    t_hash = best_of(lambda: hash(root), repeat=repeat, warmup=1).best
    row("hash(root)", t_hash, per_node=False)
    t_eq = best_of(lambda: root == rebuilt, repeat=repeat, warmup=1).best
    assert root == rebuilt
    row(f"root == rebuilt root (same object: {root is rebuilt})", t_eq,
        per_node=False)
    rebuilt = None

    copied = CopyMapper()(root)
    t_copy = best_of(lambda: CopyMapper()(root), repeat=repeat, warmup=0,
                     budget_s=budget_s, min_repeat=1).best
    row(f"CopyMapper (identity; result is root: {copied is root})", t_copy)
    del copied

    renamed = RenamingCopyMapper()(root)
    assert get_num_nodes(renamed) == nodes
    t_rename = best_of(lambda: RenamingCopyMapper()(root), repeat=repeat,
                       warmup=0, budget_s=budget_s, min_repeat=1).best
    row("renaming CopyMapper (map_placeholder)", t_rename)
    del renamed

    t_count = best_of(lambda: get_num_nodes(root), repeat=repeat, warmup=0,
                      budget_s=budget_s, min_repeat=1).best
    row("get_num_nodes", t_count)

    value = ft.evaluate_numpy(root, **inputs)
    assert value.shape == ELEM_SHAPE and np.all(np.isfinite(value))
    t_eval = best_of(lambda: ft.evaluate_numpy(root, **inputs), repeat=repeat,
                     warmup=0, budget_s=budget_s, min_repeat=1).best
    row("evaluate_numpy (length-4 arrays)", t_eval)
    return rows


def main() -> None:
    """Parse arguments, run every workload at every size, print tables."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="10000,100000",
                        help="comma-separated node counts (default: %(default)s)")
    parser.add_argument("--repeat", type=int, default=3,
                        help="timed repetitions per stage (best is reported)")
    parser.add_argument("--budget", type=float, default=20.0,
                        help="stop repeating a stage after this many seconds")
    parser.add_argument("--no-gc", action="store_true",
                        help="disable Python's cyclic garbage collector")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    if args.no_gc:
        gc.disable()
    from ftlazy.target.loopy.device import default_queue
    print_header("ftlazy DAG construction and passes", default_queue())
    print(f"sizes: {sizes}; repeat {args.repeat}; arrays of shape {ELEM_SHAPE}")

    # warm up every code path on a small graph first
    for workload in WORKLOADS:
        run_stages(workload, 1000, 1, args.budget)

    all_rows = []
    per_node: dict[tuple[str, str], dict[int, float]] = {}
    for workload in WORKLOADS:
        for n in sizes:
            rows = run_stages(workload, n, args.repeat, args.budget)
            all_rows.extend(rows)
            for _, nodes, stage, seconds, _ in rows:
                per_node.setdefault((workload, stage.split(" (")[0]), {})[n] = (
                    seconds / nodes)
            print(f"  done: {workload} N={n}", file=sys.stderr, flush=True)
            gc.collect()

    print_table(["workload", "nodes", "stage", "seconds", "nodes/s"],
                [(w, nd, st, fmt_seconds(s), fmt_rate(r))
                 for w, nd, st, s, r in all_rows],
                title="DAG stages")

    if len(sizes) >= 2:
        small, large = min(sizes), max(sizes)
        lin_rows = []
        for (workload, stage), by_size in per_node.items():
            if small not in by_size or large not in by_size:
                continue
            if stage.startswith(("hash", "root ==")):
                continue  # O(1): cached hash, interned identity
            lin_rows.append((
                workload, stage, f"{by_size[small] * 1e6:.2f} us",
                f"{by_size[large] * 1e6:.2f} us",
                f"{by_size[large] / by_size[small]:.2f}",
                f"{by_size[large] * large / (by_size[small] * small):.1f}x"))
        print_table(["workload", "stage", f"per node N={small}",
                     f"per node N={large}", "per-node ratio",
                     f"total time ratio (ideal {large / small:.0f}x)"],
                    lin_rows, title="Linearity (per-node ratio 1.0 = linear)")
    print(f"\nload average after: {os.getloadavg()} (wall-clock times; other "
          "processes on this machine add noise)")


if __name__ == "__main__":
    main()
