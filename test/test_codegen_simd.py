# SPDX-License-Identifier: MIT
"""The vector path for flat elementwise kernels (``double4``, ``float8``:
the width comes from the device's probed profile; the suite runs each test
under scalar code and the widest width the device passed), and the cases
that must stay scalar."""

import numpy as np
import pytest

import ftlazy as ft
from ftlazy.target.loopy.profile import (
    CodegenOptions, DeviceProfile, synthetic_profile)

N = 8192
rng = np.random.default_rng(3)


def _flat_width(f) -> int:
    """The vector width of a compiled flat kernel (1: scalar)."""
    plan = f.plan
    return plan.vector_width if plan.vector_length is not None else 1


def _device_profile():
    from ftlazy.target.loopy.device import default_queue
    from ftlazy.target.loopy.profile import device_profile
    return device_profile(default_queue().device)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_flat_elementwise_is_vectorized_and_correct(dtype, codegen_vector_width):
    x = ft.make_placeholder("x", (N,), dtype)
    y = ft.make_placeholder("y", (N,), dtype)
    s = ft.make_placeholder("s", (), dtype)
    d = ft.make_dict_of_named_arrays({
        "w1": ft.exp(-x * x) * ft.sin(3 * x) + 0.5 * x / (1 + x * x),
        "mix": ft.sqrt(x + 1) * ft.tanh(y) - ft.log(y + 2) * s + x ** 2,
        "atan2": ft.arctan2(x, y + 1),
    })
    f = ft.compile(d)
    # (narrower where the device's probe found a builtin it calls wrong at
    # the flavour's width: PoCL 3.0's float32 sin)
    width = min(codegen_vector_width, _device_profile().vector_width(
        dtype, ("exp", "sin", "sqrt", "tanh", "log", "atan2")))
    assert _flat_width(f) == width
    assert set(f.plan.strategies().values()) == (
        {"flat_vector"} if width > 1 else {"loop_nest"})
    if width > 1:
        ctype = {"float64": "double", "float32": "float"}[np.dtype(dtype).name]
        assert f"{ctype}{width}" in f.source
    inputs = dict(x=rng.random(N, dtype=dtype), y=rng.random(N, dtype=dtype),
                  s=np.asarray(1.5, dtype=dtype))
    out, ref = f(**inputs), ft.evaluate_numpy(d, **inputs)
    # a few ulp of the builtins, of terms of order 1: where they cancel near
    # zero (the inputs depend on the order tests run in) only an absolute
    # error of that order is meaningful
    rtol, atol = (1e-12, 1e-15) if dtype == np.float64 else (2e-6, 2e-6)
    for name in ref:
        assert out[name].dtype == ref[name].dtype and out[name].shape == (N,)
        np.testing.assert_allclose(out[name], ref[name], rtol=rtol, atol=atol)


def test_shared_subexpressions_on_vectors(codegen_vector_width):
    """A value used several times becomes a private statement; on the
    vector path it is a private vector."""
    x = ft.make_placeholder("x", (N,), np.float64)
    shared = ft.sin(x) * 3 + 1
    f = ft.compile(shared * shared - ft.exp(shared) / (shared + 5))
    width = codegen_vector_width
    assert _flat_width(f) == width
    if width > 1:
        assert f"double{width} _ft_p" in f.source
    xv = rng.random(N)
    sv = np.sin(xv) * 3 + 1
    np.testing.assert_allclose(f(x=xv), sv * sv - np.exp(sv) / (sv + 5), rtol=1e-13)


def test_comparisons_and_conditionals_stay_scalar():
    x = ft.make_placeholder("x", (N,), np.float64)
    d = ft.make_dict_of_named_arrays({
        "clip": ft.where(x > 0.5, x, -x), "big": x > 0.25,
        "m": ft.maximum(x, 0.3), "fl": x // 0.1})
    f = ft.compile(d)
    assert _flat_width(f) == 1
    xv = rng.random(N)
    out, ref = f(x=xv), ft.evaluate_numpy(d, x=xv)
    for name in ref:
        np.testing.assert_array_equal(out[name], ref[name])


def test_lengths_not_divisible_by_the_width_stay_scalar():
    x = ft.make_placeholder("x", (N + 3,), np.float64)
    f = ft.compile(ft.exp(x))
    assert _flat_width(f) == 1
    xv = rng.random(N + 3)
    np.testing.assert_allclose(f(x=xv), np.exp(xv), rtol=1e-14)


def test_math_calls_on_vectors_in_row_loops(codegen_vector_width):
    """2-D float bodies with math calls compute each call on a vector of
    lanes at once (also inside a scan); results equal the scalar
    reference."""
    a = ft.make_placeholder("a", (16, 24), np.float64)
    b = ft.make_placeholder("b", (16, 24), np.float64)
    xs = ft.make_placeholder("xs", (5, 8, 16), np.float64)
    h0 = ft.make_placeholder("h0", (8, 16), np.float64)
    d = ft.make_dict_of_named_arrays({
        "nested": ft.exp(ft.sin(a) * 0.5) + ft.arctan2(a, b + 1),
        "rnn": ft.scan(lambda h, x: ft.tanh(h * 0.5 + x), xs, h0),
    })
    f = ft.compile(d)
    widths = {p.vector_width for p in f.plan.arrays.values()
              if p.strategy == "loop_nest" and len(p.shape) == 2}
    assert widths == {codegen_vector_width}
    # (float arguments are gathered into OpenCL vector values, _ft_vg*)
    assert ("_ft_vg" in f.source) == (codegen_vector_width > 1)
    assert "_ft_al" not in f.source
    inputs = dict(a=rng.standard_normal((16, 24)), b=rng.random((16, 24)),
                  xs=rng.standard_normal((5, 8, 16)), h0=rng.standard_normal((8, 16)))
    out, ref = f(**inputs), ft.evaluate_numpy(d, **inputs)
    for name in ref:
        np.testing.assert_allclose(out[name], ref[name], rtol=1e-13, atol=1e-15)


@pytest.mark.parametrize("width", [2, 4, 8, 16])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_every_width_emits_its_vector_type(width, dtype):
    """Widths this machine may not take (its probe may refuse them) still
    generate the right code: planned and emitted for a synthetic profile,
    not run."""
    x = ft.make_placeholder("x", (N,), dtype)
    y = ft.exp(-x * x) * ft.sin(x) + x ** 2
    prg = ft.generate_loopy(y, profile=synthetic_profile("cpu", width))
    assert prg.plan.vector_length == N and prg.plan.vector_width == width
    ctype = {"float64": "double", "float32": "float"}[np.dtype(dtype).name]
    assert f"{ctype}{width}" in prg.source
    assert f"{ctype}{2 * width}" not in prg.source


def _row_body(a):
    return ft.exp(ft.sin(a) * 0.5) + ft.arctan2(a, a * a + 1) + ft.tanh(a) ** 1.5


@pytest.mark.parametrize("width", [2, 4, 8, 16])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_row_loops_build_vector_values_at_every_width(width, dtype):
    """In a row loop split into lanes, each math call's arguments become one
    OpenCL vector value built by one statement (no unrolled gather loop),
    and each lane reads its component; planned and emitted for a
    synthetic profile at every width, whether or not this device runs it."""
    a = ft.make_placeholder("a", (6, 32), dtype)
    prg = ft.generate_loopy(_row_body(a), profile=synthetic_profile("cpu", width))
    ctype = {"float64": "double", "float32": "float"}[np.dtype(dtype).name]
    assert f"({ctype}{width})(" in prg.source
    assert f".s{width - 1:x}" in prg.source and f".s{width:x} " not in prg.source
    assert "_ft_al" not in prg.source


def _scan_row_body(dtype):
    """A map of a scan over a FractalTensor's sequences whose step calls
    math builtins on rows of 32 (a row loop split into lanes, in a scan)."""
    from ftlazy.target.loopy.jagged_program import jagged_lowering
    xs = ft.make_jagged_placeholder("xs", (32,), dtype, depth=2)
    result = ft.map(lambda s: ft.scan(
        lambda h, x: ft.tanh(x + h * 0.5) + ft.exp(-h), s,
        ft.zeros(32, dtype)), xs)
    return result, jagged_lowering(result).dense


@pytest.mark.parametrize("width", [4, 8])
def test_lanes_loop_where_the_probe_passed_run_time_lane_reads(width):
    """In a scan's step, where the probe passed reading a vector's lanes at
    a run-time index (``lanes``), each store loops over the lanes reading
    ``v[lane]``; elsewhere (and outside scans) loopy unrolls the lanes,
    each reading ``v.sK``."""
    import dataclasses
    import re

    from ftlazy.target.loopy.probe import LANES
    _, dense = _scan_row_body(np.float32)
    base = synthetic_profile("cpu", width)
    looped = dataclasses.replace(
        base, builtin_widths=base.builtin_widths + ((("float32", LANES), width),))
    source = ft.generate_loopy(dense, profile=looped).source
    assert re.search(r"_ft_vr\d+\[_ft_lane\d+\]", source)
    assert re.search(rf"for \(int _ft_lane\d+ = 0; _ft_lane\d+ <= {width - 1};",
                     source)
    unrolled = ft.generate_loopy(dense, profile=base).source
    assert f".s{width - 1:x}" in unrolled and "[_ft_lane" not in unrolled
    # outside scans, and for float64 (measured slower as loops), the lanes
    # stay unrolled
    a = ft.make_placeholder("a", (6, 32), np.float32)
    dense_rows = ft.generate_loopy(_row_body(a), profile=looped).source
    assert "[_ft_lane" not in dense_rows and f".s{width - 1:x}" in dense_rows
    _, dense64 = _scan_row_body(np.float64)
    both = dataclasses.replace(looped, builtin_widths=looped.builtin_widths
                               + ((("float64", LANES), width),))
    assert "[_ft_lane" not in ft.generate_loopy(dense64, profile=both).source
    # a width the lanes failed at is no error to pin (they are unrolled)
    narrow = dataclasses.replace(
        base, builtin_widths=base.builtin_widths + ((("float32", LANES), 2),))
    assert narrow.with_options(CodegenOptions(vector_width=width)) is not None


def test_scan_lanes_at_the_devices_own_width_match_numpy():
    """The scan of :func:`_scan_row_body` compiled for this device (lanes
    looped where its probe passed them) against the reference evaluator."""
    from ftlazy.target.loopy.probe import LANES
    result, _ = _scan_row_body(np.float32)
    f = ft.compile(result)
    width = max(p.vector_width for p in f.plan.arrays.values())
    profile = f.plan.profile
    if profile.kind == "cpu" and 1 < width <= profile.builtin_width(np.float32, LANES):
        assert "[_ft_lane" in f.source
    lengths = (5, 0, 9, 1)
    data = [rng.uniform(-1, 1, (n, 32)).astype(np.float32) for n in lengths]
    got, want = f(xs=data), ft.evaluate_numpy(result, xs=data)
    for g, w in zip(got.tolist(), want.tolist(), strict=True):
        np.testing.assert_allclose(g, w, rtol=2e-5, atol=1e-6)


def test_float32_vector_values_at_the_devices_own_width():
    """float32 row loops at the widest width the device's probe passed for
    float32 (the test flavours pin one width for both float dtypes: on
    PoCL with AVX-512 that is 4, where float32 runs 8 lanes)."""
    from ftlazy.target.loopy.profile import default_options
    a = ft.make_placeholder("a", (6, 32), np.float32)
    with default_options(CodegenOptions(vector_min_length=16, device_kind="cpu")):
        f = ft.compile(_row_body(a))
    width, = {p.vector_width for p in f.plan.arrays.values()}
    if width == 1:
        pytest.skip("the device's probe passed no float32 vector width")
    assert f"(float{width})(" in f.source
    av = rng.uniform(0.1, 2, (6, 32)).astype(np.float32)
    np.testing.assert_allclose(f(a=av), ft.evaluate_numpy(_row_body(a), a=av),
                               rtol=2e-6)


def test_vector_width_follows_the_builtins_used():
    """A kernel is vectorized at the widest width every builtin it calls
    passed: exp broken at 8 keeps exp kernels at 4, not sin kernels."""
    widths = tuple(((d, b), 8) for d in ("float32", "float64")
                   for b in ("arith", "sin", "exp"))
    widths = tuple(((d, b), 4 if b == "exp" else w) for (d, b), w in widths)
    profile = DeviceProfile(builtin_widths=widths)
    x = ft.make_placeholder("x", (N,), np.float64)
    assert ft.generate_loopy(ft.sin(x) + 1, profile=profile).plan.vector_width == 8
    assert ft.generate_loopy(ft.exp(x) + 1, profile=profile).plan.vector_width == 4
    # a builtin the probe never saw stays scalar
    assert ft.generate_loopy(ft.cos(x), profile=profile).plan.vector_length is None


def test_pinned_width_the_probe_refused_is_an_error():
    # vector arithmetic broken at the width: refused
    widths = tuple(((d, b), 4 if (d, b) == ("float64", "arith") else 8)
                   for d in ("float32", "float64") for b in ("arith", "exp"))
    profile = DeviceProfile(description="a test device", builtin_widths=widths)
    with pytest.raises(ValueError, match="vector width 8 is not safe on a test "
                       "device.*float64 arithmetic"):
        profile.with_options(CodegenOptions(vector_width=8))
    assert profile.with_options(CodegenOptions(vector_width=4)).vector_width(
        "float64", ["exp"]) == 4


def test_pinned_width_keeps_a_broken_builtin_narrower():
    # a builtin wrong at the width (PoCL's float32 sin) keeps its loops at
    # the widest width it passed; the others take the pinned one
    widths = tuple(((d, b), 1 if (d, b) == ("float32", "sin") else 8)
                   for d in ("float32", "float64") for b in ("arith", "sin", "exp"))
    profile = DeviceProfile(description="a test device", builtin_widths=widths)
    pinned = profile.with_options(CodegenOptions(vector_width=8))
    assert pinned.vector_width("float32", ["sin"]) == 1
    assert pinned.vector_width("float32", ["exp"]) == 8
    assert pinned.vector_width("float64", ["sin"]) == 8
    x = ft.make_placeholder("x", (N,), np.float32)
    assert ft.generate_loopy(ft.sin(x) + 1, profile=pinned).plan.vector_length is None
    assert ft.generate_loopy(ft.exp(x) + 1, profile=pinned).plan.vector_width == 8


@pytest.mark.parametrize("options, error", [
    ({"vector_width": 3}, ValueError), ({"device_kind": "tpu"}, ValueError),
    ({"matmul_block": (0, 8)}, ValueError),
    ({"vector_min_length": "a"}, ValueError),
    ({"vector_min_length": -3}, ValueError),
    ({"vector_min_length": 2.5}, ValueError),
    ({"vectorize": "no"}, TypeError)])
def test_bad_options_are_rejected(options, error):
    x = ft.make_placeholder("x", (N,), np.float64)
    with pytest.raises(error, match=next(iter(options))):
        ft.compile(x + 1, options=options)


def test_vectorize_false_and_width_one_give_scalar_code():
    x = ft.make_placeholder("x", (N,), np.float64)
    for options in ({"vectorize": False}, {"vector_width": 1},
                    CodegenOptions(vectorize=False)):
        f = ft.compile(ft.sin(x) * 2, options=options)
        assert _flat_width(f) == 1
        xv = rng.random(N)
        np.testing.assert_allclose(f(x=xv), np.sin(xv) * 2, rtol=1e-14)


def test_power_of_two_arrays(codegen_vector_width):
    """x ** y of two float arrays compiles (loopy's vectorizability check
    raised a bare NotImplementedError for powers) and stays scalar: loopy
    computes a general power with a scalar helper function; x ** 2 becomes
    x * x and runs on vectors."""
    x = ft.make_placeholder("x", (N,), np.float64)
    y = ft.make_placeholder("y", (N,), np.float64)
    f = ft.compile(x ** y + 1)
    assert _flat_width(f) == 1
    xv, yv = rng.random(N) + 0.5, rng.random(N) * 3
    np.testing.assert_allclose(f(x=xv, y=yv), xv ** yv + 1, rtol=1e-13)
    square = ft.compile(x ** 2 + y)
    assert _flat_width(square) == codegen_vector_width
    np.testing.assert_allclose(square(x=xv, y=yv), xv ** 2 + yv, rtol=1e-14)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_trigonometry_of_small_values_next_to_large_ones(dtype):
    """float32 sin, cos and tan on vectors whose lanes mix small and large
    arguments: PoCL 3.0 computed the small lanes wrong (sin(0.001) =
    0.008) at every vector width, which the device probe now finds."""
    x = ft.make_placeholder("x", (N,), dtype)
    xv = np.full(N, 0.5, dtype)
    xv[0::4] = 10.0 ** -(np.arange(N // 4) % 6)
    xv[1::4] = 1e10
    xv[3::8] = -3e7
    f = ft.compile(ft.make_dict_of_named_arrays(
        {"sin": ft.sin(x), "cos": ft.cos(x), "tan": ft.tan(x)}))
    got = f(x=xv)
    small = np.abs(xv) < 1
    for name, fn in (("sin", np.sin), ("cos", np.cos), ("tan", np.tan)):
        np.testing.assert_allclose(got[name][small], fn(xv)[small],
                                   rtol=4 * np.finfo(dtype).eps, err_msg=name)
