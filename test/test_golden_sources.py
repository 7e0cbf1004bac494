# SPDX-License-Identifier: MIT
"""Generated OpenCL for a few known graphs, compared with committed golden
files (``test/golden/*.cl``): a change in code generation shows as a diff.

The sources are planned for synthetic profiles, so they do not depend on
the machine's probe. After an intended change, regenerate them with
``FTLAZY_UPDATE_GOLDEN=1 python -m pytest test/test_golden_sources.py`` and
review the diff in version control."""

from __future__ import annotations

import difflib
import os
import pathlib

import numpy as np
import pytest

import ftlazy as ft
from ftlazy.target.loopy.profile import synthetic_profile

GOLDEN = pathlib.Path(__file__).parent / "golden"
CPU4 = synthetic_profile("cpu", vector_width=4)
GPU = synthetic_profile("gpu", vector_width=1)


def _w1():
    x = ft.make_placeholder("x", (4096,), np.float64)
    return ft.exp(-x * x) * ft.sin(3 * x) + 0.5 * x / (1 + x * x)


def _fused_reduction():
    n = ft.make_size_param("n")
    x = ft.make_placeholder("x", (n, 64), np.float64)
    centered = x - ft.sum(x, axis=1)[:, None] / 64
    return ft.make_dict_of_named_arrays({
        "var": ft.sum(centered * centered, axis=1), "total": ft.sum(x)})


def _scan():
    w = ft.make_placeholder("w", (16, 16), np.float64)
    xs = ft.make_placeholder("xs", (10, 8, 16), np.float64)
    h0 = ft.make_placeholder("h0", (8, 16), np.float64)
    return ft.scan(lambda h, x: ft.tanh(h @ w.T + x), xs, h0)


def _coupled_scan():
    """Rows that are not independent: one work group, barriers, and carries
    that work items share (never ``__restrict__``)."""
    xs = ft.make_placeholder("xs", (10, 32), np.float64)
    h0 = ft.make_placeholder("h0", (32,), np.float64)
    return ft.scan(lambda h, x: h * 0.5 + x + ft.sum(h) * 0.01, xs, h0)


def _horner():
    x = ft.make_placeholder("x", (1001,), np.float64)
    y = ft.zeros((1001,), np.float64)
    for k in range(200):
        y = y * x + ft.make_placeholder(f"c{k}", (), np.float64)
    return y


def _gather():
    table = ft.make_placeholder("table", (100, 8), np.float32)
    ids = ft.make_placeholder("ids", (50,), np.int64)
    return ft.sum(table[ids], axis=1)


CASES = {
    "w1_cpu4": (_w1, CPU4),
    "fused_reduction_cpu4": (_fused_reduction, CPU4),
    "scan_rows_cpu4": (_scan, CPU4),
    "scan_coupled_gpu": (_coupled_scan, GPU),
    "horner_rolled_cpu4": (_horner, CPU4),
    "gather_cpu4": (_gather, CPU4),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_generated_source_matches_golden(name: str) -> None:
    build, profile = CASES[name]
    source = ft.generate_loopy(build(), profile=profile).source
    path = GOLDEN / f"{name}.cl"
    if os.environ.get("FTLAZY_UPDATE_GOLDEN"):
        GOLDEN.mkdir(exist_ok=True)
        path.write_text(source)
    expected = path.read_text()
    if source != expected:
        diff = "".join(difflib.unified_diff(
            expected.splitlines(keepends=True), source.splitlines(keepends=True),
            f"golden/{name}.cl", "generated"))
        pytest.fail(f"generated OpenCL differs from golden/{name}.cl "
                    f"(FTLAZY_UPDATE_GOLDEN=1 rewrites it):\n{diff}")


def test_shared_scan_arrays_are_not_restrict() -> None:
    """Arrays a scan's work items exchange through barriers carry no
    ``__restrict__`` (NVIDIA's compiler hoisted their loads out of the time
    loop); read-only inputs keep it."""
    source = ft.generate_loopy(_coupled_scan(), profile=GPU).source
    (header,) = [line for line in source.splitlines() if "__kernel" in line]
    params = header[header.index("(", header.index("ftlazy_kernel")) + 1:]
    for param in params.rstrip(")").split(","):
        if "const" in param:
            assert "__restrict__" in param, param
        else:
            assert "__restrict__" not in param, param
    assert any("const" not in p for p in params.split(","))


def test_a_profile_may_allow_restrict_on_shared_arrays() -> None:
    """The profile decides: a device known to honour barriers across
    restrict pointers may keep them (every argument restrict then)."""
    profile = synthetic_profile("gpu", vector_width=1, restrict_shared_arrays=True)
    source = ft.generate_loopy(_coupled_scan(), profile=profile).source
    (header,) = [line for line in source.splitlines() if "__kernel" in line]
    params = header[header.index("(", header.index("ftlazy_kernel")) + 1:]
    assert all("__restrict__" in p for p in params.rstrip(")").split(","))
