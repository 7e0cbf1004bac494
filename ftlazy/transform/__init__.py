# SPDX-License-Identifier: MIT
"""Transforms over the DAG: the mapper family and lowering passes."""

from ftlazy.transform.mappers import (  # noqa: F401
    CachedMapper, CachedWalkMapper, CombineMapper, CopyMapper, Mapper,
    UnsupportedNodeError, WalkMapper, map_and_copy)
from ftlazy.transform.deduplicate import (  # noqa: F401,E402
    deduplicate, deduplicate_data_wrappers)
from ftlazy.transform.einsum_broadcasts import (  # noqa: F401,E402
    rewrite_einsums_with_no_broadcasts)
from ftlazy.transform.materialize import materialize_with_mpms  # noqa: F401,E402
