# SPDX-License-Identifier: MIT
"""Compiled programs over FractalTensors: the DAG's maps over jagged data
are lowered to dense nodes over the packed values
(:mod:`ftlazy.transform.jagged_lowering`) and compiled as any DAG; each
call splits the jagged inputs into values and offsets, computes on the host
what the lowering asked for (segment ids, largest extents, checks of
zipped offsets) and rebuilds :class:`~ftlazy.JaggedArray` results.

Data-dependent sizes and host index arrays (see
:mod:`ftlazy.fractal_access`) are hoisted out of the DAG before it is
lowered: each :class:`~ftlazy.fractal_access.DerivedSize` becomes a plain
size parameter of its generated name, each
:class:`~ftlazy.fractal_access.HostIndexArray` a placeholder
``_ft_host<k>``. At each call the host binds the user's inputs, evaluates
their definitions with the reference evaluator (raising the
:class:`IndexError` of an index out of range before the launch) and passes
the values in."""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache
from typing import Any

import numpy as np

from ftlazy import shapes as sh
from ftlazy.array import (
    Array, DictOfNamedArrays, IndexLambda, Placeholder, SizeParam)
from ftlazy.fractal import Loop
from ftlazy.fractal_access import DerivedSize, HostIndexArray
from ftlazy.fractal_nested import check_no_counted_results
from ftlazy.fractal_tensor import Jagged, JaggedInputPart, JaggedMap
from ftlazy.jagged import JaggedArray
from ftlazy.node import Node, topological_order
from ftlazy.target.binding import (
    bind_inputs, collect_inputs, collect_size_names, unexpected_inputs_message,
    with_fractal_tensor_sizes)
from ftlazy.target.loopy.host_loops import (
    HostLoops, lowering_with_host_loops, on_host)
from ftlazy.target.loopy.jagged_first_phase import FirstPhase
from ftlazy.target.jagged_inputs import (
    check_zipped, expand_jagged_inputs, fractal_tensor_label)
from ftlazy.transform.jagged_counted import zip_counted_lists
from ftlazy.transform.jagged_element_reads import zip_element_reads
from ftlazy.transform.jagged_lowering import (
    CountForm, HostDerivations, copied_source, lower_jagged_maps)
from ftlazy.transform.mappers import CopyMapper
from ftlazy.transform.scan_body_maps import close_scan_bodies, open_scan_bodies


def _jagged_keys(result: Any) -> dict[Any, tuple[str, tuple[str, ...]]]:
    """The keys in :func:`_roots` of the values and offsets of each
    FractalTensor result: by its name in a :class:`DictOfNamedArrays`, None
    for a FractalTensor alone. A dict's FractalTensor ``h`` has the keys
    ``h_values`` and ``h_offsets<k>``, numbered where the dict's other
    names take them."""
    if isinstance(result, Jagged):
        return {None: ("values", tuple(f"offsets{k}"
                                       for k in range(len(result.offsets))))}
    if not isinstance(result, DictOfNamedArrays):
        return {}
    taken = set(result.keys())
    keys = {}
    for name, value in result.items():
        if not isinstance(value, Jagged):
            continue
        k = 0
        while True:
            suffix = f"_{k}" if k else ""
            parts = (f"{name}_values{suffix}", tuple(
                f"{name}_offsets{j}{suffix}" for j in range(len(value.offsets))))
            if not ({parts[0], *parts[1]} & taken):
                break
            k += 1
        taken |= {parts[0], *parts[1]}
        keys[name] = parts
    return keys


def _roots(result: Any) -> dict[str, Array]:
    if isinstance(result, DictOfNamedArrays):
        keys = _jagged_keys(result)
        roots: dict[str, Array] = {}
        for name, value in result.items():
            if name in keys:
                values_key, offsets_keys = keys[name]
                roots[values_key] = value.values
                roots.update(zip(offsets_keys, value.offsets))
            else:
                roots[name] = value
        return roots
    if isinstance(result, Jagged):
        ((values_key, offsets_keys),) = _jagged_keys(result).values()
        return {values_key: result.values} | dict(zip(offsets_keys,
                                                      result.offsets))
    return {"result": result}


#: results already looked at -> their lowering (None: no jagged data), so
#: that compiling a result again walks its DAG no more (bounded)
_LOWERINGS: dict[Node, _Lowering | None] = {}
_CACHE_LIMIT = 256


def needs_jagged_lowering(result: Any) -> bool:
    """Whether *result* is a FractalTensor or its DAG holds maps over
    FractalTensors, which only :func:`jagged_lowering` turns into a dense
    DAG (a DAG already lowered reads only their packed parts)."""
    if isinstance(result, Jagged) or (isinstance(
            result, DictOfNamedArrays) and _jagged_keys(result)):
        return True
    if not isinstance(result, (Array, DictOfNamedArrays)):
        return False    # (refused by whoever checks what results may be)
    return any(isinstance(n, JaggedMap)
               for n in topological_order(list(_roots(result).values())))


def _reads_jagged_data(result: Any) -> bool:
    if isinstance(result, Jagged):
        return True
    for n in topological_order(list(_roots(result).values())):
        if isinstance(n, (JaggedMap, DerivedSize, HostIndexArray)) or (
                isinstance(n, Placeholder) and any(
                    isinstance(t, JaggedInputPart) for t in n.tags)):
            return True
    return False


# {{{ data-dependent sizes and host index arrays

def _check_not_in_bodies(roots: list[Array]) -> None:
    """:class:`NotImplementedError` if a loop body defines a data-dependent
    size or a host index array (evaluated per iteration: not compiled)."""
    stack = [(n.body, _padded_counts(n)) for n in topological_order(roots)
             if isinstance(n, Loop)]
    seen: set = set()
    while stack:
        body, padded = stack.pop()
        if body in seen:
            continue
        seen.add(body)
        for n in topological_order(list(body.outputs)):
            if isinstance(n, DerivedSize) and n.name in padded:
                continue
            if isinstance(n, (DerivedSize, HostIndexArray)):
                raise NotImplementedError(
                    "compiling a data-dependent size (xs[i], a slice, "
                    "ft.gather, ft.filter, ... on a FractalTensor) in this loop "
                    "body is not supported yet. Maps over depth-2 "
                    "FractalTensors compile reads of a FractalTensor's element "
                    "at an index computed per element, and lists counted per "
                    "element (ft.filter of rows, also of kept rows or of a "
                    "captured array's rows; ft.repeat; ft.product of two "
                    "elements); not in a scan's or fold's body, in a depth-3 "
                    "map, or at the steps of a loop nested in the map's body. "
                    "ft.evaluate_numpy evaluates it")
            if isinstance(n, Loop):
                stack.append((n.body, _padded_counts(n)))


def _padded_counts(loop: Loop) -> dict[str, Any]:
    """The counts of the element's length that *loop*'s body defines and
    its lowering pads (a scan or fold over a depth-2 FractalTensor's
    outer list, see :func:`~ftlazy.transform.jagged_outer_scan.counts_of_length`)."""
    from ftlazy.jagged_scan_outer import JaggedScan
    from ftlazy.transform.jagged_outer_scan import counts_of_length
    if not isinstance(loop, JaggedScan) or len(loop.symbols) != 1:
        return {}
    return counts_of_length(loop.body, loop.symbols[0])


class _Hoister(CopyMapper):
    """Replaces data-dependent sizes by size parameters and host index
    arrays by placeholders (see the module docs)."""

    def __init__(self) -> None:
        super().__init__()
        #: placeholder name -> the host index array it stands for
        self.arrays: dict[str, HostIndexArray] = {}

    def map_derived_size(self, expr: DerivedSize) -> SizeParam:
        return SizeParam(expr.name)

    def map_body(self, body: Node) -> Node:
        # (the sizes a loop body defines are its lowering's: a fold's
        # counts of its element's length, see _padded_counts)
        return body

    def map_host_index_array(self, expr: HostIndexArray) -> Placeholder:
        name = f"_ft_host{len(self.arrays)}"
        self.arrays[name] = expr
        return Placeholder(name, expr.shape, expr.dtype)


class _HostValues:
    """What the host computes at each call for the data-dependent sizes and
    host index arrays of a DAG (see the module docs)."""

    def __init__(self, roots: dict[str, Array], input_nodes: list[Array],
                 derived: set[str] = frozenset()) -> None:
        nodes = list(roots.values())
        _check_not_in_bodies(nodes)
        order = topological_order(nodes)
        self.sizes = [n for n in order if isinstance(n, DerivedSize)]
        self.roots = roots
        self.arrays: dict[str, HostIndexArray] = {}
        if self.sizes or any(isinstance(n, HostIndexArray) for n in order):
            hoister = _Hoister()
            self.roots = {name: hoister(a) for name, a in roots.items()}
            self.arrays = hoister.arrays
        self.input_nodes = input_nodes
        #: the sizes bound from the inputs (not those the host derives
        #: after this phase, *derived*: a flattened map's segment ids)
        self.user_sizes = collect_size_names(nodes) - set(derived)
        #: sizes of the inputs' shapes, given with them (a host loop's
        #: result's data-dependent rows, which the host loop binds)
        self.input_sizes = {name for n in input_nodes for c in n.shape
                            for name in sh.size_param_names(c)}
        #: the maps whose results they read, run first on the device
        self.first_phase = FirstPhase(order)
        #: the generated names
        self.names = set(self.arrays) | {n.name for n in self.sizes}
        #: the names of the inputs and sizes they read
        computed = self.sizes + list(self.arrays.values())
        self.reads = ({n.name for n in collect_inputs(computed) if n.name}
                      | collect_size_names(computed))

    def compute(self, given: dict[str, Any]) -> dict[str, Any]:
        if not self.names:
            return {}
        from ftlazy.target.numpy import NumpyEvaluator
        user = ({n.name for n in self.input_nodes if n.name} | self.user_sizes
                | self.input_sizes)
        env, arrays = bind_inputs(self.input_nodes, {
            k: v for k, v in given.items() if k in user}, self.user_sizes)
        evaluator = NumpyEvaluator(env, arrays)
        # (with the sizes bound from the inputs: the first phase may need
        # one of an input it does not read, xs's number of elements for
        # the pairs of xs and ys)
        self.first_phase.seed(evaluator._cache, {**env, **given})
        # (in the order found when compiled: no walk of the DAG per call)
        for size in self.sizes:
            evaluator.rec(size)
        values: dict[str, Any] = {n.name: evaluator.env[n.name]
                                  for n in self.sizes}
        for name, node in self.arrays.items():
            values[name] = evaluator.rec(node)
        return values

# }}}


class _Lowering:
    """A jagged result lowered to dense nodes, and the names of its inputs;
    the loops *host_reasons* names are evaluated on the host (see
    :mod:`ftlazy.target.loopy.host_loops`)."""

    def __init__(self, result: Any,
                 host_reasons: dict[Loop, str] | None = None) -> None:
        roots = _roots(result)
        #: the user's inputs (also those only the host's loops read)
        self.input_nodes = collect_inputs(roots.values())
        self.host_loops = HostLoops(roots, host_reasons or {},
                                    self.input_nodes)
        # (element reads at a map's own index become zips first: they then
        # define no data-dependent size in the map's body)
        # (so do lists of a length computed in a map's body: refused where
        # they are not rewritten)
        host = HostDerivations()
        self.host_values = self._host_values(host)
        if host.names & self.host_values.reads:
            # (the first phase runs before the host derives its inputs: a
            # map over documents whose counts read the segment ids of its
            # flattening is left as it is)
            host = HostDerivations()
            self.host_values = self._host_values(None)
        # (maps in a scan's body read the offsets it captured: opened first)
        lowered, self.host = lower_jagged_maps(
            open_scan_bodies(self.host_values.roots), host)
        lowered = close_scan_bodies(lowered)
        #: result name -> the name of the input offsets returned as it
        #: (the offsets of a map's result are its input's: not copied)
        self.forwarded: dict[str, str] = {}
        forward = _InputCopiesForwarded()
        input_names = {n.name for n in self.input_nodes}
        #: the keys of each FractalTensor result's parts (see _jagged_keys)
        self.jagged_keys = _jagged_keys(result)
        offsets_keys = {k for _, keys in self.jagged_keys.values() for k in keys}
        for name, node in list(lowered.items()):
            source = forward(node)
            if (name in offsets_keys
                    and isinstance(source, Placeholder)
                    and source.name in input_names and any(
                        isinstance(t, JaggedInputPart) for t in source.tags)):
                self.forwarded[name] = source.name
                del lowered[name]
            elif not isinstance(source, Placeholder):
                lowered[name] = source
        self.dense = DictOfNamedArrays(lowered)
        #: what the user may pass, and what the dense program reads
        self.user_names = ({n.name for n in self.input_nodes if n.name}
                           | collect_size_names(roots.values()))
        dense_inputs = collect_inputs(lowered.values())
        self.dense_names = ({n.name for n in dense_inputs if n.name}
                            | collect_size_names(lowered.values()))
        #: placeholders the dense program does not read whose shapes give
        #: sizes it needs (the number of elements of a FractalTensor whose
        #: map's body does not read it): bound from them at each call
        def sizes(nodes: Any) -> set[str]:
            return {name for n in nodes for d in n.shape
                    for name in sh.size_param_names(d)}
        unread = collect_size_names(lowered.values()) - sizes(dense_inputs)
        self.size_sources = [
            n for n in self.input_nodes
            if isinstance(n, Placeholder) and n not in dense_inputs
            and unread & sizes([n])]
        self.unread_sizes = unread & sizes(self.size_sources)

    def _host_values(self, host: HostDerivations | None) -> _HostValues:
        """The host values of the roots with their counted lists zipped
        (maps over documents flattened first, into *host*, if given)."""
        roots = zip_counted_lists(self.host_loops.roots, host)
        check_no_counted_results(list(roots.values()))
        roots = zip_element_reads(roots)
        return _HostValues(roots, self.input_nodes + self.host_loops.placeholders,
                           host.names if host is not None else set())


class _InputCopiesForwarded(CopyMapper):
    """The lowered DAG with each copy of an input at its own indices (the
    offsets of a map's result, and of the next map's input, are the mapped
    FractalTensor's: see :func:`_host_source`) replaced by the input itself,
    so that no kernel copies it. Loop bodies, separate scopes that read
    outer arrays through their loop's inputs, are kept."""

    def map_index_lambda(self, expr: IndexLambda) -> Node:
        source = _host_source(expr)[0]
        if isinstance(source, Placeholder) and not expr.tags:
            return source
        return self.map_node(expr)

    def map_body(self, body: Node) -> Node:
        return body


def jagged_lowering(result: Any) -> _Lowering | None:
    """The lowering of *result* if it is a FractalTensor or its DAG reads
    one, else None (cached per result node)."""
    if not isinstance(result, (Array, DictOfNamedArrays, Jagged)):
        return None
    if result not in _LOWERINGS:
        if len(_LOWERINGS) >= _CACHE_LIMIT:
            _LOWERINGS.pop(next(iter(_LOWERINGS)))
        _LOWERINGS[result] = (
            lowering_with_host_loops(_Lowering, result, _roots(result))
            if _reads_jagged_data(result) else None)
    return _LOWERINGS[result]


class JaggedCompiledFunction:
    """``f(**inputs)`` for a DAG over FractalTensors (see the module docs);
    FractalTensor results come back as :class:`~ftlazy.JaggedArray`."""

    def __init__(self, result: Any, lowering: _Lowering,
                 compile_dense: Any) -> None:
        self.result = result
        self.lowering = lowering
        self.inner = compile_dense(lowering.dense)
        # segment ids that no kernel reads (a fused plan finds each element's
        # rows from the offsets) are not derived at each call
        program = getattr(self.inner, "program", None)
        self.underived = (program.omittable_inputs(set(lowering.host.segment_ids)
                                                  | set(lowering.host.row_orders))
                          if program is not None else frozenset())

    @property
    def source(self) -> str:
        return self.inner.source

    @property
    def host_evaluated(self) -> tuple[str, ...]:
        """The loops that run on the host, in numpy, at each call (their
        lowering to kernels is not supported: see
        :mod:`ftlazy.target.loopy.host_loops`); empty where the whole
        program is compiled."""
        return self.lowering.host_loops.described()

    @property
    def plan(self) -> Any:
        return self.inner.plan

    @property
    def timings(self) -> Any:
        return self.inner.timings

    @property
    def from_cache(self) -> bool:
        return self.inner.from_cache

    def __repr__(self) -> str:
        from ftlazy.display import compiled_repr
        return compiled_repr(self)

    def _repr_html_(self) -> str:
        from ftlazy.display import compiled_html
        return compiled_html(self)

    def __call__(self, /, **inputs: Any) -> Any:
        lowering = self.lowering
        given = with_fractal_tensor_sizes(
            expand_jagged_inputs(lowering.input_nodes, inputs),
            lowering.user_names)
        unknown = (set(given) - lowering.user_names
                   - (lowering.dense_names - lowering.host_values.names))
        if unknown:
            raise ValueError(unexpected_inputs_message(
                unknown, lowering.input_nodes, lowering.user_names))
        given.update(lowering.host_loops.compute(given))
        given.update(lowering.host_values.compute(given))
        derived = _derive(lowering.host, given, lowering.input_nodes,
                          self.underived)
        kernel_inputs = {k: v for k, v in given.items()
                         if k in lowering.dense_names}
        if lowering.unread_sizes:
            # (one not given is reported as missing, by its user's name)
            env, _ = bind_inputs(lowering.size_sources, {
                n.name: given[n.name] for n in lowering.size_sources
                if n.name in given})
            kernel_inputs.update((k, env[k]) for k in lowering.unread_sizes)
        # (derived inputs a result does not read, e.g. segment ids of
        # another result of the same map, are left out)
        out = self.inner(**kernel_inputs, **{
            k: v for k, v in derived.items() if k in lowering.dense_names})
        out.update((k, given[v]) for k, v in lowering.forwarded.items())
        jagged = {name: _assembled(out, *keys, lowering.forwarded)
                  for name, keys in lowering.jagged_keys.items()}
        if isinstance(self.result, Jagged):
            return jagged[None]
        if isinstance(self.result, DictOfNamedArrays):
            return {name: jagged[name] if name in jagged else out[name]
                    for name in self.result.keys()}
        return out["result"]


def _assembled(out: dict[str, Any], values_key: str,
               offsets_keys: tuple[str, ...], forwarded: dict[str, str]
               ) -> JaggedArray:
    """A FractalTensor result from its parts among the outputs *out*.
    Fresh values are adopted, not copied; offsets that are an input's
    (*forwarded*) come from the host, checked with it: offsets all
    forwarded are not checked again."""
    values = out[values_key]
    offsets = tuple(out[k] for k in offsets_keys)
    if (all(k in forwarded for k in offsets_keys)
            and len(values) == offsets[-1][-1]):
        return JaggedArray._trusted(values, offsets)
    return JaggedArray._adopt(values, *offsets)


def _evaluate(node: Array, given: dict[str, Any], cache: dict,
              placeholders: list[Placeholder],
              resolve: Callable[[str], Any] | None = None) -> np.ndarray:
    """*node* (offsets, computed from inputs only) evaluated on the host;
    an input is looked up, and copies of another array at their own indices
    (the offsets of a map's result) evaluate their source. Sizes it needs
    that are not given come from the shapes of the given *placeholders*
    (the number of rows of a FractalTensor whose offsets a join shifts);
    other inputs it needs that are not given, from *resolve* (the segment
    ids of an earlier map, which the offsets of a later one read)."""
    node, needed = _host_source(node)
    if node not in cache:
        if isinstance(node, Placeholder) and node.name in given:
            cache[node] = np.asarray(on_host(given[node.name]))
        else:
            from ftlazy.target.numpy import evaluate_numpy
            inputs = {k: on_host(v) for k, v in given.items() if k in needed}
            inputs.update(_sizes_from_shapes(needed - set(given), given,
                                             placeholders))
            if resolve is not None:
                for name in sorted(needed - set(inputs)):
                    value = resolve(name)
                    if value is not None:
                        inputs[name] = value
            cache[node] = np.asarray(evaluate_numpy(node, **inputs))
    return cache[node]


def _sizes_from_shapes(names: set[str] | frozenset[str], given: dict[str, Any],
                       placeholders: list[Placeholder]) -> dict[str, int]:
    """The size parameters among *names* that the shapes of the given
    *placeholders* tell."""
    sources = [p for p in placeholders if p.name in given and any(
        names & sh.size_param_names(c) for c in p.shape)]
    if not sources:
        return {}
    env, _ = bind_inputs(sources, {p.name: given[p.name] for p in sources})
    return {k: env[k] for k in names if k in env}


@lru_cache(maxsize=1024)
def _host_source(node: Array) -> tuple[Array, frozenset[str]]:
    """*node*, or the array it copies (see :func:`copied_source`), and the
    names of the inputs evaluating that array needs."""
    node = copied_source(node)
    return node, frozenset(
        {n.name for n in collect_inputs([node]) if n.name is not None}
        | collect_size_names([node]))


def _outer_length(array: Array, given: dict[str, Any], cache: dict,
                  placeholders: list[Placeholder],
                  resolve: Callable[[str], Any] | None = None) -> int:
    """The length of *array* (a dense array zipped with FractalTensors),
    from the shapes of the given inputs where they tell it (no need to
    compute the array, which may read sizes derived later), else by
    evaluating it."""
    from ftlazy import shapes as sh
    from ftlazy.target.binding import bind_inputs
    # the sizes every given placeholder's shape tells (an arange over the
    # number of elements reads no placeholder itself)
    inputs = [n for n in collect_inputs([array])
              if n.name in given and not isinstance(n, Placeholder)]
    inputs += [n for n in placeholders if n.name in given]
    try:
        env, _ = bind_inputs(inputs, {n.name: given[n.name] for n in inputs},
                             sh.size_param_names(array.shape[0]))
    except ValueError:
        return len(_evaluate(array, given, cache, placeholders, resolve))
    return sh.evaluate_component(array.shape[0], env)


def _extents(offsets: np.ndarray, form: tuple[int, int]) -> np.ndarray:
    const, coeff = form
    return const + coeff * np.diff(offsets)


def _derive(host: HostDerivations, given: dict[str, Any],
            placeholders: Any = (), underived: frozenset[str] = frozenset()
            ) -> dict[str, Any]:
    """The inputs of the dense program that the host derives from the
    offsets in *given*, after checking zipped structures; the segment ids
    named in *underived* are left out."""
    if host.empty:
        return {}
    cache: dict[Node, np.ndarray] = {}
    placeholders = [p for p in placeholders if isinstance(p, Placeholder)]
    # (extents and segment ids of the same offsets and form, e.g. those of
    # each layer of a fold over maps, are computed once)
    extents_of: dict[tuple[Node, tuple[int, int]], np.ndarray] = {}
    ids_of: dict[int, np.ndarray] = {}
    derived: dict[str, Any] = {}

    def extents(offsets: Array, form: Any) -> np.ndarray:
        key = (_host_source(offsets)[0], form)
        if key not in extents_of:
            extents_of[key] = (
                _evaluate(form.counts, given, cache, placeholders, resolve)
                if isinstance(form, CountForm) else _extents(
                    _evaluate(offsets, given, cache, placeholders, resolve),
                    form))
        return extents_of[key]

    def resolve(name: str) -> Any:
        """The derived input *name*, computed on first use (the offsets of
        a map may read the segment ids of the map before it)."""
        if name in derived:
            return derived[name]
        if name in host.segment_ids:
            ext = extents(*host.segment_ids[name])
            if id(ext) not in ids_of:
                ids_of[id(ext)] = _segment_ids(ext)
            value: Any = ids_of[id(ext)]
        elif name in host.max_extents:
            # (at least 1: a max or min over no step is refused by the size
            # checks, even when no element would run it)
            value = int(max(extents(*host.max_extents[name]).max(initial=0), 1))
        elif name in host.step_counts:
            # (0 where no element has a row: no step runs, and no step reads
            # a packed row that is not there)
            value = int(extents(*host.step_counts[name]).max(initial=0))
        elif name in host.row_orders:
            value = _row_order(extents(*host.row_orders[name]))
        else:
            return None
        derived[name] = value
        return value

    for what, offsets_nodes, dense in host.zipped:
        # (an entry is one offsets node, or a tuple of them per level)
        levels = [o if isinstance(o, tuple) else (o,) for o in offsets_nodes]
        mapped = [(1 + len(ls), [None] + [
            _evaluate(o, given, cache, placeholders, resolve) for o in ls])
                  for ls in levels]
        mapped += [(1, [np.empty((_outer_length(a, given, cache, placeholders,
                                                resolve), 0))])
                   for a in dense]
        check_zipped(what, mapped, [fractal_tensor_label(ls[0]) for ls in levels]
                     + [None] * len(dense))
    for what, first, other in host.same_count:
        counts = [len(_evaluate(o, given, cache, placeholders, resolve)) - 1
                  for o in (first, other)]
        if counts[1] < counts[0]:
            # (as evaluate_numpy's xs[i] of the first index past the end)
            raise IndexError(
                f"{what}: FractalTensor index: index {counts[1]} is out of "
                f"range for an outer list of {counts[1]} elements (the body "
                f"reads {fractal_tensor_label(other)} at the index of the "
                f"mapped {fractal_tensor_label(first)}, which has "
                f"{counts[0]} elements)")
        if counts[0] != counts[1]:
            # (compiled maps zip the two lists: those of different lengths
            # run in evaluate_numpy only)
            raise ValueError(
                f"{what}: {fractal_tensor_label(other)}, whose elements the "
                f"body reads at the map's index, has {counts[1]} elements, "
                f"the mapped {fractal_tensor_label(first)} has {counts[0]}: "
                "compiled maps read the two lists zipped, which needs as many "
                "elements in each (ft.evaluate_numpy computes the map; "
                "ft.gather the elements read, or slice the longer list "
                "outside the map)")
    for name, (offsets, form) in host.segment_ids.items():
        ext = extents(offsets, form)
        if ext.size and ext.min() < 0:
            # (checked also where no kernel reads the ids)
            raise ValueError(_negative_message(
                ext, form, host.requirements.get((offsets, form))))
        if name not in underived:
            resolve(name)
    for name in (*host.max_extents, *host.step_counts):
        resolve(name)
    for name in host.row_orders:
        if name not in underived:
            resolve(name)
    for offsets, form, op, picked, what in host.nonempty:
        ext = extents(offsets, form)
        if picked is not None:
            # (the elements of another map that read them: those that any
            # element of the map picks, in the map's order)
            ext = ext[_segment_ids(extents(*host.segment_ids[picked]))]
        if ext.size and ext.min() <= 0:
            i = int(np.argmin(ext))
            raise ValueError(
                f"{what}, element {i}: zero-size array to "
                f"reduction operation {'maximum' if op == 'max' else 'minimum'} "
                "which has no identity")
    return derived


def _segment_ids(extents: np.ndarray) -> np.ndarray:
    """The element of each packed row, elements of *extents* rows."""
    return np.repeat(np.arange(len(extents), dtype=np.int64), extents)


def _row_order(extents: np.ndarray) -> np.ndarray:
    """``(2, n)``: the elements by descending extent (ties in element order),
    then each element's place in that order."""
    order = np.argsort(-extents, kind="stable")
    place = np.empty_like(order)
    place[order] = np.arange(len(order))
    return np.stack([order, place]).astype(np.int64, copy=False)


def _negative_message(extents: np.ndarray, form: tuple[int, int],
                      requirement: str | None = None) -> str:
    i = int(np.argmin(extents))
    const, coeff = form
    rows = (f"{extents[i]} rows ({coeff}*L + {const} with L = "
            f"{(extents[i] - const) // coeff if coeff else '?'})")
    if requirement is not None:
        return (f"map over a FractalTensor, element {i}: {requirement} (an "
                f"array of the body has {rows})")
    return (f"map over a FractalTensor, element {i}: an array of the body has "
            f"{rows}, which is negative: an index or slice assumed a longer "
            "element")
