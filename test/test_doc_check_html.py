# SPDX-License-Identifier: MIT
"""doc/check_html.py, the headless-browser check of the built docs: its DOM
reading and page checks on small pages, its refusal without a browser, and
(where Chromium is installed) a page rendered for real."""

from __future__ import annotations

import importlib.util
import pathlib
import shutil
import subprocess
import sys
import time

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent


def _load():
    spec = importlib.util.spec_from_file_location(
        "check_html", ROOT / "doc" / "check_html.py")
    module = importlib.util.module_from_spec(spec)
    # (its dataclasses look their module up by name)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


check_html = _load()

SVG = ("<svg viewBox='0 0 10 10'><g class='graph'><g id='node1' class='node'>"
       "<title>n0</title></g><g id='node2' class='node'><title>n1</title></g>"
       "</g></svg>")


def page(body: str) -> str:
    return (f"<html><head><script>var x = 'Traceback';</script></head>"
            f"<body>{body}</body></html>")


GOOD = page("<div class='highlight-Python'><pre>x = 1</pre></div>"
            "<div class='sphx-glr-script-out'><pre>matches</pre></div>"
            + SVG)


def test_parse_dom_counts_what_the_checks_read():
    dom = check_html.parse_dom(GOOD + "<img src='_images/a.svg'>")
    assert dom.tags["svg"] == 1 and dom.svg_nodes == 2
    assert dom.classes["sphx-glr-script-out"] == 1
    assert dom.image_sources == ["_images/a.svg"]
    # script text is not page text
    assert "Traceback" not in dom.text and "matches" in dom.text


def test_a_node_class_outside_svg_is_no_picture():
    dom = check_html.parse_dom(page("<g class='node'></g>"))
    assert dom.svg_nodes == 0


def test_example_page_checks(tmp_path):
    plain = tmp_path / "plain.py"
    plain.write_text("print(1)\n")
    drawing = tmp_path / "drawing.py"
    drawing.write_text("picture = ft.to_svg(y)\n")
    good = check_html.parse_dom(GOOD)
    for source in (plain, drawing):
        check_html.check_example_page(good, tmp_path / "p.html", source)

    no_output = check_html.parse_dom(page(
        "<div class='highlight-Python'><pre>x</pre></div>"))
    with pytest.raises(check_html.CheckFailed, match="no output"):
        check_html.check_example_page(no_output, tmp_path / "p.html", plain)
    crashed = check_html.parse_dom(GOOD.replace(
        "matches", "Traceback (most recent call last)"))
    with pytest.raises(check_html.CheckFailed, match="traceback"):
        check_html.check_example_page(crashed, tmp_path / "p.html", plain)
    no_picture = check_html.parse_dom(GOOD.replace(SVG, ""))
    check_html.check_example_page(no_picture, tmp_path / "p.html", plain)
    with pytest.raises(check_html.CheckFailed, match="drawing.py draws"):
        check_html.check_example_page(no_picture, tmp_path / "p.html", drawing)


def test_missing_browser_is_a_loud_failure(tmp_path, capsys):
    with pytest.raises(FileNotFoundError, match="no-such-browser"):
        check_html.find_browser("no-such-browser")
    status = check_html.main(["--chromium", "no-such-browser",
                              "--html", str(tmp_path)])
    assert status == 2
    assert "apt-get install chromium" in capsys.readouterr().err


def test_missing_gallery_fails(tmp_path, capsys):
    if shutil.which("chromium") is None:
        pytest.skip("needs chromium (apt-get install chromium)")
    status = check_html.main(["--html", str(tmp_path),
                              "--screenshot", str(tmp_path / "s.png")])
    assert status == 1
    assert "was the gallery built?" in capsys.readouterr().err


@pytest.mark.skipif(shutil.which("chromium") is None,
                    reason="needs chromium (apt-get install chromium)")
def test_chromium_renders_a_page(tmp_path):
    html = tmp_path / "p.html"
    # the SVG is written by a script: only a browser's DOM has it
    html.write_text(page(
        "<div class='sphx-glr-script-out'>out</div><div id='pic'></div>"
        f"<script>document.getElementById('pic').innerHTML = \"{SVG}\";"
        "</script>" + "<p>text</p>" * 200))
    browser = check_html.Browser(check_html.find_browser(None), timeout=120)
    assert check_html.parse_dom(html.read_text()).svg_nodes == 0
    dom = browser.dom(html)
    assert dom.svg_nodes == 2 and dom.classes["sphx-glr-script-out"] == 1


def test_a_browser_past_its_timeout_is_ended_with_its_helpers(tmp_path):
    # a "browser" whose helper keeps the output open and never exits: the
    # run must end at the timeout (tried twice), not wait for the helper
    fake = tmp_path / "fake-browser"
    fake.write_text("#!/bin/sh\nsleep 600 &\nsleep 600\n")
    fake.chmod(0o755)
    browser = check_html.Browser(str(fake), timeout=0.5, attempts=2)
    start = time.monotonic()
    with pytest.raises(subprocess.TimeoutExpired):
        browser.dom(tmp_path / "p.html")
    assert time.monotonic() - start < 30


def test_a_browser_that_fails_names_its_exit_status(tmp_path):
    fake = tmp_path / "fake-browser"
    fake.write_text("#!/bin/sh\necho 'no display' >&2\nexit 3\n")
    fake.chmod(0o755)
    with pytest.raises(check_html.CheckFailed, match="(?s)exited 3.*no display"):
        check_html.Browser(str(fake)).dom(tmp_path / "p.html")
