# SPDX-License-Identifier: MIT
"""ftlazy code generation on the default OpenCL device versus numpy.

Run by hand: ``python benchmarks/bench_codegen.py [--quick] [--only W1,W3]
[--device gpu]``.
Workloads (full sizes; ``--quick`` uses smaller ones):

* W1: ``exp(-x*x)*sin(3x) + 0.5*x/(1+x*x)`` on 2**24 float64;
* W2: 1024x1024 float64 matmul, via ``ft.einsum('ij,jk->ik')`` and ``@``;
* W3: row sums and the full sum of a 4096x4096 float64 array (separately,
  and both in one program);
* W4: 2-D 5-point stencil on 4096x4096 written with slices;
* W5: Horner evaluation of a degree-1000 polynomial whose coefficients are
  1001 shape-``()`` placeholders, on 2**16 elements (about 2000 operation
  nodes; build, codegen and first call reported separately, plus a
  structurally equal rebuilt DAG compiled from the cache); W5-literal, the
  same polynomial with literal coefficients; W5-irregular, 2000 elementwise
  operations in an order that repeats no step (cannot be rolled into a
  loop: the worst case for compile time);
* W6: vanilla RNN ``h = tanh(W h + U x_t + b)`` with ``ft.scan``, T=64,
  hidden 256, batch 32, input 128, against a numpy loop.

Per workload: ftlazy steady state (best of N after warm-up) with device
arrays in and out (``ft.generate_loopy`` + ``pyopencl.array``), and with
numpy in and out (``ft.compile``); the first call (build + compile + run)
in this process and in fresh subprocesses, one with the user's disk caches
(loopy, pyopencl, PoCL) and one with empty cache directories; numpy's time;
and for the memory-bound workloads W3 and W4 the achieved GB/s as a
fraction of a plain OpenCL STREAM triad and of the device's own buffer
copy. ``--device gpu`` runs on the first OpenCL GPU found and, where CuPy
or torch is installed with a CUDA device, times the same workloads there
(:mod:`gpu_peers`). Nothing here asserts on a time.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from gpu_peers import row_layernorm, row_softmax  # noqa: E402
from common import (
    best_of, fmt_seconds, numpy_triad, opencl_copy, opencl_triad, print_header,
    print_table, select_queue, triad_bytes)

CHILD_MARKER = "FIRST_CALL_JSON "


# {{{ sizes and workloads

FULL_SIZES = {"W1": 2**24, "W2": 1024, "W3": 4096, "W4": 4096,
              "W5": (1000, 2**16), "W6": (64, 256, 32, 128), "triad": 2**24}
QUICK_SIZES = {"W1": 2**18, "W2": 256, "W3": 1024, "W4": 1024,
               "W5": (100, 2**12), "W6": (16, 64, 8, 32), "triad": 2**22}


@dataclass
class Workload:
    """One benchmark: a lazy DAG, its inputs and the same thing in numpy."""

    key: str
    description: str
    #: builds the lazy result; *prefix* renames the placeholders
    build: Callable[[str], Any]
    #: input arrays by placeholder name, for prefix ``""``
    make_inputs: Callable[[], dict[str, np.ndarray]]
    numpy_fn: Callable[[dict[str, np.ndarray]], Any]
    #: compulsory memory traffic in bytes (memory-bound workloads only)
    bytes_moved: int | None = None
    #: floating point operations (for a GFLOP/s note), if meaningful
    flops: float | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def group(self) -> str:
        return self.key.split("-")[0]


def _rng() -> np.random.Generator:
    return np.random.default_rng(1234)


def w1(n: int) -> list[Workload]:
    import ftlazy as ft

    def build(prefix: str) -> Any:
        x = ft.make_placeholder(prefix + "x", (n,), np.float64)
        return ft.exp(-x * x) * ft.sin(3 * x) + 0.5 * x / (1 + x * x)

    def ref(i: dict) -> np.ndarray:
        x = i["x"]
        return np.exp(-x * x) * np.sin(3 * x) + 0.5 * x / (1 + x * x)

    return [Workload("W1", f"exp(-x*x)*sin(3x) + 0.5*x/(1+x*x), n={n}", build,
                     lambda: {"x": _rng().standard_normal(n)}, ref)]


def w2(n: int) -> list[Workload]:
    import ftlazy as ft

    def inputs() -> dict:
        rng = _rng()
        return {"a": rng.random((n, n)), "b": rng.random((n, n))}

    def operands(prefix: str) -> tuple[Any, Any]:
        return (ft.make_placeholder(prefix + "a", (n, n), np.float64),
                ft.make_placeholder(prefix + "b", (n, n), np.float64))

    def ref(i: dict) -> np.ndarray:
        return i["a"] @ i["b"]

    return [
        Workload("W2-einsum", f"einsum('ij,jk->ik'), {n}x{n} float64",
                 lambda p: ft.einsum("ij,jk->ik", *operands(p)), inputs, ref,
                 flops=2.0 * n**3),
        Workload("W2-matmul", f"a @ b, {n}x{n} float64",
                 lambda p: ft.matmul(*operands(p)), inputs, ref,
                 flops=2.0 * n**3),
    ]


def w3(n: int) -> list[Workload]:
    import ftlazy as ft

    def inputs() -> dict:
        return {"a": _rng().random((n, n))}

    def a(prefix: str) -> Any:
        return ft.make_placeholder(prefix + "a", (n, n), np.float64)

    def both(prefix: str) -> Any:
        arr = a(prefix)
        return ft.make_dict_of_named_arrays(
            {"rows": ft.sum(arr, axis=1), "total": ft.sum(arr)})

    return [
        Workload("W3-rows", f"a.sum(axis=1), {n}x{n} float64",
                 lambda p: ft.sum(a(p), axis=1), inputs,
                 lambda i: i["a"].sum(axis=1), bytes_moved=8 * (n * n + n)),
        Workload("W3-sum", f"a.sum(), {n}x{n} float64",
                 lambda p: ft.sum(a(p)), inputs, lambda i: i["a"].sum(),
                 bytes_moved=8 * n * n),
        Workload("W3-both", "rows and total in one program "
                 "(make_dict_of_named_arrays)", both, inputs,
                 lambda i: {"rows": i["a"].sum(axis=1), "total": i["a"].sum()},
                 bytes_moved=8 * (n * n + n)),
        # reductions over rows and their elementwise readers (one pass over
        # a when each row's work stays in one place: bytes read and written)
        Workload("W3-softmax", f"softmax over the rows of {n}x{n} float64",
                 lambda p: row_softmax(ft, a(p)), inputs,
                 lambda i: _numpy_softmax(i["a"]), bytes_moved=16 * n * n),
        Workload("W3-layernorm", f"layer norm over the rows of {n}x{n} float64",
                 lambda p: row_layernorm(ft, a(p)), inputs,
                 lambda i: _numpy_layernorm(i["a"]), bytes_moved=16 * n * n),
    ]


def _numpy_softmax(a: np.ndarray) -> np.ndarray:
    e = np.exp(a - a.max(axis=1)[:, None])
    return e / e.sum(axis=1)[:, None]


def _numpy_layernorm(a: np.ndarray) -> np.ndarray:
    d = a - a.mean(axis=1)[:, None]
    return d / np.sqrt((d * d).mean(axis=1)[:, None] + 1e-5)


def _stencil(u: Any) -> Any:
    return (u[1:-1, :-2] + u[1:-1, 2:] + u[:-2, 1:-1] + u[2:, 1:-1]
            - 4 * u[1:-1, 1:-1])


def w4(n: int) -> list[Workload]:
    import ftlazy as ft

    return [Workload(
        "W4", f"5-point stencil by slicing, {n}x{n} float64",
        lambda p: _stencil(ft.make_placeholder(p + "u", (n, n), np.float64)),
        lambda: {"u": _rng().random((n, n))}, lambda i: _stencil(i["u"]),
        bytes_moved=8 * (n * n + (n - 2) ** 2))]


def w5(degree: int, n: int) -> list[Workload]:
    import ftlazy as ft

    def build(prefix: str) -> Any:
        x = ft.make_placeholder(prefix + "x", (n,), np.float64)
        p = ft.make_placeholder(prefix + "c0", (), np.float64)
        for k in range(1, degree + 1):
            p = p * x + ft.make_placeholder(f"{prefix}c{k}", (), np.float64)
        return p

    def inputs() -> dict:
        rng = _rng()
        # 0-d arrays: numpy scalars are rejected (see README)
        values = {f"c{k}": np.array(rng.uniform(-1, 1))
                  for k in range(degree + 1)}
        values["x"] = rng.uniform(-1, 1, n)
        return values

    def ref(i: dict) -> np.ndarray:
        x = i["x"]
        p = np.full_like(x, i["c0"])
        for k in range(1, degree + 1):
            p = p * x + i[f"c{k}"]
        return p

    coefficients = _rng().uniform(-1, 1, degree + 1)

    def build_literal(prefix: str) -> Any:
        x = ft.make_placeholder(prefix + "x", (n,), np.float64)
        p = x * 0 + float(coefficients[0])
        for c in coefficients[1:]:
            p = p * x + float(c)
        return p

    def ref_literal(i: dict) -> np.ndarray:
        p = np.full_like(i["x"], coefficients[0])
        for c in coefficients[1:]:
            p = p * i["x"] + c
        return p

    # 2 * degree operations that repeat no step: nothing can be rolled
    choices = _rng().integers(0, 3, 2 * degree)

    def build_irregular(prefix: str) -> Any:
        x = ft.make_placeholder(prefix + "x", (n,), np.float64)
        y = x
        for choice in choices:
            y = y * 0.999 if choice == 0 else (y + x if choice == 1 else ft.cos(y))
        return y

    def ref_irregular(i: dict) -> np.ndarray:
        x = y = i["x"]
        for choice in choices:
            y = y * 0.999 if choice == 0 else (y + x if choice == 1 else np.cos(y))
        return y

    def x_only() -> dict:
        return {"x": _rng().uniform(-1, 1, n)}

    return [
        Workload("W5", f"Horner, degree {degree} with {degree + 1} shape-() "
                 f"placeholder coefficients, n={n}", build, inputs, ref,
                 flops=2.0 * degree * n),
        Workload("W5-literal", f"Horner, degree {degree} with literal float "
                 f"coefficients, n={n}", build_literal, x_only, ref_literal,
                 flops=2.0 * degree * n),
        Workload("W5-irregular", f"{2 * degree} elementwise ops (*0.999, +x, "
                 f"cos) in an order that repeats no step, n={n}",
                 build_irregular, x_only, ref_irregular)]


def w6(steps: int, hidden: int, batch: int, features: int) -> list[Workload]:
    import ftlazy as ft

    def build(prefix: str) -> Any:
        w = ft.make_placeholder(prefix + "W", (hidden, hidden), np.float64)
        u = ft.make_placeholder(prefix + "U", (hidden, features), np.float64)
        b = ft.make_placeholder(prefix + "b", (hidden,), np.float64)
        xs = ft.make_placeholder(prefix + "xs", (steps, batch, features),
                                 np.float64)
        h0 = ft.make_placeholder(prefix + "h0", (batch, hidden), np.float64)
        return ft.scan(lambda h, x_t: ft.tanh(h @ w.T + x_t @ u.T + b), xs, h0)

    def inputs() -> dict:
        rng = _rng()
        return {"W": rng.standard_normal((hidden, hidden)) / np.sqrt(hidden),
                "U": rng.standard_normal((hidden, features)) / np.sqrt(features),
                "b": rng.standard_normal(hidden) * 0.1,
                "xs": rng.standard_normal((steps, batch, features)),
                "h0": np.zeros((batch, hidden))}

    def ref(i: dict) -> np.ndarray:
        hs = np.empty((steps, batch, hidden))
        h = i["h0"]
        for t in range(steps):
            h = np.tanh(h @ i["W"].T + i["xs"][t] @ i["U"].T + i["b"])
            hs[t] = h
        return hs

    flops = 2.0 * steps * batch * hidden * (hidden + features)
    return [Workload(
        "W6", f"RNN scan T={steps} hidden={hidden} batch={batch} "
        f"input={features}", build, inputs, ref, flops=flops)]


def all_workloads(sizes: dict) -> list[Workload]:
    """Every workload at *sizes* (:data:`FULL_SIZES` or :data:`QUICK_SIZES`)."""
    return (w1(sizes["W1"]) + w2(sizes["W2"]) + w3(sizes["W3"])
            + w4(sizes["W4"]) + w5(*sizes["W5"]) + w6(*sizes["W6"]))

# }}}


# {{{ measuring one workload

@dataclass
class Result:
    """Everything measured for one workload (seconds; None: not measured)."""

    key: str
    description: str
    status: str = "ok"          # "ok", "not supported yet", "error: ..."
    build: float | None = None
    compile: float | None = None
    first_run: float | None = None
    stage_timings: str = ""
    steady_device: float | None = None
    steady_numpy_io: float | None = None
    numpy: float | None = None
    first_warm: float | None = None
    first_cold: float | None = None
    first_proc_detail: dict = field(default_factory=dict)
    max_rel_err: float | None = None
    #: the same workload in CuPy or torch (``--device gpu``, if installed)
    peer: float | None = None
    bytes_moved: int | None = None
    flops: float | None = None
    extra: list[str] = field(default_factory=list)

    @property
    def first_in_process(self) -> float | None:
        if None in (self.build, self.compile, self.first_run):
            return None
        return self.build + self.compile + self.first_run


def _failure(exc: BaseException) -> str:
    if isinstance(exc, NotImplementedError):
        return "not supported yet"
    msg = str(exc).strip().splitlines()[-1] if str(exc).strip() else ""
    return f"error: {type(exc).__name__}: {msg[:150]}"


def _max_rel_err(got: Any, want: Any) -> float:
    if isinstance(want, dict):
        return max(_max_rel_err(got[k], want[k]) for k in want)
    got, want = np.asarray(got), np.asarray(want)
    if got.shape != want.shape:
        raise ValueError(f"result shape {got.shape} != numpy's {want.shape}")
    scale = max(float(np.max(np.abs(want))), 1e-300)
    return float(np.max(np.abs(got - want))) / scale


def _to_host(outputs: Any) -> Any:
    if isinstance(outputs, dict):
        return {k: v.get() for k, v in outputs.items()}
    (out,) = outputs
    return out.get()


def measure(wl: Workload, queue: Any, repeat: int, budget_s: float) -> Result:
    """Run every in-process measurement for *wl*; failures end up in
    :attr:`Result.status` rather than propagating."""
    import pyopencl.array as cla

    import ftlazy as ft

    res = Result(wl.key, wl.description, bytes_moved=wl.bytes_moved,
                 flops=wl.flops)
    inputs = wl.make_inputs()
    want = wl.numpy_fn(inputs)
    res.numpy = best_of(lambda: wl.numpy_fn(inputs), repeat=repeat,
                        budget_s=budget_s).best
    stage = "build"
    try:
        start = time.perf_counter()
        lazy = wl.build("")
        res.build = time.perf_counter() - start
        stage = "ft.compile"
        start = time.perf_counter()
        f = ft.compile(lazy, queue)
        res.compile = time.perf_counter() - start
        res.stage_timings = f"{f.timings} (from cache: {f.from_cache})"
        stage = "first call"
        start = time.perf_counter()
        got = f(**inputs)
        res.first_run = time.perf_counter() - start
        res.max_rel_err = _max_rel_err(got, want)
        res.steady_numpy_io = best_of(lambda: f(**inputs), repeat=repeat,
                                      budget_s=budget_s).best

        stage = "device-array calls"
        prg = ft.generate_loopy(lazy)
        dev_inputs = {k: cla.to_device(queue, np.asarray(v))
                      for k, v in inputs.items()}

        def run_device() -> Any:
            _, outputs = prg(queue, **dev_inputs)
            queue.finish()
            return outputs

        dev_err = _max_rel_err(_to_host(run_device()), want)
        res.max_rel_err = max(res.max_rel_err, dev_err)
        res.steady_device = best_of(run_device, repeat=repeat,
                                    budget_s=budget_s).best
        stage = "rebuilt DAG"
        if wl.key == "W5":
            res.extra.extend(_w5_rebuild(wl, queue, inputs, want))
    except Exception as exc:  # noqa: BLE001 - reported in the table
        res.status = _failure(exc)
        if res.status != "not supported yet":
            res.status += f" (in {stage})"
        if not isinstance(exc, NotImplementedError):
            res.extra.append("".join(traceback.format_exception_only(exc))
                             .strip()[-2000:])
    return res


def _w5_rebuild(wl: Workload, queue: Any, inputs: dict, want: Any) -> list[str]:
    """Build W5 again under other placeholder names: a structurally equal
    DAG that must come from the compiled-program cache."""
    import ftlazy as ft

    start = time.perf_counter()
    lazy = wl.build("r_")
    t_build = time.perf_counter() - start
    start = time.perf_counter()
    f = ft.compile(lazy, queue)
    t_compile = time.perf_counter() - start
    renamed = {"r_" + k: v for k, v in inputs.items()}
    start = time.perf_counter()
    got = f(**renamed)
    t_run = time.perf_counter() - start
    err = _max_rel_err(got, want)
    line = (f"rebuilt equal DAG (placeholders renamed r_*): build "
            f"{fmt_seconds(t_build)}, ft.compile {fmt_seconds(t_compile)} "
            f"(from cache: {f.from_cache}), first call {fmt_seconds(t_run)}, "
            f"compile+run {fmt_seconds(t_compile + t_run)}, max rel err "
            f"{err:.1e}")
    return [line]

# }}}


# {{{ first call in a fresh process

def child_first_call(key: str, sizes: dict, device: str = "default") -> None:
    """In a fresh process: build, compile and run *key* once and print the
    times as one JSON line (inputs are made before the clock starts)."""
    start = time.perf_counter()
    import ftlazy as ft
    from common import select_queue
    queue = select_queue(device)
    t_import = time.perf_counter() - start
    (wl,) = [w for w in all_workloads(sizes) if w.key == key]
    inputs = wl.make_inputs()
    t0 = time.perf_counter()
    lazy = wl.build("")
    t1 = time.perf_counter()
    f = ft.compile(lazy, queue)
    t2 = time.perf_counter()
    f(**inputs)
    t3 = time.perf_counter()
    print(CHILD_MARKER + json.dumps({
        "import": t_import, "build": t1 - t0, "compile": t2 - t1,
        "run": t3 - t2, "total": t3 - t0, "timings": str(f.timings)}))


def first_call_subprocess(key: str, extra_args: list[str], cold: bool,
                          timeout: float = 600) -> dict:
    """Run :func:`child_first_call` in a fresh interpreter. With *cold*,
    loopy's, pyopencl's and PoCL's disk caches point at empty directories;
    ftlazy's device probe and tuning results stay where they are (a one-time
    cost per machine and driver, reported in the header)."""
    from ftlazy.target.loopy.probe import probe_cache_dir
    cmd = [sys.executable, os.path.abspath(__file__), "--child", key,
           *extra_args]
    env = dict(os.environ)
    with tempfile.TemporaryDirectory(prefix="ftlazy-bench-cache-") as tmp:
        if cold:
            env.setdefault("FTLAZY_CACHE_DIR", str(probe_cache_dir().parent))
            env["XDG_CACHE_HOME"] = tmp
            env["POCL_CACHE_DIR"] = os.path.join(tmp, "pocl")
            # (NVIDIA's driver caches builds in ~/.nv/ComputeCache, which
            # XDG_CACHE_HOME does not move)
            env["CUDA_CACHE_DISABLE"] = "1"
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env,
                              timeout=timeout, check=False)
    for line in proc.stdout.splitlines():
        if line.startswith(CHILD_MARKER):
            return json.loads(line[len(CHILD_MARKER):])
    tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
    raise RuntimeError(f"child exited with {proc.returncode}: {tail}")

# }}}


# {{{ reporting

def _gbs(res: Result, t: float | None) -> float | None:
    if res.bytes_moved is None or t is None:
        return None
    return res.bytes_moved / t / 1e9


def _ftlazy_cell(res: Result, value: float | None) -> str:
    if value is None and res.status != "ok":
        return res.status if res.status == "not supported yet" else "error"
    return fmt_seconds(value)


def report(results: list[Result], triad_cl_gbs: float, subprocess_on: bool,
           copy_gbs: float, peer_name: str | None) -> None:
    """Print the detail tables, then the summary table."""
    rows = []
    for r in results:
        rows.append((
            r.key, _ftlazy_cell(r, r.steady_device),
            _ftlazy_cell(r, r.steady_numpy_io), _ftlazy_cell(r, r.build),
            _ftlazy_cell(r, r.compile), _ftlazy_cell(r, r.first_run),
            _ftlazy_cell(r, r.first_in_process),
            fmt_seconds(r.first_warm), fmt_seconds(r.first_cold),
            "-" if r.max_rel_err is None else f"{r.max_rel_err:.1e}"))
    print_table(["workload", "steady (device arrays)", "steady (numpy I/O)",
                 "build", "ft.compile", "1st run", "first call in-process",
                 "fresh proc, warm disk cache", "fresh proc, empty disk cache",
                 "max rel err"], rows, title="Details (ftlazy)")

    print("\nNotes:")
    for r in results:
        print(f"- {r.key}: {r.description}")
        if r.status != "ok":
            print(f"    status: {r.status}")
        if r.stage_timings:
            print(f"    compile stages (in-process): {r.stage_timings}")
        if r.first_proc_detail:
            for what, d in r.first_proc_detail.items():
                if isinstance(d, str):
                    print(f"    fresh process ({what}): {d}")
                    continue
                print(f"    fresh process ({what}): import+queue "
                      f"{fmt_seconds(d['import'])}, build "
                      f"{fmt_seconds(d['build'])}, ft.compile "
                      f"{fmt_seconds(d['compile'])}, run {fmt_seconds(d['run'])}"
                      f"; {d['timings']}")
        if r.flops and r.steady_device:
            print(f"    {r.flops / r.steady_device / 1e9:.2f} GFLOP/s ftlazy, "
                  f"{r.flops / r.numpy / 1e9:.2f} GFLOP/s numpy")
        for line in r.extra:
            print("    " + line.replace("\n", "\n    "))

    rows = []
    for r in results:
        gbs = _gbs(r, r.steady_device)
        first = r.first_warm if subprocess_on else r.first_in_process
        first_cell = _ftlazy_cell(r, first)
        if r.first_cold is not None:
            first_cell += f" (empty caches {fmt_seconds(r.first_cold)})"
        ratio = (f"{r.numpy / r.steady_device:.2f}x"
                 if r.steady_device else "-")
        row = [r.key, _ftlazy_cell(r, r.steady_device), first_cell,
               fmt_seconds(r.numpy), ratio]
        if peer_name is not None:
            row += [fmt_seconds(r.peer),
                    f"{r.peer / r.steady_device:.2f}x"
                    if r.peer and r.steady_device else "-"]
        row += ["-" if gbs is None else f"{gbs:.1f}",
                "-" if gbs is None else f"{100 * gbs / triad_cl_gbs:.0f} %",
                "-" if gbs is None else f"{100 * gbs / copy_gbs:.0f} %"]
        rows.append(row)
    first_what = ("fresh process, warm disk caches" if subprocess_on
                  else "in this process")
    headers = ["workload", "ftlazy steady", "ftlazy first call", "numpy",
               "numpy/ftlazy"]
    if peer_name is not None:
        headers += [peer_name, f"{peer_name}/ftlazy"]
    print_table(headers + ["GB/s", "% of triad", "% of copy"], rows,
                title=f"Summary (steady: device arrays, best of N; first call: "
                      f"build + compile + run, {first_what}; % of the OpenCL "
                      f"triad {triad_cl_gbs:.1f} GB/s and of the device's "
                      f"copy {copy_gbs:.1f} GB/s)")

# }}}


def main() -> None:
    """Parse arguments and run the selected workloads."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true",
                        help="small sizes, for a smoke test")
    parser.add_argument("--only", default="",
                        help="comma-separated workloads, e.g. W1,W3 or W3-sum")
    parser.add_argument("--repeat", type=int, default=5,
                        help="timed repetitions (best is reported)")
    parser.add_argument("--budget", type=float, default=10.0,
                        help="stop repeating after this many seconds")
    parser.add_argument("--no-subprocess", action="store_true",
                        help="skip the first-call measurements in fresh processes")
    parser.add_argument("--cold", action=argparse.BooleanOptionalAction,
                        default=None, help="also measure a fresh process with "
                        "empty disk caches (default: on, off with --quick)")
    parser.add_argument("--w5-degree", type=int, default=None,
                        help="override W5's polynomial degree")
    parser.add_argument("--device", choices=("default", "gpu", "cpu"),
                        default="default",
                        help="the OpenCL device: the first GPU or CPU found, "
                        "or the default (PYOPENCL_CTX); with a GPU, CuPy or "
                        "torch (if installed) run the same workloads")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    sizes = dict(QUICK_SIZES if args.quick else FULL_SIZES)
    if args.w5_degree is not None:
        sizes["W5"] = (args.w5_degree, sizes["W5"][1])
    if args.child:
        child_first_call(args.child, sizes, args.device)
        return
    cold = (not args.quick) if args.cold is None else args.cold

    from ftlazy.target.loopy.profile import device_profile
    queue = select_queue(args.device)
    print_header("ftlazy code generation vs numpy", queue)
    start = time.perf_counter()
    profile = device_profile(queue.device, queue)
    widths = ", ".join(f"{d} {profile.vector_width(d, ['exp', 'sin', 'tanh'])}"
                       for d in ("float32", "float64"))
    print(f"device profile ({time.perf_counter() - start:.2f} s; probe and "
          f"tuning run once per machine, then come from disk): kind "
          f"{profile.kind}, vector widths for exp/sin/tanh: {widths}, matmul "
          f"block {profile.matmul_block[0]}x{profile.matmul_block[1]}")
    print(f"sizes: {sizes}; repeat {args.repeat}")

    n_triad = sizes["triad"]
    t_np = numpy_triad(n_triad).best
    t_cl = opencl_triad(queue, n_triad).best
    triad_np_gbs = triad_bytes(n_triad) / t_np / 1e9
    triad_cl_gbs = triad_bytes(n_triad) / t_cl / 1e9
    t_copy = opencl_copy(queue, n_triad).best
    copy_gbs = 2 * 8 * n_triad / t_copy / 1e9
    print_table(["triad a = b + s*c", "n", "time", "GB/s (3 x 8 B x n)"],
                [("numpy, in place, 2 passes", n_triad, fmt_seconds(t_np),
                  f"{triad_np_gbs:.1f}"),
                 ("plain OpenCL kernel", n_triad, fmt_seconds(t_cl),
                  f"{triad_cl_gbs:.1f}"),
                 ("device-to-device copy (2 x 8 B x n)", n_triad,
                  fmt_seconds(t_copy), f"{copy_gbs:.1f}")],
                title="Memory bandwidth reference")
    peer = None
    if profile.kind == "gpu":
        from gpu_peers import find_peer
        peer = find_peer()
        found = (peer.name if peer is not None
                 else "none (neither CuPy nor torch with CUDA found)")
        print(f"GPU baseline: {found}")

    only = {s.strip() for s in args.only.split(",") if s.strip()}
    workloads = [w for w in all_workloads(sizes)
                 if not only or w.key in only or w.group in only]
    child_args = (["--quick"] if args.quick else []) + ["--device", args.device]
    if args.w5_degree is not None:
        child_args += ["--w5-degree", str(args.w5_degree)]
    results = []
    for wl in workloads:
        start = time.perf_counter()
        res = measure(wl, queue, args.repeat, args.budget)
        if peer is not None:
            from gpu_peers import peer_time
            try:
                res.peer = peer_time(peer, wl.key, wl.make_inputs())
            except Exception as exc:  # noqa: BLE001 (report, go on)
                res.extra.append(f"{peer.name}: failed ({exc})")
        if not args.no_subprocess and res.status == "ok":
            for what, is_cold in (("warm disk cache", False),
                                  ("empty disk cache", True)):
                if is_cold and not cold:
                    continue
                try:
                    d = first_call_subprocess(wl.key, child_args, is_cold)
                except (RuntimeError, subprocess.TimeoutExpired) as exc:
                    res.first_proc_detail[what] = f"failed: {exc}"
                    continue
                res.first_proc_detail[what] = d
                if is_cold:
                    res.first_cold = d["total"]
                else:
                    res.first_warm = d["total"]
        print(f"  done: {wl.key} ({res.status}) in "
              f"{time.perf_counter() - start:.1f} s", file=sys.stderr, flush=True)
        results.append(res)

    report(results, triad_cl_gbs, not args.no_subprocess, copy_gbs,
           peer.name if peer is not None else None)
    print(f"\nload average after: {os.getloadavg()} (other processes on this "
          "machine add noise; all times are wall clock)")


if __name__ == "__main__":
    main()
