# SPDX-License-Identifier: MIT
"""Call-time errors of compiled programs (missing, extra, mis-shaped and
mis-typed inputs, contradictory size params), :func:`ft.generate_loopy`'s
options, and device-array inputs. One program serves every error test."""

from __future__ import annotations

import re

import numpy as np
import pyopencl.array as cla
import pytest

import ftlazy as ft
from ftlazy.target.loopy.device import default_queue

N = ft.make_size_param("n")
X = ft.make_placeholder("x", (N, 3), np.float64)
Y = ft.make_placeholder("y", (N,), np.float64)
B = ft.make_placeholder("b", (N,), np.bool_)
RESULTS = ft.make_dict_of_named_arrays({
    "scaled": X * 2, "shifted": Y + 1, "masked": ft.where(B, Y, 0.0),
    "total": ft.sum(X)})


def _good(n: int = 4) -> dict[str, np.ndarray]:
    return {"x": np.arange(3.0 * n).reshape(n, 3), "y": np.arange(float(n)),
            "b": np.arange(n) % 2 == 0}


@pytest.fixture(scope="module")
def program():
    return ft.compile(RESULTS)


def test_good_call(program) -> None:
    out = program(**_good())
    np.testing.assert_array_equal(out["scaled"], _good()["x"] * 2)
    np.testing.assert_array_equal(out["masked"], [0.0, 0.0, 2.0, 0.0])
    assert out["total"] == _good()["x"].sum()


def test_missing_input(program) -> None:
    inputs = _good()
    del inputs["y"]
    with pytest.raises(ValueError, match=r"missing input.*'y'"):
        program(**inputs)


def test_extra_input(program) -> None:
    with pytest.raises(ValueError, match=r"unexpected input.*'z'"):
        program(**_good(), z=np.ones(3))


def test_wrong_shape(program) -> None:
    inputs = _good()
    inputs["x"] = np.ones((4, 2))
    with pytest.raises(ValueError, match=re.escape(
            "input 'x' has shape (4, 2), expected (n, 3)")):
        program(**inputs)


def test_wrong_ndim(program) -> None:
    inputs = _good()
    inputs["x"] = np.ones(4)
    with pytest.raises(ValueError, match=re.escape(
            "input 'x' has shape (4,), expected (n, 3)")):
        program(**inputs)


@pytest.mark.parametrize(("name", "dtype"), [("x", np.float32), ("x", np.int64),
                                             ("b", np.int8), ("y", np.complex128)])
def test_wrong_dtype(program, name: str, dtype: type) -> None:
    inputs = _good()
    inputs[name] = inputs[name].astype(dtype)
    declared = {"x": "float64", "y": "float64", "b": "bool"}[name]
    with pytest.raises(TypeError, match=re.escape(
            f"input '{name}' has dtype {np.dtype(dtype)}, expected {declared}")):
        program(**inputs)


def test_contradictory_shapes(program) -> None:
    """x says n = 4, y says n = 5: the message names the input and both
    shapes."""
    inputs = _good()
    inputs["y"] = np.ones(5)
    with pytest.raises(ValueError, match=re.escape(
            "input 'y' has shape (5,), expected (n,) = (4,)")):
        program(**inputs)


def test_contradictory_size_param(program) -> None:
    with pytest.raises(ValueError, match=re.escape(
            "input 'x' has shape (4, 3), expected (n, 3) = (5, 3)")):
        program(**_good(), n=5)


def test_consistent_size_param_is_accepted(program) -> None:
    out = program(**_good(), n=4)
    np.testing.assert_array_equal(out["shifted"], np.arange(4.0) + 1)


@pytest.mark.parametrize(("value", "error", "message"), [
    (-1, ValueError, "size parameter 'n' must be non-negative, got -1"),
    (4.0, TypeError, "size parameter 'n' must be an int, got float 4.0"),
    (True, TypeError, "size parameter 'n' must be an int, got bool True"),
])
def test_bad_size_param_value(program, value, error, message) -> None:
    with pytest.raises(error, match=re.escape(message)):
        program(**_good(), n=value)


def test_unbound_size_param() -> None:
    """A size param that no input shape determines must be passed."""
    m = ft.make_size_param("m")
    f = ft.compile(ft.zeros((m, 2)) + 1)
    with pytest.raises(ValueError, match="'m' cannot be inferred"):
        f()
    np.testing.assert_array_equal(f(m=3), np.ones((3, 2)))


def test_non_contiguous_and_list_inputs(program) -> None:
    """Strided numpy arrays and nested lists are valid inputs."""
    good = _good()
    wide = np.arange(24.0).reshape(4, 6)
    reversed_y = good["y"][::-1].copy()[::-1]  # a negative-stride view
    out = program(x=wide[:, ::2], y=reversed_y, b=list(good["b"]))
    np.testing.assert_array_equal(out["scaled"], wide[:, ::2] * 2)
    np.testing.assert_array_equal(out["masked"], np.where(good["b"], good["y"], 0))


def test_python_scalar_for_0d_input() -> None:
    s = ft.make_placeholder("s", (), np.float64)
    out = ft.compile(s * 2)(s=1.5)
    assert out.shape == () and out == 3.0


def test_numpy_scalars_for_0d_inputs() -> None:
    s = ft.make_placeholder("s", (), np.float64)
    flag = ft.make_placeholder("flag", (), np.bool_)
    f = ft.compile(ft.where(flag, s * 2, s))
    out = f(s=np.float64(1.5), flag=np.True_)
    assert out.shape == () and out == 3.0
    assert f(s=np.float64(1.5), flag=np.False_) == 1.5


def test_generate_loopy_rejects_options() -> None:
    with pytest.raises(TypeError, match="options"):
        ft.generate_loopy(RESULTS, options={"unroll": True})


def test_compile_rejects_non_arrays() -> None:
    with pytest.raises(TypeError, match="list"):
        ft.compile([X])


# {{{ generate_loopy with device arrays

def test_device_arrays_in_device_arrays_out(program) -> None:
    """Device inputs give device outputs; the program shares the compiled
    artifact with :func:`ft.compile`."""
    queue = default_queue()
    prg = ft.generate_loopy(RESULTS)
    assert ft.generate_loopy(RESULTS).artifact is prg.artifact
    good = _good()
    _, out = prg(queue, **{k: cla.to_device(queue, v) for k, v in good.items()})
    assert set(out) == {"scaled", "shifted", "masked", "total"}
    for value in out.values():
        assert isinstance(value, cla.Array)
    assert out["masked"].dtype == np.float64
    assert out["total"].shape == ()
    np.testing.assert_array_equal(out["scaled"].get(), good["x"] * 2)
    np.testing.assert_array_equal(out["masked"].get(), [0.0, 0.0, 2.0, 0.0])
    assert out["total"].get() == good["x"].sum()


def test_compile_for_another_context() -> None:
    """A queue of another context shares the translation unit and gets an
    executor of its own."""
    import pyopencl as cl
    queue = cl.CommandQueue(cl.Context([default_queue().device]))
    f = ft.compile(ft.logical_not(B) & (Y > 1), queue=queue)
    out = f(b=np.array([True, False, False]), y=np.array([3.0, 3.0, 0.0]))
    np.testing.assert_array_equal(out, [False, True, False])


def test_device_bool_output() -> None:
    queue = default_queue()
    prg = ft.generate_loopy(ft.logical_not(B))
    _, (out,) = prg(queue, b=cla.to_device(queue, np.array([True, False])))
    assert isinstance(out, cla.Array) and out.dtype == np.bool_
    np.testing.assert_array_equal(out.get(), [False, True])


def test_host_arrays_give_host_outputs() -> None:
    queue = default_queue()
    prg = ft.generate_loopy(ft.logical_not(B))
    _, (out,) = prg(queue, b=np.array([True, False]))
    assert isinstance(out, np.ndarray)
    np.testing.assert_array_equal(out, [False, True])


def test_device_array_wrong_dtype() -> None:
    queue = default_queue()
    prg = ft.generate_loopy(ft.logical_not(B))
    with pytest.raises(TypeError, match="input 'b' has dtype float64, expected bool"):
        prg(queue, b=cla.to_device(queue, np.ones(2)))


def test_program_attributes() -> None:
    import loopy as lp
    prg = ft.generate_loopy(ft.logical_not(B))
    assert isinstance(prg.program, lp.TranslationUnit)
    assert "__kernel" in prg.source
    bound = prg.bind_to_context(default_queue().context)
    _, (out,) = bound(default_queue(), b=np.array([False]))
    np.testing.assert_array_equal(out, [True])

# }}}


def test_compile_rejects_a_queue_that_is_not_one() -> None:
    with pytest.raises(TypeError, match="queue must be a pyopencl.CommandQueue, "
                                        "got str 'gpu0'"):
        ft.compile(Y + 1, queue="gpu0")
