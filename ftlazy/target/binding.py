# SPDX-License-Identifier: MIT
"""Call-time binding of user inputs: size parameters inferred from input
shapes, and validation of every input's presence, shape and dtype. Shared by
the reference evaluator and the OpenCL target."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Iterable, Mapping

import numpy as np

from ftlazy import shapes as sh
from ftlazy.array import Array, DataWrapper, Placeholder, SizeParam
from ftlazy.node import Node, iter_children, topological_order
from ftlazy.tags import ShapeRequirement


def collect_inputs(roots: Iterable[Node]) -> list[Array]:
    """The placeholders, size params and data wrappers reachable from
    *roots* (outer scope), in a deterministic order. Raises
    :class:`ValueError` when two different input nodes share a name."""
    found: list[Array] = []
    by_name: dict[str, Array] = {}
    for n in topological_order(list(roots)):
        if not isinstance(n, (Placeholder, SizeParam, DataWrapper)):
            continue
        found.append(n)
        name = n.name
        if name is None:
            continue
        other = by_name.setdefault(name, n)
        if other is not n:
            raise ValueError(
                f"two different inputs are named {name!r}: {other!r} and {n!r}")
    return found


def collect_size_names(roots: Iterable[Node]) -> set[str]:
    """Names of all size parameters in the shapes of nodes reachable from
    *roots*, loop bodies included, that the user binds: not the sizes of
    one element of a map over FractalTensors, nor data-dependent sizes
    whose :class:`~ftlazy.fractal_access.DerivedSize` definition is
    reachable (both are computed at run time)."""
    from ftlazy.fractal import Loop
    from ftlazy.fractal_access import DerivedSize
    from ftlazy.fractal_tensor import ELEMENT_SIZE_PREFIX
    names: set[str] = set()
    defined: set[str] = set()
    stack = [list(roots)]
    while stack:
        for n in topological_order(stack.pop()):
            for c in getattr(n, "shape", ()):
                names |= sh.size_param_names(c)
            if isinstance(n, SizeParam):
                names.add(n.name)
            elif isinstance(n, DerivedSize):
                defined.add(n.name)
            if isinstance(n, Loop):
                stack.append(list(n.body.outputs))
    # the sizes of one element of a map over FractalTensors are bound per
    # element from the offsets, never by the user
    return {name for name in names - defined
            if not name.startswith(ELEMENT_SIZE_PREFIX)}


def _data_shape(value: Any) -> tuple[int, ...]:
    return tuple(int(s) for s in value.shape)


@dataclass(frozen=True)
class _Signature:
    """What :func:`bind_inputs` needs of a DAG's inputs, found once per
    list of inputs: the placeholders by name, every size parameter name,
    and the shapes to match (``(what, shape, the size parameters of each
    component)``) of the placeholders (their arrays' shapes given at each
    call) and of the data wrappers (with their data's shape)."""

    placeholders: dict[str, Placeholder]
    size_params: frozenset[str]
    placeholder_shapes: tuple[tuple[str, sh.Shape, tuple], ...]
    wrapper_shapes: tuple[tuple[str, sh.Shape, tuple, tuple[int, ...]], ...]


@lru_cache(maxsize=256)
def _signature(inputs: tuple[Array, ...], size_names: frozenset[str]
               ) -> _Signature:
    placeholders = {n.name: n for n in inputs if isinstance(n, Placeholder)}
    wrappers = [n for n in inputs if isinstance(n, DataWrapper)]

    def names(shape: sh.Shape) -> tuple[frozenset[str], ...]:
        return tuple(sh.size_param_names(c) for c in shape)
    size_params = {n.name for n in inputs if isinstance(n, SizeParam)}
    size_params |= size_names
    for n in [*placeholders.values(), *wrappers]:
        for c in names(n.shape):
            size_params |= c
    return _Signature(
        placeholders, frozenset(size_params),
        tuple((f"input {n.name!r}", n.shape, names(n.shape))
              for n in placeholders.values()),
        tuple((f"data wrapper {n.name or ''}".rstrip(), n.shape, names(n.shape),
               _data_shape(n.data)) for n in wrappers))


def user_input_names(names: Iterable[str], placeholders: Iterable[Node],
                     given: Iterable[str] = ()) -> list[str]:
    """*names* of program inputs as the user passes them, sorted: the parts
    of a FractalTensor (values, offsets) and the sizes of their shapes go
    by the FractalTensor's name, except where parts of it are *given*
    (passed one by one)."""
    from ftlazy.fractal_tensor import JaggedInputPart
    owner: dict[str, str] = {}
    for p in placeholders:
        for tag in getattr(p, "tags", ()):
            if isinstance(tag, JaggedInputPart):
                owner[p.name] = tag.name
                for size in sh.shape_size_param_names(p.shape):
                    owner[size] = tag.name
    by_parts = {owner[n] for n in given if n in owner}
    return sorted({n if owner.get(n, n) in by_parts else owner.get(n, n)
                   for n in names})


def unexpected_inputs_message(extra: Iterable[str], placeholders: Iterable[Node],
                              known: Iterable[str]) -> str:
    """The message for *extra* inputs a program with inputs *known* (names
    of *placeholders* and of size parameters) does not take."""
    placeholders = list(placeholders)
    return (f"unexpected input(s) {', '.join(map(repr, sorted(extra)))}: the "
            f"program's inputs are "
            f"{user_input_names(known, placeholders)}")


def bind_inputs(inputs: list[Array], given: Mapping[str, Any],
                size_names: Iterable[str] = ()
                ) -> tuple[dict[str, int], dict[str, Any]]:
    """Match *given* user inputs (by name) to the DAG's *inputs*.

    Returns ``(size_env, arrays)``: values of all size params (given or
    inferred from shapes) and the validated input arrays by name (numpy
    arrays are passed through; lists are converted). Raises
    :class:`ValueError` for missing, extra or mis-shaped inputs and
    contradictory size params, :class:`TypeError` for mis-typed ones.
    """
    signature = _signature(tuple(inputs), frozenset(size_names))
    placeholders = signature.placeholders
    size_params = signature.size_params
    given = with_fractal_tensor_sizes(given, set(placeholders) | size_params)

    extra = sorted(set(given) - set(placeholders) - size_params)
    if extra:
        raise ValueError(unexpected_inputs_message(
            extra, placeholders.values(), set(placeholders) | size_params))
    missing = set(placeholders) - set(given)
    if missing:
        raise ValueError("missing input(s) " + ", ".join(
            map(repr, user_input_names(missing, placeholders.values(), given))))

    env: dict[str, int] = {}
    for name in size_params & set(given):
        value = given[name]
        if (isinstance(value, (bool, np.bool_))
                or not isinstance(value, (int, np.integer))):
            raise TypeError(f"size parameter {name!r} must be an int, got "
                            f"{type(value).__name__} {value!r}")
        if value < 0:
            raise ValueError(f"size parameter {name!r} must be non-negative, "
                             f"got {value}")
        env[name] = int(value)

    from ftlazy.jagged import JaggedArray
    arrays: dict[str, Any] = {}
    for name, ph in placeholders.items():
        value = given[name]
        if isinstance(value, JaggedArray):
            raise TypeError(f"input {name!r} is a JaggedArray of depth "
                            f"{value.depth}, but the program's {name!r} is an "
                            f"array of shape {sh.shape_str(ph.shape)} (a "
                            "FractalTensor of depth 1 is an array: pass its "
                            "rows)")
        if not hasattr(value, "shape") or not hasattr(value, "dtype"):
            value = np.asarray(value)
        if (value.dtype != ph.dtype and isinstance(value, np.ndarray)
                and value.dtype.newbyteorder("=") == ph.dtype):
            value = value.astype(ph.dtype)      # (the other byte order)
        if value.dtype != ph.dtype:
            raise TypeError(f"input {name!r} has dtype {value.dtype}, expected "
                            f"{ph.dtype}")
        if len(value.shape) != len(ph.shape):
            raise ValueError(f"input {name!r} has shape {tuple(value.shape)}, "
                             f"expected {sh.shape_str(ph.shape)}")
        arrays[name] = value

    shaped = ([(what, shape, names, _data_shape(arrays[name]))
               for name, (what, shape, names) in zip(
                   placeholders, signature.placeholder_shapes)]
              + list(signature.wrapper_shapes))
    _infer_size_params(shaped, env)

    unbound = sorted(size_params - set(env))
    if unbound:
        raise ValueError(f"size parameter(s) {', '.join(map(repr, unbound))} "
                         "cannot be inferred from the input shapes; pass them "
                         "as keyword arguments")
    for what, shape, _, actual in shaped:
        expected = sh.evaluate_shape(shape, env)
        if expected != actual:
            raise ValueError(f"{what} has shape {actual}, expected "
                             f"{sh.shape_str(shape)} = {expected}")
    return env, arrays


def with_fractal_tensor_sizes(given: Mapping[str, Any], known: set[str]
                              ) -> Mapping[str, Any]:
    """*given* where a FractalTensor passed whole under its name *xs*, which
    is not among the program's *known* input names, but whose sizes
    ``xs_n<k>`` are (``ft.arange(xs.length)``), is replaced by those sizes:
    the numbers of its items at each level."""
    unknown = [name for name in given if name not in known]
    if not unknown:
        return given
    from ftlazy.jagged import JaggedArray
    given = dict(given)
    for name in unknown:
        wanted = {int(s[len(name) + 2:]): s for s in known
                  if s.startswith(f"{name}_n") and s[len(name) + 2:].isdigit()}
        value = given[name]
        if not wanted or not isinstance(value, (JaggedArray, list, tuple)):
            continue
        counts = _item_counts(name, value, max(wanted) + 1)
        del given[name]
        for level, size in wanted.items():
            if size in given and given[size] != counts[level]:
                raise ValueError(f"size parameter {size!r} is {given[size]}, "
                                 f"but the FractalTensor {name!r} has "
                                 f"{counts[level]} items at level {level}")
            given[size] = counts[level]
    return given


def _item_counts(name: str, value: Any, levels: int) -> list[int]:
    """The numbers of items at the outer *levels* of the FractalTensor
    *value* (a :class:`~ftlazy.JaggedArray` or nested lists)."""
    from ftlazy.jagged import JaggedArray
    if isinstance(value, JaggedArray):
        if len(value.offsets) < levels:
            raise ValueError(f"FractalTensor {name!r} has depth {value.depth}: "
                             f"it has no size {name}_n{levels - 1}")
        return [len(o) - 1 for o in value.offsets[:levels]]
    counts, items = [], list(value)
    for level in range(levels):
        counts.append(len(items))
        if level + 1 < levels:
            try:
                items = [item for outer in items for item in outer]
            except TypeError:
                raise ValueError(f"FractalTensor {name!r} has no level "
                                 f"{level + 1}: the program uses its size "
                                 f"{name}_n{level + 1}") from None
    return counts


def _infer_size_params(shaped: list, env: dict[str, int]) -> None:
    """Solve shape equations one unknown at a time until nothing changes
    (*shaped*: ``(what, shape, names of each component, actual shape)``)."""
    progress = True
    while progress:
        progress = False
        for what, shape, names, actual in shaped:
            for c, cnames, value in zip(shape, names, actual):
                if env.keys() >= cnames:
                    continue  # (constant, or every size known)
                try:
                    if sh.solve_component(c, value, env) is not None:
                        progress = True
                except ValueError as e:
                    raise ValueError(f"{what} has shape {actual}, which does "
                                     f"not fit {sh.shape_str(shape)}: {e}") from None


def negative_shape_message(kind: str | ShapeRequirement, shape: Any,
                           values: tuple[int, ...],
                           env: Mapping[str, int]) -> str:
    """The message of the :class:`ValueError` for a shape that the size
    parameters *env* make negative; *kind* names the node's kind, or is
    what the operation that built it requires (see :func:`node_kind`)."""
    note = sh.internal_sizes_note(tuple(shape))
    if isinstance(kind, ShapeRequirement):
        return (f"{kind.message} (for size parameters {dict(env)}, a shape "
                f"{sh.shape_str(shape)} is {values}){note}")
    return (f"for size parameters {dict(env)}, the shape {sh.shape_str(shape)} "
            f"of {kind} is {values}, which is negative: an index or slice "
            f"assumed a longer axis{note}")


def node_kind(node: Any) -> str | ShapeRequirement:
    """How a message about *node*'s negative shape names it: the
    requirement its operation tagged it with, else its kind."""
    tags = node.tags_of_type(ShapeRequirement) if isinstance(node, Array) else ()
    return next(iter(tags), None) or type(node).__name__


def check_shape_nonnegative(node: Array, env: Mapping[str, int]) -> tuple[int, ...]:
    """The concrete shape of *node*; raises :class:`ValueError` if the size
    params make an entry negative (e.g. ``x[1:-1]`` on a length-1 axis)."""
    shape = sh.evaluate_shape(node.shape, env)
    if any(s < 0 for s in shape):
        raise ValueError(negative_shape_message(node_kind(node), node.shape,
                                                shape, env))
    return shape


# {{{ conditions on size parameters, collected once per DAG

#: the reductions without an identity
_NO_IDENTITY = ("max", "min")


@dataclass(frozen=True)
class SizeChecks:
    """Conditions on the size parameters that a DAG's evaluation needs and
    that only their values decide: collected from the DAG once (see
    :func:`collect_size_checks`), checked by :meth:`check` at every call,
    before anything is computed or allocated.

    Entries carry *guards*: the lengths of the loops around them (a loop
    body runs only for a loop of at least one step).
    """

    #: ``(node kind, shape, guards)``: shapes that may evaluate negative,
    #: each distinct shape once, in evaluation order
    shapes: tuple[tuple[Any, sh.Shape, sh.Shape], ...] = ()
    #: ``(reduction, extent, guards)``: extents of reductions without an
    #: identity (max, min) that may be 0
    extrema: tuple[tuple[str, Any, sh.Shape], ...] = ()

    def check(self, env: Mapping[str, int],
              names: Mapping[str, str] | None = None) -> None:
        """Raise :class:`ValueError` if *env* makes a shape negative or an
        extent of a max/min reduction 0. *names* renames size parameters
        for the message (canonical name -> user name)."""
        for kind, shape, guards in self.shapes:
            values = sh.evaluate_shape(shape, env)
            if any(v < 0 for v in values) and _guards_hold(guards, env):
                raise ValueError(negative_shape_message(
                    kind, rename_shape(shape, names), values,
                    _user_env(env, names)))
        for op, extent, guards in self.extrema:
            if (sh.evaluate_component(extent, env) <= 0
                    and _guards_hold(guards, env)):
                from ftlazy.ops.reductions import empty_reduction_message
                (shown,) = rename_shape((extent,), names)
                raise ValueError(empty_reduction_message(op, shown))


def _guards_hold(guards: sh.Shape, env: Mapping[str, int]) -> bool:
    return all(sh.evaluate_component(g, env) > 0 for g in guards)


def _user_env(env: Mapping[str, int], names: Mapping[str, str] | None
              ) -> dict[str, int]:
    if not names:
        return dict(env)
    return {names[k]: v for k, v in env.items() if k in names}


def rename_shape(shape: Any, names: Mapping[str, str] | None) -> tuple:
    """*shape* with its size parameters renamed by *names* (for messages)."""
    if not names:
        return tuple(shape)
    result = []
    for c in shape:
        if isinstance(c, int):
            result.append(c)
            continue
        form = sh.to_affine(c)
        result.append(sh.AffineForm({names.get(k, k): v for k, v in
                                     form.coeffs.items()}, form.const).to_expr())
    return tuple(result)


def _may_be_below(c: Any, least: int) -> bool:
    """Whether the shape component *c* may be less than *least* for some
    non-negative size parameter values (0: negative, 1: empty)."""
    if isinstance(c, int):
        return c < least
    form = sh.to_affine(c)
    if form.const >= least and all(v >= 0 for v in form.coeffs.values()):
        return False
    return not sh.prove_le(least, c)


def collect_size_checks(roots: Iterable[Node]) -> SizeChecks:
    """The :class:`SizeChecks` of the DAG of *roots*, loop bodies
    included: every shape that some size parameter values make negative
    (``x[2:]`` of an ``(n,)`` array), and every extent of a max/min
    reduction that may be 0."""
    from ftlazy.array import IndexLambda
    from ftlazy.fractal import Loop
    from ftlazy.scalar_expr import Reduce, iter_subexpressions
    from ftlazy.fractal_tensor import JaggedMap
    shapes: list[tuple[Any, sh.Shape, sh.Shape]] = []
    extrema: list[tuple[str, Any, sh.Shape]] = []
    seen_shapes: set[tuple] = set()
    seen_extents: set[tuple] = set()
    stack: list[tuple[list[Node], sh.Shape]] = [(list(roots), ())]
    while stack:
        nodes, guards = stack.pop()
        for n in topological_order(nodes):
            shape = getattr(n, "shape", ())
            if (shape, guards) not in seen_shapes and any(
                    _may_be_below(c, 0) for c in shape):
                seen_shapes.add((shape, guards))
                shapes.append((node_kind(n), shape, guards))
            if isinstance(n, IndexLambda):
                for e in iter_subexpressions(n.expr):
                    if not isinstance(e, Reduce) or e.op not in _NO_IDENTITY:
                        continue
                    for _, _, hi in e.bounds:
                        key = (e.op, hi, guards)
                        if key not in seen_extents and _may_be_below(hi, 1):
                            seen_extents.add(key)
                            extrema.append(key)
            if isinstance(n, Loop) and not isinstance(n, JaggedMap):
                # (a map over FractalTensors checks each element's sizes
                # when it binds them)
                stack.append((list(n.body.outputs), guards + (n.length,)))
    return SizeChecks(tuple(shapes), tuple(extrema))

# }}}


__all__ = ["collect_inputs", "bind_inputs", "check_shape_nonnegative",
           "iter_children", "SizeChecks", "collect_size_checks",
           "negative_shape_message", "rename_shape"]
