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


def _default_device():
    """The device ftlazy runs on by default: ``PYOPENCL_CTX`` if set (then
    *None*: pyopencl chooses), else the first GPU, else the first CPU."""
    import pyopencl as cl

    if os.environ.get("PYOPENCL_CTX"):
        return None
    devices = [d for p in cl.get_platforms() for d in p.get_devices()]
    for wanted in (cl.device_type.GPU, cl.device_type.CPU):
        for d in devices:
            if d.type & wanted:
                return d
    if not devices:
        raise RuntimeError("no OpenCL device found: install PoCL "
                           "(pip install pocl-binary-distribution)")
    return devices[0]


@pytest.fixture(scope="session")
def cl_context():
    """A :class:`pyopencl.Context` on the default device."""
    import pyopencl as cl

    device = _default_device()
    if device is None:
        return cl.create_some_context(interactive=False)
    return cl.Context([device])


@pytest.fixture(scope="session")
def cl_queue(cl_context):
    """A :class:`pyopencl.CommandQueue` on the default device."""
    import pyopencl as cl

    return cl.CommandQueue(cl_context)
