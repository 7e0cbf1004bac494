# SPDX-License-Identifier: MIT
"""The reference evaluator: computes any DAG with numpy alone.

It is the oracle of the test suite, so it evaluates every node by its
definition (high-level nodes with the matching numpy function, IndexLambda
bodies by vectorized evaluation of the scalar expression over index grids)
rather than by the lowering that code generation uses.

.. autofunction:: evaluate_numpy
"""

from __future__ import annotations

from typing import Any, Mapping

import numpy as np
import pymbolic.primitives as prim
from pymbolic.mapper import Mapper as ExprMapper

from ftlazy import shapes as sh
from ftlazy.analysis import check_inputs_against_size_names
from ftlazy.array import (
    AdvancedIndex, Array, AxisPermutation, BasicIndex, Concatenate, DataWrapper,
    DictOfNamedArrays, Einsum, IndexLambda, NormalizedSlice, Placeholder, Reshape,
    Roll, SizeParam, Stack)
from ftlazy.fractal import (
    Body, BodyParam, Gather, LoopResult, Map, Scan, Scatter, check_not_body_local)
from ftlazy.ops.reductions import empty_reduction_message
from ftlazy.scalar_expr import Reduce, TypeCast
from ftlazy.target.binding import (
    bind_inputs, check_shape_nonnegative, collect_inputs, collect_size_names)
from ftlazy.transform.mappers import CachedMapper
from ftlazy.transform.prune_outputs import prune_unused_map_results
from ftlazy.fractal_access import (
    DerivedSize, HostIndexArray, check_body_results)
from ftlazy.fractal_tensor import Jagged, JaggedMap
from ftlazy.node import topological_order
from ftlazy.target.jagged_inputs import (
    evaluate_jagged_map, expand_jagged_inputs, jagged_result)

_FUNCTIONS = {
    "abs": np.abs, "sqrt": np.sqrt, "exp": np.exp, "exp2": np.exp2, "log": np.log,
    "log2": np.log2, "log10": np.log10, "sin": np.sin, "cos": np.cos,
    "tan": np.tan, "arcsin": np.arcsin, "arccos": np.arccos, "arctan": np.arctan,
    "arctan2": np.arctan2, "sinh": np.sinh, "cosh": np.cosh, "tanh": np.tanh,
    "isnan": np.isnan, "isinf": np.isinf, "floor": np.floor, "ceil": np.ceil,
    "rint": np.rint,
    "fmod": np.fmod, "real": np.real, "imag": np.imag, "conj": np.conj,
}

_REDUCERS = {
    "sum": lambda v, axes: np.sum(v, axis=axes, dtype=v.dtype),
    "product": lambda v, axes: np.prod(v, axis=axes, dtype=v.dtype),
    "max": lambda v, axes: np.max(v, axis=axes),
    "min": lambda v, axes: np.min(v, axis=axes),
    "any": lambda v, axes: np.any(v, axis=axes),
    "all": lambda v, axes: np.all(v, axis=axes),
}


class _ScalarEvaluator(ExprMapper):
    """Evaluates an IndexLambda body over open index grids. Every value is
    broadcastable to ``(*out_shape, *reduction_shape)`` with the current
    number of dimensions, so numpy's right-aligned broadcasting is exact."""

    def __init__(self, out_shape: tuple[int, ...], bindings: Mapping[str, np.ndarray],
                 env: Mapping[str, int]) -> None:
        self.bindings = bindings
        self.env = env
        self.axis_of: dict[str, int] = {}
        self.extent: list[int] = []
        #: (index name, number of axes) -> its grid (a reduction's names
        #: are bound to one extent while it runs; outer grids gain axes)
        self._grids: dict[tuple[str, int], np.ndarray] = {}
        for i, n in enumerate(out_shape):
            self.axis_of[f"_{i}"] = i
            self.extent.append(n)

    def _grid(self, name: str) -> np.ndarray:
        key = (name, len(self.extent))
        grid = self._grids.get(key)
        if grid is None:
            axis = self.axis_of[name]
            shape = [1] * len(self.extent)
            shape[axis] = self.extent[axis]
            grid = np.arange(self.extent[axis], dtype=np.int64).reshape(shape)
            self._grids[key] = grid
        return grid

    def map_constant(self, expr: Any) -> Any:
        return expr

    def map_nan(self, expr: prim.NaN) -> Any:
        return expr.data_type(np.nan)

    def map_variable(self, expr: prim.Variable) -> Any:
        name = expr.name
        if name in self.axis_of:
            return self._grid(name)
        if name in self.bindings:
            return self.bindings[name]
        if name in self.env:
            return np.int64(self.env[name])
        raise ValueError(f"unbound variable {name!r} in an IndexLambda body")

    def map_subscript(self, expr: prim.Subscript) -> Any:
        array = self.bindings[expr.aggregate.name]
        idx = [np.asarray(self.rec(i), dtype=np.int64) for i in expr.index_tuple]
        if array.size == 0:
            shape = np.broadcast_shapes(*[i.shape for i in idx]) if idx else ()
            return np.zeros(shape, array.dtype)
        # out-of-range reads only happen in If branches that are not taken:
        # clipped ("clip" modes: one C call each, not numpy.clip's wrapper)
        if len(idx) == 1 and array.ndim == 1:
            return array.take(idx[0], mode="clip")
        if len(idx) == array.ndim:
            return array.take(np.ravel_multi_index(idx, array.shape,
                                                   mode="clip"))
        idx = [np.clip(i, 0, n - 1) for i, n in zip(idx, array.shape)]
        return array[tuple(idx)]

    def map_sum(self, expr: prim.Sum) -> Any:
        result = self.rec(expr.children[0])
        for c in expr.children[1:]:
            result = result + self.rec(c)
        return result

    def map_product(self, expr: prim.Product) -> Any:
        result = self.rec(expr.children[0])
        for c in expr.children[1:]:
            result = result * self.rec(c)
        return result

    def map_quotient(self, expr: prim.Quotient) -> Any:
        return np.true_divide(self.rec(expr.numerator), self.rec(expr.denominator))

    def map_floor_div(self, expr: prim.FloorDiv) -> Any:
        return np.floor_divide(self.rec(expr.numerator), self.rec(expr.denominator))

    def map_remainder(self, expr: prim.Remainder) -> Any:
        return np.remainder(self.rec(expr.numerator), self.rec(expr.denominator))

    def map_power(self, expr: prim.Power) -> Any:
        return np.power(self.rec(expr.base), self.rec(expr.exponent))

    def map_min(self, expr: prim.Min) -> Any:
        result = self.rec(expr.children[0])
        for c in expr.children[1:]:
            result = np.minimum(result, self.rec(c))
        return result

    def map_max(self, expr: prim.Max) -> Any:
        result = self.rec(expr.children[0])
        for c in expr.children[1:]:
            result = np.maximum(result, self.rec(c))
        return result

    def map_comparison(self, expr: prim.Comparison) -> Any:
        left, right = self.rec(expr.left), self.rec(expr.right)
        return {"<": np.less, "<=": np.less_equal, ">": np.greater,
                ">=": np.greater_equal, "==": np.equal,
                "!=": np.not_equal}[expr.operator](left, right)

    def map_logical_and(self, expr: prim.LogicalAnd) -> Any:
        result = np.asarray(self.rec(expr.children[0]), dtype=bool)
        for c in expr.children[1:]:
            result = np.logical_and(result, self.rec(c))
        return result

    def map_logical_or(self, expr: prim.LogicalOr) -> Any:
        result = np.asarray(self.rec(expr.children[0]), dtype=bool)
        for c in expr.children[1:]:
            result = np.logical_or(result, self.rec(c))
        return result

    def map_logical_not(self, expr: prim.LogicalNot) -> Any:
        return np.logical_not(self.rec(expr.child))

    def _bitwise(self, fn, children) -> Any:
        result = self.rec(children[0])
        for c in children[1:]:
            result = fn(result, self.rec(c))
        return result

    def map_bitwise_and(self, expr: prim.BitwiseAnd) -> Any:
        return self._bitwise(np.bitwise_and, expr.children)

    def map_bitwise_or(self, expr: prim.BitwiseOr) -> Any:
        return self._bitwise(np.bitwise_or, expr.children)

    def map_bitwise_xor(self, expr: prim.BitwiseXor) -> Any:
        return self._bitwise(np.bitwise_xor, expr.children)

    def map_bitwise_not(self, expr: prim.BitwiseNot) -> Any:
        return np.invert(self.rec(expr.child))

    def map_left_shift(self, expr: prim.LeftShift) -> Any:
        return np.left_shift(self.rec(expr.shiftee), self.rec(expr.shift))

    def map_right_shift(self, expr: prim.RightShift) -> Any:
        return np.right_shift(self.rec(expr.shiftee), self.rec(expr.shift))

    def map_if(self, expr: prim.If) -> Any:
        return np.where(self.rec(expr.condition), self.rec(expr.then),
                        self.rec(expr.else_))

    def map_call(self, expr: prim.Call) -> Any:
        fn = _FUNCTIONS[expr.function.name]
        return fn(*[self.rec(p) for p in expr.parameters])

    def map_type_cast(self, expr: TypeCast) -> Any:
        return np.asarray(self.rec(expr.child)).astype(expr.dtype)

    def map_reduce(self, expr: Reduce) -> Any:
        outer_ndim = len(self.extent)
        lengths = []
        for name, lo, hi in expr.bounds:
            if sh.evaluate_component(lo, self.env) != 0:
                raise ValueError("reduction bounds must start at 0")
            length = max(sh.evaluate_component(hi, self.env), 0)
            if length == 0 and expr.op in ("max", "min"):
                # numpy's error (naming the axis length), before the
                # reduction's operand is computed
                raise ValueError(empty_reduction_message(expr.op, hi))
            lengths.append(length)
        for (name, _, _), length in zip(expr.bounds, lengths):
            self.axis_of[name] = len(self.extent)
            self.extent.append(length)
        try:
            value = np.asarray(self.rec(expr.inner))
            full = np.broadcast_shapes(
                (1,) * (len(self.extent) - value.ndim) + value.shape,
                (1,) * outer_ndim + tuple(lengths))
            value = np.broadcast_to(value, full)
            axes = tuple(range(outer_ndim, len(self.extent)))
            return _REDUCERS[expr.op](value, axes)
        finally:
            for name, _, _ in expr.bounds:
                del self.axis_of[name]
            del self.extent[outer_ndim:]
            # (another reduction may bind these names to other extents)
            self._grids = {k: g for k, g in self._grids.items()
                           if k[1] <= outer_ndim}


def _slice(idx: NormalizedSlice, env: Mapping[str, int]) -> slice:
    start = sh.evaluate_component(idx.start, env)
    length = sh.evaluate_component(idx.length, env)
    if length <= 0:
        return slice(0, 0)
    stop = start + idx.step * length
    return slice(start, stop if stop >= 0 else None, idx.step)


def _check_indices_in_range(indices: np.ndarray, n: int, message: str) -> None:
    """Raise :class:`IndexError` with *message* (formatted with the first
    bad index and *n*) unless every entry of *indices* lies in
    ``[-n, n)``."""
    if indices.size and (indices.min() < -n or indices.max() >= n):
        bad = indices[(indices < -n) | (indices >= n)].flat[0]
        raise IndexError(message.format(bad, n))


def _fetched(value: Any, what: str) -> np.ndarray:
    """*value* as a numpy array, a device array fetched (pyopencl fetches
    only contiguous ones: :class:`ValueError` naming *what* otherwise)."""
    if not hasattr(value, "get"):
        return np.asarray(value)
    flags = getattr(value, "flags", None)
    if flags is not None and not (flags.c_contiguous or flags.f_contiguous):
        raise ValueError(f"{what} is a non-contiguous device array (strides "
                         f"{tuple(value.strides)}), which evaluate_numpy "
                         "cannot fetch; pass a contiguous one")
    return np.asarray(value.get())


class NumpyEvaluator(CachedMapper[Any]):
    """Maps each node to its numpy value. Results of :class:`Map` and
    :class:`Scan` nodes are tuples (one array per loop result)."""

    def __init__(self, env: Mapping[str, int], arrays: Mapping[str, Any],
                 params: tuple = ()) -> None:
        super().__init__()
        # (a copy: data-dependent sizes are added to it, a body's stay there)
        self.env = dict(env)
        self.arrays = arrays
        self.params = params

    def bind_derived_sizes(self, roots: list) -> None:
        """Evaluate the :class:`~ftlazy.fractal_access.DerivedSize` nodes
        reachable from *roots* (this scope) in topological order, adding
        their values to the size environment before anything uses them."""
        for n in topological_order(list(roots)):
            if isinstance(n, DerivedSize):
                self.rec(n)

    def map_derived_size(self, expr: DerivedSize) -> np.ndarray:
        value = int(np.asarray(self.rec(expr.value)))
        if value < 0:
            raise ValueError(f"a data-dependent size evaluates to {value}, which "
                             f"is negative (defined by {expr.value!r})")
        self.env[expr.name] = value
        return np.asarray(value, dtype=np.int64)

    def map_host_index_array(self, expr: HostIndexArray) -> np.ndarray:
        value = expr.compute([self.rec(a) for a in expr.args], self.env)
        shape = check_shape_nonnegative(expr, self.env)
        if value.shape != shape:
            raise ValueError(f"{expr!r} has shape {value.shape}, expected "
                             f"{shape}")
        return value

    def _finish(self, node: Array, value: Any) -> np.ndarray:
        shape = check_shape_nonnegative(node, self.env)
        value = np.asarray(value)
        if value.shape != shape:
            value = np.broadcast_to(value, shape)
        return np.array(value, dtype=node.dtype, copy=True)

    def map_placeholder(self, expr: Placeholder) -> np.ndarray:
        return _fetched(self.arrays[expr.name], f"input {expr.name!r}")

    def map_size_param(self, expr: SizeParam) -> np.ndarray:
        return np.asarray(self.env[expr.name], dtype=np.int64)

    def map_data_wrapper(self, expr: DataWrapper) -> np.ndarray:
        return _fetched(expr.data, f"data wrapper {expr.name!r}")

    def map_body_param(self, expr: BodyParam) -> np.ndarray:
        return self.params[expr.index]

    def map_index_lambda(self, expr: IndexLambda) -> np.ndarray:
        shape = check_shape_nonnegative(expr, self.env)
        bindings = {name: self.rec(a) for name, a in expr.bindings.items()}
        with np.errstate(all="ignore"):
            value = _ScalarEvaluator(shape, bindings, self.env)(expr.expr)
        return self._finish(expr, value)

    def map_einsum(self, expr: Einsum) -> np.ndarray:
        args = [self.rec(a) for a in expr.args]
        return self._finish(expr, np.einsum(expr.spec, *args))

    def map_reshape(self, expr: Reshape) -> np.ndarray:
        shape = check_shape_nonnegative(expr, self.env)
        return self._finish(expr, np.reshape(self.rec(expr.array), shape,
                                             order=expr.order))

    def map_axis_permutation(self, expr: AxisPermutation) -> np.ndarray:
        return self._finish(expr, np.transpose(self.rec(expr.array),
                                               expr.axis_permutation))

    def map_roll(self, expr: Roll) -> np.ndarray:
        return self._finish(expr, np.roll(self.rec(expr.array), expr.shift,
                                          axis=expr.axis))

    def map_stack(self, expr: Stack) -> np.ndarray:
        return self._finish(expr, np.stack([self.rec(a) for a in expr.arrays],
                                           axis=expr.axis))

    def map_concatenate(self, expr: Concatenate) -> np.ndarray:
        return self._finish(expr, np.concatenate(
            [self.rec(a) for a in expr.arrays], axis=expr.axis))

    def map_basic_index(self, expr: BasicIndex) -> np.ndarray:
        index = tuple(_slice(i, self.env) if isinstance(i, NormalizedSlice)
                      else sh.evaluate_component(i, self.env)
                      for i in expr.indices)
        return self._finish(expr, self.rec(expr.array)[index])

    def map_advanced_index(self, expr: AdvancedIndex) -> np.ndarray:
        index = tuple(_slice(i, self.env) if isinstance(i, NormalizedSlice)
                      else self.rec(expr.index_arrays[i]) for i in expr.indices)
        return self._finish(expr, self.rec(expr.array)[index])

    def map_gather(self, expr: Gather) -> np.ndarray:
        array = self.rec(expr.array)
        indices = self.rec(expr.indices)
        _check_indices_in_range(indices, array.shape[expr.axis],
                                f"gather index {{}} is out of range for axis "
                                f"{expr.axis} with size {{}}")
        return self._finish(expr, np.take(array, indices, axis=expr.axis))

    def map_scatter(self, expr: Scatter) -> np.ndarray:
        result = np.array(self.rec(expr.x), copy=True)
        indices = self.rec(expr.indices)
        updates = self.rec(expr.updates)
        n = result.shape[0]
        _check_indices_in_range(indices, n, "scatter index {} is out of range "
                                "for axis 0 with size {}")
        if indices.size == 0:
            return self._finish(expr, result)
        rows = indices.astype(np.int64) % n
        if expr.mode == "add":
            np.add.at(result, rows, updates)
        else:
            # the last of duplicate indices wins: the first in reverse order
            unique, first_reversed = np.unique(rows[::-1], return_index=True)
            result[unique] = updates[len(rows) - 1 - first_reversed]
        return self._finish(expr, result)

    def map_loop_result(self, expr: LoopResult) -> np.ndarray:
        return self._finish(expr, self.rec(expr.loop)[expr.index])

    def _run_body(self, body: Body, params: tuple) -> list[np.ndarray]:
        evaluator = NumpyEvaluator(self.env, self.arrays, params)
        evaluator.bind_derived_sizes(body.outputs)
        return [evaluator.rec(o) for o in body.outputs]

    def _empty_results(self, expr, n: int) -> tuple:
        return tuple(np.empty(sh.evaluate_shape(expr.output_shape(i), self.env),
                              expr.output_dtype(i)) for i in range(n))

    def map_map(self, expr: Map) -> tuple:
        check_body_results(expr.body, "map")
        mapped = [self.rec(a) for a in expr.mapped]
        captured = tuple(self.rec(a) for a in expr.captured)
        length = sh.evaluate_component(expr.length, self.env)
        if length == 0:
            return self._empty_results(expr, expr.num_outputs)
        per_step = [self._run_body(expr.body, tuple(m[i] for m in mapped) + captured)
                    for i in range(length)]
        return tuple(np.stack([step[k] for step in per_step])
                     for k in range(expr.num_outputs))

    def map_jagged_map(self, expr: JaggedMap) -> tuple:
        check_body_results(expr.stacked_body(), "map over a FractalTensor")
        def run_body(env: dict, params: tuple) -> list[np.ndarray]:
            evaluator = NumpyEvaluator(env, self.arrays, params)
            evaluator.bind_derived_sizes(expr.body.outputs)
            return [evaluator.rec(o) for o in expr.body.outputs]

        return evaluate_jagged_map(expr, self.rec, self.env, run_body)

    def map_jagged_scan(self, expr: Any) -> tuple:
        """A :class:`~ftlazy.jagged_scan_outer.JaggedScan`: the body per
        element, in order."""
        from ftlazy.target.jagged_outer_scan import evaluate_jagged_scan
        check_body_results(expr.body, expr.what)

        def run_body(env: dict, params: tuple) -> list[np.ndarray]:
            evaluator = NumpyEvaluator(env, self.arrays, params)
            evaluator.bind_derived_sizes(expr.body.outputs)
            return [evaluator.rec(o) for o in expr.body.outputs]

        return evaluate_jagged_scan(expr, self.rec, self.env, run_body)

    def map_scan(self, expr: Scan) -> tuple:
        check_body_results(expr.body, "scan")
        carries = [self.rec(a) for a in expr.inits]
        scanned = [self.rec(a) for a in expr.scanned]
        captured = tuple(self.rec(a) for a in expr.captured)
        length = sh.evaluate_component(expr.length, self.env)
        history = []
        for i in range(length):
            carries = self._run_body(expr.body, tuple(carries)
                                     + tuple(s[i] for s in scanned) + captured)
            history.append(carries)
        if not expr.keep_all:
            return tuple(carries)
        if length == 0:
            return self._empty_results(expr, expr.num_outputs)
        return tuple(np.stack([h[k] for h in history])
                     for k in range(expr.num_outputs))


    def map_ragged_scan(self, expr: Any) -> tuple:
        """A :class:`~ftlazy.fractal_tensor.RaggedScan` (see its docs)."""
        check_body_results(expr.body, "scan")
        carries = [self.rec(a) for a in expr.inits]
        scanned = [self.rec(a) for a in expr.scanned]
        captured = tuple(self.rec(a) for a in expr.captured)
        offsets = np.asarray(self.rec(expr.offsets))
        const, coeff = expr.form
        n = len(offsets) - 1
        starts = const * np.arange(n) + coeff * offsets[:-1]
        extents = const + coeff * np.diff(offsets)
        results = [np.zeros((scanned[0].shape[0],) + c.shape[1:], c.dtype)
                   for c in carries] if expr.keep_all else []
        for t in range(sh.evaluate_component(expr.length, self.env)):
            active = np.nonzero(t < extents)[0]
            steps = []
            for j, s in enumerate(scanned):
                if j < expr.num_ragged:
                    row = np.zeros((n,) + s.shape[1:], s.dtype)
                    row[active] = s[starts[active] + t]
                    steps.append(row)
                else:
                    steps.append(s[t])
            carries = self._run_body(expr.body, tuple(carries) + tuple(steps)
                                     + captured)
            for r, c in zip(results, carries):
                r[starts[active] + t] = c[active]
        return tuple(results) if expr.keep_all else tuple(carries)


def evaluate_numpy(result: Array | DictOfNamedArrays, /, **inputs: Any) -> Any:
    """Evaluate *result* with numpy.

    :arg result: positional only, so that inputs may have any name
        (``result``, ``self``, ...).
    :arg inputs: a value per placeholder name (numpy arrays of exactly the
        declared dtype), and optionally size parameters by name (others are
        inferred from the input shapes).
    :returns: a :class:`numpy.ndarray`, or a :class:`dict` of them for a
        :class:`~ftlazy.DictOfNamedArrays` (or a plain ``dict`` of named
        arrays, as :func:`~ftlazy.compile` takes it).
    """
    from ftlazy.target.loopy.arguments import as_result
    result = as_result(result, "evaluate_numpy")
    if isinstance(result, DictOfNamedArrays):
        roots = [part for value in result.values() for part in (
            [value.values, *value.offsets] if isinstance(value, Jagged)
            else [value])]
    elif isinstance(result, Jagged):
        roots = [result.values, *result.offsets]
    elif isinstance(result, Array):
        roots = [result]
    else:
        raise TypeError(f"evaluate_numpy expects an Array or DictOfNamedArrays, "
                        f"got {type(result).__name__}")
    check_not_body_local(roots, "evaluate_numpy")
    # (maps' results that no root reads, and the inputs only they read, are
    # dropped, as ft.compile lowers each result on its own)
    pruned = dict(zip(roots, prune_unused_map_results(roots)))
    if any(old is not new for old, new in pruned.items()):
        inputs = _without_pruned_inputs(inputs, roots, list(pruned.values()))
    roots = list(pruned.values())
    input_nodes = collect_inputs(roots)
    size_names = collect_size_names(roots)
    # size params that occur only in shapes are not nodes: collect_inputs
    # cannot see that a placeholder has the name of one
    check_inputs_against_size_names(input_nodes, size_names, roots)
    inputs = expand_jagged_inputs(input_nodes, inputs)
    env, arrays = bind_inputs(input_nodes, inputs, size_names)
    evaluator = NumpyEvaluator(env, arrays)
    evaluator.bind_derived_sizes(roots)
    owned = _Owned(list(arrays.values()) + [
        n.data for n in input_nodes if isinstance(n, DataWrapper)])

    def rec(a: Array) -> Any:
        return evaluator.rec(pruned.get(a, a))

    if isinstance(result, DictOfNamedArrays):
        return {name: jagged_result(a, rec) if isinstance(a, Jagged)
                else owned(rec(a)) for name, a in result.items()}
    if isinstance(result, Jagged):
        return jagged_result(result, rec)
    return owned(rec(result))


def _without_pruned_inputs(inputs: dict[str, Any], roots: list[Array],
                           pruned: list[Array]) -> dict[str, Any]:
    """*inputs* without those only the pruned results of maps read (a
    program's input that it does not need is accepted and ignored, as by
    compiled programs)."""
    from ftlazy.fractal_tensor import JaggedInputPart

    def names(nodes: list[Any]) -> set[str]:
        found = set()
        for n in nodes:
            found.add(getattr(n, "name", None))
            found |= {t.name for t in getattr(n, "tags", ())
                      if isinstance(t, JaggedInputPart)}
        return found

    kept = names(collect_inputs(pruned)) | collect_size_names(pruned)
    dropped = (names(collect_inputs(roots)) | collect_size_names(roots)) - kept
    return {k: v for k, v in inputs.items() if k not in dropped}


class _Owned:
    """Results as arrays of their own: ``owned(value)`` is *value*, or a
    copy of it where it is (or views) one of the *given* arrays (inputs,
    data wrappers' data) or a result returned before, so that changing a
    result changes nothing else, as with compiled programs."""

    def __init__(self, given: list[Any]) -> None:
        self.taken = [a for a in given if isinstance(a, np.ndarray)]

    def __call__(self, value: Any) -> Any:
        if isinstance(value, np.ndarray):
            if any(np.may_share_memory(value, a) for a in self.taken):
                value = value.copy()
            self.taken.append(value)
        return value
