"""W9: data-dependent loop bounds (CSR-style segmented sum): out[i] = sum_{j in [offsets[i], offsets[i+1])} vals[j]."""
import sys, warnings, numpy as np, pyopencl as cl, pyopencl.array as cla, loopy as lp
from common import ctx_queue, bench
warnings.filterwarnings("ignore", category=cl.CompilerWarning)
ctx, queue = ctx_queue()
rng = np.random.default_rng(0)
m = 100_000
lens = rng.integers(0, 200, m)
offs = np.zeros(m + 1, np.int32); offs[1:] = np.cumsum(lens)
nnz = int(offs[-1]); vals = rng.random(nnz)
ref = np.add.reduceat(vals, offs[:-1]) ; ref[lens == 0] = 0       # reduceat quirk for empty segments
knl = lp.make_kernel(
    ["{[i]: 0<=i<m}",
     "[s, e] -> {[j]: s <= j < e}"],          # s,e are private scalars assigned below, become loop bounds
    """
    for i
        <> s = offsets[i]                      {id=s}
        <> e = offsets[i+1]                    {id=e}
        out[i] = sum(j, vals[j])               {dep=s:e}
    end
    """,
    [lp.GlobalArg("offsets", np.int32, shape=("m + 1",)),
     lp.GlobalArg("vals", np.float64, shape=("nnz",)),
     lp.GlobalArg("out", np.float64, shape=("m",)),
     lp.ValueArg("m,nnz", np.int32)],
    name="segsum", lang_version=(2018, 2))
knl = lp.split_iname(knl, "i", 64, outer_tag="g.0", inner_tag="l.0")
if "src" in sys.argv: print(lp.generate_code_v2(knl).device_code())
ex = knl.executor(queue)
d_offs, d_vals = cla.to_device(queue, offs), cla.to_device(queue, vals)
out = cla.empty(queue, m, np.float64)
ex(queue, offsets=d_offs, vals=d_vals, out=out, m=m, nnz=nnz)
err = np.abs(out.get() - ref).max()
t = bench(lambda: (ex(queue, offsets=d_offs, vals=d_vals, out=out, m=m, nnz=nnz), queue.finish()), n=7)
t_np = bench(lambda: np.add.reduceat(vals, offs[:-1]), n=7)
print(f"segsum m={m} nnz={nnz}: loopy {t*1e3:.2f} ms ({nnz*8/t/1e9:.1f} GB/s), numpy reduceat {t_np*1e3:.2f} ms, maxerr {err:.1e}")
