# SPDX-License-Identifier: MIT
"""Input forms the compiled program accepts."""

import numpy as np
import pytest

import ftlazy as ft


def test_numpy_scalars_bind_0d_placeholders():
    c = ft.make_placeholder("c", (), np.float64)
    x = ft.make_placeholder("x", (4,), np.float64)
    f = ft.compile(c * x)
    for value in (np.float64(2.0), 2.0, np.array(2.0)):
        np.testing.assert_array_equal(f(c=value, x=np.ones(4)), np.full(4, 2.0))


def test_rebuilt_dag_with_same_names_skips_canonicalization():
    def build():
        x = ft.make_placeholder("x", (5,), np.float64)
        return ft.sin(x) * 2 + 1

    f1 = ft.compile(build())
    f2 = ft.compile(build())
    assert f2.from_cache
    assert f2.program.canon is f1.program.canon
    np.testing.assert_allclose(f2(x=np.ones(5)), np.sin(1) * 2 + 1)


def _many_small_inputs(count: int) -> tuple[ft.Array, dict, np.ndarray]:
    """A sum over *count* small inputs of shapes (), (3,) and (2, 3),
    broadcast against a large one; its inputs and its value."""
    rng = np.random.default_rng(5)
    shapes = [(), (3,), (2, 3)]
    x = ft.make_placeholder("x", (2, 3), np.float64)
    inputs = {"x": rng.uniform(-1, 1, (2, 3))}
    lazy, expected = x, inputs["x"]
    for k in range(count):
        shape = shapes[k % 3]
        lazy = lazy + ft.make_placeholder(f"s{k}", shape, np.float64) * k
        inputs[f"s{k}"] = value = rng.uniform(-1, 1, shape)
        expected = expected + value * k
    return lazy, inputs, expected


def test_a_thousand_small_inputs_travel_packed():
    """OpenCL caps a kernel's parameter size: 1,000 small inputs become one
    packed argument."""
    lazy, inputs, expected = _many_small_inputs(1000)
    f = ft.compile(lazy)
    header = f.source[f.source.index("ftlazy_kernel("):f.source.index(")\n")]
    assert header.count("__global") < 5
    np.testing.assert_allclose(f(**inputs), expected, rtol=1e-12)


def test_packed_inputs_from_device_arrays():
    """Device arrays (and a mix with numpy arrays) are packed on the device;
    the result is the same."""
    import pyopencl.array as cla

    from ftlazy.target.loopy.device import default_queue

    queue = default_queue()
    lazy, inputs, expected = _many_small_inputs(40)
    prg = ft.generate_loopy(lazy)
    assert prg.artifact.packs
    for every in (1, 2):  # all on the device, then every other one
        mixed = {name: cla.to_device(queue, value)
                 if k % every == 0 else value
                 for k, (name, value) in enumerate(sorted(inputs.items()))}
        _, (out,) = prg(queue, **mixed)
        out = out.get() if isinstance(out, cla.Array) else out
        np.testing.assert_allclose(out, expected, rtol=1e-12)


def _device_pack_case(queue):
    """40 small float64 inputs, 20 bool ones, as device arrays: some are
    views into a larger device array (a nonzero offset)."""
    import pyopencl.array as cla

    rng = np.random.default_rng(9)
    lazy, inputs, expected = _many_small_inputs(40)
    flags = rng.uniform(size=(20, 3)) > 0.5
    for k in range(20):
        flag = ft.make_placeholder(f"b{k}", (3,), np.bool_)
        lazy = lazy + ft.where(flag, 1.0, 0.0)
        inputs[f"b{k}"] = flags[k]
        expected = expected + flags[k]
    big = cla.to_device(queue, np.concatenate([[7.0, 7.0], inputs["s1"]]))
    device = {name: cla.to_device(queue, value) for name, value in inputs.items()}
    device["s1"] = big[2:]              # (a view: offset 2 doubles)
    return lazy, device, expected


@pytest.mark.parametrize("refused", [False, True])
def test_device_inputs_packed_by_a_kernel_or_copies(monkeypatch, refused):
    """Small device inputs are packed on the device by pack kernels (see
    ``packing``), one per 64 members; where a device's compiler refused
    the kernel, by one copy each; the same result either way."""
    import pyopencl.array as cla

    from ftlazy.target.loopy import packing
    from ftlazy.target.loopy.device import default_queue

    queue = default_queue()
    launched = []
    build = packing._pack_kernel.__wrapped__

    def counted(context, dtype, layout):
        launched.append(len(layout))
        return None if refused else build(context, dtype, layout)
    monkeypatch.setattr(packing, "_pack_kernel", counted)
    lazy, device, expected = _device_pack_case(queue)
    prg = ft.generate_loopy(lazy)
    assert len(prg.artifact.packs) == 2       # (float64 and bool)
    _, (out,) = prg(queue, **device)
    out = out.get() if isinstance(out, cla.Array) else out
    np.testing.assert_allclose(out, expected, rtol=1e-12)
    # (one kernel per pack: x, 40 small float64 inputs; 20 bool ones)
    assert sorted(launched) == sorted(
        len(members) for members in prg.artifact.packs.values()) == [20, 41]


def test_pack_kernel_source_writes_the_layout():
    from ftlazy.target.loopy.packing import pack_source
    source = pack_source("double", ((1, 0, 0), (3, 1, 2)))
    assert "__global double const *a0, __global double const *a1)" in source
    assert "if (e < 1) out[0 + e] = a0[0 + e];" in source
    assert "if (e < 3) out[1 + e] = a1[2 + e];" in source
    assert "cl_khr_fp64" in source
    assert "cl_khr_fp64" not in pack_source("char", ((2, 0, 0),))


def test_pack_kernels_copy_in_chunks():
    import pyopencl.array as cla

    from ftlazy.target.loopy.device import default_queue
    from ftlazy.target.loopy.packing import MEMBERS_PER_KERNEL, copy_into_pack

    queue = default_queue()
    count = 2 * MEMBERS_PER_KERNEL + 3       # (three kernels)
    members = [(cla.to_device(queue, np.full(k % 4 + 1, float(k))), 10 * k)
               for k in range(count)]
    packed = cla.zeros(queue, 10 * count, np.float64)
    assert copy_into_pack(queue, packed, members) == []
    want = np.zeros(10 * count)
    for k in range(count):
        want[10 * k:10 * k + k % 4 + 1] = k
    np.testing.assert_array_equal(packed.get(), want)


def test_device_arrays_of_another_context_are_refused_by_name():
    # (a buffer of another OpenCL context cannot be read by the compiled
    # program's kernels: a ValueError naming the input, not pyopencl's
    # INVALID_CONTEXT from the launch; 40 inputs travel packed)
    import pyopencl as cl
    import pyopencl.array as cla

    from ftlazy.target.loopy.device import default_queue

    default = default_queue()
    other = cl.CommandQueue(cl.Context(default.context.devices))
    p = ft.make_placeholder("p", (2, 3), np.float32)
    data = np.ones((2, 3), np.float32)
    foreign = cla.to_device(other, data)
    with pytest.raises(ValueError, match="input 'p' is a pyopencl array of "
                       "another OpenCL context"):
        ft.compile(p + 1)(p=foreign)
    with pytest.raises(ValueError, match="ft.make_data_wrapper"):
        ft.compile(ft.make_data_wrapper(foreign) * 2)()
    lazy, inputs, _ = _many_small_inputs(40)
    name = sorted(inputs)[3]
    with pytest.raises(ValueError, match=f"input '{name}' is a pyopencl"):
        ft.compile(lazy)(**inputs | {name: cla.to_device(other, inputs[name])})
    # (compiled for that context, it runs)
    got = ft.compile(p + 1, queue=other)(p=foreign)
    np.testing.assert_array_equal(got.get() if hasattr(got, "get") else got,
                                  data + 1)
