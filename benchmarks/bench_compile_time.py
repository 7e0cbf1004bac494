# SPDX-License-Identifier: MIT
"""Compile time of programs whose size grows: ``ft.compile`` with empty
kernel caches, each in a fresh interpreter, at several sizes of one
program family, so that the table shows how compile time scales.

Families (symbolic sizes throughout, where compile time had grown
exponentially or steeply):

* ``slice_sums``: ``ft.sum(x[i+1:])`` for ``i < K`` over one vector;
* ``vector_sums``: ``ft.sum(x_i[1:])`` of K vectors of unrelated lengths;
* ``elementwise``: ``ft.exp(x_i) * 2`` of K vectors of unrelated lengths;
* ``row_chain``: K chained row normalizations ``e / sum(e, axis=1)`` of
  an ``(m, n)`` array;
* ``layernorm``: K chained layer normalizations of an ``(m, n)`` array;
* ``ft_views``: a FractalTensor's leaf-wise product, pools and K views
  (``xs[::-1]``, ``xs[1:]``, ...).

Each row also gives the first call's time (kernels are built then). The
device probe's cache is kept (a one-time measurement per machine).

    python benchmarks/bench_compile_time.py [--sizes 1,2,4,8] [--kind cpu]
"""

from __future__ import annotations

import argparse
import json
import sys
import time

import numpy as np

MARKER = "BENCH_COMPILE_TIME "
FAMILIES = ("slice_sums", "vector_sums", "elementwise", "row_chain",
            "layernorm", "ft_views")


def build(family: str, k: int):
    """The program of *family* at size *k* and its inputs."""
    import ftlazy as ft
    rng = np.random.default_rng(0)
    if family == "slice_sums":
        x = ft.make_placeholder("x", (ft.make_size_param("n"),), np.float64)
        return (ft.make_dict_of_named_arrays(
            {f"s{i}": ft.sum(x[i + 1:]) for i in range(k)}),
            {"x": rng.standard_normal(1000)})
    if family in ("vector_sums", "elementwise"):
        xs = [ft.make_placeholder(f"x{i}", (ft.make_size_param(f"n{i}"),),
                                  np.float64) for i in range(k)]
        results = {f"r{i}": (ft.sum(x[1:]) if family == "vector_sums"
                             else ft.exp(x) * 2) for i, x in enumerate(xs)}
        return (ft.make_dict_of_named_arrays(results),
                {f"x{i}": rng.standard_normal(100 + i) for i in range(k)})
    if family in ("row_chain", "layernorm"):
        m, n = ft.make_size_param("m"), ft.make_size_param("n")
        y = ft.make_placeholder("a", (m, n), np.float64)
        for _ in range(k):
            if family == "row_chain":
                e = ft.exp(y)
                y = e / ft.sum(e, axis=1)[:, None]
            else:
                c = y - ft.sum(y, axis=1)[:, None] / n
                y = c / ft.sqrt(ft.sum(c * c, axis=1)[:, None] / n + 1e-5)
        return y, {"a": rng.standard_normal((64, 32))}
    if family == "ft_views":
        h = 8
        xs = ft.make_jagged_placeholder("xs", (h,), np.float64, depth=2)
        w = ft.make_placeholder("w", (h, h), np.float64)
        views = [xs[::-1], xs[1:], xs[:-1], xs[::2], xs[1::2], xs[:-2]]
        results = {"hidden": ft.tanh(xs @ w),
                   "pooled": ft.map(lambda s: ft.sum(s, axis=0), xs),
                   "total": ft.sum(ft.flatten(xs), axis=0)}
        results.update({f"v{i}": v for i, v in enumerate(views[:k])})
        return (ft.make_dict_of_named_arrays(results),
                {"xs": [rng.standard_normal((n, h)) for n in (3, 0, 5, 1)],
                 "w": rng.standard_normal((h, h))})
    raise ValueError(f"unknown family {family!r}")


def child(family: str, k: int, kind: str) -> None:
    """Compile and call one program; print the times after the marker."""
    import ftlazy as ft
    result, inputs = build(family, k)
    start = time.perf_counter()
    program = ft.compile(result, options={"device_kind": kind})
    compiled = time.perf_counter()
    program(**inputs)
    called = time.perf_counter()
    print(MARKER + json.dumps({"compile": compiled - start,
                               "first_call": called - compiled}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1,2,4,8")
    parser.add_argument("--families", default=",".join(FAMILIES))
    parser.add_argument("--kind", default="cpu", choices=("cpu", "gpu"),
                        help="code generation flavour (gpu runs on any "
                        "device, PoCL included)")
    parser.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        family, k, kind = args.child
        child(family, int(k), kind)
        return
    sys.path.insert(0, __file__.rsplit("/", 1)[0])
    from common import fmt_seconds, print_header, print_table, run_cold_child
    print_header("ftlazy compile time (empty kernel caches, fresh process)")
    sizes = [int(s) for s in args.sizes.split(",")]
    rows = []
    for family in args.families.split(","):
        for k in sizes:
            try:
                r = run_cold_child(__file__, ["--child", family, str(k),
                                              args.kind], MARKER)
                rows.append([family, k, fmt_seconds(r["compile"]),
                             fmt_seconds(r["first_call"])])
            except Exception as err:  # (a timeout or crash: one row)
                rows.append([family, k, f"failed: {str(err)[-60:]}", ""])
            print(*rows[-1], flush=True)
    print("\nsummary (%s flavour)" % args.kind)
    print_table(["family", "K", "compile", "first call"], rows)


if __name__ == "__main__":
    main()
