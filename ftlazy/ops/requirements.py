# SPDX-License-Identifier: MIT
"""Run-time requirements on symbolic sizes, checked by every evaluator.

An operation that needs an axis of symbolic length to be long enough (or
short enough) binds, unread, :func:`shape_requirement`: a zero-size array
whose first extent is negative exactly when the requirement fails. Every
evaluator refuses a negative shape before computing anything, with the
message of its :class:`~ftlazy.tags.ShapeRequirement` tag, so the check
costs no kernel work and needs no mechanism of its own.

.. autofunction:: shape_requirement
"""

from __future__ import annotations

import numpy as np

from ftlazy.array import Array, IndexLambda
from ftlazy.shapes import ShapeComponent
from ftlazy.tags import ShapeRequirement

__all__ = ["shape_requirement"]


def shape_requirement(room: ShapeComponent, operand: Array, message: str
                      ) -> IndexLambda:
    """An unread ``(room, 0)`` array, negative exactly when the requirement
    fails, refused with *message* naming it. It binds *operand* (unread
    too), so that in a loop body it stays in the body with the element's
    sizes rather than being hoisted out of it."""
    return IndexLambda(np.int8(0), (room, 0), np.int8,
                       {"_operand": operand}).tagged(ShapeRequirement(message))
