# SPDX-License-Identifier: MIT
"""Choices no rule can make: measure the candidates on the device, once.

Where the best strategy depends on the machine more than on the DAG (the
register block of a matrix product: 8x8 suits one CPU's register file and is
4.5x slower on another), :func:`tuned_profile` times each candidate on a
representative workload the first time a device is used, and keeps the
winner in the device's profile. The measurements are cached on disk beside
the probe's results (:func:`~.probe.probe_cache_dir`), keyed like them by
platform, device, driver and ftlazy version, so they cost nothing later.
``FTLAZY_TUNE=0`` in the environment skips tuning (the profile's defaults
are used).
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import os
import time
from typing import Any, Iterator

import numpy as np

from ftlazy.target.loopy.profile import DeviceProfile

#: register blocks (rows, columns) tried for matrix products
MATMUL_BLOCK_CANDIDATES = ((8, 8), (4, 8), (8, 4), (4, 16), (8, 16), (16, 8))
#: the workload a block is timed on: an (n, n) @ (n, n) product (large
#: enough to leave the caches: at n = 512 the AVX-512 EPYC preferred 8x8,
#: at 1024 8x16 ran 1.7x faster than 8x8)
TUNING_MATMUL_SIZE = 1024
_SCHEMA = 2


def _cache_path(device: Any) -> Any:
    from ftlazy.target.loopy.probe import probe_cache_dir
    import ftlazy
    key = " | ".join([device.platform.name, device.platform.version, device.name,
                      device.driver_version, f"ftlazy {ftlazy.__version__}",
                      f"tuning {_SCHEMA}",
                      repr(MATMUL_BLOCK_CANDIDATES), str(TUNING_MATMUL_SIZE)])
    digest = hashlib.sha256(key.encode()).hexdigest()[:24]
    return probe_cache_dir() / f"tuning-{digest}.json", key


def _time_matmul_block(queue: Any, profile: DeviceProfile,
                       block: tuple[int, int]) -> float:
    """Seconds of the best of three runs of the tuning product with
    *block* (infinity where it fails to build or run)."""
    import ftlazy as ft
    from ftlazy.target.loopy.program import BoundProgram, _artifact, _canonical
    n = TUNING_MATMUL_SIZE
    a = ft.make_placeholder("a", (n, n), np.float64)
    b = ft.make_placeholder("b", (n, n), np.float64)
    rng = np.random.default_rng(0)
    av, bv = rng.random((n, n)), rng.random((n, n))
    canon = _canonical(a @ b)
    artifact, _ = _artifact(canon, dataclasses.replace(profile, matmul_block=block))
    prg = BoundProgram(canon, artifact, False)
    try:
        _, (out,) = prg(queue, a=av, b=bv)
        if not np.allclose(out, av @ bv):
            return float("inf")
        best = float("inf")
        for _ in range(3):
            start = time.perf_counter()
            prg(queue, a=av, b=bv)
            best = min(best, time.perf_counter() - start)
        return best
    except Exception:  # noqa: BLE001 (a candidate that fails just loses)
        return float("inf")


def tuned_profile(queue: Any, profile: DeviceProfile) -> DeviceProfile:
    """*profile* with the measured best matrix-product register block for
    the device of *queue* (measured once, then read from disk)."""
    if os.environ.get("FTLAZY_TUNE", "1") == "0":
        return profile
    path, key = _cache_path(queue.device)
    path.parent.mkdir(parents=True, exist_ok=True)
    # one process measures, others wait for its answer (and measuring
    # alongside another process's measurements would skew both)
    with _locked(path.with_suffix(".lock")):
        return _load_or_measure(queue, profile, path, key)


@contextlib.contextmanager
def _locked(path: Any) -> Iterator[None]:
    try:
        import fcntl
    except ImportError:  # no advisory locks here: measure unlocked
        yield
        return
    with open(path, "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def _load_or_measure(queue: Any, profile: DeviceProfile, path: Any, key: str
                     ) -> DeviceProfile:
    try:
        data = json.loads(path.read_text())
        if data.get("key") == key:
            return dataclasses.replace(
                profile, matmul_block=tuple(data["matmul_block"]))
    except (OSError, ValueError, KeyError, TypeError):
        pass
    timings = {block: _time_matmul_block(queue, profile, block)
               for block in MATMUL_BLOCK_CANDIDATES}
    best = min(timings, key=timings.get)
    if timings[best] == float("inf"):
        return profile
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps({
        "key": key, "matmul_block": list(best),
        "seconds": {f"{r}x{c}": t for (r, c), t in timings.items()}}, indent=1))
    os.replace(tmp, path)
    return dataclasses.replace(profile, matmul_block=best)
