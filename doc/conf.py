# SPDX-License-Identifier: MIT
"""Sphinx configuration for ftlazy's documentation.

Build with ``python -m sphinx -W -b html doc doc/_build/html``. No extension
here reaches the network (no intersphinx).
"""

from __future__ import annotations

import importlib
import inspect
import os
import sys

from docutils import nodes
from docutils.statemachine import StringList
from sphinx.util.docutils import SphinxDirective

sys.path.insert(0, os.path.abspath(os.path.join(os.path.dirname(__file__), "..")))
# (doc/gallery_pictures.py: named by its module path, so that Sphinx can
# cache the configuration)
sys.path.insert(0, os.path.abspath(os.path.dirname(__file__)))

import ftlazy

project = "ftlazy"
author = "the ftlazy developers"
copyright = "2026, the ftlazy developers"
version = release = ftlazy.__version__

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",
    "sphinx_gallery.gen_gallery",
]

exclude_patterns = ["_build"]

# {{{ the gallery: examples/*.py executed at build time, with their output

# the generated OpenCL compiler's chatter is not part of an example's output
os.environ.setdefault("PYOPENCL_COMPILER_OUTPUT", "0")

sphinx_gallery_conf = {
    # the scripts in examples/ (also run by test/test_examples.py) are the
    # gallery's sources; doc/gallery/ is generated (see .gitignore)
    "examples_dirs": "../examples",
    "gallery_dirs": "gallery",
    # execute every example, not only those named plot_*.py
    "filename_pattern": r"\.py$",
    "ignore_pattern": r"__init__\.py$",
    "within_subsection_order": "FileNameSortKey",
    # a cell's last expression is shown as a notebook would show it
    "capture_repr": ("_repr_html_", "__repr__"),
    # the examples draw no matplotlib figures, only DAG pictures
    "image_scrapers": ("gallery_pictures.svg_pictures",),
    "reset_modules": (),
    # a failing example fails the build (CI builds with -W)
    "abort_on_example_error": True,
    "only_warn_on_example_error": False,
    "download_all_examples": False,
    "show_signature": False,
    "remove_config_comments": True,
    # no page of execution times: sphinx-gallery's loads scripts from CDNs
    "write_computation_times": False,
}

# }}}
root_doc = "index"
html_theme = "alabaster"
# doc/_static: pictures that ftlazy draws (the README's demo DAG, kept
# current by test/test_visualization.py)
html_static_path = ["_static"]
# (scales the DAG pictures of the gallery down to the text's width)
html_css_files = ["ftlazy.css"]

autodoc_member_order = "bysource"
autodoc_typehints = "signature"
# a dataclass's defaults and a tag's repr are not documentation
autodoc_default_options = {"show-inheritance": False}


class TopLevelFunctions(SphinxDirective):
    """``.. ftlazy-toplevel-functions::`` documents, as ``ftlazy.NAME``,
    every public function of the ``ftlazy`` namespace that is not defined in
    one of the modules given as arguments (those are documented with their
    module), so the list never falls behind the code."""

    optional_arguments = 100

    def run(self) -> list[nodes.Node]:
        documented_elsewhere = tuple(self.arguments)
        names = []
        for name in sorted(dir(ftlazy)):
            obj = getattr(ftlazy, name)
            if name.startswith("_") or not inspect.isfunction(obj):
                continue
            if obj.__module__.startswith(documented_elsewhere):
                continue
            names.append(name)
        source = StringList()
        for name in names:
            source.append(f".. autofunction:: ftlazy.{name}", "<toplevel>")
            source.append("", "<toplevel>")
        container = nodes.section()
        container.document = self.state.document
        self.state.nested_parse(source, self.content_offset, container)
        return container.children


def _canonical_name(target: str) -> str | None:
    """Where the object named *target* is documented: ``ftlazy.Placeholder``
    is documented as ``ftlazy.array.Placeholder``, ``ftlazy.transform.Mapper``
    as ``ftlazy.transform.mappers.Mapper``. *None* if not importable."""
    parts = target.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        break
    else:
        return None
    canonical, suffix = None, []
    for name in parts[i:]:
        try:
            obj = getattr(obj, name)
        except AttributeError:
            return None
        if inspect.isclass(obj) or inspect.isfunction(obj):
            canonical, suffix = f"{obj.__module__}.{obj.__qualname__}", []
        else:
            suffix.append(name)
    if canonical is None:
        return None
    return ".".join([canonical, *suffix])


def _resolve_reexported(app, env, node, contnode):
    """Resolve references to re-exported names (``ftlazy.Placeholder``) to
    the object's documentation under its defining module."""
    if node.get("refdomain") != "py":
        return None
    target = node.get("reftarget", "")
    if not target.startswith("ftlazy."):
        return None
    canonical = _canonical_name(target)
    if canonical is None or canonical == target:
        return None
    return env.get_domain("py").resolve_xref(
        env, node["refdoc"], app.builder, node["reftype"], canonical, node,
        contnode)


def setup(app) -> None:
    app.add_directive("ftlazy-toplevel-functions", TopLevelFunctions)
    app.connect("missing-reference", _resolve_reexported)


# {{{ the numpy coverage page: generated at every build (see numpy_coverage.py)

def _write_numpy_coverage() -> None:
    import runpy
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                        "numpy_coverage.py")
    runpy.run_path(path, run_name="numpy_coverage")["write"]()


_write_numpy_coverage()

# }}}
