# SPDX-License-Identifier: MIT
"""Loop rolling: deep chains that repeat one step compile to a loop
(:mod:`ftlazy.target.loopy.rolling`), with the same values as numpy."""

from __future__ import annotations

import re

import loopy as lp
import numpy as np
import pymbolic.primitives as prim
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ftlazy as ft
from ftlazy.target.loopy.rolling import roll_repeated_statements

#: a loop that rolling introduced
ROLLED_LOOP = re.compile(r"for \(int _ft_k\d+ = 0; _ft_k\d+ <= (\d+);")


def _rolled_trip_counts(source: str) -> list[int]:
    return [int(last) + 1 for last in ROLLED_LOOP.findall(source)]


def _horner(degree: int, n: int | ft.Array) -> tuple[ft.Array, list[str]]:
    x = ft.make_placeholder("x", (n,), np.float64)
    names = [f"c{k}" for k in range(degree + 1)]
    p = ft.make_placeholder(names[0], (), np.float64)
    for name in names[1:]:
        p = p * x + ft.make_placeholder(name, (), np.float64)
    return p, names


def _horner_inputs(names: list[str], n: int) -> tuple[dict, np.ndarray]:
    rng = np.random.default_rng(3)
    inputs = {name: np.array(rng.uniform(-1, 1)) for name in names}
    inputs["x"] = rng.uniform(-1, 1, n)
    expected = np.full(n, inputs[names[0]])
    for name in names[1:]:
        expected = expected * inputs["x"] + inputs[name]
    return inputs, expected


@pytest.mark.parametrize("n", [4096, 1001, 0])
def test_horner_chain_rolls_into_one_loop(n: int, codegen_vector_width: int
                                          ) -> None:
    """n = 4096 runs on vectors (where the device passed a width), 1001 on
    scalars; both roll the 1,000-step chain into one loop of 32-step bodies;
    n = 0 launches nothing."""
    lazy, names = _horner(300, n)
    f = ft.compile(lazy)
    inputs, expected = _horner_inputs(names, n)
    np.testing.assert_allclose(f(**inputs), expected, rtol=1e-12)
    if n:
        (trips,) = _rolled_trip_counts(f.source)
        assert trips >= 5
        width = codegen_vector_width
        vectorized = width > 1 and n % width == 0
        assert (f.plan.vector_length is not None) == vectorized
        assert (f"double{width}" in f.source) == vectorized
        # the source no longer grows with the chain: one statement a loop
        assert len(f.source) < 20_000


def test_horner_with_symbolic_length() -> None:
    n = ft.make_size_param("n")
    lazy, names = _horner(200, n)
    f = ft.compile(lazy)
    assert _rolled_trip_counts(f.source)
    for length in (1, 37):
        inputs, expected = _horner_inputs(names, length)
        np.testing.assert_allclose(f(**inputs), expected, rtol=1e-12)


def test_step_of_three_nodes_is_aligned() -> None:
    """A step of three nodes (not a divisor of the inlining depth) is still
    cut at step boundaries, so its statements roll."""
    x = ft.make_placeholder("x", (64,), np.float64)
    xv = np.linspace(0.1, 0.9, 64)
    y, yv = x, xv
    for _ in range(400):
        y, yv = ft.sin(y) * 0.5 + x, np.sin(yv) * 0.5 + xv
    f = ft.compile(y)
    assert _rolled_trip_counts(f.source)
    np.testing.assert_allclose(f(x=xv), yv, rtol=1e-12)


def test_two_dimensional_chain_rolls_inside_the_row_loop() -> None:
    """Loop nests with a sequential axis keep the rolled loop inside it."""
    x = ft.make_placeholder("x", (6, 24), np.float64)
    rng = np.random.default_rng(2)
    xv = rng.uniform(-1, 1, (6, 24))
    inputs = {"x": xv}
    y, yv = x, xv
    for k in range(300):
        c = ft.make_placeholder(f"c{k}", (), np.float64)
        inputs[f"c{k}"] = cv = np.array(rng.uniform(-1, 1))
        y, yv = y * 0.75 + c, yv * 0.75 + cv
    f = ft.compile(y)
    assert _rolled_trip_counts(f.source)
    np.testing.assert_allclose(f(**inputs), yv, rtol=1e-12)


def _irregular_chain(kinds: int, steps: int = 600, seed: int = 4
                     ) -> tuple[ft.Array, np.ndarray, np.ndarray]:
    """A chain of *steps* steps, each one of the first *kinds* of ``y *
    0.999``, ``y + x``, ``cos(y)``, ``y - 0.25``, ``sin(y)`` in random
    order (no period), on 4096 elements, and numpy's result."""
    x = ft.make_placeholder("x", (4096,), np.float64)
    xv = np.linspace(-1, 1, 4096)
    y, yv = x, xv
    for choice in np.random.default_rng(seed).integers(0, kinds, steps):
        if choice == 0:
            y, yv = y * 0.999, yv * 0.999
        elif choice == 1:
            y, yv = y + x, yv + xv
        elif choice == 2:
            y, yv = ft.cos(y), np.cos(yv)
        elif choice == 3:
            y, yv = y - 0.25, yv - 0.25
        else:
            y, yv = ft.sin(y), np.sin(yv)
    return y, xv, yv


def test_chain_of_a_few_step_kinds() -> None:
    """A deep chain whose steps follow no period: on CPUs its straight-line
    code runs on scalars (on vectors it would compile slowly); GPU compilers
    take time in proportion to the code, so there it is one loop that reads
    each step's kind from a table."""
    y, xv, yv = _irregular_chain(3)
    f = ft.compile(y)
    if f.plan.profile.kind == "cpu":
        assert not _rolled_trip_counts(f.source)
        assert f.plan.vector_length is None
        assert not f.plan.storage.mixed_chains
    else:
        assert f.plan.storage.mixed_chains
        (trips,) = _rolled_trip_counts(f.source)
        assert 500 < trips < 600  # (the chain's bottom is inlined)
        assert f.source.count("cos(") < 30 and "__constant char" in f.source
    # (600 steps amplify the last-bit differences of a device's cos and its
    # fused multiply-adds: NVIDIA's OpenCL was 1.5e-12 off at one element)
    np.testing.assert_allclose(f(x=xv), yv, rtol=1e-10)


@pytest.mark.parametrize("kinds", [2, 4, 5])
def test_mixed_chains_on_gpus(kinds: int) -> None:
    """On GPUs two to four kinds of step roll into one loop; with five the
    chain stays straight-line code, cut into kernels of bounded cost."""
    y, xv, yv = _irregular_chain(kinds, steps=400, seed=kinds)
    f = ft.compile(y)
    trips = _rolled_trip_counts(f.source)
    if f.plan.profile.kind == "gpu" and kinds <= 4:
        assert len(trips) == 1 and trips[0] > 300
    else:
        assert trips == [] and not f.plan.storage.mixed_chains
    np.testing.assert_allclose(f(x=xv), yv, rtol=1e-10, atol=1e-12)


@settings(max_examples=6)
@given(kinds=st.integers(1, 5), steps=st.integers(70, 300),
       seed=st.integers(0, 2**16))
def test_random_irregular_chains(kinds: int, steps: int, seed: int) -> None:
    y, xv, yv = _irregular_chain(kinds, steps, seed)
    np.testing.assert_allclose(ft.compile(y)(x=xv), yv, rtol=1e-10, atol=1e-12)


def test_mixed_chain_constants_differ_per_step() -> None:
    """Constants that differ between the steps of one kind come from a
    table, those of the other kinds stay literals."""
    x = ft.make_placeholder("x", (300,), np.float64)
    xv = np.linspace(-1, 1, 300)
    rng = np.random.default_rng(3)
    y, yv = x, xv
    for k, choice in enumerate(rng.integers(0, 2, 300)):
        if choice:
            c = 1.0 - k / 1000
            y, yv = y * c, yv * c
        else:
            y, yv = ft.tanh(y + 0.5), np.tanh(yv + 0.5)
    f = ft.compile(y)
    if f.plan.profile.kind == "gpu":
        assert len(_rolled_trip_counts(f.source)) == 1
        assert "__constant double" in f.source and "0.5" in f.source
    np.testing.assert_allclose(f(x=xv), yv, rtol=1e-10, atol=1e-12)


def test_constants_that_differ_per_step_come_from_a_table() -> None:
    """Horner with literal coefficients (and a step adding the loop
    counter): the constants become a table the loop reads; special values
    survive the trip through the generated source."""
    x = ft.make_placeholder("x", (4096,), np.float64)
    xv = np.linspace(-1, 1, 4096)
    coefficients = np.random.default_rng(6).uniform(-1, 1, 500)
    coefficients[[3, 77, 301]] = [-0.0, 5e-324, 1e300]
    y, yv = x * 0 + 1.0, np.ones(4096)
    for c in coefficients:
        y, yv = y * x + float(c), yv * xv + c
    for k in range(200):
        y, yv = y * 0.5 + k, yv * 0.5 + k
    f = ft.compile(y)
    assert len(_rolled_trip_counts(f.source)) == 2
    assert "__constant double _ft_steps" in f.source
    np.testing.assert_allclose(f(x=xv), yv, rtol=1e-12)


def test_float32_constants_table() -> None:
    x = ft.make_placeholder("x", (1000,), np.float32)
    xv = np.linspace(-1, 1, 1000, dtype=np.float32)
    y, yv = x, xv
    for k in range(300):
        c = np.float32(0.5 + k / 1000)
        y, yv = y * c + np.float32(0.25), yv * c + np.float32(0.25)
    f = ft.compile(y)
    assert _rolled_trip_counts(f.source)
    assert "__constant float _ft_steps" in f.source
    out = f(x=xv)
    assert out.dtype == np.float32
    np.testing.assert_allclose(out, yv, rtol=1e-5, atol=1e-6)


def test_long_tables_are_split_between_loops() -> None:
    """A table is capped (OpenCL guarantees 64 KiB of constant memory): a
    3,000-step chain with a constant per step rolls into several loops."""
    x = ft.make_placeholder("x", (64,), np.float64)
    xv = np.linspace(-1, 1, 64)
    coefficients = np.random.default_rng(8).uniform(-1, 1, 3000)
    y, yv = x, xv
    for c in coefficients:
        y, yv = y * 0.5 + float(c), yv * 0.5 + c
    f = ft.compile(y)
    assert len(_rolled_trip_counts(f.source)) >= 2
    np.testing.assert_allclose(f(x=xv), yv, rtol=1e-12)


def test_integer_chain_rolls_and_stays_exact() -> None:
    """Integer steps (with numpy's modulo) roll too; integer constants that
    differ between steps are not tabled, so those chains stay unrolled."""
    x = ft.make_placeholder("x", (256,), np.int64)
    xv = np.arange(-128, 128, dtype=np.int64)
    y, yv = x, xv
    for _ in range(300):
        y, yv = (y * 3 + x) % 1009, (yv * 3 + xv) % 1009
    f = ft.compile(y)
    assert _rolled_trip_counts(f.source)
    np.testing.assert_array_equal(f(x=xv), yv)
    z, zv = x, xv
    for k in range(200):
        z, zv = (z + k) % 997, (zv + k) % 997
    g = ft.compile(z)
    assert not _rolled_trip_counts(g.source)
    np.testing.assert_array_equal(g(x=xv), zv)


def test_distinct_arrays_per_step_are_not_merged() -> None:
    """Steps that read different (unpacked) arrays are different statements:
    nothing rolls, and the values are right."""
    n = 100
    arrays = [ft.make_placeholder(f"a{k}", (n,), np.float64) for k in range(150)]
    rng = np.random.default_rng(0)
    values = {f"a{k}": rng.uniform(0, 1, n) for k in range(150)}
    y, yv = arrays[0], values["a0"]
    for k in range(1, 150):
        y, yv = y * 0.5 + arrays[k], yv * 0.5 + values[f"a{k}"]
    f = ft.compile(y)
    assert not _rolled_trip_counts(f.source)
    np.testing.assert_allclose(f(**values), yv, rtol=1e-12)


def test_intermediate_result_of_a_chain_is_kept() -> None:
    """An intermediate step that is also an output (interning makes the
    degree-200 polynomial the very node inside the degree-400 chain)
    interrupts the run and is stored."""
    lazy, names = _horner(400, 256)
    x = ft.make_placeholder("x", (256,), np.float64)
    half, half_names = _horner(200, 256)
    both = ft.make_dict_of_named_arrays({"full": lazy, "half": half * x})
    f = ft.compile(both)
    inputs, expected = _horner_inputs(names, 256)
    half_expected = np.full(256, inputs["c0"])
    for name in half_names[1:]:
        half_expected = half_expected * inputs["x"] + inputs[name]
    out = f(**inputs)
    np.testing.assert_allclose(out["full"], expected, rtol=1e-12)
    np.testing.assert_allclose(out["half"], half_expected * inputs["x"], rtol=1e-12)


@pytest.mark.parametrize("shape", [(16,), (4, 16)])
def test_deep_chain_in_a_scan_body(shape: tuple[int, ...]) -> None:
    """Rolling also applies to the loop nests of a scan body."""
    xs = ft.make_placeholder("xs", (5, *shape), np.float64)
    h0 = ft.make_placeholder("h0", shape, np.float64)

    def step(h, x):
        for _ in range(300):
            h = h * 0.99 + x
        return h

    f = ft.compile(ft.fold(step, xs, h0))
    assert _rolled_trip_counts(f.source)
    rng = np.random.default_rng(1)
    xv, hv = rng.uniform(-1, 1, (5, *shape)), rng.uniform(-1, 1, shape)
    expected = hv
    for t in range(5):
        for _ in range(300):
            expected = expected * 0.99 + xv[t]
    np.testing.assert_allclose(f(xs=xv, h0=hv), expected, rtol=1e-10)


STEP_OPS = {
    "mul": (lambda y, c, x: y * c, lambda y, c, x: y * c),
    "add_x": (lambda y, c, x: y + x * 0.25, lambda y, c, x: y + x * 0.25),
    "sub_c": (lambda y, c, x: y - c, lambda y, c, x: y - c),
    "tanh": (lambda y, c, x: ft.tanh(y), lambda y, c, x: np.tanh(y)),
    "cos": (lambda y, c, x: ft.cos(y + c), lambda y, c, x: np.cos(y + c)),
}


@settings(max_examples=8)
@given(ops=st.lists(st.sampled_from(sorted(STEP_OPS)), min_size=1, max_size=4),
       steps=st.integers(40, 160), n=st.sampled_from([8, 13, 4096]))
def test_random_repeated_steps(ops: list[str], steps: int, n: int) -> None:
    """Unrolled loops of a random step reading a fresh packed coefficient
    per step agree with numpy, rolled or not."""
    if not {"mul", "sub_c", "cos"} & set(ops):
        ops = [*ops, "sub_c"]  # every coefficient must be read
    x = ft.make_placeholder("x", (n,), np.float64)
    rng = np.random.default_rng(steps)
    xv = rng.uniform(-1, 1, n)
    inputs = {"x": xv}
    y, yv = x, xv
    for k in range(steps):
        c = ft.make_placeholder(f"c{k}", (), np.float64)
        inputs[f"c{k}"] = cv = np.array(rng.uniform(0.5, 1.0))
        for op in ops:
            lazy_op, numpy_op = STEP_OPS[op]
            y, yv = lazy_op(y, c, x), numpy_op(yv, cv, xv)
    out = ft.compile(y)(**inputs)
    np.testing.assert_allclose(out, yv, rtol=1e-9, atol=1e-12)


# {{{ the statement roller on hand-made statements

def _statement(name: str, previous: str | None, offset: int,
               reads: str = "a") -> lp.Assignment:
    value = prim.Subscript(prim.Variable(reads), (offset,))
    expr = value if previous is None else prim.Variable(previous) * 2 + value
    return lp.Assignment(prim.Variable(name), expr, id=name + "_insn",
                         depends_on=frozenset({previous + "_insn"} if previous
                                              else set()))


def _roll(insns: list, names: set[str]) -> tuple[list, set[str], list[str]]:
    counts: list[int] = []

    def new_loop(count: int) -> str:
        counts.append(count)
        return f"k{len(counts)}"
    def new_table(values: np.ndarray) -> str:
        raise AssertionError("these statements have no constants")
    result, unused = roll_repeated_statements(insns, names, new_loop, new_table)
    return result, unused, counts


def test_roller_needs_a_constant_stride() -> None:
    offsets = [0, 1, 2, 3, 4, 6, 8]
    names = [f"p{i}" for i in range(len(offsets))]
    insns = [_statement(name, names[i - 1] if i else None, off)
             for i, (name, off) in enumerate(zip(names, offsets))]
    result, unused, counts = _roll(insns, set(names))
    # p1..p4 advance by 1 and roll; p5 (stride 2) and p6 stay
    assert counts == [4]
    assert unused == {"p1", "p2", "p3"}
    update = next(i for i in result if i.id == "p4_insn")
    assert "k1" in update.within_inames
    assert str(update.expression) == "p4*2 + a[1 + k1]"
    assert [i.id for i in result][-2:] == ["p5_insn", "p6_insn"]


def test_roller_keeps_statements_read_elsewhere() -> None:
    names = [f"p{i}" for i in range(8)]
    insns = [_statement(name, names[i - 1] if i else None, i)
             for i, name in enumerate(names)]
    reader = lp.Assignment(prim.Variable("out"), prim.Variable("p3"),
                           id="out_insn", depends_on=frozenset({"p3_insn"}))
    result, unused, counts = _roll(insns + [reader], set(names))
    assert "p3" not in unused  # its value is read by another statement
    assert any(i.id == "p3_insn" for i in result)


def test_roller_leaves_different_arrays_alone() -> None:
    names = [f"p{i}" for i in range(6)]
    insns = [_statement(name, names[i - 1] if i else None, 0, reads=f"a{i}")
             for i, name in enumerate(names)]
    result, unused, counts = _roll(insns, set(names))
    assert counts == [] and unused == set() and result == insns

# }}}


def test_roller_mixes_kinds_only_when_asked() -> None:
    """Steps of two kinds (``p * 2 + a[0]`` and ``p * 2 + b[0]``) roll into
    one loop that picks the kind from a table with *max_kinds* 2, and stay
    statements without; a statement read elsewhere ends the run."""
    names = [f"p{i}" for i in range(8)]
    reads = ["a", "a", "b", "a", "b", "b", "a", "b"]
    insns = [_statement(name, names[i - 1] if i else None, 0, reads=r)
             for i, (name, r) in enumerate(zip(names, reads))]
    assert _roll(insns, set(names))[2] == []
    tables: list[np.ndarray] = []

    def new_table(table: np.ndarray) -> str:
        tables.append(table)
        return "kinds"
    result, unused = roll_repeated_statements(
        insns, set(names), lambda count: f"k{count}", new_table, max_kinds=2)
    (table,) = tables
    # (p0 is the chain's start; p1, p3 and p6 read a, the others b)
    np.testing.assert_array_equal(table, [0, 1, 0, 1, 1, 0, 1])
    assert table.dtype == np.int8
    update = next(i for i in result if i.id == "p7_insn")
    assert str(update.expression) == (
        "p7*2 + a[0] if kinds[k7] == 0 else p7*2 + b[0]")
    assert "k7" in update.within_inames
    assert unused == {f"p{i}" for i in range(1, 7)}
    reader = lp.Assignment(prim.Variable("out"), prim.Variable("p4"),
                           id="out_insn", depends_on=frozenset({"p4_insn"}))
    result, unused = roll_repeated_statements(
        insns + [reader], set(names), lambda count: f"k{count}", new_table,
        max_kinds=2)
    assert "p4" not in unused and any(i.id == "p4_insn" for i in result)


def test_roller_leaves_a_first_step_of_its_own_kind() -> None:
    # (p1 reads c once, like a chain's bottom: it stays a statement, and
    # the steps after it, of one kind, roll into a plain loop)
    names = [f"p{i}" for i in range(6)]
    reads = ["a", "c", "a", "a", "a", "a"]
    insns = [_statement(name, names[i - 1] if i else None, 0, reads=r)
             for i, (name, r) in enumerate(zip(names, reads))]
    counts: list[int] = []

    def new_loop(count: int) -> str:
        counts.append(count)
        return "k"

    def new_table(values: np.ndarray) -> str:
        raise AssertionError("a plain loop needs no table")
    result, unused = roll_repeated_statements(insns, set(names), new_loop,
                                              new_table, max_kinds=2)
    assert counts == [4] and unused == {"p2", "p3", "p4"}
    assert any(i.id == "p1_insn" for i in result)


def test_roller_reads_varying_constants_from_a_table() -> None:
    names = [f"p{i}" for i in range(6)]
    values = [np.float64(v) for v in (0.5, 1.5, 2.5, 3.5, 4.5, 5.5)]
    insns = [lp.Assignment(
        prim.Variable(name),
        values[i] if i == 0 else prim.Variable(names[i - 1]) * np.float64(2)
        + values[i],
        id=name + "_insn",
        depends_on=frozenset({names[i - 1] + "_insn"} if i else set()))
        for i, name in enumerate(names)]
    tables: list[np.ndarray] = []

    def new_table(table: np.ndarray) -> str:
        tables.append(table)
        return "tbl"
    result, unused = roll_repeated_statements(
        insns, set(names), lambda count: "k", new_table)
    (table,) = tables
    np.testing.assert_array_equal(table, [1.5, 2.5, 3.5, 4.5, 5.5])
    update = next(i for i in result if i.id == "p5_insn")
    assert str(update.expression) == "p5*2.0 + tbl[k]"
    assert unused == {"p1", "p2", "p3", "p4"}
