# SPDX-License-Identifier: MIT
"""GPU plans, forced through the options on whatever device runs the suite
(PoCL on CPUs): loop nests coalesced on their contiguous last axis and
work-group reductions over a contiguous axis. Each test checks the plan
(which axis is on ``l.0``) and the results against numpy."""

from __future__ import annotations

import numpy as np
import pytest

import ftlazy as ft
from ftlazy.target.loopy.plan import MIN_COALESCED_LAST_AXIS
from ftlazy.target.loopy.profile import GPU_LOCAL_SIZE

GPU = {"device_kind": "gpu"}
RNG = np.random.default_rng(7)


def output_plan(compiled, shape):
    """The plan of the array of *shape* that the program returns."""
    (plan,) = [p for n, p in compiled.plan.arrays.items()
               if compiled.plan.names.get(n, "").startswith("_ft_out")
               and p.shape == shape]
    return plan


def only_plan(compiled):
    (plan,) = compiled.plan.arrays.values()
    return plan


# {{{ elementwise loop nests

@pytest.mark.parametrize("shape", [(5, 40), (3, 4, 33), (2, 3, 2, 65)])
def test_elementwise_nests_put_the_last_axis_on_l0(shape):
    x = ft.make_placeholder("x", shape, np.float64)
    f = ft.compile(ft.sin(x) * 2 + x, options=GPU)
    plan = only_plan(f)
    assert plan.strategy == "loop_nest" and plan.l0_axis == len(shape) - 1
    assert plan.local_size == min(GPU_LOCAL_SIZE, shape[-1])
    xv = RNG.standard_normal(shape)
    np.testing.assert_allclose(f(x=xv), np.sin(xv) * 2 + xv, rtol=1e-13)


def test_symbolic_rows_and_columns():
    n, m = ft.make_size_param("n"), ft.make_size_param("m")
    x = ft.make_placeholder("x", (n, m), np.float64)
    f = ft.compile(ft.exp(x[:, ::-1]) + 1, options=GPU)
    plan = only_plan(f)
    assert plan.l0_axis == 1 and plan.local_size == GPU_LOCAL_SIZE
    for shape in [(3, 200), (1, 1), (0, 5), (4, 0), (70, 64)]:
        xv = RNG.standard_normal(shape)
        np.testing.assert_allclose(f(x=xv), np.exp(xv[:, ::-1]) + 1, rtol=1e-13)


def test_short_rows_stay_on_axis_0():
    # rows shorter than a warp: neighbouring work items read neighbouring
    # rows, which are dense anyway
    x = ft.make_placeholder("x", (100, MIN_COALESCED_LAST_AXIS - 1), np.float64)
    y = ft.make_placeholder("y", (100, MIN_COALESCED_LAST_AXIS), np.float64)
    assert only_plan(ft.compile(x * 2, options=GPU)).l0_axis == 0
    assert only_plan(ft.compile(y * 2, options=GPU)).l0_axis == 1


@pytest.mark.parametrize("shape", [(6, 40, 1), (2, 3, 70, 1, 1)])
def test_trailing_unit_axes_are_skipped(shape):
    """A keepdims result (n, m, 1) is coalesced on m, not left a work item
    per row because its last axis is 1 long."""
    x = ft.make_placeholder("x", shape, np.float64)
    f = ft.compile(ft.cos(x) - x, options=GPU)
    plan = only_plan(f)
    axis = max(d for d, e in enumerate(shape) if e != 1)
    assert plan.strategy == "loop_nest" and plan.l0_axis == axis, str(f.plan)
    xv = RNG.standard_normal(shape)
    np.testing.assert_allclose(f(x=xv), np.cos(xv) - xv, rtol=1e-13)


def test_padded_attention_arrays_span_their_box_under_guards():
    """A map's (L, L) scores are stored padded to the longest element; GPU
    plans coalesce them over the whole box (keys on l.0, the keepdims
    maxima and sums on their queries), each statement guarded by the
    element's length, where CPU plans run a work item per element; against
    numpy per element, with elements of 1 row, of more rows than a work
    group, and an empty batch."""
    heads, d = 2, 8

    def attention(seq):
        s = ft.reshape(seq, (seq.shape[0], heads, d))
        scores = ft.einsum("qhd,khd->hqk", s, s) * 0.3
        p = ft.exp(scores - ft.amax(scores, axis=2, keepdims=True))
        p = p / ft.sum(p, axis=2, keepdims=True)
        return ft.reshape(ft.einsum("hqk,khd->qhd", p, s),
                          (seq.shape[0], heads * d))

    def reference(seq):
        s = seq.reshape(len(seq), heads, d)
        scores = np.einsum("qhd,khd->hqk", s, s) * 0.3
        p = np.exp(scores - scores.max(axis=2, keepdims=True))
        p /= p.sum(axis=2, keepdims=True)
        return np.einsum("hqk,khd->qhd", p, s).reshape(len(seq), heads * d)

    xs = ft.make_jagged_placeholder("xs", (heads * d,), np.float64, depth=2)
    f = ft.compile(ft.map(attention, xs), options=GPU)
    padded = {p.shape[-1] == 1: p for p in f.plan.arrays.values()
              if p.strategy == "loop_nest" and len(p.shape) == 4}
    assert set(padded) == {True, False}, str(f.plan)
    assert padded[False].l0_axis == 3 and padded[True].l0_axis == 2, str(f.plan)
    for lengths in [(1, 300, 2, 33), (7,), ()]:
        data = [RNG.standard_normal((n, heads * d)) for n in lengths]
        got = f(xs=data).tolist()
        assert len(got) == len(data)
        for g, seq in zip(got, data):
            np.testing.assert_allclose(g, reference(seq), rtol=1e-10,
                                       atol=1e-12)


def test_stencil_reads_neighbours_on_l0():
    n = ft.make_size_param("n")
    a = ft.make_placeholder("a", (n, n), np.float64)
    w4 = (4 * a[1:-1, 1:-1] - a[:-2, 1:-1] - a[2:, 1:-1] - a[1:-1, :-2]
          - a[1:-1, 2:])
    f = ft.compile(w4, options=GPU)
    assert only_plan(f).l0_axis == 1
    # consecutive work items (lid(0)) read consecutive columns
    assert "lid(0)" in f.source and "gid(1)" in f.source
    av = RNG.standard_normal((67, 67))
    want = (4 * av[1:-1, 1:-1] - av[:-2, 1:-1] - av[2:, 1:-1] - av[1:-1, :-2]
            - av[1:-1, 2:])
    np.testing.assert_allclose(f(a=av), want, rtol=1e-12, atol=1e-12)


def test_cpu_plans_keep_rows_on_l0():
    x = ft.make_placeholder("x", (5, 40), np.float64)
    f = ft.compile(ft.sin(x), options={"device_kind": "cpu"})
    assert only_plan(f).l0_axis == 0

# }}}


# {{{ work-group reductions

@pytest.mark.parametrize("columns", [64, 100, 1000])
def test_row_sums_are_group_reductions(columns):
    a = ft.make_placeholder("a", (7, columns), np.float64)
    f = ft.compile(ft.sum(a, axis=1), options=GPU)
    plan = only_plan(f)
    assert plan.strategy == "group_reduction" and plan.l0_reduction
    assert "l.0 on the reduced axis" in str(plan)
    assert "__local" in f.source and "barrier(CLK_LOCAL_MEM_FENCE)" in f.source
    av = RNG.standard_normal((7, columns))
    np.testing.assert_allclose(f(a=av), av.sum(axis=1), rtol=1e-12)


def test_symbolic_reduction_length_including_empty():
    n, k = ft.make_size_param("n"), ft.make_size_param("k")
    a = ft.make_placeholder("a", (n, k), np.float64)
    f = ft.compile(ft.sum(a * a, axis=1), options=GPU)
    # (long symbolic reductions run in stages, each a group reduction)
    assert all(p.strategy == "group_reduction"
               for p in f.plan.arrays.values())
    for shape in [(3, 1), (2, 63), (5, 65), (1, 1000), (4, 0), (0, 9)]:
        av = RNG.standard_normal(shape)
        np.testing.assert_allclose(f(a=av), (av * av).sum(axis=1), rtol=1e-12)


def test_rows_scaled_by_a_value_per_row():
    # (the reduction reads y at the output's own index: that read stays in
    # the reduction; a private load of it outside the items' l.0 loop was
    # refused by loopy, so weighted row sums failed to compile on GPUs)
    n = ft.make_size_param("n")
    x = ft.make_placeholder("x", (n, 128), np.float64)
    y = ft.make_placeholder("y", (n,), np.float64)
    f = ft.compile(ft.sum(x * y[:, None], axis=1) + y, options=GPU)
    assert "group_reduction" in {p.strategy for p in f.plan.arrays.values()}
    for rows in (5, 1, 0):
        xv, yv = RNG.standard_normal((rows, 128)), RNG.standard_normal(rows)
        np.testing.assert_allclose(f(x=xv, y=yv),
                                   (xv * yv[:, None]).sum(axis=1) + yv,
                                   rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("op", ["max", "min", "prod"])
def test_other_operations(op):
    a = ft.make_placeholder("a", (6, 300), np.float64)
    f = ft.compile(getattr(ft, op)(a, axis=1), options=GPU)
    assert only_plan(f).strategy == "group_reduction"
    av = RNG.uniform(0.99, 1.01, (6, 300))
    av[2, 17] = np.nan  # extrema propagate NaN as numpy's do
    np.testing.assert_allclose(f(a=av), getattr(np, op)(av, axis=1),
                               rtol=1e-12)


def test_integer_extrema():
    a = ft.make_placeholder("a", (4, 129), np.int32)
    f = ft.compile(ft.max(a, axis=1) - ft.min(a, axis=1), options=GPU)
    av = RNG.integers(-1000, 1000, (4, 129)).astype(np.int32)
    np.testing.assert_array_equal(f(a=av), av.max(axis=1) - av.min(axis=1))
    assert {p.strategy for p in f.plan.arrays.values()} >= {"group_reduction"}


@pytest.mark.parametrize("shape", [(3, 5, 200), (2, 3, 4, 70)])
def test_many_output_axes(shape):
    # outputs of two and three axes: g.0, g.1, g.2 (and a loop beyond)
    a = ft.make_placeholder("a", shape, np.float64)
    f = ft.compile(ft.sum(a, axis=-1), options=GPU)
    assert only_plan(f).strategy == "group_reduction"
    av = RNG.standard_normal(shape)
    np.testing.assert_allclose(f(a=av), av.sum(axis=-1), rtol=1e-12)


def test_full_sums_and_column_sums():
    a = ft.make_placeholder("a", (300, 200), np.float64)
    x = ft.make_placeholder("x", (5000,), np.float64)
    f = ft.compile(ft.DictOfNamedArrays(
        {"rows": ft.sum(a, axis=1), "total": ft.sum(a),
         "columns": ft.sum(a, axis=0), "vector": ft.sum(x)}), options=GPU)
    plans = [f.plan.arrays[n] for n in f.plan.arrays]
    strategies = {(p.strategy, p.shape) for p in plans}
    assert ("group_reduction", (300,)) in strategies
    assert ("group_reduction", ()) in strategies
    # a column sum reads rows: its items go over the columns (coalesced)
    (columns,) = [p for p in plans if p.shape == (200,)]
    assert columns.strategy != "group_reduction" and columns.l0_axis == 0
    av, xv = RNG.standard_normal((300, 200)), RNG.standard_normal(5000)
    got = f(a=av, x=xv)
    np.testing.assert_allclose(got["rows"], av.sum(axis=1), rtol=1e-12)
    np.testing.assert_allclose(got["total"], av.sum(), rtol=1e-12)
    np.testing.assert_allclose(got["columns"], av.sum(axis=0), rtol=1e-12)
    np.testing.assert_allclose(got["vector"], xv.sum(), rtol=1e-12)


def test_strided_reductions_are_not_group_reductions():
    # the reduced index is not the last one of the read: items would read
    # a whole row apart
    a = ft.make_placeholder("a", (100, 100), np.float64)
    f = ft.compile(ft.einsum("ji->i", a), options=GPU)
    assert only_plan(f).strategy != "group_reduction"
    av = RNG.standard_normal((100, 100))
    np.testing.assert_allclose(f(a=av), av.sum(axis=0), rtol=1e-12)

# }}}


@pytest.mark.parametrize("kind", ["gpu", "cpu"])
def test_row_sums_and_full_sum_read_the_input_once(kind):
    # the full sum adds the row sums the program also returns (W3 "both")
    a = ft.make_placeholder("a", (300, 200), np.float64)
    f = ft.compile(ft.DictOfNamedArrays(
        {"rows": ft.sum(a, axis=1), "total": ft.sum(a)}),
        options={"device_kind": kind})
    assert sorted(p.shape for p in f.plan.arrays.values()) == [(), (300,)]
    reads_input = [n for n in f.plan.arrays
                   if any(getattr(b, "name", None) == "_ft_in0"
                          for b in n.bindings.values())]
    assert len(reads_input) == 1
    av = RNG.standard_normal((300, 200))
    got = f(a=av)
    np.testing.assert_allclose(got["rows"], av.sum(axis=1), rtol=1e-12)
    np.testing.assert_allclose(got["total"], av.sum(), rtol=1e-12)


def _row_softmax(xp, a):
    e = xp.exp(a - xp.max(a, axis=1, keepdims=True))
    return e / xp.sum(e, axis=1, keepdims=True)


def _row_layernorm(xp, a):
    d = a - xp.mean(a, axis=1, keepdims=True)
    return d / xp.sqrt(xp.mean(d * d, axis=1, keepdims=True) + 1e-5)


def _gpu_program(result, **fields):
    """*result* planned for a GPU (the default device's profile with
    *fields* replaced), and its full-size arrays."""
    import dataclasses

    from ftlazy.target.loopy.device import default_queue
    from ftlazy.target.loopy.profile import device_profile
    profile = dataclasses.replace(device_profile(default_queue().device),
                                  kind="gpu", **fields)
    prg = ft.generate_loopy(result, profile=profile)
    full = [p for p in prg.plan.arrays.values() if p.shape == result.shape]
    return prg, full


@pytest.mark.parametrize("limit", [0, 16, 40])
def test_cheap_row_intermediates_are_recomputed_not_stored(limit):
    # a layer norm's x - mean (squared, and divided) and, within a larger
    # limit, a softmax's exp(x - max) (summed, and divided) are computed
    # again by each reader instead of stored and read back: two passes
    # over the rows fewer
    from ftlazy.target.loopy.device import default_queue
    a = ft.make_placeholder("a", (70, 300), np.float64)
    av = RNG.standard_normal((70, 300))
    queue = default_queue()
    for fn, recomputed_from in ((_row_layernorm, 16), (_row_softmax, 40)):
        prg, full = _gpu_program(fn(ft, a), gpu_recompute_cost_limit=limit)
        assert len(full) == (1 if limit >= recomputed_from else 2)
        _, (out,) = prg(queue, a=av)
        np.testing.assert_allclose(out, fn(np, av),
                                   rtol=1e-12, atol=1e-15)


def test_cpu_plans_store_row_intermediates():
    # (CPU plans share the rows in a work item instead, see row_fusion)
    a = ft.make_placeholder("a", (70, 300), np.float64)
    f = ft.compile(_row_layernorm(ft, a), options={"device_kind": "cpu"})
    assert not f.plan.storage.stored.isdisjoint(
        n for n in f.plan.arrays if n.shape == (70, 300)
        and not f.plan.names.get(n, "").startswith("_ft_out"))


# {{{ long straight-line code

def _irregular_chain(x, steps, np_or_ft, kinds=6):
    """Operations in an order that repeats no step, each of one of *kinds*
    kinds (more than ``storage.MAX_STEP_KINDS``: nothing to roll)."""
    choices = np.random.default_rng(3).integers(0, kinds, steps)
    steps = [lambda y: y * 0.999, lambda y: y + x, np_or_ft.cos, np_or_ft.sin,
             lambda y: y - 0.25, lambda y: np_or_ft.tanh(y) * 2]
    y = x
    for c in choices:
        y = steps[c](y)
    return y


def test_long_straight_line_code_is_cut_into_kernels_on_gpus():
    x = ft.make_placeholder("x", (50,), np.float64)
    y = _irregular_chain(x, 600, ft)
    gpu = ft.compile(y, options=GPU)
    cpu = ft.compile(y, options={"device_kind": "cpu"})
    assert len(cpu.plan.arrays) == 1
    assert len(gpu.plan.arrays) > 2
    assert gpu.source.count("__kernel") == len(gpu.plan.arrays)
    assert not gpu.plan.storage.mixed_chains
    xv = RNG.uniform(-1, 1, 50)
    want = _irregular_chain(xv, 600, np)
    np.testing.assert_allclose(gpu(x=xv), want, rtol=1e-11)
    np.testing.assert_allclose(cpu(x=xv), want, rtol=1e-11)


def test_chains_of_few_step_kinds_are_rolled_not_cut():
    # (W5-irregular: NVIDIA's OpenCL compiler took 25-29 s on its 2,000
    # operations whether cut into 17 kernels or 64)
    x = ft.make_placeholder("x", (50,), np.float64)
    y = _irregular_chain(x, 600, ft, kinds=3)
    f = ft.compile(y, options=GPU)
    assert f.plan.storage.mixed_chains and len(f.plan.arrays) == 1
    assert f.source.count("cos(") < 30
    xv = RNG.uniform(-1, 1, 50)
    np.testing.assert_allclose(f(x=xv), _irregular_chain(xv, 600, np, kinds=3),
                               rtol=1e-11)


def test_repeating_chains_are_rolled_not_cut():
    x = ft.make_placeholder("x", (50,), np.float64)
    p = x * 0 + 0.5
    for _ in range(400):
        p = p * x + 0.25
    f = ft.compile(p, options=GPU)
    assert len(f.plan.arrays) == 1
    xv = RNG.uniform(-1, 1, 50)
    want = np.full(50, 0.5)
    for _ in range(400):
        want = want * xv + 0.25
    np.testing.assert_allclose(f(x=xv), want, rtol=1e-12)

# }}}


# {{{ matrix products in local-memory tiles

@pytest.mark.parametrize("shape", [(64, 64, 64), (130, 33, 70), (1, 17, 1),
                                   (5, 200, 3)])
def test_matrix_products_in_local_tiles(shape):
    m, k, n = shape
    a = ft.make_placeholder("a", (m, k), np.float64)
    b = ft.make_placeholder("b", (k, n), np.float64)
    f = ft.compile(a @ b, options=GPU)
    plan = only_plan(f)
    assert plan.strategy == "tiled_contraction" and plan.l0_axis == 1
    assert plan.block == (16, 4, 16) and plan.local_size == 256
    assert "__local" in f.source
    av, bv = RNG.standard_normal((m, k)), RNG.standard_normal((k, n))
    np.testing.assert_allclose(f(a=av, b=bv), av @ bv, rtol=1e-12, atol=1e-12)


def test_tiled_products_of_symbolic_sizes_and_computed_operands():
    m, n = (ft.make_size_param(s) for s in "mn")
    k = 40
    a = ft.make_placeholder("a", (k, m), np.float64)
    b = ft.make_placeholder("b", (n, k), np.float64)
    y = ft.einsum("km,nk->mn", ft.exp(a), b * 2)
    f = ft.compile(y, options=GPU)
    assert any(p.strategy == "tiled_contraction"
               for p in f.plan.arrays.values())
    for mv, kv, nv in [(3, 40, 7), (70, 40, 65), (0, 40, 3), (2, 40, 0)]:
        av, bv = RNG.standard_normal((kv, mv)), RNG.standard_normal((nv, kv))
        np.testing.assert_allclose(f(a=av, b=bv), np.exp(av).T @ (bv * 2).T,
                                   rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_tiled_products_over_a_symbolic_or_long_k(dtype):
    # (not blocked into partial sums first, as other long float sums are:
    # each item sums each k step apart, then adds the step's sum)
    m, k, n = (ft.make_size_param(s) for s in "mkn")
    a = ft.make_placeholder("a", (m, k), dtype)
    b = ft.make_placeholder("b", (k, n), dtype)
    f = ft.compile(a @ b, options=GPU)
    assert only_plan(f).strategy == "tiled_contraction"
    for mv, kv, nv in [(70, 3000, 65), (3, 0, 4), (1, 1, 1), (0, 5, 2)]:
        av = RNG.standard_normal((mv, kv)).astype(dtype)
        bv = RNG.standard_normal((kv, nv)).astype(dtype)
        exact = av.astype(np.float64) @ bv.astype(np.float64)
        scale = max(1.0, np.abs(exact).max(initial=0))
        error = np.abs(f(a=av, b=bv) - exact).max(initial=0) / scale
        numpy_error = np.abs(av @ bv - exact).max(initial=0) / scale
        # within twice numpy's (a BLAS's) error, or a few roundings
        assert error <= max(2 * numpy_error, 8 * np.finfo(dtype).eps)


def test_small_products_with_a_long_k_keep_parallel_partial_sums():
    # too few output tiles to fill a device: the long sum runs in blocks
    a = ft.make_placeholder("a", (2, 30000), np.float32)
    b = ft.make_placeholder("b", (30000, 2), np.float32)
    f = ft.compile(a @ b, options=GPU)
    assert "tiled_contraction" not in f.plan.strategies().values()
    av = RNG.standard_normal((2, 30000)).astype(np.float32)
    bv = RNG.standard_normal((30000, 2)).astype(np.float32)
    np.testing.assert_allclose(f(a=av, b=bv), av @ bv, rtol=1e-4, atol=1e-3)


def test_tiled_products_get_the_devices_barrier_loop_build():
    # its k loop holds barriers: built as the probe says such kernels must
    # be on this device (see ftlazy.target.loopy.barrier_probe)
    import loopy as lp

    from ftlazy.target.loopy import barrier_probe as bp
    from ftlazy.target.loopy.profile import synthetic_profile
    a = ft.make_placeholder("a", (40, 50), np.float64)
    b = ft.make_placeholder("b", (50, 30), np.float64)
    program = ft.generate_loopy(a @ b, profile=synthetic_profile(
        "gpu", 1, barrier_loop_build="optnone"))
    linearized = lp.linearize(lp.preprocess_program(program.program))
    assert len(bp.barrier_loop_kernels(linearized.default_entrypoint)) == 1
    assert program.source.count(bp.OPTNONE) == 1


@pytest.mark.parametrize("leading", [(6, 5), (3, 4, 7)])
def test_batched_rows_are_tiled_as_one_product(leading):
    # out[t, b, j] = sum_k x[t, b, k] * u[k, j] (a product hoisted out of a
    # scan): the leading axes are the rows of one tiled product
    x = ft.make_placeholder("x", leading + (40,), np.float64)
    u = ft.make_placeholder("u", (40, 70), np.float64)
    letters = "abc"[:len(leading)]
    f = ft.compile(ft.einsum(f"{letters}k,kj->{letters}j", x, u), options=GPU)
    plan = only_plan(f)
    assert plan.strategy == "tiled_contraction"
    assert plan.l0_axis == len(leading)
    xv, uv = RNG.standard_normal(leading + (40,)), RNG.standard_normal((40, 70))
    np.testing.assert_allclose(f(x=xv, u=uv), xv @ uv, rtol=1e-12, atol=1e-12)


def test_batched_rows_with_a_symbolic_first_axis():
    t = ft.make_size_param("t")
    x = ft.make_placeholder("x", (t, 3, 20), np.float64)
    u = ft.make_placeholder("u", (70, 20), np.float64)
    f = ft.compile(ft.einsum("tbk,jk->tbj", x, u), options=GPU)
    assert only_plan(f).strategy == "tiled_contraction"
    for steps in (0, 1, 9):
        xv = RNG.standard_normal((steps, 3, 20))
        uv = RNG.standard_normal((70, 20))
        np.testing.assert_allclose(f(x=xv, u=uv), xv @ uv.T, rtol=1e-12,
                                   atol=1e-12)


@pytest.mark.parametrize("spec", ["ik,kj->ij", "ki,kj->ij", "ik,jk->ij",
                                  "ki,jk->ij"])
def test_transposed_operands_load_along_their_contiguous_index(spec):
    # each operand's tile is loaded with consecutive items along the index
    # that is contiguous in memory, whichever it is
    shapes = {"i": 70, "k": 33, "j": 50}
    left, right = spec.split("->")[0].split(",")
    a = ft.make_placeholder("a", tuple(shapes[c] for c in left), np.float64)
    b = ft.make_placeholder("b", tuple(shapes[c] for c in right), np.float64)
    f = ft.compile(ft.einsum(spec, a, b), options=GPU)
    assert only_plan(f).strategy == "tiled_contraction"
    av = RNG.standard_normal(a.shape)
    bv = RNG.standard_normal(b.shape)
    np.testing.assert_allclose(f(a=av, b=bv), np.einsum(spec, av, bv),
                               rtol=1e-12, atol=1e-12)
    # the global reads of both tiles step by one along lid(0)
    loads = [line for line in f.source.splitlines() if "tile" in line
             and "? _ft_in" in line]
    for line in loads:
        read = line.split("? ")[1]
        assert "+ lid(0)" in read or read.split("[")[1].startswith("lid(0)")


def test_integer_products_in_tiles():
    a = ft.make_placeholder("a", (40, 50), np.int64)
    b = ft.make_placeholder("b", (50, 30), np.int64)
    f = ft.compile(a @ b, options=GPU)
    assert only_plan(f).strategy == "tiled_contraction"
    av = RNG.integers(-9, 9, (40, 50))
    bv = RNG.integers(-9, 9, (50, 30))
    np.testing.assert_array_equal(f(a=av, b=bv), av @ bv)

# }}}


def test_real_gpus_get_256_item_groups(monkeypatch):
    # a GPU device's profile (a stand-in device: the suite may have none)
    import types

    import pyopencl as cl

    from ftlazy.target.loopy import barrier_probe
    from ftlazy.target.loopy.profile import device_profile
    monkeypatch.setattr(barrier_probe, "barrier_loop_build",
                        lambda device: "optimize")

    def gpu(max_group):
        return types.SimpleNamespace(
            platform=types.SimpleNamespace(name="stand-in"), name="gpu",
            driver_version=str(max_group), int_ptr=max_group,
            type=cl.device_type.GPU, max_work_group_size=max_group,
            local_mem_size=48 * 1024, max_mem_alloc_size=2**34,
            max_compute_units=132,
            single_fp_config=(cl.device_fp_config.CORRECTLY_ROUNDED_DIVIDE_SQRT
                              if max_group > 128 else 0),
            double_fp_config=0)
    assert device_profile(gpu(1024)).gpu_local_size == GPU_LOCAL_SIZE == 256
    assert device_profile(gpu(1024)).correctly_rounded_divide_sqrt
    assert not device_profile(gpu(128)).correctly_rounded_divide_sqrt
    assert device_profile(gpu(1024)).compute_units == 132
    assert device_profile(gpu(1024)).kind == "gpu"
    assert device_profile(gpu(128)).gpu_local_size == 128
