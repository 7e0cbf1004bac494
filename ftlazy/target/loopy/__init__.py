# SPDX-License-Identifier: MIT
"""The OpenCL target: DAG -> loopy -> pyopencl."""

from ftlazy.target.loopy.program import (  # noqa: F401
    BoundProgram, CompiledFunction, StageTimings, compile, generate_loopy)
from ftlazy.target.loopy.device import default_queue  # noqa: F401
