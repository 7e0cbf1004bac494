# SPDX-License-Identifier: MIT
"""The device probe (:mod:`ftlazy.target.loopy.probe`): results from child
processes, crashes and wrong values in them, and the caches.

Fresh probes here are cut to width 1 (``FTLAZY_PROBE_WIDTHS``) and write to
a temporary cache; the test of the real probe reads (or fills) the user's
cache, as ``ft.compile`` does."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from ftlazy.target.loopy import probe

ALL = (*probe.PROBED_BUILTINS, probe.ARITH, probe.LANES)


@pytest.fixture
def device(cl_queue):
    """The default device."""
    return cl_queue.device


@pytest.fixture
def no_hooks(monkeypatch):
    """An environment without the probe's test hooks and an empty
    in-process cache."""
    for var in (probe._CRASH_HOOK, probe._CORRUPT_HOOK, probe._HANG_HOOK,
                probe._WIDTHS_HOOK):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setattr(probe, "_RESULTS", {})


@pytest.fixture
def fresh(no_hooks, monkeypatch, tmp_path):
    """A probe of width 1 only, into an empty cache directory: the cache
    directory."""
    monkeypatch.setenv("FTLAZY_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv(probe._WIDTHS_HOOK, "1")
    return tmp_path / "probe"


def _dtype(device) -> str:
    """float64 where the device has it (the dtype drivers get wrong most)."""
    return "float64" if probe._has_fp64(device) else "float32"


def test_cached_probe_of_default_device(device, no_hooks):
    result = probe.probe_device(device)
    assert isinstance(result, probe.ProbeResult)
    assert result.device_key.split(" | ")[1] == device.name
    dtypes = probe.PROBE_DTYPES if probe._has_fp64(device) else ("float32",)
    for dtype in dtypes:
        assert result.widest(dtype) >= 1
        for name in ALL:
            assert 1 in result.passing_widths[dtype][name], (
                dtype, name, result.failures.get((dtype, name, 1)))
    # the second call in a process is the in-process cache
    again = probe.probe_device(device)
    assert again.from_cache and again.passing_widths == result.passing_widths


def test_fresh_probe_writes_one_file_and_is_then_loaded(device, fresh,
                                                        monkeypatch):
    result = probe.probe_device(device)
    assert not result.from_cache and result.seconds > 0
    files = list(fresh.glob("*.json"))
    assert len(files) == 1
    assert json.loads(files[0].read_text())["device_key"] == result.device_key
    assert all(1 in result.passing_widths["float32"][name] for name in ALL)
    assert result.failures["float32", "exp", 2].startswith("not probed")

    def no_children(*args, **kwargs):
        raise AssertionError("the probe started a process")

    monkeypatch.setattr(subprocess, "Popen", no_children)
    monkeypatch.setattr(probe, "_RESULTS", {})
    loaded = probe.probe_device(device)
    assert loaded.from_cache
    assert loaded.passing_widths == result.passing_widths
    assert loaded.failures == result.failures
    assert loaded.seconds == result.seconds
    assert probe.probe_device(device).from_cache
    with pytest.raises(AssertionError, match="started a process"):
        probe.probe_device(device, refresh=True)


def test_crash_in_child_is_recorded_and_bisected(device, fresh, monkeypatch):
    dtype = _dtype(device)
    monkeypatch.setenv(probe._CRASH_HOOK, f"{dtype}:1:exp")
    result = probe.probe_device(device)
    # this process survived the child's abort; the case in flight is
    # recorded, and the other builtins were each found to pass on their own
    assert result.failures[dtype, "exp", 1].startswith("crashed (")
    assert 1 not in result.passing_widths[dtype]["exp"]
    for name in ALL:
        if name != "exp":
            assert 1 in result.passing_widths[dtype][name], (
                name, result.failures.get((dtype, name, 1)))
    assert result.widest(dtype, ["sin"]) == 1
    assert "test hooks" in result.device_key


def test_wrong_values_are_attributed_to_their_builtin(device, fresh,
                                                      monkeypatch, tmp_path):
    monkeypatch.setenv(probe._CORRUPT_HOOK, "float32:1:sin")
    # and a cache directory that cannot be made: the probe warns and works
    (tmp_path / "a file").write_text("")
    monkeypatch.setenv("FTLAZY_CACHE_DIR", str(tmp_path / "a file"))
    with pytest.warns(UserWarning, match="probe cache"):
        result = probe.probe_device(device)
    assert result.failures["float32", "sin", 1].startswith("wrong values")
    for name in ALL:
        if name != "sin":
            assert 1 in result.passing_widths["float32"][name], name


def test_hung_child_is_killed(device, no_hooks, monkeypatch, tmp_path):
    monkeypatch.setenv(probe._HANG_HOOK, "float32:1:fabs")
    target = probe._Target.of(device)
    env = probe._child_env(str(tmp_path))
    child = probe._Child(target, env)
    child.wait_ready(60)
    assert child.run("float32", 1, "fabs", timeout=1.0) == "timed out (1 s)"
    assert child.proc.poll() is not None
    child = probe._Child(target, env)
    child.wait_ready(60)
    outcome = child.run("float32", 1, "sqrt", timeout=60)
    child.close()
    assert outcome["status"] == "ok" and outcome["errors"]["sqrt"] < 1e-5


def test_child_checks_the_device_names(device, no_hooks, tmp_path):
    target = probe._Target.of(device)
    wrong = probe._Target(target.platform_index, target.device_index,
                          target.platform_name, "not " + target.device_name,
                          target.fp64, target.key)
    child = probe._Child(wrong, probe._child_env(str(tmp_path)))
    with pytest.raises(RuntimeError, match="expected"):
        child.wait_ready(60)
    child.kill()


def test_key_names_driver_and_ftlazy_versions(no_hooks, monkeypatch):
    args = ("Portable Computing Language", "OpenCL 3.0 PoCL 3.0", "pthread-cpu",
            "3.0", "0.1.0")
    key = probe._device_key(*args)
    assert key == probe._device_key(*args)
    assert key.split(" | ")[1:3] == ["pthread-cpu", "3.0"]
    assert "0.1.0" in key
    for changed in (
            probe._device_key(*args[:3], "3.1", args[4]),
            probe._device_key(*args[:4], "0.2.0"),
            probe._device_key(args[0], "OpenCL 3.0 PoCL 4.0", *args[2:]),
            probe._device_key(args[0], args[1], "pthread-other", *args[3:])):
        assert changed != key
        assert probe._key_file_name(changed) != probe._key_file_name(key)
    monkeypatch.setenv(probe._CRASH_HOOK, "float64:8:exp")
    assert probe._device_key(*args) != key


def _result(passing: dict[str, set[int]], **failures: str) -> probe.ProbeResult:
    full = {name: {1, 2, 4, 8, 16} for name in ALL}
    full.update(passing)
    return probe._make_result("key", {"float32": full, "float64": full},
                              {("float64", name, 8): reason
                               for name, reason in failures.items()},
                              1.5, from_cache=False)


def test_widest_needs_every_narrower_width():
    result = _result({"exp": {1, 2, 4, 16}}, exp="crashed (signal 11)")
    assert result.widest("float64") == 4
    assert result.widest("float64", ["exp"]) == 4
    assert result.widest("float64", "exp") == 4
    assert result.widest("float64", ["sin", "fabs"]) == 16
    assert _result({"arith": {1, 2}}).widest("float64", ["sin"]) == 2
    assert _result({"exp": set()}).widest("float64", ["exp"]) == 1
    with pytest.raises(ValueError, match="expm1"):
        result.widest("float64", ["expm1"])
    with pytest.raises(ValueError, match="int32"):
        result.widest("int32")


def test_result_round_trips_through_json():
    result = _result({"exp": {1, 2, 4}}, exp="crashed (signal 11)")
    loaded = probe.ProbeResult.from_json(json.loads(json.dumps(result.to_json())))
    assert loaded == probe.ProbeResult(
        result.device_key, result.passing_widths, result.failures,
        result.seconds, from_cache=True)
    with pytest.raises(ValueError, match="schema"):
        probe.ProbeResult.from_json({**result.to_json(), "schema": -1})


def test_cache_directories(monkeypatch, tmp_path):
    for var in ("FTLAZY_CACHE_DIR", "XDG_CACHE_HOME", "POCL_CACHE_DIR",
                "POCL_KERNEL_CACHE"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    assert probe.probe_cache_dir() == tmp_path / ".cache" / "ftlazy" / "probe"
    assert probe.pocl_cache_dir() == tmp_path / ".cache" / "pocl" / "kcache"
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert probe.probe_cache_dir() == tmp_path / "xdg" / "ftlazy" / "probe"
    assert probe.pocl_cache_dir() == tmp_path / "xdg" / "pocl" / "kcache"
    monkeypatch.setenv("FTLAZY_CACHE_DIR", str(tmp_path / "ft"))
    assert probe.probe_cache_dir() == tmp_path / "ft" / "probe"
    monkeypatch.setenv("POCL_KERNEL_CACHE", "0")
    assert probe.pocl_cache_dir() is None
    monkeypatch.setenv("POCL_KERNEL_CACHE", "1")
    monkeypatch.setenv("POCL_CACHE_DIR", str(tmp_path / "pocl"))
    assert probe.pocl_cache_dir() == tmp_path / "pocl"


def test_purge_removes_only_pocl_entries(monkeypatch, tmp_path):
    monkeypatch.delenv("POCL_KERNEL_CACHE", raising=False)
    monkeypatch.setenv("POCL_CACHE_DIR", str(tmp_path))
    (tmp_path / "AB" / "CDEFGH").mkdir(parents=True)
    (tmp_path / "AB" / "CDEFGH" / "program.bc").write_bytes(b"half")
    (tmp_path / "tempfile_x1.cl").write_text("")
    (tmp_path / "_UNCACHED_x2").mkdir()
    (tmp_path / "notes.txt").write_text("mine")
    (tmp_path / "XY").mkdir()
    probe.purge_pocl_kernel_cache()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["XY", "notes.txt"]
    monkeypatch.setenv("POCL_CACHE_DIR", str(tmp_path / "missing"))
    probe.purge_pocl_kernel_cache()


def test_table_by_hand(device, no_hooks):
    """``python -m ftlazy.target.loopy.probe`` prints the (cached) probe."""
    probe.probe_device(device)
    out = subprocess.run([sys.executable, "-m", probe._MODULE],
                         capture_output=True, text=True, timeout=120, check=True)
    assert "loaded from cache" in out.stdout
    assert "float32" in out.stdout and "arith" in out.stdout


def test_lanes_family_fails_lanes_read_out_of_order(cl_queue, monkeypatch):
    """The lanes family reads each lane at a run-time index: right on this
    device at width 4, and a helper that reads them reversed (what a
    compiler getting ``v[k]`` wrong would do) is reported wrong."""
    import numpy as np
    right = probe._run_case(cl_queue.context, cl_queue, "float32", 4,
                            probe.LANES, set())
    assert right["status"] == "ok" and right["errors"][probe.LANES] < 1e-6

    def reversed_lanes(scalar, vec, width):
        return probe._lanes_helper(scalar, vec, width).replace(
            "a[k] * b[k]", f"a[{width - 1} - k] * b[k]")
    spec = probe._SPECS[probe.LANES]
    monkeypatch.setitem(probe._SPECS, probe.LANES,
                        probe._Family(spec.name, spec.domains, spec.outputs,
                                      reversed_lanes))
    wrong = probe._run_case(cl_queue.context, cl_queue, "float32", 4,
                            probe.LANES, set())
    assert wrong["status"] == "ok"
    assert wrong["errors"][probe.LANES] > 64 * float(np.finfo(np.float32).eps)


def test_small_lanes_next_to_a_large_argument_are_checked(cl_queue, monkeypatch):
    """Families with large arguments mix them into every vector: a builtin
    whose whole vector takes a wrong path when one lane is large (PoCL
    3.0's float32 sin at every width from 2) is reported wrong, while the
    domain's values alone would pass it; scalar code is not affected."""
    import numpy as np
    spec = probe._SPECS["sin"]
    x, _ = probe._inputs(("sin",), "float32")
    assert np.abs(x[1::2]).min() >= 1e5 and np.abs(x[0::2]).max() <= 10
    assert (np.abs(x[0::2]) < 0.008).any()
    # (a vector any() of a comparison is -1 per true lane, a scalar one 1)
    faulty = (("(any(fabs(a) > 1e4f) ? sin(a) * 8 : sin(a))", np.sin),)
    tolerance = 64 * float(np.finfo(np.float32).eps)

    def max_error(width, large):
        monkeypatch.setitem(probe._SPECS, "sin", probe._Family(
            spec.name, spec.domains, faulty, large=large))
        result = probe._run_case(cl_queue.context, cl_queue, "float32", width,
                                 "sin", set())
        assert result["status"] == "ok"
        return result["errors"]["sin"]
    assert max_error(4, spec.large) > tolerance
    assert max_error(1, spec.large) < tolerance
    assert max_error(4, ()) < tolerance


def test_an_overflow_to_the_references_infinity_is_exact():
    import numpy as np
    x, y = probe._inputs(("exp",), "float32")
    out = np.exp(x.astype(np.float64)).astype(np.float32)
    assert np.isinf(out).any()
    assert probe._max_rel_errors(("exp",), x, y, out)["exp"] < 1e-6
