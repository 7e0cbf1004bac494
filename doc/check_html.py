# SPDX-License-Identifier: MIT
"""Check the built HTML documentation in a real headless browser.

Loads the gallery's pages (and the tutorial) in headless Chromium, reads
the DOM as the browser rendered it (``--dump-dom``) and checks that each
executed example shows its output, that no example page shows a
traceback, that pages of examples that draw a DAG contain an inline
``<svg>`` with nodes in it, and that the tutorial shows its picture. Then
takes a screenshot of the first example's page for a person to look at.

Usage (after ``python -m sphinx -b html doc doc/_build/html``)::

    python doc/check_html.py [--html doc/_build/html]
                             [--screenshot doc/_build/gallery-demo.png]

Needs Chromium (Debian: ``apt-get install chromium``); exits with status 2
and says so when it is missing, 1 when a check fails.
"""

from __future__ import annotations

import argparse
import os
import pathlib
import re
import shutil
import signal
import subprocess
import sys
import tempfile
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from html.parser import HTMLParser

ROOT = pathlib.Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
#: the executables tried, in order, when --chromium is not given
BROWSERS = ("chromium", "chromium-browser", "google-chrome")
#: calls in an example's source that put a DAG picture on its page
_PICTURE_CALL = re.compile(r"\b(?:to_svg|show_dot_graph)\(")
#: what the first example (examples/demo.py) prints, as its page shows it
DEMO_OUTPUT = ("from a DAG of", "matches a plain numpy loop", "OpenCL on",
               "compile stages: DAG transforms",
               "served from the compile cache: True")


class CheckFailed(Exception):
    """A page does not show what it should."""


# {{{ the rendered DOM

@dataclass
class Dom:
    """What the checks need of a rendered page: the count of each tag, of
    each class, the ``src`` of images, and the visible text."""

    tags: Counter = field(default_factory=Counter)
    classes: Counter = field(default_factory=Counter)
    image_sources: list[str] = field(default_factory=list)
    text: str = ""
    #: ``<g class="node">`` groups inside ``<svg>`` elements (Graphviz's
    #: drawing of one DAG node each)
    svg_nodes: int = 0


class _DomReader(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.dom = Dom()
        self.svg_depth = 0
        self.skip = 0
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list) -> None:
        attributes = dict(attrs)
        self.dom.tags[tag] += 1
        classes = (attributes.get("class") or "").split()
        self.dom.classes.update(classes)
        if tag == "svg":
            self.svg_depth += 1
        elif tag == "g" and self.svg_depth and "node" in classes:
            self.dom.svg_nodes += 1
        elif tag == "img" and attributes.get("src"):
            self.dom.image_sources.append(attributes["src"])
        if tag in ("script", "style"):
            self.skip += 1

    def handle_endtag(self, tag: str) -> None:
        if tag == "svg" and self.svg_depth:
            self.svg_depth -= 1
        if tag in ("script", "style") and self.skip:
            self.skip -= 1

    def handle_data(self, data: str) -> None:
        if not self.skip:
            self.text.append(data)


def parse_dom(html: str) -> Dom:
    """The :class:`Dom` of *html* (a page as the browser serialized it)."""
    reader = _DomReader()
    reader.feed(html)
    reader.close()
    reader.dom.text = " ".join(" ".join(reader.text).split())
    return reader.dom

# }}}


# {{{ the browser

def find_browser(given: str | None) -> str:
    """The Chromium executable: *given*, or the first of :data:`BROWSERS`
    on the ``PATH``. Raises FileNotFoundError naming what was tried."""
    names = (given,) if given else BROWSERS
    for name in names:
        path = shutil.which(name)
        if path is not None:
            return path
    raise FileNotFoundError(
        f"no headless browser found (tried {', '.join(names)}); on Debian: "
        "apt-get install chromium")


class Browser:
    """Headless Chromium, one process per page, each with a fresh profile.

    Chromium starts helper processes (zygote, renderer, GPU) that inherit
    its output. Each run is a session of its own writing to files, so that
    a run past *timeout* is ended whole (the process group killed) instead
    of waiting on pipes a helper keeps open; it is then tried once more."""

    #: flags beside --headless: no sandbox (root in CI), no GPU, and none
    #: of the background connections a closed network would refuse
    FLAGS = ("--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
             "--no-first-run", "--hide-scrollbars", "--disable-quic",
             "--disable-background-networking", "--disable-component-update",
             "--disable-sync", "--disable-default-apps")

    def __init__(self, executable: str, timeout: float = 120,
                 attempts: int = 2) -> None:
        self.executable = executable
        self.timeout = timeout
        self.attempts = attempts

    def _run(self, page: pathlib.Path, *flags: str) -> str:
        for _ in range(self.attempts - 1):
            try:
                return self._run_once(page, flags)
            except subprocess.TimeoutExpired:
                pass
        return self._run_once(page, flags)

    def _run_once(self, page: pathlib.Path, flags: tuple[str, ...]) -> str:
        with tempfile.TemporaryDirectory(prefix="ftlazy-chromium-") as tmp:
            profile = pathlib.Path(tmp, "profile")
            args = [self.executable, "--headless", *self.FLAGS,
                    f"--user-data-dir={profile}", *flags, page.as_uri()]
            out_path, err_path = pathlib.Path(tmp, "out"), pathlib.Path(tmp, "err")
            with open(out_path, "wb") as out, open(err_path, "wb") as err:
                proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=out,
                                        stderr=err, start_new_session=True)
                try:
                    returncode = proc.wait(timeout=self.timeout)
                finally:
                    _kill_group(proc)
            stdout = out_path.read_text(errors="replace")
            stderr = err_path.read_text(errors="replace")
        if returncode != 0:
            raise CheckFailed(f"{self.executable} exited {returncode} on "
                              f"{page}:\n{stderr[-2000:]}")
        return stdout

    def dom(self, page: pathlib.Path) -> Dom:
        """The DOM of *page* after the browser loaded it and ran its
        scripts."""
        html = self._run(page, "--dump-dom")
        if "<body" not in html:
            raise CheckFailed(f"the browser rendered no page for {page}")
        return parse_dom(html)

    def screenshot(self, page: pathlib.Path, png: pathlib.Path,
                   size: tuple[int, int] = (1200, 3200)) -> None:
        """Write a PNG screenshot of *page* to *png*."""
        png.parent.mkdir(parents=True, exist_ok=True)
        png.unlink(missing_ok=True)
        self._run(page, f"--screenshot={png}",
                  f"--window-size={size[0]},{size[1]}")
        data = png.read_bytes() if png.exists() else b""
        if not data.startswith(b"\x89PNG\r\n\x1a\n"):
            raise CheckFailed(f"no PNG screenshot of {page} at {png}")
        # a page with text and code is far from a blank image (~5 KB)
        if len(data) < 20_000:
            raise CheckFailed(f"the screenshot of {page} ({len(data)} bytes) "
                              "looks blank")

def _kill_group(proc: subprocess.Popen) -> None:
    """End *proc*'s process group (the browser and its helpers), if any of
    it is left."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    proc.wait()

# }}}


# {{{ the checks

def _require(condition: bool, page: pathlib.Path, what: str) -> None:
    if not condition:
        raise CheckFailed(f"{page}: {what}")


def check_example_page(dom: Dom, page: pathlib.Path,
                       source: pathlib.Path) -> None:
    """The gallery page of the example *source* shows its title, code, its
    output, no traceback, and an inline DAG picture where the example draws
    one."""
    _require(dom.classes["sphx-glr-script-out"] >= 1, page,
             "shows no output of the executed example")
    _require(dom.classes["highlight-Python"] + dom.classes["highlight-python"]
             >= 1, page, "shows no code")
    _require("Traceback" not in dom.text, page, "shows a traceback")
    if _PICTURE_CALL.search(source.read_text()):
        _require(dom.tags["svg"] >= 1, page,
                 f"has no <svg>, yet {source.name} draws a DAG")
        _require(dom.svg_nodes >= 2, page,
                 f"its <svg> has {dom.svg_nodes} DAG nodes (<g class='node'>)")


def check_gallery(browser: Browser, html: pathlib.Path) -> Iterator[str]:
    """Check the gallery's index and every example's page; yields one line
    per page checked."""
    sources = sorted(p for p in EXAMPLES.glob("*.py"))
    if not sources:
        raise CheckFailed(f"no examples in {EXAMPLES}")
    index = html / "gallery" / "index.html"
    _require(index.exists(), index, "missing: was the gallery built?")
    dom = browser.dom(index)
    thumbs = dom.classes["sphx-glr-thumbcontainer"]
    _require(thumbs == len(sources), index,
             f"lists {thumbs} examples, examples/ has {len(sources)}")
    yield f"{index.relative_to(html)}: {thumbs} examples listed"
    for source in sources:
        page = html / "gallery" / f"{source.stem}.html"
        _require(page.exists(), page, f"missing, yet {source.name} exists")
        dom = browser.dom(page)
        check_example_page(dom, page, source)
        if source.name == "demo.py":
            for text in DEMO_OUTPUT:
                _require(text in dom.text, page, f"does not show {text!r}")
        yield (f"{page.relative_to(html)}: output shown"
               + (f", <svg> of {dom.svg_nodes} nodes" if dom.svg_nodes else ""))


def check_tutorial(browser: Browser, html: pathlib.Path) -> str:
    """The tutorial shows a DAG picture: an inline ``<svg>`` or an image of
    an SVG file that was copied into the build."""
    page = html / "tutorial.html"
    dom = browser.dom(page)
    pictures = [src for src in dom.image_sources if src.endswith(".svg")]
    for src in pictures:
        _require((page.parent / src).is_file(), page,
                 f"shows {src}, which is not in the build")
    _require(pictures or dom.svg_nodes >= 2, page, "shows no DAG picture")
    return (f"{page.relative_to(html)}: pictures "
            f"{', '.join(pictures) or f'<svg> of {dom.svg_nodes} nodes'}")

# }}}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--html", type=pathlib.Path,
                        default=ROOT / "doc" / "_build" / "html",
                        help="the built HTML (default: doc/_build/html)")
    parser.add_argument("--screenshot", type=pathlib.Path,
                        default=ROOT / "doc" / "_build" / "gallery-demo.png",
                        help="where to write the screenshot of the first "
                        "example's page")
    parser.add_argument("--chromium", default=os.environ.get("CHROMIUM"),
                        help="the browser executable (default: $CHROMIUM, "
                        f"else the first of {', '.join(BROWSERS)})")
    args = parser.parse_args(argv)
    try:
        browser = Browser(find_browser(args.chromium))
    except FileNotFoundError as err:
        print(f"check_html: {err}", file=sys.stderr)
        return 2
    html = args.html.resolve()
    try:
        for line in check_gallery(browser, html):
            print(f"ok  {line}", flush=True)
        print(f"ok  {check_tutorial(browser, html)}", flush=True)
        browser.screenshot(html / "gallery" / "demo.html", args.screenshot)
    except (CheckFailed, subprocess.TimeoutExpired) as err:
        print(f"check_html: FAILED: {err}", file=sys.stderr)
        return 1
    print(f"ok  screenshot of gallery/demo.html: {args.screenshot}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
