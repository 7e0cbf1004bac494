# SPDX-License-Identifier: MIT
"""pytato's ``rewrite_einsums_with_no_broadcasts``: einsum operands read
without their broadcasts.

:func:`ftlazy.einsum` broadcasts a length-1 axis of an operand against the
same index's length in another operand by wrapping the operand in
:func:`~ftlazy.broadcast_to`. This pass undoes that inside the einsum: the
operand becomes the array before broadcasting, without its length-1 axes,
and the broadcast indices leave its subscript (einsum repeats an operand
along an index it does not name). The contraction reads less and a
consumer that matches einsum patterns sees no broadcast.

.. autofunction:: rewrite_einsums_with_no_broadcasts
"""

from __future__ import annotations

from typing import Any

from ftlazy.array import (
    Array, DictOfNamedArrays, Einsum, IndexLambda, parse_einsum_spec)
from ftlazy.transform.mappers import CopyMapper


def _unbroadcast(operand: Array, sub: str) -> tuple[Array, str] | None:
    """The array that *operand* (with subscript *sub*) broadcasts, and its
    subscript without the broadcast indices; None if *operand* is not a
    broadcast."""
    if not isinstance(operand, IndexLambda) or len(operand.bindings) != 1:
        return None
    # (ftlazy.ops imports the transform package)
    from ftlazy.ops.convert import broadcast_read
    from ftlazy.ops.shape_ops import reshape
    (name, source), = operand.bindings.items()
    if not isinstance(source, Array) or source.ndim > operand.ndim:
        return None
    if operand.expr != broadcast_read(name, source.shape, operand.shape):
        return None
    offset = operand.ndim - source.ndim
    kept = [i for i, d in enumerate(source.shape)
            if not (d == 1 and operand.shape[offset + i] != 1)]
    new_sub = "".join(sub[offset + i] for i in kept)
    new_source = reshape(source, tuple(source.shape[i] for i in kept))
    return new_source, new_sub


class _NoBroadcastEinsums(CopyMapper):
    def map_einsum(self, expr: Einsum) -> Array:
        new = self.map_node(expr)
        ins, out = parse_einsum_spec(new.spec, len(new.args))
        subs, args = list(ins), list(new.args)
        for i, (sub, arg) in enumerate(zip(ins, new.args)):
            if len(set(sub)) != len(sub):
                continue  # a diagonal: leave it
            found = _unbroadcast(arg, sub)
            if found is None:
                continue
            source, new_sub = found
            dropped = set(sub) - set(new_sub)
            # every dropped index keeps its length from another operand
            others = {c for j, s in enumerate(subs) if j != i for c in s}
            if not dropped <= others:
                continue
            subs[i], args[i] = new_sub, source
        if args == list(new.args):
            return new
        return Einsum(",".join(subs) + "->" + out, tuple(args))


def rewrite_einsums_with_no_broadcasts(expr: Array | DictOfNamedArrays) -> Any:
    """*expr* with every einsum's broadcast operands replaced by the arrays
    they broadcast (see the module docstring). Values are unchanged."""
    if not isinstance(expr, (Array, DictOfNamedArrays)):
        raise TypeError("rewrite_einsums_with_no_broadcasts expects an Array or "
                        f"a DictOfNamedArrays, got {type(expr).__name__}")
    return _NoBroadcastEinsums()(expr)
