# SPDX-License-Identifier: MIT
"""Maps over FractalTensors inside the body of a dense scan, for the
compiled path.

A scan whose carry is a FractalTensor's values (:mod:`ftlazy.fractal_carry`,
a stacked RNN over a symbolic number of layers) maps over the carry in its
body: the :class:`~ftlazy.fractal_tensor.JaggedMap` reads the values (a
carry parameter) and the offsets, which the body captured (a parameter
standing for an outer array). The lowering of that map
(:mod:`ftlazy.transform.jagged_lowering`) needs the offsets themselves:
the host derives segment ids and longest extents from them before the
program runs. So the compiled path

1. *opens* such a scan's body before the lowering (:func:`open_scan_bodies`):
   each parameter of a captured array is replaced by the array itself;
2. lowers the map inside the body as it would at top level;
3. *closes* the body again (:func:`close_scan_bodies`): every array of the
   lowered body that reads no body parameter but reads an input (the
   offsets, the host's segment ids) becomes a captured input of the scan
   again, so that code generation sees a self-contained body.

.. autofunction:: open_scan_bodies
.. autofunction:: close_scan_bodies
"""

from __future__ import annotations

from ftlazy.array import Array, DataWrapper, Placeholder
from ftlazy.fractal import Body, BodyParam, Scan, _Known
from ftlazy.fractal_tensor import JaggedMap
from ftlazy.node import Node, iter_children, map_children, topological_order
from ftlazy.transform.mappers import CopyMapper

__all__ = ["open_scan_bodies", "close_scan_bodies"]


def _maps_over_fractal_tensors(body: Body) -> bool:
    """Whether *body*, or a body nested in it, maps over a FractalTensor."""
    return any(isinstance(n, JaggedMap) or any(
        _maps_over_fractal_tensors(getattr(n, name)) for name in n._body_fields)
        for n in topological_order(body.outputs))


def _substituted(outputs: tuple[Node, ...], new: dict[int, Node]
                 ) -> tuple[Node, ...]:
    """*outputs* rebuilt with the nodes of ids in *new* replaced."""
    for n in topological_order(outputs):
        if id(n) not in new:
            new[id(n)] = map_children(n, lambda c: new.get(id(c), c))
    return tuple(new[id(o)] for o in outputs)


class _Opener(CopyMapper):
    def map_scan(self, expr: Scan) -> Node:
        if type(expr) is Scan and _maps_over_fractal_tensors(expr.body):
            # (opened before the scans nested in its body, which then
            # capture arrays outside every body, and are opened in turn;
            # what they capture from the enclosing body stays captured)
            first = expr.num_carries + expr.num_scanned
            outer = {id(p): a for p, a in zip(expr.body.params[first:],
                                              expr.captured) if not a.scopes}
            expr = expr.copy(body=Body(expr.body.params, _substituted(
                expr.body.outputs, outer)))
        return self.map_node(expr)


def open_scan_bodies(roots: dict[str, Array]) -> dict[str, Array]:
    """*roots* where every scan whose body maps over a FractalTensor reads
    its captured arrays directly (see the module docs)."""
    opener = _Opener()
    return {name: opener(a) for name, a in roots.items()}


def _reads_input(n: Node, memo: dict[int, bool]) -> bool:
    """Whether *n* is or reads an input array (through its children)."""
    for m in topological_order([n], skip=_Known(memo)):
        memo[id(m)] = isinstance(m, (Placeholder, DataWrapper)) or \
            any(memo[id(c)] for c in iter_children(m))
    return memo[id(n)]


class _Closer(CopyMapper):
    def map_scan(self, expr: Scan) -> Node:
        expr = self.map_node(expr)
        body = expr.body
        order = topological_order(body.outputs)
        local = {id(p) for p in body.params}
        read_by_local = {id(o) for o in body.outputs}
        for n in order:
            if any(id(c) in local for c in iter_children(n)):
                local.add(id(n))
                read_by_local.update(id(c) for c in iter_children(n))
        memo: dict[int, bool] = {}
        free = [n for n in order if id(n) not in local
                and id(n) in read_by_local and _reads_input(n, memo)]
        if not free:
            return expr
        # (an opened scan's captured parameters that the body no longer
        # reads are dropped; others keep their order)
        first = (expr.num_carries + expr.num_scanned if type(expr) is Scan
                 else len(expr.inputs))
        used = {id(n) for n in order}
        kept = [(p, a) for p, a in zip(body.params[first:], expr.inputs[first:])
                if id(p) in used]
        sources = [p for p, _ in kept] + free
        params = tuple(BodyParam(first + k, n.shape, n.dtype)
                       for k, n in enumerate(sources))
        outputs = _substituted(body.outputs,
                               {id(n): p for n, p in zip(sources, params)})
        return expr.copy(
            body=Body(body.params[:first] + params, outputs),
            inputs=expr.inputs[:first] + tuple(a for _, a in kept) + tuple(free))


def close_scan_bodies(roots: dict[str, Array]) -> dict[str, Array]:
    """*roots* where the body of every scan reads the inputs it needs
    through captured parameters again (see the module docs)."""
    closer = _Closer()
    return {name: closer(a) for name, a in roots.items()}
