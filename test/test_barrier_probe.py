# SPDX-License-Identifier: MIT
"""How kernels with barriers inside loops (whole-group scans) are built:
the probe that picks the build per device, its cache, and each build
forced through the profile (whichever this machine's probe picks)."""

from __future__ import annotations

import numpy as np
import pytest

import ftlazy as ft
import ftlazy.target.loopy.barrier_probe as bp
from ftlazy.target.loopy.profile import device_profile, synthetic_profile

#: the probe kernel with the carry slot as loopy writes ``t % 2``: the form
#: PoCL 3.0's optimizer miscompiled (every carry store dropped)
DIVISION_FORM = (bp.PROBE_SOURCE.replace("(t & 1)", "(t + -2 * (t / 2))")
                 .replace("(t + 1 & 1)", "(1 + t + -2 * ((1 + t) / 2))"))


def _needs_probe_device(queue):
    device = queue.device
    if device.max_work_group_size < 256 or not device.double_fp_config:
        pytest.skip("the probe kernel needs work groups of 256 and doubles")


def test_probe_answers_once_per_device(cl_queue):
    device = cl_queue.device
    first = bp.barrier_loop_build(device)
    assert first in bp.BARRIER_LOOP_BUILDS
    assert bp.barrier_loop_build(device) is first
    assert device_profile(device).barrier_loop_build == first


def test_the_chosen_build_and_the_last_resort_run_the_probe_kernel(cl_queue):
    _needs_probe_device(cl_queue)
    for build in {bp.barrier_loop_build(cl_queue.device), "separate"}:
        assert bp.run_probe_kernel(cl_queue, build, n=200, steps=9), build


@pytest.mark.parametrize("build", ["optnone", "separate"])
def test_the_fallbacks_build_the_miscompiled_form_correctly(cl_queue, build):
    # the optimizer is out of the way of the barrier loop either way
    _needs_probe_device(cl_queue)
    assert DIVISION_FORM != bp.PROBE_SOURCE
    assert bp.run_probe_kernel(cl_queue, build, DIVISION_FORM, n=7, steps=6)


@pytest.mark.parametrize("build", ["optnone", "separate"])
def test_the_fallbacks_run_the_nested_probe_kernel(cl_queue, build):
    # a scan nested in a scan's step: PoCL 3.0 miscompiles it optimized
    _needs_probe_device(cl_queue)
    for n in (1, 5, 200):
        assert bp.run_nested_probe_kernel(cl_queue, build, n), n


def test_the_nested_probe_kernel_decides_too(cl_queue, monkeypatch):
    # a build that runs the flat probe but not the nested one is not chosen
    _needs_probe_device(cl_queue)
    monkeypatch.setattr(bp, "run_nested_probe_kernel",
                        lambda queue, build, n=5: build == "separate")
    assert bp._choose(cl_queue.device) == ("separate", True)


def test_the_first_build_that_runs_correctly_is_chosen(cl_queue, monkeypatch):
    _needs_probe_device(cl_queue)
    device = cl_queue.device

    def runs(correct, raising=()):
        def run(queue, build, *args, **kwargs):
            if build in raising:
                raise RuntimeError("build failed")
            return build in correct
        return run
    monkeypatch.setattr(bp, "run_probe_kernel", runs({"optimize", "optnone"}))
    assert bp._choose(device) == ("optimize", True)
    monkeypatch.setattr(bp, "run_probe_kernel", runs({"optnone"}))
    assert bp._choose(device) == ("optnone", True)
    monkeypatch.setattr(bp, "run_probe_kernel", runs(set()))
    assert bp._choose(device) == ("separate", True)
    # a build that cannot build is not chosen, and the answer not cached
    monkeypatch.setattr(bp, "run_probe_kernel", runs({"optnone"}, {"optimize"}))
    assert bp._choose(device) == ("optnone", False)


def test_the_answer_is_cached_on_disk(cl_queue, tmp_path, monkeypatch):
    monkeypatch.setenv("FTLAZY_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(bp, "_RESULTS", {})
    device = cl_queue.device
    monkeypatch.setattr(bp, "_choose", lambda d: ("optnone", True))
    assert bp.barrier_loop_build(device) == "optnone"
    cache = tmp_path / "probe" / "barrier_loops.json"
    assert cache.exists()
    # a fresh process (empty memory cache) reads the file, not the device
    monkeypatch.setattr(bp, "_RESULTS", {})
    monkeypatch.setattr(bp, "_choose", lambda d: pytest.fail("probed again"))
    assert bp.barrier_loop_build(device) == "optnone"
    # a corrupt file is probed again, not trusted
    cache.write_text("not json")
    monkeypatch.setattr(bp, "_RESULTS", {})
    monkeypatch.setattr(bp, "_choose", lambda d: ("separate", True))
    assert bp.barrier_loop_build(device) == "separate"
    # an answer a failing build decided is kept in memory only
    cache.unlink()
    monkeypatch.setattr(bp, "_RESULTS", {})
    monkeypatch.setattr(bp, "_choose", lambda d: ("separate", False))
    assert bp.barrier_loop_build(device) == "separate"
    assert not cache.exists()


H = 8
T = ft.make_size_param("t")
X = ft.make_placeholder("x", (T, H), np.float64)
U = ft.make_placeholder("U", (H, H), np.float64)
#: a fold whose carry is coupled (a whole-group scan, barriers in its
#: loop) next to column sums over all steps (a kernel without; a GPU
#: matrix product would have them too: its local-memory tiles)
FOLD_AND_CONTRACTION = ft.make_dict_of_named_arrays({
    "fold": ft.fold(lambda h, r: ft.tanh(r + h @ U), X, ft.zeros(H)),
    "contraction": ft.sum(ft.exp(X) * 2, axis=0)})


def _program_builds(program, context):
    """(kernel names, whether built without the optimizer) of each OpenCL
    program the executor of *program* built."""
    import pyopencl as cl
    ex = program.artifact.executor(context)
    info = ex.translation_unit_info(ex.arg_to_dtype({}))
    builds = {}
    for name, kernel in vars(info.cl_kernels).items():
        prg = kernel.get_info(cl.kernel_info.PROGRAM)
        options = prg.get_build_info(context.devices[0],
                                     cl.program_build_info.OPTIONS)
        builds.setdefault(prg.int_ptr, (set(), options))[0].add(name)
    return sorted((sorted(names), bp.OPT_DISABLE in options.split())
                  for names, options in builds.values())


def test_cpu_folds_have_no_barrier_loops():
    # CPU plans run a whole-group fold in one work item, without barriers
    program = ft.generate_loopy(FOLD_AND_CONTRACTION, profile=synthetic_profile(
        "cpu", 1, barrier_loop_build="separate"))
    import loopy as lp
    linearized = lp.linearize(lp.preprocess_program(program.program))
    assert not bp.barrier_loop_kernels(linearized.default_entrypoint)
    assert bp.OPT_DISABLE not in program.source


@pytest.mark.parametrize("build", ["optnone", "separate"])
def test_each_build_scopes_itself_to_the_barrier_loops(cl_queue, build):
    profile = synthetic_profile("gpu", 1, barrier_loop_build=build)
    program = ft.generate_loopy(FOLD_AND_CONTRACTION, profile=profile)
    import loopy as lp
    linearized = lp.linearize(lp.preprocess_program(program.program))
    looping = bp.barrier_loop_kernels(linearized.default_entrypoint)
    builds = _program_builds(program, cl_queue.context)
    every = sorted(n for names, _ in builds for n in names)
    assert len(looping) == 1 and len(every) >= 2 and looping < set(every)
    if build == "optnone":
        # one optimized program, only the fold's kernel declared optnone
        assert builds == [(every, False)]
        assert program.source.count(bp.OPTNONE) == 1
    else:
        # the fold's kernel in a program of its own without the optimizer
        assert builds == sorted([(sorted(set(every) - looping), False),
                                 (sorted(looping), True)])
        assert program.source.count(f"built with {bp.OPT_DISABLE}") == 1
    rng = np.random.default_rng(3)
    for steps in (11, 1, 0):
        xv, uv = rng.standard_normal((steps, H)), rng.standard_normal((H, H)) / 3
        _, got = program(cl_queue, x=xv, U=uv)
        h = np.zeros(H)
        for row in xv:
            h = np.tanh(row + h @ uv)
        np.testing.assert_allclose(got["fold"], h, rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(got["contraction"],
                                   (np.exp(xv) * 2).sum(axis=0),
                                   rtol=1e-12, atol=1e-14)


def test_programs_without_barriers_in_loops_are_built_as_one():
    n = ft.make_size_param("n")
    x = ft.make_placeholder("x", (ft.make_size_param("t"), n), np.float64)
    # rows that evolve independently: one work item per group on CPUs, no
    # barriers in the loop
    batch = ft.scan(lambda h, row: ft.tanh(h * 0.5 + row), x, ft.zeros(n))
    for result, kind in [(ft.exp(x) + 1, "gpu"), (batch, "cpu")]:
        for build in bp.BARRIER_LOOP_BUILDS:
            program = ft.generate_loopy(result, profile=synthetic_profile(
                kind, 1, barrier_loop_build=build))
            (source, options), = bp.program_sources(program.program, build)
            assert options == [] and bp.OPTNONE not in source


def test_an_unknown_build_is_refused():
    with pytest.raises(ValueError, match="unknown barrier loop build 'fast'"):
        bp.program_sources(ft.generate_loopy(
            FOLD_AND_CONTRACTION, profile=synthetic_profile("gpu", 1)).program,
            "fast")
