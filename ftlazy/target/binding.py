# SPDX-License-Identifier: MIT
"""Call-time binding of user inputs: size parameters inferred from input
shapes, and validation of every input's presence, shape and dtype. Shared by
the reference evaluator and the OpenCL target."""

from __future__ import annotations

from typing import Any, Iterable, Mapping

import numpy as np

from ftlazy import shapes as sh
from ftlazy.array import Array, DataWrapper, Placeholder, SizeParam
from ftlazy.node import Node, iter_children, topological_order


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
    *roots*, loop bodies included."""
    from ftlazy.fractal import Loop
    names: set[str] = set()
    stack = [list(roots)]
    while stack:
        for n in topological_order(stack.pop()):
            for c in getattr(n, "shape", ()):
                names |= sh.size_param_names(c)
            if isinstance(n, SizeParam):
                names.add(n.name)
            if isinstance(n, Loop):
                stack.append(list(n.body.outputs))
    return names


def _data_shape(value: Any) -> tuple[int, ...]:
    return tuple(int(s) for s in value.shape)


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
    placeholders = {n.name: n for n in inputs if isinstance(n, Placeholder)}
    size_params = {n.name for n in inputs if isinstance(n, SizeParam)}
    size_params |= set(size_names)
    wrappers = [n for n in inputs if isinstance(n, DataWrapper)]
    for n in placeholders.values():
        for c in n.shape:
            size_params |= sh.size_param_names(c)
    for n in wrappers:
        for c in n.shape:
            size_params |= sh.size_param_names(c)

    extra = sorted(set(given) - set(placeholders) - size_params)
    if extra:
        raise ValueError(f"unexpected input(s) {', '.join(map(repr, extra))}: the "
                         f"program's inputs are "
                         f"{sorted(set(placeholders) | size_params)}")
    missing = sorted(set(placeholders) - set(given))
    if missing:
        raise ValueError(f"missing input(s) {', '.join(map(repr, missing))}")

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

    arrays: dict[str, Any] = {}
    for name, ph in placeholders.items():
        value = given[name]
        if not hasattr(value, "shape") or not hasattr(value, "dtype"):
            value = np.asarray(value)
        if value.dtype != ph.dtype:
            raise TypeError(f"input {name!r} has dtype {value.dtype}, expected "
                            f"{ph.dtype}")
        if len(value.shape) != len(ph.shape):
            raise ValueError(f"input {name!r} has shape {tuple(value.shape)}, "
                             f"expected {sh.shape_str(ph.shape)}")
        arrays[name] = value

    shaped = ([(f"input {n.name!r}", n.shape, _data_shape(arrays[n.name]))
               for n in placeholders.values()]
              + [(f"data wrapper {n.name or ''}".rstrip(), n.shape,
                  _data_shape(n.data)) for n in wrappers])
    _infer_size_params(shaped, env)

    unbound = sorted(size_params - set(env))
    if unbound:
        raise ValueError(f"size parameter(s) {', '.join(map(repr, unbound))} "
                         "cannot be inferred from the input shapes; pass them "
                         "as keyword arguments")
    for what, shape, actual in shaped:
        expected = sh.evaluate_shape(shape, env)
        if expected != actual:
            raise ValueError(f"{what} has shape {actual}, expected "
                             f"{sh.shape_str(shape)} = {expected}")
    return env, arrays


def _infer_size_params(shaped: list, env: dict[str, int]) -> None:
    """Solve shape equations one unknown at a time until nothing changes."""
    progress = True
    while progress:
        progress = False
        for what, shape, actual in shaped:
            for c, value in zip(shape, actual):
                try:
                    if sh.solve_component(c, value, env) is not None:
                        progress = True
                except ValueError as e:
                    raise ValueError(f"{what} has shape {actual}, which does "
                                     f"not fit {sh.shape_str(shape)}: {e}") from None


def check_shape_nonnegative(node: Array, env: Mapping[str, int]) -> tuple[int, ...]:
    """The concrete shape of *node*; raises :class:`ValueError` if the size
    params make an entry negative (e.g. ``x[1:-1]`` on a length-1 axis)."""
    shape = sh.evaluate_shape(node.shape, env)
    if any(s < 0 for s in shape):
        raise ValueError(f"for size parameters {dict(env)}, the shape "
                         f"{sh.shape_str(node.shape)} of {type(node).__name__} "
                         f"is {shape}, which is negative: an index or slice "
                         "assumed a longer axis")
    return shape


__all__ = ["collect_inputs", "bind_inputs", "check_shape_nonnegative",
           "iter_children"]
