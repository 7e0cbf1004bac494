"""STREAM triad a = b + s*c: raw pyopencl vs numpy. GB/s counts 3 arrays * 8 B * N."""
import warnings, numpy as np, pyopencl as cl, pyopencl.array as cla
from common import ctx_queue, bench
warnings.filterwarnings("ignore", category=cl.CompilerWarning)
ctx, queue = ctx_queue()
SRC = """
__kernel void triad(__global double *a, __global const double *b, __global const double *c, double s)
{ size_t i = get_global_id(0); a[i] = b[i] + s*c[i]; }
__kernel void triad4(__global double4 *a, __global const double4 *b, __global const double4 *c, double s)
{ size_t i = get_global_id(0); a[i] = b[i] + s*c[i]; }
__kernel void triad_chunk(__global double *a, __global const double *b, __global const double *c,
                          double s, int chunk)
{ size_t i0 = get_global_id(0) * chunk;
  for (int k = 0; k < chunk; ++k) a[i0+k] = b[i0+k] + s*c[i0+k]; }
"""
prg = cl.Program(ctx, SRC).build()
s = np.float64(3.0)
best = {}; kernels = {}
for logn in [20, 22, 24, 26]:
    N = 2**logn
    bh = np.random.rand(N); ch = np.random.rand(N); ah = np.empty(N)
    b, c = cla.to_device(queue, bh), cla.to_device(queue, ch); a = cla.empty_like(b)
    gb = 3 * 8 * N / 1e9
    t = bench(lambda: (np.multiply(ch, s, out=ah), np.add(ah, bh, out=ah)), n=7)
    print(f"N=2^{logn}: numpy (2-pass, in-place out) {gb/t:6.1f} GB/s  ({t*1e3:.2f} ms)")
    t = bench(lambda: bh + s*ch, n=7)
    print(f"N=2^{logn}: numpy b+s*c (allocating)   {gb/t:6.1f} GB/s")
    cfgs = [("triad", None, 1), ("triad", 64, 1), ("triad", 256, 1), ("triad", 1024, 1), ("triad", 4096, 1),
            ("triad4", None, 4), ("triad4", 64, 4), ("triad4", 256, 4),
            ("triad_chunk", None, 1024), ("triad_chunk", 16, 1024), ("triad_chunk", 1, 65536)]
    for name, wg, per in cfgs:
        k = kernels.setdefault(name, cl.Kernel(prg, name))
        args = [a.data, b.data, c.data, s] + ([np.int32(per)] if name == "triad_chunk" else [])
        gsz = N // per
        if wg and gsz % wg: continue
        t = bench(lambda: (k(queue, (gsz,), (wg,) if wg else None, *args), queue.finish()), n=9)
        bw = gb / t
        print(f"N=2^{logn}: {name:12s} wg={str(wg):5s} per-item={per:6d}  {bw:6.1f} GB/s ({t*1e3:.2f} ms)")
        best[(logn, name, wg, per)] = bw
    assert np.allclose(a.get(), bh + s*ch)
k = max(best, key=best.get); print("BEST", k, f"{best[k]:.1f} GB/s")
