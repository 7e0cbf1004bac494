"""W2: 1024x1024 float64 matmul c[i,j] = sum_k a[i,k]*b[k,j]."""
import sys, warnings, numpy as np, pyopencl as cl, pyopencl.array as cla, loopy as lp
from common import ctx_queue, bench
warnings.filterwarnings("ignore", category=cl.CompilerWarning)
ctx, queue = ctx_queue()
N = 1024
rng = np.random.default_rng(0); ah = rng.random((N, N)); bh = rng.random((N, N))
a, b = cla.to_device(queue, ah), cla.to_device(queue, bh)
ref = ah @ bh; t_np = bench(lambda: ah @ bh, n=5)
print(f"numpy {t_np*1e3:.1f} ms  {2*N**3/t_np/1e9:.1f} GFLOP/s")

def base(name):
    knl = lp.make_kernel("{[i,j,k]: 0<=i,j,k<n}", "c[i,j] = sum(k, a[i,k]*b[k,j])",
        [lp.GlobalArg("a,b,c", np.float64, shape=("n", "n")), ...],
        name=name, lang_version=(2018, 2), silenced_warnings=["v1_scheduler_fallback"])
    return lp.fix_parameters(knl, n=N)

def naive():                           # i -> g.0, j -> l.0 (256)
    knl = base("mm_naive")
    knl = lp.tag_inames(knl, {"i": "g.1"})
    return lp.split_iname(knl, "j", 256, outer_tag="g.0", inner_tag="l.0")

def ikj_rows(TI=4, V=8, swap=False, opts=()):
    """Register-blocked: each work item owns TI rows x V cols (V via 'vec' -> double8 acc),
    loop k sequential: acc[ii, jv] += a[i, k] * b[k, jv]  (broadcast a, vector load of b)."""
    knl = lp.make_kernel(
        "{[io,ii,jo,jv,k]: 0<=io<n//%d and 0<=ii<%d and 0<=jo<n//%d and 0<=jv<%d and 0<=k<n}" % (TI, TI, V, V),
        """
        acc[ii, jv] = 0                                              {id=init, inames=io:jo:ii:jv}
        acc[ii, jv] = acc[ii, jv] + a[io*%d+ii, k] * b[k, jo, jv]    {id=upd, dep=init, inames=io:jo:k:ii:jv}
        c[io*%d+ii, jo, jv] = acc[ii, jv]                            {id=store, dep=upd, inames=io:jo:ii:jv}
        """ % (TI, TI),
        [lp.GlobalArg("a", np.float64, shape=("n", "n")),
         lp.GlobalArg("b,c", np.float64, shape=("n", "n//%d" % V, V)),
         lp.TemporaryVariable("acc", np.float64, shape=(TI, V), address_space=lp.AddressSpace.PRIVATE), ...],
        name=f"mm_reg{TI}x{V}", lang_version=(2018, 2), silenced_warnings=["v1_scheduler_fallback"])
    knl = lp.fix_parameters(knl, n=N)
    knl = lp.tag_array_axes(knl, "b,c", "c,c,vec")
    knl = lp.tag_array_axes(knl, "acc", "c,vec")
    knl = lp.tag_inames(knl, {"jv": "vec", "ii": "ilp", "io": "g.0" if swap else "g.1", "jo": "g.1" if swap else "g.0"})
    # init/store must not share the ilp iname with the k-loop update, else loopy emits
    # for(ii){init; for(k) upd; store} (no ILP). Duplicate ii for them, then pin k outside ii.
    knl = lp.duplicate_inames(knl, "ii", within="id:init", new_inames="ii_init", tags={"ii_init": "ilp"})
    knl = lp.duplicate_inames(knl, "ii", within="id:store", new_inames="ii_store", tags={"ii_store": "ilp"})
    knl = lp.prioritize_loops(knl, "k,ii")
    if opts: knl = lp.set_options(knl, cl_build_options=list(opts))
    return knl

variants = [("naive", naive, (N, N))] + [
    (f"reg TI={ti} V={v}", (lambda ti=ti, v=v: ikj_rows(ti, v)), (N, N // v, v))
    for ti, v in [(1, 8), (2, 8), (4, 4), (4, 8), (8, 4)]] + [
    (f"reg TI={ti} V={v} swap", (lambda ti=ti, v=v: ikj_rows(ti, v, True)), (N, N // v, v))
    for ti, v in [(8, 8)]] + [
    (f"reg TI={ti} V={v} {o}", (lambda ti=ti, v=v, o=o: ikj_rows(ti, v, False, (o,) if o else ())), (N, N // v, v))
    for ti, v in [(6, 8), (8, 8), (16, 4), (16, 8), (4, 16)] for o in ["", "-cl-mad-enable"]]
for label, mk, shp in variants:
    try:
        knl = mk(); ex = knl.executor(queue); c = cla.empty(queue, shp, np.float64)
        bb = b.reshape(shp)
        t = bench(lambda: (ex(queue, a=a, b=bb, c=c), queue.finish()), n=3, warm=1)
        err = np.abs(c.get().reshape(N, N) - ref).max()
        print(f"{label:18s} {t*1e3:7.1f} ms {2*N**3/t/1e9:5.1f} GFLOP/s  {t/t_np:5.1f}x numpy  err {err:.1e}")
    except Exception as e:
        print(label, "FAILED", type(e).__name__, str(e)[:400])
if "src" in sys.argv: print(lp.generate_code_v2(ikj_rows(4, 8)).device_code())
