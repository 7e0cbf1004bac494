# SPDX-License-Identifier: MIT
"""``ft.verify``: check the invariants of ``doc/design.rst`` on a DAG.

The front end and the node constructors keep these invariants for DAGs
built with ``ft.*`` functions. A DAG built by hand, or rewritten by a user's
mapper (:mod:`ftlazy.transform`), can break them in ways no constructor
sees: an :class:`~ftlazy.IndexLambda` whose expression reads a variable it
does not bind, a body parameter used outside its body, a reserved name.
:func:`verify` walks the DAG once per scope (iteratively: deep chains are
fine) and raises :class:`VerificationError` at the first broken rule,
naming the rule and the node by its :func:`ftlazy.pretty` statement.

The rules (:data:`RULES`):

* ``node``: every node is an instance of a class declared with
  :func:`ftlazy.node.node` with all its fields set, and every child is an
  array (a loop or a FractalTensor where the node reads one).
* ``names``: input names (placeholders, size parameters, data wrappers,
  size parameters in shapes) are ASCII identifiers; names starting with
  ``_`` are ftlazy's and must start with ``_ft``. Results of a
  :class:`~ftlazy.DictOfNamedArrays` have user names (no leading ``_``).
  Different inputs have different names, and no placeholder is named like
  a size parameter.
* ``shape``: each component is a non-negative int or an affine integer
  expression of size parameters, in canonical form, that is not negative
  for every value of its size parameters.
* ``dtype``: a numpy bool, integer, float or complex dtype.
* ``tags``: tags are a frozenset of :class:`pytools.tag.Tag`, and there is
  one :class:`~ftlazy.Axis` per dimension.
* ``construction``: building the node again from its fields succeeds (the
  constructor's own checks: einsum specs, loop parameters and carries,
  result indices...) and gives the same shape and dtype.
* ``bindings``: an :class:`~ftlazy.IndexLambda`'s expression reads only its
  bindings, output indices ``_k`` with ``k < ndim``, reduction indices of an
  enclosing reduction, and size parameters; binding names are identifiers
  that are not index names; a binding is subscripted with one index per
  axis (a 0-d binding is read as a plain variable); reductions use fresh
  names and affine bounds; calls are to :data:`ftlazy.scalar_expr.FUNCTIONS`.
* ``types``: expressions are well typed: the operands of an arithmetic
  operator or a comparison have one dtype, comparisons and logical
  operators give ``bool``, casts and arithmetic give the node's dtype.
* ``scope``: no body parameter (:class:`~ftlazy.fractal.BodyParam`) or
  trace parameter is reachable outside a loop body, a body's parameters
  are ``BodyParam(0), BodyParam(1), ...`` in order, a body reads no
  parameter but its own, and no input (placeholder, data wrapper, size
  parameter) is a node of a body: bodies read outer arrays through their
  parameters.

.. autofunction:: verify
.. autoexception:: VerificationError
.. autodata:: RULES
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pymbolic.primitives as prim
from pytools.tag import Tag

from ftlazy.node import NODE_CLASSES, Node, iter_children
from ftlazy.text_ir import Listing, Statement

__all__ = ["verify", "VerificationError", "RULES"]

#: the rules :func:`verify` checks (see the module docs)
RULES = ("node", "names", "shape", "dtype", "tags", "construction", "bindings",
         "types", "scope")

_INDEX_NAME = re.compile(r"_(\d+)$")
_REDUCTION_NAME = re.compile(r"_r\d+$")
_COMPARISONS = (prim.Comparison,)
_LOGICAL = (prim.LogicalAnd, prim.LogicalOr, prim.LogicalNot)
_ARITHMETIC = (prim.Sum, prim.Product, prim.Min, prim.Max)
_BOOL = np.dtype(bool)


class VerificationError(ValueError):
    """A broken invariant found by :func:`verify`.

    .. attribute:: rule

        The rule's name (one of :data:`RULES`).

    .. attribute:: statement

        The offending node's :func:`ftlazy.pretty` statement.

    .. attribute:: node

        The offending node.
    """

    def __init__(self, rule: str, statement: str, node: Any, detail: str) -> None:
        super().__init__(f"ft.verify: rule {rule!r} broken by {statement}: "
                         f"{detail}")
        self.rule = rule
        self.statement = statement
        self.node = node


def verify(expr: Node) -> None:
    """Check that the DAG of *expr* keeps the invariants that
    ``doc/design.rst`` states (see :data:`RULES` and the module docs), for
    DAGs built by hand or rewritten by a mapper. Returns ``None``.

    :arg expr: an array, a :class:`~ftlazy.DictOfNamedArrays`, a
        :class:`~ftlazy.Jagged` or any other ftlazy node.
    :raises VerificationError: (a :class:`ValueError`) naming the broken
        rule and the node, by its statement in :func:`ftlazy.pretty`
        (``%3: float64[n, 3] = index_lambda(...)``) and, for a node inside a
        loop body, the loop's statement.
    :raises TypeError: if *expr* is not an ftlazy node.
    """
    if not isinstance(expr, Node):
        raise TypeError(f"ft.verify expects an ftlazy array or node, got "
                        f"{type(expr).__name__}")
    _check_children_are_nodes(expr)
    try:
        listing = Listing(expr)
    except AttributeError as e:
        raise VerificationError("node", f"the DAG of "
                                f"{type(expr).__name__}", expr,
                                f"a node lacks a field ({e})") from None
    _Verifier(listing).run(expr)


def _check_children_are_nodes(expr: Node) -> None:
    """The ``node`` rule for children that are not nodes at all, which no
    walk over nodes could list (a numpy array where a binding should be)."""
    seen: set[int] = {id(expr)}
    stack = [expr]
    while stack:
        n = stack.pop()
        try:
            children = list(iter_children(n))
            children += [getattr(n, b) for b in n._body_fields]
        except AttributeError as e:
            raise VerificationError("node", f"the {type(n).__name__} node", n,
                                    f"a field is missing ({e})") from None
        for child in children:
            if not isinstance(child, Node):
                raise VerificationError(
                    "node", f"the {type(n).__name__} node", n,
                    f"a child is a {type(child).__name__}, not an array")
            if id(child) not in seen:
                seen.add(id(child))
                stack.append(child)


class _Verifier:
    def __init__(self, listing: Listing) -> None:
        self.listing = listing
        self.owner: dict[int, Statement] = {}
        for stmt in listing.statements:
            for name in stmt.node._body_fields:
                self.owner.setdefault(id(getattr(stmt.node, name)), stmt)
        self.size_names = _all_size_names(listing)

    def fail(self, rule: str, stmt: Statement, detail: str) -> None:
        where = stmt.text
        if stmt.body is not None:
            loop = self.owner.get(id(stmt.body))
            if loop is not None:
                where += f" (in the body of %{loop.number})"
        raise VerificationError(rule, where, stmt.node, detail)

    def run(self, expr: Node) -> None:
        from ftlazy.array import DictOfNamedArrays
        for stmt in self.listing.statements:
            self.check_statement(stmt)
        if isinstance(expr, DictOfNamedArrays):
            self.check_result_names(expr)
        self.check_input_names(expr)

    # {{{ per node

    def check_statement(self, stmt: Statement) -> None:
        from ftlazy.array import Array, IndexLambda
        n = stmt.node
        self.check_node(stmt)
        self.check_scope(stmt)
        if isinstance(n, Array):
            self.check_names(stmt)
            self.check_dtype(stmt)
            self.check_shape(stmt)
            self.check_tags(stmt)
        if isinstance(n, IndexLambda):
            _ExpressionCheck(self, stmt).run()
        self.check_construction(stmt)

    def check_node(self, stmt: Statement) -> None:
        from ftlazy.array import Array
        from ftlazy.fractal import Body, Loop
        from ftlazy.fractal_tensor import Jagged
        n = stmt.node
        if type(n) not in NODE_CLASSES:
            self.fail("node", stmt, f"{type(n).__name__} is not a node class "
                      "declared with ftlazy.node.node")
        for name in n._init_fields:
            if not hasattr(n, name):
                self.fail("node", stmt, f"field {name!r} is not set")
        for child in iter_children(n):
            if not isinstance(child, (Array, Loop, Jagged, Body)):
                self.fail("node", stmt, f"a child is a {type(child).__name__}, "
                          "not an array")

    def check_scope(self, stmt: Statement) -> None:
        from ftlazy.array import DataWrapper, Placeholder, SizeParam
        from ftlazy.fractal import Body, BodyParam, _TraceParam
        n = stmt.node
        if stmt.body is not None and (
                isinstance(n, (Placeholder, DataWrapper)) or (
                    # (a map's element sizes are its body's own: _ft_elem*)
                    isinstance(n, SizeParam) and not n.name.startswith("_ft"))):
            self.fail("scope", stmt, f"the input {type(n).__name__} "
                      f"{n.name!r} is a node of a loop body: a body reads "
                      "outer arrays only through its parameters (a function "
                      "traced by ft.map/ft.scan captures them; a rewrite "
                      "that puts an input in a body must add it to the "
                      "loop's inputs and the body's parameters)")
        if isinstance(n, _TraceParam):
            self.fail("scope", stmt, "a trace parameter of a function being "
                      "traced by ft.map/ft.scan is part of the DAG: an array "
                      "computed inside a loop body leaked out of it")
        if isinstance(n, BodyParam):
            body = stmt.body
            if body is None:
                self.fail("scope", stmt, f"body parameter {n.index} is used "
                          "outside any loop body (a body parameter leaked out "
                          "of its body)")
            if not any(p is n for p in body.params):
                self.fail("scope", stmt, f"body parameter {n.index} is not a "
                          f"parameter of its body ({len(body.params)} "
                          "parameters): it leaked in from another body")
        for name in n._body_fields:
            body = getattr(n, name)
            if not isinstance(body, Body):
                self.fail("node", stmt, f"body field {name!r} holds a "
                          f"{type(body).__name__}, not a Body")
            for i, p in enumerate(body.params):
                if not isinstance(p, BodyParam) or p.index != i:
                    self.fail("scope", stmt, f"parameter {i} of its body is "
                              f"{p!r}, not BodyParam({i}, ...)")

    def check_names(self, stmt: Statement) -> None:
        from ftlazy.array import DataWrapper, Placeholder, SizeParam
        n = stmt.node
        if isinstance(n, (Placeholder, SizeParam, DataWrapper)):
            if n.name is not None or not isinstance(n, DataWrapper):
                problem = _name_problem(n.name)
                if problem:
                    self.fail("names", stmt, f"input name {n.name!r} {problem}")

    def check_dtype(self, stmt: Statement) -> None:
        dtype = stmt.node.dtype
        if not isinstance(dtype, np.dtype) or dtype.kind not in "biufc":
            self.fail("dtype", stmt, f"dtype {dtype!r} is not a numpy bool, "
                      "integer, float or complex dtype")

    def check_shape(self, stmt: Statement) -> None:
        from ftlazy import shapes as sh
        shape = stmt.node.shape
        if not isinstance(shape, tuple):
            self.fail("shape", stmt, f"shape {shape!r} is not a tuple")
        for i, c in enumerate(shape):
            problem = _component_problem(c)
            if problem is None:
                for name in ([] if isinstance(c, int)
                             else sorted(sh.size_param_names(c))):
                    name_problem = _name_problem(name)
                    if name_problem:
                        problem = (f"size parameter name {name!r} "
                                   f"{name_problem}")
                        break
            if problem:
                self.fail("shape", stmt, f"axis {i} of shape "
                          f"{sh.shape_str(shape)}: {problem}")

    def check_tags(self, stmt: Statement) -> None:
        from ftlazy.array import Axis
        n = stmt.node
        if not isinstance(n.tags, frozenset) or not all(
                isinstance(t, Tag) for t in n.tags):
            self.fail("tags", stmt, f"tags {n.tags!r} are not a frozenset of "
                      "pytools.tag.Tag")
        if (not isinstance(n.axes, tuple) or len(n.axes) != len(n.shape)
                or not all(isinstance(a, Axis) for a in n.axes)):
            self.fail("tags", stmt, f"axes {n.axes!r} are not {len(n.shape)} "
                      "Axis objects")
        for i, axis in enumerate(n.axes):
            if not isinstance(axis.tags, frozenset) or not all(
                    isinstance(t, Tag) for t in axis.tags):
                self.fail("tags", stmt, f"the tags of axis {i} are not a "
                          "frozenset of pytools.tag.Tag")

    def check_construction(self, stmt: Statement) -> None:
        from ftlazy import shapes as sh
        n = stmt.node
        fields = {f: getattr(n, f) for f in n._init_fields}
        try:
            rebuilt = type(n)(**fields)
        except (ValueError, TypeError, IndexError, KeyError,
                AttributeError) as e:
            self.fail("construction", stmt, f"building the node again from "
                      f"its fields fails: {type(e).__name__}: {e}")
        if rebuilt is n or not hasattr(n, "shape"):
            return
        if not sh.shapes_equal(rebuilt.shape, n.shape) or \
                rebuilt.dtype != n.dtype:
            self.fail("construction", stmt, f"its inputs give shape "
                      f"{sh.shape_str(rebuilt.shape)} and dtype "
                      f"{rebuilt.dtype}, the node has "
                      f"{sh.shape_str(n.shape)} and {n.dtype}")

    # }}}

    # {{{ whole DAG

    def check_result_names(self, expr: Any) -> None:
        from ftlazy.array import Array
        from ftlazy.fractal_tensor import Jagged
        stmt = Statement(-1, expr, None, 0, "the DictOfNamedArrays of the "
                         "results")
        for name, value in expr.data.items():
            problem = _name_problem(name, user=True)
            if problem:
                self.fail("names", stmt, f"result name {name!r} {problem}")
            if not isinstance(value, (Array, Jagged)):
                self.fail("node", stmt, f"result {name!r} is a "
                          f"{type(value).__name__}, not an array or a "
                          "FractalTensor")

    def check_input_names(self, expr: Node) -> None:
        from ftlazy.analysis import check_unique_input_names
        from ftlazy.array import Array, DictOfNamedArrays
        roots = expr if isinstance(expr, (Array, DictOfNamedArrays)) else None
        if roots is None:
            return
        try:
            check_unique_input_names(roots)
        except ValueError as e:
            stmt = Statement(-1, expr, None, 0, "the inputs of the DAG")
            self.fail("names", stmt, str(e))

    # }}}


def _all_size_names(listing: Listing) -> frozenset[str]:
    """The size parameters of the DAG: size parameter nodes, data-dependent
    sizes and the names in every shape (loop bodies included)."""
    from ftlazy.array import SizeParam
    from ftlazy.fractal_access import DerivedSize
    from ftlazy.shapes import size_param_names
    names: set[str] = set()
    for stmt in listing.statements:
        n = stmt.node
        if isinstance(n, (SizeParam, DerivedSize)):
            names.add(n.name)
        for c in getattr(n, "shape", ()):
            if not isinstance(c, int):
                try:
                    names |= size_param_names(c)
                except (TypeError, ValueError):
                    pass  # reported by the shape rule
    return frozenset(names)


def _name_problem(name: Any, user: bool = False) -> str | None:
    """What is wrong with an input (or, *user*, result) name, or None."""
    import keyword
    if not isinstance(name, str):
        return f"is a {type(name).__name__}, not a str"
    if not name.isidentifier() or not name.isascii() or keyword.iskeyword(name):
        return "is not an ASCII identifier"
    if user and name.startswith("_"):
        return "starts with '_', which is reserved for ftlazy's names"
    if name.startswith("_") and not name.startswith("_ft"):
        return ("starts with '_' but not with '_ft': such names are reserved "
                "for ftlazy's generated code (_0, _r0, _in0)")
    return None


def _component_problem(c: Any) -> str | None:
    from ftlazy import shapes as sh
    if isinstance(c, (bool, np.bool_)):
        return f"{c!r} is a bool, not an integer"
    if isinstance(c, int):
        return f"{c} is negative" if c < 0 else None
    if not isinstance(c, prim.ExpressionNode):
        return f"{c!r} ({type(c).__name__}) is not an int or an expression"
    try:
        canonical = sh.normalize_component(c)
    except (TypeError, ValueError) as e:
        return f"{c} is not an affine integer expression of size parameters ({e})"
    if canonical != c:
        return f"{c} is not in canonical form ({canonical})"
    if sh.prove_lt(c, 0):
        return f"{c} is negative for every value of its size parameters"
    return None


class _ExpressionCheck:
    """The ``bindings`` and ``types`` rules on one IndexLambda."""

    def __init__(self, verifier: _Verifier, stmt: Statement) -> None:
        self.verifier = verifier
        self.stmt = stmt
        self.node = stmt.node

    def fail(self, rule: str, detail: str) -> None:
        self.verifier.fail(rule, self.stmt, detail)

    def run(self) -> None:
        from ftlazy.array import Array
        for name, b in self.node.bindings.items():
            if (not isinstance(name, str) or not name.isidentifier()
                    or _INDEX_NAME.match(name) or _REDUCTION_NAME.match(name)):
                self.fail("bindings", f"binding name {name!r} is not an "
                          "identifier other than an index name (_0, _r0)")
            if not isinstance(b, Array):
                self.fail("bindings", f"binding {name!r} is a "
                          f"{type(b).__name__}, not an array")
        self.walk(self.node.expr)
        self.check_result_type()

    def walk(self, expr: Any) -> None:
        """Every variable, subscript, call and reduction of *expr*, with the
        reduction names bound where they occur (an explicit stack)."""
        from ftlazy.scalar_expr import FUNCTIONS, Reduce, expression_children
        bindings = self.node.bindings
        stack: list[tuple[Any, frozenset[str]]] = [(expr, frozenset())]
        while stack:
            e, bound = stack.pop()
            if isinstance(e, prim.Subscript):
                agg = e.aggregate
                if not isinstance(agg, prim.Variable) or agg.name not in bindings:
                    self.fail("bindings", f"subscript {e} reads "
                              f"{agg}, which is not a binding")
                ndim = bindings[agg.name].ndim
                if len(e.index_tuple) != ndim:
                    self.fail("bindings", f"{e} reads binding {agg.name!r} of "
                              f"{ndim} axes with {len(e.index_tuple)} indices")
                stack.extend((i, bound) for i in e.index_tuple)
                continue
            if isinstance(e, prim.Variable):
                self.check_variable(e.name, bound, bare=True)
                continue
            if isinstance(e, prim.Call):
                fn = e.function
                if not isinstance(fn, prim.Variable) or fn.name not in FUNCTIONS:
                    self.fail("bindings", f"call of {fn}, which is not one of "
                              "ftlazy's scalar functions")
                stack.extend((p, bound) for p in e.parameters)
                continue
            if isinstance(e, Reduce):
                names = [b[0] for b in e.bounds]
                for name, lo, hi in e.bounds:
                    if not _REDUCTION_NAME.match(str(name)) or name in bound \
                            or names.count(name) > 1:
                        self.fail("bindings", f"reduction index {name!r} is not "
                                  "a fresh name _r<k>")
                    for limit in (lo, hi):
                        problem = _bound_problem(limit, self.verifier.size_names)
                        if problem:
                            self.fail("bindings", f"reduction bound {limit} of "
                                      f"{name}: {problem}")
                stack.append((e.inner, bound | frozenset(names)))
                continue
            if isinstance(e, _COMPARISONS):
                left, right = (_dtype_of(s, bindings) for s in (e.left, e.right))
                if left is not None and right is not None and left != right:
                    self.fail("types", f"comparison {e} compares {left} with "
                              f"{right}")
            elif isinstance(e, _ARITHMETIC):
                kinds = {d for d in (_dtype_of(c, bindings) for c in e.children)
                         if d is not None}
                if len(kinds) > 1:
                    self.fail("types", f"the operands of {e} have dtypes "
                              f"{sorted(map(str, kinds))}: the front end casts "
                              "them to one")
            stack.extend((c, bound) for c in expression_children(e))

    def check_variable(self, name: str, bound: frozenset[str], bare: bool) -> None:
        bindings = self.node.bindings
        if name in bindings:
            if bindings[name].ndim:
                self.fail("bindings", f"binding {name!r} has "
                          f"{bindings[name].ndim} axes and is read without "
                          "indices")
            return
        m = _INDEX_NAME.match(name)
        if m:
            if int(m.group(1)) >= self.node.ndim:
                self.fail("bindings", f"index variable {name} is out of range "
                          f"for an array of {self.node.ndim} axes")
            return
        if _REDUCTION_NAME.match(name):
            if name not in bound:
                self.fail("bindings", f"reduction index {name} is used outside "
                          "a reduction that binds it")
            return
        if name not in self.verifier.size_names:
            self.fail("bindings", f"variable {name!r} is neither a binding "
                      f"(bindings: {sorted(bindings)}), an index nor a size "
                      "parameter")

    def check_result_type(self) -> None:
        from ftlazy.scalar_expr import TypeCast
        expr, dtype = self.node.expr, self.node.dtype
        if isinstance(expr, _COMPARISONS + _LOGICAL):
            if dtype != _BOOL:
                self.fail("types", f"a comparison or logical expression gives "
                          f"bool, the node's dtype is {dtype}")
            return
        if isinstance(expr, TypeCast) and expr.dtype != dtype:
            self.fail("types", f"the expression casts to {expr.dtype}, the "
                      f"node's dtype is {dtype}")
        if isinstance(expr, _ARITHMETIC + (prim.Subscript, TypeCast, prim.Call)):
            found = _dtype_of(expr, self.node.bindings)
            if found is not None and found != dtype:
                self.fail("types", f"the expression computes {found}, the "
                          f"node's dtype is {dtype}")


def _bound_problem(limit: Any, size_names: frozenset[str]) -> str | None:
    from ftlazy import shapes as sh
    try:
        form = sh.to_affine(limit)
    except (TypeError, ValueError) as e:
        return str(e)
    unknown = set(form.coeffs) - size_names
    if unknown:
        return f"{sorted(unknown)} are not size parameters"
    return None


def _dtype_of(e: Any, bindings: Any) -> np.dtype | None:
    """The dtype of a well-typed expression where it is evident (None for
    index arithmetic and functions whose result type differs from their
    arguments')."""
    from ftlazy.scalar_expr import Reduce, TypeCast
    while True:
        if isinstance(e, TypeCast):
            return e.dtype
        if isinstance(e, np.generic):
            return e.dtype
        if isinstance(e, (bool, int, float, complex)):
            return None  # Python numbers are weak (NEP 50) or index arithmetic
        if isinstance(e, prim.Subscript):
            b = bindings.get(getattr(e.aggregate, "name", None))
            return None if b is None else b.dtype
        if isinstance(e, prim.Variable):
            b = bindings.get(e.name)
            return None if b is None else b.dtype
        if isinstance(e, _COMPARISONS + _LOGICAL):
            return _BOOL
        if isinstance(e, Reduce) and e.op in ("sum", "product", "max", "min"):
            e = e.inner
            continue
        if isinstance(e, _ARITHMETIC):
            found = [d for d in (_dtype_of(c, bindings) for c in e.children)
                     if d is not None]
            return found[0] if found else None
        if isinstance(e, prim.Call) and isinstance(e.function, prim.Variable):
            name = e.function.name
            if name in ("isnan", "isinf"):
                return _BOOL
            if name in _SAME_TYPE_FUNCTIONS and e.parameters:
                e = e.parameters[0]
                continue
        return None


#: scalar functions whose result has their (first) argument's dtype
_SAME_TYPE_FUNCTIONS = frozenset({
    "sqrt", "exp", "exp2", "log", "log2", "log10", "sin", "cos", "tan",
    "arcsin", "arccos", "arctan", "arctan2", "sinh", "cosh", "tanh", "floor",
    "ceil", "rint", "fmod", "conj"})
