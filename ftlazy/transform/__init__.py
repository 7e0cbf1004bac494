# SPDX-License-Identifier: MIT
"""Transforms over the DAG: the mapper family, lowering passes, and the
transforms that pytato users call by pytato's names."""

from ftlazy.transform.mappers import (
    CachedMapper, CachedWalkMapper, CombineMapper, CopyMapper, Mapper,
    UnsupportedNodeError, WalkMapper, map_and_copy)
from ftlazy.transform.deduplicate import deduplicate, deduplicate_data_wrappers
from ftlazy.transform.einsum_broadcasts import rewrite_einsums_with_no_broadcasts
from ftlazy.transform.materialize import materialize_with_mpms

__all__ = [
    "CachedMapper", "CachedWalkMapper", "CombineMapper", "CopyMapper", "Mapper",
    "UnsupportedNodeError", "WalkMapper", "map_and_copy",
    "deduplicate", "deduplicate_data_wrappers",
    "rewrite_einsums_with_no_broadcasts", "materialize_with_mpms"]
