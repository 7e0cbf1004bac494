# SPDX-License-Identifier: MIT
"""W2 lead for the next session: ftlazy's generated 8x16 register-blocked
matmul against a hand-written kernel of the same blocking, both launched the
same way on the default device, with numpy's time.

On the AVX-512 EPYC (PoCL 3.0, 2 cores) with a quiet machine: numpy 21 ms,
generated 183 ms, hand-written 47-70 ms; under load, interleaved in one
process, generated about 2x the hand kernel every time. Tried and ruled
out, each changing the generated source alone or the hand source alone:
scalar accumulators instead of the private array, one hoisted load of A
per row, ``a = a + b`` vs ``+=``, the ``gid()`` macro, ``<= 1023`` vs
``< 1024``, the fp64 pragma header, the argument declarations. Still
different: the index expressions' form and the initialization and store
loops around the k loop. Run: ``python doc/notes/spike-scripts/w2_generated_vs_hand.py``.
"""

import time

import numpy as np
import pyopencl as cl

import ftlazy as ft

N, TI, TJ = 1024, 8, 16


def hand_source() -> str:
    decl = " ".join(f"double acc{r}_{c} = 0;" for r in range(TI) for c in range(TJ))
    upd = " ".join(
        f"{{ double av = A[(i0+{r})*{N}+k]; "
        + " ".join(f"acc{r}_{c} += av * B[k*{N}+j0+{c}];" for c in range(TJ)) + "}"
        for r in range(TI))
    store = " ".join(f"C[(i0+{r})*{N} + j0+{c}] = acc{r}_{c};"
                     for r in range(TI) for c in range(TJ))
    return (
        "__kernel void __attribute__((reqd_work_group_size(1,1,1))) "
        "ftlazy_kernel(__global const double *restrict A, "
        "__global const double *restrict B, __global double *restrict C) {"
        f"int i0 = get_group_id(1)*{TI}; int j0 = get_group_id(0)*{TJ}; {decl} "
        f"for (int k = 0; k < {N}; ++k) {{ {upd} }} {store} }}")


def generated_source() -> str:
    a = ft.make_placeholder("a", (N, N), np.float64)
    b = ft.make_placeholder("b", (N, N), np.float64)
    return ft.generate_loopy(a @ b, options={"matmul_block": (TI, TJ)}).source


def time_source(ctx, queue, src, bufs, expected) -> float:
    knl = cl.Program(ctx, src).build().ftlazy_kernel
    grid = (N // TJ, N // TI)
    knl(queue, grid, (1, 1), *bufs)
    out = np.empty((N, N))
    cl.enqueue_copy(queue, out, bufs[2])
    assert np.allclose(out, expected)
    best = float("inf")
    for _ in range(5):
        start = time.perf_counter()
        knl(queue, grid, (1, 1), *bufs)
        queue.finish()
        best = min(best, time.perf_counter() - start)
    return best


def main() -> None:
    from ftlazy.target.loopy.device import default_queue
    queue = default_queue()
    ctx = queue.context
    rng = np.random.default_rng(0)
    a, b = rng.random((N, N)), rng.random((N, N))
    mf = cl.mem_flags
    bufs = (cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=a),
            cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=b),
            cl.Buffer(ctx, mf.WRITE_ONLY, a.nbytes))
    best = float("inf")
    for _ in range(5):
        start = time.perf_counter()
        a @ b
        best = min(best, time.perf_counter() - start)
    print(f"numpy      {best * 1e3:7.1f} ms")
    for name, src in (("generated", generated_source()), ("hand", hand_source())):
        t = time_source(ctx, queue, src, bufs, a @ b)
        print(f"{name:10} {t * 1e3:7.1f} ms ({t / best:.1f}x numpy)")


if __name__ == "__main__":
    main()
