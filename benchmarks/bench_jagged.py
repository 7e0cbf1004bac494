# SPDX-License-Identifier: MIT
"""ftlazy on jagged data (FractalTensors) versus numpy and scipy anchors.

Run by hand: ``python benchmarks/bench_jagged.py [--quick] [--repeat 7]
[--no-subprocess] [--copy-io] [--only J2,J1-sum]``. Workloads and sizes follow
``shared/research/jagged_anchors.md`` §4 (float32 throughout):

* J1-sum: per-segment sum, 8192 segments, lengths U[0,128] (empty segments
  included), H=64; anchors: ``scipy.sparse`` CSR ``(n x nnz) @ X`` and a
  per-segment numpy loop;
* J1-max, J1-logsumexp: the same with lengths U[1,128] (max has no
  identity); anchor: the per-segment numpy loop (no CSR trick exists);
* J1-head: the sum of each segment's first 32 rows (``ft.sum(s[:32])``, a
  slice clamped against each length; a quarter of the longest length),
  on J1-sum's data; anchors: a CSR
  product over the kept rows and the per-segment numpy loop;
* J2: softmax over the tokens of each segment, per feature, B=2048, lengths
  U[0,256], M=32; the body's max has ``initial=-np.inf``, so empty
  segments are allowed; anchor: the per-segment numpy loop;
* J4: embedding bag (sum pooling): ``E[tok[s:e]].sum(0)``, V=100k, D=64,
  8192 bags, lengths U[1,64]; anchors: scipy CSR ``(bags x V) @ E`` and the
  per-bag numpy loop.

Every ftlazy result is checked against the per-segment numpy loop before
anything is timed. Times are warm (a warm-up call first) and the median of
the repeats. ftlazy is called through ``ft.compile`` with numpy inputs and
outputs (host transfers included; on a device that shares the host's
memory, such as PoCL's CPU device, numpy inputs and results are passed in
place, without a copy, unless ``--copy-io`` turns that off) and, in a
second column, with inputs already on the device (``ft.JaggedArray`` of
``pyopencl.array`` values, which stay there: only the offsets, which the
host derives segment ids and checks from, are on the host); results come
back as numpy arrays in both. A last table compares the ratios with the
targets of issue 8.

Also printed: "one compiled program for all lengths" (a second call of the
same compiled function with a new length distribution, counting OpenCL
program builds during that call), the first result in a fresh process with
empty loopy/pyopencl/PoCL disk caches, and rows for the J-workloads that do
not compile yet (with the reason the compiler gives). Nothing here asserts
on a time.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from common import run_cold_child  # noqa: E402
from common import (  # noqa: E402
    best_of, fmt_seconds, opencl_triad, print_header, print_table, triad_bytes)

CHILD_MARKER = "FIRST_RESULT_JSON "

FULL = {"J1": (8192, 128, 64), "J2": (2048, 256, 32), "J4": (100_000, 64, 8192, 64),
        "triad": 2**24}
QUICK = {"J1": (64, 16, 8), "J2": (32, 16, 4), "J4": (500, 8, 64, 8),
         "triad": 2**20}


# {{{ data

def _offsets(lens: np.ndarray) -> np.ndarray:
    return np.concatenate([[0], np.cumsum(lens)]).astype(np.int64)


def jagged_data(n: int, lo: int, hi: int, h: int, seed: int
                ) -> tuple[np.ndarray, np.ndarray]:
    """values (nnz, h) float32 and offsets (n+1,) int64, lengths U[lo, hi]."""
    rng = np.random.default_rng(seed)
    off = _offsets(rng.integers(lo, hi + 1, n))
    return rng.standard_normal((off[-1], h)).astype(np.float32), off


def segments(values: np.ndarray, off: np.ndarray) -> list[np.ndarray]:
    return [values[off[i]:off[i + 1]] for i in range(len(off) - 1)]

# }}}


# {{{ numpy references (per-segment loops) and anchors

def loop_sum(v, off):
    return np.stack([s.sum(0) for s in segments(v, off)])


def loop_head(v, off, k):
    return np.stack([s[:k].sum(0) for s in segments(v, off)])


def loop_max(v, off):
    return np.stack([s.max(0) for s in segments(v, off)])


def loop_lse(v, off):
    out = []
    for s in segments(v, off):
        m = s.max(0)
        out.append(m + np.log(np.exp(s - m).sum(0)))
    return np.stack(out)


def loop_softmax(v, off):
    out = np.empty_like(v)
    for i, s in enumerate(segments(v, off)):
        if len(s):
            e = np.exp(s - s.max(0))
            out[off[i]:off[i + 1]] = e / e.sum(0)
    return out


def loop_bag(e, tok, off):
    return np.stack([e[tok[off[i]:off[i + 1]]].sum(0)
                     for i in range(len(off) - 1)])


def scipy_csr_sum(v, off):
    """A callable computing the segment sums as a CSR (n x nnz) @ v, or None
    if scipy is not installed. Building the matrix is not timed."""
    try:
        import scipy.sparse as sp
    except ImportError:
        return None
    n, nnz = len(off) - 1, int(off[-1])
    m = sp.csr_matrix((np.ones(nnz, np.float32), np.arange(nnz), off),
                      shape=(n, nnz))
    return lambda: m @ v


def scipy_csr_head(v, off, k):
    """The sums of each segment's first *k* rows as a CSR product over
    the kept rows, or None."""
    try:
        import scipy.sparse as sp
    except ImportError:
        return None
    kept = np.minimum(np.diff(off), k)
    rows = np.concatenate([np.arange(s, s + c) for s, c in zip(off[:-1], kept)]
                          + [np.zeros(0, np.int64)])
    m = sp.csr_matrix((np.ones(len(rows), np.float32), rows, _offsets(kept)),
                      shape=(len(off) - 1, v.shape[0]))
    return lambda: m @ v


def scipy_csr_bag(e, tok, off):
    """Embedding bag as CSR (bags x V) @ E (duplicates summed), or None."""
    try:
        import scipy.sparse as sp
    except ImportError:
        return None
    n = len(off) - 1
    m = sp.csr_matrix((np.ones(len(tok), np.float32), tok, off),
                      shape=(n, e.shape[0]))
    return lambda: m @ e

# }}}


# {{{ ftlazy programs

def segment_max(s: Any) -> Any:
    import ftlazy as ft
    return ft.amax(s, axis=0)


def build(key: str, h: int) -> Any:
    """The lazy result of workload *key* (placeholders ``xs`` or ``tok``,
    ``E``)."""
    import ftlazy as ft
    if key == "J4":
        v, d = h
        tok = ft.make_jagged_placeholder("tok", (), np.int64, depth=2)
        emb = ft.make_placeholder("E", (v, d), np.float32)
        return ft.map(lambda t: ft.sum(ft.gather(emb, t), axis=0), tok)
    if key == "J1-head":
        h, head = h
    xs = ft.make_jagged_placeholder("xs", (h,), np.float32, depth=2)
    if key == "J1-sum":
        return ft.map(lambda s: ft.sum(s, axis=0), xs)
    if key == "J1-max":
        return ft.map(lambda s: ft.amax(s, axis=0), xs)
    if key == "J1-head":
        return ft.map(lambda s: ft.sum(s[:head], axis=0), xs)
    if key == "J1-logsumexp":
        def lse(s):
            m = ft.amax(s, axis=0)
            return m + ft.log(ft.sum(ft.exp(s - m), axis=0))
        return ft.map(lse, xs)
    if key == "J2":
        def softmax(s):
            # with an initial value the max is defined for L = 0 too
            m = ft.amax(s, axis=0, initial=-np.inf)
            e = ft.exp(s - m)
            return e / ft.sum(e, axis=0)
        return ft.map(softmax, xs)
    raise KeyError(key)


@dataclass
class Workload:
    key: str
    description: str
    build_arg: Any
    inputs: dict[str, Any]           # ft.compile inputs (numpy)
    reference: Callable[[], np.ndarray]
    anchors: dict[str, Callable[[], Any] | None]
    bytes_moved: int
    #: a second input set with a different length distribution
    other_inputs: dict[str, Any] = field(default_factory=dict)


def workloads(sizes: dict) -> list[Workload]:
    import ftlazy as ft
    n1, hi1, h1 = sizes["J1"]
    n2, hi2, m2 = sizes["J2"]
    v4, hi4, n4, d4 = sizes["J4"]
    result = []

    v0, o0 = jagged_data(n1, 0, hi1, h1, 1)
    v1, o1 = jagged_data(n1, 1, hi1, h1, 2)
    # other length distribution for the "one program for all lengths" check
    va, oa = jagged_data(n1 // 2, 0, 2 * hi1, h1, 3)
    vb, ob = jagged_data(n1 // 2, 1, 2 * hi1, h1, 4)
    seg_bytes = lambda v, o, out_rows: 4 * (v.size + out_rows * v.shape[1]) + 8 * o.size  # noqa: E731
    result.append(Workload(
        "J1-sum", f"segment sum, n={n1}, len U[0,{hi1}], H={h1}, nnz={o0[-1]}",
        h1, {"xs": ft.JaggedArray(v0, o0)}, lambda: loop_sum(v0, o0),
        {"scipy CSR @ X": scipy_csr_sum(v0, o0),
         "numpy loop": lambda: loop_sum(v0, o0)},
        seg_bytes(v0, o0, n1), {"xs": ft.JaggedArray(va, oa)}))
    head = hi1 // 4
    result.append(Workload(
        "J1-head", f"sum of the first {head} rows of each segment, J1-sum's "
        "data", (h1, head), {"xs": ft.JaggedArray(v0, o0)},
        lambda: loop_head(v0, o0, head),
        {"scipy CSR @ X": scipy_csr_head(v0, o0, head),
         "numpy loop": lambda: loop_head(v0, o0, head)},
        4 * (int(np.minimum(np.diff(o0), head).sum()) + n1) * h1 + 8 * o0.size,
        {"xs": ft.JaggedArray(va, oa)}))
    result.append(Workload(
        "J1-max", f"segment max, n={n1}, len U[1,{hi1}], H={h1}", h1,
        {"xs": ft.JaggedArray(v1, o1)}, lambda: loop_max(v1, o1),
        {"numpy loop": lambda: loop_max(v1, o1)},
        seg_bytes(v1, o1, n1), {"xs": ft.JaggedArray(vb, ob)}))
    result.append(Workload(
        "J1-logsumexp", f"segment logsumexp, n={n1}, len U[1,{hi1}], H={h1}",
        h1, {"xs": ft.JaggedArray(v1, o1)}, lambda: loop_lse(v1, o1),
        {"numpy loop": lambda: loop_lse(v1, o1)},
        seg_bytes(v1, o1, n1), {"xs": ft.JaggedArray(vb, ob)}))

    v2, o2 = jagged_data(n2, 0, hi2, m2, 5)
    v2b, o2b = jagged_data(n2 // 2, 0, 2 * hi2, m2, 6)
    result.append(Workload(
        "J2", f"ragged softmax, B={n2}, len U[0,{hi2}], M={m2}, nnz={o2[-1]}",
        m2, {"xs": ft.JaggedArray(v2, o2)}, lambda: loop_softmax(v2, o2),
        {"numpy loop": lambda: loop_softmax(v2, o2)},
        4 * 2 * v2.size + 8 * o2.size, {"xs": ft.JaggedArray(v2b, o2b)}))

    rng = np.random.default_rng(7)
    emb = rng.standard_normal((v4, d4)).astype(np.float32)
    o4 = _offsets(rng.integers(1, hi4 + 1, n4))
    tok = rng.integers(0, v4, o4[-1]).astype(np.int64)
    o4b = _offsets(rng.integers(0, 2 * hi4 + 1, n4 // 2))
    tokb = rng.integers(0, v4, o4b[-1]).astype(np.int64)
    result.append(Workload(
        "J4", f"embedding bag (sum), V={v4}, D={d4}, {n4} bags, len U[1,{hi4}], "
        f"{o4[-1]} lookups", (v4, d4),
        {"tok": ft.JaggedArray(tok, o4), "E": emb},
        lambda: loop_bag(emb, tok, o4),
        {"scipy CSR @ E": scipy_csr_bag(emb, tok, o4),
         "numpy loop": lambda: loop_bag(emb, tok, o4)},
        4 * (tok.size * d4 + n4 * d4) + 8 * (tok.size + o4.size),
        {"tok": ft.JaggedArray(tokb, o4b), "E": emb}))
    return result


def kernels_only(f: Any, inputs: dict[str, Any], queue: Any
                 ) -> Callable[[], Any]:
    """A call of *f*'s dense program (what runs on the device) with every
    input, including what the host derives from the offsets, already on the
    device: the time of the kernels and of fetching the results, without
    the host's derivations or the transfers of the inputs. (Where the
    program has a first phase, the counts of J1-head's clamped slices, its
    sizes are computed once here, and only the second phase is timed.)"""
    import pyopencl.array as cla

    from ftlazy.target.jagged_inputs import expand_jagged_inputs
    from ftlazy.target.loopy.jagged_program import _derive
    low = f.lowering
    given = expand_jagged_inputs(low.input_nodes, inputs)
    given.update(low.host_values.compute(given))
    args = {k: v for k, v in given.items() if k in low.dense_names}
    args.update(_derive(low.host, given))
    args = {k: cla.to_device(queue, v) if isinstance(v, np.ndarray) and v.ndim
            else v for k, v in args.items()}

    def call() -> Any:
        out = f.inner(**args)
        queue.finish()
        return out
    return call


def _as_dense(x: Any) -> np.ndarray:
    return x.values if hasattr(x, "values") and hasattr(x, "offsets") else np.asarray(x)


def _to_device(inputs: dict[str, Any], queue: Any) -> dict[str, Any]:
    """*inputs* on the device: dense arrays as ``pyopencl.array.Array``,
    FractalTensors as ``ft.JaggedArray`` of device values (kept on the
    device; checked here to be) and offsets."""
    import pyopencl.array as cla

    import ftlazy as ft
    out = {}
    for k, v in inputs.items():
        if isinstance(v, ft.JaggedArray):
            out[k] = ft.JaggedArray(cla.to_device(queue, v.values),
                                    *(cla.to_device(queue, o) for o in v.offsets))
            assert out[k].on_device, "ft.JaggedArray copied the values to the host"
        else:
            out[k] = cla.to_device(queue, v)
    return out


#: the workloads' keys, in the order they run
WORKLOADS = ("J1-sum", "J1-head", "J1-max", "J1-logsumexp", "J2", "J4")

#: issue 8's targets: (workload, anchor, the least anchor/ftlazy ratio)
TARGETS = [("J1-sum", "scipy CSR @ X", 1 / 1.2), ("J1-max", "numpy loop", 4.0),
           ("J1-logsumexp", "numpy loop", 4.0), ("J2", "numpy loop", 4.0)]


def target_rows(medians: dict[tuple[str, str], float]) -> list[list[str]]:
    """One row per target of :data:`TARGETS` with the ratios measured for
    numpy I/O and device inputs (*medians*: (workload, column) -> seconds,
    columns "numpy I/O", "device inputs" and the anchors' names)."""
    rows = []
    for key, anchor, least in TARGETS:
        t_anchor = medians.get((key, anchor))
        if t_anchor is None or (key, "numpy I/O") not in medians:
            rows.append([key, anchor, f">= {least:.2f}x", "-", "-", "not measured"])
            continue
        ratios = [t_anchor / medians[(key, column)]
                  for column in ("numpy I/O", "device inputs")]
        met = ["met" if r >= least else "not met" for r in ratios]
        rows.append([key, anchor, f">= {least:.2f}x",
                     *(f"{r:.2f}x" for r in ratios),
                     f"numpy I/O {met[0]}, device inputs {met[1]}"])
    return rows


class BuildCounter:
    """Counts ``pyopencl.Program.build`` calls while active."""

    def __enter__(self) -> BuildCounter:
        import pyopencl as cl
        self.count = 0
        self._orig = cl.Program.build
        counter = self

        def build(prg, *args, **kwargs):
            counter.count += 1
            return counter._orig(prg, *args, **kwargs)
        cl.Program.build = build
        return self

    def __exit__(self, *exc: Any) -> None:
        import pyopencl as cl
        cl.Program.build = self._orig

# }}}


# {{{ cold first result in a fresh process

def child_first_result(key: str, quick: bool) -> None:
    sizes = QUICK if quick else FULL
    wl = next(w for w in workloads(sizes) if w.key == key)
    start = time.perf_counter()
    import ftlazy as ft
    f = ft.compile(build(wl.key, wl.build_arg))
    compiled = time.perf_counter()
    f(**wl.inputs)
    done = time.perf_counter()
    print(CHILD_MARKER + json.dumps({"compile": compiled - start,
                                     "first_call": done - compiled,
                                     "total": done - start}))


def first_result_cold(key: str, quick: bool) -> dict:
    """Build + ft.compile + first call of *key* in a fresh interpreter whose
    loopy/pyopencl (``XDG_CACHE_HOME``) and PoCL (``POCL_CACHE_DIR``) disk
    caches are empty, as ``bench_codegen.py`` does; the device probe cache
    (``FTLAZY_CACHE_DIR``) is kept (a one-time measurement of the device,
    not a compile cache). Imports are excluded."""
    return run_cold_child(__file__, ["--child", key] + (["--quick"] if quick else []),
                          CHILD_MARKER)

# }}}


# {{{ workloads that do not compile yet

def not_compiled_rows(h: int = 8) -> list[list[str]]:
    """Build each workload at a tiny size and try to compile it; the reason
    is the compiler's own message (or the missing API)."""
    import ftlazy as ft

    def j7():  # per-sequence self-attention: an (L, L) score matrix
        xs = ft.make_jagged_placeholder("xs", (h,), np.float32, depth=2)

        def attn(s):
            p = ft.exp(s @ s.T)
            return (p / ft.sum(p, axis=1, keepdims=True)) @ s
        return ft.map(attn, xs)

    def j8():  # segmented linear recurrence h_t = a*h_{t-1} + x_t
        xs = ft.make_jagged_placeholder("xs", (h,), np.float32, depth=2)
        return ft.map(lambda s: ft.scan(lambda c, x: 0.9 * c + x, s,
                                        np.zeros(h, np.float32)), xs)

    def j10():  # stacked RNN: fold over layers of map over sequences of scan
        xs = ft.make_jagged_placeholder("xs", (h,), np.float32, depth=2)
        ws = ft.make_placeholder("Ws", (3, h, h), np.float32)

        def layer(batch, w):
            return ft.map(lambda s: ft.scan(
                lambda c, x: ft.tanh(c @ w + x), s, np.zeros(h, np.float32)),
                batch)
        return ft.fold(layer, ws, xs)

    def j12_broadcast():
        xs = ft.make_jagged_placeholder("xs", (4,), np.float32, depth=2)

        def pairs(s):
            t = s[:, None, :] + s[None, :, :]
            m2 = t[:, :, 0] ** 2 - ft.sum(t[:, :, 1:] ** 2, axis=2)
            return ft.sum(ft.sqrt(ft.maximum(m2, 0)), axis=1)
        return ft.map(pairs, xs)

    rows = []
    timed_elsewhere = {"J7", "J8", "J10", "J12"}
    for key, what, fn in (("J7", "variable-length self-attention", j7),
                          ("J8", "segmented linear recurrence (scan)", j8),
                          ("J10", "stacked RNN (fold of map of scan)", j10),
                          ("J12", "within-segment pairs (broadcast (L, L))",
                           j12_broadcast)):
        try:
            ft.compile(fn())
            reason = ("compiles; timed by benchmarks/bench_jagged_sequences.py"
                      if key in timed_elsewhere else "compiles; not timed yet")
        except NotImplementedError as exc:
            reason = f"not compiled yet: {str(exc).splitlines()[0]}"
        except Exception as exc:  # noqa: BLE001
            reason = (f"not compiled yet ({type(exc).__name__}: "
                      f"{str(exc).splitlines()[0][:160]})")
        rows.append([key, what, reason])
    return rows

# }}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true",
                        help="tiny sizes (smoke test, a few seconds per workload)")
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--no-subprocess", action="store_true",
                        help="skip the cold first-result measurement")
    parser.add_argument("--copy-io", action="store_true",
                        help="copy numpy inputs and results to and from "
                        "device buffers even where the device shares the "
                        "host's memory (how ftlazy did before)")
    parser.add_argument("--only", help="comma-separated workloads to time "
                        f"(of {','.join(WORKLOADS)}); the cold first result "
                        "then runs only for J1-sum, and the table of the "
                        "other J-workloads is left out")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    chosen = set(args.only.split(",")) if args.only else set(WORKLOADS)
    if chosen - set(WORKLOADS):
        parser.error(f"unknown workload(s) {sorted(chosen - set(WORKLOADS))}; "
                     f"choose from {','.join(WORKLOADS)}")
    if args.child:
        child_first_result(args.child, args.quick)
        return

    import ftlazy as ft
    from ftlazy.target.loopy import program
    from ftlazy.target.loopy.device import default_queue

    if args.copy_io:
        program.ZERO_COPY_INPUTS = program.ZERO_COPY_OUTPUTS = False

    queue = default_queue()
    print_header("ftlazy jagged benchmark (FractalTensors), float32, warm, "
                 "median of repeats" + (" [--quick sizes]" if args.quick else ""),
                 queue)
    in_place = (program.ZERO_COPY_INPUTS
                and program._shares_host_memory(queue.device))
    print("numpy inputs and results: " + (
        "passed in place (the device shares the host's memory)" if in_place
        else "copied to and from device buffers"
        + (" (--copy-io)" if args.copy_io else "")))
    sizes = QUICK if args.quick else FULL
    budget = 2.0 if args.quick else 10.0

    triad = opencl_triad(queue, sizes["triad"])
    triad_gbs = triad_bytes(sizes["triad"]) / triad.median / 1e9
    print(f"OpenCL triad (float64, n={sizes['triad']}): "
          f"{fmt_seconds(triad.median)} median, {triad_gbs:.1f} GB/s")

    rows, notes, cache_rows = [], [], []
    medians: dict[tuple[str, str], float] = {}
    for wl in workloads(sizes):
        if wl.key not in chosen:
            continue
        try:
            f = ft.compile(build(wl.key, wl.build_arg))
            got = f(**wl.inputs)
            want = wl.reference()
            np.testing.assert_allclose(_as_dense(got), want, rtol=2e-4, atol=2e-4)
            for name, anchor in wl.anchors.items():
                if anchor is not None:
                    np.testing.assert_allclose(np.asarray(anchor()), want,
                                               rtol=2e-4, atol=2e-4)
            t_ft = best_of(lambda: f(**wl.inputs), repeat=args.repeat,
                           budget_s=budget)
            dev_inputs = _to_device(wl.inputs, queue)
            np.testing.assert_allclose(_as_dense(f(**dev_inputs)), want,
                                       rtol=2e-4, atol=2e-4)
            t_dev = best_of(lambda: f(**dev_inputs), repeat=args.repeat,
                            budget_s=budget)
            t_kernels = best_of(kernels_only(f, wl.inputs, queue),
                                repeat=args.repeat, budget_s=budget)
        except Exception as exc:  # noqa: BLE001
            traceback.print_exc()
            rows.append([wl.key, "error", "-", "-", "-", "-", "-"])
            notes.append(f"{wl.key}: {type(exc).__name__}: {exc}")
            continue
        medians[(wl.key, "numpy I/O")] = t_ft.median
        medians[(wl.key, "device inputs")] = t_dev.median
        gbs = wl.bytes_moved / t_dev.median / 1e9
        kernel_gbs = wl.bytes_moved / t_kernels.median / 1e9
        anchor_cells = []
        for name, anchor in wl.anchors.items():
            if anchor is None:
                anchor_cells.append(f"{name}: unavailable (scipy not installed)")
                continue
            t_a = best_of(anchor, repeat=args.repeat, budget_s=budget)
            medians[(wl.key, name)] = t_a.median
            anchor_cells.append(f"{name}: {fmt_seconds(t_a.median)} "
                                f"({t_a.median / t_ft.median:.2f}x; kernels "
                                f"{t_a.median / t_kernels.median:.2f}x)")
        rows.append([wl.key, fmt_seconds(t_ft.median), fmt_seconds(t_dev.median),
                     f"{fmt_seconds(t_kernels.median)} ({kernel_gbs:.1f} GB/s)",
                     f"{gbs:.1f} ({100 * gbs / triad_gbs:.0f}%)",
                     "; ".join(anchor_cells), wl.description])

        # one compiled program for all lengths: same f, new length distribution
        with BuildCounter() as counter:
            t_new, _, got2 = _time_once(lambda: f(**wl.other_inputs))
        other = wl.other_inputs
        if wl.key == "J4":
            ref2 = loop_bag(other["E"], other["tok"].values, other["tok"].offsets[0])
        else:
            v, o = other["xs"].values, other["xs"].offsets[0]
            ref2 = {"J1-sum": loop_sum,
                    "J1-head": lambda v, o: loop_head(v, o, wl.build_arg[1]),
                    "J1-max": loop_max,
                    "J1-logsumexp": loop_lse, "J2": loop_softmax}[wl.key](v, o)
        np.testing.assert_allclose(_as_dense(got2), ref2, rtol=2e-4, atol=2e-4)
        t_new_steady = best_of(lambda: f(**wl.other_inputs), repeat=3,
                               budget_s=budget)
        f2 = ft.compile(build(wl.key, wl.build_arg))
        cache_rows.append([wl.key, fmt_seconds(t_new),
                           fmt_seconds(t_new_steady.median),
                           str(counter.count), str(f2.from_cache)])

    print_table(["workload", "ftlazy (numpy I/O)", "ftlazy (device inputs)",
                 "kernels only", "GB/s (% of triad)", "anchors: median (anchor/ftlazy numpy I/O; anchor/kernels only)",
                 "size"], rows,
                title="Warm times (median); ratio above 1: ftlazy is faster")
    print("GB/s: compulsory traffic (inputs read once, outputs written once) "
          "over the device-inputs time.")
    print("device inputs: ft.JaggedArray of device values (they stay on the "
          "device) and offsets (copied to the host once, when the JaggedArray "
          "is built); the host derives segment ids from the offsets at each "
          "call. Kernels only: the compiled dense program on device-resident "
          "values, offsets and host-derived arrays (no host derivation, no "
          "transfer of the inputs). Results are numpy arrays in every column.")
    print_table(["workload", "anchor", "target (anchor/ftlazy)", "numpy I/O",
                 "device inputs", "status"], target_rows(medians),
                title="Issue 8 targets (ratio above 1: ftlazy is faster)")
    print_table(["workload", "1st call, new lengths", "steady, new lengths",
                 "OpenCL builds in that call", "rebuilt DAG from_cache"],
                cache_rows, title="One compiled program for all lengths "
                "(same ft.compile result, a new length distribution)")

    if not args.no_subprocess and "J1-sum" in chosen:
        try:
            d = first_result_cold("J1-sum", args.quick)
            print_table(["workload", "build + ft.compile", "first call", "total"],
                        [["J1-sum", fmt_seconds(d["compile"]),
                          fmt_seconds(d["first_call"]), fmt_seconds(d["total"])]],
                        title="First result in a fresh process, empty loopy/"
                        "pyopencl/PoCL disk caches (imports excluded)")
        except (RuntimeError, subprocess.TimeoutExpired) as exc:
            notes.append(f"cold first result: {exc}")

    if not args.only:
        print_table(["id", "workload", "status"], not_compiled_rows(),
                    title="The other J-workloads: do they compile?")
    for note in notes:
        print("note:", note)
    load = os.getloadavg() if hasattr(os, "getloadavg") else "?"
    print(f"load average at the end (1, 5, 15 min): {load}")


def _time_once(fn: Callable[[], Any]) -> tuple[float, float, Any]:
    from common import time_once
    return time_once(fn)


if __name__ == "__main__":
    main()
