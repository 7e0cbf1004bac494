"""W1 with explicit OpenCL vector types (double2/4/8) via 'vec' tag."""
import sys, numpy as np, pyopencl as cl, pyopencl.array as cla, loopy as lp
from common import ctx_queue, bench
if "--patch" in sys.argv: import vecpatch; sys.argv.remove("--patch")
ctx, queue = ctx_queue()
N = 2**24
xh = np.random.default_rng(0).standard_normal(N); x = cla.to_device(queue, xh)
ref = np.exp(-xh*xh)*np.sin(3*xh) + 0.5*xh/(1+xh*xh)
EXPR = "exp(-x[i]*x[i])*sin(3*x[i]) + 0.5*x[i]/(1+x[i]*x[i])"
def mk(v, wg, expr=EXPR):
    knl = lp.make_kernel("{[i]: 0<=i<n}", f"out[i] = {expr}",
        [lp.GlobalArg("x,out", np.float64, shape=("n",)), ...], lang_version=(2018, 2))
    knl = lp.fix_parameters(knl, n=N)
    knl = lp.split_iname(knl, "i", v, inner_tag="vec")
    knl = lp.split_array_axis(knl, "x,out", 0, v)          # x: (n/v, v)
    knl = lp.tag_array_axes(knl, "x,out", "c,vec")         # -> double{v} *x
    knl = lp.split_iname(knl, "i_outer", wg, outer_tag="g.0", inner_tag="l.0")
    return knl
if sys.argv[1:] == ["src"]:
    print(lp.generate_code_v2(mk(4, 64)).device_code()); sys.exit()
for v in [2, 4, 8]:
    for wg in [16, 64, 256]:
        for name, expr in [("sin", "sin(3*x[i])"), ("full", EXPR)]:
            ex = mk(v, wg, expr).executor(queue)
            xv = x.reshape(N // v, v)                       # executor checks shape (n/v, v)
            out = cla.empty(queue, (N // v, v), np.float64)
            t = bench(lambda: (ex(queue, x=xv, out=out), queue.finish()), n=3)
            err = np.abs(out.get().ravel() - ref).max() if name == "full" else 0
            print(f"v={v} wg={wg:4d} {name:5s} {t*1e3:7.1f} ms err {err:.1e}")
