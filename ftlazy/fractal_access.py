# SPDX-License-Identifier: MIT
"""Access operations on the outer list of FractalTensors: ``xs[i]``,
``xs[a:b:c]``, :func:`gather`, :func:`join`, :func:`product`,
:func:`repeat` and :func:`filter`, whose result sizes are known only at
run time.

**Data-dependent sizes.** The length of ``xs[i]`` is
``offsets[i+1] - offsets[i]``; the length of ``xs[a:b]`` depends on the
outer length ``n`` through Python's clamping rules; the number of elements
that :func:`filter` keeps is the count of a mask. Each such size is a
:class:`DerivedSize` node: a size parameter named ``_ft_dyn<k>`` (generated,
no user text) together with the 0-d integer node :attr:`DerivedSize.value`
that computes it. Shapes use the name like any size parameter (islpy proves
what it can about it; ``xs[i] * 2`` has the shape of ``xs[i]``), and every
IndexLambda built here whose shape or expression uses a derived size binds
its node as ``_ft_size_<name>``, so that the definition is reachable from
everything that needs it. Equal definitions get the same name (a weak
registry of definitions, the latest ones kept alive), so ``xs[0] +
xs[0]`` built twice has provably equal shapes.

The user never passes a derived size, and the size is never listed among a
program's inputs (:func:`~ftlazy.target.binding.collect_size_names` leaves
out every name whose definition is reachable):

* :func:`~ftlazy.evaluate_numpy` binds the user's inputs, then evaluates the
  :class:`DerivedSize` nodes in topological order before anything else,
  adding each value to the size environment (inside a loop body, per
  iteration);
* a compiled program (:mod:`ftlazy.target.loopy.jagged_program`) replaces
  each :class:`DerivedSize` by a plain size parameter of the same name and
  each :class:`HostIndexArray` by a placeholder ``_ft_host<k>``; at each
  call the host evaluates them with the reference evaluator before the
  launch (as it computes segment ids for maps over FractalTensors) and
  passes them in. Data-dependent sizes defined inside a loop body are
  evaluated by ``evaluate_numpy``; compiled, those of a map over depth-2
  FractalTensors that count a selection of the element's rows
  (``ft.filter``) or are computed from the element's sizes (``ft.product``
  of two elements) become zips (:mod:`ftlazy.transform.jagged_counted`),
  others are not compiled yet (:class:`NotImplementedError`). A map over
  FractalTensors whose results have such a length returns FractalTensors
  (``ft.map(lambda s: ft.filter(p, s), xs)``: the kept rows per element);
  so does a map over an array's rows (:func:`map_rows_as_lists`: an array
  ``(n, m, ...)`` mapped is a FractalTensor of ``n`` elements of length
  ``m``). Other loops with such results (a scan whose carry would change
  length) are refused (:func:`check_body_results`): reduce inside the body.

The one exception: element ``i`` of a depth-2 FractalTensor read inside a
map at the map's own index ``i`` (``ft.map(lambda y, i: ... xs[i] ...,
ys, ft.arange(n))``) is compiled as a zip of ``xs`` with the map's inputs
(:mod:`ftlazy.transform.jagged_element_reads`): :func:`getitem` marks the
element it builds with :class:`ElementRead`, and :func:`element_read`
finds what it reads.

Reads at data-dependent positions that hold by construction but that
loopy's bounds check cannot prove from independent size parameters
(``values[start + p]`` for ``p < count``) are guarded by that condition.

**Host index arrays.** Selecting elements of a FractalTensor needs small
integer arrays derived from the offsets: the checked indices, the new
offsets (an exclusive running sum of the selected lengths) and the segment
id of every new row. These are :class:`HostIndexArray` nodes, computed with
numpy by both paths (on the host before launch when compiled). A checked
index out of ``[-n, n)`` raises :class:`IndexError` there, so the device
never reads out of bounds.

**One selection mechanism.** Every operation here is a selection of
elements of the outer list by an index array (``_select``), level by level
down to the values, or of a contiguous range (``_select_range``, no segment
ids): ``xs[i]`` is the range ``[i, i+1)`` without its outer level,
``xs[a:b:1]`` a range, other slices and :func:`gather` index arrays,
:func:`product` the index arrays ``p // m`` and ``p % m``, :func:`repeat`
the index array of zeros into a one-element list, :func:`filter` the
segment ids of the mask's running sum. :func:`join` concatenates offsets
and values directly.

**Gathers in a body.** A gather of a document's sentences in a map over
documents has counts known only per document, which compiled programs
lower only on the host; a map over the gathered sentences whose results
have a static shape, and their lengths, are the document's own gathered
(:func:`map_over_gathered`, :func:`gathered_lengths`).

.. autoclass:: DerivedSize
.. autoclass:: HostIndexArray
.. autoclass:: ElementRead
.. autofunction:: derived_size
.. autofunction:: element_read
.. autofunction:: element_read_length
.. autofunction:: read_replacements
.. autofunction:: elements_at
.. autofunction:: check_body_results
.. autofunction:: map_rows_as_lists
.. autofunction:: getitem
.. autofunction:: gather
.. autofunction:: map_over_gathered
.. autofunction:: gathered_lengths
.. autofunction:: join
.. autofunction:: product
.. autofunction:: repeat
.. autofunction:: filter
"""

from __future__ import annotations

import itertools
import weakref
from collections import deque
from dataclasses import field
from typing import Any, Callable, Mapping

import numpy as np
import pymbolic.primitives as prim
from pymbolic.mapper.dependency import DependencyMapper
from pytools.tag import UniqueTag, tag_dataclass

from ftlazy import shapes as sh
from ftlazy.array import Array, IndexLambda, SizeParam
from ftlazy.fractal_tensor import Jagged, _map_nesting, jagged_map
from ftlazy.node import node
from ftlazy.scalar_expr import index_var
from ftlazy.shapes import Shape, ShapeComponent

__all__ = ["DerivedSize", "HostIndexArray", "ElementRead", "DERIVED_SIZE_PREFIX",
           "derived_size", "element_read", "element_read_length",
           "read_replacements", "elements_at", "check_body_results",
           "map_rows_as_lists", "getitem", "gather", "join",
           "product", "repeat", "filter"]

#: prefix of the names of data-dependent sizes
DERIVED_SIZE_PREFIX = "_ft_dyn"

_INT64 = np.dtype(np.int64)


# {{{ nodes

@node(children=("value",))
class DerivedSize(Array):
    """The size parameter :attr:`name` whose value is the 0-d integer node
    :attr:`value`, computed at run time (see the module docs). As an array
    it is that value (0-d int64); it must be non-negative, else
    :class:`ValueError` at run time."""

    name: str
    value: Array
    shape: Shape = field(init=False)
    dtype: np.dtype = field(init=False)

    def _infer(self) -> None:
        if not (isinstance(self.name, str) and self.name.startswith(
                DERIVED_SIZE_PREFIX) and self.name.isidentifier()):
            raise ValueError(f"a derived size's name must start with "
                             f"{DERIVED_SIZE_PREFIX!r}, got {self.name!r}")
        if self.value.ndim != 0 or self.value.dtype.kind not in "iu":
            raise TypeError(f"a derived size needs a 0-d integer value, got "
                            f"{self.value!r}")
        object.__setattr__(self, "shape", ())
        object.__setattr__(self, "dtype", _INT64)

    def _repr_extra(self) -> str:
        return f", name={self.name!r}"


#: the operations of :class:`HostIndexArray`
HOST_OPS = ("checked_index", "offsets", "segment_ids")


@node(children=("args",))
class HostIndexArray(Array):
    """A small int64 index array derived from offsets or indices, computed
    with numpy (on the host before launch when compiled). :attr:`op`:

    * ``"checked_index"``: ``args = (indices,)`` normalized into
      ``[0, bound)`` (negative ones count from the end); an index outside
      ``[-bound, bound)`` raises :class:`IndexError` naming :attr:`what`;
    * ``"offsets"``: ``args = (lengths,)`` (``(k,)``): their exclusive
      running sum with the total appended, ``(k + 1,)``;
    * ``"segment_ids"``: ``args = (offsets,)``: for each row ``p`` in
      ``[0, offsets[-1])`` the ``e`` with ``offsets[e] <= p < offsets[e+1]``.
    """

    op: str
    args: tuple[Array, ...]
    shape: Shape
    bound: ShapeComponent = 0
    what: str = ""
    dtype: np.dtype = field(init=False)

    def _infer(self) -> None:
        if self.op not in HOST_OPS:
            raise ValueError(f"unknown host index operation {self.op!r}")
        object.__setattr__(self, "args", tuple(self.args))
        object.__setattr__(self, "shape", sh.normalize_shape(self.shape))
        object.__setattr__(self, "dtype", _INT64)

    def _repr_extra(self) -> str:
        return f", op={self.op!r}"

    def compute(self, args: list[np.ndarray], env: Mapping[str, int]
                ) -> np.ndarray:
        """The value from the numpy values of :attr:`args`."""
        (a,) = args
        a = np.asarray(a)
        if self.op == "checked_index":
            n = sh.evaluate_component(self.bound, env)
            _check_range(a, n, self.what)
            return np.where(a < 0, a + n, a).astype(np.int64)
        if self.op == "offsets":
            if a.size and a.min() < 0:
                i = int(np.argmin(a))
                found = (f"{self.what}: element {i} makes a list of a "
                         f"data-dependent length {int(a[i])}" if self.what
                         else f"a data-dependent length evaluates to "
                         f"{int(a[i])} (entry {i})")
                raise ValueError(f"{found}, which is negative: an index or "
                                 "slice assumed a longer axis")
            result = np.zeros(len(a) + 1, np.int64)
            np.cumsum(a, out=result[1:])
            return result
        lengths = np.diff(a)
        return np.repeat(np.arange(len(lengths), dtype=np.int64), lengths)


@tag_dataclass
class ElementRead(UniqueTag):
    """Marks the array ``xs[i]`` that :func:`getitem` builds for element
    ``i`` of a depth-2 FractalTensor (see :func:`element_read`)."""


def element_read(node: Array) -> tuple[Array, Array, Array] | None:
    """``(values, offsets, index)`` if *node* is element ``index`` (a 0-d
    integer array) of the depth-2 FractalTensor of *values* and *offsets*,
    as :func:`getitem` builds it (marked :class:`ElementRead`; its parts
    may have been copied since, as when a loop body is closed), else
    None."""
    if not (isinstance(node, IndexLambda) and ElementRead() in node.tags
            and isinstance(node.shape[0], prim.Variable)):
        return None
    # rows [start, start + count) of the values, count = o[k+1] - o[k] for
    # k the checked index (see _select_range)
    count = node.bindings.get(f"_ft_size_{node.shape[0].name}")
    if not (isinstance(count, DerivedSize) and isinstance(count.value,
                                                          IndexLambda)):
        return None
    checked = [b.value for b in count.value.bindings.values()
               if isinstance(b, DerivedSize)]
    if len(checked) != 1 or not isinstance(checked[0], HostIndexArray):
        return None
    return node.bindings["_in0"], count.value.bindings["_in0"], checked[0].args[0]


def element_read_length(node: Array) -> Array | None:
    """The array a body computes with where it uses the length of the
    element read *node* (``xs[i].shape[0]`` as a value, see
    :func:`element_read`), or None."""
    size = node.bindings.get(f"_ft_size_{node.shape[0].name}")
    return size.value if isinstance(size, DerivedSize) else None


def element_length_read(node: Array) -> tuple[Array, Array] | None:
    """``(offsets, index)`` if *node* is the length of element ``index``
    of a depth-2 FractalTensor with *offsets*, as ``xs[i].shape[0]`` used
    as a value computes it (see :func:`element_read_length`), else None."""
    if not (isinstance(node, IndexLambda) and node.shape == ()
            and node.dtype == _INT64 and "_in0" in node.bindings):
        return None
    checked = [b for b in node.bindings.values()
               if isinstance(b, DerivedSize) and isinstance(b.value, HostIndexArray)
               and b.value.op == "checked_index"]
    if len(checked) != 1:
        return None
    offsets, k = prim.Variable("_in0"), prim.Variable(checked[0].name)
    # (as _select_range builds it for one element)
    if node.expr != offsets[k + 1] - offsets[k]:
        return None
    return node.bindings["_in0"], checked[0].value.args[0]


def element_lengths_at(offsets: Array, indices: Array) -> Array:
    """The lengths of the elements *indices* (1-D int64) of a depth-2
    FractalTensor with *offsets*, as ``xs[i].shape[0]`` reads one: negative
    ones count from the end, and one out of range raises
    :class:`IndexError` at run time."""
    checked = _checked(indices, sh.sub(offsets.shape[0], 1),
                       "FractalTensor index")
    old, k = prim.Variable("_in0"), prim.Variable("_in1")[index_var(0)]
    return _lam(old[k + 1] - old[k], indices.shape, _INT64,
                {"_in0": offsets, "_in1": checked})


def read_replacements(reads: Any, new: Array) -> tuple[dict, dict]:
    """What a replay of a body (see
    :class:`ftlazy.transform.jagged_element_reads.BodyReplay`) that read
    elements as the nodes *reads* (:func:`element_read`) puts in their
    place to read *new* instead (an element of a new loop, or another
    read): each read and each read's length used as a value, and the
    renames of the reads' length names to *new*'s."""
    length = element_read_length(new) if isinstance(new, IndexLambda) else None
    if length is None:
        length = SizeParam(new.shape[0].name)
    replace: dict[Any, Any] = {read: new for read in reads}
    replace.update((value, length) for read in reads
                   if (value := element_read_length(read)) is not None)
    return replace, {read.shape[0].name: new.shape[0].name for read in reads}


def elements_at(xs: Jagged, indices: Array) -> Jagged:
    """The elements *indices* (1-D int64) of *xs*'s outer list, as ``xs[i]``
    reads one: negative ones count from the end, and one out of range
    raises :class:`IndexError` at run time."""
    return _select(xs, _checked(indices, xs.length, "FractalTensor index"))


def _check_range(indices: np.ndarray, n: int, what: str) -> None:
    """:class:`IndexError` naming *what* unless all *indices* lie in
    ``[-n, n)``."""
    bad = (indices < -n) | (indices >= n)
    if bad.any():
        raise IndexError(f"{what}: index {int(indices[bad].flat[0])} is out of "
                         f"range for an outer list of {n} elements")

# }}}


def _local_length_results(body: Any) -> list[int]:
    """The results of the loop *body* whose shape uses a data-dependent
    size defined inside the body (a list of per-iteration length)."""
    from ftlazy.node import topological_order
    local = {n.name for n in topological_order(list(body.outputs))
             if isinstance(n, DerivedSize)}
    return [k for k, out in enumerate(body.outputs)
            if local and any(local & sh.size_param_names(c) for c in out.shape)]


def check_body_results(body: Any, what: str) -> None:
    """:class:`NotImplementedError` if a result of the loop *body* has a
    shape that uses a data-dependent size defined inside the body (a scan
    whose carries have per-step lengths): stacking such results is not
    supported. (Maps return them as FractalTensors: over FractalTensors
    through :mod:`ftlazy.transform.jagged_counted`, over an array's rows
    through :func:`map_rows_as_lists`.)"""
    for k in _local_length_results(body):
        out = body.outputs[k]
        raise NotImplementedError(
            f"{what}: result {k} has shape {sh.shape_str(out.shape)}, a "
            "length computed inside the body (ft.filter, an element or a "
            "slice of a FractalTensor); results of data-dependent length "
            "per iteration are not supported here: reduce them inside the "
            "body")


def map_rows_as_lists(f: Callable, xs: tuple, body: Any) -> Any:
    """``ft.map(f, *xs)`` over arrays, whose traced *body* returns lists of
    a length computed per element (``ft.filter`` of each row's entries):
    mapped as FractalTensors, so those results are FractalTensors (depth
    2), as over a FractalTensor's elements. Each mapped array ``(n, m,
    ...)`` of the first one's ``m`` is a FractalTensor of ``n`` elements
    of length ``m`` (offsets ``m * arange(n + 1)``); other arrays are
    zipped along; bundles of arrays (pytrees) are mapped leaf by leaf.
    None where *body* has no such result."""
    if not _local_length_results(body):
        return None
    from ftlazy.fractal import tree_flatten, tree_unflatten
    flat = [tree_flatten(x, "map inputs") for x in xs]
    leaves = [leaf for group, _ in flat for leaf in group]
    rows = [x for x in leaves if x.ndim >= 2]
    if not rows:
        return None     # (no element has rows: nothing to make a list of)
    m = rows[0].shape[1]

    def as_list(x: Array) -> Array | Jagged:
        if x.ndim < 2 or not sh.prove_equal(x.shape[1], m):
            return x
        mm, p = _scalar_expr(m), index_var(0)
        rest = tuple(index_var(k + 1) for k in range(x.ndim - 2))
        values = _lam(prim.Variable("_in0")[(prim.FloorDiv(p, mm),
                                             prim.Remainder(p, mm)) + rest],
                      (_size(_scalar_expr(x.shape[0]) * mm),) + x.shape[2:],
                      x.dtype, {"_in0": x})
        # (the offsets bind the array, so that the host that evaluates them
        # reads its sizes from it)
        return Jagged(values, (_lam(mm * p, (sh.add(x.shape[0], 1),), _INT64,
                                    {"_ft_rows": x}),))
    counts = [len(group) for group, _ in flat]

    def on_leaves(*elements: Any) -> Any:
        groups, pos = [], 0
        for count, (_, structure) in zip(counts, flat):
            groups.append(tree_unflatten(list(elements[pos:pos + count]),
                                         structure))
            pos += count
        return f(*groups)
    return jagged_map(on_leaves, *(as_list(x) for x in leaves), what="map")


# {{{ building blocks

#: equal definitions share one name (and node) while the node lives
_NAME_OF: weakref.WeakKeyDictionary[Array, str] = weakref.WeakKeyDictionary()
_DERIVED: weakref.WeakValueDictionary[str, DerivedSize] = (
    weakref.WeakValueDictionary())
_NAME_COUNTER = itertools.count()
#: the latest definitions, kept alive between :func:`derived_size` and the
#: nodes that bind them (a shape holds only the name)
_KEEP: deque[DerivedSize] = deque(maxlen=4096)


#: every definition by its sequence number (see :func:`defined_since`)
_BY_SEQUENCE: weakref.WeakValueDictionary[int, DerivedSize] = (
    weakref.WeakValueDictionary())
_DEFINED = [0]


def defined_size(name: str, value: Array) -> DerivedSize:
    """The :class:`DerivedSize` *name* (a name generated by the caller) of
    *value*, registered as :func:`derived_size` registers its own, so that
    the nodes built here from shapes that use *name* bind its definition
    (the total rows of a map's counted results, sliced or gathered)."""
    derived = DerivedSize(name, value)
    _DERIVED[name] = derived
    _KEEP.append(derived)
    _BY_SEQUENCE[_DEFINED[0]] = derived
    _DEFINED[0] += 1
    return derived


def definitions_mark() -> int:
    """A mark for :func:`defined_since`: the number of sizes defined so far."""
    return _DEFINED[0]


def defined_since(mark: int) -> list[DerivedSize]:
    """The data-dependent sizes defined since :func:`definitions_mark`
    gave *mark* (those still alive), oldest first: a loop body's own, as
    the body is traced."""
    found = (_BY_SEQUENCE.get(k) for k in range(mark, _DEFINED[0]))
    return [d for d in found if d is not None]


def derived_size_value(name: str) -> Array | None:
    """The 0-d int64 value of the data-dependent size *name* (see the module
    docs) as an array to compute with, or None if *name* is not one. A
    total of lengths (the last running offset: the rows a filter keeps) is
    their sum, a reduction that compiles wherever the lengths do."""
    from ftlazy.ops import sum as total
    from ftlazy.transform.jagged_counted import last_entry_of
    derived = _DERIVED.get(name)
    if derived is None:
        return None
    offsets = last_entry_of(derived.value)
    if offsets is not None:
        return total(offsets.args[0], dtype=_INT64)
    return derived.value.astype(_INT64)


def _size_nodes(names: Any) -> dict[str, Array]:
    """``_ft_size_<name>`` bindings keeping the size parameters *names*
    reachable: derived sizes as their :class:`DerivedSize` node."""
    return {f"_ft_size_{name}": (_DERIVED[name] if name in _DERIVED
                                 else SizeParam(name))
            for name in sorted(names)}


def is_static_row(node: Any) -> bool:
    """Whether a loop body's *node* can be computed for every element
    first and zipped in as a row: an array (not a size's definition) whose
    shape has no data-dependent size."""
    return (isinstance(node, Array) and not isinstance(node, DerivedSize)
            and not any(name.startswith(DERIVED_SIZE_PREFIX)
                        for name in sh.shape_size_param_names(node.shape)))


def derived_size_bindings(shape: Shape) -> dict[str, Array]:
    """``_ft_size_<name>`` bindings of the data-dependent sizes that
    *shape* names (``ft.ones(xs[i].shape[0])``), for a node that reads no
    array of that size: its program then reaches their definitions."""
    names = {name for c in shape if not isinstance(c, int)
             for name in sh.size_param_names(c)
             if name.startswith(DERIVED_SIZE_PREFIX) and name in _DERIVED}
    return _size_nodes(names)


def _free_sizes(expr: Any, bindings: Mapping[str, Array]) -> set[str]:
    deps = DependencyMapper(include_subscripts=False, include_lookups=False,
                            include_calls=False, composite_leaves=False)(expr)
    names = {v.name for v in deps if isinstance(v, prim.Variable)}
    return {n for n in names if n not in bindings
            and not (n.startswith("_") and n[1:].isdigit())}


def _lam(expr: Any, shape: Shape, dtype: Any, bindings: dict[str, Array]
         ) -> IndexLambda:
    """An IndexLambda binding every size parameter its shape and
    expression use (see the module docs)."""
    shape = sh.normalize_shape(shape)
    names = _free_sizes(expr, bindings)
    for c in shape:
        names |= sh.size_param_names(c)
    return IndexLambda(expr, shape, dtype, {**bindings, **_size_nodes(names)})


def sizes_computed_from(roots: list[Any], symbols: Any,
                        is_param: Callable[[Any], bool]) -> set[str]:
    """The names of the data-dependent sizes that *roots* read whose value
    is computed from a parameter (a node for which *is_param* holds: a
    traced element's, a body's own) or from the sizes *symbols*: in a map
    body, a size of the element (``s[:2]``'s count), which differs per
    element, unlike one of an array from outside (``ys[1]``)."""
    from ftlazy.node import topological_order
    return {n.name for n in topological_order(list(roots))
            if isinstance(n, DerivedSize) and any(
                is_param(m) or (isinstance(m, SizeParam) and m.name in symbols)
                for m in topological_order([n.value]))}


def derived_size(value: Array) -> prim.Variable:
    """The size (a size-parameter variable for shapes) whose value is the
    0-d integer *value* at run time (see the module docs)."""
    name = _NAME_OF.get(value)
    derived = None if name is None else _DERIVED.get(name)
    if derived is None:
        name = f"{DERIVED_SIZE_PREFIX}{next(_NAME_COUNTER)}"
        derived = defined_size(name, value)
        _NAME_OF[value] = name
    else:
        # (the size is only a name in shapes: the first node to bind it
        # keeps the definition alive)
        _KEEP.append(derived)
    return prim.Variable(name)


def _size(expr: Any) -> ShapeComponent:
    """*expr* (an integer expression of sizes) as a shape component: itself
    where it is affine, else a derived size."""
    try:
        return sh.normalize_component(sh.to_affine(expr).to_expr())
    except (sh.NonAffineError, TypeError):
        return derived_size(_lam(expr, (), _INT64, {}))


def _entry(array: Array, index: Any) -> ShapeComponent:
    """``array[index]`` (1-D int64 *array*, *index* an expression of
    sizes) as a derived size."""
    return derived_size(_lam(prim.Variable("_in0")[index], (), _INT64,
                             {"_in0": array}))


def _host(op: str, arg: Array, shape: Shape, bound: ShapeComponent = 0,
          what: str = "") -> HostIndexArray:
    return HostIndexArray(op, (arg,), shape, bound, what)


def _offsets_of(lengths: Array, what: str = "") -> HostIndexArray:
    """The running sum of *lengths*; *what* names the list in the message
    for a negative length (``"map over a FractalTensor 'xs'"``, each
    length an element's)."""
    return _host("offsets", lengths, (sh.add(lengths.shape[0], 1),),
                 what=what)


def _outer_length(xs: Array | Jagged) -> ShapeComponent:
    return xs.length if isinstance(xs, Jagged) else xs.shape[0]


def _level_total(xs: Jagged, level: int) -> ShapeComponent:
    """The number of entries that the offsets of *level* index."""
    if level + 1 < len(xs.offsets):
        return sh.sub(xs.offsets[level + 1].shape[0], 1)
    return xs.values.shape[0]


def _rows(values: Array, src: Array) -> IndexLambda:
    """``values[src]`` along axis 0 (*src* in range by construction)."""
    rest = tuple(index_var(k + 1) for k in range(values.ndim - 1))
    read = prim.Variable("_in0")[(prim.Variable("_in1")[index_var(0)],) + rest]
    return _lam(read, src.shape + values.shape[1:], values.dtype,
                {"_in0": values, "_in1": src})


def _select(xs: Array | Jagged, src: Array) -> Array | Jagged:
    """The elements *src* (1-D int64, normalized and in range) of the outer
    list of *xs*, in order: level by level, the lengths of the selected
    entries give the new offsets (host) and the segment ids of the new
    entries give their sources at the next level."""
    if not isinstance(xs, Jagged):
        return _rows(xs, src)
    p = index_var(0)
    offsets = []
    for o in xs.offsets:
        old, s = prim.Variable("_in0"), prim.Variable("_in1")
        lengths = _lam(old[s[p] + 1] - old[s[p]], src.shape, _INT64,
                       {"_in0": o, "_in1": src})
        new = _offsets_of(lengths)
        total = _entry(new, src.shape[0])
        seg = _host("segment_ids", new, (total,))
        e = prim.Variable("_in2")[p]
        src = _lam(old[s[e]] + p - prim.Variable("_in3")[e], (total,), _INT64,
                   {"_in0": o, "_in1": src, "_in2": seg, "_in3": new})
        offsets.append(new)
    return Jagged(_rows(xs.values, src), tuple(offsets))


def _select_range(xs: Array | Jagged, start: ShapeComponent,
                  count: ShapeComponent) -> Array | Jagged:
    """The elements ``[start, start + count)`` of the outer list of *xs*
    (in range by construction): a view, no segment ids."""
    p = index_var(0)
    offsets = []
    if isinstance(xs, Jagged):
        for o in xs.offsets:
            old = prim.Variable("_in0")
            first = _entry(o, start)
            offsets.append(_lam(_guarded(old[start + p], start + p, o.shape[0],
                                         _INT64) - first,
                                (sh.add(count, 1),), _INT64, {"_in0": o}))
            start, count = first, derived_size(_lam(
                old[start + count] - old[start], (), _INT64, {"_in0": o}))
        values = xs.values
    else:
        values = xs
    rest = tuple(index_var(k + 1) for k in range(values.ndim - 1))
    rows = _lam(_guarded(prim.Variable("_in0")[(start + p,) + rest], start + p,
                         values.shape[0], values.dtype),
                (count,) + values.shape[1:], values.dtype, {"_in0": values})
    return Jagged(rows, tuple(offsets)) if offsets else rows


def _guarded(read: Any, row: Any, rows: ShapeComponent,
             dtype: np.dtype) -> Any:
    """*read* (of index *row*) under the condition ``0 <= row < rows``,
    which holds by construction (valid offsets) but which loopy's bounds
    check cannot prove from independent size parameters."""
    bound = rows if isinstance(rows, int) else sh.to_affine(rows).to_expr()
    cond = prim.LogicalAnd((prim.Comparison(row, ">=", 0),
                            prim.Comparison(row, "<", bound)))
    return prim.If(cond, read, np.zeros((), dtype)[()])


def _drop_outer(xs: Jagged) -> Array | Jagged:
    """The only element of a one-element list *xs*."""
    if len(xs.offsets) == 1:
        return xs.values
    return Jagged(xs.values, xs.offsets[1:])


def _nest(flat: Array | Jagged, outer: Array) -> Jagged:
    """*flat* grouped into an outer list by the offsets *outer*."""
    if isinstance(flat, Jagged):
        return Jagged(flat.values, (outer,) + flat.offsets)
    return Jagged(flat, (outer,))


def _check_structured(xs: Any, what: str, allow_0d: bool = False
                      ) -> Array | Jagged:
    """*xs* as a FractalTensor or an array (a list: at least one axis,
    unless *allow_0d*)."""
    from ftlazy.ops import asarray
    if isinstance(xs, Jagged):
        return xs
    try:
        xs = asarray(xs)
    except TypeError:
        raise TypeError(f"{what} expects a FractalTensor or an array, got "
                        f"{type(xs).__name__}") from None
    if xs.ndim == 0 and not allow_0d:
        raise ValueError(f"{what} expects a list (a FractalTensor or an array "
                         f"with at least one axis), got a 0-d array {xs!r}")
    return xs


def _checked(indices: Array, n: ShapeComponent, what: str) -> Array:
    """*indices* normalized into ``[0, n)``; out of range: IndexError at
    build time where *n* and the indices are known, else at run time."""
    from ftlazy.ops.convert import constant_value
    value = constant_value(indices) if isinstance(n, int) else None
    if value is not None:
        _check_range(np.asarray(value), n, what)
    return _host("checked_index", indices, indices.shape, n, what)

# }}}


# {{{ indexing

def _as_index(index: Any, what: str) -> Array:
    """A 0-d or 1-D integer index as an int64 array."""
    from ftlazy.ops import asarray
    if isinstance(index, (bool, np.bool_)):
        raise TypeError(f"{what}: a bool is not an index, got {index!r}")
    if isinstance(index, (int, np.integer)):
        return asarray(np.int64(index))
    if isinstance(index, (float, np.floating)):
        raise TypeError(f"{what}: indices must be integers, got the float "
                        f"{index!r}")
    if isinstance(index, Jagged):
        raise TypeError(f"{what}: a FractalTensor is not an index, got "
                        f"{index!r}")
    if isinstance(index, list):
        index = np.asarray(index) if index else np.zeros(0, _INT64)
    try:
        a = asarray(index)
    except TypeError:
        raise TypeError(f"{what}: indices must be integers or integer arrays, "
                        f"got {type(index).__name__}") from None
    if a.dtype.kind not in "iu":
        raise TypeError(f"{what}: indices must have an integer dtype, got "
                        f"{a.dtype}")
    return a if a.dtype == _INT64 else a.astype(_INT64)


def _slice_bounds(n: ShapeComponent, s: slice) -> tuple[Any, Any, int]:
    """``(start, count, step)`` of slice *s* over ``n`` entries, as Python
    does (clamped), expressions of sizes when *n* is symbolic."""
    for part in (s.start, s.stop, s.step):
        if part is not None and (isinstance(part, (bool, np.bool_))
                                 or not isinstance(part, (int, np.integer))):
            raise TypeError(f"FractalTensor slice {s!r}: start, stop and step "
                            "must be Python ints or None")
    step = 1 if s.step is None else int(s.step)
    if step == 0:
        raise ValueError(f"FractalTensor slice {s!r}: slice step cannot be zero")
    if isinstance(n, int):
        start, stop, step = s.indices(n)
        count = len(range(start, stop, step))
        return (start if count else 0), count, step
    N = n

    def bound(v: int | None, default: Any, lo: Any, hi: Any) -> Any:
        if v is None:
            return default
        v = int(v)
        return prim.Max((lo, v + N)) if v < 0 else prim.Min((v, hi))

    if step > 0:
        start = bound(s.start, 0, 0, N)
        stop = bound(s.stop, N, 0, N)
        count = prim.Max((0, prim.FloorDiv(stop - start + step - 1, step)))
    else:
        start = bound(s.start, N - 1, -1, N - 1)
        stop = bound(s.stop, -1, -1, N - 1)
        count = prim.Max((0, prim.FloorDiv(start - stop - step - 1, -step)))
    return prim.Max((start, 0)), count, step


def getitem(xs: Jagged, index: Any) -> Array | Jagged:
    """``xs[index]`` on the outer list of a FractalTensor of depth
    ``d >= 2``.

    * an int or a lazy 0-d integer array ``i``: element ``i`` (negative
      counts from the end), an array ``(L_i, *elem_shape)`` at depth 2 (its
      length a data-dependent size), a FractalTensor of depth ``d - 1``
      deeper; out of range raises :class:`IndexError` at run time (at build
      time where the outer length and the index are known);
    * a slice of Python ints (any sign and step, clamped as Python does): a
      FractalTensor of depth ``d`` of the selected elements.
    """
    if not isinstance(xs, Jagged):
        raise TypeError(f"getitem expects a FractalTensor, got {type(xs).__name__}")
    n = xs.length
    if isinstance(index, slice):
        start, count, step = _slice_bounds(n, index)
        start, count = _size(start), _size(count)
        if step == 1:
            sliced = _select_range(xs, start, count)
        else:
            sliced = _select(xs, _lam(start + step * index_var(0), (count,),
                                      _INT64, {}))
        from ftlazy.fractal_slice_views import mark_element_slice
        return mark_element_slice(xs, index, sliced)
    if isinstance(index, tuple):
        raise TypeError("FractalTensor indexing takes one index (an int, a 0-d "
                        "integer array or a slice) on the outer list, got a "
                        f"tuple of {len(index)}; index the element again")
    i = _as_index(index, "FractalTensor index")
    if i.ndim != 0:
        raise TypeError("FractalTensor index must be an int or a 0-d integer "
                        f"array, got shape {sh.shape_str(i.shape)}; use "
                        "ft.gather(xs, indices) to select several elements")
    rows = uniform_rows(xs)
    if rows is not None:
        return _uniform_row(rows, i, n)
    k = derived_size(_checked(i, n, "FractalTensor index"))
    element = _drop_outer(_select_range(xs, k, 1))
    return element.tagged(ElementRead()) if xs.depth == 2 else element


def gather(xs: Jagged, indices: Any, axis: int = 0) -> Jagged:
    """The elements *indices* (1-D integers, negative counting from the
    end, repeats allowed) of the outer list of the FractalTensor *xs*, in
    that order: a FractalTensor of the same depth whose offsets are the
    exclusive running sum of ``lengths(xs)[indices]``. An index out of
    range raises :class:`IndexError` at run time."""
    if not isinstance(xs, Jagged):
        raise TypeError(f"gather expects a FractalTensor, got {type(xs).__name__}")
    if (isinstance(axis, (bool, np.bool_)) or not isinstance(axis, (int, np.integer))
            or axis != 0):
        raise ValueError(f"gather on a FractalTensor selects elements of the "
                         f"outer list (axis 0), got axis={axis!r}")
    idx = _as_index(indices, "ft.gather")
    if idx.ndim != 1:
        raise ValueError(f"ft.gather on a FractalTensor needs 1-D indices, got "
                         f"shape {sh.shape_str(idx.shape)}")
    gathered = _select(xs, _checked(idx, xs.length, "ft.gather"))
    from ftlazy.fractal_slice_views import _in_a_body
    if _in_a_body(xs):
        gathers_in_bodies[gathered] = (xs, idx)
        while len(gathers_in_bodies) > 256:
            gathers_in_bodies.pop(next(iter(gathers_in_bodies)))
    return gathered


#: the gathers of a list in a loop body (a document's sentences in a map
#: over documents) -> the list and the indices: whose counts are known only
#: per element, so that :func:`map_over_gathered` and
#: :func:`gathered_lengths` gather results of the whole list instead (the
#: last 256)
gathers_in_bodies: dict[Jagged, tuple[Jagged, Array]] = {}


def map_over_gathered(f: Callable, gathered: Jagged) -> Any:
    """``ft.map(f, ft.gather(xs, idx))`` for a gather of a list *xs* in a
    body whose results have a static shape, as ``ft.gather(ft.map(f, xs),
    idx)``: *f* runs on every element of *xs* (as maps over a document's
    sentences compile) and the gather picks the rows, checked at run time
    as the gather's indices are; None for other maps."""
    from ftlazy.fractal import gather as gather_rows
    from ftlazy.fractal import tree_flatten, tree_unflatten
    from ftlazy.fractal_tensor import map as ft_map
    entry = gathers_in_bodies.get(gathered)
    if entry is None:
        return None
    xs, idx = entry
    result = ft_map(f, xs)
    leaves, structure = tree_flatten(result, "map")
    if not all(isinstance(leaf, Array) and leaf.ndim for leaf in leaves):
        return None
    return tree_unflatten([gather_rows(leaf, idx) for leaf in leaves], structure)


def gathered_lengths(gathered: Jagged) -> Array | None:
    """``ft.lengths(ft.gather(xs, idx))`` for a gather of a list in a body
    (see :func:`map_over_gathered`) as ``ft.gather(ft.lengths(xs), idx)``;
    None for other lists."""
    from ftlazy.fractal import gather as gather_rows
    from ftlazy.fractal_tensor import segment_lengths
    entry = gathers_in_bodies.get(gathered)
    if entry is None:
        return None
    xs, idx = entry
    return gather_rows(segment_lengths(xs.offsets[0]), idx)

# }}}


# {{{ building lists

def _describe(x: Array | Jagged) -> str:
    if isinstance(x, Jagged):
        return (f"a FractalTensor of depth {x.depth}, elem_shape "
                f"{sh.shape_str(x.elem_shape)} and dtype {x.dtype}")
    return (f"an array (depth 1) of elem_shape {sh.shape_str(x.shape[1:])} "
            f"and dtype {x.dtype}")


def join(xs: Any, ys: Any) -> Array | Jagged:
    """The outer lists of *xs* and *ys* concatenated (FractalTensor's
    ``join``). Both must have the same depth and elem_shape
    (:class:`ValueError`) and dtype (:class:`TypeError`); arrays are
    concatenated along axis 0."""
    from ftlazy.ops import concatenate
    xs = _check_structured(xs, "join (xs)")
    ys = _check_structured(ys, "join (ys)")
    depth = [x.depth if isinstance(x, Jagged) else 1 for x in (xs, ys)]
    elem = [x.elem_shape if isinstance(x, Jagged) else x.shape[1:] for x in (xs, ys)]
    if depth[0] != depth[1] or not sh.shapes_equal(*elem):
        raise ValueError(f"join: xs is {_describe(xs)} but ys is {_describe(ys)}; "
                         "they must have the same depth and elem_shape")
    if xs.dtype != ys.dtype:
        raise TypeError(f"join: xs is {_describe(xs)} but ys is {_describe(ys)}; "
                        "they must have the same dtype")
    if not isinstance(xs, Jagged):
        return concatenate([xs, ys])
    from ftlazy.fractal_slice_views import joined_element_slices
    joined = joined_element_slices(xs, ys)
    if joined is not None:
        return joined
    offsets = []
    for ox, oy in zip(xs.offsets, ys.offsets):
        # (ys's entries after xs's: shifted by xs's last offset, its count
        # of the next level, which a program reading only the offsets
        # cannot infer from a shape)
        last = _scalar_expr(sh.sub(ox.shape[0], 1))
        shift = _lam(_guarded(prim.Variable("_in0")[last], last, ox.shape[0],
                              _INT64), (), _INT64, {"_in0": ox})
        offsets.append(concatenate([ox, oy[1:] + shift]))
    return Jagged(concatenate([xs.values, ys.values]), tuple(offsets))


def _scalar_expr(c: ShapeComponent) -> Any:
    return c if isinstance(c, int) else sh.to_affine(c).to_expr()


def _as_count(n: Any, what: str) -> ShapeComponent:
    """A list length: a non-negative int, a size (a shape component or a
    size parameter) or a lazy 0-d integer array (a derived size)."""
    if isinstance(n, (bool, np.bool_)):
        raise TypeError(f"{what} must be an int or a size, got {n!r}")
    if isinstance(n, (int, np.integer)):
        if n < 0:
            raise ValueError(f"{what} must be non-negative, got {n}")
        return int(n)
    if isinstance(n, prim.ExpressionNode):
        return sh.normalize_component(n)
    if isinstance(n, DerivedSize):
        return prim.Variable(n.name)
    if isinstance(n, SizeParam):
        return prim.Variable(n.name)
    if isinstance(n, Array) and n.ndim == 0 and n.dtype.kind in "iu":
        return derived_size(n if n.dtype == _INT64 else n.astype(_INT64))
    raise TypeError(f"{what} must be an int, a size or a 0-d integer array, got "
                    f"{type(n).__name__} {n!r}")


def product(xs: Any, ys: Any) -> tuple[Jagged, Jagged]:
    """The cartesian product of the outer lists of *xs* (``n`` elements)
    and *ys* (``m``): ``(xss, yss)``, FractalTensors one level deeper, of
    ``n`` lists of ``m`` elements each, with ``xss[i][j] = xs[i]`` and
    ``yss[i][j] = ys[j]``. Arrays are lists of their rows.

    Every list has ``m`` elements, which the offsets ``m * arange(n + 1)``
    say at build time (:func:`uniform_length`): for arrays *xs* ``(n, H)``
    and *ys*, ``xss[i]`` has shape ``(m, H)`` and ``ft.map`` over the rows
    gives its function elements of shape ``(m, H)``
    (:func:`uniform_rows`)."""
    xs = _check_structured(xs, "product (xs)")
    ys = _check_structured(ys, "product (ys)")
    n, m = _outer_length(xs), _outer_length(ys)
    nm = _size(_scalar_expr(n) * _scalar_expr(m))
    p = index_var(0)
    mm = _scalar_expr(m)
    # (both results bind both lists: each has the other's length, so that
    # the user passes both, not a size parameter)
    lists = {"_ft_xs": _list_array(xs), "_ft_ys": _list_array(ys)}
    outer = _lam(mm * p, (sh.add(n, 1),), _INT64, lists)
    first = _lam(prim.FloorDiv(p, mm), (nm,), _INT64, {})
    second = _lam(prim.Remainder(p, mm), (nm,), _INT64, {})
    return _nest(_select(xs, first), outer), _nest(_select(ys, second), outer)


def uniform_length(xs: Any) -> ShapeComponent | None:
    """The length shared by every element of the depth-2 FractalTensor
    *xs* where its offsets give it at build time: offsets computed as
    ``c * arange(n + 1)`` for a size ``c`` (the rows of :func:`product`),
    else None."""
    if not (isinstance(xs, Jagged) and xs.depth == 2
            and isinstance(xs.offsets[0], IndexLambda)):
        return None
    offsets = xs.offsets[0]
    p = index_var(0)
    if offsets.expr == p:
        return 1
    if not (isinstance(offsets.expr, prim.Product)
            and list(offsets.expr.children).count(p) == 1):
        return None
    rest = [c for c in offsets.expr.children if c != p]
    c = rest[0] if len(rest) == 1 else prim.Product(tuple(rest))
    deps = DependencyMapper(composite_leaves=False)(c)
    if len(deps) != len(_free_sizes(c, offsets.bindings)):
        return None  # (c reads an array or an index)
    try:
        return sh.normalize_component(sh.to_affine(c).to_expr())
    except (sh.NonAffineError, TypeError):
        return None


def uniform_rows(xs: Any) -> Array | None:
    """The elements of *xs*, a depth-2 FractalTensor of
    :func:`uniform_length` ``c``, as a dense view ``(n, c, *elem_shape)``
    of its values (None for other FractalTensors): ``xs[i]`` is row ``i``
    of it, of static or symbolic length ``c``."""
    c = uniform_length(xs)
    if c is None:
        return None
    values = xs.values
    row = _scalar_expr(c) * index_var(0) + index_var(1)
    rest = tuple(index_var(k + 2) for k in range(values.ndim - 1))
    read = _guarded(prim.Variable("_in0")[(row,) + rest], row,
                    values.shape[0], values.dtype)
    # (the offsets are bound so that the view needs the inputs they need)
    return _lam(read, (xs.length, c) + values.shape[1:], values.dtype,
                {"_in0": values, "_ft_offsets": xs.offsets[0]})


def _uniform_row(rows: Array, index: Array, n: ShapeComponent) -> Array:
    """Row *index* (a 0-d integer array; negative counts from the end) of
    *rows*, the :func:`uniform_rows` of a FractalTensor of *n* elements: a
    gather, whose index is checked at run time (at build time where *n*
    and the index are known), so that it compiles inside loop bodies."""
    from ftlazy.fractal import gather
    from ftlazy.ops.convert import constant_value
    value = constant_value(index) if isinstance(n, int) else None
    if value is not None:
        _check_range(np.asarray(value), n, "FractalTensor index")
    return gather(rows, index, 0)


def map_uniform_rows(f: Callable, xs: tuple) -> Any:
    """``ft.map(f, *xs)`` where every FractalTensor of *xs* has the same
    :func:`uniform_length` ``c`` (the rows of :func:`product`): a map over
    their :func:`uniform_rows`, so *f* gets elements ``(c, *elem_shape)``.
    Results whose first axis is ``c`` are FractalTensors with the offsets
    of the first FractalTensor, as results of the element's length are
    (others stack to ``(n, ...)``). None where some FractalTensor is not
    uniform, of another length or another number of elements."""
    from ftlazy import fractal
    jagged = [x for x in xs if isinstance(x, Jagged)]
    lengths = [uniform_length(x) for x in jagged]
    if any(c is None for c in lengths) or not all(
            sh.prove_equal(c, lengths[0]) and sh.prove_equal(x.length, jagged[0].length)
            for c, x in zip(lengths, jagged)):
        return None
    c, first = lengths[0], jagged[0]
    result = fractal.map(f, *(uniform_rows(x) if isinstance(x, Jagged) else x
                              for x in xs))
    leaves, structure = fractal.tree_flatten(result, "map")
    wrapped = []
    for leaf in leaves:
        if leaf.ndim < 2 or not sh.prove_equal(leaf.shape[1], c):
            wrapped.append(leaf)
            continue
        cc, p = _scalar_expr(c), index_var(0)
        rest = tuple(index_var(k + 1) for k in range(leaf.ndim - 2))
        rows = _size(_scalar_expr(first.length) * cc)
        values = _lam(prim.Variable("_in0")[(prim.FloorDiv(p, cc),
                                             prim.Remainder(p, cc)) + rest],
                      (rows,) + leaf.shape[2:], leaf.dtype, {"_in0": leaf})
        wrapped.append(Jagged(values, first.offsets))
    return fractal.tree_unflatten(wrapped, structure)


def _list_array(xs: Array | Jagged) -> Array:
    """The array whose first axis is the outer list of *xs*."""
    return xs.offsets[0] if isinstance(xs, Jagged) else xs


def _lift(x: Array | Jagged) -> Jagged:
    """The one-element list ``[x]``."""
    total = _outer_length(x)
    outer = _lam(_scalar_expr(total) * index_var(0), (2,), _INT64, {})
    return _nest(x, outer)


def repeat(x: Any, n: Any) -> Array | Jagged:
    """A list of *n* copies of *x*, one level deeper (FractalTensor's
    ``repeat``): an array ``(L, ...)`` gives a FractalTensor of depth 2, a
    FractalTensor of depth ``d`` one of depth ``d + 1``, a 0-d array an
    array ``(n,)``. *n* is a non-negative int, a size, or a lazy 0-d integer
    array (negative raises :class:`ValueError` at run time)."""
    count = _as_count(n, "repeat: n")
    x = _check_structured(x, "repeat", allow_0d=True)
    if not isinstance(x, Jagged) and x.ndim == 0:
        return _lam(prim.Variable("_in0"), (count,), x.dtype, {"_in0": x})
    if not isinstance(x, Jagged):
        # (closed forms, as for product: copy j of row r is row L*j + r)
        length, p = _scalar_expr(x.shape[0]), index_var(0)
        outer = _lam(length * p, (sh.add(count, 1),), _INT64, {"_ft_x": x})
        rows = _size(_scalar_expr(count) * length)
        return _nest(_rows(x, _lam(prim.Remainder(p, length), (rows,), _INT64,
                                   {})), outer)
    zeros = _lam(0, (count,), _INT64, {})
    return _select(_lift(x), zeros)


def filter(pred: Callable[[Any], Any], seq: Any) -> Array | Jagged:
    """The elements of the list *seq* (axis 0 of an array, or the outer
    list of a FractalTensor) for which ``pred(element)`` (traced once, it
    must return a 0-d bool) holds, in order. The result's length is a
    data-dependent size."""
    from ftlazy import fractal
    if not callable(pred):
        raise TypeError(f"filter: pred must be callable, got {type(pred).__name__}")
    seq = _check_structured(seq, "filter")
    if isinstance(seq, Jagged):
        mask = jagged_map(pred, seq)
    else:
        # (batched into dense nodes: the host evaluates the mask with numpy
        # before a launch, vectorized rather than element by element)
        from ftlazy.transform.batch import batch_maps
        mask = fractal.map(pred, seq)
        try:
            mask = batch_maps(mask)
        except NotImplementedError:
            pass
    if not isinstance(mask, Array) or mask.ndim != 1 or mask.dtype != np.bool_:
        shown = (f"shape {sh.shape_str(mask.shape[1:])} and dtype {mask.dtype}"
                 if isinstance(mask, Array) else type(mask).__name__)
        raise TypeError(f"filter: pred must return a 0-d bool per element, got "
                        f"{shown}")
    if isinstance(seq, Array) and seq.shape[0] == 0:
        return seq      # (no rows to keep: a length known when built)
    kept, _ = _kept(seq, mask)
    if isinstance(seq, Jagged) and _map_nesting[0]:
        traced_filters.append((pred, seq, kept, mask))
    return kept


def _kept(seq: Array | Jagged, mask: Array) -> tuple[Array | Jagged, Array]:
    """The elements of *seq* where the 1-D bool *mask* holds, and the
    running count of kept elements (``len(mask) + 1`` entries)."""
    keep = _lam(prim.If(prim.Variable("_in0")[index_var(0)], 1, 0), mask.shape,
                _INT64, {"_in0": mask})
    offsets = _offsets_of(keep)
    count = _entry(offsets, mask.shape[0])
    return _select(seq, _host("segment_ids", offsets, (count,))), offsets


#: the filters of FractalTensors built while a body is traced: ``(pred,
#: seq, result, mask)``, most recent last (see
#: :func:`ftlazy.fractal_element_views.filtered_element_result`)
traced_filters: deque[tuple] = deque(maxlen=256)

# }}}
