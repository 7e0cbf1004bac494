# SPDX-License-Identifier: MIT
"""What code generation may emit for a device, and how it tunes its loops.

A :class:`DeviceProfile` is the one place code generation reads device facts
from: the family of strategies (``"cpu"`` or ``"gpu"``), the vector widths at
which each math builtin was *probed* to run correctly
(:mod:`.probe`, in child processes, cached on disk), the device's limits,
and every tuning constant (work-group sizes, register blocks, reduction
lanes, thresholds). Profiles are frozen and hashable: a profile is part of
the key of the compiled-program cache.

Users pin choices with :class:`CodegenOptions` (``ft.compile(expr,
options=...)``); tests force strategies a machine would not choose, e.g.
the GPU flavour or scalar code on a CPU.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import warnings
from dataclasses import dataclass
from typing import Any, Iterable, Iterator, Mapping

import numpy as np

from ftlazy.target.loopy.probe import PROBE_WIDTHS, probe_device
from ftlazy.target.loopy.probe import PROBED_BUILTINS as PROBED_FAMILIES

#: the vector widths code generation may emit: exactly those the probe checks
VECTOR_WIDTHS = PROBE_WIDTHS
#: the widest vector a CPU strategy asks for (wider was not faster on PoCL)
PREFERRED_VECTOR_WIDTH = 8


@dataclass(frozen=True)
class CodegenOptions:
    """Choices a user pins instead of leaving them to the device profile.

    :attr vector_width: elements per vector in vectorized loops (1, 2, 4, 8
        or 16); ``None`` takes the widest width the device passed. A width
        at which the probe found this device's vector arithmetic broken is
        refused with a :class:`ValueError`; loops that call a builtin the
        probe found wrong at it (PoCL 3.0's float32 ``sin``) run at the
        widest width that builtin passed, as without the option.
    :attr vectorize: ``False`` emits scalar code only.
    :attr device_kind: ``"cpu"`` or ``"gpu"``: force that family of
        strategies (the generated OpenCL runs on any device).
    :attr matmul_block: ``(rows, columns)`` of a matrix product's register
        block per work item.
    :attr vector_min_length: flat elementwise kernels shorter than this stay
        scalar (the profile's default is 4096).
    :attr sort_ragged_rows: ``False`` runs the scans over a FractalTensor's
        rows with each work group's block of elements in element order, not
        sorted by length (the default, ``None``, sorts them).
    """

    vector_width: int | None = None
    vectorize: bool = True
    device_kind: str | None = None
    matmul_block: tuple[int, int] | None = None
    vector_min_length: int | None = None
    sort_ragged_rows: bool | None = None

    def __post_init__(self) -> None:
        if self.vector_width is not None and self.vector_width not in VECTOR_WIDTHS:
            raise ValueError(f"CodegenOptions: vector_width must be one of "
                             f"{VECTOR_WIDTHS} or None, got {self.vector_width!r}")
        if not isinstance(self.vectorize, bool):
            raise TypeError("CodegenOptions: vectorize must be True or False, "
                            f"got {self.vectorize!r}")
        if self.vector_min_length is not None and (
                isinstance(self.vector_min_length, bool)
                or not isinstance(self.vector_min_length, int)
                or self.vector_min_length < 0):
            raise ValueError("CodegenOptions: vector_min_length must be a "
                             "non-negative int or None, got "
                             f"{self.vector_min_length!r}")
        if not (self.sort_ragged_rows is None
                or isinstance(self.sort_ragged_rows, bool)):
            raise TypeError("CodegenOptions: sort_ragged_rows must be True, "
                            f"False or None, got {self.sort_ragged_rows!r}")
        if self.device_kind not in (None, "cpu", "gpu"):
            raise ValueError("CodegenOptions: device_kind must be 'cpu', 'gpu' or "
                             f"None, got {self.device_kind!r}")
        if self.matmul_block is not None:
            block = tuple(self.matmul_block)
            if (len(block) != 2 or not all(isinstance(b, int) and 1 <= b <= 16
                                           for b in block)):
                raise ValueError("CodegenOptions: matmul_block must be two ints "
                                 f"in [1, 16], got {self.matmul_block!r}")
            object.__setattr__(self, "matmul_block", block)


#: the options used where a caller passes none (see :func:`default_options`)
_DEFAULT_OPTIONS: list[CodegenOptions] = [CodegenOptions()]


@contextlib.contextmanager
def default_options(options: CodegenOptions) -> Iterator[CodegenOptions]:
    """Within the ``with`` block, compile with *options* wherever no options
    are passed: the test suite runs every code generation test under each
    vector width the device passed this way."""
    _DEFAULT_OPTIONS.append(options)
    try:
        yield options
    finally:
        _DEFAULT_OPTIONS.pop()


def as_options(options: Any) -> CodegenOptions:
    """*options* (None, a :class:`CodegenOptions` or a dict of its fields) as
    :class:`CodegenOptions`; anything else raises :class:`TypeError`."""
    if options is None:
        return _DEFAULT_OPTIONS[-1]
    if isinstance(options, CodegenOptions):
        return options
    if isinstance(options, Mapping):
        known = {f.name for f in dataclasses.fields(CodegenOptions)}
        unknown = sorted(set(options) - known)
        if unknown:
            raise TypeError(f"unknown code generation options {unknown}; "
                            f"known: {sorted(known)}")
        return CodegenOptions(**options)
    raise TypeError("options must be None, a dict or ft.CodegenOptions, got "
                    f"{type(options).__name__}")


@dataclass(frozen=True)
class DeviceProfile:
    """Device facts and tuning constants for code generation (see the module
    docstring). Build one for a device with :func:`device_profile`; the
    defaults describe a generic device with no probed vector support."""

    #: family of strategies: "cpu" (few big cores, vectors) or "gpu"
    kind: str = "cpu"
    #: device and driver, for people reading a plan
    description: str = "generic"
    #: (dtype name, builtin) -> widest probed width at which it, and every
    #: narrower width, matched numpy; "arith" stands for + - * /
    builtin_widths: tuple[tuple[tuple[str, str], int], ...] = ()
    #: widest vector width a strategy asks for
    preferred_vector_width: int = PREFERRED_VECTOR_WIDTH
    max_work_group_size: int = 256
    #: parallel compute units (OpenCL's ``max_compute_units``: a CPU's
    #: cores, a GPU's SMs); row-blocked scans leave at least this many groups
    compute_units: int = 2
    local_mem_size: int = 32768
    max_mem_alloc_size: int = 2**31
    #: whether arrays work items share through barriers may be restrict
    #: (never, so far: NVIDIA's compiler miscompiles scans otherwise)
    restrict_shared_arrays: bool = False
    #: how kernels with barriers inside loops (whole-group scans) are built:
    #: one of :data:`~.barrier_probe.BARRIER_LOOP_BUILDS`, the first that
    #: ran the probe's kernel correctly (:mod:`.barrier_probe`)
    barrier_loop_build: str = "optimize"
    #: whether the device can divide and take square roots of float32
    #: correctly rounded, as numpy does (OpenCL's
    #: ``CL_FP_CORRECTLY_ROUNDED_DIVIDE_SQRT``): kernels are then built with
    #: ``-cl-fp32-correctly-rounded-divide-sqrt``. Without it OpenCL allows
    #: 2.5 ulp for ``/`` and 3 for ``sqrt``, and NVIDIA's driver uses that
    #: (an H200 rounded ``rint(551.0f) / 10`` to 55.100002, numpy 55.099998)
    correctly_rounded_divide_sqrt: bool = False
    #: whether GPU plans compute float32 quotients by constants in double
    #: and round them to float32: where the device's float32 division by a
    #: constant differs from numpy's (NVIDIA's, see :mod:`.division_probe`)
    #: and it has doubles
    float32_constant_division_in_double: bool = False

    # {{{ tuning

    #: work items per group along axis 0, one-dimensional cheap arrays (CPU:
    #: PoCL vectorizes across a group's work items)
    flat_local_size: int = 64
    #: work items per group along axis 0 for rows and reductions (CPU)
    row_local_size: int = 1
    #: work items per group along axis 0 (GPU; capped by the device's
    #: limit). 256 fill an NVIDIA SM's schedulers: the H100's elementwise
    #: kernel ran 1.8x faster than with 64, and 128-1024 were within 10%
    #: of each other on W1, W3 and W4 (``benchmarks/gpu_sweep.py``)
    gpu_local_size: int = 256
    #: GPUs: a segment reduction (a FractalTensor element's rows reduced,
    #: its columns on ``l.0``) shares each element's rows among at most
    #: this many lanes of work items on ``l.1`` (as many as fill
    #: ``gpu_local_size`` items), combined in local memory: one item's
    #: chain of dependent loads over the rows left an H200 at 9 % of its
    #: bandwidth on 8192 elements of 64 columns
    gpu_segment_row_lanes: int = 8
    #: work items of a scan's single group
    scan_local_size: int = 256
    #: GPU matrix products with local-memory tiles: work items per side of
    #: a group (also the ``k`` step) and outputs per side of an item's
    #: register block (a group computes an ``items*block`` square tile)
    gpu_matmul_items: int = 16
    gpu_matmul_block: int = 4
    #: register block (rows, columns) of a matrix product per work item
    matmul_block: tuple[int, int] = (8, 8)
    #: independent accumulators of a split reduction
    reduction_lanes: int = 8
    #: reduction steps per accumulator update in row-blocked CPU scans
    scan_k_unroll: int = 4
    #: kernels on vectors keep at most this many straight-line private
    #: statements (PoCL compiles long straight double8 code slowly)
    vector_max_private_statements: int = 8
    #: flat kernels shorter than this stay scalar
    vector_min_length: int = 4096
    #: GPUs: a loop nest whose code would cost more operations than this
    #: (calls weighted, see ``storage.cap_nest_cost``) is cut into several
    #: kernels, which the GPU's compiler builds faster than one
    gpu_max_nest_cost: int = 1500
    #: GPUs: an array that several readers read and that costs at most this
    #: many operations with the arrays inlined into it (calls weighted, see
    #: ``storage.decide_storage``) is computed again by each reader instead
    #: of stored and read back: a layer norm's ``x - mean`` (from 16; 4
    #: passes over the rows instead of 6) and a softmax's ``exp(x - max)``
    #: (from 40; 3 kernels instead of 4). On an H100 (float64, 4096x4096,
    #: ``benchmarks/gpu_sweep.py`` W3) the layer norm took 315 us at 0 and
    #: 212 us from 16, the softmax 305 us up to 16 and 206 us at 40. A GPU
    #: with a slow double-precision rate may want 16 (no calls). 0 stores
    #: as CPU plans do
    gpu_recompute_cost_limit: int = 40
    #: DAGs with more nodes skip loopy's array-bounds proof
    bounds_check_max_nodes: int = 500
    #: rows per work group tried, in order, for row-blocked scans (the first
    #: that leaves ``compute_units`` groups; else one row per group)
    scan_rows_per_group: tuple[int, ...] = (8, 4, 2)
    #: row-blocked ragged scans block their elements by descending extent
    #: (each block's loop then runs about its own elements' steps)
    sort_ragged_rows: bool = True
    #: elements of a private accumulator block (doubles: 32 KiB)
    max_private_accumulator: int = 4096
    #: inputs of at most this many elements are packed into one argument
    #: per dtype when there are at least pack_min_count of them (devices cap
    #: the size of kernel parameters, and each argument costs host time)
    pack_max_size: int = 64
    pack_min_count: int = 16
    #: vectorization allowed at all (CodegenOptions.vectorize)
    vectorize: bool = True

    # }}}

    def builtin_width(self, dtype: np.dtype | str, builtin: str) -> int:
        """Widest probed width for *builtin* on *dtype* (1 if unprobed)."""
        name = np.dtype(dtype).name
        return dict(self.builtin_widths).get((name, builtin), 1)

    def vector_width(self, dtype: np.dtype | str,
                     builtins: Iterable[str] = ()) -> int:
        """Widest width, at most :attr:`preferred_vector_width`, at which
        arithmetic and every one of *builtins* run correctly on *dtype*; 1
        means scalar code."""
        if not self.vectorize:
            return 1
        width = min(self.preferred_vector_width,
                    self.builtin_width(dtype, "arith"))
        for b in builtins:
            width = min(width, self.builtin_width(dtype, b))
        return width

    def with_options(self, options: CodegenOptions) -> DeviceProfile:
        """This profile with the user's pinned choices applied."""
        changes: dict[str, Any] = {}
        if options.device_kind is not None:
            changes["kind"] = options.device_kind
        if not options.vectorize or options.vector_width == 1:
            changes["vectorize"] = False
        elif options.vector_width is not None:
            width = options.vector_width
            # (a builtin broken at the width keeps its loops narrower, see
            # vector_width; lanes read at a run-time index are not needed:
            # code generation unrolls them where the probe failed them)
            broken = sorted({f"{d} arithmetic" for (d, b), w
                             in self.builtin_widths if w < width and b == "arith"})
            if self.builtin_widths and broken:
                raise ValueError(
                    f"vector width {width} is not safe on {self.description}: "
                    f"the probe found it broken for {', '.join(broken)}")
            changes["preferred_vector_width"] = width
            if not self.builtin_widths:
                # nothing probed (a synthetic profile): trust the user
                changes["builtin_widths"] = tuple(
                    ((d, b), width) for d in ("float32", "float64")
                    for b in ("arith",) + PROBED_FAMILIES)
        if options.matmul_block is not None:
            changes["matmul_block"] = options.matmul_block
        if options.vector_min_length is not None:
            changes["vector_min_length"] = options.vector_min_length
        if options.sort_ragged_rows is not None:
            changes["sort_ragged_rows"] = options.sort_ragged_rows
        return dataclasses.replace(self, **changes) if changes else self




def synthetic_profile(kind: str = "cpu", vector_width: int = 8,
                      **tuning: Any) -> DeviceProfile:
    """A profile that trusts every builtin at *vector_width*: for tests and
    golden sources, which must not depend on the machine's probe."""
    widths = tuple(((d, b), vector_width) for d in ("float32", "float64")
                   for b in ("arith",) + PROBED_FAMILIES)
    return DeviceProfile(kind=kind, description=f"synthetic {kind}",
                         builtin_widths=widths,
                         preferred_vector_width=vector_width,
                         vectorize=vector_width > 1, **tuning)


_PROFILES: dict[Any, DeviceProfile] = {}

#: work items per group of GPU loop nests and reductions
GPU_LOCAL_SIZE = DeviceProfile.gpu_local_size


def device_profile(device: Any, queue: Any = None) -> DeviceProfile:
    """The profile of a :class:`pyopencl.Device`: its kind and limits from
    OpenCL's device queries, vector widths from the probe (CPUs only: GPU
    strategies emit no vector types), and, given a *queue* on the device,
    the choices :mod:`.tuning` measures. Computed once per device and
    process; the probe's and the tuning's answers are cached on disk.
    ``FTLAZY_PROBE=0`` in the environment skips the probe and emits scalar
    code."""
    import pyopencl as cl
    key = (device.platform.name, device.name, device.driver_version,
           device.int_ptr, queue is not None)
    profile = _PROFILES.get(key)
    if profile is not None:
        return profile
    kind = "gpu" if device.type & cl.device_type.GPU else "cpu"
    widths: tuple = ()
    result = None
    description = f"{device.platform.name} | {device.name} | {device.driver_version}"
    if kind == "cpu" and os.environ.get("FTLAZY_PROBE", "1") != "0":
        try:
            result = probe_device(device)
        except Exception as err:  # noqa: BLE001 (no probe: scalar code)
            warnings.warn(f"ftlazy could not probe {description} ({err}); "
                          "generating scalar code only", RuntimeWarning,
                          stacklevel=2)
            result = None
    if result is not None:
        widths = tuple(sorted(
            ((dtype, builtin), max(passing, default=1))
            for dtype, by_builtin in result.passing_widths.items()
            for builtin, passing in by_builtin.items()
            for passing in [_contiguous_widths(passing)]))
    from ftlazy.target.loopy.barrier_probe import barrier_loop_build
    from ftlazy.target.loopy.division_probe import constant_division_exact
    profile = DeviceProfile(
        kind=kind, description=description, builtin_widths=widths,
        barrier_loop_build=barrier_loop_build(device),
        correctly_rounded_divide_sqrt=_correctly_rounded_divide_sqrt(device),
        float32_constant_division_in_double=(
            kind == "gpu" and _has_doubles(device)
            and not constant_division_exact(device)),
        max_work_group_size=int(device.max_work_group_size),
        compute_units=max(1, int(device.max_compute_units)),
        local_mem_size=int(device.local_mem_size),
        max_mem_alloc_size=int(device.max_mem_alloc_size),
        vectorize=bool(widths),
        **({"gpu_local_size": min(GPU_LOCAL_SIZE,
                                  int(device.max_work_group_size))}
           if kind == "gpu" else {}))
    if queue is not None and kind == "cpu":
        from ftlazy.target.loopy.tuning import tuned_profile
        profile = tuned_profile(queue, profile)
    _PROFILES[key] = profile
    return profile


def _has_doubles(device: Any) -> bool:
    import pyopencl as cl
    try:
        return int(device.double_fp_config) != 0
    except cl.Error:
        return False


def _correctly_rounded_divide_sqrt(device: Any) -> bool:
    """Whether *device* accepts ``-cl-fp32-correctly-rounded-divide-sqrt``
    (a driver that cannot answer the query: no)."""
    import pyopencl as cl
    try:
        config = int(device.single_fp_config)
    except cl.Error:
        return False
    return bool(config & cl.device_fp_config.CORRECTLY_ROUNDED_DIVIDE_SQRT)


def _contiguous_widths(passing: Iterable[int]) -> list[int]:
    """The widths of *passing* up to the first one missing: a width counts
    only if every narrower width passed too."""
    passed = set(passing)
    result = []
    for w in VECTOR_WIDTHS:
        if w not in passed:
            break
        result.append(w)
    return result


def profile_table(profile: DeviceProfile) -> str:
    """The probed widths of *profile* as a text table, for people."""
    rows = {}
    for (dtype, builtin), width in profile.builtin_widths:
        rows.setdefault(builtin, {})[dtype] = width
    dtypes = sorted({d for (d, _), _ in profile.builtin_widths})
    lines = [f"{'builtin':10} " + " ".join(f"{d:>8}" for d in dtypes)]
    for builtin in sorted(rows):
        lines.append(f"{builtin:10} " + " ".join(
            f"{rows[builtin].get(d, 1):>8}" for d in dtypes))
    return "\n".join(lines)


__all__ = ["CodegenOptions", "DeviceProfile", "as_options", "default_options",
           "device_profile", "synthetic_profile", "profile_table"]
