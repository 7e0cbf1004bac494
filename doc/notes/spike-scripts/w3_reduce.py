"""W3: row sums and full sum of a 4096x4096 float64 array (128 MiB read).
Recipe: explicit private vector accumulator (double8 via 'vec' tag), rows on g.0 (wg size 1).
Full sum: same kernel writes per-row partials to a GLOBAL temporary, then a second instruction
sums them -> loopy inserts a global barrier and emits 2 kernel launches in one executor call."""
import sys, warnings, numpy as np, pyopencl as cl, pyopencl.array as cla, loopy as lp
from common import ctx_queue, bench
warnings.filterwarnings("ignore", category=cl.CompilerWarning)
ctx, queue = ctx_queue()
M = Nc = 4096; V = 8
ah = np.random.default_rng(0).random((M, Nc)); a = cla.to_device(queue, ah)
av = a.reshape(M, Nc // V, V)          # executor checks shape (m, n/V, V)
GB = M * Nc * 8 / 1e9
TRIAD = 29.0                           # GB/s, from triad.py (DRAM-resident)
print(f"numpy a.sum(1) {GB/bench(lambda: ah.sum(1)):.1f} GB/s   a.sum() {GB/bench(lambda: ah.sum()):.1f} GB/s")

ROW_INSNS = """
    acc[ji] = 0                                  {id=init, inames=i:ji}
    acc[ji] = acc[ji] + a[i, jo, ji]             {id=upd, dep=init, inames=i:jo:ji}
    """
def common_args():
    return [lp.GlobalArg("a", np.float64, shape=("m", "n//%d" % V, V)),
            lp.TemporaryVariable("acc", np.float64, shape=(V,), address_space=lp.AddressSpace.PRIVATE)]
def finish(knl, rows_per_wg):
    knl = lp.fix_parameters(knl, m=M, n=Nc)
    knl = lp.tag_array_axes(knl, "a", "c,c,vec")
    knl = lp.tag_array_axes(knl, "acc", "vec")          # acc becomes one double8 register
    knl = lp.tag_inames(knl, {"ji": "vec", "k": "unr"})
    if rows_per_wg == 1:
        knl = lp.tag_inames(knl, {"i": "g.0"})
    else:
        knl = lp.split_iname(knl, "i", rows_per_wg, outer_tag="g.0", inner_tag="l.0")
    return knl

def rowsum(rows_per_wg=1):
    knl = lp.make_kernel("{[i,jo,ji,k]: 0<=i<m and 0<=jo<n//%d and 0<=ji,k<%d}" % (V, V),
        ROW_INSNS + "out[i] = sum(k, acc[k])  {dep=upd}",
        common_args() + [lp.GlobalArg("out", np.float64, shape=("m",)), ...],
        name="rowsum", lang_version=(2018, 2), silenced_warnings=["v1_scheduler_fallback"])
    return finish(knl, rows_per_wg)

def fullsum(rows_per_wg=1):
    knl = lp.make_kernel("{[i,jo,ji,k,i2]: 0<=i,i2<m and 0<=jo<n//%d and 0<=ji,k<%d}" % (V, V),
        ROW_INSNS + """
        part[i] = sum(k, acc[k])                 {id=part, dep=upd}
        ... gbarrier                             {id=gb, dep=part}
        total[0] = sum(i2, part[i2])             {dep=gb}
        """,
        common_args() + [lp.TemporaryVariable("part", np.float64, shape=("m",), address_space=lp.AddressSpace.GLOBAL),
                         lp.GlobalArg("total", np.float64, shape=(1,)), ...],
        name="fullsum", lang_version=(2018, 2), silenced_warnings=["v1_scheduler_fallback"])
    return finish(knl, rows_per_wg)

for r in [1, 2, 8]:
    ex = rowsum(r).executor(queue); out = cla.empty(queue, M, np.float64)
    t = bench(lambda: (ex(queue, a=av, out=out), queue.finish()), n=9)
    assert np.allclose(out.get(), ah.sum(1))
    print(f"rowsum  rows/wg={r}: {t*1e3:6.2f} ms {GB/t:5.1f} GB/s = {GB/t/TRIAD*100:.0f}% of triad")
for r in [1, 2]:
    knl = fullsum(r); ex = knl.executor(queue); tot = cla.empty(queue, 1, np.float64)
    t = bench(lambda: (ex(queue, a=av, total=tot), queue.finish()), n=9)
    assert np.isclose(tot.get()[0], ah.sum())
    print(f"fullsum rows/wg={r}: {t*1e3:6.2f} ms {GB/t:5.1f} GB/s = {GB/t/TRIAD*100:.0f}% of triad")
if "src" in sys.argv: print(lp.generate_code_v2(fullsum(1)).device_code())
