# SPDX-License-Identifier: MIT
"""Progress reports for long compiles.

A compile runs four stages (see
:class:`~ftlazy.target.loopy.program.StageTimings`): DAG transforms, loopy
kernel creation, scheduling and the OpenCL build. Once the stages of one
compile have together taken longer than a threshold (one second by
default), or half of it before the OpenCL build (usually the longest
stage), each finished stage is reported:

* as an INFO record of the logger ``ftlazy.compile`` (one per stage, with
  its time, and one for the whole compile); a script sees them after
  ``logging.basicConfig(level=logging.INFO)``;
* as a progress bar, by default only in a Jupyter kernel: tqdm's notebook
  bar where ``tqdm`` and ``ipywidgets`` are importable, else a small HTML
  bar updated in place through IPython's ``update_display``. Outside a
  kernel (with :func:`set_progress` ``(True)``) the bar is tqdm's text bar,
  or a plain text line on stderr.

Neither tqdm nor IPython is a dependency: each is used where it is already
installed. Compiles served from the cache run no stage and report nothing;
a compile faster than the threshold reports nothing either. Reports are
made at the end of each stage (the bar names the stage running next).
"""

from __future__ import annotations

import abc
import importlib.util
import itertools
import logging
import math
import sys
from dataclasses import dataclass
from typing import Any, Literal

__all__ = ["ProgressSettings", "set_progress", "progress_settings",
           "report_stage", "STAGES"]

logger = logging.getLogger("ftlazy.compile")

#: the stages of a compile, in order: (attribute of ``StageTimings``, label)
STAGES: tuple[tuple[str, str], ...] = (
    ("dag_transforms", "DAG transforms"),
    ("kernel_creation", "loopy kernel creation"),
    ("scheduling", "scheduling"),
    ("opencl_build", "OpenCL build"),
)
_LABELS = dict(STAGES)
_ORDER = [name for name, _ in STAGES]

ProgressMode = bool | Literal["auto"]


@dataclass(frozen=True)
class ProgressSettings:
    """How compiles report their progress (see :func:`set_progress`).

    :ivar mode: ``"auto"`` (log records, and a bar in a Jupyter kernel),
        ``True`` (log records and a bar everywhere) or ``False`` (nothing).
    :ivar threshold: seconds of compile work after which the stages are
        reported."""

    mode: ProgressMode = "auto"
    threshold: float = 1.0


_settings = ProgressSettings()


def progress_settings() -> ProgressSettings:
    """The current :class:`ProgressSettings`."""
    return _settings


def set_progress(mode: ProgressMode = "auto", *,
                 threshold: float | None = None) -> ProgressSettings:
    """Choose how long compiles report their stages; returns the previous
    settings (pass their fields back to restore them).

    :arg mode: ``"auto"`` (the default): an INFO record of the logger
        ``ftlazy.compile`` per stage, and a progress bar only in a Jupyter
        kernel. ``True``: the records and a bar everywhere (on stderr outside
        a kernel). ``False``: no report at all.
    :arg threshold: seconds of compile work (the stages' times added up)
        after which a compile is reported; ``None`` keeps the current one
        (one second at first). ``0`` reports every compile not served from
        the cache.
    :raises TypeError: *mode* is not a bool or ``"auto"``, or *threshold*
        is not a real number.
    :raises ValueError: *mode* is another string, or *threshold* is
        negative or not finite."""
    global _settings
    if isinstance(mode, str):
        if mode != "auto":
            raise ValueError(f"ft.set_progress: mode must be True, False or "
                             f"'auto', got {mode!r}")
    elif not isinstance(mode, bool):
        raise TypeError(f"ft.set_progress: mode must be True, False or 'auto', "
                        f"got {type(mode).__name__} {mode!r}")
    if threshold is None:
        threshold = _settings.threshold
    elif isinstance(threshold, bool) or not isinstance(threshold, (int, float)):
        raise TypeError(f"ft.set_progress: threshold must be a number of "
                        f"seconds, got {type(threshold).__name__} {threshold!r}")
    elif not math.isfinite(threshold) or threshold < 0:
        raise ValueError(f"ft.set_progress: threshold must be a finite number "
                         f"of seconds >= 0, got {threshold!r}")
    previous = _settings
    _settings = ProgressSettings(mode, float(threshold))
    return previous


# {{{ where we run

def in_jupyter_kernel() -> bool:
    """Whether this process is a Jupyter kernel (an IPython shell with a
    kernel). IPython is not imported here: a kernel has imported it."""
    ipython = sys.modules.get("IPython")
    if ipython is None:
        return False
    get_ipython = getattr(ipython, "get_ipython", None)
    shell = get_ipython() if get_ipython is not None else None
    return shell is not None and getattr(shell, "kernel", None) is not None


def _importable(module: str) -> bool:
    if module in sys.modules:
        return sys.modules[module] is not None
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False

# }}}


# {{{ bars

class _Bar(abc.ABC):
    """A progress bar over the stages: ``update`` after each stage."""

    @abc.abstractmethod
    def update(self, done: int, text: str) -> None:
        """Show *done* stages finished, and *text*."""

    def close(self) -> None:
        pass


class _TqdmBar(_Bar):
    def __init__(self, tqdm_class: Any, **kwargs: Any) -> None:
        self.bar = tqdm_class(total=len(STAGES), desc="ftlazy compile",
                              unit="stage", leave=True, **kwargs)
        self.done = 0

    def update(self, done: int, text: str) -> None:
        self.bar.set_postfix_str(text, refresh=False)
        self.bar.update(done - self.done)
        self.done = done

    def close(self) -> None:
        self.bar.close()


class _BarView:
    """What the HTML bar displays: a MIME bundle of HTML and text."""

    def __init__(self, done: int, text: str) -> None:
        self.done = done
        self.text = text

    def _repr_html_(self) -> str:
        import html
        return (f'<div class="ftlazy-progress">ftlazy compile '
                f'<progress value="{self.done}" max="{len(STAGES)}"></progress> '
                f'{self.done}/{len(STAGES)} {html.escape(self.text)}</div>')

    def __repr__(self) -> str:
        return f"ftlazy compile {self.done}/{len(STAGES)} {self.text}"


_display_ids = itertools.count()


class _HtmlBar(_Bar):
    """A bar without tqdm: one display output, replaced at each update."""

    def __init__(self) -> None:
        from IPython.display import display, update_display
        self._update = update_display
        self.display_id = f"ftlazy-progress-{next(_display_ids)}"
        display(_BarView(0, "starting"), display_id=self.display_id)

    def update(self, done: int, text: str) -> None:
        self._update(_BarView(done, text), display_id=self.display_id)


class _TextBar(_Bar):
    """A bar without tqdm outside a kernel: one line on stderr."""

    width = 20

    def update(self, done: int, text: str) -> None:
        filled = self.width * done // len(STAGES)
        sys.stderr.write(f"\rftlazy compile [{'#' * filled}"
                         f"{' ' * (self.width - filled)}] {done}/{len(STAGES)} "
                         f"{text}\x1b[K")
        sys.stderr.flush()

    def close(self) -> None:
        sys.stderr.write("\n")
        sys.stderr.flush()


def _new_bar(mode: ProgressMode) -> _Bar | None:
    """The bar *mode* asks for here, or None."""
    kernel = in_jupyter_kernel()
    if mode is False or (mode == "auto" and not kernel):
        return None
    if kernel:
        if _importable("tqdm") and _importable("ipywidgets"):
            from tqdm.notebook import tqdm
            return _TqdmBar(tqdm)
        return _HtmlBar()
    if _importable("tqdm"):
        from tqdm import tqdm
        return _TqdmBar(tqdm, file=sys.stderr)
    return _TextBar()

# }}}


class _Report:
    """The report of one compile: which stages were logged, and its bar."""

    def __init__(self, timings: Any, bar: _Bar | None) -> None:
        self.timings = timings
        self.bar = bar
        self.logged: set[str] = set()

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None


#: the compile being reported (at most one: a new one closes the last one,
#: e.g. one whose kernels were never built)
_active: _Report | None = None


def _finished(timings: Any) -> list[tuple[str, float]]:
    return [(name, getattr(timings, name)) for name in _ORDER
            if getattr(timings, name, None) is not None]


#: the OpenCL build usually takes longer than the stages before it (a
#: J10 LSTM on PoCL: 0.9 s of them, then a 9 s build), so a compile is
#: reported before its build once those stages took this share of the
#: threshold: its bar then shows the build running, not only its end
BUILD_PREVIEW = 0.5


def _starts_report(timings: Any, total: float, threshold: float) -> bool:
    """Whether a compile not yet reported is reported now: its finished
    stages took *threshold*, or half of it and the OpenCL build is next."""
    if total >= threshold:
        return True
    following = [name for name in _ORDER if getattr(timings, name, None) is None]
    return (following[:1] == ["opencl_build"]
            and total >= BUILD_PREVIEW * threshold)


def report_stage(timings: Any, stage: str) -> None:
    """Called by the compiler once *stage* (a name in :data:`STAGES`) has
    run and its seconds are stored in *timings* (a ``StageTimings``).
    Reports nothing until the compile's finished stages add up to the
    threshold (or to :data:`BUILD_PREVIEW` of it before the OpenCL build);
    then logs each finished stage once and updates the bar.
    Never called for a compile served from the cache."""
    global _active
    settings = _settings
    if settings.mode is False:
        return
    finished = _finished(timings)
    total = sum(seconds for _, seconds in finished)
    report = _active if _active is not None and _active.timings is timings \
        else None
    if report is None:
        if not _starts_report(timings, total, settings.threshold):
            return
        if _active is not None:
            _active.close()
        report = _active = _Report(timings, _new_bar(settings.mode))
    for name, seconds in finished:
        if name not in report.logged:
            report.logged.add(name)
            logger.info("ftlazy compile: %s took %.2f s", _LABELS[name], seconds)
    last = stage == _ORDER[-1]
    if report.bar is not None:
        done = len(finished)
        following = [label for name, label in STAGES
                     if getattr(timings, name, None) is None]
        text = (f"done in {total:.1f} s" if last or not following
                else f"{following[0]}... ({total:.1f} s so far)")
        report.bar.update(done, text)
    if last:
        logger.info("ftlazy compile: finished in %.2f s (%s)", total, timings)
        report.close()
        _active = None
