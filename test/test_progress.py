# SPDX-License-Identifier: MIT
"""Progress reports of long compiles (ftlazy.progress): log records, the
notebook bar under a fake Jupyter kernel, silence for fast and cached
compiles, and the checks of ft.set_progress's arguments."""

from __future__ import annotations

import itertools
import logging
import sys
import time
import types

import numpy as np
import pytest

import ftlazy as ft
from ftlazy import progress
from ftlazy.target.loopy import program as program_module
from ftlazy.target.loopy.program import StageTimings

_fresh = itertools.count(1)


def fresh_dag() -> tuple[ft.Array, float]:
    """A DAG no earlier compile in this process has built (its constant is
    new), so that compiling it runs every stage."""
    c = 0.25 * next(_fresh) + 0.125
    x = ft.make_placeholder("x", (5,), np.float64)
    return 2 * x + c, c


@pytest.fixture(autouse=True)
def restore_settings():
    before = progress.progress_settings()
    yield
    ft.set_progress(before.mode, threshold=before.threshold)
    if progress._active is not None:
        progress._active.close()
        progress._active = None


@pytest.fixture
def records(caplog):
    caplog.set_level(logging.INFO, logger="ftlazy.compile")
    return lambda: [r.getMessage() for r in caplog.records
                    if r.name == "ftlazy.compile"]


def compile_and_check() -> ft.target.loopy.program.CompiledFunction:
    y, c = fresh_dag()
    f = ft.compile(y)
    xv = np.arange(5.0)
    np.testing.assert_allclose(f(x=xv), 2 * xv + c)
    return f


def test_every_stage_logged_past_threshold(records):
    ft.set_progress("auto", threshold=0)
    f = compile_and_check()
    assert not f.from_cache
    lines = records()
    labels = [label for _, label in progress.STAGES]
    assert len(lines) == len(labels) + 1
    for line, label in zip(lines, labels):
        assert line.startswith(f"ftlazy compile: {label} took ")
        assert line.endswith(" s")
    assert lines[-1].startswith("ftlazy compile: finished in ")
    assert "OpenCL build" in lines[-1]


def test_slow_stage_reported_with_default_threshold(records, monkeypatch):
    real = program_module.build_kernel

    def slow_build_kernel(*args, **kwargs):
        time.sleep(1.05)
        return real(*args, **kwargs)

    monkeypatch.setattr(program_module, "build_kernel", slow_build_kernel)
    ft.set_progress("auto", threshold=1.0)
    compile_and_check()
    lines = records()
    # the stage that crossed the second is logged with the one before it
    assert lines[0].startswith("ftlazy compile: DAG transforms took ")
    assert lines[1].startswith("ftlazy compile: loopy kernel creation took ")
    assert float(lines[1].split(" took ")[1].split()[0]) >= 1.0
    assert len(lines) == 5


def test_stages_logged_once_from_the_crossing():
    ft.set_progress("auto", threshold=1.0)
    timings = StageTimings(dag_transforms=0.6)
    seen = []
    handler = logging.Handler()
    handler.emit = lambda record: seen.append(record.getMessage())
    log = logging.getLogger("ftlazy.compile")
    log.addHandler(handler)
    old_level = log.level
    log.setLevel(logging.INFO)
    try:
        progress.report_stage(timings, "dag_transforms")
        assert seen == []
        timings.kernel_creation = 0.3
        progress.report_stage(timings, "kernel_creation")
        assert seen == []
        timings.scheduling = 0.2
        progress.report_stage(timings, "scheduling")
        assert seen == ["ftlazy compile: DAG transforms took 0.60 s",
                        "ftlazy compile: loopy kernel creation took 0.30 s",
                        "ftlazy compile: scheduling took 0.20 s"]
        timings.opencl_build = 0.1
        progress.report_stage(timings, "opencl_build")
        assert seen[3:] == [
            "ftlazy compile: OpenCL build took 0.10 s",
            f"ftlazy compile: finished in 1.20 s ({timings})"]
        assert progress._active is None
    finally:
        log.removeHandler(handler)
        log.setLevel(old_level)


@pytest.mark.parametrize("before_build, reported", [(0.55, True), (0.45, False)])
def test_reported_before_the_build_from_half_the_threshold(
        before_build, reported, monkeypatch):
    # (the OpenCL build is usually the longest stage: a bar that appears
    # only when it ends would come too late)
    shown = []

    class Recorder(progress._Bar):
        def update(self, done, text):
            shown.append((done, text))
    monkeypatch.setattr(progress, "_new_bar", lambda mode: Recorder())
    ft.set_progress(True, threshold=1.0)
    timings = StageTimings(dag_transforms=0.1)
    progress.report_stage(timings, "dag_transforms")
    timings.kernel_creation = 0.1
    progress.report_stage(timings, "kernel_creation")
    assert progress._active is None
    timings.scheduling = before_build - 0.2
    progress.report_stage(timings, "scheduling")
    assert (progress._active is not None) == reported
    assert shown == ([(3, f"OpenCL build... ({before_build:.1f} s so far)")]
                     if reported else [])
    timings.opencl_build = 0.05
    progress.report_stage(timings, "opencl_build")
    assert progress._active is None


def test_fast_compile_reports_nothing(records, capsys):
    ft.set_progress(True, threshold=600)
    compile_and_check()
    assert records() == []
    assert "ftlazy compile" not in capsys.readouterr().err


def test_cached_compile_runs_no_hook(records, monkeypatch):
    ft.set_progress("auto", threshold=0)
    y, _ = fresh_dag()
    ft.compile(y)
    assert records()
    calls = []
    monkeypatch.setattr(program_module, "report_stage",
                        lambda *args: calls.append(args))
    again = ft.compile(y)
    assert again.from_cache
    for _ in range(3):   # calls reuse the built kernels: no stage runs
        again(x=np.ones(5))
    assert calls == []


def test_false_reports_nothing(records, capsys):
    ft.set_progress(False, threshold=0)
    compile_and_check()
    assert records() == []
    assert "ftlazy compile" not in capsys.readouterr().err


def test_auto_outside_a_kernel_has_no_bar(records, capsys):
    ft.set_progress("auto", threshold=0)
    assert not progress.in_jupyter_kernel()
    compile_and_check()
    assert records()
    assert "ftlazy compile" not in capsys.readouterr().err


def test_true_outside_a_kernel_draws_a_text_bar(capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "tqdm", None)
    ft.set_progress(True, threshold=0)
    compile_and_check()
    err = capsys.readouterr().err
    assert "ftlazy compile [" in err
    assert "4/4 done in" in err
    assert err.endswith("\n")


class FakeTqdm:
    """Records what a bar was told (tqdm's interface, as far as used)."""

    made: list[FakeTqdm] = []

    def __init__(self, total, **kwargs):
        self.total, self.kwargs, self.n = total, kwargs, 0
        self.closed, self.postfix = False, []
        FakeTqdm.made.append(self)

    def update(self, n):
        self.n += n

    def set_postfix_str(self, text, refresh=True):
        self.postfix.append(text)

    def close(self):
        self.closed = True


def test_true_outside_a_kernel_uses_tqdm_where_importable(monkeypatch, records):
    FakeTqdm.made.clear()
    tqdm_module = types.ModuleType("tqdm")
    tqdm_module.tqdm = FakeTqdm
    monkeypatch.setitem(sys.modules, "tqdm", tqdm_module)
    ft.set_progress(True, threshold=0)
    compile_and_check()
    (bar,) = FakeTqdm.made
    assert bar.total == bar.n == len(progress.STAGES) and bar.closed
    assert bar.kwargs["file"] is sys.stderr
    assert len(records()) == len(progress.STAGES) + 1


# {{{ a fake Jupyter kernel

class FakeShell:
    kernel = object()


@pytest.fixture
def fake_kernel(monkeypatch):
    """IPython as a kernel imports it, with a display that records."""
    shown = []
    ipython = types.ModuleType("IPython")
    ipython.get_ipython = lambda: FakeShell()
    display_module = types.ModuleType("IPython.display")
    display_module.display = (
        lambda obj, display_id=None: shown.append(("display", display_id, obj)))
    display_module.update_display = (
        lambda obj, display_id=None: shown.append(("update", display_id, obj)))
    ipython.display = display_module
    monkeypatch.setitem(sys.modules, "IPython", ipython)
    monkeypatch.setitem(sys.modules, "IPython.display", display_module)
    return shown


def test_html_bar_in_a_kernel_without_widgets(fake_kernel, records):
    assert progress.in_jupyter_kernel()
    with pytest.MonkeyPatch.context() as mp:
        mp.setitem(sys.modules, "ipywidgets", None)
        ft.set_progress("auto", threshold=0)
        compile_and_check()
    kinds = [kind for kind, _, _ in fake_kernel]
    assert kinds == ["display"] + ["update"] * len(progress.STAGES)
    assert len({display_id for _, display_id, _ in fake_kernel}) == 1
    first, last = fake_kernel[0][2], fake_kernel[-1][2]
    assert '<progress value="0" max="4">' in first._repr_html_()
    html = last._repr_html_()
    assert '<progress value="4" max="4">' in html and "done in" in html
    assert repr(last).startswith("ftlazy compile 4/4 done in")
    middle = fake_kernel[2][2]._repr_html_()
    assert "scheduling..." in middle
    assert len(records()) == len(progress.STAGES) + 1


def test_tqdm_notebook_bar_in_a_kernel(fake_kernel, monkeypatch):
    FakeTqdm.made.clear()
    notebook = types.ModuleType("tqdm.notebook")
    notebook.tqdm = FakeTqdm
    monkeypatch.setitem(sys.modules, "tqdm", types.ModuleType("tqdm"))
    monkeypatch.setitem(sys.modules, "tqdm.notebook", notebook)
    monkeypatch.setitem(sys.modules, "ipywidgets",
                        types.ModuleType("ipywidgets"))
    ft.set_progress("auto", threshold=0)
    compile_and_check()
    (bar,) = FakeTqdm.made
    assert bar.total == bar.n == len(progress.STAGES)
    assert bar.closed and "file" not in bar.kwargs
    assert bar.postfix[0].startswith("loopy kernel creation...")
    assert bar.postfix[2].startswith("OpenCL build...")
    assert bar.postfix[-1].startswith("done in")
    assert fake_kernel == []


def test_false_in_a_kernel_shows_no_bar(fake_kernel, records):
    ft.set_progress(False, threshold=0)
    compile_and_check()
    assert fake_kernel == [] and records() == []

# }}}


def test_jagged_compile_reported(records):
    ft.set_progress("auto", threshold=0)
    c = 0.5 * next(_fresh)
    seqs = ft.make_jagged_placeholder("seqs", (3,), np.float64, depth=2)
    f = ft.compile(ft.map(lambda s: s * c + 1, seqs))
    assert not f.from_cache
    assert records()[-1].startswith("ftlazy compile: finished in ")


@pytest.mark.parametrize("mode", ["on", "Auto", ""])
def test_bad_mode_string(mode):
    with pytest.raises(ValueError, match=repr(mode)):
        ft.set_progress(mode)


@pytest.mark.parametrize("mode", [1, 0, None, 1.0, ["auto"]])
def test_bad_mode_type(mode):
    with pytest.raises(TypeError, match="mode must be True, False or 'auto'"):
        ft.set_progress(mode)
    with pytest.raises(TypeError, match=type(mode).__name__):
        ft.set_progress(mode)


@pytest.mark.parametrize("threshold", ["1", True, [1.0], 1j])
def test_bad_threshold_type(threshold):
    with pytest.raises(TypeError, match="threshold"):
        ft.set_progress("auto", threshold=threshold)


@pytest.mark.parametrize("threshold", [-1, -0.5, float("nan"), float("inf")])
def test_bad_threshold_value(threshold):
    with pytest.raises(ValueError, match=f"got {threshold!r}"):
        ft.set_progress("auto", threshold=threshold)


def test_bad_values_keep_the_settings():
    ft.set_progress(False, threshold=2.5)
    with pytest.raises(ValueError):
        ft.set_progress("auto", threshold=-1)
    assert progress.progress_settings() == progress.ProgressSettings(False, 2.5)


def test_set_progress_returns_the_previous_settings():
    ft.set_progress(True, threshold=3)
    previous = ft.set_progress("auto")
    assert previous == progress.ProgressSettings(True, 3.0)
    # None keeps the threshold
    assert progress.progress_settings() == progress.ProgressSettings("auto", 3.0)


def test_bar_in_a_real_jupyter_kernel(tmp_path, monkeypatch):
    """In a kernel (nbclient + ipykernel), "auto" shows a bar that ends at
    4/4: one display output, updated in place (tqdm's widget instead where
    ipywidgets is installed in the kernel)."""
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")
    code = (
        "import numpy as np\n"
        "import ftlazy as ft\n"
        "ft.set_progress('auto', threshold=0)\n"
        "x = ft.make_placeholder('x', (5,), np.float64)\n"
        f"f = ft.compile(2 * x + {0.5 * next(_fresh) + 0.0625!r})\n"
        "print('from cache:', f.from_cache)\n")
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(code)])
    monkeypatch.setenv("PYOPENCL_COMPILER_OUTPUT", "0")
    nbclient.NotebookClient(
        nb, timeout=300, kernel_name="python3",
        resources={"metadata": {"path": str(tmp_path)}}).execute()
    outputs = nb.cells[0].outputs
    shown = [o for o in outputs if o.output_type == "display_data"]
    printed = "".join(o.get("text", "") for o in outputs
                      if o.output_type == "stream" and o.name == "stdout")
    assert "from cache: False" in printed
    assert len(shown) == 1, outputs
    data = shown[0].data
    if "application/vnd.jupyter.widget-view+json" in data:
        return  # tqdm's widget: its state lives in the widget, not here
    assert '<progress value="4" max="4">' in data["text/html"]
    assert data["text/plain"].startswith("ftlazy compile 4/4 done in")
