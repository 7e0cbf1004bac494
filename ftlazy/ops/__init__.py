# SPDX-License-Identifier: MIT
"""The numpy-like front end: functions that validate user input and build
DAG nodes. No code generation happens here."""

from ftlazy.ops.convert import asarray, result_type  # noqa: F401
from ftlazy.ops.elementwise import *  # noqa: F401,F403
from ftlazy.ops.reductions import *  # noqa: F401,F403
from ftlazy.ops.creation import *  # noqa: F401,F403
from ftlazy.ops.shape_ops import *  # noqa: F401,F403
from ftlazy.ops.indexing import *  # noqa: F401,F403
from ftlazy.ops.linalg import *  # noqa: F401,F403
from ftlazy.ops.sequence import *  # noqa: F401,F403
from ftlazy.ops.ordering import *  # noqa: F401,F403
from ftlazy.ops.scans import *  # noqa: F401,F403
from ftlazy.ops.matrices import *  # noqa: F401,F403
from ftlazy.ops.special import *  # noqa: F401,F403
from ftlazy.ops.rounding import *  # noqa: F401,F403
from ftlazy.ops.array_pad import *  # noqa: F401,F403
from ftlazy.ops.sparse import *  # noqa: F401,F403
