# SPDX-License-Identifier: MIT
"""The compile cache, deterministic code generation, and fusion decisions
asserted on the generated OpenCL source."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import ftlazy as ft
from ftlazy.tags import ImplInlined, ImplStored, Named
from ftlazy.target.loopy import program as program_module

#: a global temporary that code generation introduced
TEMPORARY = re.compile(r"\b_ft_t\d+\b")


def _temporaries(source: str) -> set[str]:
    return set(TEMPORARY.findall(source))


# {{{ cache

def _graph(shape: tuple[int, ...], name: str = "x") -> ft.Array:
    x = ft.make_placeholder(name, shape, np.float64)
    return ft.sin(x) * 2 + ft.sum(x, axis=0)


def test_structurally_equal_graph_is_cached() -> None:
    first = ft.compile(_graph((7, 13)))
    second = ft.compile(_graph((7, 13)))
    assert not first.from_cache
    assert second.from_cache
    value = np.linspace(0, 1, 91).reshape(7, 13)
    np.testing.assert_allclose(second(x=value),
                               np.sin(value) * 2 + value.sum(axis=0), rtol=1e-12)


def test_renamed_placeholders_share_a_program() -> None:
    x = ft.make_placeholder("x", (6, 11), np.float64)
    y = ft.make_placeholder("y", (6, 11), np.float64)
    fx, fy = ft.compile(2 * x), ft.compile(2 * y)
    assert fy.from_cache
    assert fy.program.artifact is fx.program.artifact
    value = np.arange(66.0).reshape(6, 11)
    np.testing.assert_array_equal(fy(y=value), 2 * value)
    with pytest.raises(ValueError, match="'x'"):
        fy(x=value)


def test_other_dtype_is_another_program() -> None:
    x = ft.make_placeholder("x", (6, 11), np.float32)
    assert not ft.compile(3 * x + 1).from_cache


def test_data_wrappers_share_a_program() -> None:
    """Two graphs that differ only in the data they wrap share one program;
    each call binds its own data."""
    x = ft.make_placeholder("x", (2, 9), np.float64)
    f1 = ft.compile(x + ft.make_data_wrapper(np.arange(9.0)))
    f2 = ft.compile(x + ft.make_data_wrapper(np.ones(9)))
    assert f2.from_cache
    zeros = np.zeros((2, 9))
    np.testing.assert_array_equal(f1(x=zeros), zeros + np.arange(9.0))
    np.testing.assert_array_equal(f2(x=zeros), zeros + 1)


_SOURCE_SCRIPT = textwrap.dedent("""
    import numpy as np
    import ftlazy as ft
    from ftlazy.tags import Named
    n = ft.make_size_param("n")
    x = ft.make_placeholder("x", (n, 4), np.float64)
    y = ft.make_placeholder("y", (4, 3), np.float32)
    s = (ft.sum(x, axis=1) * 2).tagged(Named("rowsums"))
    d = ft.make_dict_of_named_arrays({
        "b": ft.exp(x) @ y.astype(np.float64), "a": x * s[:, None],
        "c": ft.amax(x + ft.make_data_wrapper(np.arange(4.0))),
        "e": ft.map(lambda r: r @ y, x.astype(np.float32)),
    })
    print(ft.generate_loopy(d).source)
""")


def _source_with_hash_seed(seed: str) -> str:
    env = dict(os.environ, PYTHONHASHSEED=seed)
    done = subprocess.run([sys.executable, "-c", _SOURCE_SCRIPT], env=env,
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_source_independent_of_hash_seed() -> None:
    first = _source_with_hash_seed("1")
    assert "__kernel" in first and "rowsums" in first
    assert _source_with_hash_seed("12345") == first


def test_source_identical_when_generated_again(monkeypatch) -> None:
    x = ft.make_placeholder("x", (5, 4), np.float64)
    graph = ft.make_dict_of_named_arrays({
        "a": ft.sum(x * x, axis=0), "b": x.T @ x, "c": ft.tanh(x) + 1})
    first = ft.generate_loopy(graph).source
    monkeypatch.setattr(program_module, "_CACHE", {})
    again = ft.generate_loopy(graph)
    assert not again.from_cache
    assert again.source == first

# }}}


# {{{ fusion

X = ft.make_placeholder("x", (16, 8), np.float64)
XV = np.linspace(-1.0, 1.0, 128).reshape(16, 8)


def _chain(length: int) -> tuple[ft.Array, np.ndarray]:
    """An elementwise chain of *length* ops, and its value on :data:`XV`."""
    lazy, value = X, XV
    for k in range(length):
        if k % 3 == 0:
            lazy, value = ft.sin(lazy), np.sin(value)
        elif k % 3 == 1:
            lazy, value = lazy * 1.5, value * 1.5
        else:
            lazy, value = lazy - 0.25, value - 0.25
    return lazy, value


def test_elementwise_chain_is_one_kernel() -> None:
    lazy, value = _chain(20)
    f = ft.compile(lazy)
    assert f.source.count("__kernel") == 1
    assert not _temporaries(f.source)
    np.testing.assert_allclose(f(x=XV), value, rtol=1e-12)


def test_reduction_feeding_elementwise_is_stored() -> None:
    lazy = X * ft.sum(X, axis=1)[:, None]
    f = ft.compile(lazy)
    assert len(_temporaries(f.source)) == 1
    np.testing.assert_allclose(f(x=XV), XV * XV.sum(axis=1)[:, None], rtol=1e-12)


def test_impl_stored_forces_a_temporary() -> None:
    plain = ft.compile(ft.exp(X * 2) + 1)
    assert not _temporaries(plain.source)
    stored = ft.compile(ft.exp((X * 2).tagged(ImplStored())) + 1)
    assert len(_temporaries(stored.source)) == 1
    np.testing.assert_allclose(stored(x=XV), np.exp(XV * 2) + 1, rtol=1e-12)


def test_impl_inlined_prevents_a_temporary() -> None:
    row_sums = ft.sum(X, axis=1).tagged(ImplInlined())
    f = ft.compile(X * row_sums[:, None])
    assert not _temporaries(f.source)
    np.testing.assert_allclose(f(x=XV), XV * XV.sum(axis=1)[:, None], rtol=1e-12)


def test_named_tag_names_the_temporary() -> None:
    halves = (X / 2).tagged(Named("myname"))
    f = ft.compile(ft.cos(halves) + halves)
    assert re.search(r"\bmyname\b", f.source)
    assert not _temporaries(f.source)
    np.testing.assert_allclose(f(x=XV), np.cos(XV / 2) + XV / 2, rtol=1e-12)


@pytest.mark.parametrize("name", ["float", "sin", "kernel"])
def test_named_tag_that_is_an_opencl_name(name: str) -> None:
    halves = (X / 2).tagged(Named(name))
    with pytest.raises(ValueError, match=name):
        ft.compile(ft.cos(halves) + halves)


def test_long_chain_is_cut_into_statements() -> None:
    """A chain deeper than the inlining limit still compiles to one kernel
    and the right values."""
    lazy, value = X, XV
    for k in range(60):
        lazy, value = lazy * 0.99 + k, value * 0.99 + k
    f = ft.compile(lazy)
    assert f.source.count("__kernel") == 1
    np.testing.assert_allclose(f(x=XV), value, rtol=1e-12)


def test_deep_chain_of_1000_adds() -> None:
    """Deeper than the OpenCL compiler's bracket nesting limit and than
    Python's recursion limit, if anything recursed per node."""
    lazy = X
    for _ in range(1000):
        lazy = lazy + 1.0
    f = ft.compile(lazy)
    np.testing.assert_allclose(f(x=XV), XV + 1000.0, rtol=1e-12)

# }}}


def test_nested_calls_are_cut_sooner() -> None:
    """Each call counts as several levels of depth (loopy's cost of
    resolving a call grows with the size of its argument): 100 nested sines
    and cosines become several private statements, with the right values."""
    lazy, value = X, XV
    for choice in np.random.default_rng(2).integers(0, 2, 100):  # no period
        lazy, value = ((ft.sin(lazy), np.sin(value)) if choice
                       else (ft.cos(lazy), np.cos(value)))
    f = ft.compile(lazy)
    if f.plan.profile.kind == "gpu":
        # (steps of two kinds: one loop over a table of kinds on GPUs)
        assert f.plan.storage.mixed_chains
    else:
        assert len(set(re.findall(r"\b_ft_p\d+\b", f.source))) >= 5
    np.testing.assert_allclose(f(x=XV), value, rtol=1e-12)


@pytest.mark.parametrize("tag", [ImplStored(), ImplInlined(), Named("out")])
@pytest.mark.parametrize("loop", ["scan", "fold", "reduce"])
def test_tags_on_loop_results_change_no_result(tag, loop):
    # (a tagged scan result was looked up untagged when its code was
    # emitted: garbage as the output, an internal error as an operand)
    x = ft.make_placeholder("x", (3, 2), np.float64)
    build = {"scan": lambda: ft.scan(lambda h, r: h + r, x, ft.zeros(2)),
             "fold": lambda: ft.fold(lambda h, r: h * 0.5 + r, x, ft.zeros(2)),
             "reduce": lambda: ft.reduce(lambda a, b: a + b, x, ft.zeros(2))}
    tagged = build[loop]().tagged(tag)
    data = np.arange(6.0).reshape(3, 2)
    for program in (tagged, tagged + 1, ft.exp(tagged) * tagged):
        np.testing.assert_allclose(ft.compile(program)(x=data),
                                   ft.evaluate_numpy(program, x=data),
                                   rtol=1e-12)
    xs = ft.make_jagged_placeholder("xs", (2,), np.float64, depth=2)
    inside = ft.map(lambda s: ft.sum(ft.scan(lambda h, r: h + r, s, ft.zeros(
        2)).tagged(tag), axis=0), xs)
    batch = [np.ones((3, 2)), np.ones((0, 2))]
    np.testing.assert_allclose(ft.compile(inside)(xs=batch), [[6, 6], [0, 0]])
