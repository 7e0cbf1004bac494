# SPDX-License-Identifier: MIT
"""A grid RNN
==========

A grid RNN over a pair of sequences (source and target), after
FractalTensor's grid RNN walkthrough: ``ft.product(src, trg)`` is the grid
of cells ``(i, j)`` pairing source token ``i`` with target token ``j``;
cell ``(i, j)`` reads the state from the cell above (``hx``, previous
source row) and from the cell to its left (``hy``, previous target column):

    s = [hx[i-1, j], hy[i, j-1]]          (zeros outside the grid)
    hx[i, j] = tanh(x_i Wx + s Ux),  hy[i, j] = tanh(y_j Wy + s Uy)

The input projections of every cell are computed in parallel by
``ft.map`` over the rows of the product (FractalTensor's
``zip(*product(src, trg))``). Two ways to run the recurrence over them:

1. FractalTensor's: ``direction_x``, a scan over the source rows whose
   carry is the previous row of ``hx``, each step ``direction_y``, a scan
   along the row, reading row ``i`` of the grid as ``cell_inputs[i]`` (the
   rows of a product all have length ``Lt``, known when the graph is
   built). ``ft.compile`` runs the nest as a sequential loop over
   the rows in one kernel, with the scan along the row a loop inside it.
2. One scan over the cells in row-major order (the flattened product),
   whose carry is the previous row of ``hx`` updated one column at a time.

Both forms are compiled with ``ft.compile``.

Sizes are size parameters, so one program serves every pair; the batch of
pairs is a Python loop over pairs (``ft.map`` zips FractalTensors only when
all their lengths agree, and a source and its target differ). Checked
against a numpy loop over the grid.

Run: ``python examples/grid_rnn.py``
"""

import numpy as np

import ftlazy as ft

H = 4

Ls, Lt = ft.make_size_param("Ls"), ft.make_size_param("Lt")
src = ft.make_placeholder("src", (Ls, H), np.float64)
trg = ft.make_placeholder("trg", (Lt, H), np.float64)
Wx = ft.make_placeholder("Wx", (H, H), np.float64)
Wy = ft.make_placeholder("Wy", (H, H), np.float64)
Ux = ft.make_placeholder("Ux", (2 * H, H), np.float64)
Uy = ft.make_placeholder("Uy", (2 * H, H), np.float64)

# the grid: xss[i][j] = src[i], yss[i][j] = trg[j] (FractalTensors of
# depth 2, Ls rows of Lt cells), and each cell's input projections (2H,)
xss, yss = ft.product(src, trg)
cell_inputs = ft.map(lambda xr, yr: ft.concatenate([xr @ Wx, yr @ Wy], axis=1),
                     xss, yss)
cells = ft.flatten(cell_inputs)          # (Ls*Lt, 2H), row-major


def grid_cell(hx_above, hy_left, inp):
    s = ft.concatenate([hx_above, hy_left])
    return ft.tanh(inp[:H] + s @ Ux), ft.tanh(inp[H:] + s @ Uy)


# {{{ 1. FractalTensor's nested scans

def direction_y(carry, step):
    _, hy_left = carry
    inp, hx_above = step
    return grid_cell(hx_above, hy_left, inp)


def direction_x(carry, i):
    hx_row_above, _ = carry                          # (Lt, H)
    row = cell_inputs[i]                             # (Lt, 2H): row i of the grid
    return ft.scan(direction_y, (row, hx_row_above), (ft.zeros(H), ft.zeros(H)))


hx, hy = ft.scan(direction_x, ft.arange(Ls), (trg * 0, trg * 0))
nested = ft.make_dict_of_named_arrays({"hx": hx, "hy": hy})   # (Ls, Lt, H)

# }}}


# {{{ 2. one scan over the cells in row-major order

def row_major_step(carry, step):
    row_above, _, hy_left = carry                    # row_above: (Lt, H)
    inp, j = step
    hy_left = ft.where(ft.equal(j, 0), 0.0, hy_left)  # a new row starts
    hx, hy = grid_cell(row_above[j], hy_left, inp)
    return ft.scatter(row_above, j[None], hx[None]), hx, hy


column = ft.flatten(ft.map(lambda yr: ft.arange(yr.shape[0]), yss))
_, hx_flat, hy_flat = ft.scan(row_major_step, (cells, column),
                              (trg * 0, ft.zeros(H), ft.zeros(H)))
flat = ft.make_dict_of_named_arrays({"hx": hx_flat, "hy": hy_flat})  # (Ls*Lt, H)

# }}}

rng = np.random.default_rng(0)
weights = {"Wx": rng.standard_normal((H, H)) * 0.5,
           "Wy": rng.standard_normal((H, H)) * 0.5,
           "Ux": rng.standard_normal((2 * H, H)) * 0.5,
           "Uy": rng.standard_normal((2 * H, H)) * 0.5}


def numpy_grid(x, y):
    hx = np.zeros((len(x) + 1, len(y) + 1, H))
    hy = np.zeros_like(hx)
    for i in range(len(x)):
        for j in range(len(y)):
            s = np.concatenate([hx[i, j + 1], hy[i + 1, j]])
            hx[i + 1, j + 1] = np.tanh(x[i] @ weights["Wx"] + s @ weights["Ux"])
            hy[i + 1, j + 1] = np.tanh(y[j] @ weights["Wy"] + s @ weights["Uy"])
    return hx[1:, 1:], hy[1:, 1:]


f_flat = ft.compile(flat)
f_nested = ft.compile(nested)

for pairs in [[(3, 5), (2, 0), (4, 2)], [(1, 6), (0, 3), (5, 4)]]:
    for ls, lt in pairs:
        x, y = rng.standard_normal((ls, H)), rng.standard_normal((lt, H))
        want_x, want_y = numpy_grid(x, y)
        for f, shape in ((f_flat, (ls * lt, H)), (f_nested, (ls, lt, H))):
            got = f(src=x, trg=y, **weights)
            for name, want in (("hx", want_x), ("hy", want_y)):
                assert got[name].shape == shape, (name, got[name].shape)
                np.testing.assert_allclose(got[name].reshape(ls, lt, H), want,
                                           rtol=1e-10, atol=1e-12)
    print(f"pairs (source, target lengths) {pairs}: row-major scan and "
          "nested scans (both ft.compile) match numpy")
