# SPDX-License-Identifier: MIT
"""Draw the tutorial's pictures again: runs the code blocks of
``doc/tutorial.rst`` (as ``test/test_examples.py`` does) and writes
``ft.to_svg`` of its ``y`` and its ``states`` into ``doc/_static/``.

Run from the repository root: ``python doc/tutorial_pictures.py`` (needs a
layout engine: ``pip install ftlazy[viz]``).
"""

from __future__ import annotations

import pathlib
import re
import sys
import textwrap

import ftlazy as ft

DOC = pathlib.Path(__file__).resolve().parent
#: the tutorial's variable drawn -> the file it is drawn into
PICTURES = {"y": "tutorial_y_dag.svg", "states": "tutorial_scan_dag.svg"}
_BLOCK = re.compile(r"^\.\. code-block:: python\n\n((?:(?: {4}.*)?\n)+)",
                    re.MULTILINE)


def tutorial_namespace() -> dict:
    """The variables of the tutorial once all its code blocks have run."""
    text = (DOC / "tutorial.rst").read_text()
    namespace: dict = {"__name__": "tutorial"}
    for block in _BLOCK.findall(text):
        exec(compile(textwrap.dedent(block), "tutorial.rst", "exec"), namespace)
    return namespace


def main() -> int:
    namespace = tutorial_namespace()
    for name, filename in PICTURES.items():
        svg = ft.to_svg(namespace[name])
        if svg is None:
            print("no layout engine: pip install ftlazy[viz]", file=sys.stderr)
            return 1
        path = DOC / "_static" / filename
        path.write_text(svg)
        print(f"wrote {path.relative_to(DOC.parent)} (the DAG of {name})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
