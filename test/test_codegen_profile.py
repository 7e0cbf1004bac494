# SPDX-License-Identifier: MIT
"""The device profile, plans, and recovery from a poisoned driver cache."""

from __future__ import annotations

import re

import numpy as np
import pyopencl as cl
import pytest

import ftlazy as ft
from ftlazy.target.loopy import program as program_module
from ftlazy.target.loopy.device import default_queue
from ftlazy.target.loopy.profile import (
    PROBED_FAMILIES, CodegenOptions, DeviceProfile, device_profile,
    profile_table, synthetic_profile)


def test_default_device_profile_is_probed_and_cached() -> None:
    dev = default_queue().device
    profile = device_profile(dev)
    assert profile is device_profile(dev)
    assert profile.kind == ("gpu" if dev.type & cl.device_type.GPU else "cpu")
    assert profile.max_mem_alloc_size == dev.max_mem_alloc_size
    if profile.kind == "cpu" and profile.builtin_widths:
        # every probed builtin passed at least as a scalar
        for dtype in ("float32", "float64"):
            for builtin in ("arith",) + PROBED_FAMILIES:
                assert profile.builtin_width(dtype, builtin) >= 1
        assert "exp" in profile_table(profile)


def test_float32_division_is_built_correctly_rounded_where_supported() -> None:
    """OpenCL lets ``/`` and ``sqrt`` on float32 be 2.5 and 3 ulp off
    unless a kernel is built with ``-cl-fp32-correctly-rounded-divide-sqrt``;
    NVIDIA's driver is, so ``ft.round`` and complex division differed from
    numpy in the last bit there. The profile records the device's support,
    and kernels ask for it where supported (and only there: other devices
    refuse the option)."""
    dev = default_queue().device
    supported = bool(dev.single_fp_config
                     & cl.device_fp_config.CORRECTLY_ROUNDED_DIVIDE_SQRT)
    assert device_profile(dev).correctly_rounded_divide_sqrt == supported
    x = ft.make_placeholder("x", (64,), np.float32)
    flag = "-cl-fp32-correctly-rounded-divide-sqrt"
    for can in (False, True):
        program = ft.generate_loopy(x / 3, profile=synthetic_profile(
            "gpu", 1, correctly_rounded_divide_sqrt=can))
        assert (flag in program.program.default_entrypoint.options.build_options
                ) == can
    # on this device, every quotient and root is numpy's, bit for bit
    rng = np.random.default_rng(5)
    a = (rng.standard_normal(100_000) * 100).astype(np.float32)
    b = (rng.standard_normal(100_000) * 10).astype(np.float32)
    y = ft.make_placeholder("y", (100_000,), np.float32)
    z = ft.make_placeholder("z", (100_000,), np.float32)
    got = ft.compile(ft.make_dict_of_named_arrays({
        "quotient": y / z, "root": ft.sqrt(ft.abs(y)),
        "rounded": ft.round(y, 1)}))(y=a, z=b)
    np.testing.assert_array_equal(got["quotient"], a / b)
    np.testing.assert_array_equal(got["root"], np.sqrt(np.abs(a)))
    np.testing.assert_array_equal(got["rounded"], np.round(a, 1))


def test_float32_quotients_by_constants_in_double_where_the_probe_fails(
        ) -> None:
    """NVIDIA divided float32 values by literals through the reciprocal
    (ft.round(x, 1) 1 ulp off numpy) whatever the build options; where the
    division probe finds that, GPU plans divide by constants in double and
    round to float32, which is numpy's quotient bit for bit (forced here on
    the suite's device)."""
    rng = np.random.default_rng(3)
    data = np.concatenate([np.arange(-3000, 3000) / np.float32(10),
                           rng.uniform(-1e4, 1e4, 20_000),
                           rng.standard_normal(1000) * 1e-30]).astype(np.float32)
    x = ft.make_placeholder("x", data.shape, np.float32)
    results = ft.make_dict_of_named_arrays({
        "round1": ft.round(x, 1), "round2": ft.round(x, 2),
        "round_tens": ft.round(x, -1), "third": x / 3, "by_point_3": x / 0.3,
        "reciprocal": 7 / x, "by_itself": x / (x + 1)})
    profile = synthetic_profile("gpu", 1, float32_constant_division_in_double=True)
    program = ft.generate_loopy(results, profile=profile)
    source = program.source
    assert "(double)" in source and "/ 10.0)" in source
    _, got = program(default_queue(), x=data)
    with np.errstate(divide="ignore", invalid="ignore"):
        want = {"round1": np.round(data, 1), "round2": np.round(data, 2),
                "round_tens": np.round(data, -1), "third": data / np.float32(3),
                "by_point_3": data / np.float32(0.3),
                "reciprocal": np.float32(7) / data,
                "by_itself": data / (data + np.float32(1))}
    for name, value in want.items():
        assert got[name].dtype == np.float32
        np.testing.assert_array_equal(got[name], value, err_msg=name)
    # without the field the quotients stay float32
    plain = ft.generate_loopy(results, profile=synthetic_profile("gpu", 1))
    assert "(double)" not in plain.source
    # the probe itself builds and runs on the suite's device
    from ftlazy.target.loopy.division_probe import _run_probe
    assert _run_probe(default_queue().device) in (True, False)


def test_the_division_probe_decides_the_profile(monkeypatch, tmp_path) -> None:
    import types

    from ftlazy.target.loopy import barrier_probe, division_probe
    from ftlazy.target.loopy import profile as profile_module
    monkeypatch.setenv("FTLAZY_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(division_probe, "_RESULTS", {})
    monkeypatch.setattr(profile_module, "_PROFILES", {})
    monkeypatch.setattr(barrier_probe, "barrier_loop_build", lambda d: "optimize")
    runs = []

    def probe(device):
        runs.append(device.name)
        return device.name != "reciprocal"
    monkeypatch.setattr(division_probe, "_run_probe", probe)

    def device(name, kind, doubles=1):
        return types.SimpleNamespace(
            platform=types.SimpleNamespace(name="stand-in", version="1"),
            name=name, driver_version="1", int_ptr=hash((name, kind, doubles)),
            type=kind, max_work_group_size=1024, local_mem_size=48 * 1024,
            max_mem_alloc_size=2**34, max_compute_units=4,
            single_fp_config=0, double_fp_config=doubles)
    gpu = cl.device_type.GPU
    assert device_profile(device("reciprocal", gpu)).float32_constant_division_in_double
    assert not device_profile(device("exact", gpu)).float32_constant_division_in_double
    # (no doubles: nothing to divide in)
    assert not device_profile(device("reciprocal", gpu, 0)
                              ).float32_constant_division_in_double
    # each device probed once, the answer cached on disk
    assert runs.count("reciprocal") == 1
    division_probe._RESULTS.clear()
    assert not division_probe.constant_division_exact(device("reciprocal", gpu))
    assert runs.count("reciprocal") == 1
    assert (tmp_path / "probe" / "constant_division.json").exists()


def test_profiles_are_cache_keys() -> None:
    """Programs planned for different profiles are different programs."""
    x = ft.make_placeholder("x", (64,), np.float64)
    cpu = ft.generate_loopy(x * 2, profile=synthetic_profile("cpu", 1))
    gpu = ft.generate_loopy(x * 2, profile=synthetic_profile("gpu", 1))
    assert cpu.artifact is not gpu.artifact
    assert cpu.plan.profile.kind == "cpu" and gpu.plan.profile.kind == "gpu"
    again = ft.generate_loopy(x * 2, profile=synthetic_profile("cpu", 1))
    assert again.artifact is cpu.artifact and again.from_cache


def test_plan_states_strategies_and_coalescing() -> None:
    """The plan says, per stored array, its strategy and which axis is on
    l.0; it prints as a readable table."""
    a = ft.make_placeholder("a", (64, 64), np.float64)
    b = ft.make_placeholder("b", (64, 64), np.float64)
    v = ft.make_placeholder("v", (64, 128), np.float64)
    d = ft.make_dict_of_named_arrays({
        "prod": a @ b, "rows": ft.sum(v, axis=1), "ew": ft.exp(a + b)})
    profile = synthetic_profile("cpu", 4)
    prg = ft.generate_loopy(d, profile=profile)
    by_shape = {(p.strategy, p.shape): p for p in prg.plan.arrays.values()}
    prod = by_shape["blocked_contraction", (64, 64)]
    assert prod.block == profile.matmul_block and prod.l0_axis is None
    rows = by_shape["split_reduction", (64,)]
    assert rows.block == (profile.reduction_lanes,) and rows.l0_axis == 0
    ew = by_shape["loop_nest", (64, 64)]
    assert ew.vector_width == 4 and ew.l0_axis == 0
    text = str(prg.plan)
    assert "blocked_contraction" in text and "split_reduction" in text
    pinned = ft.generate_loopy(d, profile=profile,
                               options=CodegenOptions(matmul_block=(4, 2)))
    assert {p.block for p in pinned.plan.arrays.values()
            if p.strategy == "blocked_contraction"} == {(4, 2)}


def test_gpu_plan_for_scans() -> None:
    xs = ft.make_placeholder("xs", (5, 32), np.float64)
    h0 = ft.make_placeholder("h0", (32,), np.float64)
    coupled = ft.scan(lambda h, x: h * 0.5 + x + ft.sum(h), xs, h0)
    prg = ft.generate_loopy(coupled, profile=synthetic_profile("gpu", 1))
    (scan_plan,) = prg.plan.scans.values()
    assert scan_plan.flavour == "whole_group"
    ys = ft.make_placeholder("ys", (5, 8, 32), np.float64)
    g0 = ft.make_placeholder("g0", (8, 32), np.float64)
    rows = ft.scan(lambda h, x: ft.tanh(h + x), ys, g0)
    for kind, single in (("gpu", False), ("cpu", True)):
        prg = ft.generate_loopy(rows, profile=synthetic_profile(kind, 1))
        (scan_plan,) = prg.plan.scans.values()
        assert scan_plan.flavour == "row_blocked"
        assert scan_plan.single_item_groups == single


def test_poisoned_driver_cache_is_purged_and_rebuilt(monkeypatch) -> None:
    """A build that fails the way PoCL fails on a half-written cache entry
    (left by a process that crashed in the driver) purges PoCL's kernel
    cache and builds again, instead of failing every later run."""
    from ftlazy.target.loopy import probe
    x = ft.make_placeholder("x", (7,), np.float64)
    y = ft.sqrt(x) * 3 - 1.25  # a DAG no other test compiles
    purged = []
    monkeypatch.setattr(probe, "purge_pocl_kernel_cache",
                        lambda: purged.append(True))
    original = type(ft.generate_loopy(y).artifact.t_unit.executor(
        default_queue().context))
    calls = []
    real_info = original.translation_unit_info

    def flaky_info(self, *args, **kwargs):
        calls.append(True)
        if len(calls) == 1:
            raise AttributeError("'' was not found as a program info attribute "
                                 "or as a kernel name")
        return real_info(self, *args, **kwargs)
    monkeypatch.setattr(original, "translation_unit_info", flaky_info)
    program_module._CACHE.clear()
    f = ft.compile(y)
    assert purged == [True] and len(calls) == 2
    np.testing.assert_allclose(f(x=np.arange(7.0)), np.sqrt(np.arange(7.0)) * 3 - 1.25)


def test_other_build_errors_are_not_retried(monkeypatch) -> None:
    from ftlazy.target.loopy import probe
    x = ft.make_placeholder("x", (7,), np.float64)
    y = ft.cbrt(x) + 0.75 if hasattr(ft, "cbrt") else ft.exp(x) - 0.75
    purged = []
    monkeypatch.setattr(probe, "purge_pocl_kernel_cache",
                        lambda: purged.append(True))
    original = type(ft.generate_loopy(y).artifact.t_unit.executor(
        default_queue().context))

    def broken(self, *args, **kwargs):
        raise cl.RuntimeError("clBuildProgram failed: BUILD_PROGRAM_FAILURE")
    monkeypatch.setattr(original, "translation_unit_info", broken)
    program_module._CACHE.clear()
    with pytest.raises(cl.RuntimeError, match="BUILD_PROGRAM_FAILURE"):
        ft.compile(y)
    assert purged == []


def test_synthetic_profile_with_options() -> None:
    profile = synthetic_profile("cpu", 8)
    assert profile.vector_width("float64", ["exp"]) == 8
    assert profile.with_options(CodegenOptions(vector_width=2)).vector_width(
        "float64", ["exp"]) == 2
    assert profile.with_options(CodegenOptions(vectorize=False)).vector_width(
        "float32") == 1
    assert DeviceProfile().vector_width("float64", ["exp"]) == 1


def test_tuning_measures_once_and_caches(monkeypatch, tmp_path) -> None:
    """The matmul block is timed on the device the first time, written to
    disk, and read back afterwards without measuring; FTLAZY_TUNE=0 keeps
    the profile's default."""
    from ftlazy.target.loopy import tuning
    monkeypatch.setenv("FTLAZY_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(tuning, "MATMUL_BLOCK_CANDIDATES", ((4, 4), (8, 8)))
    monkeypatch.setattr(tuning, "TUNING_MATMUL_SIZE", 64)
    queue = default_queue()
    base = synthetic_profile("cpu", 1)
    measured = []
    real_time = tuning._time_matmul_block

    def timed(queue, profile, block):
        measured.append(block)
        return real_time(queue, profile, block)
    monkeypatch.setattr(tuning, "_time_matmul_block", timed)
    tuned = tuning.tuned_profile(queue, base)
    assert sorted(measured) == [(4, 4), (8, 8)]
    assert tuned.matmul_block in ((4, 4), (8, 8))
    assert len(list(tmp_path.glob("probe/tuning-*.json"))) == 1

    def refuse(*args):
        raise AssertionError("measured again instead of reading the cache")
    monkeypatch.setattr(tuning, "_time_matmul_block", refuse)
    assert tuning.tuned_profile(queue, base).matmul_block == tuned.matmul_block
    monkeypatch.setenv("FTLAZY_TUNE", "0")
    assert tuning.tuned_profile(queue, base) is base


def test_a_failing_probe_falls_back_to_scalar_code(monkeypatch) -> None:
    """A probe that cannot run (say, its child cannot open the device)
    warns and leaves code generation scalar instead of failing compiles."""
    from ftlazy.target.loopy import profile as profile_module
    dev = default_queue().device
    if dev.type & cl.device_type.GPU:
        pytest.skip("GPUs are not probed")

    def broken(device, refresh=False):
        raise RuntimeError("probe child could not open the device")
    monkeypatch.setattr(profile_module, "probe_device", broken)
    monkeypatch.setattr(profile_module, "_PROFILES", {})
    monkeypatch.setenv("FTLAZY_PROBE", "1")
    with pytest.warns(RuntimeWarning, match="could not probe.*scalar code"):
        fallback = device_profile(dev)
    assert fallback.builtin_widths == () and fallback.vector_width("float64") == 1


@pytest.mark.parametrize("value", ["no", 0, 0.5])
def test_sort_ragged_rows_takes_a_bool(value) -> None:
    with pytest.raises(TypeError, match=re.escape(
            "CodegenOptions: sort_ragged_rows must be True, False or None, "
            f"got {value!r}")):
        ft.CodegenOptions(sort_ragged_rows=value)
    with pytest.raises(TypeError, match="sort_ragged_rows must be True"):
        ft.compile(ft.make_placeholder("x", (3,), np.float64) * 2,
                   options={"sort_ragged_rows": value})
