# SPDX-License-Identifier: MIT
"""The GPU baselines of ``bench_codegen.py --device gpu``: the same
workloads written for CuPy or torch (whichever is installed with a CUDA
device), timed with the peer's own synchronization.

Each workload is written once against an array module *xp* (numpy's API
where CuPy and torch agree: ``xp.exp``, ``a.sum(1)``, ``@``, slicing), so
that the tests can check the formulas with numpy itself.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np


@dataclass
class Peer:
    """An array library on a device: its name, its module, how arrays get
    there, and how to wait for its queued work."""

    name: str
    xp: Any
    to_device: Callable[[np.ndarray], Any]
    sync: Callable[[], None]


def find_peer() -> Peer | None:
    """CuPy or torch on a CUDA device, if either is installed and finds one;
    None otherwise."""
    try:
        import cupy
        if cupy.cuda.runtime.getDeviceCount() > 0:
            return Peer("CuPy", cupy, cupy.asarray,
                        cupy.cuda.Device().synchronize)
    except Exception:  # noqa: BLE001 (not installed, or no device)
        pass
    try:
        import torch
        if torch.cuda.is_available():
            return Peer("torch", torch,
                        lambda a: torch.from_numpy(np.ascontiguousarray(a)).cuda(),
                        torch.cuda.synchronize)
    except Exception:  # noqa: BLE001
        pass
    return None


def numpy_peer() -> Peer:
    """numpy as a peer (for the tests of the formulas)."""
    return Peer("numpy", np, lambda a: a, lambda: None)


def _stencil(u: Any) -> Any:
    return (u[1:-1, :-2] + u[1:-1, 2:] + u[:-2, 1:-1] + u[2:, 1:-1]
            - 4 * u[1:-1, 1:-1])


def _over_rows(xp: Any, op: str, a: Any) -> Any:
    """``op`` ("max", "sum" or "mean") over the last axis of *a*, kept as
    an axis of length 1, in *xp* (numpy-like, or torch's spelling)."""
    if getattr(xp, "__name__", "") == "torch":
        return getattr(a, "amax" if op == "max" else op)(dim=-1, keepdim=True)
    return getattr(xp, op)(a, axis=-1, keepdims=True)


def row_softmax(xp: Any, a: Any) -> Any:
    """Softmax over the last axis, written against ftlazy or a peer's array
    module."""
    e = xp.exp(a - _over_rows(xp, "max", a))
    return e / _over_rows(xp, "sum", e)


def row_layernorm(xp: Any, a: Any) -> Any:
    """Layer normalization over the last axis (no scale, no shift)."""
    d = a - _over_rows(xp, "mean", a)
    return d / xp.sqrt(_over_rows(xp, "mean", d * d) + 1e-5)


def _rnn(xp: Any, i: dict) -> Any:
    h, hs = i["h0"], []
    for t in range(i["xs"].shape[0]):
        h = xp.tanh(h @ i["W"].T + i["xs"][t] @ i["U"].T + i["b"])
        hs.append(h)
    return xp.stack(hs)


def peer_function(key: str, xp: Any) -> Callable[[dict], Any] | None:
    """The workload *key* of ``bench_codegen.py`` written against *xp*,
    taking the inputs by name; None where the peer has no counterpart."""
    table: dict[str, Callable[[dict], Any]] = {
        "W1": lambda i: (xp.exp(-i["x"] * i["x"]) * xp.sin(3 * i["x"])
                         + 0.5 * i["x"] / (1 + i["x"] * i["x"])),
        "W2-einsum": lambda i: i["a"] @ i["b"],
        "W2-matmul": lambda i: i["a"] @ i["b"],
        "W3-rows": lambda i: i["a"].sum(1),
        "W3-sum": lambda i: i["a"].sum(),
        "W3-both": lambda i: {"rows": i["a"].sum(1), "total": i["a"].sum()},
        "W3-softmax": lambda i: row_softmax(xp, i["a"]),
        "W3-layernorm": lambda i: row_layernorm(xp, i["a"]),
        "W4": lambda i: _stencil(i["u"]),
        "W6": lambda i: _rnn(xp, i),
    }
    return table.get(key)


def peer_time(peer: Peer, key: str, inputs: dict[str, np.ndarray],
              repeat: int = 20) -> float | None:
    """Median seconds of workload *key* on *peer* (inputs already on its
    device; three untimed calls first), or None without a counterpart."""
    fn = peer_function(key, peer.xp)
    if fn is None:
        return None
    on_device = {k: peer.to_device(v) for k, v in inputs.items()}
    for _ in range(3):
        fn(on_device)
    peer.sync()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn(on_device)
        peer.sync()
        times.append(time.perf_counter() - start)
    return float(np.median(times))
