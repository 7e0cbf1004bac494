# SPDX-License-Identifier: MIT
"""A readable text form of a DAG, in the manner of a jaxpr: :func:`pretty`.

Every node is one numbered statement, in topological order (inputs first),
``%3: float64[n, 3] = index_lambda(exp(%1[_0, _1]) + %2[_1])``. The scalar
expression of an :class:`~ftlazy.IndexLambda` reads its bindings by their
statement numbers; a loop's body is a scope of its own, indented under the
loop's statement and closed by the body's ``return``. Statement numbers are
unique across scopes (a node shared by two scopes, such as an interned
``BodyParam``, gets one number in each). The last line returns the results.

:class:`Listing` is the walk behind the text; :mod:`ftlazy.verification` uses it
to name a node by its statement.

.. autofunction:: pretty
.. autofunction:: type_str
.. autoclass:: Listing
.. autoclass:: Statement
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pymbolic.primitives as prim

from ftlazy.node import Node, topological_order

__all__ = ["pretty", "type_str", "Listing", "Statement"]

#: fields shown by every array statement's type, never among its arguments
_TYPE_FIELDS = frozenset({"shape", "dtype", "tags", "axes"})
#: indentation of one body level
_INDENT = "    "


def type_str(array: Any) -> str:
    """``float64[n, 3]``: the dtype and shape of *array* (``int64[]`` for a
    0-d array)."""
    shape = ", ".join(str(c) for c in array.shape)
    return f"{array.dtype}[{shape}]"


@dataclass
class Statement:
    """One node of a :class:`Listing`.

    .. attribute:: number

        The statement's number (``%number``).

    .. attribute:: node

        The node.

    .. attribute:: body

        The :class:`~ftlazy.fractal.Body` whose scope the node is in
        (``None`` at top level).

    .. attribute:: depth

        How many loop bodies enclose the statement.

    .. attribute:: text

        The statement without indentation.
    """

    number: int
    node: Node
    body: Node | None
    depth: int
    text: str = ""


class Listing:
    """The statements of the DAG of *expr* (an array, a
    :class:`~ftlazy.DictOfNamedArrays`, a :class:`~ftlazy.Jagged` or any
    node), scope by scope, and the lines of :func:`pretty`.

    .. attribute:: statements

        Every :class:`Statement`, in the order of the text (a loop before
        the statements of its body).

    .. attribute:: lines

        The text, one line per entry.
    """

    def __init__(self, expr: Node) -> None:
        if not isinstance(expr, Node):
            raise TypeError(f"ft.pretty expects an ftlazy array or node, got "
                            f"{type(expr).__name__} {_short(repr(expr))}")
        self.statements: list[Statement] = []
        self.lines: list[str] = []
        self._next = 0
        from ftlazy.fractal import Body
        if isinstance(expr, Body):  # a body alone: its own scope
            numbers = self._scope(list(expr.params) + list(expr.outputs), expr, 0)
        else:
            numbers = self._scope([expr], None, 0)
        self.lines.append("return " + self._results(expr, numbers))

    def _scope(self, roots: list[Node], body: Node | None, depth: int
               ) -> dict[Node, int]:
        """List the nodes reachable from *roots* in one scope; returns their
        statement numbers. Recurses once per nested loop body (a few levels),
        never along the DAG."""
        from ftlazy.array import DictOfNamedArrays
        from ftlazy.fractal import Body
        numbers: dict[Node, int] = {}
        indent = _INDENT * depth
        for n in topological_order(roots):
            if isinstance(n, (DictOfNamedArrays, Body)):
                continue
            numbers[n] = number = self._next
            self._next += 1
            stmt = Statement(number, n, body, depth)
            stmt.text = _statement_text(n, number, numbers)
            self.statements.append(stmt)
            if not n._body_fields:
                self.lines.append(indent + stmt.text)
                continue
            for name in n._body_fields:
                self.lines.append(f"{indent}{stmt.text} {{")
                self._body(getattr(n, name), depth + 1)
                self.lines.append(indent + "}")
        return numbers

    def _body(self, body: Node, depth: int) -> None:
        numbers = self._scope(list(body.params) + list(body.outputs), body,
                              depth)
        self.lines.append(_INDENT * depth + "return " + ", ".join(
            _ref(o, numbers) for o in body.outputs))

    def _results(self, expr: Node, numbers: dict[Node, int]) -> str:
        from ftlazy.array import DictOfNamedArrays
        if isinstance(expr, DictOfNamedArrays):
            return "{" + ", ".join(f"{name}: {_ref(a, numbers)}"
                                   for name, a in expr.items()) + "}"
        from ftlazy.fractal import Body
        if isinstance(expr, Body):
            return ", ".join(_ref(o, numbers) for o in expr.outputs)
        return _ref(expr, numbers)

    def text(self) -> str:
        """The listing as one string (lines joined by newlines)."""
        return "\n".join(self.lines)


def pretty(expr: Node) -> str:
    """The DAG of *expr* as numbered statements, one per node, like a jaxpr.

    Inputs come first (``%0: float64[n, 3] = placeholder "x"``), each
    :class:`~ftlazy.IndexLambda` shows its scalar expression with its
    bindings replaced by statement numbers
    (``%2: float64[n, 3] = index_lambda(exp(%0[_0, _1]))``), an
    :class:`~ftlazy.Einsum` its spec, loop nodes their body indented under
    them, and the last line returns the results. Tags follow a statement as
    a ``# tags:`` comment. Iterative along the DAG: chains of 100,000 nodes
    print.

    :arg expr: an array, a :class:`~ftlazy.DictOfNamedArrays`, a
        :class:`~ftlazy.Jagged` or any other ftlazy node.
    :raises TypeError: if *expr* is not an ftlazy node.
    """
    return Listing(expr).text()


# {{{ statements

def _short(text: str, limit: int = 60) -> str:
    return text if len(text) <= limit else text[:limit - 3] + "..."


def _ref(n: Any, numbers: Mapping[Node, int]) -> str:
    k = numbers.get(n) if isinstance(n, Node) else None
    return f"%{k}" if k is not None else f"<{type(n).__name__} not in scope>"


def _statement_text(n: Node, number: int, numbers: Mapping[Node, int]) -> str:
    try:
        rhs = _rhs(n, numbers)
    except Exception as e:  # a broken node still gets a statement
        rhs = f"{type(n).__name__}(<unprintable: {_short(str(e))}>)"
    if hasattr(n, "dtype") and hasattr(n, "shape"):
        try:
            lhs = f"%{number}: {type_str(n)}"
        except Exception:
            lhs = f"%{number}: <bad type>"
    else:
        lhs = f"%{number}"
    tags = getattr(n, "tags", None)
    suffix = ""
    if tags:
        suffix = "  # tags: " + ", ".join(sorted(repr(t) for t in tags))
    return f"{lhs} = {rhs}{suffix}"


def _rhs(n: Node, numbers: Mapping[Node, int]) -> str:
    from ftlazy import array as a
    from ftlazy.fractal import BodyParam, LoopResult, Map, Scan

    def ref(x: Any) -> str:
        return _ref(x, numbers)

    if isinstance(n, a.Placeholder):
        return f"placeholder {n.name!r}"
    if isinstance(n, a.SizeParam):
        return f"size_param {n.name!r}"
    if isinstance(n, a.DataWrapper):
        name = f" {n.name!r}" if n.name is not None else ""
        return f"data_wrapper{name} <{type(n.data).__name__}>"
    if isinstance(n, a.IndexLambda):
        return f"index_lambda({_expression(n, numbers)})"
    if isinstance(n, a.Einsum):
        return f"einsum {n.spec!r} (" + ", ".join(map(ref, n.args)) + ")"
    if isinstance(n, a.Reshape):
        return (f"reshape({ref(n.array)}, ({', '.join(map(str, n.newshape))}), "
                f"order={n.order})")
    if isinstance(n, a.AxisPermutation):
        return f"transpose({ref(n.array)}, {n.axis_permutation})"
    if isinstance(n, (a.BasicIndex, a.AdvancedIndex)):
        arrays = getattr(n, "index_arrays", ())
        entries = [_index_entry(i, arrays, ref) for i in n.indices]
        return f"{ref(n.array)}[{', '.join(entries)}]"
    if isinstance(n, BodyParam):
        return f"param {n.index}"
    if isinstance(n, LoopResult):
        return f"result {n.index} of {ref(n.loop)}"
    if isinstance(n, Map) and type(n) is Map:
        return (f"map over {n.length}: mapped ("
                + ", ".join(map(ref, n.mapped)) + "), captured ("
                + ", ".join(map(ref, n.captured)) + ")")
    if isinstance(n, Scan) and type(n) is Scan:
        kind = "scan" if n.keep_all else "fold"
        return (f"{kind} over {n.length}: init ("
                + ", ".join(map(ref, n.inits)) + "), scanned ("
                + ", ".join(map(ref, n.scanned)) + "), captured ("
                + ", ".join(map(ref, n.captured)) + ")")
    return _generic(n, ref)


def _index_entry(index: Any, arrays: tuple, ref: Any) -> str:
    from ftlazy.array import NormalizedSlice
    if isinstance(index, NormalizedSlice):
        if index.step == 1:
            return f"{index.start}:+{index.length}"
        return f"{index.start}:+{index.length}:{index.step}"
    if arrays and isinstance(index, int) and 0 <= index < len(arrays):
        return ref(arrays[index])
    return str(index)


def _generic(n: Node, ref: Any) -> str:
    """``snake_case_kind(child refs, field=value, ...)`` for node kinds with
    no form of their own (gathers, jagged loops, host index arrays...)."""
    import dataclasses

    from ftlazy.node import _snake_case
    defaults = {f.name: f.default for f in dataclasses.fields(n)}
    parts = []
    for name in n._init_fields:
        if name in _TYPE_FIELDS or name in n._body_fields:
            continue
        value = getattr(n, name)
        if _is_default(value, defaults.get(name, dataclasses.MISSING)):
            continue
        if name in n._child_fields:
            if isinstance(value, Node):
                parts.append(f"{name}={ref(value)}")
            elif isinstance(value, Mapping):
                parts.append(f"{name}={{" + ", ".join(
                    f"{k}: {ref(v)}" for k, v in value.items()) + "}")
            else:
                refs = [ref(v) for v in value]
                parts.append(f"{name}=(" + ", ".join(refs)
                             + ("," if len(refs) == 1 else "") + ")")
        else:
            parts.append(f"{name}={_short(repr(value))}")
    return f"{_snake_case(type(n).__name__).lstrip('_')}({', '.join(parts)})"


def _is_default(value: Any, default: Any) -> bool:
    """Whether a field holds its declared default (left out of statements)."""
    if default is None or isinstance(default, (bool, int, str, tuple)):
        return type(value) is type(default) and value == default
    return False


def _expression(n: Any, numbers: Mapping[Node, int]) -> str:
    return _Stringifier({name: _ref(b, numbers)
                         for name, b in n.bindings.items()})(n.expr)


def _stringifier_class() -> type:
    from ftlazy.scalar_expr import ExprStringifier

    class Stringifier(ExprStringifier):
        """Prints bindings by their statement numbers (binding names never
        shadow reduction indices, so no substitution is needed)."""

        def __init__(self, names: dict[str, str]) -> None:
            super().__init__()
            self.names = names

        def map_variable(self, expr: prim.Variable, *args: Any,
                         **kwargs: Any) -> str:
            return self.names.get(expr.name, expr.name)

    return Stringifier


_Stringifier = _stringifier_class()

# }}}
