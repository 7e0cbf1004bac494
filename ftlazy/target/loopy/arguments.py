# SPDX-License-Identifier: MIT
"""The arguments of :func:`~ftlazy.generate_loopy` and
:func:`~ftlazy.compile` that code written for pytato passes: a plain
``dict`` of named results, and :class:`loopy.Options` as ``options``.

.. autofunction:: as_result
.. autofunction:: split_options
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import loopy as lp

from ftlazy.array import Array, DictOfNamedArrays

#: the fields of :class:`loopy.Options` that ftlazy honors; any other field
#: set to a non-default value is refused (ftlazy generates and runs the
#: host code itself, so loopy's execution options do not apply)
HONORED_LOOPY_OPTIONS = ("return_dict", "write_code")


def as_result(result: Any, caller: str) -> Any:
    """*result* as something :func:`~ftlazy.generate_loopy` compiles: an
    :class:`~ftlazy.Array` or a :class:`~ftlazy.DictOfNamedArrays` as they
    are, a mapping of names to arrays (pytato accepts a plain ``dict``) as a
    :class:`~ftlazy.DictOfNamedArrays` (a bad name or value raises
    :class:`TypeError` naming *caller*). Anything else is returned as it is,
    for the callers' own checks."""
    if isinstance(result, (Array, DictOfNamedArrays)):
        return result
    if isinstance(result, Mapping):
        if not result:
            raise ValueError(f"{caller}: the dict of results is empty")
        for name, value in result.items():
            if not isinstance(name, str):
                raise TypeError(f"{caller}: result names must be strings, got "
                                f"{type(name).__name__} {name!r}")
            from ftlazy.fractal_tensor import Jagged
            if not isinstance(value, (Array, Jagged)):
                raise TypeError(f"{caller}: result {name!r} is not an array: "
                                f"{type(value).__name__}")
        return DictOfNamedArrays(dict(result))
    # anything else (a FractalTensor for ft.compile, or a wrong type) goes on
    # to the callers' own checks, which name what they accept
    return result


def split_options(options: Any, result: Any, caller: str
                  ) -> tuple[Any, bool]:
    """Split *options* into ftlazy's code generation options (passed on
    unchanged unless *options* is a :class:`loopy.Options`) and whether to
    print the generated source (loopy's ``write_code``).

    A :class:`loopy.Options` is accepted as pytato accepts it: its
    ``return_dict`` must be true for a dict of results (ftlazy returns a dict
    for them, a one-element tuple for a single array), and its only other
    field honored is ``write_code`` (``write_cl``). Other fields that differ
    from loopy's defaults raise :class:`ValueError` naming them."""
    if not isinstance(options, lp.Options):
        return options, False
    default = lp.Options()
    ignored = sorted(
        name for name in vars(default)
        if not name.startswith("_") and name not in HONORED_LOOPY_OPTIONS
        and getattr(options, name) != getattr(default, name))
    if ignored:
        raise ValueError(f"{caller}: loopy options {ignored} do not apply to "
                         "ftlazy's programs (it honors only "
                         f"{list(HONORED_LOOPY_OPTIONS)}); use "
                         "ft.CodegenOptions for code generation choices")
    if not options.return_dict and isinstance(result, (Mapping,
                                                       DictOfNamedArrays)):
        raise ValueError(f"{caller}: options=loopy.Options(return_dict=False) "
                         "with named results; ftlazy returns named results as "
                         "a dict")
    return None, bool(options.write_code)
