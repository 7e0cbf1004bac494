# SPDX-License-Identifier: MIT
"""Transforms over the DAG: the mapper family and lowering passes."""

from ftlazy.transform.mappers import (  # noqa: F401
    CachedMapper, CachedWalkMapper, CombineMapper, CopyMapper, Mapper,
    UnsupportedNodeError, WalkMapper, map_and_copy)
