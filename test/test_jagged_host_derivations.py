# SPDX-License-Identifier: MIT
"""What the host derives from the offsets at each call of a compiled map
over FractalTensors (segment ids, longest extents): offsets that are copies
of another FractalTensor's offsets (a map's result, the next layer's input)
are evaluated as their source, and equal derivations are computed once."""

import numpy as np
import pytest

import ftlazy as ft
from ftlazy.target.jagged_inputs import expand_jagged_inputs
from ftlazy.target.loopy.jagged_program import _derive, _host_source

from helpers import JAGGED_LENGTHS

H = 4
LAYERS = 3


def stacked_rnn():
    """A fold over layers of a map over sequences of a scan (an RNN per
    layer, the batch of sequences the fold's carry)."""
    xs = ft.make_jagged_placeholder("xs", (H,), np.float64, depth=2)
    ws = ft.make_placeholder("ws", (LAYERS, H, H), np.float64)
    us = ft.make_placeholder("us", (LAYERS, H, H), np.float64)

    def layer(batch, p):
        w, u = p
        return ft.map(lambda s: ft.scan(lambda h, x: ft.tanh(h @ u + x), s @ w,
                                        ft.zeros(H)), batch)
    return ft.fold(layer, (ws, us), xs)


def numpy_stacked_rnn(data, ws, us):
    out = []
    for seq in data:
        for w, u in zip(ws, us):
            h, rows = np.zeros(H), []
            for x in seq @ w:
                h = np.tanh(h @ u + x)
                rows.append(h)
            seq = np.array(rows).reshape(len(seq), H)
        out.append(seq)
    return out


@pytest.fixture(scope="module")
def compiled():
    return ft.compile(stacked_rnn())


@pytest.mark.parametrize("lengths", list(JAGGED_LENGTHS.values()) + [(1,)],
                         ids=list(JAGGED_LENGTHS) + ["one_row"])
def test_one_program_for_every_length_distribution(compiled, lengths):
    rng = np.random.default_rng(len(lengths))
    data = [rng.standard_normal((n, H)) for n in lengths]
    ws, us = rng.standard_normal((2, LAYERS, H, H)) * 0.5
    got = compiled(xs=data, ws=ws, us=us)
    want = numpy_stacked_rnn(data, ws, us)
    assert list(np.diff(got.offsets[0])) == list(lengths)
    np.testing.assert_allclose(got.values, np.concatenate(
        want, axis=0) if want else np.empty((0, H)), rtol=1e-12, atol=1e-12)


def test_layers_share_the_derived_segment_ids(compiled):
    lowering = compiled.lowering
    names = [n for n in lowering.host.segment_ids]
    # each layer's input offsets are a copy of the previous layer's: all
    # layers read one derivation, from the copied offsets
    assert len(names) == 1
    (offsets, _), = lowering.host.segment_ids.values()
    assert _host_source(offsets)[0] is offsets
    assert len(lowering.host.step_counts) == 1
    lengths = (3, 0, 2)
    given = expand_jagged_inputs(lowering.input_nodes, {
        "xs": [np.ones((n, H)) for n in lengths],
        "ws": np.zeros((LAYERS, H, H)), "us": np.zeros((LAYERS, H, H))})
    derived = _derive(lowering.host, given, lowering.input_nodes)
    ids = [derived[n] for n in names]
    assert all(a is ids[0] for a in ids)
    np.testing.assert_array_equal(ids[0], [0, 0, 0, 2, 2])
    # (the layers' scans run as many steps as the longest sequence)
    assert {derived[n] for n in lowering.host.step_counts} == {3}


def test_result_offsets_are_the_inputs_and_no_kernel_copies_them(compiled):
    """The result's offsets (a copy of the mapped FractalTensor's in the
    lowered DAG), and each layer's input offsets, are the input's offsets:
    returned and read from the input, not copied by a kernel."""
    from ftlazy.array import IndexLambda
    from ftlazy.node import topological_order
    lowering = compiled.lowering
    assert lowering.forwarded == {"offsets0": "xs_offsets0"}
    dense = list(lowering.dense.values())
    assert all(_host_source(n)[0] is n for n in topological_order(dense)
               if isinstance(n, IndexLambda))
    rng = np.random.default_rng(5)
    xs = ft.JaggedArray(rng.standard_normal((6, H)), np.array([0, 4, 4, 6]))
    got = compiled(xs=xs, ws=np.zeros((LAYERS, H, H)), us=np.zeros((LAYERS, H, H)))
    np.testing.assert_array_equal(got.offsets[0], [0, 4, 4, 6])
    np.testing.assert_array_equal(got.values, 0)  # tanh(0 @ u + x @ 0)
