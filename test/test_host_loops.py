# SPDX-License-Identifier: MIT
"""Loops over FractalTensors whose lowering to kernels is not supported run
on the host, in numpy, inside an otherwise compiled program
(:mod:`ftlazy.target.loopy.host_loops`): which loops are chosen, that the
rest stays compiled, the warning, and the results against numpy. The
constructs themselves are tested where their compiled siblings are
(``test_codegen_jagged_*``, with :func:`helpers.compile_on_host`)."""

from __future__ import annotations

import warnings

import numpy as np
import pyopencl.array as cla
import pytest

import ftlazy as ft
from ftlazy.fractal import LoopResult
from ftlazy.target.loopy import host_loops
from ftlazy.target.loopy.jagged_program import _roots
from helpers import compile_on_host
from test_fractal_nested_results import assert_nested

H = 3
REFUSAL = "not affine in the element's sizes"


def placeholders():
    return (ft.make_jagged_placeholder("xs", (H,), np.float64, depth=2),
            ft.make_jagged_placeholder("docs", (H,), np.float64, depth=3))


def data(seed=0):
    rng = np.random.default_rng(seed)
    xs = [rng.standard_normal((n, H)) for n in (3, 0, 1, 4)]
    docs = [[rng.standard_normal((n, H)) for n in d]
            for d in [(2, 0), (), (1, 3)]]
    return xs, docs


def mixed_program(xs, docs):
    """A compiled map (a filter of each sequence, summed by another map),
    and one that runs on the host (each document repeated twice), whose
    result a compiled leaf-wise operation reads."""
    kept = ft.map(lambda s: ft.filter(lambda r: ft.sum(r) > 0, s), xs)
    repeated = ft.map(lambda d: ft.repeat(d, 2), docs)
    return ft.make_dict_of_named_arrays({
        "sums": ft.map(lambda s: ft.sum(s, axis=0), kept),
        "kept": kept.values,
        "repeated": ft.tanh(repeated).values})


def test_only_the_refused_loop_runs_on_the_host():
    xs, docs = placeholders()
    program = mixed_program(xs, docs)
    compiled = compile_on_host(program, REFUSAL)
    assert compiled.host_evaluated == ("map over a FractalTensor 'docs'",)
    assert "on the host: [map over a FractalTensor 'docs']" in repr(compiled)
    assert "on the host, in numpy" in compiled._repr_html_()
    for seed in range(2):
        a, d = data(seed)
        got = compiled(xs=a, docs=d)
        want = ft.evaluate_numpy(program, xs=a, docs=d)
        assert set(got) == set(want)
        for name in want:
            np.testing.assert_allclose(got[name], want[name], rtol=1e-12)
        np.testing.assert_allclose(
            got["sums"], [s[s.sum(axis=1) > 0].sum(axis=0) for s in a])
        tokens = [s for doc in d for _ in range(2) for s in doc]
        np.testing.assert_allclose(got["repeated"],
                                   np.tanh(np.concatenate(tokens)))


def test_a_fractal_tensor_result_and_inputs_on_the_device(cl_queue):
    _, docs = placeholders()
    result = ft.map(lambda d: ft.repeat(d, 3), docs) * 2
    compiled = compile_on_host(result, REFUSAL)
    _, d = data()
    lengths = [[len(s) for s in doc] for doc in d]
    values = np.concatenate([s for doc in d for s in doc])
    offsets = (np.cumsum([0] + [len(doc) for doc in d]),
               np.cumsum([0] + [n for doc in lengths for n in doc]))
    on_device = ft.JaggedArray(cla.to_device(cl_queue, values),
                               *(cla.to_device(cl_queue, o) for o in offsets))
    for given in (d, on_device):
        got = compiled(docs=given)
        assert got.depth == 4
        assert_nested(got, [[[2 * s for s in doc]] * 3 for doc in d], 4)


def test_bad_input_is_refused_before_the_host_runs():
    _, docs = placeholders()
    compiled = compile_on_host(ft.map(lambda d: ft.repeat(d, 2), docs), REFUSAL)
    with pytest.raises(ValueError, match="missing input"):
        compiled()
    with pytest.raises(ValueError, match="unexpected input"):
        compiled(docs=[], other=np.zeros(2))
    with pytest.raises(ValueError, match="'docs'.*depth"):
        compiled(docs=[np.ones((2, H))])


def test_each_compile_warns():
    _, docs = placeholders()
    result = ft.map(lambda d: ft.repeat(d, 2), docs)
    for _ in range(2):      # (the second from the caches)
        with pytest.warns(ft.HostEvaluationWarning, match="'docs' runs on the "
                          "host, in numpy"):
            ft.compile(result)


def test_compiled_programs_do_not_warn():
    xs, _ = placeholders()
    with warnings.catch_warnings():
        warnings.simplefilter("error", ft.HostEvaluationWarning)
        compiled = ft.compile(ft.map(lambda s: ft.repeat(s, 2), xs))
    assert compiled.host_evaluated == ()
    assert "on the host" not in repr(compiled)


# {{{ which loops: with a stand-in for the lowering

def _loops():
    xs, docs = placeholders()
    first = ft.map(lambda s: ft.sum(s, axis=0), xs)
    second = ft.map(lambda d: ft.sum(ft.flatten(d), axis=0), docs)
    # (not only loop results: the stand-in tells the whole from one loop)
    result = ft.make_dict_of_named_arrays({"a": first * 2, "b": second})
    loops = host_loops.top_level_loops(_roots(result))
    assert len(loops) == 2
    return result, loops


class _Lowering:
    def __init__(self, reasons):
        self.reasons = reasons


def _stand_in(refuses_alone, lowers_with, calls):
    """A lowering that refuses each loop of *refuses_alone* by itself and
    the whole result unless the loops on the host include *lowers_with*."""
    def lower(result, reasons):
        calls.append(set(reasons))
        if isinstance(result, ft.DictOfNamedArrays) and all(
                isinstance(a, LoopResult) for a in result.values()):
            loop = next(iter(result.values())).loop
            if loop in refuses_alone:
                raise NotImplementedError(f"loop {id(loop)} refuses")
            return _Lowering(reasons)
        if not set(lowers_with) <= set(reasons):
            raise NotImplementedError("the whole refuses")
        return _Lowering(reasons)
    return lower


def test_a_loop_refused_alone_but_not_needed_stays_compiled():
    result, (a, b) = _loops()
    calls = []
    lowering = host_loops.lowering_with_host_loops(
        _stand_in({a, b}, {b}, calls), result, _roots(result))
    assert set(lowering.reasons) == {b}
    assert lowering.reasons[b] == f"loop {id(b)} refuses"


def test_every_loop_on_the_host_where_none_refuses_alone():
    result, (a, b) = _loops()
    lowering = host_loops.lowering_with_host_loops(
        _stand_in(set(), {a, b}, []), result, _roots(result))
    assert set(lowering.reasons) == {a, b}
    assert lowering.reasons[a] == "the whole refuses"


def test_the_first_refusal_where_nothing_lowers():
    result, (a, b) = _loops()

    def lower(result, reasons):
        raise NotImplementedError(f"refused with {len(reasons)} on the host")
    with pytest.raises(NotImplementedError, match="refused with 0 on the host"):
        host_loops.lowering_with_host_loops(lower, result, _roots(result))


def test_a_lowering_that_succeeds_is_used_as_it_is():
    result, _ = _loops()
    calls = []
    lowering = host_loops.lowering_with_host_loops(
        _stand_in(set(), set(), calls), result, _roots(result))
    assert lowering.reasons == {} and calls == [set()]

# }}}


def test_loops_are_named_by_kind_and_input():
    # (a fold over a depth-4 FractalTensor whose step mixes the carry with
    # the book runs on the host)
    books = ft.make_jagged_placeholder("books", (H,), np.float64, depth=4)
    result = ft.fold(lambda c, b: c + ft.sum(ft.flatten(b) * c, axis=0),
                     books, ft.zeros(H))
    compiled = compile_on_host(result, "depth 4")
    assert compiled.host_evaluated == ("fold over a FractalTensor 'books'",)


@pytest.mark.parametrize("source", ["filtered_rows", "heads_and_reversed",
                                    "long_elements_and_all"])
@pytest.mark.parametrize("consumer", ["dilated", "pairs"])
def test_host_loop_over_a_join_of_lists_counted_at_run_time(source, consumer):
    # (the rows of such a join are data-dependent sizes the host loop's
    # inputs define: the compiled rest asked the caller for them,
    # "size parameter(s) '_ft_dynmap0' ... cannot be inferred")
    xs, _ = placeholders()
    if source == "filtered_rows":
        joined = ft.join(
            ft.map(lambda s: ft.filter(lambda r: ft.greater(r[0], 0.0), s), xs),
            ft.map(lambda s: ft.filter(lambda r: ft.less(r[1], 1.0), s), xs))
    elif source == "heads_and_reversed":
        heads = ft.map(lambda s: s[:2], xs)
        joined = ft.join(heads, heads[::-1])
    else:
        joined = ft.join(ft.filter(lambda s: ft.greater(s.shape[0], 1), xs), xs)
    if consumer == "dilated":
        result = ft.map(lambda s: ft.dilated_map(lambda t: t * 2, s, 2), joined)
    else:
        result = ft.map(lambda a: ft.map(lambda c: ft.sum(a, axis=0) * c, xs),
                        joined)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ft.HostEvaluationWarning)
        compiled = ft.compile(result)
    # (all but the dilated map over long elements and all run on the host)
    assert bool(compiled.host_evaluated) == (
        (consumer, source) != ("dilated", "long_elements_and_all"))
    for seed in (0, 1):
        batch, _ = data(seed)
        want = ft.evaluate_numpy(result, xs=batch)
        assert_nested(compiled(xs=batch), want.tolist(), want.depth)
