# SPDX-License-Identifier: MIT
"""The reference evaluator's input handling."""

import numpy as np
import pytest

import ftlazy as ft

n = ft.make_size_param("n")
x = ft.make_placeholder("x", (n, 3), np.float64)
y = ft.make_placeholder("y", (2 * n + 1,), np.float64)
expr = ft.sum(x, axis=1) + y[:n] * n


def test_size_params_inferred_and_used_as_values():
    xv, yv = np.ones((4, 3)), np.arange(9.0)
    np.testing.assert_allclose(ft.evaluate_numpy(expr, x=xv, y=yv),
                               3 + yv[:4] * 4)
    np.testing.assert_allclose(ft.evaluate_numpy(expr, x=xv, y=yv, n=4),
                               3 + yv[:4] * 4)


def test_missing_input():
    with pytest.raises(ValueError, match="missing input.*'y'"):
        ft.evaluate_numpy(expr, x=np.ones((4, 3)))


def test_extra_input():
    with pytest.raises(ValueError, match="unexpected input.*'z'"):
        ft.evaluate_numpy(expr, x=np.ones((4, 3)), y=np.ones(9), z=1)


def test_mis_shaped_input():
    with pytest.raises(ValueError, match=r"input 'y' has shape \(8,\).*2\*n \+ 1"):
        ft.evaluate_numpy(expr, x=np.ones((4, 3)), y=np.ones(8))
    with pytest.raises(ValueError, match=r"input 'x' has shape \(4, 2\)"):
        ft.evaluate_numpy(expr, x=np.ones((4, 2)), y=np.ones(9))
    with pytest.raises(ValueError, match="input 'x' has shape"):
        ft.evaluate_numpy(expr, x=np.ones(4), y=np.ones(9))


def test_contradictory_size_param():
    with pytest.raises(ValueError, match=r"'x' has shape \(4, 3\), expected "
                       r"\(n, 3\) = \(5, 3\)"):
        ft.evaluate_numpy(expr, x=np.ones((4, 3)), y=np.ones(9), n=5)


def test_mis_typed_input():
    with pytest.raises(TypeError,
                       match="input .x. has dtype float32, expected float64"):
        ft.evaluate_numpy(expr, x=np.ones((4, 3), np.float32), y=np.ones(9))
    with pytest.raises(TypeError, match="size parameter 'n' must be an int"):
        ft.evaluate_numpy(expr, x=np.ones((4, 3)), y=np.ones(9), n=4.0)


def test_uninferable_size_param():
    m = ft.make_size_param("m")
    z = ft.zeros((m,))
    with pytest.raises(ValueError, match="'m' cannot be inferred"):
        ft.evaluate_numpy(z)
    assert ft.evaluate_numpy(z, m=3).shape == (3,)


def test_duplicate_placeholder_names_with_different_shapes():
    a = ft.make_placeholder("a", (3,), np.float64)
    b = ft.make_placeholder("a", (3,), np.float32)
    # direct operands are checked when the node is built ...
    with pytest.raises(ValueError, match="two different inputs are named 'a'"):
        a + b
    # ... the whole DAG when it is evaluated
    with pytest.raises(ValueError, match="two different inputs are named 'a'"):
        ft.evaluate_numpy(a + b[:2].sum(), a=np.ones(3))


def test_negative_shape_at_runtime():
    s = x[2:]
    with pytest.raises(ValueError, match="negative"):
        ft.evaluate_numpy(s, x=np.ones((1, 3)))


def test_dict_of_named_arrays():
    d = ft.make_dict_of_named_arrays({"s": ft.sum(x), "t": 2 * x})
    out = ft.evaluate_numpy(d, x=np.ones((2, 3)))
    assert set(out) == {"s", "t"}
    assert out["s"] == 6.0
    with pytest.raises(TypeError, match="'s' is not an array or a "
                       "FractalTensor: int"):
        ft.make_dict_of_named_arrays({"s": 3})
    with pytest.raises(TypeError, match="mapping"):
        ft.make_dict_of_named_arrays([x])


def test_evaluate_rejects_non_arrays():
    with pytest.raises(TypeError, match="Array or DictOfNamedArrays"):
        ft.evaluate_numpy(np.ones(3))


@pytest.mark.parametrize("name", ["result", "self", "inputs"])
def test_inputs_may_be_named_like_the_evaluators_parameters(name):
    a = ft.make_placeholder(name, (3,), np.float64)
    out = ft.evaluate_numpy(2 * a, **{name: np.arange(3.0)})
    np.testing.assert_array_equal(out, [0.0, 2.0, 4.0])


def test_size_param_named_result():
    result = ft.make_size_param("result")
    z = ft.make_placeholder("z", (result,), np.float64)
    assert ft.evaluate_numpy(ft.sum(z) + result, result=2, z=np.ones(2)) == 4.0


def test_result_is_positional_only():
    with pytest.raises(TypeError, match="positional"):
        ft.evaluate_numpy(result=x)


def test_a_plain_dict_of_results_as_compile_takes_it():
    # (a fold with a dict carry returns one)
    x = ft.make_placeholder("x", (3, 2), np.float64)
    data = np.arange(6.0).reshape(3, 2)
    folded = ft.fold(lambda c, row: {"s": c["s"] + row, "n": c["n"] + 1}, x,
                     {"s": ft.zeros(2), "n": ft.zeros((), np.int64)})
    for run in (lambda r: ft.evaluate_numpy(r, x=data),
                lambda r: ft.compile(r)(x=data)):
        got = run(folded)
        np.testing.assert_array_equal(got["s"], data.sum(axis=0))
        assert got["n"] == 3
        assert set(run({"a": x * 2, "b": ft.sum(x)})) == {"a", "b"}
    with pytest.raises(TypeError, match="evaluate_numpy: result 'a' is not "
                       "an array"):
        ft.evaluate_numpy({"a": 3}, x=data)
    # (ft.compile's functions all say which loops run on the host)
    assert ft.compile(x * 2).host_evaluated == ()
