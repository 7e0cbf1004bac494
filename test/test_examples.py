# SPDX-License-Identifier: MIT
"""The example scripts and the tutorial's code run without error."""

from __future__ import annotations

import os
import pathlib
import re
import subprocess
import sys
import textwrap

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
EXAMPLES = sorted((ROOT / "examples").glob("*.py"))
TUTORIAL = ROOT / "doc" / "tutorial.rst"


def _run(args: list[str], cwd: pathlib.Path) -> subprocess.CompletedProcess:
    # (with every buffer a compiled program allocates filled with NaN / -1
    # first: an example that checks its result against numpy then fails if
    # a kernel reads memory nothing wrote, whatever an earlier call left)
    env = dict(os.environ, PYOPENCL_COMPILER_OUTPUT="0",
               FTLAZY_POISON_ALLOCATIONS="1")
    return subprocess.run([sys.executable, *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=600,
                          check=False)


def test_there_are_examples():
    assert {p.name for p in EXAMPLES} >= {"demo.py", "user_transform.py"}


@pytest.mark.parametrize("script", EXAMPLES, ids=[p.name for p in EXAMPLES])
def test_example_runs(script):
    proc = _run([str(script)], ROOT)
    assert proc.returncode == 0, (
        f"{script.name} exited {proc.returncode}\n--- stdout\n{proc.stdout}"
        f"\n--- stderr\n{proc.stderr}")
    assert proc.stdout.strip(), f"{script.name} printed nothing"


def tutorial_code() -> str:
    """The tutorial's ``.. code-block:: python`` blocks, in order."""
    blocks = []
    lines = TUTORIAL.read_text().splitlines()
    i = 0
    while i < len(lines):
        if re.match(r"^\.\. code-block:: python\s*$", lines[i]):
            i += 1
            block = []
            while i < len(lines) and (not lines[i].strip()
                                      or lines[i].startswith("   ")):
                block.append(lines[i])
                i += 1
            blocks.append(textwrap.dedent("\n".join(block)))
        else:
            i += 1
    return "\n\n".join(blocks)


def test_tutorial_code_runs(tmp_path):
    code = tutorial_code()
    assert code.count("\n") > 20
    script = tmp_path / "tutorial.py"
    script.write_text(code)
    proc = _run([str(script)], tmp_path)
    assert proc.returncode == 0, (
        f"tutorial code failed\n--- stdout\n{proc.stdout}"
        f"\n--- stderr\n{proc.stderr}")
