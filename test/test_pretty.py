# SPDX-License-Identifier: MIT
"""ft.pretty and .ir(): the DAG as numbered statements, like a jaxpr."""

import re

import numpy as np
import pytest

import ftlazy as ft
from ftlazy.text_ir import Listing, type_str
from ftlazy.tags import ImplStored

F64 = np.float64


def _dense():
    n = ft.make_size_param("n")
    x = ft.make_placeholder("x", (n, 3), F64)
    w = ft.make_placeholder("W", (3, 3), F64)
    b = ft.make_placeholder("b", (3,), F64)
    return x, w, b, ft.exp(x) @ w + b


def test_index_lambda_einsum_and_inputs_as_statements():
    *_, y = _dense()
    assert ft.pretty(y) == "\n".join([
        "%0: float64[n, 3] = placeholder 'x'",
        "%1: float64[n, 3] = index_lambda(exp(%0[_0, _1]))",
        "%2: float64[3, 3] = placeholder 'W'",
        "%3: float64[n, 3] = einsum 'ab,bc->ac' (%1, %2)",
        "%4: float64[3] = placeholder 'b'",
        "%5: float64[n, 3] = index_lambda(%3[_0, _1] + %4[_1])",
        "return %5",
    ])
    assert y.ir() == ft.pretty(y)


def test_one_statement_per_node_in_topological_order():
    x, w, b, y = _dense()
    z = ft.sum(y * y, axis=1) + ft.sum(x, axis=1)
    listing = Listing(z)
    assert len(listing.statements) == ft.analysis.get_num_nodes(z)
    numbers = [s.number for s in listing.statements]
    assert numbers == list(range(len(numbers)))
    for s in listing.statements:
        for ref in re.findall(r"%(\d+)", s.text.split(" = ", 1)[1]):
            assert int(ref) < s.number  # operands come before their users


def test_reductions_reshapes_indexing_and_tags():
    x = ft.make_placeholder("x", (4, 8), F64)
    idx = ft.make_placeholder("idx", (2,), np.int64)
    y = ft.sum(x[1:, ::2].T.reshape(6, 2)[idx], axis=0).tagged(ImplStored())
    text = ft.pretty(y)
    assert "= %0[1:+3, 0:+4:2]" in text
    assert "transpose(%1, (1, 0))" in text
    assert "reshape(%2, (6, 2), order=C)" in text
    assert re.search(r"= %3\[%4, 0:\+2\]", text)
    assert "sum([_r0:0..2], %5[_r0, _0])" in text
    assert text.splitlines()[-2].endswith("# tags: ImplStored()")


def test_map_and_scan_bodies_are_indented_scopes():
    n = ft.make_size_param("n")
    x = ft.make_placeholder("x", (n, 3), F64)
    w = ft.make_placeholder("W", (3, 3), F64)
    h0 = ft.make_placeholder("h0", (3,), F64)
    states = ft.scan(lambda h, xi: ft.tanh(w @ h + xi), x, h0)
    norms = ft.map(lambda row: ft.sum(row * row), states)
    lines = ft.pretty(norms).splitlines()
    assert "%3 = scan over n: init (%0), scanned (%1), captured (%2) {" in lines
    assert "    %4: float64[3] = param 0" in lines
    assert "    return %9" in lines
    assert "%10: float64[n, 3] = result 0 of %3" in lines
    start = lines.index("%11 = map over n: mapped (%10), captured () {")
    assert lines[start + 1] == "    %12: float64[3] = param 0"
    assert lines[-2:] == ["%15: float64[n] = result 0 of %11", "return %15"]
    assert lines.count("}") == 2


def test_nested_bodies_indent_twice():
    x = ft.make_placeholder("x", (2, 3, 4), F64)
    y = ft.map(lambda m: ft.map(lambda row: ft.sum(row), m), x)
    lines = ft.pretty(y).splitlines()
    inner = [ln for ln in lines if ln.startswith(" " * 8 + "%")]
    assert inner and all("param" in ln or "index_lambda" in ln for ln in inner)
    assert "        return" in "\n".join(lines)


def test_named_results_are_returned_by_name():
    x, w, b, y = _dense()
    dag = ft.make_dict_of_named_arrays({"y": y, "s": ft.sum(x)})
    text = dag.ir()
    assert text == ft.pretty(dag)
    assert text.splitlines()[-1] == "return {y: %5, s: %6}"


def test_jagged_nodes_and_maps():
    xs = ft.make_jagged_placeholder("xs", (3,), F64, depth=3)
    y = ft.map(lambda doc: ft.map(lambda s: ft.sum(s), doc), xs)
    text = ft.pretty(y)
    assert "= placeholder 'xs_values'" in text
    assert "jagged_map(inputs=(%0, %1, %2), depths=(3,)" in text
    assert "        %8: float64[] = index_lambda(sum(" in text
    assert text.splitlines()[-1].startswith("return %")
    assert xs.ir().splitlines()[-2] == ("%3 = jagged(values=%0, offsets=(%1, %2), "
                                        "name='xs')")


def test_data_wrappers_and_size_params():
    d = ft.make_data_wrapper(np.arange(3.0), name="table")
    n = ft.make_size_param("n")
    text = ft.pretty(d * n)
    assert "%0: float64[3] = data_wrapper 'table' <ndarray>" in text
    assert "%1: int64[] = size_param 'n'" in text


def test_type_str():
    x = ft.make_placeholder("x", (ft.make_size_param("n") * 2 + 1,), np.int32)
    assert type_str(x) == "int32[2*n + 1]"
    assert type_str(ft.sum(x)) == "int64[]"


def test_a_deep_chain_prints_without_recursion():
    # (test_display's 100,000-node chain goes through pretty too)
    x = ft.make_placeholder("x", (2,), F64)
    y = x
    for _ in range(20_000 - 1):
        y = -y
    lines = ft.pretty(y).splitlines()
    assert len(lines) == 20_001
    assert lines[-2] == "%19999: float64[2] = index_lambda((-1.0)*%19998[_0])"


def test_bad_input_is_a_type_error_naming_it():
    with pytest.raises(TypeError, match=r"ft\.pretty expects an ftlazy array or "
                                        r"node, got ndarray"):
        ft.pretty(np.zeros(3))
    with pytest.raises(TypeError, match="got str 'x'"):
        ft.pretty("x")
