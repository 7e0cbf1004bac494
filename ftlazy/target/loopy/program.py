# SPDX-License-Identifier: MIT
"""Compiled programs: :func:`generate_loopy` and :func:`compile`.

A DAG is canonicalized (inputs renamed, data wrappers turned into
arguments), and the canonical DAG, an interned node, is the key of an
in-process cache of :class:`CompiledArtifact`: the loopy translation unit
and its per-context executors (which hold loopy's and pyopencl's caches).
Building a structurally equal graph again therefore costs one canonicalizing
pass and no code generation or OpenCL build.
"""

from __future__ import annotations

import hashlib
import math
import os
import pathlib
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache, cached_property
from typing import Any

import loopy as lp
import numpy as np
import pyopencl as cl
import pyopencl.array as cla
import pyopencl.tools as cltools
import pymbolic
import pymbolic.primitives as prim
from pytools.tag import UniqueTag, tag_dataclass

from ftlazy import shapes as sh
from ftlazy.array import Array, DictOfNamedArrays, IndexLambda, Placeholder
from ftlazy.fractal import LoopResult
from ftlazy.node import Node, topological_order
from ftlazy.scalar_expr import index_var
from ftlazy.target.binding import bind_inputs, collect_size_checks
from ftlazy.target.loopy.arguments import as_result, split_options
from ftlazy.target.loopy.canonical import CanonicalDAG, canonicalize
from ftlazy.target.loopy.barrier_probe import program_executor, program_sources
from ftlazy.target.loopy.kernel import ArgSpec, build_kernel
from ftlazy.target.loopy.device import (
    default_queue, quiet_successful_builds, silence_compiler_output,
    warm_up_compiler)
from ftlazy.target.loopy.plan import KernelPlan
from ftlazy.progress import report_stage
from ftlazy.target.loopy.profile import (
    CodegenOptions, DeviceProfile, as_options, device_profile)
from ftlazy.target.loopy.lowering import (
    CallChecks, derived_sizes, insert_kernel_checks, lower_for_codegen)

silence_compiler_output()


@dataclass
class StageTimings:
    """Seconds spent in each compilation stage (``None``: not run, e.g.
    because the program came from the cache)."""

    dag_transforms: float | None = None
    kernel_creation: float | None = None
    scheduling: float | None = None
    opencl_build: float | None = None

    def __str__(self) -> str:
        def fmt(v):
            return "cached" if v is None else f"{v * 1e3:.1f} ms"
        return (f"DAG transforms {fmt(self.dag_transforms)}, loopy kernel "
                f"creation {fmt(self.kernel_creation)}, scheduling "
                f"{fmt(self.scheduling)}, OpenCL build {fmt(self.opencl_build)}")


@dataclass
class CompiledArtifact:
    """What a canonical DAG compiles to, shared by structurally equal DAGs."""

    t_unit: lp.TranslationUnit
    inputs: list[ArgSpec]
    outputs: list[ArgSpec]
    #: canonical output name -> kernel output argument name
    output_args: dict[Any, str]
    #: what each call checks (size parameters, the kernel's check outputs)
    checks: CallChecks
    timings: StageTimings
    #: packed argument -> (canonical input name, offset, size) of its members
    packs: dict[str, list[tuple[str, int, int]]] = field(default_factory=dict)
    #: arguments the kernel views as (n / width, width) vectors
    vector_args: tuple[str, ...] = ()
    #: the plan the kernel was emitted from
    plan: KernelPlan | None = None
    #: how kernels with barriers inside loops are built (see barrier_probe)
    barrier_loop_build: str = "optimize"
    executors: dict = field(default_factory=dict)
    launchers: dict = field(default_factory=dict)

    @property
    def vector_width(self) -> int:
        """Elements per vector of the views of :attr:`vector_args`."""
        return self.plan.vector_width if self.plan is not None else 1

    @cached_property
    def allocations(self) -> list[tuple[str, tuple, int]]:
        """The device buffers a call allocates (outputs and global
        temporaries) as ``(what, extents, item size)``, extents (see
        :func:`_extents`) in canonical size names."""
        what: dict[str, str] = {}
        for key, arg in self.output_args.items():
            what.setdefault(arg, "a run-time check's output" if _is_check_key(key)
                            else "the output" if key is None else f"output {key!r}")
        result = [(what.get(o.name, o.name), _extents(o.shape),
                   np.dtype(o.dtype).itemsize) for o in self.outputs]
        for tv in self.t_unit.default_entrypoint.temporary_variables.values():
            if tv.address_space == lp.AddressSpace.GLOBAL and tv.shape:
                result.append((f"intermediate array {tv.name!r}",
                               _extents(tv.shape), tv.dtype.numpy_dtype.itemsize))
        return result

    @cached_property
    def allocation_bounds(self) -> tuple[tuple[int, tuple], ...]:
        """The distinct sizes of :attr:`allocations`, quick to check: each
        as the bytes of one element times its constant extents, and its
        other extents."""
        bounds: dict[tuple, tuple[int, tuple]] = {}
        for _, extents, itemsize in self.allocations:
            factor = itemsize
            rest = []
            for c in extents:
                if isinstance(c, int):
                    factor *= c
                else:
                    rest.append(c)
            key = (factor, tuple((tuple(sorted(c.coeffs.items())), c.const)
                                 if isinstance(c, sh.AffineForm) else c
                                 for c in rest))
            bounds.setdefault(key, (factor, tuple(rest)))
        return tuple(bounds.values())

    @cached_property
    def packed_inputs(self) -> frozenset[str]:
        """Canonical names of the inputs that travel in packs."""
        return frozenset(name for members in self.packs.values()
                         for name, _, _ in members)

    def executor(self, context: cl.Context) -> Any:
        ex = self.executors.get(context)
        if ex is None:
            ex = program_executor(self.t_unit, context, self.barrier_loop_build)
            start = time.perf_counter()
            ex.get_typed_and_scheduled_translation_unit(ex.arg_to_dtype({}))
            self.timings.scheduling = time.perf_counter() - start
            report_stage(self.timings, "scheduling")
            start = time.perf_counter()
            try:
                with quiet_successful_builds():
                    ex.translation_unit_info(ex.arg_to_dtype({}))
            except (cl.Error, AttributeError) as err:
                if not _is_poisoned_cache_error(err):
                    raise
                # a process that crashed inside the driver's compiler left
                # a half-written entry in PoCL's kernel cache: drop the
                # cache and build once more
                from ftlazy.target.loopy.probe import purge_pocl_kernel_cache
                purge_pocl_kernel_cache()
                ex = program_executor(self.t_unit, context,
                                      self.barrier_loop_build)
                with quiet_successful_builds():
                    ex.translation_unit_info(ex.arg_to_dtype({}))
            self.timings.opencl_build = time.perf_counter() - start
            report_stage(self.timings, "opencl_build")
            self.executors[context] = ex
        return ex

    def launcher(self, context: cl.Context) -> _Launcher | _InvokerLauncher:
        """The kernels built for *context* (see :meth:`executor`) and the
        host function of loopy's invoker that enqueues them; the invoker
        itself where this loopy version's has no such function."""
        launch = self.launchers.get(context)
        if launch is None:
            ex = self.executor(context)
            info = ex.translation_unit_info(ex.arg_to_dtype({}))
            host = _host_function(self.t_unit, info.invoker)
            launch = self.launchers[context] = (
                _Launcher(info.cl_kernels, host) if host is not None
                else _InvokerLauncher(
                    ex, self.t_unit.default_entrypoint.arg_dict))
        return launch

    @cached_property
    def user_outputs(self) -> tuple[tuple[Any, str], ...]:
        """``(canonical output name, kernel argument)`` of the user's
        outputs (not the run-time checks')."""
        return tuple((key, arg) for key, arg in self.output_args.items()
                     if not _is_check_key(key))

    @cached_property
    def output_specs(self) -> dict[str, ArgSpec]:
        """The kernel's output arguments by name."""
        return {o.name: o for o in self.outputs}

    @cached_property
    def output_dtypes(self) -> dict[str, np.dtype]:
        """The dtype of each output argument's buffer (booleans are
        stored as int8)."""
        arg_dict = self.t_unit.default_entrypoint.arg_dict
        return {o.name: arg_dict[o.name].dtype.numpy_dtype for o in self.outputs}


@dataclass(frozen=True)
class _Launcher:
    """A compiled program's kernels on one context and the host function
    of loopy's invoker, which allocates the global temporaries and
    enqueues every kernel, given buffers and size values by argument name:
    the invoker's per-call checks and conversions of arrays (dtypes,
    shapes, strides, transfers), which ftlazy does itself, are skipped."""

    kernels: Any
    host: Any

    def __call__(self, queue: cl.CommandQueue, allocator: Any,
                 wait_for: list | None, args: dict[str, Any]) -> cl.Event:
        return self.host(self.kernels, queue, wait_for=wait_for,
                         allocator=allocator, **args)


@dataclass(frozen=True)
class _InvokerLauncher:
    """The fallback of :class:`_Launcher` where loopy's invoker has no host
    function ftlazy knows (another loopy version): the buffers are wrapped
    as device arrays of the kernel arguments' shapes and passed to the
    invoker (its checks cost some microseconds per call)."""

    executor: Any
    arg_dict: Any

    def __call__(self, queue: cl.CommandQueue, allocator: Any,
                 wait_for: list | None, args: dict[str, Any]) -> cl.Event:
        sizes = {k: v for k, v in args.items()
                 if not isinstance(v, cl.MemoryObjectHolder) and v is not None}
        wrapped = dict(sizes)
        for name, value in args.items():
            if name in sizes:
                continue
            arg = self.arg_dict[name]
            shape = tuple(int(pymbolic.evaluate(d, sizes)) for d in arg.shape)
            wrapped[name] = cla.Array(queue, shape, arg.dtype.numpy_dtype,
                                      data=value, allocator=allocator)
        evt, _ = self.executor(queue, allocator=allocator, wait_for=wait_for,
                               out_host=False, **wrapped)
        return evt


def _host_function(t_unit: lp.TranslationUnit, invoker: Any) -> Any:
    """The host function (loopy's "host program") that *invoker*, loopy's
    generated invoker of *t_unit*, calls after its checks; None where it
    has none by the name this loopy version gives it."""
    entry = t_unit.default_entrypoint
    name = (getattr(t_unit.target, "host_program_name_prefix", "_lpy_host_")
            + entry.name
            + getattr(entry.target, "host_program_name_suffix", ""))
    return getattr(getattr(invoker, "module", None), "mod_globals", {}).get(name)


#: what pyopencl says when PoCL serves a program from a half-written cache
#: entry: no kernels in the program, or none by the expected name
_POISONED_CACHE_MARKERS = ("was not found as a program info attribute",
                           "INVALID_KERNEL_NAME", "INVALID_PROGRAM_EXECUTABLE",
                           "INVALID_BINARY")


def _is_poisoned_cache_error(err: Exception) -> bool:
    return any(marker in str(err) for marker in _POISONED_CACHE_MARKERS)


# {{{ what loopy's on-disk caches key the kernels by

@tag_dataclass
class FtlazyCodeVersion(UniqueTag):
    """Tags every kernel ftlazy emits with :func:`source_digest`. Loopy's
    on-disk caches (generated code, typed and scheduled kernels, invokers)
    are keyed by the kernel's persistent hash, which does not tell every
    difference that matters apart (a constant ``np.int64(-1)`` hashes like
    ``-1``, though the OpenCL differs where ftlazy types its constants): with
    the digest in the key, code generated by another version of ftlazy is
    never served."""

    digest: str


def source_digest(root: pathlib.Path | str | None = None) -> str:
    """A digest of ftlazy's version and of the names and contents of the
    Python files under *root* (default: the installed ftlazy package)."""
    if root is None:
        return _package_digest()
    import ftlazy
    root = pathlib.Path(root)
    digest = hashlib.sha256(ftlazy.__version__.encode())
    for path in sorted(root.rglob("*.py")):
        digest.update(path.relative_to(root).as_posix().encode() + b"\0")
        digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()


@cache
def _package_digest() -> str:
    import ftlazy
    return source_digest(pathlib.Path(ftlazy.__file__).parent)


def with_code_version(t_unit: lp.TranslationUnit, digest: str | None = None
                      ) -> lp.TranslationUnit:
    """*t_unit* with its entry kernel tagged :class:`FtlazyCodeVersion`
    (*digest*, default :func:`source_digest`); the generated code is the
    same."""
    entry = t_unit.default_entrypoint
    tag = FtlazyCodeVersion(digest if digest is not None else source_digest())
    return t_unit.with_kernel(entry.tagged(tag))

# }}}


_CACHE: dict[tuple, CompiledArtifact] = {}
_CACHE_LIMIT = 256


#: the user's own result node -> its canonical form: rebuilding a DAG with
#: the same names gives the same interned root, found here without even a
#: canonicalizing pass (entries keep their DAGs alive; bounded like _CACHE)
_CANONICAL: dict[Node, CanonicalDAG] = {}


def _canonical(result: Array | DictOfNamedArrays) -> CanonicalDAG:
    canon = _CANONICAL.get(result) if isinstance(result, Node) else None
    if canon is None:
        # (ft.compile lowers FractalTensor programs before they get here; a
        # DAG already lowered reads only their packed parts)
        from ftlazy.target.loopy.jagged_program import needs_jagged_lowering
        if needs_jagged_lowering(result):
            raise TypeError(
                "ft.generate_loopy: the DAG reads FractalTensors, whose "
                "programs take the offsets and values the host derives from "
                "them; use ft.compile (its .source and .plan show the "
                "generated code)")
        # (refused before canonicalizing, which renames the inputs: the
        # message names the user's)
        from ftlazy.target.loopy.kernel import check_float16
        if isinstance(result, (Array, DictOfNamedArrays)):
            check_float16(topological_order(
                list(result.values()) if isinstance(result, DictOfNamedArrays)
                else [result]))
        canon = canonicalize(result)
        if len(_CANONICAL) >= _CACHE_LIMIT:
            _CANONICAL.pop(next(iter(_CANONICAL)))
        _CANONICAL[result] = canon
    return canon


def _artifact(canon: CanonicalDAG, profile: DeviceProfile
              ) -> tuple[CompiledArtifact, bool]:
    key = (canon.outputs, profile)
    art = _CACHE.get(key)
    if art is not None:
        return art, True
    timings = StageTimings()
    start = time.perf_counter()
    outputs, output_args, checks = _kernel_outputs(canon, profile)
    timings.dag_transforms = time.perf_counter() - start
    report_stage(timings, "dag_transforms")
    start = time.perf_counter()
    builder, t_unit, inputs, outs = build_kernel(outputs, profile)
    t_unit = with_code_version(t_unit)
    timings.kernel_creation = time.perf_counter() - start
    report_stage(timings, "kernel_creation")
    packs = {pack: [(ph.name, offset, int(np.prod(ph.shape)))
                    for ph, offset in members]
             for pack, members in builder.packs.items()}
    art = CompiledArtifact(t_unit, inputs, outs, output_args, checks, timings,
                           packs, tuple(builder.vector_args), builder.plan,
                           profile.barrier_loop_build)
    if len(_CACHE) >= _CACHE_LIMIT:
        _CACHE.pop(next(iter(_CACHE)))
    _CACHE[key] = art
    return art, False


def _identity_copy(a: Array) -> IndexLambda:
    idx = tuple(index_var(i) for i in range(a.ndim))
    expr = prim.Subscript(prim.Variable("_in0"), idx) if idx else prim.Variable("_in0")
    return IndexLambda(expr, a.shape, a.dtype, {"_in0": a})


def _kernel_outputs(canon: CanonicalDAG, profile: DeviceProfile
                    ) -> tuple[dict[str, Array], dict[Any, str], CallChecks]:
    """Lowered outputs by kernel argument name, the kernel argument of each
    canonical output, and what each call checks."""
    sizes = collect_size_checks(canon.outputs.values())
    roots, checks = insert_kernel_checks(dict(canon.outputs))
    for i, check in enumerate(checks):
        roots[("_ft_check", i)] = check.failed
        if check.value is not None:
            roots[("_ft_check_value", i)] = check.value
    lowered, derived = lower_for_codegen(roots, profile)
    kernel_outputs: dict[str, Array] = {}
    output_args: dict[Any, str] = {}
    by_node: dict[Array, str] = {}
    for key, a in lowered.items():
        if not isinstance(a, (IndexLambda, LoopResult)):
            a = _identity_copy(a)
        # (deduplicated after the copy: the copy of a 0-d input is the same
        # interned node as an output that reads it, e.g. a sum over no axes)
        arg = by_node.get(a)
        if arg is None:
            arg = by_node[a] = f"_ft_out{len(kernel_outputs)}"
            kernel_outputs[arg] = a
        output_args[key] = arg
    kernel_checks = tuple(
        (output_args[("_ft_check", i)], output_args.get(("_ft_check_value", i)),
         check) for i, check in enumerate(checks))
    return kernel_outputs, output_args, CallChecks(sizes, kernel_checks, derived)


def _pack(parts: list[Any], queue: cl.CommandQueue) -> Any:
    """One packed argument from its members: on the host when all are numpy
    arrays, else on the device (the device arrays by pack kernels, see
    :mod:`.packing`; numpy members by a transfer each), instead of a
    blocking transfer to the host and back."""
    from ftlazy.target.loopy.packing import copy_into_pack
    if not any(isinstance(p, cla.Array) for p in parts):
        return np.concatenate([_to_kernel_form(p, queue).reshape(-1)
                               for p in parts])
    dtype = np.dtype(np.int8) if parts[0].dtype == np.bool_ else parts[0].dtype
    packed = cla.empty(queue, sum(p.size for p in parts), dtype)
    places = np.cumsum([0] + [p.size for p in parts[:-1]]).tolist()
    members = [(p, place) for p, place in zip(parts, places) if p.size]

    def by_kernel(p: Any) -> bool:
        return (isinstance(p, cla.Array) and p.flags.c_contiguous
                and p.offset % dtype.itemsize == 0)

    left = copy_into_pack(queue, packed, [m for m in members if by_kernel(m[0])])
    for p, place in left + [m for m in members if not by_kernel(m[0])]:
        offset = place * dtype.itemsize
        if isinstance(p, cla.Array) and p.flags.c_contiguous:
            cl.enqueue_copy(queue, packed.base_data, p.base_data,
                            byte_count=p.size * dtype.itemsize,
                            dst_offset=offset, src_offset=p.offset)
        else:
            host = p.get() if isinstance(p, cla.Array) else p
            cl.enqueue_copy(queue, packed.base_data,
                            _to_kernel_form(host, queue), dst_offset=offset)
    return packed


def _to_kernel_form(value: Any, queue: cl.CommandQueue) -> Any:
    if isinstance(value, np.generic):
        value = np.asarray(value)
    if isinstance(value, np.ndarray):
        if value.dtype == np.bool_:
            value = value.view(np.int8)
        if value.ndim == 0:
            value = value.reshape(1)
        return value if value.flags.c_contiguous else np.ascontiguousarray(value)
    if isinstance(value, cla.Array):
        if value.dtype == np.bool_:
            value = value.view(np.int8)
        if value.ndim == 0:
            value = value.reshape(1)
        if value.offset:
            value = _at_buffer_start(value, queue)
        return value
    return np.asarray(value)


def _at_buffer_start(value: cla.Array, queue: cl.CommandQueue) -> cla.Array:
    """A device array *value* that starts inside its buffer (a slice such
    as ``a[2:]``) as one at the start of a buffer, which the kernels take:
    a sub-buffer where the offset suits the device's alignment, else a
    device-side copy."""
    align = queue.device.mem_base_addr_align // 8
    if value.offset % align == 0 and value.nbytes:
        sub = value.base_data.get_sub_region(value.offset, value.nbytes)
        return cla.Array(queue, value.shape, value.dtype, data=sub,
                         strides=value.strides)
    return value.copy(queue=queue)


#: pass numpy inputs to the kernels in place, without a copy, on devices
#: that share the host's memory (see :func:`_share_host_arrays`); False
#: copies them as on any other device
ZERO_COPY_INPUTS = True

#: device -> whether it shares the host's memory
_UNIFIED: dict[cl.Device, bool] = {}


def _shares_host_memory(device: cl.Device) -> bool:
    unified = _UNIFIED.get(device)
    if unified is None:
        try:
            unified = bool(device.host_unified_memory)
        except cl.Error:  # (deprecated in OpenCL 2.0: may be unsupported)
            unified = False
        _UNIFIED[device] = unified
    return unified


#: alignment (bytes) of the host memory of outputs: that of OpenCL's
#: widest type, as devices align their own buffers (mem_base_addr_align)
_HOST_ALIGNMENT = 128

#: on devices that share the host's memory, let the kernels write numpy
#: results in place (fresh host arrays the device writes through
#: ``CL_MEM_USE_HOST_PTR`` buffers) instead of copying device buffers back
ZERO_COPY_OUTPUTS = True


#: the byte :func:`poisoning_allocations` fills new buffers with: NaN in
#: every float dtype, -1 in every signed integer dtype
POISON_BYTE = 0xFF


def poisoning_allocations() -> bool:
    """Whether ``FTLAZY_POISON_ALLOCATIONS=1`` is set: then every buffer a
    compiled program allocates for its outputs and global temporaries is
    filled with :data:`POISON_BYTE` first, so that a kernel reading memory
    nothing wrote returns NaN or -1 rather than whatever an earlier call
    left in the memory pool (a check for tests; it costs a fill per
    buffer)."""
    return os.environ.get("FTLAZY_POISON_ALLOCATIONS", "0") == "1"


class _PoisoningAllocator:
    """A memory pool's allocations, each filled with :data:`POISON_BYTE` on
    *queue* before it is returned (see :func:`poisoning_allocations`)."""

    def __init__(self, pool: Any, queue: cl.CommandQueue) -> None:
        self.pool = pool
        self.queue = queue

    def __call__(self, nbytes: int) -> Any:
        buf = self.pool(nbytes)
        if nbytes:
            cl.enqueue_fill_buffer(self.queue, buf, np.uint8(POISON_BYTE), 0, nbytes)
        return buf


def _aligned_empty(shape: int | tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    """``np.empty(shape, dtype)`` at an address that is a multiple of
    :data:`_HOST_ALIGNMENT`."""
    dtype = np.dtype(dtype)
    if isinstance(shape, (int, np.integer)):
        shape = (int(shape),)
    nbytes = math.prod(shape) * dtype.itemsize
    raw = np.empty(nbytes + _HOST_ALIGNMENT, np.uint8)
    start = -raw.ctypes.data % _HOST_ALIGNMENT
    return raw[start:start + nbytes].view(dtype).reshape(shape)


def _check_context(value: Any, queue: cl.CommandQueue, what: str) -> None:
    """:class:`ValueError` naming *what* if *value* is a device array of
    another OpenCL context than *queue*'s (its buffers cannot be read
    there)."""
    if isinstance(value, cla.Array) and value.context != queue.context:
        def names(context: cl.Context) -> str:
            return ", ".join(d.name.strip() for d in context.devices)
        raise ValueError(
            f"{what} is a pyopencl array of another OpenCL context "
            f"({names(value.context)}) than the compiled program's "
            f"({names(queue.context)}): compile with ft.compile(..., "
            "queue=a queue of its context), or pass it as a numpy array "
            "(array.get())")


def _host_buffer(queue: cl.CommandQueue, value: np.ndarray, alignment: int,
                 writable: bool = False) -> cl.Buffer | None:
    """A buffer over *value*'s own host memory (``CL_MEM_USE_HOST_PTR``;
    read-only unless *writable*), or None where it cannot be: empty, not
    C-contiguous, or its address not a multiple of *alignment* bytes (the
    kernels' loads assume their element type's alignment: PoCL's code for a
    ``float8`` argument crashes on an address that is a multiple of 16 but
    not of 32). The buffer holds *value* (pyopencl keeps a view of it)
    while it lives."""
    if (value.size == 0 or not value.flags.c_contiguous
            or not value.flags.aligned or value.ctypes.data % alignment):
        return None
    mf = cl.mem_flags
    return cl.Buffer(queue.context, (mf.READ_WRITE if writable else mf.READ_ONLY)
                     | mf.USE_HOST_PTR, hostbuf=value)


# {{{ what a call derives from its inputs' shapes and dtypes alone

@dataclass(frozen=True)
class _Output:
    """An output argument's buffer in a call: shape and dtype as the kernel
    writes it (a 0-d result has one element, booleans are int8)."""

    arg: str
    shape: tuple[int, ...]
    dtype: np.dtype

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    @property
    def strides(self) -> tuple[int, ...]:
        strides, step = [], self.dtype.itemsize
        for n in reversed(self.shape):
            strides.append(step)
            step *= n
        return tuple(reversed(strides))


@dataclass(frozen=True)
class _CallLayout:
    """What a call of a :class:`BoundProgram` derives from the shapes,
    dtypes and types of its inputs and the values of its size parameters
    alone (see :func:`_layout_key`), every input validated: calls with
    inputs alike reuse it and check only what their values decide (the
    kernels' run-time checks, and for FractalTensors the offsets)."""

    #: canonical size parameter -> value (derived ones included)
    env: dict[str, int]
    #: (user name, canonical name) of the inputs the kernels read, packed
    #: ones included
    inputs: tuple[tuple[str, str], ...]
    #: the kernels' size arguments
    sizes: dict[str, int]
    outputs: tuple[_Output, ...]
    #: whether every output is empty (nothing to launch)
    empty: bool


#: layouts a program keeps (the most recent shapes a loop alternates over)
_LAYOUT_LIMIT = 32


def _layout_key(inputs: dict[str, Any]) -> tuple | None:
    """What a call's :class:`_CallLayout` depends on: each input's name,
    type, and shape and dtype (an array) or value (an integer, which may be
    a size parameter); None where an input is neither (a list: converted
    and checked at every call)."""
    key = []
    for name, value in inputs.items():
        kind = type(value)
        if kind is np.ndarray or kind is cla.Array:
            key.append((name, kind, value.shape, value.dtype))
        elif isinstance(value, (int, np.integer)) and not isinstance(
                value, (bool, np.bool_)):
            key.append((name, kind, int(value)))
        elif isinstance(value, (bool, float, complex)):
            key.append((name, kind))
        elif isinstance(value, (np.ndarray, np.generic, cla.Array)):
            key.append((name, kind, value.shape, value.dtype))
        else:
            return None
    return tuple(key)

# }}}


def _map_host_outputs(queue: cl.CommandQueue, evt: cl.Event,
                      host_outputs: dict[str, tuple[np.ndarray, cl.Buffer]]
                      ) -> None:
    """Make the numpy outputs that the kernels (done at *evt*) wrote in
    place current: map their buffers, the last map waiting for all (on a
    device that shares the memory, nothing is copied)."""
    last = len(host_outputs) - 1
    mapped = [(host, cl.enqueue_map_buffer(
        queue, buf, cl.map_flags.READ, 0, host.shape, host.dtype,
        wait_for=[evt], is_blocking=k == last)[0])
        for k, (host, buf) in enumerate(host_outputs.values())]
    for host, view in mapped:
        if view.ctypes.data != host.ctypes.data:
            host[...] = view
        view.base.release(queue)


class BoundProgram:
    """A compiled DAG, called as ``prg(queue, **inputs) -> (event, outputs)``;
    outputs are a one-element tuple for a single array, a dict for a
    :class:`~ftlazy.DictOfNamedArrays`. Numpy inputs give numpy outputs;
    :class:`pyopencl.array.Array` inputs give device arrays.

    On a device that shares the host's memory (``host_unified_memory``:
    PoCL's CPU device), numpy inputs are read in place, not copied, where
    they are C-contiguous and aligned for the kernel's loads (see
    :data:`ZERO_COPY_INPUTS`), and numpy outputs are written in place (see
    :data:`ZERO_COPY_OUTPUTS`); inputs are never written, and outputs are
    always fresh arrays.

    What a call derives from its inputs' shapes and dtypes (size
    parameters, checks of sizes and allocations, output shapes) is kept
    per program for the most recent kinds of inputs (see
    :class:`_CallLayout`); the kernels are enqueued by loopy's host code
    with buffers (see :class:`_Launcher`).

    .. attribute:: program

        The loopy translation unit.

    .. attribute:: timings

        :class:`StageTimings` of the compilation that produced it.
    """

    def __init__(self, canon: CanonicalDAG, artifact: CompiledArtifact,
                 from_cache: bool, context: cl.Context | None = None) -> None:
        self.canon = canon
        self.artifact = artifact
        self.from_cache = from_cache
        self.context = context
        self._pools: dict = {}
        self._layouts: dict[tuple, _CallLayout] = {}
        #: (queue, its memory pool, whether its device shares the host's
        #: memory, the launcher on its context) of the last call
        self._last_queue: tuple | None = None

    @property
    def program(self) -> lp.TranslationUnit:
        return self.artifact.t_unit

    @property
    def kernel(self) -> lp.LoopKernel:
        """The loopy kernel of :attr:`program`'s entry point (pytato's
        ``BoundProgram.kernel``)."""
        return self.artifact.t_unit.default_entrypoint

    @property
    def timings(self) -> StageTimings:
        return self.artifact.timings

    @property
    def plan(self) -> KernelPlan:
        """The :class:`~ftlazy.target.loopy.plan.KernelPlan` the kernel was
        emitted from: a strategy per stored array; ``print`` it."""
        return self.artifact.plan

    @property
    def source(self) -> str:
        """The generated OpenCL C source."""
        return "\n\n".join(source for source, _ in program_sources(
            self.artifact.t_unit, self.artifact.barrier_loop_build))

    def __repr__(self) -> str:
        from ftlazy.display import compiled_repr
        return compiled_repr(self)

    def _repr_html_(self) -> str:
        from ftlazy.display import compiled_html
        return compiled_html(self)

    def bind_to_context(self, context: cl.Context) -> BoundProgram:
        """This program with its executor prepared for *context*."""
        self.artifact.executor(context)
        return BoundProgram(self.canon, self.artifact, self.from_cache, context)

    def _allocator(self, queue: cl.CommandQueue) -> Any:
        pool = self._pools.get(queue.context)
        if pool is None:
            pool = cltools.MemoryPool(cltools.ImmediateAllocator(queue))
            if poisoning_allocations():
                pool = _PoisoningAllocator(pool, queue)
            self._pools[queue.context] = pool
        return pool

    def _queue_state(self, queue: cl.CommandQueue) -> tuple:
        """What a call on *queue* uses of it (see :attr:`_last_queue`),
        looked up once for successive calls on the same queue (pyopencl's
        objects compare slowly)."""
        state = self._last_queue
        if state is None or state[0] is not queue:
            state = self._last_queue = (
                queue, self._allocator(queue),
                _shares_host_memory(queue.device),
                self.artifact.launcher(queue.context))
        return state

    @cached_property
    def _kernel_args(self) -> frozenset[str]:
        return frozenset(a.name for a in self.artifact.t_unit.default_entrypoint.args)

    @cached_property
    def _unread_inputs(self) -> frozenset[str]:
        """The user's placeholders the kernel does not read (an array only
        a map's uncompiled output captures)."""
        read = self._kernel_args | self.artifact.packed_inputs
        return frozenset(user for user, name in self.canon.input_names.items()
                         if name not in read)

    def omittable_inputs(self, names: set[str]) -> frozenset[str]:
        """Those of the user's inputs *names* that a call may leave out:
        the kernel does not read them, and every size of their shapes it
        needs is told by the other inputs."""
        everything = set(self.canon.input_names)
        found = set()
        for name in set(names) & self._unread_inputs:
            kept, size_names = self._bound_inputs(everything - {name})
            node = next(n for n in self.canon.user_inputs if n.name == name)
            told = {s for n in kept if isinstance(n, Placeholder)
                    for c in n.shape for s in sh.size_param_names(c)}
            if all(s in told or s not in size_names
                   for c in node.shape for s in sh.size_param_names(c)):
                found.add(name)
        return frozenset(found)

    def _bound_inputs(self, given: set[str]) -> tuple[list[Array], list[str]]:
        """The inputs and size parameter names a call binds: as in the
        jagged programs, an input the kernel does not read may be left out
        (given, it is checked and ignored), and so may the sizes only such
        an input has."""
        canon = self.canon
        omitted = self._unread_inputs - given
        if not omitted or not given <= set(canon.input_names) | set(canon.size_names):
            # (an unknown input: the error lists every input)
            return canon.user_inputs, list(canon.size_names)
        kept = [n for n in canon.user_inputs if n.name not in omitted
                or not isinstance(n, Placeholder)]

        def sizes(nodes: list[Array]) -> set[str]:
            return {name for n in nodes if isinstance(n, Placeholder)
                    for c in n.shape for name in sh.size_param_names(c)}
        own = (sizes([n for n in canon.user_inputs if n not in kept])
               - sizes(kept) - given
               - {user for user, name in canon.size_names.items()
                  if name in self._kernel_args})
        return kept, [name for name in canon.size_names if name not in own]

    def _layout(self, queue: cl.CommandQueue, inputs: dict[str, Any]
                ) -> _CallLayout:
        """The :class:`_CallLayout` of a call on *queue* with *inputs*: kept
        from an earlier call with inputs alike, else computed (validating
        every input: errors are never kept, so bad inputs raise at every
        call)."""
        key = _layout_key(inputs)
        layout = self._layouts.get(key) if key is not None else None
        if layout is None:
            layout = self._new_layout(queue.device, inputs)
            if key is not None:
                if len(self._layouts) >= _LAYOUT_LIMIT:
                    self._layouts.pop(next(iter(self._layouts)))
                self._layouts[key] = layout
        return layout

    def _new_layout(self, device: cl.Device, inputs: dict[str, Any]
                    ) -> _CallLayout:
        """Validate user *inputs* and the sizes they imply (no negative
        shape, no max/min reduction over nothing, no buffer larger than the
        device allocates) and return the call's :class:`_CallLayout`."""
        canon = self.canon
        art = self.artifact
        checks = art.checks
        user_inputs, size_names = self._bound_inputs(set(inputs))
        env, arrays = bind_inputs(user_inputs, inputs, size_names)
        canon_env = {canon.size_names[k]: v for k, v in env.items()
                     if k in canon.size_names}
        if checks.sizes.shapes or checks.sizes.extrema:
            checks.sizes.check(canon_env, {v: k for k, v in
                                           canon.size_names.items()})
        canon_env.update(derived_sizes(checks.derived, canon_env))
        _check_allocations(self, device, canon_env, arrays)
        read = self._kernel_args | art.packed_inputs
        outputs = tuple(
            _Output(o.name, sh.evaluate_shape(o.shape, canon_env) or (1,),
                    art.output_dtypes[o.name]) for o in art.outputs)
        return _CallLayout(
            canon_env,
            tuple((user, canon.input_names[user]) for user in arrays
                  if canon.input_names[user] in read),
            {name: value for name, value in canon_env.items()
             if name in self._kernel_args},
            outputs,
            all(0 in sh.evaluate_shape(o.shape, canon_env)
                for o in art.outputs))

    def _kernel_values(self, queue: cl.CommandQueue, layout: _CallLayout,
                       inputs: dict[str, Any]) -> dict[str, Any]:
        """The array arguments of the kernels (numpy or device arrays in
        the kernel's form, packs assembled) by argument name."""
        packed = self.artifact.packed_inputs
        values: dict[str, Any] = {}
        for user, name in layout.inputs:
            value = inputs[user]
            if not hasattr(value, "dtype"):
                value = np.asarray(value)
            if isinstance(value, np.ndarray) and not value.dtype.isnative:
                # (the binding accepted the other byte order)
                value = value.astype(value.dtype.newbyteorder("="))
            _check_context(value, queue, f"input {user!r}")
            if name in packed:
                values[name] = value
                continue
            if isinstance(value, cla.Array) and not value.flags.c_contiguous:
                raise ValueError(
                    f"input {user!r} is a non-contiguous device array "
                    f"(strides {value.strides}), which the kernels cannot "
                    "read; pass a contiguous one")
            values[name] = _to_kernel_form(value, queue)
        for name, data in self.canon.data.items():
            if name in self._kernel_args:
                _check_context(data, queue, "an array captured by "
                               "ft.make_data_wrapper")
                values[name] = _to_kernel_form(data, queue)
        for pack, members in self.artifact.packs.items():
            values[pack] = _pack([values.pop(name) for name, _, _ in members],
                                 queue)
        return values

    def _input_buffers(self, queue: cl.CommandQueue, values: dict[str, Any],
                       allocator: Any, unified: bool
                       ) -> tuple[dict[str, Any], list, bool]:
        """Buffers of the array arguments *values*, the events of device
        arrays among them, and whether a numpy array is read in place: on a
        device that shares the host's memory (CPU devices such as PoCL's),
        numpy arrays are wrapped, not copied to a device buffer (see
        :data:`ZERO_COPY_INPUTS`; kernels never write their inputs, and
        the buffers are read-only). *unified*: whether the device shares
        the host's memory."""
        art = self.artifact
        share = ZERO_COPY_INPUTS and unified
        buffers: dict[str, Any] = {}
        events: list = []
        shared = False
        for name, value in values.items():
            if isinstance(value, np.ndarray):
                buf = None
                if share:
                    lanes = art.vector_width if name in art.vector_args else 1
                    buf = _host_buffer(queue, value, value.dtype.itemsize * lanes)
                    shared = shared or buf is not None
                if buf is None:
                    buf = cla.to_device(queue, value, allocator=allocator).base_data
                buffers[name] = buf
            else:
                events.extend(value.events)
                buffers[name] = value.base_data
        return buffers, events, shared

    def _output_buffers(self, queue: cl.CommandQueue, layout: _CallLayout,
                        out_host: bool, allocator: Any, unified: bool
                        ) -> tuple[dict[str, Any], dict, dict]:
        """Buffers of the output arguments, the numpy outputs that the
        kernels write in place (with their buffers; see
        :data:`ZERO_COPY_OUTPUTS`) and the device arrays of the others."""
        in_place = out_host and ZERO_COPY_OUTPUTS and unified
        buffers: dict[str, Any] = {}
        host: dict[str, tuple[np.ndarray, cl.Buffer]] = {}
        device: dict[str, cla.Array] = {}
        for out in layout.outputs:
            if in_place:
                array = _aligned_empty(out.shape, out.dtype)
                if poisoning_allocations():
                    array.view(np.uint8).fill(POISON_BYTE)
                buf = _host_buffer(queue, array, _HOST_ALIGNMENT, writable=True)
                if buf is not None:
                    host[out.arg] = (array, buf)
                    buffers[out.arg] = buf
                    continue
            size = out.size
            dev = cla.Array(None, out.shape, out.dtype, strides=out.strides,
                            data=allocator(size * out.dtype.itemsize),
                            allocator=allocator, _fast=True, _size=size,
                            _context=queue.context, _queue=queue)
            device[out.arg] = dev
            buffers[out.arg] = dev.base_data
        return buffers, host, device

    def __call__(self, queue: cl.CommandQueue, /, **inputs: Any
                 ) -> tuple[Any, Any]:
        # (positional-only: inputs may be named "queue" or "self")
        if not isinstance(queue, cl.CommandQueue):
            raise TypeError(f"a program from ft.generate_loopy is called with "
                            f"a pyopencl CommandQueue first, got "
                            f"{type(queue).__name__} {queue!r}")
        return self._run(queue, inputs)

    def _run(self, queue: cl.CommandQueue, inputs: dict[str, Any],
             out_host: bool | None = None) -> tuple[Any, Any]:
        """A call (see the class docs); *out_host* True asks for numpy
        outputs whatever the inputs are."""
        art = self.artifact
        layout = self._layout(queue, inputs)
        values = self._kernel_values(queue, layout, inputs)
        if out_host is None:
            out_host = not any(isinstance(v, cla.Array) for v in values.values())
        if layout.empty:
            results = {o.name: self._empty(o, layout.env, queue, out_host)
                       for o in art.outputs}
            evt = None
        else:
            _, allocator, unified, launcher = self._queue_state(queue)
            args, events, shared = self._input_buffers(
                queue, values, allocator, unified)
            outputs, host, device = self._output_buffers(
                queue, layout, out_host, allocator, unified)
            args.update(outputs)
            args.update(layout.sizes)
            evt = launcher(queue, allocator, events or None, args)
            for dev in device.values():
                dev.add_event(evt)
            if host:
                _map_host_outputs(queue, evt, host)
            elif shared and not out_host:
                # the kernels read the host memory of numpy inputs, which
                # this call's buffers keep alive only until it returns:
                # device results wait for them
                evt.wait()
            results = {name: array for name, (array, _) in host.items()}
            results.update((name, dev.get() if out_host else dev)
                           for name, dev in device.items())
        self._check(results, layout.env)
        outputs = {}
        returned = set()
        for key, arg in art.user_outputs:
            value = self._from_kernel_form(results[arg], arg)
            if arg in returned:
                # (two names of one computed array: each its own buffer,
                # as numpy's results are)
                value = value.copy()
            returned.add(arg)
            outputs[key] = value
        if list(outputs) == [None]:
            return evt, (outputs[None],)
        return evt, outputs

    def _empty(self, spec: ArgSpec, env: dict, queue, out_host: bool) -> Any:
        shape = sh.evaluate_shape(spec.shape, env)
        if out_host:
            return np.empty(shape, spec.dtype)
        return cla.empty(queue, shape, spec.dtype)

    def _from_kernel_form(self, value: Any, arg: str) -> Any:
        spec = self.artifact.output_specs[arg]
        if arg in self.artifact.vector_args:
            value = value.reshape(-1)
        if spec.dtype == np.bool_ and value.dtype != np.bool_:
            value = value.view(np.bool_)
        if not spec.shape and value.shape != ():
            value = value.reshape(())
        return value

    def _check(self, results: dict, env: dict[str, int]) -> None:
        """Raise the error of a run-time check that the kernel reports as
        failed (an index out of range, a negative integer exponent)."""
        if self.artifact.checks.kernel:
            self.artifact.checks.raise_failed(results, env)


def _is_check_key(key: Any) -> bool:
    """Whether *key* of :attr:`CompiledArtifact.output_args` names a
    run-time check's output rather than a user's."""
    return (isinstance(key, tuple) and len(key) == 2
            and key[0] in ("_ft_check", "_ft_check_value"))


#: device -> its max_mem_alloc_size
_MAX_ALLOC: dict[cl.Device, int] = {}


def _extents(shape: Any) -> tuple[Any, ...]:
    """A buffer's extents in a form quick to evaluate: ints, affine forms
    of size parameters, or (products of them) pymbolic expressions."""
    result: list[Any] = []
    for c in shape:
        if isinstance(c, (int, np.integer)):
            result.append(int(c))
            continue
        try:
            result.append(sh.to_affine(c))
        except (sh.NonAffineError, TypeError):
            result.append(c)
    return tuple(result)


def _extent(c: Any, env: dict[str, int]) -> int:
    """The value of an extent of :func:`_extents` for *env*."""
    if isinstance(c, int):
        return c
    if isinstance(c, sh.AffineForm):
        return c.const + sum(v * env[k] for k, v in c.coeffs.items())
    return int(pymbolic.evaluate(c, env))


def _check_allocations(program: BoundProgram, device: cl.Device,
                       env: dict[str, int], arrays: dict[str, Any]) -> None:
    """Raise :class:`MemoryError` before anything is allocated when an
    input, output or intermediate array of a call of *program* needs a
    larger buffer than *device* allocates (``max_mem_alloc_size``)."""
    limit = _MAX_ALLOC.get(device)
    if limit is None:
        limit = _MAX_ALLOC[device] = int(device.max_mem_alloc_size)
    found = [(f"input {name!r}", _extents(a.shape), a.dtype.itemsize)
             for name, a in arrays.items()
             if isinstance(a, np.ndarray) and a.nbytes > limit]
    if not found and all(
            math.prod([_extent(c, env) for c in extents], start=factor) <= limit
            for factor, extents in program.artifact.allocation_bounds):
        return
    for what, shape, itemsize in found + program.artifact.allocations:
        values = tuple(_extent(c, env) for c in shape)
        nbytes = itemsize
        for v in values:
            nbytes *= v
        if nbytes > limit:
            raise MemoryError(
                f"{what} of shape {values} needs {nbytes} bytes, more than the "
                f"{limit} bytes that the OpenCL device "
                f"{device.name.strip()!r} allocates in one buffer "
                "(max_mem_alloc_size)")


def _profile(queue: cl.CommandQueue, options: Any) -> DeviceProfile:
    options = as_options(options)
    return device_profile(queue.device, queue).with_options(options)


def generate_loopy(result: Array | DictOfNamedArrays | Mapping[str, Array],
                   options: CodegenOptions | dict | lp.Options | None = None,
                   profile: DeviceProfile | None = None) -> BoundProgram:
    """Compile *result* to a loopy program bound for OpenCL execution.

    :arg result: an array, a :class:`~ftlazy.DictOfNamedArrays`, or a dict
        of names to arrays (as pytato accepts).
    :arg options: :class:`~ftlazy.CodegenOptions` (or a dict of its fields)
        pinning choices such as the vector width; or, as pytato accepts, a
        :class:`loopy.Options` (see
        :func:`~ftlazy.target.loopy.arguments.split_options`).
    :arg profile: the device profile to plan for (default: the probed
        profile of the default device); the generated OpenCL runs on any
        device, so a forced profile tests strategies this machine would not
        choose.
    :returns: a :class:`BoundProgram`; call it as ``prg(queue, **inputs)``.
    """
    options, write_code = split_options(options, result, "ft.generate_loopy")
    result = as_result(result, "ft.generate_loopy")
    if profile is None:
        profile = _profile(default_queue(), options)
    elif options is not None:
        profile = profile.with_options(as_options(options))
    canon = _canonical(result)
    artifact, cached = _artifact(canon, profile)
    program = BoundProgram(canon, artifact, cached)
    if write_code:
        print(program.source)
    return program


class CompiledFunction:
    """``f(**inputs)`` computes the compiled DAG on a queue and returns numpy
    arrays (a dict for a :class:`~ftlazy.DictOfNamedArrays`)."""

    def __init__(self, program: BoundProgram, queue: cl.CommandQueue,
                 single: bool) -> None:
        self.program = program
        self.queue = queue
        self.single = single

    @property
    def source(self) -> str:
        """The generated OpenCL C source."""
        return self.program.source

    @property
    def timings(self) -> StageTimings:
        return self.program.timings

    @property
    def from_cache(self) -> bool:
        """Whether the compiled program came from the cache."""
        return self.program.from_cache

    @property
    def host_evaluated(self) -> tuple[str, ...]:
        """The loops that run on the host at each call: none in a program
        without FractalTensors (see
        :attr:`ftlazy.target.loopy.jagged_program.JaggedCompiledFunction.host_evaluated`)."""
        return ()

    @property
    def plan(self) -> KernelPlan:
        """The plan the kernel was emitted from (see :class:`BoundProgram`)."""
        return self.program.plan

    def __repr__(self) -> str:
        from ftlazy.display import compiled_repr
        return compiled_repr(self)

    def _repr_html_(self) -> str:
        from ftlazy.display import compiled_html
        return compiled_html(self)

    def __call__(self, /, **inputs: Any) -> Any:
        # (positional-only: inputs may be named "self")
        _, outputs = self.program._run(self.queue, inputs, out_host=True)
        if self.single:
            (out,) = outputs
            return out.get() if isinstance(out, cla.Array) else out
        return {k: (v.get() if isinstance(v, cla.Array) else v)
                for k, v in outputs.items()}


def compile(result: Array | DictOfNamedArrays | Mapping[str, Array],
            queue: cl.CommandQueue | None = None,
            options: CodegenOptions | dict | None = None) -> CompiledFunction:
    """Compile *result* (an array, a :class:`~ftlazy.DictOfNamedArrays` or a
    dict of names to arrays) for *queue* (default: :func:`default_queue`).

    Structurally equal DAGs (up to input names and wrapped data) share one
    compiled program. Size parameters are inferred from input shapes.

    :arg options: :class:`~ftlazy.CodegenOptions` (or a dict of its fields),
        e.g. ``{"vector_width": 4}`` or ``{"vectorize": False}``; by default
        every choice comes from the device's probed profile."""
    if queue is not None and not isinstance(queue, cl.CommandQueue):
        raise TypeError("ft.compile: queue must be a pyopencl.CommandQueue, got "
                        f"{type(queue).__name__} {queue!r}")
    queue = queue or default_queue()
    result = as_result(result, "ft.compile")
    from ftlazy.target.loopy.jagged_program import (
        JaggedCompiledFunction, jagged_lowering)
    lowering = jagged_lowering(result)
    if lowering is not None:
        lowering.host_loops.warn()
        return JaggedCompiledFunction(
            result, lowering, lambda dense: _compile_dense(dense, queue, options))
    return _compile_dense(result, queue, options)


def _compile_dense(result: Array | DictOfNamedArrays, queue: cl.CommandQueue,
                   options: CodegenOptions | dict | None) -> CompiledFunction:
    warm_up_compiler(queue)
    profile = _profile(queue, options)
    canon = _canonical(result)
    artifact, cached = _artifact(canon, profile)
    prg = BoundProgram(canon, artifact, cached)
    artifact.executor(queue.context)
    return CompiledFunction(prg, queue, isinstance(result, Array))
