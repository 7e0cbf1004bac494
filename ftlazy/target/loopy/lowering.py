# SPDX-License-Identifier: MIT
"""DAG passes that prepare a canonical DAG for kernel construction:
run-time checks that the kernel computes (data-dependent index reads,
integer powers with negative exponents), lowering to IndexLambda, batching
of maps, and the splitting of long reductions into partial results (for
parallelism, and for float sums in blocks, for accuracy)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np
import pymbolic.primitives as prim
from pytools.tag import Tag, tag_dataclass

from ftlazy import shapes as sh
from ftlazy.array import AdvancedIndex, Array, IndexLambda, SizeParam
from ftlazy.fractal_tensor import RaggedScan
from ftlazy.fractal import (
    Body, BodyParam, Gather, LoopResult, Map, Scan, Scatter)
from ftlazy.node import Node, topological_order
from ftlazy.scalar_expr import (
    ExprIdentityMapper, Reduce, TypeCast, expression_children,
    get_variable_names, index_var, is_index_name, iter_subexpressions,
    reduction_var, substitute)
from ftlazy.target.binding import SizeChecks
from ftlazy.target.loopy.expressions import expr_dtype
from ftlazy.target.loopy.gpu_contractions import product_operands
from ftlazy.target.loopy.plan import independent_rows
from ftlazy.target.loopy.profile import DeviceProfile
from ftlazy.target.loopy.ranges import data_dependent_range
from ftlazy.target.loopy.storage import decide_storage, has_reduce
from ftlazy.transform.batch import MapBatcher
from ftlazy.transform.hoist_scans import hoist_scans
from ftlazy.transform.sink_scans import sink_scans
from ftlazy.transform.lower import IndexLambdaLowerer
from ftlazy.transform.mappers import CopyMapper

_INT64 = np.dtype(np.int64)

#: the value of a check's ``failed`` output when nothing failed
PASSED = np.int64(np.iinfo(np.int64).max)


# {{{ checks computed by the kernel

@dataclass(frozen=True)
class KernelCheck:
    """A condition the kernel verifies while it computes, reported by extra
    0-d outputs: :attr:`failed` (int64) is :data:`PASSED`, or the position
    of the first failing element; :attr:`value` (optional) is the offending
    value there. The program raises :attr:`error` with :attr:`message`, a
    :meth:`str.format` template of ``{value}`` and ``{length}`` (the value
    of the shape component :attr:`length`), followed by where it failed.

    :attr:`frame` says what :attr:`failed` counts: ``("array", shape)``
    elements of an array of that shape in C order (the message gives the
    multi-index), ``("elements", shape)`` the same where the first axis
    counts the elements of a FractalTensor a loop runs over (the message
    names the element), ``("map",)`` steps of a map, ``("scan",)`` nothing
    reportable (a step of a scan), ``()`` nothing.
    """

    error: type
    message: str
    failed: Array
    value: Array | None = None
    length: Any = None
    frame: tuple = ()

    def lifted(self, failed: Array, value: Array | None, frame: tuple
               ) -> KernelCheck:
        """This check, reported by other outputs (of an enclosing loop)."""
        return KernelCheck(self.error, self.message, failed, value, self.length,
                           frame)

    def format(self, failed: int, value: Any, env: Mapping[str, int]) -> str:
        """The message for outputs *failed* and *value*, with the (canonical)
        size parameter values *env*."""
        length = (None if self.length is None
                  else sh.evaluate_component(self.length, env))
        value = value.item() if isinstance(value, np.generic) else value
        text = self.message.format(value=value, length=length)
        if self.frame[:1] == ("array",) and self.frame[1]:
            shape = sh.evaluate_shape(self.frame[1], env)
            position = tuple(int(i) for i in np.unravel_index(failed, shape))
            text += f" (at position {position} of the index array)"
        elif self.frame[:1] == ("elements",) and self.frame[1]:
            shape = sh.evaluate_shape(self.frame[1], env)
            element, *rest = (int(i) for i in np.unravel_index(failed, shape))
            text += f" (in element {element}" + (
                f", at position {tuple(rest)} of its indices)" if rest else ")")
        elif self.frame == ("map",):
            text += f" (in step {failed} of a map)"
        elif self.frame == ("scan",):
            text += " (in a step of a scan)"
        return text


def _lambda(expr: Any, shape: tuple, dtype: np.dtype,
            bindings: Mapping[str, Array]) -> IndexLambda:
    """An IndexLambda of *expr*, which may use size parameters by name:
    each becomes a :class:`~ftlazy.array.SizeParam` binding of that name, so
    that the kernel declares it also where no loop bound mentions it."""
    free = get_variable_names(expr)
    sizes = {name: SizeParam(name) for name in free
             if name not in bindings and not is_index_name(name)}
    return IndexLambda(expr, shape, dtype, {**bindings, **sizes})


def _int64(c: sh.ShapeComponent) -> Any:
    """A shape component as an int64 operand."""
    return np.int64(c) if isinstance(c, int) else c


def _flat_position(rvars: list[prim.Variable], shape: sh.Shape,
                   typed: bool = True) -> Any:
    """The C-order flat position of indices *rvars* in *shape*: an int64
    value, or (not *typed*) untyped index arithmetic."""
    position: Any = None
    for v, d in zip(rvars, shape):
        term = TypeCast(_INT64, v) if typed else v
        position = term if position is None else prim.Sum(
            (prim.Product((position, _int64(d) if typed else d)), term))
    if position is None:
        return np.int64(0) if typed else 0
    return position


def _unravel(position: Any, shape: sh.Shape, typed: bool = True
             ) -> tuple[Any, ...]:
    """The multi-index of flat *position* in *shape* (C order): of an int64
    value, or (not *typed*) of untyped index arithmetic."""
    index: list[Any] = []
    for k in range(len(shape) - 1, -1, -1):
        d = _int64(shape[k]) if typed else shape[k]
        index.append(prim.Remainder(position, d) if k else position)
        position = prim.FloorDiv(position, d)
    return tuple(reversed(index))


def _first_failure(array: Array, bad: Any, live: Array | None = None,
                   beside: Array | None = None) -> IndexLambda:
    """A 0-d int64 array: the flat position of the first element of *array*
    for which *bad* (an expression of the element ``_v``, and of the
    element ``_ext`` of *beside*, of the same shape) holds, else
    :data:`PASSED`. *live*: a boolean array along *array*'s first axis;
    rows where it is false never fail."""
    if any(d == 0 for d in array.shape):
        return IndexLambda(PASSED, (), _INT64, {})
    rvars = [reduction_var(i) for i in range(array.ndim)]

    def at(name: str) -> Any:
        return (prim.Subscript(prim.Variable(name), tuple(rvars)) if rvars
                else prim.Variable(name))
    cond = substitute(bad, {"_v": at("_in0"), "_ext": at("_in1")})
    bindings = {"_in0": array}
    if beside is not None:
        bindings["_in1"] = beside
    if live is not None:
        cond = prim.LogicalAnd((prim.Subscript(prim.Variable("_live"),
                                               (rvars[0],)), cond))
        bindings["_live"] = live
    expr: Any = prim.If(cond, _flat_position(rvars, array.shape), PASSED)
    if rvars:
        expr = Reduce("min", expr, tuple((v.name, 0, d)
                                         for v, d in zip(rvars, array.shape)))
    return _lambda(expr, (), _INT64, bindings)


def _value_at(array: Array, failed: Array) -> IndexLambda:
    """A 0-d array: the element of *array* at flat position *failed* (0
    where *failed* is :data:`PASSED`; the position read is then 0)."""
    ok = prim.Comparison(prim.Variable("_in1"), "==", PASSED)
    position = prim.If(ok, np.int64(0), prim.Variable("_in1"))
    read = (prim.Subscript(prim.Variable("_in0"), _unravel(position, array.shape))
            if array.ndim else prim.Variable("_in0"))
    return _lambda(prim.If(ok, array.dtype.type(0), read), (), array.dtype,
                   {"_in0": array, "_in1": failed})


def _index_check(indices: Array, length: sh.ShapeComponent | None,
                 message: str, live: Array | None = None,
                 extents: Array | None = None, frame: str = "array"
                 ) -> KernelCheck | None:
    """A check that every entry of *indices* lies in ``[-length, length)``
    (``[0, length)`` for unsigned indices); None for an empty array.
    *live*: as for :func:`_first_failure`. *extents* (of *indices*' shape,
    *length* None): each entry's own length. *frame*: ``"array"``, or
    ``"elements"`` where the first axis of *indices* counts the elements
    of a FractalTensor (see :class:`KernelCheck`)."""
    if any(d == 0 for d in indices.shape):
        return None
    v = TypeCast(_INT64, prim.Variable("_v"))
    n = (prim.Variable("_ext") if extents is not None else _int64(length))
    if indices.dtype.kind in "ub":
        # (uint64 entries beyond the int64 range read as negative)
        low: Any = prim.Comparison(v, "<", np.int64(0))
    else:
        low = prim.Comparison(v, "<", np.int64(-length) if isinstance(length, int)
                              else prim.Product((np.int64(-1), n)))
    failed = _first_failure(indices, prim.LogicalOr(
        (low, prim.Comparison(v, ">=", n))), live, extents)
    return KernelCheck(IndexError, message, failed, _value_at(indices, failed),
                       length, (frame, indices.shape))


#: numpy's message for an integer power with a negative exponent
NEGATIVE_POWER = "Integers to negative integer powers are not allowed."


def _may_be_negative(exponent: Any, bindings: Mapping[str, Array]) -> bool:
    """Whether a signed integer *exponent* may be negative: not for
    non-negative constants and values cast from unsigned integers."""
    if isinstance(exponent, (int, np.integer)):
        return exponent < 0
    if isinstance(exponent, TypeCast):
        inner = expr_dtype(exponent.child, bindings)
        return inner is None or inner.kind not in "ub"
    return True


def _power_check(node: IndexLambda, live: Array | None = None
                 ) -> KernelCheck | None:
    """A check that no signed integer power in *node*'s body has a negative
    exponent, at any element (numpy raises :class:`ValueError` whether or
    not the power's value is used, e.g. in a ``where`` branch). *live*: as
    for :func:`_first_failure`."""
    found: list[tuple[Any, tuple]] = []
    stack: list[tuple[Any, tuple]] = [(node.expr, ())]
    while stack:
        e, bounds = stack.pop()
        if isinstance(e, Reduce):
            stack.append((e.inner, bounds + e.bounds))
            continue
        if isinstance(e, prim.Power):
            dtype = expr_dtype(e, node.bindings)
            if (dtype is not None and dtype.kind == "i"
                    and _may_be_negative(e.exponent, node.bindings)):
                found.append((prim.Comparison(e.exponent, "<", dtype.type(0)),
                              bounds))
        stack.extend((c, bounds) for c in expression_children(e))
    if not found or any(d == 0 for d in node.shape):
        return None
    # the output indices become reduction indices of the (0-d) check
    used = {name for e in iter_subexpressions(node.expr) if isinstance(e, Reduce)
            for name, _, _ in e.bounds}
    fresh: list[str] = []
    k = 0
    while len(fresh) < node.ndim:
        if f"_r{k}" not in used:
            fresh.append(f"_r{k}")
        k += 1
    outer = {f"_{i}": prim.Variable(name) for i, name in enumerate(fresh)}
    outer_bounds = tuple((name, 0, d) for name, d in zip(fresh, node.shape))
    terms = []
    extra = {}
    if live is not None:
        live_name = "_ft_live"
        while live_name in node.bindings:
            live_name += "_"
        extra[live_name] = live
    for cond, bounds in found:
        cond = substitute(cond, outer)
        if live is not None:
            cond = prim.LogicalAnd((prim.Subscript(
                prim.Variable(live_name), (prim.Variable(fresh[0]),)), cond))
        term: Any = prim.If(cond, np.int64(0), PASSED)
        if outer_bounds + bounds:
            term = Reduce("min", term, outer_bounds + bounds)
        terms.append(term)
    expr = terms[0] if len(terms) == 1 else prim.Min(tuple(terms))
    names = get_variable_names(expr)
    bindings = {k: v for k, v in {**node.bindings, **extra}.items()
                if k in names}
    return KernelCheck(ValueError, NEGATIVE_POWER,
                       _lambda(expr, (), _INT64, bindings))


def _reported(check: KernelCheck) -> list[Array]:
    """The arrays that report *check*."""
    return [check.failed] + ([check.value] if check.value is not None else [])


def _keep_first(before: Array, keep: Array, now: Array) -> IndexLambda:
    """*keep* where *before* (a ``failed`` carry, 0-d or one per element)
    failed, else *now* (0-d)."""
    def read(name: str, array: Array) -> Any:
        var = prim.Variable(name)
        return var[index_var(0)] if array.ndim else var
    cond = prim.Comparison(read("_in0", before), "!=", PASSED)
    return IndexLambda(prim.If(cond, read("_in1", keep), prim.Variable("_in2")),
                       before.shape, now.dtype,
                       {"_in0": before, "_in1": keep, "_in2": now})


def _failed_step(failed: Array) -> IndexLambda:
    """The first step whose entry of stacked ``failed`` outputs failed."""
    return _first_failure(failed, prim.Comparison(prim.Variable("_v"), "!=",
                                                  PASSED))


@tag_dataclass
class IndicesChecked(Tag):
    """Marks an :class:`~ftlazy.array.IndexLambda` that reads its binding
    :attr:`binding` as indices along an axis (:attr:`axis`) of extent
    :attr:`length` (a gather batched into a guarded read, as in maps over
    FractalTensors, or a scatter's writes: :attr:`what`): its entries are
    checked at run time as a gather's (a scatter's)."""

    binding: str
    length: Any
    axis: int
    what: str = "gather"


@tag_dataclass
class ElementRowsChecked(Tag):
    """Marks an :class:`~ftlazy.array.IndexLambda` that reads rows of each
    element of a FractalTensor at the indices of its binding :attr:`values`,
    each bounded by the extent at the same position of its binding
    :attr:`extents` (a gather of an element's own rows in a map, or a
    scatter into them: :attr:`what`): the indices are checked at run time
    against those extents."""

    values: str
    extents: str
    what: str = "gather"


class _CheckInserter(CopyMapper):
    """Collects a :class:`KernelCheck` per data-dependent read or write
    and per integer power that may have a negative exponent; loop bodies
    report theirs as extra map results or extra scan carries."""

    def __init__(self) -> None:
        super().__init__()
        self.checks: list[KernelCheck] = []
        #: in the body of a ragged scan: which elements run the step, (n,)
        self.live: Array | None = None

    def _reset_for_body(self) -> None:
        super()._reset_for_body()
        self.checks = []
        self.live = None

    def _live_rows(self, array: Array) -> Array | None:
        """The running elements, where *array* is batched over them (its
        first axis has their number): a finished element's step reads
        stand-in rows and carries, which must not fail."""
        if (self.live is not None and array.ndim
                and sh.prove_equal(array.shape[0], self.live.shape[0])):
            return self.live
        return None

    def _add(self, check: KernelCheck | None) -> None:
        if check is not None:
            self.checks.append(check)

    def map_index_lambda(self, expr: IndexLambda) -> Node:
        new = self.map_node(expr)
        if any(isinstance(e, prim.Power) for e in iter_subexpressions(new.expr)):
            self._add(_power_check(new, self._live_rows(new)))
        for tag in new.tags:
            if isinstance(tag, ElementRowsChecked):
                indices = new.bindings[tag.values]
                # (one index per element: s[i] or s[-1] in the body, which
                # reads no index array the user wrote)
                what = "index" if indices.ndim == 1 else f"{tag.what} index"
                self._add(_index_check(
                    indices, None, f"{what} {{value}} is out of range for the "
                    "rows of its element", self._live_rows(indices),
                    new.bindings[tag.extents], frame="elements"))
            if isinstance(tag, IndicesChecked):
                indices = new.bindings[tag.binding]
                self._add(_index_check(
                    indices, tag.length,
                    f"{tag.what} index {{value}} is out of range for axis "
                    f"{tag.axis} with size {{length}}",
                    self._live_rows(indices)))
        return new

    def map_gather(self, expr: Gather) -> Node:
        new = self.map_node(expr)
        self._add(_index_check(
            new.indices, new.array.shape[new.axis],
            f"gather index {{value}} is out of range for axis {new.axis} with "
            "size {length}", self._live_rows(new.indices)))
        return new

    def map_scatter(self, expr: Scatter) -> Node:
        new = self.map_node(expr)
        self._add(_index_check(
            new.indices, new.x.shape[0],
            "scatter index {value} is out of range for axis 0 with size "
            "{length}", self._live_rows(new.indices)))
        return new

    def map_advanced_index(self, expr: AdvancedIndex) -> Node:
        new = self.map_node(expr)
        for axis, idx in enumerate(new.indices):
            if isinstance(idx, int):
                self._add(_index_check(
                    new.index_arrays[idx], new.array.shape[axis],
                    f"index {{value}} is out of range for axis {axis} with "
                    "size {length}", self._live_rows(new.index_arrays[idx])))
        return new

    def _body_checks(self, body: Body, live: Array | None = None
                     ) -> tuple[tuple[Array, ...], list[KernelCheck]]:
        clone = self.clone_for_body()
        clone.live = live
        return tuple(clone(o) for o in body.outputs), clone.checks

    def map_map(self, expr: Map) -> Node:
        inputs = tuple(self.rec(a) for a in expr.inputs)
        outputs, checks = self._body_checks(expr.body)
        extra = tuple(a for c in checks for a in _reported(c))
        new = Map(expr.body.copy(outputs=outputs + extra), inputs, expr.num_mapped)
        k = len(outputs)
        for c in checks:
            step = _failed_step(LoopResult(new, k))
            value = (_value_at(LoopResult(new, k + 1), step)
                     if c.value is not None else None)
            k += len(_reported(c))
            self.checks.append(c.lifted(step, value, ("map",)))
        return new

    def map_scan(self, expr: Scan) -> Node:
        inputs = tuple(self.rec(a) for a in expr.inputs)
        ragged = isinstance(expr, RaggedScan)
        outputs, checks = self._body_checks(
            expr.body, _running_elements(expr) if ragged else None)
        if not checks:
            return expr.copy(body=expr.body.copy(outputs=outputs), inputs=inputs)
        # per check, carries: the first failure so far (and its value); a
        # ragged scan stacks its carries per element into packed rows, so
        # there each element keeps its own copy, (n,)
        per_element = (expr.inputs[0].shape[:1]
                       if ragged and expr.keep_all else ())
        nc = expr.num_carries
        extra = sum(len(_reported(c)) for c in checks)

        shift = _ShiftParams(nc, extra)
        new_params: list[BodyParam] = []
        new_outputs: list[Array] = []
        inits: list[Array] = []
        for c in checks:
            before = BodyParam(nc + len(new_params), per_element, _INT64)
            new_params.append(before)
            inits.append(IndexLambda(PASSED, per_element, _INT64, {}))
            new_outputs.append(_keep_first(before, before,
                                           shift(c.failed)))
            if c.value is not None:
                dtype = c.value.dtype
                value_before = BodyParam(nc + len(new_params), per_element,
                                         dtype)
                new_params.append(value_before)
                inits.append(IndexLambda(dtype.type(0), per_element, dtype, {}))
                new_outputs.append(_keep_first(before, value_before,
                                               shift(c.value)))
        params = (expr.body.params[:nc] + tuple(new_params)
                  + tuple(shift(p) for p in expr.body.params[nc:]))
        new_body = Body(params, tuple(shift(o) for o in outputs)
                        + tuple(new_outputs))
        new = expr.copy(body=new_body,
                        inputs=inputs[:nc] + tuple(inits) + inputs[nc:],
                        num_carries=nc + extra,
                        **({"offsets_index": expr.offsets_index + extra,
                            "order_index": (-1 if expr.order_index == -1
                                            else expr.order_index + extra)}
                           if ragged else {}))
        k = nc
        for c in checks:
            failed: Array = LoopResult(new, k)
            value: Array | None = (LoopResult(new, k + 1) if c.value is not None
                                   else None)
            if expr.keep_all:
                # carries keep the first failure: any failed step has it
                failed = _failed_step(failed)
                if value is not None:
                    value = _value_at(value, failed)
            k += len(_reported(c))
            self.checks.append(c.lifted(failed, value, ("scan",)))
        return new


def _running_elements(scan: RaggedScan) -> IndexLambda:
    """In *scan*'s body: whether each element runs the step, ``(n,)``
    (the step index below the element's extent)."""
    params = scan.body.params
    step = params[scan.step_index]
    offsets = params[scan.offsets_index]
    off, i = prim.Variable("_off"), index_var(0)
    const, coeff = scan.form
    running = prim.Comparison(prim.Variable("_step"), "<",
                              const + coeff * (off[i + 1] - off[i]))
    return IndexLambda(running, (sh.sub(offsets.shape[0], 1),),
                       np.dtype(np.bool_), {"_step": step, "_off": offsets})


class _ShiftParams(CopyMapper):
    """Copies arrays of a scan body with its parameters from *first* on
    renumbered *by* places up; bodies nested in it number their own
    parameters and are kept as they are."""

    def __init__(self, first: int, by: int) -> None:
        super().__init__()
        self.first, self.by = first, by

    def map_node(self, expr: Node) -> Node:
        new = super().map_node(expr)
        if isinstance(new, BodyParam) and new.index >= self.first:
            return BodyParam(new.index + self.by, new.shape, new.dtype)
        return new

    def map_body(self, body: Node) -> Node:
        return body


def insert_kernel_checks(roots: dict[Any, Array]
                         ) -> tuple[dict[Any, Array], list[KernelCheck]]:
    """The :class:`KernelCheck` of every data-dependent read or write
    (gathers, advanced indexing, scatters) and of every signed integer power
    whose exponent may be negative, reachable from *roots*, loops included.
    Returns the roots rewritten so that loops also report their checks, and
    the checks. Checks read the same arrays as the program."""
    inserter = _CheckInserter()
    new_roots = {k: inserter(r) for k, r in roots.items()}
    return new_roots, inserter.checks


@dataclass(frozen=True)
class CallChecks:
    """What a compiled program checks at each call, collected at compile
    time: conditions on the size parameters (before anything is allocated),
    the outputs of each :class:`KernelCheck` (after the kernel ran), and the
    derived size parameters that :func:`lower_for_codegen` introduced."""

    sizes: SizeChecks = dataclasses.field(default_factory=SizeChecks)
    #: ``(failed output, value output or None, check)`` by kernel argument
    kernel: tuple[tuple[str, str | None, KernelCheck], ...] = ()
    #: derived size parameter -> ``(extent, block)``, see :func:`derived_sizes`
    derived: Mapping[str, tuple[Any, int]] = dataclasses.field(
        default_factory=dict)

    def raise_failed(self, results: Mapping[str, Any], env: Mapping[str, int]
                     ) -> None:
        """Raise the error of the first check whose outputs in *results*
        (kernel argument -> numpy or device array) report a failure; *env*
        has the (canonical) size parameter values."""
        for failed_arg, value_arg, check in self.kernel:
            failed = int(_scalar(results[failed_arg]))
            if failed == PASSED:
                continue
            value = _scalar(results[value_arg]) if value_arg is not None else None
            raise check.error(check.format(failed, value, env))


def _scalar(value: Any) -> Any:
    """The single element of a one-element numpy or device array."""
    if hasattr(value, "get"):
        value = value.get()
    return np.asarray(value).reshape(-1)[0]

# }}}


def lower_for_codegen(roots: dict[Any, Array],
                      profile: DeviceProfile | None = None
                      ) -> tuple[dict[Any, Array], dict[str, tuple[Any, int]]]:
    """Every root with maps batched away, high-level nodes lowered to
    IndexLambdas (scans and their bodies included), the carry-independent
    work of scan bodies hoisted where it pays on a device of *profile*
    (:mod:`ftlazy.transform.hoist_scans`, :func:`hoisting_pays`) and
    reductions split (see :class:`_SplitReductions`). Also returns the
    derived size parameters that blocked sums over symbolic lengths
    introduced: name -> ``(extent, block)``, for the value
    ``ceil(extent / block)``."""
    batcher = MapBatcher()
    lowerer = IndexLambdaLowerer()
    derived: dict[str, tuple[Any, int]] = {}
    # (on GPUs a 0-d sum is a work group's tree, not one item's runs)
    gpu = profile is not None and profile.kind == "gpu"
    splitter = _ReductionSplitter(derived, nested_sums=not gpu,
                                  tiled_products=gpu)
    # (carry-independent work of scan bodies runs for all steps at once)
    hoisted = hoist_scans({k: lowerer(v) for k, v in roots.items()},
                          None if profile is None else hoisting_pays(profile))
    if profile is not None:
        # (and where hoisting a ragged scan's inputs would not pay, their
        # row-wise work runs in its step)
        pays = hoisting_pays(profile)
        hoisted = sink_scans(hoisted, lambda scan: not pays(scan, "top"))
    lowered = {k: splitter(lowerer(batcher(v))) for k, v in hoisted.items()}
    return lowered, derived


def hoisting_pays(profile: DeviceProfile) -> Callable[[Scan, str], bool]:
    """Whether hoisting a scan's carry-independent work out of its body
    pays on a device of *profile* (see
    :mod:`ftlazy.transform.hoist_scans`): where one work group runs the
    time loop (coupled rows, scans nested in scans), hoisting takes the
    work off the sequential path onto the whole device; on GPUs also for
    independent rows (the loop's groups are few for the device). On a CPU
    a scan whose rows evolve independently (a batch, a map's batched scan,
    the sequences of a FractalTensor) already runs each core's rows with
    their products in the loop: hoisting would only add the traffic of the
    hoisted arrays (measured on PoCL with two cores: W6 20-50% slower
    hoisted, an LSTM over a FractalTensor about 15% slower, while the RNN
    of a single sequence runs 1.5-1.9x faster hoisted)."""
    if profile.kind != "cpu":
        return lambda scan, where: True

    def pays(scan: Scan, where: str) -> bool:
        if where == "scan":
            return True
        if where == "map" or isinstance(scan, RaggedScan):
            return False
        body = list(scan.body.outputs)
        if any(isinstance(n, Scan) for n in topological_order(body)):
            return True
        return independent_rows(scan, decide_storage(body), profile) is None
    return pays


def derived_sizes(derived: Mapping[str, tuple[Any, int]], env: Mapping[str, int]
                  ) -> dict[str, int]:
    """Values of the derived size parameters of :func:`lower_for_codegen`
    for the size parameter values *env* (in order: one may use another)."""
    values: dict[str, int] = {}
    if not derived:
        return values
    scope = dict(env)
    for name, (extent, block) in derived.items():
        n = sh.evaluate_component(extent, scope)
        values[name] = scope[name] = max(0, -(-n // block))
    return values


# {{{ splitting reductions

#: a reduction to a scalar over more elements than this is split in chunks
REDUCTION_CHUNK = 8192

#: float sums are accumulated in blocks of this many elements, and the
#: blocks' sums again in blocks (the accuracy of a pairwise sum, as in
#: numpy, with each block summed by a work item's accumulator lanes)
SUM_BLOCK = 128

def _blocked_sum_min(dtype: np.dtype) -> int:
    """Float sums over data of *dtype* are blocked from this length on:
    single precision needs short chains of additions for numpy's accuracy;
    double precision keeps one loop nest (with accumulator lanes) up to a
    longer length, where the rounding error stays far below what single
    precision can hold and an extra kernel would only cost time."""
    real_size = dtype.itemsize // 2 if dtype.kind == "c" else dtype.itemsize
    return 2 * SUM_BLOCK if real_size <= 4 else 2 * REDUCTION_CHUNK


#: the last level of a blocked float sum over more elements than this (a
#: concrete number) sums runs of about its square root, then their sums
NESTED_SUM_MIN = 16

#: a float sum over a symbolic length is blocked this many times (the last
#: level sums ``ceil(n / SUM_BLOCK**SYMBOLIC_SUM_LEVELS)`` partial sums)
SYMBOLIC_SUM_LEVELS = 3


def neutral_element(op: str, dtype: np.dtype) -> Any:
    """The identity of reduction *op* for *dtype*."""
    if op == "sum" or op == "any":
        return dtype.type(0)
    if op == "product" or op == "all":
        return dtype.type(1)
    if dtype.kind == "b":
        return np.bool_(op == "min")    # (a max of bools is an any)
    if dtype.kind == "f":
        return dtype.type(-np.inf if op == "max" else np.inf)
    if dtype.kind == "c":
        # below (above) every value in numpy's lexicographic order
        inf = -np.inf if op == "max" else np.inf
        return dtype.type(complex(inf, inf))
    info = np.iinfo(dtype)
    return dtype.type(info.min if op == "max" else info.max)


class _SplitReductions(ExprIdentityMapper):
    """Rewrites each outermost reduction of a body into a reduction of a
    stored partial result, computed in parallel:

    * float sums (with *blocked*): a sum over several axes sums a partial
      result that has the first of them as its last axis; a long sum (see
      :func:`_blocked_sum_min`; or over a symbolic number of elements) sums
      partial sums of blocks of :data:`SUM_BLOCK` consecutive elements, and
      so on recursively, which bounds the rounding error as a pairwise sum
      does; a short sum in a 0-d body (one work item) sums runs, except
      on GPUs (*nested_sums* false: a work group's tree adds it);
    * other reductions of a 0-d body: over the first of several axes, or
      over chunks of one long concrete axis.

    *split* is applied to each partial result (which may need splitting
    itself).
    """

    def __init__(self, node: IndexLambda, blocked: bool,
                 derived: dict[str, tuple[Any, int]],
                 split: Callable[[IndexLambda], IndexLambda],
                 nested_sums: bool = True) -> None:
        self.node = node
        self.blocked = blocked
        self.nested_sums = nested_sums
        self.derived = derived
        self.split = split
        self.bindings = dict(node.bindings)

    def map_reduce(self, expr: Reduce) -> Any:
        if data_dependent_range(expr, self.node.bindings) is not None:
            # runs over its data-dependent range only (see .ranges): no
            # partial results over the static bound
            return expr
        dtype = expr_dtype(expr.inner, self.node.bindings) or self.node.dtype
        if expr.op in ("any", "all"):
            dtype = np.dtype(np.bool_)
        if self.blocked and expr.op == "sum" and dtype.kind in "fc":
            blocked = self._blocked_sum(expr, dtype, 0)
            if blocked is not expr:
                return blocked
        if self.node.shape != ():
            return expr
        (name, lo, hi), rest = expr.bounds[0], expr.bounds[1:]
        if rest:
            inner = substitute(expr.inner, {name: index_var(0)})
            partial = self._partial(Reduce(expr.op, inner, rest), (hi,), dtype)
        elif isinstance(hi, int) and hi > 2 * REDUCTION_CHUNK:
            k = REDUCTION_CHUNK
            chunks = -(-hi // k)
            position = prim.Sum((prim.Product((index_var(0), k)), prim.Variable(name)))
            inner = prim.If(prim.Comparison(position, "<", hi),
                            substitute(expr.inner, {name: position}),
                            neutral_element(expr.op, dtype))
            partial = self._partial(Reduce(expr.op, inner, ((name, 0, k),)),
                                    (chunks,), dtype)
            hi = chunks
        else:
            return expr
        return Reduce(expr.op, prim.Subscript(prim.Variable(partial),
                                              (prim.Variable(name),)),
                      ((name, lo, hi),))

    def _partial(self, expr: Any, shape: tuple, dtype: np.dtype,
                 split: bool = True) -> str:
        """Bind a partial result of *shape* computing *expr* (which reads
        the node's bindings and earlier partials), with its own reductions
        split if *split*; returns its name."""
        expr = _canonical_reduction_names(expr)
        names = get_variable_names(expr)
        bindings = {k: v for k, v in self.bindings.items() if k in names}
        part = f"_ft_part{len(self.bindings)}"
        partial = _lambda(expr, shape, dtype, bindings)
        self.bindings[part] = self.split(partial) if split else partial
        return part

    def _blocked_sum(self, expr: Reduce, dtype: np.dtype, level: int) -> Any:
        """*expr*, a float sum, as a sum of partial sums (*expr* itself
        where it is short)."""
        d = self.node.ndim
        outer_index = tuple(index_var(i) for i in range(d))
        (name, lo, hi), rest = expr.bounds[0], expr.bounds[1:]
        k = SUM_BLOCK
        shortest = 2 * k if level else _blocked_sum_min(dtype)
        if lo != 0:
            return expr
        if rest:
            lengths = [b for _, _, b in expr.bounds]
            if all(isinstance(b, int) for b in lengths) and (
                    int(np.prod(lengths)) <= shortest):
                return expr
            # the first axis becomes the last axis of a partial result
            inner = substitute(expr.inner, {name: index_var(d)})
            part = self._partial(Reduce("sum", inner, rest),
                                 self.node.shape + (hi,), dtype)
            return self._blocked_sum(Reduce("sum", prim.Subscript(
                prim.Variable(part), outer_index + (prim.Variable(name),)),
                ((name, 0, hi),)), dtype, level)
        if isinstance(hi, int):
            if hi <= shortest:
                # (a sum over data in a node with axes keeps its loop nest,
                # whose accumulator lanes shorten the chain of additions)
                return (self._nested_sum(expr, dtype)
                        if (level or not d) and self.nested_sums else expr)
            blocks: Any = -(-hi // k)
        else:
            if level >= SYMBOLIC_SUM_LEVELS:
                return expr
            blocks = _derived_size(self.derived, hi, k)
        shape = self.node.shape + (blocks,)
        if d and all(isinstance(c, int) for c in shape):
            # one flat axis: a 2-D partial would be taken for a matrix product
            flat = index_var(0)
            unravel = _unravel(flat, shape, typed=False)
            outer = {f"_{i}": unravel[i] for i in range(d)}
            block, shape = unravel[-1], (int(np.prod(shape)),)
            read_at: tuple = (prim.Sum((prim.Product((
                _flat_position(list(outer_index), self.node.shape, typed=False),
                blocks)), prim.Variable(name))),)
        else:
            outer, block = {}, index_var(d)
            read_at = outer_index + (prim.Variable(name),)
        position = prim.Sum((prim.Product((block, k)), prim.Variable(name)))
        inner = substitute(expr.inner, {**outer, name: position})
        if not (isinstance(hi, int) and hi % k == 0):
            inner = prim.If(prim.Comparison(position, "<", hi), inner,
                            dtype.type(0))
        part = self._partial(Reduce("sum", inner, ((name, 0, k),)), shape, dtype,
                             split=False)
        return self._blocked_sum(Reduce("sum", prim.Subscript(
            prim.Variable(part), read_at), ((name, 0, blocks),)), dtype, level + 1)

    def _nested_sum(self, expr: Reduce, dtype: np.dtype) -> Any:
        """*expr*, a float sum over one concrete axis of more than
        :data:`NESTED_SUM_MIN` elements, as a sum of sums of consecutive
        runs (about the square root of the length each): its one work item
        adds two short chains instead of one long one."""
        (name, _, hi), = expr.bounds
        if hi <= NESTED_SUM_MIN:
            return expr
        run = int(np.ceil(np.sqrt(hi)))
        runs = -(-hi // run)
        outer_name = _fresh_reduction_name(expr)
        position = prim.Sum((prim.Product((prim.Variable(outer_name), run)),
                             prim.Variable(name)))
        inner = substitute(expr.inner, {name: position})
        if hi % run:
            inner = prim.If(prim.Comparison(position, "<", hi), inner,
                            dtype.type(0))
        return Reduce("sum", Reduce("sum", inner, ((name, 0, run),)),
                      ((outer_name, 0, runs),))


def _canonical_reduction_names(expr: Any) -> Any:
    """*expr* with its top reduction's variables renamed ``_r0, _r1, ...``
    (skipping names its body uses otherwise): a partial result that equals
    an array of the DAG (the row sums of a full sum, and the user's row
    sums) is then the same node, computed once."""
    if not isinstance(expr, Reduce):
        return expr
    own = {name for name, _, _ in expr.bounds}
    used = (get_variable_names(expr.inner) | {
        name for e in iter_subexpressions(expr.inner) if isinstance(e, Reduce)
        for name, _, _ in e.bounds}) - own
    renames, bounds, k = {}, [], 0
    for name, lo, hi in expr.bounds:
        while f"_r{k}" in used:
            k += 1
        renames[name] = prim.Variable(f"_r{k}")
        bounds.append((f"_r{k}", lo, hi))
        k += 1
    return Reduce(expr.op, substitute(expr.inner, renames), tuple(bounds))


def _fresh_reduction_name(expr: Any) -> str:
    """A reduction variable name ``_r<k>`` that *expr* does not use."""
    used = get_variable_names(expr) | {
        name for e in iter_subexpressions(expr) if isinstance(e, Reduce)
        for name, _, _ in e.bounds}
    k = 0
    while f"_r{k}" in used:
        k += 1
    return f"_r{k}"


def _derived_size(derived: dict[str, tuple[Any, int]], extent: Any,
                  block: int) -> prim.Variable:
    """The derived size parameter ``ceil(extent / block)``."""
    for name, value in derived.items():
        if value == (extent, block):
            return prim.Variable(name)
    name = f"_ft_blocks{len(derived)}"
    derived[name] = (extent, block)
    return prim.Variable(name)


#: a matrix product with fewer (concrete) output elements than this keeps
#: its blocked sums on GPUs: too few tiles to fill the device, while the
#: blocks of a long ``k`` sum in parallel
TILED_PRODUCT_MIN_OUTPUTS = 64 * 64


def _tiled_product(node: IndexLambda) -> bool:
    """Whether *node* is a matrix product (:func:`.gpu_contractions.product_operands`)
    whose output is symbolic or has at least
    :data:`TILED_PRODUCT_MIN_OUTPUTS` elements."""
    if product_operands(node) is None:
        return False
    if not all(isinstance(d, int) for d in node.shape):
        return True
    return int(np.prod(node.shape)) >= TILED_PRODUCT_MIN_OUTPUTS


class _ReductionSplitter(CopyMapper):
    """Applies :class:`_SplitReductions` to every IndexLambda with a
    reduction. Float sums are blocked outside loop bodies only (a scan's
    body keeps its loop nests; maps are batched away before). With
    *tiled_products* (GPUs), matrix products with outputs to fill work
    groups (:func:`_tiled_product`) are left whole for their plan's local
    tiles, whose per-item running sums over ``k`` round as a BLAS does."""

    def __init__(self, derived: dict[str, tuple[Any, int]],
                 nested_sums: bool = True, tiled_products: bool = False
                 ) -> None:
        super().__init__()
        self.derived = derived
        self.nested_sums = nested_sums
        self.tiled_products = tiled_products
        self.in_body = False

    def _reset_for_body(self) -> None:
        super()._reset_for_body()
        self.in_body = True

    def map_index_lambda(self, expr: IndexLambda) -> Node:
        return self.split(self.map_node(expr))

    def split(self, node: IndexLambda) -> IndexLambda:
        """*node* with its reductions split."""
        if not has_reduce(node.expr) or (self.in_body and node.shape != ()):
            return node
        if self.tiled_products and _tiled_product(node):
            return node
        splitter = _SplitReductions(node, not self.in_body, self.derived,
                                    self.split, self.nested_sums)
        body = splitter(node.expr)
        if body is node.expr:
            return node
        names = get_variable_names(body)
        bindings = {k: v for k, v in splitter.bindings.items() if k in names}
        return IndexLambda(body, node.shape, node.dtype, bindings, tags=node.tags,
                           axes=node.axes)

# }}}
