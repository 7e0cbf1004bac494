# SPDX-License-Identifier: MIT
"""The gallery's DAG pictures (an image scraper of sphinx-gallery, named in
``doc/conf.py``)."""

from __future__ import annotations

import textwrap
from typing import Any


def svg_pictures(block: Any, block_vars: dict[str, Any],
                 gallery_conf: dict[str, Any]) -> str:
    """sphinx-gallery image scraper: a code block that leaves an SVG
    document (what :func:`ftlazy.to_svg` returns) in a global variable shows
    that picture inline, after its output, as a notebook's ``SVG(...)``
    would. Each picture is shown once per example."""
    shown = block_vars.setdefault("ftlazy_svgs_shown", set())
    rst = []
    for value in list(block_vars["example_globals"].values()):
        if not isinstance(value, str) or value in shown:
            continue
        start = value.find("<svg")
        if start < 0 or not value.lstrip().startswith(("<?xml", "<svg")):
            continue
        shown.add(value)
        # (the XML prolog and DOCTYPE are not HTML)
        svg = textwrap.indent(value[start:].strip(), "   ")
        rst.append(f"\n.. raw:: html\n\n   <div class='ftlazy-svg'>\n{svg}"
                   "\n   </div>\n")
    return "".join(rst)
