# SPDX-License-Identifier: MIT
"""Assertions shared by the front-end tests."""

import numpy as np

import ftlazy as ft


def check(lazy, expected, rtol=None, **inputs):
    """``ft.evaluate_numpy(lazy, **inputs)`` equals *expected* (computed with
    numpy) in shape, dtype and values: exactly, or within *rtol* for floats
    when given."""
    result = ft.evaluate_numpy(lazy, **inputs)
    expected = np.asarray(expected)
    assert len(lazy.shape) == expected.ndim
    assert all(d == e for d, e in zip(lazy.shape, expected.shape)
               if isinstance(d, int))
    assert result.dtype == expected.dtype == lazy.dtype
    if rtol is not None and expected.dtype.kind in "fc":
        np.testing.assert_allclose(result, expected, rtol=rtol, atol=rtol / 10)
    else:
        np.testing.assert_array_equal(result, expected)


#: length distributions of jagged test batches (empty sequences, an empty
#: batch, all-empty batches)
JAGGED_LENGTHS = {
    "mixed": (3, 0, 2, 5, 1),
    "nonempty": (3, 2, 5, 1),
    "empty_batch": (),
    "all_empty": (0, 0),
}


def compile_on_host(result, match, loops=1):
    """``ft.compile(result)`` for a program one of whose loops does not
    lower to kernels: it warns with :class:`ft.HostEvaluationWarning`
    (matching *match*, the refusal), names *loops* loops in
    ``host_evaluated``, and with the warning as an error refuses."""
    import warnings

    import pytest

    with pytest.warns(ft.HostEvaluationWarning, match=match):
        compiled = ft.compile(result)
    assert len(compiled.host_evaluated) == loops, compiled.host_evaluated
    with warnings.catch_warnings():
        warnings.simplefilter("error", ft.HostEvaluationWarning)
        with pytest.raises(ft.HostEvaluationWarning, match=match):
            ft.compile(result)
    return compiled


def nested_close(got, want, rtol=1e-12, atol=1e-12):
    """*got* (nested lists of arrays, as ``JaggedArray.tolist()`` gives)
    equal to *want* level by level, its arrays within the tolerances."""
    if isinstance(want, list):
        assert len(got) == len(want)
        for g, w in zip(got, want):
            nested_close(g, w, rtol, atol)
    else:
        np.testing.assert_allclose(np.reshape(got, np.shape(want)), want,
                                   rtol=rtol, atol=atol)
