"""W4: 5-point stencil on 4096x4096 float64, interior only -> out (4094, 4094).
numpy: u[:-2,1:-1] + u[2:,1:-1] + u[1:-1,:-2] + u[1:-1,2:] - 4*u[1:-1,1:-1]
GB/s counts compulsory traffic: read u (4096^2*8) + write out (4094^2*8)."""
import sys, warnings, numpy as np, pyopencl as cl, pyopencl.array as cla, loopy as lp
from common import ctx_queue, bench
warnings.filterwarnings("ignore", category=cl.CompilerWarning)
ctx, queue = ctx_queue()
N = 4096; TRIAD = 29.0
uh = np.random.default_rng(0).random((N, N)); u = cla.to_device(queue, uh)
ref_fn = lambda: uh[:-2, 1:-1] + uh[2:, 1:-1] + uh[1:-1, :-2] + uh[1:-1, 2:] - 4*uh[1:-1, 1:-1]
ref = ref_fn()
GB = (N*N + (N-2)**2) * 8 / 1e9
t_np = bench(ref_fn, n=3)
print(f"numpy {t_np*1e3:.1f} ms {GB/t_np:.1f} GB/s")

def stencil(variant, a=None, b=None):
    knl = lp.make_kernel("{[i,j]: 0<=i,j<n-2}",
        "out[i,j] = u[i,j+1] + u[i+2,j+1] + u[i+1,j] + u[i+1,j+2] - 4*u[i+1,j+1]",
        [lp.GlobalArg("u", np.float64, shape=("n", "n")),
         lp.GlobalArg("out", np.float64, shape=("n-2", "n-2")), ...],
        name=f"st_{variant}", lang_version=(2018, 2), silenced_warnings=["v1_scheduler_fallback"])
    knl = lp.fix_parameters(knl, n=N)
    if variant == "row_seq":          # one row per work-item, j sequential (LLVM loop-vectorizes)
        knl = lp.tag_inames(knl, {"i": "g.0"})
    elif variant == "rows_l":         # a rows per wg as l.0, j sequential
        knl = lp.split_iname(knl, "i", a, outer_tag="g.0", inner_tag="l.0")
    elif variant == "j_l":            # i -> g.1, j split: (g.0, l.0 of size a)
        knl = lp.tag_inames(knl, {"i": "g.1"})
        knl = lp.split_iname(knl, "j", a, outer_tag="g.0", inner_tag="l.0")
    elif variant == "row_jl":         # i -> g.0, j -> l.0 of size a, sequential over j chunks
        knl = lp.tag_inames(knl, {"i": "g.0"})
        knl = lp.split_iname(knl, "j", a, inner_tag="l.0")
    elif variant == "tile":           # b rows per group (seq), j on (g.0,l.0 of a)
        knl = lp.split_iname(knl, "i", b, outer_tag="g.1")
        knl = lp.split_iname(knl, "j", a, outer_tag="g.0", inner_tag="l.0")
    elif variant == "row_ilp":        # i -> g.0, j split with ilp inner
        knl = lp.tag_inames(knl, {"i": "g.0"})
        knl = lp.split_iname(knl, "j", a, inner_tag="ilp")
        knl = lp.prioritize_loops(knl, "j_outer,j_inner")
    return knl

res = {}
for cfg in [("row_seq",), ("rows_l", 2), ("rows_l", 8), ("j_l", 64), ("j_l", 256), ("j_l", 1024),
            ("row_jl", 256), ("row_jl", 1024), ("tile", 256, 4), ("tile", 1024, 16), ("row_ilp", 4), ("row_ilp", 8)]:
    try:
        ex = stencil(*cfg).executor(queue); out = cla.empty(queue, (N-2, N-2), np.float64)
        t = bench(lambda: (ex(queue, u=u, out=out), queue.finish()), n=7)
        err = np.abs(out.get() - ref).max()
        res[cfg] = t
        print(f"{str(cfg):18s} {t*1e3:6.2f} ms {GB/t:5.1f} GB/s = {GB/t/TRIAD*100:3.0f}% triad  x{t_np/t:.1f} numpy err {err:.1e}")
    except Exception as e:
        print(cfg, "FAILED", type(e).__name__, str(e)[:300])
if "src" in sys.argv: print(lp.generate_code_v2(stencil(*min(res, key=res.get))).device_code())
