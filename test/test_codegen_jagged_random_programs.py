# SPDX-License-Identifier: MIT
"""Random map bodies over a FractalTensor (hypothesis): chains of
elementwise math, products with captured weights, scans and folds over the
element's rows (also with a carry of the element's length), reversed rows,
gathers at zipped indices, attention over the element, softmax and
centering, then an optional reduction over the rows or a filter of them. Each program is
compiled once and run on several length distributions (empty elements,
all empty, an empty batch, one long element among short ones) against the
reference evaluator."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings, strategies as st

import ftlazy as ft

H = 3
RNG = np.random.default_rng(5)
W = RNG.standard_normal((H, H)) * 0.5
B = RNG.standard_normal(H) * 0.1
DISTRIBUTIONS = [(3, 0, 2, 5, 1), (0, 0), (), (1, 9, 1, 0, 2)]


def _fold_per_row(s):
    # a fold whose carry has a row per row of the element (flash-style)
    c = ft.fold(lambda c, k: c + ft.tanh(s @ k), s @ W, ft.zeros(s.shape[0]))
    return s * c[:, None]


#: name -> function of (s, ids, w) giving an (L, H) array
STEPS = {
    "tanh": lambda s, i, w: ft.tanh(s),
    "affine": lambda s, i, w: s @ w + B,
    "scan": lambda s, i, w: ft.scan(lambda h, x: ft.tanh(x + h @ w), s,
                                    ft.zeros(H)),
    "reverse": lambda s, i, w: s[::-1],
    "center": lambda s, i, w: s - ft.sum(s, axis=0) / ft.maximum(s.shape[0], 1),
    "softmax": lambda s, i, w: (lambda e: e / ft.sum(e, axis=0))(
        ft.exp(s - ft.amax(s, axis=0, initial=-np.inf))),
    "gather": lambda s, i, w: ft.gather(s, i) + s,
    "attention": lambda s, i, w: ft.tanh(s @ s.T) @ s / H,
    "doubled_half": lambda s, i, w: ft.concatenate([s * 0.5, s])[s.shape[0]:],
    "fold_per_row": lambda s, i, w: _fold_per_row(s),
}

#: name -> function of an (L, H) array giving the map's result
ENDS = {
    "rows": lambda s: s,
    "sum": lambda s: ft.sum(s, axis=0),
    "max": lambda s: ft.amax(s, axis=0, initial=-1.0),
    "last": lambda s: ft.fold(lambda h, x: 0.5 * h + x, s, ft.zeros(H)),
    "kept": lambda s: ft.filter(lambda r: ft.sum(r) > 0, s),
}


def inputs(lengths, seed, with_w):
    rng = np.random.default_rng(seed)
    return {"xs": [rng.standard_normal((n, H)) for n in lengths],
            "ids": [rng.permutation(n) for n in lengths]} | (
                {"w": W} if with_w else {})


@settings(max_examples=12, deadline=None)
@given(steps=st.lists(st.sampled_from(sorted(STEPS)), min_size=1, max_size=3),
       end=st.sampled_from(sorted(ENDS)))
def test_random_bodies_against_the_reference(steps, end):
    xs = ft.make_jagged_placeholder("xs", (H,), np.float64, depth=2)
    ids = ft.make_jagged_placeholder("ids", (), np.int64, depth=2)
    w = ft.make_placeholder("w", (H, H), np.float64)

    def body(s, i):
        for name in steps:
            s = STEPS[name](s, i, w)
        return ENDS[end](s)
    out = ft.map(body, xs, ids)
    compiled = ft.compile(out)
    for seed, lengths in enumerate(DISTRIBUTIONS):
        given_inputs = inputs(lengths, seed,
                              {"affine", "scan"} & set(steps))
        want = ft.evaluate_numpy(out, **given_inputs)
        got = compiled(**given_inputs)
        if end in ("rows", "kept"):
            assert got.lengths().tolist() == want.lengths().tolist()
            if end == "rows":
                assert got.lengths().tolist() == list(lengths)
            got, want = got.values, want.values
        np.testing.assert_allclose(np.asarray(got), np.asarray(want),
                                   rtol=1e-10, atol=1e-12,
                                   err_msg=f"{steps} {end} {lengths}")
