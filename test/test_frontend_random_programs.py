# SPDX-License-Identifier: MIT
"""The random programs of test_codegen_random, many more of them and without
OpenCL: every op the generator draws builds (the generator only draws ops
numpy accepts, so a TypeError is a front-end bug), and the reference
evaluator's values have the shapes and dtypes the nodes declare."""

from __future__ import annotations

import warnings

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_codegen_random import DTYPES, SHAPES, _reachable_inputs, _step

import ftlazy as ft


@settings(max_examples=150, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.data())
def test_random_dag_front_end(data: st.DataObject) -> None:
    """Build and evaluate one random program; see the module docstring."""
    draw = data.draw
    n_inputs = draw(st.integers(2, 3), label="inputs")
    shapes = [(3, 4)] + [draw(st.sampled_from(SHAPES)) for _ in range(n_inputs - 1)]
    dtypes = [np.float64] + [draw(st.sampled_from(DTYPES))
                             for _ in range(n_inputs - 1)]
    pool: list[ft.Array] = [ft.make_placeholder(f"p{k}", shape, dtype)
                            for k, (shape, dtype) in enumerate(zip(shapes, dtypes))]
    for _ in range(draw(st.integers(2, 7), label="steps")):
        pool.append(_step(draw, pool))
    rng = np.random.default_rng(draw(st.integers(0, 2**16), label="seed"))
    values = {p.name: np.asarray(rng.normal(size=p.shape) * 3).astype(p.dtype)
              for p in pool[:n_inputs]}
    dag = ft.make_dict_of_named_arrays(
        {f"r{i}": a for i, a in enumerate(pool[n_inputs:])})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        results = ft.evaluate_numpy(dag, **{p.name: values[p.name]
                                            for p in _reachable_inputs(dag)})
    for name, lazy in dag.items():
        assert results[name].dtype == lazy.dtype, name
        assert results[name].shape == tuple(lazy.shape), name
