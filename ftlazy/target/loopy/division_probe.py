# SPDX-License-Identifier: MIT
"""Whether a device divides float32 values by a constant as IEEE 754, and
numpy, round the quotient, and the rewrite for devices that do not.

NVIDIA's OpenCL compiler (an H200, CUDA 13.0) divided float32 values by a
literal as a product with its rounded reciprocal, also when kernels are
built with ``-cl-fp32-correctly-rounded-divide-sqrt`` (a division by a
value read from memory was exact then): ``ft.round(x, 1)``, which is
``rint(x * 10.0f) / 10.0f``, gave 55.100002 for 55.1, where numpy gives
55.099998 (``551 * 0.1f``).

:func:`constant_division_exact` runs a small kernel of such quotients once
per device (cached on disk, as the barrier probe is) and compares them
with numpy's. Where they differ and the device has doubles, GPU plans
compute each float32 quotient by a constant in double and round it to
float32 (:func:`divide_constants_in_double`). That is the correctly rounded
float32 quotient: a double quotient of float32 values, correctly rounded
or off by an ulp of a double, is never close enough to the midpoint of two
float32 values for its rounding to float32 to differ, since a quotient
``a / c`` of 24-bit significands lies at least ``2**-49`` (relative) from
any such midpoint.
"""

from __future__ import annotations

import hashlib
from typing import Any

import numpy as np
import pymbolic.primitives as prim
from loopy.symbolic import IdentityMapper, TypeCast

from ftlazy.target.loopy.disk_answers import read_answer, write_answer

__all__ = ["constant_division_exact", "divide_constants_in_double",
           "PROBE_DIVISORS"]

#: the constants the probe divides by
PROBE_DIVISORS = (10.0, 3.0, 7.0, 100.0, 0.3)

_RESULTS: dict[Any, bool] = {}


def probe_source() -> str:
    """The probe kernel: ``out[k*n + i] = x[i] / c_k`` for each divisor."""
    lines = [f"  out[{k} * n + i] = x[i] / {c!r}f;"
             for k, c in enumerate(PROBE_DIVISORS)]
    return ("__kernel void ftlazy_division_probe(__global const float *x, "
            "__global float *out, int n)\n{\n  int i = get_global_id(0);\n"
            "  if (i >= n) return;\n" + "\n".join(lines) + "\n}\n")


def probe_inputs() -> np.ndarray:
    """Integers up to 2**14 (``round``'s ``rint(x * 10) / 10``) and random
    float32 values of every magnitude."""
    rng = np.random.default_rng(11)
    return np.concatenate([
        np.arange(-(2**14), 2**14, dtype=np.float32),
        (rng.standard_normal(4096) * 10.0 ** rng.integers(-20, 20, 4096)
         ).astype(np.float32)])


def _run_probe(device: Any) -> bool:
    import pyopencl as cl

    from ftlazy.target.loopy.device import kernel_build_options
    from ftlazy.target.loopy.profile import _correctly_rounded_divide_sqrt
    context = cl.Context([device])
    queue = cl.CommandQueue(context)
    x = probe_inputs()
    program = cl.Program(context, probe_source()).build(
        options=kernel_build_options(_correctly_rounded_divide_sqrt(device)))
    mf = cl.mem_flags
    x_buf = cl.Buffer(context, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=x)
    out = np.empty(len(PROBE_DIVISORS) * len(x), np.float32)
    out_buf = cl.Buffer(context, mf.WRITE_ONLY, out.nbytes)
    program.ftlazy_division_probe(queue, (len(x),), None, x_buf, out_buf,
                                  np.int32(len(x)))
    cl.enqueue_copy(queue, out, out_buf)
    queue.finish()
    want = np.concatenate([x / np.float32(c) for c in PROBE_DIVISORS])
    return bool(np.array_equal(out.view(np.uint32), want.view(np.uint32)))


def _disk_key(device: Any) -> str:
    digest = hashlib.sha256(probe_source().encode()).hexdigest()[:16]
    return " | ".join((f"{device.platform.name} {device.platform.version}".strip(),
                       device.name, device.driver_version, f"probe {digest}"))


#: the file of the probe's answers (see :mod:`.disk_answers`)
CACHE_FILE = "constant_division.json"


def constant_division_exact(device: Any) -> bool:
    """Whether *device* divides float32 values by constants as numpy does
    (see the module docs). Computed once per device and process and cached
    on disk; a device that cannot run the probe counts as exact (nothing
    changes for it), and that answer is not cached."""
    key = (device.platform.name, device.name, device.driver_version,
           device.int_ptr)
    if key not in _RESULTS:
        disk_key = _disk_key(device)
        cached = read_answer(CACHE_FILE, disk_key)
        if isinstance(cached, bool):
            _RESULTS[key] = cached
        else:
            try:
                _RESULTS[key] = _run_probe(device)
            except Exception:  # noqa: BLE001 (no answer: change nothing)
                _RESULTS[key] = True
            else:
                write_answer(CACHE_FILE, disk_key, _RESULTS[key])
    return _RESULTS[key]


class _ConstantQuotientsInDouble(IdentityMapper):
    def map_quotient(self, expr: prim.Quotient) -> Any:
        num, den = self.rec(expr.numerator), self.rec(expr.denominator)
        if isinstance(den, np.float32):
            return TypeCast(np.dtype(np.float32), prim.Quotient(
                TypeCast(np.dtype(np.float64), num), np.float64(den)))
        return prim.Quotient(num, den)


def divide_constants_in_double(instructions: list[Any]) -> list[Any]:
    """*instructions* with every float32 quotient by a float32 constant
    computed in double and rounded to float32 (scalar code only: GPU plans
    emit no vector types)."""
    mapper = _ConstantQuotientsInDouble()
    return [i.with_transformed_expressions(mapper) for i in instructions]
