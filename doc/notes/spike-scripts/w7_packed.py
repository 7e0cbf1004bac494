"""W7 workaround: pack NA leaf arrays into one arena buffer; the kernel gets 1 pointer + offsets."""
import sys, time, warnings, numpy as np, pyopencl as cl, pyopencl.array as cla, loopy as lp
from common import ctx_queue, bench
warnings.filterwarnings("ignore", category=cl.CompilerWarning)
ctx, queue = ctx_queue()
n, NA = 1024, 1000
hs = [np.full(n, float(k)) for k in range(NA)]
# (a) offsets known at compile time: arena is one GlobalArg, each leaf is a slice arena[off_k + i]
offs = np.arange(NA) * n                       # leaf k lives at arena[offs[k] : offs[k]+n]
arena = cla.to_device(queue, np.concatenate(hs))
import pymbolic.primitives as p
i = p.Variable("i"); A = p.Variable("arena")
expr = p.Sum(tuple(A[int(o) + i] for o in offs))
t0 = time.perf_counter()
knl = lp.make_kernel("{[i]: 0<=i<n}", [lp.Assignment(p.Variable("out")[i], expr)],
    [lp.GlobalArg("arena", np.float64, shape=(NA * n,)), lp.GlobalArg("out", np.float64, shape=("n",)), ...],
    name="packed_const", lang_version=(2018, 2))
knl = lp.fix_parameters(knl, n=n)
knl = lp.split_iname(knl, "i", 128, outer_tag="g.0", inner_tag="l.0")
ex = knl.executor(queue); out = cla.empty(queue, n, np.float64)
ex(queue, arena=arena, out=out); queue.finish()
t1 = time.perf_counter()
assert np.allclose(out.get(), sum(range(NA)))
print(f"(a) arena + compile-time offsets: first call {t1-t0:.2f}s, steady "
      f"{bench(lambda: (ex(queue, arena=arena, out=out), queue.finish()))*1e3:.3f} ms")
# (b) offsets as a runtime int array, reduction loop over leaves: one small kernel for any NA
t0 = time.perf_counter()
knl = lp.make_kernel("{[i,k]: 0<=i<n and 0<=k<na}", "out[i] = sum(k, arena[offs[k] + i])",
    [lp.GlobalArg("arena", np.float64, shape=None), lp.GlobalArg("offs", np.int64, shape=("na",)),
     lp.GlobalArg("out", np.float64, shape=("n",)), lp.ValueArg("na,n", np.int32)],
    name="packed_offs", lang_version=(2018, 2))
knl = lp.split_iname(knl, "i", 128, outer_tag="g.0", inner_tag="l.0")
ex = knl.executor(queue); offs_d = cla.to_device(queue, offs.astype(np.int64))
ex(queue, arena=arena, offs=offs_d, out=out, n=n, na=NA); queue.finish()
t1 = time.perf_counter()
assert np.allclose(out.get(), sum(range(NA)))
print(f"(b) arena + runtime offsets array: first call {t1-t0:.2f}s, steady "
      f"{bench(lambda: (ex(queue, arena=arena, offs=offs_d, out=out, n=n, na=NA), queue.finish()))*1e3:.3f} ms")
