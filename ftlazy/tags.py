# SPDX-License-Identifier: MIT
"""Tags that ftlazy itself defines.

Tags are descriptive metadata (:class:`pytools.tag.Tag` instances) attached
to nodes and axes. They never change a result, and nothing propagates them
implicitly: a node built from a tagged node does not inherit its tags.
"""

from __future__ import annotations

from dataclasses import dataclass

from pytools.tag import Tag, UniqueTag, tag_dataclass


class ImplementationStrategy(UniqueTag):
    """How code generation should realize an array (at most one per node)."""


@tag_dataclass
class ImplStored(ImplementationStrategy):
    """Store the array in a global temporary rather than inline it."""


@tag_dataclass
class ImplInlined(ImplementationStrategy):
    """Compute the array inside each of its users, never store it."""


@dataclass(frozen=True)
class _NameTag(UniqueTag):
    pass


@tag_dataclass
class Named(_NameTag):
    """Name the stored array (a C identifier) in generated code."""

    name: str

    def __post_init__(self) -> None:
        from ftlazy.array import check_user_name
        check_user_name(self.name, "Named tag")


@tag_dataclass
class PrefixNamed(_NameTag):
    """Name the stored array with this prefix plus a unique suffix."""

    prefix: str

    def __post_init__(self) -> None:
        from ftlazy.array import check_user_name
        check_user_name(self.prefix, "PrefixNamed tag")


@tag_dataclass
class AssumeNonNegative(Tag):
    """A fact about an integer array's data: no entry is negative (pytato's
    tag of the same name, for index arrays). Descriptive, like every tag:
    ftlazy's generated code still tests the sign of an index read from
    data, so a negative entry is wrapped or reported as numpy would."""


@tag_dataclass
class ForceValueArgTag(Tag):
    """pytato's request to pass a scalar input to the kernel by value.
    Accepted so that pytato code runs; ftlazy's code generation chooses
    how to pass each input by itself (size parameters by value, arrays,
    0-d ones included, by buffer) and does not read this tag."""


@tag_dataclass
class ShapeRequirement(UniqueTag):
    """Set by ftlazy's operations on a node whose shape is negative exactly
    when an input is too short for them (``ft.slide`` over a sequence
    shorter than one window): :attr:`message` says what they need, and the
    :class:`ValueError` that evaluators raise for that shape says it."""

    message: str


__all__ = ["Tag", "UniqueTag", "ImplementationStrategy", "ImplStored",
           "ImplInlined", "Named", "PrefixNamed", "AssumeNonNegative",
           "ForceValueArgTag", "ShapeRequirement"]
