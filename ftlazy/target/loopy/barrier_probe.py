# SPDX-License-Identifier: MIT
"""A probe of the OpenCL compiler's optimizer on loops with barriers.

A scan that one work group runs (see :mod:`.scan`) is a loop over the steps
whose body is separated by work-group barriers, its carry kept in global
memory. PoCL 3.0 (LLVM 14) was seen to drop every global store of such a
kernel when it was optimized: the carries never changed and the results were
whatever the buffers held. :func:`barrier_loops_run_correctly` runs a small
kernel of that shape, written as loopy writes it, once per device and
process; where it fails, programs with barriers inside loops are built with
the optimizer off (``-cl-opt-disable``), which gives correct results.
"""

from __future__ import annotations

import hashlib
import json
import os
import pathlib
from typing import Any

import numpy as np

__all__ = ["barrier_loops_run_correctly"]

#: a two-slot carry updated in a loop of barrier-separated stages, the slot
#: index written as loopy writes ``t % 2``
PROBE_SOURCE = """
#define lid(N) ((int) get_local_id(N))
__kernel void __attribute__ ((reqd_work_group_size(256, 1, 1)))
probe(__global double *out, long const n, long const steps,
      __global double *carry, __global double const *__restrict__ init,
      __global char const *__restrict__ mask, __global double *a,
      __global double *b)
{
  double v;
  if (-1 + -1 * lid(0) + n >= 0)
    for (int k = 0; k <= 2; ++k)
      for (int o = 0; o <= -1 + -1 * lid(0) + (255 + n + 255 * lid(0)) / 256; ++o)
        carry[3 * (256 * o + lid(0)) + k] = init[3 * (256 * o + lid(0)) + k];
  barrier(CLK_GLOBAL_MEM_FENCE);
  for (int t = 0; t <= -1 + steps; ++t)
  {
    if (lid(0) < n)
      for (int k = 0; k <= 2; ++k)
        a[3 * lid(0) + k] = 1.0;
    barrier(CLK_GLOBAL_MEM_FENCE);
    if (-1 + -1 * lid(0) + n >= 0)
      for (int k = 0; k <= 2; ++k)
        for (int o = 0; o <= -1 + -1 * lid(0) + (255 + n + 255 * lid(0)) / 256; ++o)
        {
          v = a[3 * (256 * o + lid(0)) + k];
          b[3 * (256 * o + lid(0)) + k] = ((char) (mask[n * t + 256 * o + lid(0)])
              ? carry[3 * n * (t + -2 * (t / 2)) + 3 * (256 * o + lid(0)) + k] + v
              : carry[3 * n * (t + -2 * (t / 2)) + 3 * (256 * o + lid(0)) + k]);
        }
    barrier(CLK_GLOBAL_MEM_FENCE);
    if (-1 + -1 * lid(0) + n >= 0)
      for (int k = 0; k <= 2; ++k)
        for (int o = 0; o <= -1 + -1 * lid(0) + (255 + n + 255 * lid(0)) / 256; ++o)
          carry[3 * n * (1 + t + -2 * ((1 + t) / 2)) + 3 * (256 * o + lid(0)) + k]
              = b[3 * (256 * o + lid(0)) + k];
    barrier(CLK_GLOBAL_MEM_FENCE);
  }
  if (-1 + -1 * lid(0) + n >= 0)
    for (int k = 0; k <= 2; ++k)
      for (int o = 0; o <= -1 + -1 * lid(0) + (255 + n + 255 * lid(0)) / 256; ++o)
        out[3 * (256 * o + lid(0)) + k] = carry[3 * n * (steps % 2) + 3 * (256 * o + lid(0)) + k];
}
"""

_RESULTS: dict[Any, bool] = {}


def _run(device: Any) -> bool:
    import pyopencl as cl
    import pyopencl.array as cla
    if device.max_work_group_size < 256 or not device.double_fp_config:
        return True     # the probe cannot run here; nothing was seen failing
    ctx = cl.Context([device])
    queue = cl.CommandQueue(ctx)
    n, steps = 5, 5
    kernel = cl.Program(ctx, PROBE_SOURCE).build().probe
    out = cla.zeros(queue, (n, 3), np.float64)
    init = cla.to_device(queue, np.ones((n, 3)))
    mask = cla.to_device(queue, np.ones((steps, n), np.int8))
    carry = cla.zeros(queue, (2, n, 3), np.float64)
    a = cla.zeros(queue, (n, 3), np.float64)
    b = cla.zeros(queue, (n, 3), np.float64)
    kernel(queue, (256,), (256,), out.data, np.int64(n), np.int64(steps),
           carry.data, init.data, mask.data, a.data, b.data)
    # each step adds 1 to every carry element
    return bool(np.array_equal(out.get(), np.full((n, 3), 1.0 + steps)))


def _cache_file() -> pathlib.Path:
    from ftlazy.target.loopy.probe import probe_cache_dir
    return probe_cache_dir() / "barrier_loops.json"


def _disk_key(device: Any) -> str:
    digest = hashlib.sha256(PROBE_SOURCE.encode()).hexdigest()[:16]
    return " | ".join((f"{device.platform.name} {device.platform.version}".strip(),
                       device.name, device.driver_version, f"probe {digest}"))


def _load(key: str) -> bool | None:
    try:
        value = json.loads(_cache_file().read_text()).get(key)
    except (OSError, ValueError, AttributeError):
        return None
    return value if isinstance(value, bool) else None


def _store(key: str, value: bool) -> None:
    path = _cache_file()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            known = json.loads(path.read_text())
        except (OSError, ValueError):
            known = {}
        if not isinstance(known, dict):
            known = {}
        known[key] = value
        tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(known, indent=1, sort_keys=True))
        os.replace(tmp, path)
    except OSError:
        pass    # an unwritable cache only costs the probe again


def barrier_loops_run_correctly(device: Any) -> bool:
    """Whether *device*'s compiler, optimizing, builds a loop of
    barrier-separated stages with a global carry correctly (see the module
    docs). Computed once per device and process, and cached on disk
    (``barrier_loops.json`` in :func:`~.probe.probe_cache_dir`, keyed by
    platform, device, driver and the probe's source). A probe that cannot
    build or run counts as a failure, and is not cached (the optimizer is
    then turned off for such programs, which is slower but safe)."""
    key = (device.platform.name, device.name, device.driver_version,
           device.int_ptr)
    if key not in _RESULTS:
        disk_key = _disk_key(device)
        cached = _load(disk_key)
        if cached is not None:
            _RESULTS[key] = cached
        else:
            try:
                _RESULTS[key] = _run(device)
                _store(disk_key, _RESULTS[key])
            except Exception:  # noqa: BLE001 (any failure: do not trust it)
                _RESULTS[key] = False
    return _RESULTS[key]
