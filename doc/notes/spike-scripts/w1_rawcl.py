"""Probe: does PoCL have fast vector sin/exp (double4) vs scalar? raw pyopencl."""
import numpy as np, pyopencl as cl, pyopencl.array as cla
from common import ctx_queue, bench
ctx, queue = ctx_queue()
N = 2**24
xh = np.random.default_rng(0).standard_normal(N); x = cla.to_device(queue, xh); out = cla.empty_like(x)
ref = np.exp(-xh*xh)*np.sin(3*xh) + 0.5*xh/(1+xh*xh)
for T in ["double", "double2", "double4", "double8"]:
    v = {"double": 1}.get(T, int(T[6:]) if T != "double" else 1)
    src = f"""__kernel void k(__global const {T} *x, __global {T} *out) {{
      int i = get_global_id(0); {T} a = x[i];
      out[i] = exp(-a*a)*sin(3*a) + 0.5*a/(1+a*a); }}"""
    for opt in ["", "-cl-fast-relaxed-math"]:
        prg = cl.Program(ctx, src).build(options=opt)
        k = prg.k
        for wg in [None, 64]:
            t = bench(lambda: (k(queue, (N//v,), (wg,) if wg else None, x.data, out.data), queue.finish()), n=3)
            print(f"{T:8s} {opt:22s} wg={wg} {t*1e3:7.1f} ms err {np.abs(out.get()-ref).max():.1e}")
