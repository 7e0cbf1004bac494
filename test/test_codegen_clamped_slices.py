# SPDX-License-Identifier: MIT
"""Slices that Python clamps, on axes of symbolic length (``x[:5]``,
``x[-2:]``, ``x[::2]``): their lengths are data-dependent sizes. Checked
against numpy through the reference evaluator and OpenCL, on every profile
flavour (conftest.py), on dense arrays and on the elements of a map over a
FractalTensor; one compiled program serves every length, and nothing runs
on the host."""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pymbolic.primitives as prim
import pytest
from pymbolic import evaluate

import ftlazy as ft
from ftlazy.ops.clamped_slices import _canonical_count
from helpers import compile_on_host

H = 3
RNG = np.random.default_rng(5)
LENGTHS = (0, 1, 2, 4, 9)

SLICES = [slice(None, 5), slice(-2, None), slice(None, None, 2),
          slice(1, None, 3), slice(None, None, -2), slice(5, None, -1),
          slice(-4, -1), slice(2, 4), slice(-1, -6, -2)]


def compile_on_device(result):
    """``ft.compile(result)``, failing if any loop runs on the host."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", ft.HostEvaluationWarning)
        return ft.compile(result)


def test_canonical_counts_are_pythons_and_unique():
    n = prim.Variable("n")
    bounds = (None, -7, -3, -1, 0, 1, 2, 5)
    forms: dict[tuple, set] = {}
    for start, stop, step in itertools.product(bounds, bounds,
                                               (1, 2, 3, -1, -2, -3)):
        s = slice(start, stop, step)
        expr = _canonical_count(n, s)
        counts = tuple(len(range(*s.indices(m))) for m in range(40))
        assert tuple(evaluate(expr, {"n": m}) for m in range(40)) == counts, s
        forms.setdefault(counts, set()).add(str(expr))
    assert all(len(f) == 1 for f in forms.values())
    assert len(forms) > 50


@pytest.mark.parametrize("s", SLICES, ids=str)
def test_dense_slices_clamp_as_numpys(s):
    n = ft.make_size_param("n")
    x = ft.make_placeholder("x", (n, H), np.float64)
    result = ft.sum(x[s] * 2, axis=1)
    f = compile_on_device(result)
    for length in LENGTHS:
        data = RNG.standard_normal((length, H))
        want = (data[s] * 2).sum(axis=1)
        np.testing.assert_allclose(ft.evaluate_numpy(result, x=data), want,
                                   rtol=1e-13)
        np.testing.assert_allclose(f(x=data), want, rtol=1e-13)


@pytest.mark.parametrize("s", [
    slice(None, 10**7), slice(None, 2**63 - 1), slice(-10**12, None),
    slice(10**30, None), slice(2**63, None), slice(-10**30, 3),
    slice(None, None, 10**9), slice(100, None, -70), slice(None, -65, 66),
    slice(3, -10**40, -1)], ids=str)
def test_bounds_beyond_every_length(s):
    # (numpy's x[:sys.maxsize]: no huge constants in the generated code, and
    # bounds past 64 are not tabulated)
    n = ft.make_size_param("n")
    x = ft.make_placeholder("x", (n, H), np.float64)
    xs = ft.make_jagged_placeholder("xs", (H,), np.float64, depth=2)
    rows = compile_on_device(x[s] * 2)
    sums = compile_on_device(ft.map(lambda e: ft.sum(e[s], axis=0), xs))
    data = [RNG.standard_normal((length, H)) for length in (0, 1, 5, 130)]
    for d in data:
        np.testing.assert_array_equal(rows(x=d), d[s] * 2)
    np.testing.assert_allclose(sums(xs=data),
                               np.array([d[s].sum(axis=0) for d in data]))


def test_clamped_slices_on_several_axes_and_with_other_indices():
    n, m = ft.make_size_param("n"), ft.make_size_param("m")
    x = ft.make_placeholder("x", (n, m), np.float64)
    result = x[:2, None, -3::2] + x[-2:, None, 1][:, :, None]
    f = compile_on_device(result)
    for shape in [(0, 2), (1, 5), (3, 2), (4, 7)]:
        data = RNG.standard_normal(shape)
        want = data[:2, None, -3::2] + data[-2:, None, 1][:, :, None]
        np.testing.assert_allclose(ft.evaluate_numpy(result, x=data), want)
        np.testing.assert_allclose(f(x=data), want)


def test_equal_counts_combine_and_different_ones_do_not():
    n = ft.make_size_param("n")
    x = ft.make_placeholder("x", (n,), np.float64)
    assert x[:2].shape == x[-2:].shape == x[0:2].shape
    summed = x[:2] + x[-2:] * x[-2::1]
    for length in (0, 1, 3):
        data = RNG.standard_normal(length)
        np.testing.assert_allclose(compile_on_device(summed)(x=data),
                                   data[:2] + data[-2:] * data[-2:])
    with pytest.raises(ValueError, match="could not be broadcast"):
        x[:2] + x[:3]


def test_strided_window_counts_combine_with_equal_slice_counts():
    # (a window count of a single length is written in the canonical form
    # of slice counts: the same function of n is the same size)
    n = ft.make_size_param("n")
    x = ft.make_placeholder("x", (n, H), np.float64)
    assert ft.slide(x, 1, stride=2).shape[0] == x[::2].shape[0]
    assert ft.slide(x, 2, stride=3).shape[0] == x[:-1:3].shape[0]
    every_other = ft.slide(x, 1, stride=2)[:, 0] + x[::2]
    # (windows of 3 every 2 rows, padded by 1: as many as rows 0, 2, ...)
    centred = ft.sum(ft.slide(x, 3, stride=2, padding=1), axis=1) - x[::2]
    f = compile_on_device(ft.make_dict_of_named_arrays(
        {"every_other": every_other, "centred": centred}))
    for length in (0, 1, 2, 5, 8):
        data = RNG.standard_normal((length, H))
        padded = np.pad(data, ((1, 1), (0, 0)))
        got = f(x=data)
        np.testing.assert_allclose(got["every_other"], data[::2] * 2)
        np.testing.assert_allclose(
            got["centred"], np.array([padded[i:i + 3].sum(axis=0)
                                      for i in range(0, length, 2)]
                                     ).reshape(-1, H) - data[::2], atol=1e-12)
    with pytest.raises(ValueError, match="could not be broadcast"):
        ft.slide(x, 2, stride=2)[:, 0] + x[::2]


def test_slices_that_need_no_clamping_keep_affine_lengths():
    n = ft.make_size_param("n")
    x = ft.make_placeholder("x", (n + 5,), np.float64)
    assert x[:5].shape == (5,)
    assert x[-2:].shape == (2,)
    assert x[1:].shape == (prim.Variable("n") + 4,)
    y = ft.make_placeholder("y", (2 * n,), np.float64)
    assert y[::2].shape == (prim.Variable("n"),)
    assert ft.make_placeholder("z", (7,), np.float64)[:9].shape == (7,)


def test_counts_after_the_first_axis_of_a_map_result_are_refused():
    xs = ft.make_jagged_placeholder("xs", (H,), np.float64, depth=2)
    with pytest.raises(ValueError, match=r"result 0 has shape \(_ft_dyn\d+, "
                       r"_ft_dyn\d+\).*only the first axis"):
        ft.map(lambda s: s[:2] @ s[:2].T, xs)
    n = ft.make_size_param("n")
    x = ft.make_placeholder("x", (n, H), np.float64)
    # (a count computed outside the body is the same for every element)
    outer = ft.map(lambda s: ft.sum(s, axis=0)[:, None] * x[:2].T, xs)
    data = [RNG.standard_normal((k, H)) for k in (0, 3)]
    xv = RNG.standard_normal((5, H))
    np.testing.assert_allclose(
        compile_on_device(outer)(xs=data, x=xv),
        np.array([d.sum(axis=0)[:, None] * xv[:2].T for d in data]))


def _batch():
    return [RNG.standard_normal((k, H)) for k in (0, 2, 7, 1, 5)]


def _nested_close(got, want):
    assert len(got) == len(want)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("s", SLICES[:6], ids=str)
def test_slices_of_each_element(s):
    xs = ft.make_jagged_placeholder("xs", (H,), np.float64, depth=2)
    rows = ft.map(lambda e: e[s] * 2, xs)
    sums = ft.map(lambda e: ft.sum(e[s], axis=0), xs)
    f = compile_on_device(ft.make_dict_of_named_arrays(
        {"rows": rows, "sums": sums}))
    for data in (_batch(), [], [np.zeros((0, H))]):
        got = f(xs=data)
        _nested_close(got["rows"].tolist(), [d[s] * 2 for d in data])
        _nested_close(ft.evaluate_numpy(rows, xs=data).tolist(),
                      [d[s] * 2 for d in data])
        want = np.array([d[s].sum(axis=0) for d in data]).reshape(-1, H)
        np.testing.assert_allclose(got["sums"], want, atol=1e-12)


def test_truncated_sequences_in_attention_and_scans():
    xs = ft.make_jagged_placeholder("xs", (H,), np.float64, depth=2)
    W = ft.make_placeholder("W", (H, H), np.float64)

    def attention(s):
        t = s[:4]
        return ft.exp(t @ t.T) @ t

    attended = ft.map(attention, xs)
    last = ft.map(lambda s: ft.scan(lambda c, r: ft.tanh(c @ W + r), s[-3:],
                                    ft.zeros(H))[-1:], xs)
    f = compile_on_device(ft.make_dict_of_named_arrays(
        {"attended": attended, "last": last}))
    data, Wv = _batch(), RNG.standard_normal((H, H))

    def rnn(s):
        h, hs = np.zeros(H), []
        for r in s:
            h = np.tanh(h @ Wv + r)
            hs.append(h)
        return np.array(hs).reshape(-1, H)[-1:]

    got = f(xs=data, W=Wv)
    _nested_close(got["attended"].tolist(),
                  [np.exp(d[:4] @ d[:4].T) @ d[:4] for d in data])
    _nested_close(got["last"].tolist(), [rnn(d[-3:]) for d in data])


def test_clamped_slices_of_each_sentence_of_each_document():
    docs = ft.make_jagged_placeholder("docs", (H,), np.float64, depth=3)
    heads = ft.map(lambda d: ft.map(lambda s: ft.sum(s[:2], axis=0), d), docs)
    tails, strided = ft.map(lambda d: ft.map(
        lambda s: (ft.amax(s[-2:], axis=0, initial=0.0),
                   ft.sum(ft.slide(s, 2, stride=2), axis=1)), d), docs)
    kept = ft.map(lambda d: ft.map(lambda s: ft.sum(ft.filter(
        lambda r: r[0] > 0, s), axis=0), d), docs)
    f = compile_on_device(ft.make_dict_of_named_arrays(
        {"heads": heads, "tails": tails, "strided": strided, "kept": kept}))

    def per_sentence(g, data):
        return [[g(s) for s in d] for d in data]

    for data in ([[RNG.standard_normal((k, H)) for k in ks]
                  for ks in [(3, 0, 6), (), (1,), (8, 2)]], [], [[]]):
        got = f(docs=data)
        for name, g in [
                ("heads", lambda s: s[:2].sum(axis=0)),
                ("tails", lambda s: s[-2:].max(axis=0, initial=0.0)),
                ("strided", lambda s: s[:len(s) // 2 * 2].reshape(
                    -1, 2, H).sum(axis=1)),
                ("kept", lambda s: s[s[:, 0] > 0].sum(axis=0))]:
            want = per_sentence(g, data)
            assert len(got[name].tolist()) == len(want)
            for g_doc, w_doc in zip(got[name].tolist(), want):
                if name == "strided":
                    _nested_close(g_doc, w_doc)
                else:
                    np.testing.assert_allclose(
                        g_doc, np.reshape(w_doc, (-1, H)), atol=1e-12)


def test_filters_of_clamped_slices_and_strided_windows():
    # (the selection is zipped in the round after the count it selects
    # from; its total was zipped as a plain count before, and the program
    # missed a size at each call)
    xs = ft.make_jagged_placeholder("xs", (H,), np.float64, depth=2)

    def positive(row):
        return row[0] > 0

    results = {
        "kept": ft.map(lambda s: ft.filter(positive, s[:5]), xs),
        "kept_tail": ft.map(lambda s: ft.filter(positive, s[-2:]), xs),
        "summed": ft.map(lambda s: ft.sum(ft.filter(positive, s[:5]), axis=0),
                         xs),
        "windows": ft.map(lambda s: ft.filter(
            lambda w: w[0, 0] > 0, ft.slide(s, 2, stride=2)), xs),
        # (a count of the kept rows of counted rows: zipped after them)
        "kept_head": ft.map(lambda s: ft.filter(positive, s[:6])[:2], xs),
        "kept_head_sum": ft.map(lambda s: ft.sum(ft.filter(
            positive, s[::2])[-2:], axis=0), xs),
    }
    f = compile_on_device(ft.make_dict_of_named_arrays(results))

    def kept(a):
        return a[a[:, 0] > 0]

    def windows(s):
        w = s[:len(s) // 2 * 2].reshape(-1, 2, H)
        return w[w[:, 0, 0] > 0]

    for data in (_batch(), [], [np.zeros((0, H))]):
        got = f(xs=data)
        _nested_close(got["kept"].tolist(), [kept(d[:5]) for d in data])
        _nested_close(got["kept_tail"].tolist(), [kept(d[-2:]) for d in data])
        _nested_close(got["windows"].tolist(), [windows(d) for d in data])
        _nested_close(got["kept_head"].tolist(),
                      [kept(d[:6])[:2] for d in data])
        np.testing.assert_allclose(
            got["kept_head_sum"], np.array(
                [kept(d[::2])[-2:].sum(axis=0) for d in data]).reshape(-1, H),
            atol=1e-12)
        np.testing.assert_allclose(
            got["summed"], np.array([kept(d[:5]).sum(axis=0) for d in data]
                                    ).reshape(-1, H), atol=1e-12)


def test_reductions_over_counted_rows_that_are_stored():
    # (the CPU plan stores the rows of s[:4] in a temporary sized by the
    # zipped count's total, which was no argument of the kernel: "nothing
    # known about variable")
    xs = ft.make_jagged_placeholder("xs", (H,), np.float64, depth=2)
    Wc = ft.make_placeholder("Wc", (3, H, 2), np.float64)
    bodies = {
        "gram": (lambda s: s[:4].T @ s[:4], lambda s: s[:4].T @ s[:4]),
        "argmin": (lambda s: ft.argmin(s[::-2], axis=0),
                   lambda s: np.argmin(s[::-2], axis=0)),
        "var": (lambda s: ft.var(s[-3:], axis=0), lambda s: s[-3:].var(axis=0)),
        "weighted": (lambda s: ft.sum(s[:4] * s[:4, :1], axis=0),
                     lambda s: (s[:4] * s[:4, :1]).sum(axis=0)),
        "conv_pool": (lambda s: ft.max(ft.einsum(
            "wkh,kho->wo", ft.slide(s, 3, stride=2, padding=1), Wc), axis=0,
            initial=-100.0), None),
    }
    f = compile_on_device(ft.make_dict_of_named_arrays(
        {k: ft.map(body, xs) for k, (body, _) in bodies.items()}))
    rng = np.random.default_rng(8)
    Wv = rng.standard_normal((3, H, 2))

    def conv_pool(s):
        padded = np.concatenate([np.zeros((1, H)), s, np.zeros((1, H))])
        windows = [padded[w:w + 3] for w in range(0, len(padded) - 2, 2)]
        out = np.einsum("wkh,kho->wo", np.array(windows).reshape(-1, 3, H), Wv)
        return out.max(axis=0, initial=-100.0)

    data = [rng.standard_normal((k, H)) for k in (5, 2, 7, 3)]
    got = f(xs=data, Wc=Wv)
    for name, (_, reference) in bodies.items():
        reference = reference or conv_pool
        np.testing.assert_allclose(
            got[name], np.array([reference(d) for d in data]), rtol=1e-12,
            atol=1e-12, err_msg=name)


def test_loops_over_the_elements_reading_counted_rows():
    # (the step's part without the carry, which reads the counted rows, is a
    # map over the elements first; the loop scans its results)
    xs = ft.make_jagged_placeholder("xs", (H,), np.float64, depth=2)
    W = ft.make_placeholder("W", (H, H), np.float64)
    loops = {
        "scan_head": ft.scan(lambda c, s: c * 0.5 + ft.sum(s[:2], axis=0), xs,
                             ft.zeros(H)),
        "fold_tail": ft.fold(lambda c, s: c + ft.sum(s[::-2][:1], axis=0), xs,
                             ft.zeros(H)),
        "fold_windows": ft.fold(lambda c, s: ft.tanh(c @ W + ft.sum(
            ft.slide(s, 1, stride=2), axis=(0, 1))), xs, ft.zeros(H)),
        "fold_kept": ft.fold(lambda c, s: c + ft.sum(ft.filter(
            lambda r: r[0] > 0, s), axis=0), xs, ft.zeros(H)),
    }
    f = compile_on_device(ft.make_dict_of_named_arrays(loops))
    # (the carry reads the counted rows: padded to the largest count, see
    # test_codegen_jagged_outer_scan; this ran on the host)
    with_carry = ft.fold(lambda c, s: c + ft.sum(s[:2] * c, axis=0), xs,
                         ft.ones(H))
    g = compile_on_device(with_carry)
    # (a selection that depends on the carry still runs on the host)
    kept_by_carry = ft.fold(lambda c, s: c + ft.sum(ft.filter(
        lambda r: ft.sum(r * c) > 0, s), axis=0), xs, ft.ones(H))
    h = compile_on_host(kept_by_carry, "data-dependent size")
    rng = np.random.default_rng(9)
    Wv = rng.standard_normal((H, H)) * 0.5

    def run(step, init, keep=False):
        c, states = init, []
        for d in data:
            c = step(c, d)
            states.append(c)
        return np.array(states).reshape(-1, H) if keep else c

    for data in (_batch(), [], [np.zeros((0, H))]):
        got = f(xs=data, W=Wv)
        for name, want in [
                ("scan_head", run(lambda c, d: c * 0.5 + d[:2].sum(axis=0),
                                  np.zeros(H), keep=True)),
                ("fold_tail", run(lambda c, d: c + d[::-2][:1].sum(axis=0),
                                  np.zeros(H))),
                ("fold_windows", run(lambda c, d: np.tanh(
                    c @ Wv + d[::2].sum(axis=0)), np.zeros(H))),
                ("fold_kept", run(lambda c, d: c + d[d[:, 0] > 0].sum(axis=0),
                                  np.zeros(H)))]:
            np.testing.assert_allclose(got[name], want, atol=1e-12,
                                       err_msg=name)
        np.testing.assert_allclose(
            g(xs=data), run(lambda c, d: c + (d[:2] * c).sum(axis=0),
                            np.ones(H)), atol=1e-12)
        np.testing.assert_allclose(
            h(xs=data), run(lambda c, d: c + d[(d * c).sum(axis=1) > 0].sum(
                axis=0), np.ones(H)), atol=1e-12)


def test_results_of_a_length_computed_from_counts():
    # lists whose length per element is an expression of counts (min(2, L)
    # + min(1, L), min(3, L) + 2, 3 min(3, L), min(4, L) - 1): each gets a
    # count of its own, zipped like the others (they ran on the host)
    xs = ft.make_jagged_placeholder("xs", (H,), np.float64, depth=2)
    named = {
        "ends": (lambda s: ft.concatenate([s[:2], s[-1:] * 2]),
                 lambda s: np.concatenate([s[:2], s[-1:] * 2])),
        "padded": (lambda s: ft.pad(s[:3], ((1, 1), (0, 0))),
                   lambda s: np.pad(s[:3], ((1, 1), (0, 0)))),
        "flat": (lambda s: s[:3].reshape(-1), lambda s: s[:3].reshape(-1)),
        "pairs": (lambda s: ft.sum(ft.slide(s[:4], 2, padding=1), axis=1),
                  lambda s: np.array([np.pad(s[:4], ((1, 1), (0, 0)))[i:i + 2]
                                      .sum(axis=0)
                                      for i in range(len(s[:4]) + 1)])),
    }
    results = {name: ft.map(body, xs) for name, (body, _) in named.items()}
    # (read again by a map and a scan over the result)
    results["ends_sums"] = ft.map(lambda t: ft.sum(t, axis=0), results["ends"])
    results["ends_total"] = ft.fold(lambda c, t: c + ft.sum(t, axis=0),
                                    results["ends"], ft.zeros(H))
    f = compile_on_device(ft.make_dict_of_named_arrays(
        {name: r.values if isinstance(r, ft.Jagged) else r
         for name, r in results.items()}
        | {f"{name}_offsets": r.offsets[0] for name, r in results.items()
           if isinstance(r, ft.Jagged)}))
    for data in (_batch(), [], [np.zeros((0, H))]):
        got = f(xs=data)
        for name, (body, reference) in named.items():
            want = [reference(s) for s in data]
            got_list = ft.JaggedArray(got[name], got[f"{name}_offsets"])
            _nested_close([np.reshape(g, w.shape) for g, w in
                           zip(got_list.tolist(), want)], want)
            _nested_close(ft.evaluate_numpy(results[name], xs=data).tolist(),
                          want)
        ends = [np.concatenate([s[:2], s[-1:] * 2]) for s in data]
        np.testing.assert_allclose(
            got["ends_sums"], np.reshape([e.sum(axis=0) for e in ends],
                                         (-1, H)), atol=1e-12)
        np.testing.assert_allclose(
            got["ends_total"], sum((e.sum(axis=0) for e in ends), np.zeros(H)),
            atol=1e-12)


def test_negative_lengths_computed_from_counts_are_refused():
    # s[:5][1:] keeps the affine rule of x[1:] (length min(5, L) - 1): an
    # empty element is refused at run time, naming the map and the element
    xs = ft.make_jagged_placeholder("xs", (H,), np.float64, depth=2)
    r = ft.map(lambda s: s[:5][1:], xs)
    f = compile_on_device(r)
    data = [RNG.standard_normal((k, H)) for k in (2, 9, 1)]
    _nested_close(f(xs=data).tolist(), [s[:5][1:] for s in data])
    with pytest.raises(ValueError, match=r"'xs': element 1 .* -1, which is "
                       "negative"):
        f(xs=[data[0], np.zeros((0, H))])
    with pytest.raises(ValueError, match="negative"):
        ft.evaluate_numpy(r, xs=[data[0], np.zeros((0, H))])


def test_counts_of_lengths_alone_are_computed_from_the_offsets():
    # min(5, L) per element needs no first phase on the device: the host
    # computes it from the offsets (so the kernels are the same for every
    # bound, and a new bound compiles nothing). A count that reads the
    # element's rows (a filter) still runs a first phase.
    xs = ft.make_jagged_placeholder("xs", (H,), np.float64, depth=2)
    data = _batch()
    for bound in (3, 5):
        head = ft.map(lambda s: ft.sum(s[:bound], axis=0) + s[::2].shape[0],
                      xs)
        f = compile_on_device(head)
        assert f.lowering.host_values.first_phase.results == []
        np.testing.assert_allclose(
            f(xs=data), [s[:bound].sum(axis=0) + len(s[::2]) for s in data],
            atol=1e-12)
    kept = ft.map(lambda s: ft.sum(ft.filter(lambda r: r[0] > 0, s[:4]),
                                   axis=0), xs)
    f = compile_on_device(kept)
    assert f.lowering.host_values.first_phase.results != []
    np.testing.assert_allclose(
        f(xs=data), [s[:4][s[:4, 0] > 0].sum(axis=0) for s in data],
        atol=1e-12)


def test_counted_rows_of_another_lists_element_read_per_element():
    # (ys[i] zipped in first, then min(2, M) counted from its length M;
    # these ran on the host)
    xs = ft.make_jagged_placeholder("xs", (H,), np.float64, depth=2)
    ys = ft.make_jagged_placeholder("ys", (H,), np.float64, depth=2)
    positions = ft.arange(xs.length)
    named = {
        "head": (ft.map(lambda s, i: ft.sum(ys[i][:2], axis=0)
                        + ft.sum(s, axis=0), xs, positions),
                 lambda s, y: y[:2].sum(axis=0) + s.sum(axis=0)),
        "kept": (ft.map(lambda s, i: ft.sum(ft.filter(
            lambda r: ft.sum(r) > 0, ys[i]), axis=0), xs, positions),
            lambda s, y: y[y.sum(axis=1) > 0].sum(axis=0)),
        "cross": (ft.map(lambda s, i: ft.sum(s[:2] @ ys[i][-2:].T, axis=1),
                         xs, positions),
                  lambda s, y: (s[:2] @ y[-2:].T).sum(axis=1)),
    }
    f = compile_on_device(ft.make_dict_of_named_arrays(
        {"head": named["head"][0], "kept": named["kept"][0],
         "cross": named["cross"][0].values,
         "cross_offsets": named["cross"][0].offsets[0]}))
    for xs_data, ys_data in ((_batch(), _batch()[::-1]), ([], [])):
        got = f(xs=xs_data, ys=ys_data)
        for name, (lazy, reference) in named.items():
            want = [reference(s, y) for s, y in zip(xs_data, ys_data)]
            if name == "cross":
                values = ft.JaggedArray(got["cross"], got["cross_offsets"])
                _nested_close(values.tolist(), want)
            else:
                np.testing.assert_allclose(got[name],
                                           np.reshape(want, (-1, H)),
                                           atol=1e-12)
            ref = ft.evaluate_numpy(lazy, xs=xs_data, ys=ys_data)
            _nested_close(ref.tolist() if name == "cross" else list(ref),
                          want)


def _documents(structure):
    return [[RNG.standard_normal((k, H)) for k in ks] for ks in structure]


def test_counted_lists_of_a_documents_own_lists():
    # (a map over documents is flattened into maps over depth 2 before its
    # counted lists are zipped; these ran on the host)
    docs = ft.make_jagged_placeholder("docs", (H,), np.float64, depth=3)
    more = ft.make_jagged_placeholder("more", (H,), np.float64, depth=3)
    w = ft.make_placeholder("w", (H, 2), np.float64)

    def encode(s):
        return ft.sum(s, axis=0)

    named = {
        "first_two": (ft.map(lambda d: ft.sum(ft.map(encode, d)[:2], axis=0),
                             docs),
                      lambda d, e, w: sum(s.sum(axis=0) for s in d[:2])),
        "every_other": (ft.map(lambda d: ft.sum(
            ft.map(encode, d)[::2] * 2, axis=0), docs),
            lambda d, e, w: 2 * sum(s.sum(axis=0) for s in d[::2])),
        "last_tokens": (ft.map(lambda d: ft.sum(ft.flatten(d)[-2:] @ w, axis=0),
                               docs),
                        lambda d, e, w: _tokens(d)[-2:].sum(axis=0) @ w),
        "positive": (ft.map(lambda d: ft.sum(ft.filter(
            lambda v: ft.sum(v) > 0, ft.map(encode, d)), axis=0), docs),
            lambda d, e, w: sum(v for v in (s.sum(axis=0) for s in d)
                                if v.sum() > 0)),
        "zipped": (ft.map(lambda d, e: ft.sum(ft.map(encode, d)[:2], axis=0)
                          * ft.sum(ft.flatten(e)[:3], axis=0), docs, more),
                   lambda d, e, w: sum(s.sum(axis=0) for s in d[:2])
                   * _tokens(e)[:3].sum(axis=0)),
    }
    f = compile_on_device(ft.make_dict_of_named_arrays(
        {k: lazy for k, (lazy, _) in named.items()}))
    w_data = RNG.standard_normal((H, 2))
    structure = [(2, 0, 3), (), (1,), (4, 2), (1, 1, 1, 1), (0,)]
    for shape in (structure, [], [()]):
        data, other = _documents(shape), _documents(shape)
        got = f(docs=data, more=other, w=w_data)
        for name, (lazy, reference) in named.items():
            want = np.array([reference(d, e, w_data) + np.zeros(lazy.shape[1:])
                             for d, e in zip(data, other)]).reshape(
                                 got[name].shape)
            np.testing.assert_allclose(got[name], want, atol=1e-12)
            given = {"docs": data, "more": other, "w": w_data}
            ref = ft.evaluate_numpy(lazy, **{
                k: given[k] for k in {"last_tokens": ("docs", "w"),
                                      "zipped": ("docs", "more")
                                      }.get(name, ("docs",))})
            np.testing.assert_allclose(ref, want, atol=1e-12)
    # (zipped documents of another structure are refused, not misread)
    with pytest.raises(ValueError, match="'more'"):
        f(docs=_documents(structure), w=w_data,
          more=_documents([(2, 0, 3), (), (1,), (4, 2), (1, 2, 1, 1), (0,)]))


def _tokens(document):
    return np.concatenate([np.reshape(s, (-1, H)) for s in document]
                          + [np.zeros((0, H))])


def test_counted_lists_of_a_document_read_by_its_sentences():
    # (the flattened maps derive segment ids after the first phase; the
    # first phase bound them from the inputs and failed at every call:
    # "size parameter(s) '_ft_seg0_rows' cannot be inferred"; found by a
    # hunt after c5b724a)
    docs = ft.make_jagged_placeholder("docs", (H,), np.float64, depth=3)

    def encode(s):
        return ft.sum(s, axis=0)

    named = {
        "first_lengths": (ft.map(lambda d: ft.sum(ft.lengths(d)[:2]), docs),
                          lambda d: sum(len(s) for s in d[:2])),
        "scaled_by_lead": (ft.map(lambda d: ft.map(
            lambda s: encode(s) * ft.sum(ft.map(encode, d)[:2], axis=0), d),
            docs), lambda d: [s.sum(axis=0) * sum(
                (t.sum(axis=0) for t in d[:2]), np.zeros(H)) for s in d]),
        "scaled_by_last_token": (ft.map(lambda d: ft.map(
            lambda s: encode(s) * ft.sum(ft.flatten(d)[-1:], axis=0), d),
            docs), lambda d: [s.sum(axis=0) * _tokens(d)[-1:].sum(axis=0)
                              for s in d]),
    }
    for name, (lazy, reference) in named.items():
        f = compile_on_device(lazy)
        for shape in ([(2, 0, 3), (), (4,), (1, 1)], [], [()]):
            data = _documents(shape)
            for got in (f(docs=data), ft.evaluate_numpy(lazy, docs=data)):
                want = [reference(d) for d in data]
                if name == "first_lengths":
                    np.testing.assert_array_equal(got, np.array(want, int))
                else:
                    _nested_close([np.reshape(g, (-1, H)) for g in got.tolist()],
                                  [np.reshape(w, (-1, H)) for w in want])
