# SPDX-License-Identifier: MIT
"""numpy's dispatch protocols on lazy arrays.

:class:`~ftlazy.Array` implements ``__array_ufunc__`` and
``__array_function__`` with the functions of this module, so that numpy
code runs on lazy arrays where ftlazy has the operation: ``np.exp(x) + 1``,
``np.sum(row)`` inside a ``ft.map`` body, ``np.add(numpy_array, x)`` and
``numpy_array * x`` all build lazy nodes through the matching ``ft``
function (with ftlazy's dtype rules, which are numpy's).

Whatever cannot be done lazily is a :class:`TypeError` that names the numpy
function and, where that is the reason, the unsupported argument: ``out=``
(lazy results are new arrays; this includes in-place operators on numpy
arrays, ``numpy_array += x``), ufunc methods other than calling
(``np.add.reduce``; use ``ft.sum``), keyword arguments that ftlazy's
function lacks (``initial=``, ``where=``), and numpy functions ftlazy has no
equivalent for (``np.unique``, whose result's shape depends on the data).

.. autofunction:: array_ufunc
.. autofunction:: array_function
.. autofunction:: supported_ufuncs
.. autofunction:: supported_functions
"""

from __future__ import annotations

import builtins
import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any

import numpy as np

from ftlazy.array import Array

# nothing here belongs in the ``ft`` namespace
__all__: list[str] = []

_PY_SCALARS = (bool, int, float, complex)


def _is_device_array(x: Any) -> bool:
    return type(x).__module__.startswith("pyopencl") and hasattr(x, "dtype")


def _numpy_name(func: Any) -> str:
    """``numpy.sum``, ``numpy.linalg.norm``, ``numpy.add`` for messages."""
    name = getattr(func, "__name__", repr(func))
    module = getattr(func, "__module__", None) or "numpy"
    if not module.startswith("numpy") or isinstance(func, np.ufunc):
        module = "numpy"
    # public functions live in numpy's private submodules
    parts = [p for p in module.split(".") if not p.startswith("_")]
    return ".".join(parts + [name])


def _ftlazy_equivalent(name: str) -> str | None:
    import ftlazy
    fn = getattr(ftlazy, name, None)
    return f"ft.{name}" if inspect.isfunction(fn) else None


#: ftlazy functions named as a numpy function that does something else
_OTHER_MEANINGS = {
    "repeat": ("ft.repeat(x, n) is not numpy's repeat: it makes a list of n "
               "copies of x (a FractalTensor); numpy's repetition of each "
               "element of a 1-D x is ft.broadcast_to(x[:, None], "
               "(x.shape[0], n)).reshape(-1)"),
}


def _unsupported_hint(name: str) -> str:
    if name in _OTHER_MEANINGS:
        return _OTHER_MEANINGS[name]
    equivalent = _ftlazy_equivalent(name)
    if equivalent is not None:
        return f"use {equivalent}"
    return ("ftlazy has no equivalent; evaluate the array first "
            "(ft.evaluate_numpy or ft.compile) to apply numpy to its values")


# {{{ ufuncs

#: ``ufunc.reduce`` and ``ufunc.outer`` that ftlazy has under another name
_METHOD_HINTS = {
    ("add", "reduce"): "ft.sum", ("multiply", "reduce"): "ft.prod",
    ("maximum", "reduce"): "ft.amax", ("minimum", "reduce"): "ft.amin",
    ("logical_and", "reduce"): "ft.all", ("logical_or", "reduce"): "ft.any",
    ("multiply", "outer"): "ft.outer",
}

#: ufunc keyword arguments that are harmless at these values
_UFUNC_DEFAULTS = {
    "where": True, "casting": "same_kind", "order": "K", "dtype": None,
    "subok": True, "signature": None, "keepdims": False, "axes": None,
    "axis": None,
}


@cache
def supported_ufuncs() -> Mapping[np.ufunc, Callable[..., Any]]:
    """The numpy ufuncs that lazy arrays support, each with the ftlazy
    function it calls (``np.add`` -> ``ft.add``, ``np.matmul`` ->
    ``ft.matmul``): every ufunc that has an ftlazy function of the same
    name or alias."""
    from ftlazy import ops
    from ftlazy.ops import elementwise, rounding
    table: dict[np.ufunc, Callable[..., Any]] = {}
    for name in [*elementwise.__all__, *rounding.__all__, "matmul"]:
        ufunc = getattr(np, name, None)
        if isinstance(ufunc, np.ufunc):
            table.setdefault(ufunc, getattr(ops, name))
    return table


def _same_value(value: Any, default: Any) -> bool:
    """``value == default`` for plain Python values only (never an array
    comparison)."""
    if value is default:
        return True
    simple = (type(None), bool, int, float, str)
    return (type(value) in simple and type(default) in simple
            and type(value) is type(default) and value == default)


def _check_out(name: str, out: Any) -> None:
    outs = out if isinstance(out, tuple) else (out,)
    if any(o is not None for o in outs):
        raise TypeError(
            f"{name}(..., out=...) is not supported on ftlazy arrays: an "
            "operation on a lazy array returns a new lazy array, which cannot "
            "be stored into an existing array (in-place operators such as "
            "numpy_array += lazy_array do this); use the returned array")


def _ufunc_operand(x: Any) -> Any:
    """*x* as something the ft functions accept, or None if it is of a
    type this protocol does not handle."""
    if isinstance(x, (Array, np.ndarray, np.generic)) or _is_device_array(x):
        return x
    if isinstance(x, _PY_SCALARS):
        return x
    if isinstance(x, (list, tuple)):
        return np.asarray(x)
    return None


def array_ufunc(ufunc: np.ufunc, method: str, inputs: tuple[Any, ...],
                kwargs: dict[str, Any]) -> Any:
    """``Array.__array_ufunc__``: call the ftlazy function of *ufunc* on
    *inputs*. Only ``method == "__call__"`` is supported; ``out=`` and
    keyword arguments away from their defaults are a :class:`TypeError`
    naming the ufunc. Returns :data:`NotImplemented` for operands of types
    it does not know (so that their own ``__array_ufunc__`` may run)."""
    name = f"numpy.{ufunc.__name__}"
    if method != "__call__":
        hint = _METHOD_HINTS.get((ufunc.__name__, method))
        raise TypeError(
            f"{name}.{method} is not supported on ftlazy arrays (only calling "
            f"the ufunc is); " + (f"use {hint}" if hint else
                                  "ftlazy has no equivalent"))
    fn = supported_ufuncs().get(ufunc)
    if fn is None:
        raise TypeError(f"{name} is not supported on ftlazy arrays; "
                        + _unsupported_hint(ufunc.__name__))
    kwargs = dict(kwargs)
    if "out" in kwargs:
        _check_out(name, kwargs.pop("out"))
    for key, value in kwargs.items():
        if key not in _UFUNC_DEFAULTS or not _same_value(value,
                                                         _UFUNC_DEFAULTS[key]):
            raise TypeError(f"{name}: the keyword argument {key}={value!r} is "
                            "not supported on ftlazy arrays")
    operands = [_ufunc_operand(x) for x in inputs]
    if any(x is None for x in operands):
        return NotImplemented
    return fn(*operands)

# }}}


# {{{ array functions

@dataclass(frozen=True)
class _Translation:
    """How a numpy function's arguments become an ftlazy call."""

    #: the ftlazy function (an attribute of :mod:`ftlazy.ops`), or a callable
    target: str | Callable[..., Any]
    #: numpy parameter name -> ftlazy keyword; ``"*"`` passes a numpy
    #: ``*args`` parameter on positionally
    params: Mapping[str, str]
    #: parameters accepted with any value because they cannot change a
    #: lazy result (``copy``, memory ``order`` of a new array, einsum's
    #: ``optimize``)
    ignored: frozenset[str] = frozenset()

    def function(self) -> Callable[..., Any]:
        if callable(self.target):
            return self.target
        from ftlazy import ops
        return getattr(ops, self.target)

    def ft_name(self) -> str:
        if callable(self.target):
            return "ftlazy"
        return f"ft.{self.target}"


def _where(condition: Any, x: Any = None, y: Any = None) -> Any:
    from ftlazy import ops
    if x is None or y is None:
        raise TypeError(
            "numpy.where(condition) with one argument (the indices of the "
            "non-zero elements) is not supported on ftlazy arrays: the shape "
            "of its result depends on the data; use ft.where(condition, x, y)")
    return ops.where(condition, x, y)


def _shape(a: Any) -> tuple[Any, ...]:
    from ftlazy import ops
    return ops.asarray(a).shape


def _ndim(a: Any) -> int:
    from ftlazy import ops
    return ops.asarray(a).ndim


def _same(*names: str) -> dict[str, str]:
    return {n: n for n in names}


_REDUCE = _same("a", "axis", "keepdims")
_EXTREMUM = _same("a", "axis", "keepdims", "initial")
_REDUCE_DTYPE = _same("a", "axis", "dtype", "keepdims")
_LIKE_IGNORED = frozenset({"order", "subok"})


@cache
def _translations() -> dict[Any, _Translation]:
    t = _Translation
    table = {
        np.sum: t("sum", _REDUCE_DTYPE),
        np.prod: t("prod", _REDUCE_DTYPE),
        np.amax: t("amax", _EXTREMUM),
        np.max: t("amax", _EXTREMUM),
        np.amin: t("amin", _EXTREMUM),
        np.min: t("amin", _EXTREMUM),
        np.any: t("any", _REDUCE),
        np.all: t("all", _REDUCE),
        np.mean: t("mean", _REDUCE_DTYPE),
        np.var: t("var", {**_REDUCE_DTYPE, "ddof": "ddof",
                          "correction": "ddof"}),
        np.std: t("std", {**_REDUCE_DTYPE, "ddof": "ddof",
                          "correction": "ddof"}),
        np.reshape: t("reshape", {"a": "a", "shape": "newshape",
                                  "order": "order"}, frozenset({"copy"})),
        np.ravel: t("ravel", _same("a", "order")),
        np.transpose: t("transpose", _same("a", "axes")),
        np.swapaxes: t("swapaxes", _same("a", "axis1", "axis2")),
        np.moveaxis: t("moveaxis", _same("a", "source", "destination")),
        np.expand_dims: t("expand_dims", _same("a", "axis")),
        np.squeeze: t("squeeze", _same("a", "axis")),
        np.broadcast_to: t("broadcast_to", {"array": "a", "shape": "shape"},
                           frozenset({"subok"})),
        np.roll: t("roll", _same("a", "shift", "axis")),
        np.stack: t("stack", _same("arrays", "axis", "dtype")),
        np.concatenate: t("concatenate", _same("arrays", "axis", "dtype")),
        np.where: t(_where, _same("condition", "x", "y")),
        np.clip: t("clip", {"a": "a", "a_min": "a_min", "a_max": "a_max",
                            "min": "a_min", "max": "a_max"}),
        np.real: t("real", {"val": "x"}),
        np.imag: t("imag", {"val": "x"}),
        np.einsum: t("einsum", {"operands": "*"}, frozenset({"optimize"})),
        np.dot: t("dot", _same("a", "b")),
        np.vdot: t("vdot", _same("a", "b")),
        np.inner: t("inner", _same("a", "b")),
        np.outer: t("outer", _same("a", "b")),
        np.tensordot: t("tensordot", _same("a", "b", "axes")),
        np.trace: t("trace", _same("a", "offset", "axis1", "axis2", "dtype")),
        np.take: t("take", _same("a", "indices", "axis")),
        np.zeros_like: t("zeros_like", _same("a", "dtype"), _LIKE_IGNORED),
        np.ones_like: t("ones_like", _same("a", "dtype"), _LIKE_IGNORED),
        np.full_like: t("full_like", _same("a", "fill_value", "dtype"),
                        _LIKE_IGNORED),
        np.result_type: t("result_type", {"arrays_and_dtypes": "*"}),
        np.shape: t(_shape, _same("a")),
        np.argmax: t("argmax", _REDUCE),
        np.argmin: t("argmin", _REDUCE),
        np.cumsum: t("cumsum", _same("a", "axis", "dtype")),
        np.cumprod: t("cumprod", _same("a", "axis", "dtype")),
        np.sort: t("sort", _same("a", "axis", "kind")),
        np.argsort: t("argsort", _same("a", "axis", "kind")),
        np.diag: t("diag", _same("v", "k")),
        np.tril: t("tril", _same("m", "k")),
        np.triu: t("triu", _same("m", "k")),
        np.meshgrid: t("meshgrid", {"xi": "*", "copy": "copy",
                                    "sparse": "sparse", "indexing": "indexing"}),
        np.round: t("round", _same("a", "decimals")),
        np.around: t("round", _same("a", "decimals")),
        np.pad: t("pad", _same("array", "pad_width", "mode",
                               "constant_values")),
        np.ndim: t(_ndim, _same("a")),
    }
    if hasattr(np, "astype"):
        table[np.astype] = t("astype", _same("x", "dtype"),
                             frozenset({"copy"}))
    return table


def supported_functions() -> frozenset[Any]:
    """The numpy functions (not ufuncs) that lazy arrays support."""
    return frozenset(_translations())


#: keyword arguments that are harmless at these values in any function
_FUNCTION_DEFAULTS = {
    "out": None, "where": True, "casting": "same_kind", "dtype": None,
    "device": None, "shape": None, "mode": "raise", "order": "K",
}


@cache
def _signature(func: Any) -> inspect.Signature:
    return inspect.signature(func)


def _is_default(name: str, value: Any, param: inspect.Parameter | None) -> bool:
    if param is not None and param.default is not inspect.Parameter.empty:
        if _same_value(value, param.default):
            return True
    return name in _FUNCTION_DEFAULTS and _same_value(value,
                                                      _FUNCTION_DEFAULTS[name])


def _translate(func: Any, translation: _Translation, args: tuple,
               kwargs: dict[str, Any]) -> Any:
    name = _numpy_name(func)
    sig = _signature(func)
    try:
        bound = sig.bind(*args, **kwargs)
    except TypeError as e:
        raise TypeError(f"{name}: {e}") from None
    positional: list[Any] = []
    keywords: dict[str, Any] = {}
    given: dict[str, str] = {}
    for pname, value in bound.arguments.items():
        param = sig.parameters[pname]
        if param.kind is inspect.Parameter.VAR_KEYWORD:
            items = [(k, v, None) for k, v in value.items()]
        else:
            items = [(pname, value, param)]
        for key, val, p in items:
            target = translation.params.get(key)
            if target == "*":
                positional.extend(val)
            elif target is not None:
                if target in keywords:
                    raise TypeError(f"{name}: {given[target]!r} and {key!r} "
                                    "give the same argument")
                keywords[target] = val
                given[target] = key
            elif key == "out":
                _check_out(name, val)
            elif key in translation.ignored or _is_default(key, val, p):
                continue
            else:
                raise TypeError(
                    f"{name}: the argument {key}={_short(val)} is not supported "
                    f"on ftlazy arrays ({translation.ft_name()} has no "
                    f"{key!r})")
    return translation.function()(*positional, **keywords)


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def array_function(func: Any, types: tuple[type, ...], args: tuple,
                   kwargs: dict[str, Any]) -> Any:
    """``Array.__array_function__``: call the ftlazy function matching the
    numpy function *func*, translating its arguments (``np.sum(x, axis=0,
    keepdims=True)`` is ``ft.sum(x, axis=0, keepdims=True)``).

    An argument ftlazy's function lacks (``out=``, ``initial=``) is a
    :class:`TypeError` naming *func* and the argument, unless it has its
    default value; a numpy function without an ftlazy equivalent is a
    :class:`TypeError` naming it. Returns :data:`NotImplemented` when
    *types* holds array types other than ftlazy's and numpy's, as the
    protocol asks.
    """
    if not builtins.all(issubclass(t, (Array, np.ndarray)) for t in types):
        return NotImplemented
    translation = _translations().get(func)
    if translation is None:
        raise TypeError(f"{_numpy_name(func)} is not supported on ftlazy "
                        "arrays; " + _unsupported_hint(
                            getattr(func, "__name__", "")))
    return _translate(func, translation, args, kwargs)

# }}}

# vim: foldmethod=marker
