# SPDX-License-Identifier: MIT
"""Reference evaluation of a
:class:`~ftlazy.jagged_scan_outer.JaggedScan` (a scan, fold or reduce over
the outer list of FractalTensors): the body runs once per element, in
order, with the element's sizes bound from the offsets.

.. autofunction:: evaluate_jagged_scan
"""

from __future__ import annotations

from typing import Any, Callable, Mapping

import numpy as np

from ftlazy import shapes as sh
from ftlazy.array import Placeholder
from ftlazy.node import Node
from ftlazy.target.jagged_inputs import (
    check_zipped, element_arrays, fractal_tensor_label)

__all__ = ["evaluate_jagged_scan", "scanned_labels"]


def scanned_labels(parts: list[tuple[int, tuple[Node, ...]]]) -> list[str | None]:
    """How messages name each scanned input: a FractalTensor by its input
    (see :func:`~ftlazy.target.jagged_inputs.fractal_tensor_label`), a dense
    placeholder by its name."""
    labels: list[str | None] = []
    for depth, arrays in parts:
        if depth > 1:
            labels.append(fractal_tensor_label(arrays[1]))
        elif isinstance(arrays[0], Placeholder) and arrays[0].name:
            labels.append(repr(arrays[0].name))
        else:
            labels.append(None)
    return labels


def evaluate_jagged_scan(expr: Any, rec: Callable[[Node], Any],
                         env: Mapping[str, int],
                         run_body: Callable[[dict, tuple], list[np.ndarray]]
                         ) -> tuple[np.ndarray, ...]:
    """The results of the :class:`~ftlazy.jagged_scan_outer.JaggedScan`
    *expr*: ``run_body(env, params)`` evaluates its body once per element,
    in order; zipped inputs must agree in their outer length (and
    FractalTensors in every offsets level), else a :class:`ValueError`
    naming both."""
    parts = expr.mapped_parts()
    mapped = [(depth, [np.asarray(rec(a)) for a in arrays])
              for depth, arrays in parts]
    n = check_zipped(expr.what, mapped, scanned_labels(parts))
    carries = [np.asarray(rec(a)) for a in expr.inits]
    captured = tuple(rec(a) for a in expr.captured)
    history = []
    for i in range(n):
        local = dict(env)
        params: list[np.ndarray] = []
        for depth, arrays in mapped:
            params += element_arrays(depth, arrays, expr.symbols, i, local)
        try:
            carries = [np.asarray(c) for c in run_body(
                local, tuple(carries) + tuple(params) + captured)]
        except (ValueError, IndexError) as err:
            # (the element's sizes under the names users know: L, not
            # _ft_elem0_L)
            from ftlazy.fractal_tensor import readable_sizes
            kind = ValueError if isinstance(err, ValueError) else IndexError
            raise kind(f"{expr.what}, element {i}: {readable_sizes(err)}"
                       ) from err
        history.append(carries)
    if not expr.keep_all:
        return tuple(carries)
    if not history:
        return tuple(np.empty(sh.evaluate_shape(expr.output_shape(k), env),
                              expr.output_dtype(k))
                     for k in range(expr.num_outputs))
    return tuple(np.stack([h[k] for h in history])
                 for k in range(expr.num_outputs))
