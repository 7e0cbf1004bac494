# SPDX-License-Identifier: MIT
"""numpy's ``__array_ufunc__`` and ``__array_function__`` on lazy arrays:
numpy calls build lazy nodes through the matching ``ft`` function, and
whatever cannot be done lazily is a TypeError naming the numpy function
(``np.sum(row)`` in a map body used to fail with ``Array.sum() got an
unexpected keyword argument 'out'``)."""

import numpy as np
import pytest

import ftlazy as ft
from ftlazy.analysis import get_inputs
from ftlazy.ops.interop import supported_functions, supported_ufuncs

F64 = np.float64
x = ft.make_placeholder("x", (3,), F64)
A = ft.make_placeholder("A", (2, 3), F64)
XV = np.array([0.5, -1.0, 2.0])
AV = np.arange(6.0).reshape(2, 3) - 2.5


def _eval(lazy):
    assert isinstance(lazy, ft.Array)
    values = {"x": XV, "A": AV}
    return ft.evaluate_numpy(lazy, **{p.name: values[p.name]
                                      for p in get_inputs(lazy)
                                      if isinstance(p, ft.Placeholder)})


# {{{ functions

def test_sum_with_axis():
    result = np.sum(A, axis=0)
    assert result.shape == (3,)
    np.testing.assert_allclose(_eval(result), AV.sum(axis=0))
    np.testing.assert_allclose(_eval(np.sum(A, 1, keepdims=True)),
                               AV.sum(axis=1, keepdims=True))
    assert np.sum(A, dtype=np.float32).dtype == np.float32


def test_sum_in_a_map_body():
    result = ft.map(lambda row: np.sum(row) + np.max(row), A)
    np.testing.assert_allclose(_eval(result), AV.sum(axis=1) + AV.max(axis=1))


@pytest.mark.parametrize(("call", "reference"), [
    (lambda a: np.max(a, axis=1), lambda v: np.max(v, axis=1)),
    (lambda a: np.amin(a), lambda v: np.amin(v)),
    (lambda a: np.mean(a, axis=0, keepdims=True),
     lambda v: np.mean(v, axis=0, keepdims=True)),
    (lambda a: np.var(a, ddof=1), lambda v: np.var(v, ddof=1)),
    (lambda a: np.var(a, correction=1), lambda v: np.var(v, ddof=1)),
    (lambda a: np.std(a, axis=0, ddof=1), lambda v: np.std(v, axis=0, ddof=1)),
    (lambda a: np.std(a, correction=1), lambda v: np.std(v, ddof=1)),
    (lambda a: np.prod(a, axis=1), lambda v: np.prod(v, axis=1)),
    (lambda a: np.any(a > 0, axis=0), lambda v: np.any(v > 0, axis=0)),
    (lambda a: np.reshape(a, (3, 2), order="F"),
     lambda v: np.reshape(v, (3, 2), order="F")),
    (lambda a: np.transpose(a), lambda v: np.transpose(v)),
    (lambda a: np.swapaxes(a, 0, 1), lambda v: np.swapaxes(v, 0, 1)),
    (lambda a: np.expand_dims(a, 1), lambda v: np.expand_dims(v, 1)),
    (lambda a: np.roll(a, 1, axis=1), lambda v: np.roll(v, 1, axis=1)),
    (lambda a: np.concatenate([a, np.ones((1, 3))]),
     lambda v: np.concatenate([v, np.ones((1, 3))])),
    (lambda a: np.stack([a, a], axis=2), lambda v: np.stack([v, v], axis=2)),
    (lambda a: np.where(np.greater(a, 0), a, 0.0), lambda v: np.where(v > 0, v, 0.0)),
    (lambda a: np.clip(a, -1, 1), lambda v: np.clip(v, -1, 1)),
    (lambda a: np.clip(a, min=0), lambda v: np.clip(v, min=0)),
    (lambda a: np.einsum("ij,kj->ik", a, a, optimize=True),
     lambda v: np.einsum("ij,kj->ik", v, v)),
    (lambda a: np.dot(a, np.ones(3)), lambda v: np.dot(v, np.ones(3))),
    (lambda a: np.tensordot(a, a, axes=([1], [1])),
     lambda v: np.tensordot(v, v, axes=([1], [1]))),
    (lambda a: np.take(a, [2, 0], axis=1), lambda v: np.take(v, [2, 0], axis=1)),
    (lambda a: np.zeros_like(a, dtype=np.int32), lambda v: np.zeros_like(v, np.int32)),
    (lambda a: np.full_like(a, 7.0), lambda v: np.full_like(v, 7.0)),
    (lambda a: np.broadcast_to(a[0], (4, 3)), lambda v: np.broadcast_to(v[0], (4, 3))),
    (lambda a: np.astype(a, np.float32), lambda v: np.astype(v, np.float32)),
    (lambda a: np.trace(a[:, :2]), lambda v: np.trace(v[:, :2])),
])
def test_functions_match_numpy(call, reference):
    result = call(A)
    expected = reference(AV)
    got = _eval(result)
    assert got.dtype == expected.dtype and got.shape == expected.shape
    np.testing.assert_allclose(got, expected)


def test_shape_ndim_and_result_type():
    assert np.shape(A) == (2, 3)
    assert np.ndim(A) == 2
    assert np.result_type(A, np.float32) == np.float64
    assert np.result_type(A.astype(np.float32), 1.0) == np.float32


@pytest.mark.parametrize(("call", "message"), [
    (lambda: np.sum(x, out=np.zeros(())), r"numpy\.sum\(\.\.\., out=\.\.\.\) is not "
     "supported on ftlazy arrays"),
    (lambda: np.mean(x, axis=0, out=np.zeros(())), r"numpy\.mean\(\.\.\., out="),
    (lambda: np.sum(x, initial=1.0),
     r"numpy\.sum: the argument initial=1\.0 is not supported on ftlazy arrays "
     r"\(ft\.sum has no 'initial'\)"),
    (lambda: np.max(x, where=np.array([True, False, True]), initial=0.0),
     r"numpy\.max: the argument (where|initial)="),
    (lambda: np.take(A, [0], axis=1, mode="clip"), r"numpy\.take: the argument "
     r"mode='clip'"),
    (lambda: np.zeros_like(A, shape=(4,)), r"numpy\.zeros_like: the argument "
     r"shape=\(4,\)"),
    (lambda: np.einsum("i->", x, dtype=np.float32), r"numpy\.einsum: the argument "
     "dtype="),
    (lambda: np.clip(x, 0, 1, min=0), r"numpy\.clip: 'a_min' and 'min' give the "
     "same argument"),
    (lambda: np.where(x), r"numpy\.where\(condition\) with one argument .*use "
     r"ft\.where\(condition, x, y\)"),
    (lambda: np.unique(x), r"numpy\.unique is not supported on ftlazy arrays; "
     "ftlazy has no equivalent"),
    (lambda: np.linalg.norm(x), r"numpy\.linalg\.norm is not supported on ftlazy "
     "arrays"),
    (lambda: np.sort(x, order="a"), r"numpy\.sort.*order"),
    (lambda: np.trapezoid(x), r"numpy\.trapezoid is not supported"),
])
def test_unsupported_function_arguments_name_the_function(call, message):
    with pytest.raises(TypeError, match=message):
        call()


def test_extrema_take_initial_as_ft_amax_does():
    # (np.max(x, initial=...) said ft.amax had no 'initial')
    data = np.array([1.0, 5.0, 3.0])
    for lazy, want in ((np.max(x, initial=10.0), 10.0),
                       (np.amax(x, initial=2.0), 5.0),
                       (np.min(x, initial=-1.0), -1.0),
                       (np.amin(x, axis=0, initial=4.0), 1.0)):
        assert ft.evaluate_numpy(lazy, x=data) == want


def test_numpys_repeat_is_not_pointed_to_ft_repeat():
    # (ft.repeat makes a list of copies: the hint was wrong)
    with pytest.raises(TypeError, match=r"numpy\.repeat is not supported on "
                       r"ftlazy arrays; ft\.repeat\(x, n\) is not numpy's repeat"):
        np.repeat(x, 2)


def test_unsupported_function_with_an_ftlazy_name_points_to_it():
    # like= dispatches numpy's creation functions to the lazy array
    with pytest.raises(TypeError, match=r"numpy\.arange is not supported on "
                                        r"ftlazy arrays; use ft\.arange$"):
        np.arange(3, like=x)


def test_supported_function_table_calls_existing_ft_functions():
    from ftlazy.ops.interop import _translations
    for func, translation in _translations().items():
        assert callable(translation.function()), func
    assert np.sum in supported_functions() and np.unique not in supported_functions()

# }}}


# {{{ ufuncs

def test_ufunc_then_python_operator():
    result = np.exp(x) + 1
    assert isinstance(result, ft.Array)
    np.testing.assert_allclose(_eval(result), np.exp(XV) + 1)


@pytest.mark.parametrize("ufunc", [
    np.add, np.subtract, np.multiply, np.true_divide, np.floor_divide, np.power,
    np.maximum, np.minimum, np.equal, np.not_equal, np.less, np.less_equal,
    np.greater, np.greater_equal, np.arctan2, np.remainder, np.logical_and])
def test_binary_ufuncs_mixing_numpy_arrays(ufunc):
    other = np.array([1.5, 2.0, -3.0])
    for args, ref in (((other, x), (other, XV)), ((x, other), (XV, other)),
                      ((x, 2), (XV, 2))):
        result = ufunc(*args)
        assert isinstance(result, ft.Array), ufunc
        expected = ufunc(*ref)
        got = _eval(result)
        assert got.dtype == expected.dtype
        np.testing.assert_allclose(got, expected)


@pytest.mark.parametrize("ufunc", [
    np.negative, np.exp, np.log, np.sin, np.cos, np.tanh, np.sqrt, np.abs,
    np.absolute, np.square, np.sign, np.floor, np.isnan, np.positive, np.conjugate])
def test_unary_ufuncs(ufunc):
    positive = ft.make_placeholder("p", (3,), F64)
    pv = np.array([0.5, 1.0, 2.0])
    np.testing.assert_allclose(ft.evaluate_numpy(ufunc(positive), p=pv), ufunc(pv))


def test_numpy_array_operators_build_lazy_nodes():
    other = np.array([1.0, 2.0, 3.0])
    for result, expected in ((other + x, other + XV), (other * x, other * XV),
                             (other ** x, other ** XV), (other / x, other / XV),
                             (np.float64(2) * x, 2 * XV), (other < x, other < XV),
                             (np.eye(3) @ x, np.eye(3) @ XV)):
        assert isinstance(result, ft.Array)
        np.testing.assert_allclose(_eval(result), expected)


def test_numpy_operand_on_the_left_of_equality_compares_elementwise():
    # numpy's own == calls np.equal, which builds a lazy comparison; only
    # an ftlazy array on the left makes == structural (and refuses values)
    other = np.array([0.5, 0.0, 2.0])
    np.testing.assert_array_equal(_eval(other == x), other == XV)
    with pytest.raises(TypeError, match="ft.equal"):
        x == other  # noqa: B015


def test_adding_a_list_converts_it():
    np.testing.assert_allclose(_eval(np.add([1.0, 2.0, 3.0], x)), XV + [1, 2, 3])


def test_ufunc_out_and_inplace_are_errors():
    with pytest.raises(TypeError, match=r"numpy\.exp\(\.\.\., out=\.\.\.\) is not "
                                        "supported on ftlazy arrays"):
        np.exp(x, out=np.zeros(3))
    target = np.zeros(3)
    with pytest.raises(TypeError, match=r"numpy\.add\(\.\.\., out=.*numpy_array "
                                        r"\+= lazy_array"):
        target += x


def test_ufunc_keywords_and_methods_are_errors_naming_them():
    with pytest.raises(TypeError, match=r"numpy\.exp: the keyword argument "
                                        "dtype=.* is not supported"):
        np.exp(x, dtype=np.float32)
    with pytest.raises(TypeError, match=r"numpy\.add\.reduce is not supported on "
                                        r"ftlazy arrays.*use ft\.sum"):
        np.add.reduce(x)
    with pytest.raises(TypeError, match=r"numpy\.maximum\.accumulate is not "
                                        "supported"):
        np.maximum.accumulate(x)
    with pytest.raises(TypeError, match=r"numpy\.log1p is not supported on ftlazy "
                                        "arrays"):
        np.log1p(x)
    # harmless keywords at their defaults are accepted
    assert isinstance(np.exp(x, where=True, casting="same_kind"), ft.Array)


def test_supported_ufuncs_cover_ftlazys_elementwise_functions():
    table = supported_ufuncs()
    assert table[np.add] is ft.add and table[np.matmul] is ft.matmul
    assert table[np.absolute] is ft.absolute and table[np.invert] is ft.invert
    assert np.log1p not in table

# }}}


def test_asarray_of_a_lazy_array_is_an_error():
    for convert in (np.asarray, np.array, lambda a: np.array([a, a])):
        with pytest.raises(TypeError, match=r"cannot convert the lazy array .* it "
                                            r"has no values until it is evaluated; "
                                            r"use ft\.evaluate_numpy"):
            convert(x)

# vim: foldmethod=marker
