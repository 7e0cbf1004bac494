# SPDX-License-Identifier: MIT
"""Loopy's on-disk caches never serve code that another ftlazy generated:
every kernel carries a digest of ftlazy's source in its persistent hash
(:class:`ftlazy.target.loopy.program.FtlazyCodeVersion`)."""

import os
import shutil
import subprocess
import sys

import loopy as lp
import numpy as np
import pymbolic.primitives as prim
from loopy.tools import LoopyKeyBuilder

import ftlazy as ft
from ftlazy.target.loopy import program


def _key(t_unit) -> str:
    return LoopyKeyBuilder()(t_unit)


def test_compiled_kernels_carry_the_source_digest():
    x = ft.make_placeholder("x", (7,), np.float64)
    f = ft.compile(ft.sin(x) - 1)
    tags = f.program.program.default_entrypoint.tags_of_type(
        program.FtlazyCodeVersion)
    assert tags == frozenset({program.FtlazyCodeVersion(program.source_digest())})
    np.testing.assert_allclose(f(x=np.ones(7)), np.sin(1) - 1)
    # the tag is no part of the generated code
    untagged = f.program.program.with_kernel(
        f.program.program.default_entrypoint.copy(tags=frozenset()))
    assert lp.generate_code_v2(untagged).device_code() == f.source


def _kernel(constant):
    i = prim.Variable("i")
    return lp.make_kernel(
        "{[i]: 0 <= i < n}",
        [lp.Assignment(prim.Subscript(prim.Variable("out"), (i,)),
                       prim.Sum((prim.Subscript(prim.Variable("a"), (i,)),
                                 constant)))],
        [lp.GlobalArg("a", np.float64, shape=("n",)),
         lp.GlobalArg("out", np.float64, shape=("n",)),
         lp.ValueArg("n", np.int64)], lang_version=(2018, 2))


def test_the_digest_separates_keys_loopy_confuses():
    """Loopy keys a kernel with the constant np.int64(-1) as one with -1
    (the hazard); the same kernel under two digests has two keys, so an
    entry another ftlazy stored is not found."""
    typed, untyped = _kernel(np.int64(-1)), _kernel(-1)
    assert _key(typed) == _key(untyped)
    old = program.with_code_version(untyped, "an older ftlazy")
    new = program.with_code_version(typed)
    assert _key(old) != _key(new)
    assert _key(new) == _key(program.with_code_version(typed))


def test_a_compiled_program_is_keyed_by_the_digest(monkeypatch):
    """The same DAG compiled under another source digest gets a kernel
    with another loopy key (and the same code)."""
    x = ft.make_placeholder("x", (9,), np.int64)
    lazy = ft.maximum(x - 1, 0)
    first = ft.generate_loopy(lazy).program
    monkeypatch.setattr(program, "_CACHE", {})
    monkeypatch.setattr(program, "source_digest",
                        lambda root=None: "another ftlazy source")
    second = ft.generate_loopy(lazy).program
    assert _key(first) != _key(second)
    assert (lp.generate_code_v2(first).device_code()
            == lp.generate_code_v2(second).device_code())


def test_source_digest_follows_names_contents_and_version(tmp_path, monkeypatch):
    import ftlazy
    src = tmp_path / "src"
    shutil.copytree(next(iter(ftlazy.__path__)), src,
                    ignore=shutil.ignore_patterns("__pycache__"))
    base = program.source_digest(src)
    assert base == program.source_digest(src)
    # (a file outside the Python sources does not count)
    (src / "notes.txt").write_text("x")
    assert program.source_digest(src) == base
    target = src / "target" / "loopy" / "kernel.py"
    text = target.read_text()
    target.write_text(text + "\n# changed\n")
    changed = program.source_digest(src)
    assert changed != base
    target.write_text(text)
    assert program.source_digest(src) == base
    target.rename(src / "target" / "loopy" / "kernel2.py")
    assert program.source_digest(src) not in (base, changed)
    target.with_name("kernel2.py").rename(target)
    monkeypatch.setattr(ftlazy, "__version__", ftlazy.__version__ + ".post1")
    assert program.source_digest(src) != base


_JAGGED_KEY_SCRIPT = """
import numpy as np
from loopy.tools import LoopyKeyBuilder
import ftlazy as ft

# two stacked scans over a jagged batch: each layer's loop has a bound loaded
# from the offsets, so the kernel has several data-dependent parameters
xs = ft.make_jagged_placeholder("xs", (3,), np.float64, depth=2)
w = ft.make_placeholder("w", (2, 3), np.float64)
layer = lambda batch, wd: ft.map(
    lambda s: ft.scan(lambda c, x: ft.tanh(c * wd + x), s, ft.zeros(3)), batch)
f = ft.compile(ft.fold(layer, w, xs))
print(LoopyKeyBuilder()(f.inner.program.artifact.t_unit))
"""


def _key_with_hash_seed(seed: str) -> str:
    env = dict(os.environ, PYTHONHASHSEED=seed)
    done = subprocess.run([sys.executable, "-c", _JAGGED_KEY_SCRIPT], env=env,
                          capture_output=True, text=True, timeout=300,
                          check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_loopy_key_of_a_jagged_program_independent_of_hash_seed():
    """Loopy's on-disk caches hit in a new process: the kernel's persistent
    hash (its assumptions' parameter order included) does not follow the
    order in which Python iterates a set of strings."""
    first = _key_with_hash_seed("1")
    assert first
    assert _key_with_hash_seed("4242") == first
