# SPDX-License-Identifier: MIT
"""Run pytato's own code-generation tests against ftlazy through an import
alias ``pytato -> ftlazy``, and print how many pass.

Nothing of pytato is stored in this repository. By default the script
downloads pytato's source distribution from PyPI into a temporary directory
(``pip download --no-deps --no-binary :all: pytato``), takes
``test/test_codegen.py`` and ``test/testlib.py`` from it, writes a
``pytato`` package beside them that replaces itself in ``sys.modules`` by
``ftlazy`` and maps pytato's submodules to ftlazy's modules, runs pytest on
the file with ``-n 2`` and prints the passed/failed/skipped counts and the
failures grouped by their error (the exception type and the first line of
its message, with numbers and long quoted values blurred, so that one
missing feature is one line).

``--source DIR`` runs the test files of a pytato checkout or unpacked sdist
instead of downloading one (PyPI's newest pytato is 2021.2; pytato's git
history holds newer tests).

Needs, besides ftlazy's own requirements: pytest, pytest-xdist (for ``-n``)
and pyopencl's pytest helpers (``pyopencl.tools``, part of pyopencl).

Usage, from the repository root::

    python benchmarks/pytato_compat.py [--source DIR] [--version V] [-n 2]
        [--keep] [-k EXPR]
"""

from __future__ import annotations

import argparse
import collections
import glob
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import xml.etree.ElementTree as ET

# pytato's modules and the ftlazy modules that stand in for them. A pytato
# submodule not listed here maps to the ftlazy module of the same name.
MODULE_ALIASES = {
    "pytato": "ftlazy",
    "pytato.array": "ftlazy.array",
    "pytato.transform": "ftlazy.transform",
    "pytato.transform.mappers": "ftlazy.transform.mappers",
    "pytato.transform.materialize": "ftlazy.transform.materialize",
    "pytato.transform.remove_broadcasts_einsum": "ftlazy.transform.einsum_broadcasts",
    "pytato.scalar_expr": "ftlazy.scalar_expr",
    "pytato.tags": "ftlazy.tags",
    "pytato.target": "ftlazy.target",
    "pytato.target.loopy": "ftlazy.target.loopy",
    "pytato.target.loopy.codegen": "ftlazy.target.loopy.program",
    "pytato.analysis": "ftlazy.analysis",
    "pytato.visualization": "ftlazy.visualization",
    "pytato.utils": "ftlazy.ops",
}

ALIAS_PACKAGE = '''\
# Written by ftlazy's benchmarks/pytato_compat.py: import pytato -> ftlazy.
# A package on sys.path, not a conftest, so that processes that the tests
# spawn (multiprocessing's "spawn" copies sys.path) import it too.
import importlib
import importlib.abc
import importlib.util
import sys

ALIASES = {aliases!r}


class _AliasLoader(importlib.abc.Loader):
    def __init__(self, target):
        self.target = target

    def create_module(self, spec):
        return importlib.import_module(self.target)

    def exec_module(self, module):
        pass


class _AliasFinder(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname, path=None, target=None):
        if not fullname.startswith("pytato."):
            return None
        target = ALIASES.get(fullname, "ftlazy" + fullname[len("pytato"):])
        try:
            found = importlib.util.find_spec(target)
        except ModuleNotFoundError:
            found = None
        if found is None:
            return None
        return importlib.util.spec_from_loader(
            fullname, _AliasLoader(target),
            is_package=found.submodule_search_locations is not None)


sys.meta_path.insert(0, _AliasFinder())
sys.modules[__name__] = importlib.import_module("ftlazy")
'''


def fetch_sdist(version: str | None, into: str) -> str:
    """Download pytato's sdist from PyPI into *into*; return the unpacked
    source directory."""
    spec = "pytato" if version is None else f"pytato=={version}"
    subprocess.run(
        [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps",
         "--no-binary", ":all:", spec, "-d", into], check=True)
    archives = glob.glob(os.path.join(into, "pytato-*.tar.gz"))
    if len(archives) != 1:
        raise RuntimeError(f"expected one pytato sdist in {into}, "
                           f"found {archives}")
    with tarfile.open(archives[0]) as tar:
        tar.extractall(into, filter="data")
    root, = glob.glob(os.path.join(into, "pytato-*/"))
    return root


def prepare(source: str, run_dir: str, test_file: str) -> str:
    """Copy the test files of *source* into *run_dir* beside the alias
    package; return the path of the test file there."""
    for name in (test_file, "testlib.py"):
        src = os.path.join(source, "test", name)
        if not os.path.exists(src):
            raise FileNotFoundError(f"{src} is missing (is {source} a "
                                    "pytato source tree?)")
        shutil.copy(src, run_dir)
    os.mkdir(os.path.join(run_dir, "pytato"))
    with open(os.path.join(run_dir, "pytato", "__init__.py"), "w") as f:
        f.write(ALIAS_PACKAGE.format(aliases=MODULE_ALIASES))
    return os.path.join(run_dir, test_file)


def failure_category(message: str) -> str:
    """One line that names a failure's kind: the exception's first line with
    numbers and quoted values other than names blurred."""
    line = message.strip().splitlines()[0] if message.strip() else "?"
    # names (of modules, attributes, arguments) stay; other quoted values go
    line = re.sub(r"'(?![\w.]{1,60}')[^']*'", "'…'", line)
    line = re.sub(r"\b\d+\b", "N", line)
    return line[:160]


def summarize(junit_xml: str) -> tuple[collections.Counter, collections.Counter]:
    """Counts of outcomes and of failure categories from a JUnit XML."""
    outcomes: collections.Counter = collections.Counter()
    categories: collections.Counter = collections.Counter()
    for case in ET.parse(junit_xml).getroot().iter("testcase"):
        bad = case.find("failure")
        if bad is None:
            bad = case.find("error")
        skipped = case.find("skipped")
        if bad is not None:
            message = bad.get("message") or ""
            if message == "collection failure":
                # the reason is the report's last "E   ..." line
                reasons = [line[1:].strip() for line in (bad.text or "").splitlines()
                           if line.startswith("E ")]
                message = "collection failed: " + (reasons[-1] if reasons else "?")
            outcomes["failed"] += 1
            categories[failure_category(message)] += 1
        elif skipped is not None:
            kind = skipped.get("type") or ""
            outcomes["xfailed" if "xfail" in kind else "skipped"] += 1
        else:
            outcomes["passed"] += 1
    return outcomes, categories


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", help="a pytato source tree (default: "
                        "download the sdist from PyPI)")
    parser.add_argument("--version", help="the pytato version to download")
    parser.add_argument("--test-file", default="test_codegen.py")
    parser.add_argument("-n", dest="workers", default="2",
                        help="pytest-xdist workers (0: none)")
    parser.add_argument("-k", dest="keyword", help="pytest -k expression")
    parser.add_argument("--keep", action="store_true",
                        help="keep the temporary directory and print it")
    args = parser.parse_args(argv)

    tmp = tempfile.mkdtemp(prefix="ftlazy-pytato-")
    try:
        source = args.source or fetch_sdist(args.version, tmp)
        run_dir = os.path.join(tmp, "run")
        os.mkdir(run_dir)
        test_path = prepare(source, run_dir, args.test_file)
        junit = os.path.join(tmp, "junit.xml")
        cmd = [sys.executable, "-m", "pytest", "-q", "-rN", "--tb=line",
               "-p", "no:cacheprovider",
               "--rootdir", run_dir, "-o", "addopts=", "-o", "xfail_strict=false",
               f"--junitxml={junit}", test_path]
        if args.workers != "0":
            cmd += ["-n", args.workers]
        if args.keyword:
            cmd += ["-k", args.keyword]
        print("source:", source)
        print("running:", " ".join(cmd), flush=True)
        # pytest's own progress and failure summary go to the terminal
        subprocess.run(cmd, cwd=run_dir)
        if not os.path.exists(junit):
            print("pytest wrote no report; see its output above")
            return 2
        outcomes, categories = summarize(junit)
        total = sum(outcomes.values())
        print(f"\n{args.test_file}: {total} tests, " + ", ".join(
            f"{outcomes[k]} {k}" for k in
            ("passed", "failed", "skipped", "xfailed")))
        if total:
            print(f"passing: {100 * outcomes['passed'] / total:.1f}%")
        if categories:
            print("\nfailures by category:")
            for line, count in categories.most_common():
                print(f"{count:5d}  {line}")
        return 0
    finally:
        if args.keep:
            print("kept:", tmp)
        else:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
