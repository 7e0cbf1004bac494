# SPDX-License-Identifier: MIT
"""Shared test configuration: the hypothesis profile and an OpenCL queue."""

from __future__ import annotations

import os

import pytest
from hypothesis import settings

# derandomized so that CI runs are reproducible; no deadline because the
# first example of a test may pay for islpy and kernel builds
settings.register_profile("ci", deadline=None, derandomize=True, max_examples=50)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


@pytest.fixture(scope="session")
def cl_queue():
    """A :class:`pyopencl.CommandQueue` on the device ``ft.compile`` uses by
    default (``PYOPENCL_CTX`` if set, else a GPU, else the CPU: PoCL)."""
    from ftlazy.target.loopy.device import default_queue

    return default_queue()


@pytest.fixture(scope="session")
def cl_context(cl_queue):
    """The :class:`pyopencl.Context` of :func:`cl_queue`."""
    return cl_queue.context


# {{{ every code generation test under each vector width the device passed

#: flat kernels at least this long run on vectors in the test suite (the
#: default, 4096, would leave the small arrays of most tests scalar)
TEST_VECTOR_MIN_LENGTH = 16


def probed_vector_widths() -> list[int]:
    """Scalar, and the widest width at which the default device ran vector
    arithmetic correctly on both float dtypes (see ftlazy's probe; loops
    that call a builtin it found wrong at that width run narrower, as they
    do for users)."""
    from ftlazy.target.loopy.device import default_queue
    from ftlazy.target.loopy.profile import device_profile

    profile = device_profile(default_queue().device)
    widest = min(profile.vector_width(dtype) for dtype in ("float32", "float64"))
    return sorted({1, widest})


def codegen_flavours() -> list[tuple[str, int]]:
    """(device kind, vector width) pairs every code generation test runs
    under: the CPU strategies with scalar code and with the widest probed
    width, and the GPU strategies (their OpenCL runs on PoCL too), so that
    every emitted path is exercised on any machine."""
    return [("cpu", w) for w in probed_vector_widths()] + [("gpu", 1)]


def pytest_generate_tests(metafunc):
    if (metafunc.module.__name__.rpartition(".")[2].startswith("test_codegen")
            and "codegen_vector_width" in metafunc.fixturenames):
        metafunc.parametrize("codegen_vector_width", codegen_flavours(),
                             indirect=True,
                             ids=lambda f: f"{f[0]}-w{f[1]}" if f[0] == "cpu"
                             else f[0])


@pytest.fixture(autouse=True)
def codegen_vector_width(request):
    """In test_codegen_* modules, the vector width every compilation without
    explicit options uses (parametrized with the device kind, see
    :func:`codegen_flavours`); elsewhere None (the profile's own)."""
    flavour = getattr(request, "param", None)
    if flavour is None:
        yield None
        return
    from ftlazy.target.loopy.profile import CodegenOptions, default_options

    kind, width = flavour
    with default_options(CodegenOptions(
            vector_width=width, vector_min_length=TEST_VECTOR_MIN_LENGTH,
            device_kind=kind)):
        yield width

# }}}
