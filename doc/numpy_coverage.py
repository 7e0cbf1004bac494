# SPDX-License-Identifier: MIT
"""Generate ``doc/numpy_coverage.rst``: which of numpy's functions ftlazy has.

For every public callable of numpy's main namespace (functions and ufuncs;
classes, dtypes and modules are left out) the table says

- whether ``ftlazy`` has a function of the same name, and
- whether ``np.NAME(lazy_array)`` builds a lazy node. Where that is cheap
  and safe it is tried: ufuncs that ftlazy supports are called on small
  placeholders, and the functions in :mod:`ftlazy.ops.interop`'s table on a
  ``(3, 3)`` float64 placeholder (a function that needs more arguments than
  the array is then known from the table alone, and says so). Other numpy
  functions are never called (``np.save`` writes files): each is looked up
  in interop's tables, which decide what ``__array_function__`` and
  ``__array_ufunc__`` accept, so those that are absent raise a
  :class:`TypeError` on lazy arrays.

The .rst is generated, not committed: ``doc/conf.py`` runs :func:`write`
each time the documentation is built, so the page always shows the
current state of the code, and ``.gitignore`` lists the output. (A
committed copy would need a test that it is up to date, and would go stale
whenever numpy or ftlazy changed.) Run by hand with
``python doc/numpy_coverage.py [OUTPUT]`` to see the totals.
"""

from __future__ import annotations

import inspect
import os
import sys
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_OUTPUT = os.path.join(HERE, "numpy_coverage.rst")


@dataclass(frozen=True)
class Entry:
    """One row of the table."""

    #: the name in numpy's namespace
    name: str
    #: ``"ufunc"`` or ``"function"``
    kind: str
    #: whether ``ftlazy.NAME`` is a function
    in_ftlazy: bool
    #: whether ``np.NAME(lazy)`` builds a lazy node
    dispatches: bool
    #: how *dispatches* was found: ``"called"``, ``"table"`` or ``""``
    checked_by: str


def numpy_callables() -> Iterator[tuple[str, Any]]:
    """``(name, object)`` for the public functions and ufuncs of numpy's
    main namespace, sorted by name."""
    for name in sorted(dir(np)):
        if name.startswith("_"):
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                obj = getattr(np, name)
            except AttributeError:  # numpy's removed names raise on access
                continue
        if isinstance(obj, np.ufunc):
            yield name, obj
        elif callable(obj) and not inspect.isclass(obj) \
                and not inspect.ismodule(obj):
            yield name, obj


def _is_lazy(result: Any) -> bool:
    import ftlazy as ft
    if isinstance(result, ft.Array):
        return True
    if isinstance(result, (tuple, list)):
        return bool(result) and all(isinstance(r, ft.Array) for r in result)
    return False


def _try_ufunc(ufunc: np.ufunc) -> bool:
    """Whether calling *ufunc* on placeholders gives a lazy array (tried
    with float64, then int64, then bool operands)."""
    import ftlazy as ft
    for dtype in (np.float64, np.int64, np.bool_):
        args = [ft.make_placeholder(f"a{i}", (3,), dtype) for i in range(ufunc.nin)]
        try:
            with np.errstate(all="ignore"):
                return _is_lazy(ufunc(*args))
        except TypeError:
            continue
    return False


def _try_function(func: Any) -> bool | None:
    """Whether ``func(placeholder)`` gives a lazy result (or, for
    ``np.shape`` and the like, a plain value computed without numpy's
    array conversion); None where the function needs more than the
    array."""
    import ftlazy as ft
    a = ft.make_placeholder("a", (3, 3), np.float64)
    try:
        with np.errstate(all="ignore"):
            result = func(a)
    except (TypeError, ValueError, IndexError):
        # it needs other arguments (np.pad's widths, np.einsum's subscripts)
        return None
    return _is_lazy(result) or not isinstance(result, np.ndarray)


def entry(name: str, obj: Any) -> Entry:
    """The row for ``np.NAME`` (*obj*)."""
    import ftlazy as ft
    from ftlazy.ops.interop import supported_functions, supported_ufuncs
    in_ftlazy = callable(getattr(ft, name, None)) and not inspect.isclass(
        getattr(ft, name))
    if isinstance(obj, np.ufunc):
        if obj not in supported_ufuncs():
            return Entry(name, "ufunc", in_ftlazy, False, "")
        return Entry(name, "ufunc", in_ftlazy, _try_ufunc(obj), "called")
    if obj not in supported_functions():
        return Entry(name, "function", in_ftlazy, False, "")
    tried = _try_function(obj)
    if tried is None:
        return Entry(name, "function", in_ftlazy, True, "table")
    return Entry(name, "function", in_ftlazy, tried, "called")


def entries() -> list[Entry]:
    """Every row, sorted by name."""
    return [entry(name, obj) for name, obj in numpy_callables()]


def _mark(flag: bool) -> str:
    return "yes" if flag else "--"


def render(rows: list[Entry]) -> str:
    """The .rst page for *rows*."""
    total = len(rows)
    named = sum(r.in_ftlazy for r in rows)
    dispatched = sum(r.dispatches for r in rows)
    ufuncs = [r for r in rows if r.kind == "ufunc"]
    lines = [
        ".. this page is generated by doc/numpy_coverage.py at every build",
        "",
        "numpy coverage",
        "==============",
        "",
        f"Generated from numpy {np.__version__}'s main namespace by "
        "``doc/numpy_coverage.py`` when the documentation is built. "
        "*ftlazy* says whether ``ft.NAME`` exists; *np.NAME(lazy)* whether "
        "numpy's function or ufunc, called on a lazy array, builds a lazy "
        "node (see :mod:`ftlazy.ops.interop`). *checked* says how: "
        "``called`` on small placeholders, or ``table`` (the function needs "
        "more arguments than an array, so interop's table decides). Every "
        "other numpy function raises a :class:`TypeError` naming it on lazy "
        "arrays. numpy's creation functions (``np.zeros``, ``np.arange``) "
        "take no array, so numpy cannot hand them to ftlazy: call "
        "``ft.zeros``. A shared name need not mean the same function: "
        "``ft.repeat`` is FractalTensor's (a list of copies), not "
        "``np.repeat``.",
        "",
        "Totals",
        "------",
        "",
        f"- public numpy callables: {total} ({len(ufuncs)} ufuncs, "
        f"{total - len(ufuncs)} functions)",
        f"- in ftlazy under the same name: {named}",
        f"- dispatching to ftlazy from numpy: {dispatched} "
        f"({sum(r.dispatches for r in ufuncs)} ufuncs, "
        f"{dispatched - sum(r.dispatches for r in ufuncs)} functions)",
        "",
        "Table",
        "-----",
        "",
        ".. list-table::",
        "   :header-rows: 1",
        "",
        "   * - numpy",
        "     - kind",
        "     - ftlazy",
        "     - np.NAME(lazy)",
        "     - checked",
    ]
    for r in rows:
        lines += [f"   * - ``{r.name}``", f"     - {r.kind}",
                  f"     - {_mark(r.in_ftlazy)}", f"     - {_mark(r.dispatches)}",
                  f"     - {r.checked_by or '--'}"]
    return "\n".join(lines) + "\n"


def write(path: str = DEFAULT_OUTPUT) -> list[Entry]:
    """Write the page to *path* (only if its text changed, so that Sphinx
    does not rebuild it needlessly); returns the rows."""
    rows = entries()
    text = render(rows)
    old = None
    if os.path.exists(path):
        with open(path, encoding="utf-8") as f:
            old = f.read()
    if old != text:
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
    return rows


if __name__ == "__main__":
    rows = write(sys.argv[1] if len(sys.argv) > 1 else DEFAULT_OUTPUT)
    print(f"{len(rows)} numpy callables, {sum(r.in_ftlazy for r in rows)} in "
          f"ftlazy, {sum(r.dispatches for r in rows)} dispatch")
