# SPDX-License-Identifier: MIT
"""What code written for pytato passes to ftlazy (``import ftlazy as pt``):
each compatibility feature on its own, with ftlazy's API, against numpy.
benchmarks/pytato_compat.py runs pytato's own tests through an alias."""

import os
import subprocess
import sys
from typing import Any, Never, ParamSpec

import loopy as lp
import numpy as np
import pytest

import ftlazy as ft
from ftlazy.analysis import get_num_nodes
from ftlazy.node import topological_order
from ftlazy.tags import AssumeNonNegative, ForceValueArgTag, ImplStored
from ftlazy.transform import (
    CachedMapper, CachedWalkMapper, CombineMapper, CopyMapper, Mapper, WalkMapper,
    deduplicate, deduplicate_data_wrappers, materialize_with_mpms,
    rewrite_einsums_with_no_broadcasts)


# {{{ mappers subscribed as pytato's

def test_mapper_takes_pytato_three_type_parameters():
    class Names(Mapper[Any, Never, []]):
        def map_placeholder(self, expr):
            return expr.name

    x = ft.make_placeholder("x", (3,), np.float64)
    assert Names()(x) == "x"
    # the result type is kept: the same alias as the one-parameter form
    assert Mapper[int, Never, []] == Mapper[int]
    assert CachedMapper[str, Never, []] == CachedMapper[str]

    class Count(CombineMapper[int, Never, []]):
        def combine(self, *values):
            return 1 + sum(values)

        def map_placeholder(self, expr):
            return 1

    assert Count()(2 * x + x) == 4
    # pytato's CombineMapper takes two, its walk mappers the ParamSpec alone
    assert CombineMapper[int, Never] == CombineMapper[int]
    P = ParamSpec("P")
    for spec in ([], [int], P, ...):
        assert WalkMapper[spec] is WalkMapper
        assert CachedWalkMapper[spec] is CachedWalkMapper

    class Visit(CachedWalkMapper[[]]):
        def __init__(self):
            super().__init__()
            self.seen = []

        def visit(self, expr):
            self.seen.append(type(expr).__name__)
            return True

    walker = Visit()
    walker(2 * x + x)
    assert sorted(walker.seen) == ["IndexLambda", "IndexLambda", "Placeholder"]


def test_mapper_subscription_errors():
    with pytest.raises(TypeError, match="Too many arguments"):
        Mapper[int, int, int, int]
    with pytest.raises(TypeError, match="not a generic class"):
        WalkMapper[int]
    with pytest.raises(TypeError, match="not a generic class"):
        CopyMapper[int]

# }}}


# {{{ generate_loopy and compile with a dict of results

def test_generate_loopy_takes_a_dict(cl_queue):
    x_in = np.arange(6.0).reshape(2, 3)
    x = ft.make_placeholder("x", (2, 3), np.float64)
    prg = ft.generate_loopy({"twice": 2 * x, "plus": x + 1})
    _, out = prg(cl_queue, x=x_in)
    assert set(out) == {"twice", "plus"}
    np.testing.assert_array_equal(out["twice"], 2 * x_in)
    np.testing.assert_array_equal(out["plus"], x_in + 1)


def test_compile_takes_a_dict():
    y_in = np.arange(5, dtype=np.int32)
    y = ft.make_data_wrapper(y_in)
    out = ft.compile({"neg": -y, "sq": y * y})()
    np.testing.assert_array_equal(out["neg"], -y_in)
    np.testing.assert_array_equal(out["sq"], y_in * y_in)
    assert out["sq"].dtype == np.int32


@pytest.mark.parametrize("entry", [ft.generate_loopy, ft.compile])
def test_dict_of_results_errors(entry):
    x = ft.make_placeholder("x", (3,), np.float64)
    name = entry.__name__
    with pytest.raises(ValueError, match=f"ft.{name}: the dict of results is empty"):
        entry({})
    with pytest.raises(TypeError, match="result 'a' is not an array: int"):
        entry({"a": 1})
    with pytest.raises(TypeError, match="result names must be strings, got int"):
        entry({1: x})
    with pytest.raises(TypeError, match="list"):
        entry([x])

# }}}


# {{{ loopy.Options and .kernel

def test_loopy_options_return_dict_and_write_code(cl_queue, capsys):
    x_in = np.arange(4.0)
    x = ft.make_data_wrapper(x_in)
    prg = ft.generate_loopy({"y": 3 * x},
                            options=lp.Options(return_dict=True, write_code=True))
    assert "__kernel" in capsys.readouterr().out
    _, out = prg(cl_queue)
    np.testing.assert_array_equal(out["y"], 3 * x_in)
    # a single array stays a one-element tuple, as in pytato
    _, (single,) = ft.generate_loopy(3 * x, options=lp.Options())(cl_queue)
    np.testing.assert_array_equal(single, 3 * x_in)


def test_loopy_options_errors():
    x = ft.make_placeholder("x", (3,), np.float64)
    with pytest.raises(ValueError, match=r"return_dict=False\) with named"):
        ft.generate_loopy({"y": x + 1}, options=lp.Options(return_dict=False))
    with pytest.raises(ValueError, match=r"loopy options \['no_numpy'\]"):
        ft.generate_loopy(x + 1, options=lp.Options(no_numpy=True))


def test_bound_program_kernel_is_the_entrypoint(cl_queue):
    x = ft.make_placeholder("x", (10, 4), np.float64)
    ft.make_placeholder("unused", (10, 4), np.float64)
    prg = ft.generate_loopy(2 * x)
    assert isinstance(prg.kernel, lp.LoopKernel)
    assert prg.kernel is prg.program.default_entrypoint
    # only what the result reads is an argument (inputs are renamed)
    assert len([a for a in prg.kernel.args
                if a.name.startswith("_ft_in")]) == 1
    x_in = np.random.default_rng(0).random((10, 4))
    np.testing.assert_array_equal(prg(cl_queue, x=x_in)[1][0], 2 * x_in)

# }}}


# {{{ tags

def test_tags_of_type_and_pytato_tags(cl_queue):
    b_in = np.array([3, 0, 2, 1])
    a_in = np.arange(4.0) * 10
    a = ft.make_data_wrapper(a_in)
    b = ft.make_data_wrapper(b_in).tagged((AssumeNonNegative(), ImplStored()))
    assert b.tags_of_type(AssumeNonNegative) == frozenset([AssumeNonNegative()])
    assert b.tags_of_type(ForceValueArgTag) == frozenset()
    n = ft.make_size_param("n").tagged(ForceValueArgTag())
    assert n.tags_of_type(ForceValueArgTag)
    # tags are descriptive: results are numpy's
    _, (out,) = ft.generate_loopy(a[b])(cl_queue)
    np.testing.assert_array_equal(out, a_in[b_in])
    # a negative index is still wrapped as numpy does
    c_in = np.array([-1, 0])
    c = ft.make_data_wrapper(c_in).tagged(AssumeNonNegative())
    _, (out,) = ft.generate_loopy(a[c])(cl_queue)
    np.testing.assert_array_equal(out, a_in[c_in])

# }}}


# {{{ transforms

def test_deduplicate_merges_equal_subexpressions():
    x = ft.make_placeholder("x", (4,), np.float64)
    # equal subexpressions built twice are already one node (interning)
    assert (2 * x + 1) is (2 * x + 1)
    expr = ft.make_dict_of_named_arrays({"a": ft.sin(x) * 2, "b": ft.sin(x) + 1})
    assert deduplicate(expr) == expr
    assert get_num_nodes(deduplicate(expr)) == get_num_nodes(expr)
    x_in = np.arange(4.0)
    out = ft.compile(deduplicate(expr))(x=x_in)
    np.testing.assert_allclose(out["a"], np.sin(x_in) * 2)


def test_deduplicate_data_wrappers_merges_views_of_the_same_memory():
    data = np.arange(6.0)
    other = np.arange(6.0)  # equal values, other memory: kept apart
    w1, w2 = ft.make_data_wrapper(data), ft.make_data_wrapper(data[:])
    w3 = ft.make_data_wrapper(other)
    assert w1 is not w2
    expr = ft.make_dict_of_named_arrays({"a": 2 * w1, "b": w2 + w3})
    merged = deduplicate_data_wrappers(expr)
    assert get_num_nodes(merged) == get_num_nodes(expr) - 1
    wrappers = {id(n.data) for n in topological_order([merged])
                if isinstance(n, ft.DataWrapper)}
    assert len(wrappers) == 2
    out = ft.compile(merged)()
    np.testing.assert_array_equal(out["b"], data + other)
    # other strides over the same memory: not merged
    strided = ft.make_dict_of_named_arrays({"a": w1[::2] + ft.make_data_wrapper(
        data[::2])})
    assert get_num_nodes(deduplicate_data_wrappers(strided)) == get_num_nodes(
        strided)


def test_deduplicate_data_wrappers_empty_device_arrays(cl_queue):
    import pyopencl.array as cla
    e1 = ft.make_data_wrapper(cla.empty(cl_queue, (0,), np.float64))
    e2 = ft.make_data_wrapper(cla.empty(cl_queue, (0,), np.float64))
    d1 = cla.to_device(cl_queue, np.ones(1))
    expr = ft.make_dict_of_named_arrays({
        "a": 2 * e1, "b": 2 * e2,
        "c": ft.make_data_wrapper(d1) + ft.make_data_wrapper(d1[:])})
    merged = deduplicate_data_wrappers(expr)
    assert get_num_nodes(merged) == get_num_nodes(expr) - 3


def test_materialize_with_mpms_stores_shared_multi_input_nodes():
    xs = [ft.make_placeholder(f"x{i}", (10, 4), np.float64) for i in range(5)]
    shared = xs[0] + xs[1] + xs[2]
    single = xs[0] + xs[1]        # one user (shared): not stored
    expr = ft.make_dict_of_named_arrays({"y1": xs[3] * shared,
                                         "y2": shared / xs[4],
                                         "y3": 2 * xs[0], "y4": xs[0] - 1})
    tagged = materialize_with_mpms(expr)
    stored = [n for n in topological_order([tagged])
              if isinstance(n, ft.Array) and n.tags_of_type(ImplStored)]
    # only the shared sum of three inputs; x0 alone (one source) is not
    assert len(stored) == 1 and stored[0].without_tags(ImplStored()) == shared
    assert single in set(topological_order([tagged]))
    rng = np.random.default_rng(1)
    inputs = {f"x{i}": rng.random((10, 4)) for i in range(5)}
    out = ft.compile(tagged)(**inputs)
    ref = inputs["x0"] + inputs["x1"] + inputs["x2"]
    np.testing.assert_allclose(out["y1"], inputs["x3"] * ref)
    np.testing.assert_allclose(out["y2"], ref / inputs["x4"])
    # nothing to store: the same DAG
    lone = ft.make_dict_of_named_arrays({"y": xs[0] + xs[1]})
    assert materialize_with_mpms(lone) is lone


def test_rewrite_einsums_with_no_broadcasts():
    rng = np.random.default_rng(2)
    a_in, b_in = rng.random((10, 4, 1)), rng.random((10, 1, 4))
    a, b = ft.make_data_wrapper(a_in), ft.make_data_wrapper(b_in)
    c = ft.einsum("ijk,ijk->ijk", a, b)
    expr = ft.einsum("ijk,ijk,ijk->i", a, b, c)
    new = rewrite_einsums_with_no_broadcasts(expr)
    assert new.spec == "ij,ik,ijk->i"
    assert [x.shape for x in new.args] == [(10, 4), (10, 4), (10, 4, 4)]
    assert new.args[2].spec == "ij,ik->ijk"
    ref = np.einsum("ijk,ijk,ijk->i", a_in, b_in,
                    np.einsum("ijk,ijk->ijk", a_in, b_in))
    np.testing.assert_allclose(ft.compile(new)(), ref)
    # both operands broadcast: an outer product
    r_in, s_in = rng.random((1, 3)), rng.random((3, 1))
    d = ft.einsum("ij,ij->ij", ft.make_data_wrapper(r_in),
                  ft.make_data_wrapper(s_in))
    outer = rewrite_einsums_with_no_broadcasts(d)
    assert outer.spec == "j,i->ij"
    np.testing.assert_allclose(ft.compile(outer)(), r_in * s_in)
    # broadcasting along an index that only the output names is kept
    e = ft.einsum("ij->ij", ft.broadcast_to(ft.make_data_wrapper(r_in), (3, 3)))
    assert rewrite_einsums_with_no_broadcasts(e) is e
    # no einsum: the same DAG
    assert rewrite_einsums_with_no_broadcasts(2 * a) is 2 * a


def test_pytato_names_at_top_level():
    assert ft.rewrite_einsums_with_no_broadcasts is rewrite_einsums_with_no_broadcasts
    x = ft.make_placeholder("x", (3,), np.float64)
    named = ft.make_dict_of_named_arrays({"y": x + 1})
    assert isinstance(named, ft.AbstractResultWithNamedArrays)
    assert not isinstance(x, ft.AbstractResultWithNamedArrays)


@pytest.mark.parametrize("transform", [
    deduplicate, deduplicate_data_wrappers, materialize_with_mpms,
    rewrite_einsums_with_no_broadcasts])
def test_transforms_refuse_non_arrays(transform):
    with pytest.raises(TypeError, match=f"{transform.__name__} expects an Array"):
        transform({"a": np.ones(3)})

# }}}


# {{{ the harness (benchmarks/pytato_compat.py), without pytato's files

def _harness():
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "benchmarks"))
    try:
        import pytato_compat
    finally:
        sys.path.pop(0)
    return pytato_compat


def test_harness_alias_package_maps_pytato_to_ftlazy(tmp_path):
    harness = _harness()
    test_dir = tmp_path / "src" / "test"
    test_dir.mkdir(parents=True)
    (test_dir / "testlib.py").write_text("")
    (test_dir / "test_codegen.py").write_text(
        "import pytato as pt\n"
        "import pytato.array, pytato.transform, pytato.tags\n"
        "from pytato.transform import Mapper\n"
        "print(pt.__name__, pytato.array.__name__, pytato.tags.__name__,\n"
        "      Mapper.__module__)\n"
        "try:\n"
        "    import pytato.loopy\n"
        "except ImportError:\n"
        "    print('no pytato.loopy')\n")
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    script = harness.prepare(str(tmp_path / "src"), str(run_dir), "test_codegen.py")
    out = subprocess.run([sys.executable, script], cwd=run_dir, check=True,
                         capture_output=True, text=True, timeout=300).stdout.split("\n")
    assert out[0] == "ftlazy ftlazy.array ftlazy.tags ftlazy.transform.mappers"
    assert out[1] == "no pytato.loopy"
    with pytest.raises(FileNotFoundError, match="is missing"):
        harness.prepare(str(tmp_path), str(run_dir), "test_codegen.py")


def test_harness_summary_counts_and_categories(tmp_path):
    harness = _harness()
    junit = tmp_path / "junit.xml"
    junit.write_text(
        '<testsuites><testsuite>'
        '<testcase name="a"/><testcase name="b"/>'
        '<testcase name="c"><failure message="KeyError: \'z_store\'"/></testcase>'
        '<testcase name="d"><failure message="assert 3 == 4"/></testcase>'
        '<testcase name="e"><failure message="assert 10 == 2"/></testcase>'
        '<testcase name="f"><skipped type="pytest.skip" message="x"/></testcase>'
        '<testcase name="g"><skipped type="pytest.xfail" message="y"/></testcase>'
        '<testcase name="h"><error message="collection failure">'
        'E   ImportError: cannot import name \'X\'</error></testcase>'
        '</testsuite></testsuites>')
    outcomes, categories = harness.summarize(str(junit))
    assert outcomes == {"passed": 2, "failed": 4, "skipped": 1, "xfailed": 1}
    assert categories == {"KeyError: 'z_store'": 1, "assert N == N": 2,
                          "collection failed: ImportError: cannot import name "
                          "'X'": 1}

# }}}

# vim: foldmethod=marker
