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
