# SPDX-License-Identifier: MIT
"""Input forms the compiled program accepts."""

import numpy as np

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
