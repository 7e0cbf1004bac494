"""W1: out = exp(-x*x)*sin(3x) + 0.5*x/(1+x*x) on 2**24 float64.
usage: python w1_elementwise.py      (LOOPY_NO_CACHE=1 recommended the first time after adding vecpatch)"""
import sys, numpy as np, pyopencl as cl, pyopencl.array as cla, pyopencl.tools as clt, loopy as lp
import vecpatch  # lets 'vec' tag vectorize exp/sin/... calls (else loopy silently unrolls .s0..s7)
from common import ctx_queue, bench
ctx, queue = ctx_queue()
N = 2**24
xh = np.random.default_rng(0).standard_normal(N)
x = cla.to_device(queue, xh)
ref_fn = lambda: np.exp(-xh*xh)*np.sin(3*xh) + 0.5*xh/(1+xh*xh)
ref = ref_fn(); t_np = bench(ref_fn, n=3, warm=1)
print(f"numpy {t_np*1e3:.1f} ms")
EXPR = "exp(-x[i]*x[i])*sin(3*x[i]) + 0.5*x[i]/(1+x[i]*x[i])"

def base(name):
    knl = lp.make_kernel("{[i]: 0<=i<n}", f"out[i] = {EXPR}",
        [lp.GlobalArg("x,out", np.float64, shape=("n",)), ...],
        name=name, lang_version=(2018, 2))
    return lp.fix_parameters(knl, n=N)

def scalar_ilp(wg=64, ilp=4):     # best scalar recipe: (g.0, l.0, ilp)
    knl = base("w1_scalar")
    knl = lp.split_iname(knl, "i", wg*ilp, outer_tag="g.0")
    return lp.split_iname(knl, "i_inner", ilp, outer_tag="l.0", inner_tag="ilp")

def vec(v=8, wg=64):               # explicit doubleV: needs n % v == 0 and x viewed as (n/v, v)
    knl = base(f"w1_vec{v}")
    knl = lp.split_iname(knl, "i", v, inner_tag="vec")
    knl = lp.split_array_axis(knl, "x,out", 0, v)   # x: (n,) -> (n/v, v)
    knl = lp.tag_array_axes(knl, "x,out", "c,vec")  # -> __global double8 *x
    return lp.split_iname(knl, "i_outer", wg, outer_tag="g.0", inner_tag="l.0")

results = {}
for label, knl, shape in [("scalar g.0/l.0(64)/ilp(4)", scalar_ilp(), (N,)),
                          ("vec double4 wg16", vec(4, 16), (N//4, 4)),
                          ("vec double8 wg64", vec(8, 64), (N//8, 8)),
                          ("vec double8 wg256", vec(8, 256), (N//8, 8))]:
    ex = knl.executor(queue)
    xv = x.reshape(shape); out = cla.empty(queue, shape, np.float64)
    t = bench(lambda: (ex(queue, x=xv, out=out), queue.finish()), n=7, warm=2)
    err = np.abs(out.get().ravel() - ref).max()
    print(f"{label:28s} {t*1e3:7.1f} ms  x{t_np/t:5.2f} vs numpy  maxerr {err:.1e}")
    results[label] = (knl, shape)

knl, shape = results["vec double8 wg64"]
ex = knl.executor(queue); xv = x.reshape(shape)
pool = clt.MemoryPool(clt.ImmediateAllocator(queue))
def fresh():  evt, (o,) = ex(queue, x=xv); queue.finish(); return o
def pooled(): evt, (o,) = ex(queue, x=xv, allocator=pool); queue.finish(); return o
o = pooled(); assert isinstance(o, cla.Array) and np.allclose(o.get().ravel(), ref)
print(f"executor-allocated out, fresh cl.Buffer : {bench(fresh, n=7)*1e3:.1f} ms")
print(f"executor-allocated out, MemoryPool      : {bench(pooled, n=7)*1e3:.1f} ms")
if "src" in sys.argv: print(lp.generate_code_v2(knl).device_code())
