# SPDX-License-Identifier: MIT
"""Installation: a plain ``pip install ftlazy`` brings an OpenCL driver, a
machine without one gets a clear error, and compiling prints nothing."""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import pathlib
import platform
import subprocess
import sys
import textwrap

import pyopencl as cl
import pytest
from packaging.requirements import Requirement

import ftlazy
from ftlazy.target.loopy import device


def _fresh_default_queue() -> cl.CommandQueue:
    """What ``default_queue`` builds, without its per-process cache."""
    return device._make_default_queue.__wrapped__()


def test_install_requires_pocl_on_linux_x86_64() -> None:
    """PoCL is the default device of a machine with no GPU driver, so the
    plain install must pull it (``pyopencl[pocl]``) where its wheels exist."""
    try:
        requires = importlib.metadata.requires("ftlazy")
    except importlib.metadata.PackageNotFoundError:
        pytest.skip("ftlazy is not installed (run from a source tree)")
    env = {"platform_system": "Linux", "platform_machine": "x86_64",
           "sys_platform": "linux", "extra": ""}
    pulled = [Requirement(r) for r in requires or []]
    pulled = [r for r in pulled if r.marker is None or r.marker.evaluate(env)]
    assert any(r.name == "pyopencl" and "pocl" in r.extras for r in pulled), (
        f"ftlazy's install requirements {requires} do not pull PoCL on Linux "
        "x86_64 (reinstall ftlazy if setup.py changed since)")


@pytest.mark.skipif(
    platform.system() != "Linux" or platform.machine() != "x86_64",
    reason="pocl-binary-distribution has wheels for Linux x86_64 only")
def test_installed_driver_gives_a_platform() -> None:
    try:
        importlib.metadata.distribution("ftlazy")
    except importlib.metadata.PackageNotFoundError:
        pytest.skip("ftlazy is not installed (run from a source tree, "
                    "whose OpenCL driver is whatever the machine has)")
    assert importlib.util.find_spec("pocl_binary_distribution") is not None
    assert any("portable computing language" in p.name.lower()
               for p in device._get_platforms())


def test_no_platform_gives_a_clear_error(monkeypatch) -> None:
    """Without any driver the ICD loader makes clGetPlatformIDs fail with
    PLATFORM_NOT_FOUND_KHR instead of returning no platform; ftlazy says
    what to install instead of passing pyopencl's LogicError on."""
    def no_platform():
        raise cl.LogicError("clGetPlatformIDs", -1001,
                            "PLATFORM_NOT_FOUND_KHR")

    monkeypatch.delenv("PYOPENCL_CTX", raising=False)
    monkeypatch.setattr(cl, "get_platforms", no_platform)
    with pytest.raises(RuntimeError, match="no OpenCL platform found") as info:
        _fresh_default_queue()
    assert not isinstance(info.value, cl.Error)
    assert "pyopencl[pocl]" in str(info.value)


def test_empty_platform_list_gives_a_clear_error(monkeypatch) -> None:
    monkeypatch.delenv("PYOPENCL_CTX", raising=False)
    monkeypatch.setattr(cl, "get_platforms", lambda: [])
    with pytest.raises(RuntimeError, match="no OpenCL platform found"):
        _fresh_default_queue()


@pytest.mark.parametrize("spec", ["99", "0:99", "no-such-platform"])
def test_absent_pyopencl_ctx_gives_a_clear_error(monkeypatch, spec) -> None:
    monkeypatch.setenv("PYOPENCL_CTX", spec)
    with pytest.raises(RuntimeError,
                       match=f"PYOPENCL_CTX='{spec}' selects no OpenCL "
                             "device") as info:
        _fresh_default_queue()
    # it lists what PYOPENCL_CTX may select instead
    assert "platform 0:" in str(info.value)


def _run_fresh(code: str, tmp_path) -> subprocess.CompletedProcess:
    """*code* in a fresh interpreter with empty PoCL and pyopencl caches, so
    that every kernel goes through the compiler; ftlazy's device probe is
    read from its usual cache (probing again costs about 30 s and prints
    nothing either: its children's output is captured)."""
    from ftlazy.target.loopy.probe import probe_cache_dir
    env = dict(os.environ, POCL_KERNEL_CACHE="0",
               XDG_CACHE_HOME=str(tmp_path / "cache"),
               FTLAZY_CACHE_DIR=str(probe_cache_dir().parent))
    # the ftlazy under test, wherever it is imported from
    env["PYTHONPATH"] = os.pathsep.join(
        [str(pathlib.Path(ftlazy.__file__).parent.parent)]
        + [p for p in [os.environ.get("PYTHONPATH")] if p])
    # the user's default: not CI's PYOPENCL_COMPILER_OUTPUT=0
    env.pop("PYOPENCL_COMPILER_OUTPUT", None)
    env.pop("POCL_EXTRA_BUILD_FLAGS", None)
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)],
                          cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=300, check=False)


#: a kernel that clang warns about ("expression result unused")
_WARNING_SOURCE = ("__kernel void warns(__global int *out) "
                   "{ out[0] = 1; 1 + 1; }")


def test_compiling_prints_nothing_on_stderr(tmp_path) -> None:
    """PoCL's clang writes ``1 warning generated.`` to file descriptor 2
    when a kernel it builds has a warning, whatever pyopencl's settings (so
    did NVIDIA's compiler on an H100); ftlazy turns the generated code's
    warnings off: with ``-w`` in its build options on every device, and on
    PoCL for every program of the process."""
    proc = _run_fresh(f"""
        import numpy as np
        import pyopencl as cl
        import ftlazy as ft
        from ftlazy.target.loopy.device import default_queue, quiet_build_options

        x = ft.make_placeholder("x", (10,), np.float64)
        print(ft.compile(x * 2)(x=np.ones(10)).sum())
        # a program with a clang warning, built as ftlazy builds its own
        context = default_queue().context
        cl.Program(context, {_WARNING_SOURCE!r}).build(
            options=quiet_build_options())
        if "portable computing language" in context.devices[0].platform.name.lower():
            cl.Program(context, {_WARNING_SOURCE!r}).build()
        print("built")
        """, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["20.0", "built"]
    assert proc.stderr == ""


def test_build_errors_are_still_reported(tmp_path) -> None:
    proc = _run_fresh("""
        import pyopencl as cl
        import ftlazy as ft
        from ftlazy.target.loopy.device import default_queue

        try:
            cl.Program(default_queue().context,
                       "__kernel void broken(__global int *out) "
                       "{ out[0] = undeclared_name; }").build()
        except cl.RuntimeError as err:
            print("raised:", err)
        """, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "raised:" in proc.stdout
    assert "undeclared_name" in proc.stdout


def test_a_successful_build_with_a_log_raises_no_warning(monkeypatch) -> None:
    """NVIDIA's compiler logs a note for programs of several kernels
    whatever ``-w`` says; pyopencl repeats a non-empty log as a
    CompilerWarning, which failed callers that turn warnings into errors.
    ftlazy's own builds keep it quiet unless PYOPENCL_COMPILER_OUTPUT=1
    asks for the compiler's output (a driver that logs is simulated)."""
    import warnings

    import numpy as np

    original = cl.Program.build

    def logging_build(self, *args, **kwargs):
        warnings.warn("Non-empty compiler output encountered (simulated)",
                      cl.CompilerWarning, stacklevel=2)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(cl.Program, "build", logging_build)
    monkeypatch.delenv("PYOPENCL_COMPILER_OUTPUT", raising=False)
    x = ftlazy.make_placeholder("x", (7,), np.float64)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        # (constants no other test uses: a fresh build)
        got = ftlazy.compile(x * 2.718281 + 0.577215)(x=np.ones(7))
    np.testing.assert_allclose(got, np.full(7, 2.718281 + 0.577215))
    monkeypatch.setenv("PYOPENCL_COMPILER_OUTPUT", "1")
    with pytest.warns(cl.CompilerWarning, match="simulated"):
        ftlazy.compile(x * 3.141592 - 1.414213)(x=np.ones(7))
