"""W2 GPU-style: 16x16 work-groups, k split by 16, lp.add_prefetch of a/b tiles into local memory."""
import warnings, numpy as np, pyopencl as cl, pyopencl.array as cla, loopy as lp
from common import ctx_queue, bench
warnings.filterwarnings("ignore", category=cl.CompilerWarning)
ctx, queue = ctx_queue()
N = 1024
rng = np.random.default_rng(0); ah = rng.random((N, N)); bh = rng.random((N, N))
a, b = cla.to_device(queue, ah), cla.to_device(queue, bh); ref = ah @ bh
for T in [8, 16]:
    knl = lp.make_kernel("{[i,j,k]: 0<=i,j,k<n}", "c[i,j] = sum(k, a[i,k]*b[k,j])",
        [lp.GlobalArg("a,b,c", np.float64, shape=("n", "n")), ...], name=f"mm_pf{T}", lang_version=(2018, 2))
    knl = lp.fix_parameters(knl, n=N)
    knl = lp.split_iname(knl, "i", T, outer_tag="g.1", inner_tag="l.1")
    knl = lp.split_iname(knl, "j", T, outer_tag="g.0", inner_tag="l.0")
    knl = lp.split_iname(knl, "k", T)
    knl = lp.add_prefetch(knl, "a", ["i_inner", "k_inner"], fetch_outer_inames="i_outer,j_outer,k_outer", default_tag="l.auto")
    knl = lp.add_prefetch(knl, "b", ["k_inner", "j_inner"], fetch_outer_inames="i_outer,j_outer,k_outer", default_tag="l.auto")
    ex = knl.executor(queue); c = cla.empty(queue, (N, N), np.float64)
    t = bench(lambda: (ex(queue, a=a, b=b, c=c), queue.finish()), n=3, warm=1)
    print(f"prefetch T={T}: {t*1e3:.1f} ms {2*N**3/t/1e9:.1f} GFLOP/s err {np.abs(c.get()-ref).max():.1e}")
