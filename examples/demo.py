# SPDX-License-Identifier: MIT
"""A first look at ftlazy
======================

A first look at ftlazy: build a DAG lazily, inspect it, evaluate it with
numpy, then compile it to OpenCL (PoCL on a CPU, or a GPU) and run it.

Run: ``python examples/demo.py``.
"""

from __future__ import annotations

import numpy as np

import ftlazy as ft
from ftlazy.analysis import get_inputs, get_num_nodes

# %%
# Build a DAG
# -----------
# The inputs: a batch of ``n`` sequences of 8-vectors and the weights of an
# RNN. For each sequence in parallel (``ft.map``), a recurrence runs over
# time (``ft.fold``). Nothing is computed: ``scores`` is the root of a DAG.

n = ft.make_size_param("n")
xs = ft.make_placeholder("xs", (n, 5, 8), np.float64)
w = ft.make_placeholder("w", (8, 8), np.float64)
u = ft.make_placeholder("u", (8, 8), np.float64)
h0 = ft.zeros(8, dtype=np.float64)


def rnn(seq):
    return ft.fold(lambda h, x: ft.tanh(w @ x + u @ h), seq, h0)


def scores_of(sequences):
    final = ft.map(rnn, sequences)
    return ft.sum(final * final, axis=1)


scores = scores_of(xs)
print(f"built {scores!r} from a DAG of {get_num_nodes(scores)} nodes; "
      f"inputs {sorted(i.name for i in get_inputs(scores))}")
scores

# %%
# Draw it
# -------
# ``ft.to_svg`` lays the DAG out as SVG (with ``pip install ftlazy[viz]``;
# ``None`` without a layout engine); in a notebook, ``ft.show_dot_graph``
# shows the same picture inline. The map's body is the outer cluster, the
# fold's body the inner one.

picture = ft.to_svg(scores)

# %%
# Evaluate it with numpy
# ----------------------
# ``ft.evaluate_numpy`` is the reference evaluator; it agrees with a plain
# numpy loop.

rng = np.random.default_rng(0)
args = {"xs": rng.standard_normal((3, 5, 8)),
        "w": 0.3 * rng.standard_normal((8, 8)),
        "u": 0.3 * rng.standard_normal((8, 8))}
got = ft.evaluate_numpy(scores, **args)

expected = []
for seq in args["xs"]:
    h = np.zeros(8)
    for x in seq:
        h = np.tanh(args["w"] @ x + args["u"] @ h)
    expected.append(np.sum(h * h))
np.testing.assert_allclose(got, expected, rtol=1e-12)
print(f"evaluate_numpy: {got} (matches a plain numpy loop)")

# %%
# Compile it to OpenCL
# --------------------
# ``ft.compile`` generates one OpenCL program (through loopy) and runs it
# on the default device. Each compile stage is timed; a structurally equal
# DAG (other input names, another size) is served from the cache.

compiled = ft.compile(scores)
device = compiled.queue.device
on_device = compiled(**args)
np.testing.assert_allclose(on_device, expected, rtol=1e-12)
print(f"OpenCL on {device.name.strip()!r}: {on_device}")
print(f"compile stages: {compiled.timings}")
ys = ft.make_placeholder("ys", (ft.make_size_param("m"), 5, 8), np.float64)
again = ft.compile(scores_of(ys))
print(f"rebuilt DAG served from the compile cache: {again.from_cache}")
