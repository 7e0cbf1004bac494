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


Row = tuple[str, int, str, float, float, bool]


def run_stages(workload: str, n: int, repeat: int, budget_s: float
               ) -> list[Row]:
    """All stages for one workload and size: rows of (workload, nodes,
    stage, wall seconds, CPU seconds, whether the stage is per node)."""
    build = WORKLOADS[workload]
    rows: list[Row] = []

    # build: every repetition uses fresh names so nothing is interned yet
    walls, cpus = [], []
    root = inputs = None
    for _ in range(repeat):
        root = inputs = None
        gc.collect()
        tag = f"{n}_{next(_fresh)}"
        wall, cpu, (root, inputs) = time_once(lambda tag=tag: build(n, tag))
        walls.append(wall)
        cpus.append(cpu)
        if sum(walls) > budget_s:
            break
    nodes = get_num_nodes(root)

    def row(stage: str, wall: float, cpu: float, per_node: bool = True) -> None:
        rows.append((workload, nodes, stage, wall, cpu, per_node))

    def timed(stage: str, fn: Callable[[], Any], per_node: bool = True,
              warmup: int = 0) -> None:
        t = best_of(fn, repeat=repeat, warmup=warmup, budget_s=budget_s,
                    min_repeat=1)
        row(stage, t.best, t.cpu_best, per_node)

    row(f"build (best of {len(walls)})", min(walls), min(cpus))
    # the same names again: interning returns the existing nodes
    wall, cpu, (rebuilt, _) = time_once(lambda: build(n, tag))
    row("rebuild same DAG (interned lookups)", wall, cpu)

    timed("hash(root)", lambda: hash(root), per_node=False, warmup=1)
    assert root == rebuilt
    timed(f"root == rebuilt root (same object: {root is rebuilt})",
          lambda: root == rebuilt, per_node=False, warmup=1)
    rebuilt = None

    copied = CopyMapper()(root)
    timed(f"CopyMapper (identity; result is root: {copied is root})",
          lambda: CopyMapper()(root))
    copied = None

    renamed = RenamingCopyMapper()(root)
    assert get_num_nodes(renamed) == nodes
    renamed = None
    timed("renaming CopyMapper (map_placeholder)",
          lambda: RenamingCopyMapper()(root))

    timed("get_num_nodes", lambda: get_num_nodes(root))

    value = ft.evaluate_numpy(root, **inputs)
    assert value.shape == ELEM_SHAPE and np.all(np.isfinite(value))
    timed("evaluate_numpy (length-4 arrays)",
          lambda: ft.evaluate_numpy(root, **inputs))
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

    all_rows: list[Row] = []
    per_node: dict[tuple[str, str], dict[int, tuple[float, float]]] = {}
    for workload in WORKLOADS:
        for n in sizes:
            rows = run_stages(workload, n, args.repeat, args.budget)
            all_rows.extend(rows)
            for _, nodes, stage, wall, cpu, is_per_node in rows:
                if is_per_node:
                    per_node.setdefault((workload, stage.split(" (")[0]), {})[
                        n] = (wall / nodes, cpu / nodes)
            print(f"  done: {workload} N={n}", file=sys.stderr, flush=True)
            gc.collect()

    print_table(
        ["workload", "nodes", "stage", "seconds", "nodes/s", "CPU seconds"],
        [(w, nd, st, fmt_seconds(wall), fmt_rate(nd / wall) if pn else "-",
          fmt_seconds(cpu)) for w, nd, st, wall, cpu, pn in all_rows],
        title="DAG stages (seconds: wall clock, best of N; CPU seconds: "
              "process time, best of N)")

    if len(sizes) >= 2:
        small, large = min(sizes), max(sizes)
        lin_rows = []
        for (workload, stage), by_size in per_node.items():
            if small not in by_size or large not in by_size:
                continue
            (wall_s, cpu_s), (wall_l, cpu_l) = by_size[small], by_size[large]
            lin_rows.append((
                workload, stage, f"{wall_s * 1e6:.2f} us", f"{wall_l * 1e6:.2f} us",
                f"{wall_l / wall_s:.2f}", f"{cpu_s * 1e6:.2f} us",
                f"{cpu_l * 1e6:.2f} us", f"{cpu_l / cpu_s:.2f}"))
        print_table(["workload", "stage", f"wall/node N={small}",
                     f"wall/node N={large}", "wall ratio",
                     f"CPU/node N={small}", f"CPU/node N={large}", "CPU ratio"],
                    lin_rows,
                    title=f"Linearity: time per node at N={large} over N={small} "
                          f"(1.00 = linear; total time ratio = {large // small} "
                          "x this)")
    print(f"\nload average after: {os.getloadavg()} (wall-clock times; other "
          "processes on this machine add noise)")


if __name__ == "__main__":
    main()
