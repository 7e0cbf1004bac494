"""W6: vanilla RNN scan h_{t+1} = tanh(W h_t + U x_t + b), T=64, B=32, H=256, I=128, ONE launch.
Layout: g.0 = batch row (one work-group per sequence), l.0 = hidden unit, t sequential inside,
carry in LOCAL memory hloc[H], local barriers between read and write of the carry."""
import sys, warnings, numpy as np, pyopencl as cl, pyopencl.array as cla, loopy as lp
from common import ctx_queue, bench
warnings.filterwarnings("ignore", category=cl.CompilerWarning)
ctx, queue = ctx_queue()
T, B, H, I = 64, 32, 256, 128
rng = np.random.default_rng(0)
Wh = rng.standard_normal((H, H)) / np.sqrt(H); Uh = rng.standard_normal((H, I)) / np.sqrt(I)
bh = rng.standard_normal(H) * 0.1; xh = rng.standard_normal((T, B, I)); h0h = rng.standard_normal((B, H)) * 0.1
def np_rnn():
    h = h0h; hs = np.empty((T, B, H))
    for t in range(T):
        h = np.tanh(h @ Wh.T + xh[t] @ Uh.T + bh); hs[t] = h
    return hs
ref = np_rnn(); t_np = bench(np_rnn, n=5)
print(f"numpy loop {t_np*1e3:.1f} ms")

def rnn_knl(transposed, lsize=None):
    # WT[k,h] = W[h,k] / UT[m,h] = U[h,m]: consecutive work-items (h) read consecutive memory
    Wacc, Uacc = ("WT[k, h]", "UT[m, h]") if transposed else ("W[h, k]", "U[h, m]")
    knl = lp.make_kernel(
        "{[b,t,h,h0,k,m]: 0<=b<B and 0<=t<T and 0<=h,h0,k<H and 0<=m<I}",
        f"""
        hloc[h0] = hinit[b, h0]                                   {{id=init}}
        ... lbarrier                                              {{id=bar0, dep=init}}
        hnew = tanh(sum(k, {Wacc}*hloc[k]) + sum(m, {Uacc}*x[t, b, m]) + bias[h])  {{id=comp, dep=bar0}}
        ... lbarrier                                              {{id=bar1, dep=comp, inames=b:t}}
        hloc[h] = hnew                                            {{id=store, dep=bar1}}
        ... lbarrier                                              {{id=bar2, dep=store, inames=b:t}}
        hs[t, b, h] = hnew                                        {{id=out, dep=comp}}
        """,
        [lp.GlobalArg("WT" if transposed else "W", np.float64, shape=("H", "H")),
         lp.GlobalArg("UT" if transposed else "U", np.float64, shape=("I", "H") if transposed else ("H", "I")),
         lp.GlobalArg("bias", np.float64, shape=("H",)),
         lp.GlobalArg("x", np.float64, shape=("T", "B", "I")),
         lp.GlobalArg("hinit", np.float64, shape=("B", "H")),
         lp.GlobalArg("hs", np.float64, shape=("T", "B", "H")),
         lp.TemporaryVariable("hloc", np.float64, shape=("H",), address_space=lp.AddressSpace.LOCAL),
         lp.TemporaryVariable("hnew", np.float64, shape=(), address_space=lp.AddressSpace.PRIVATE), ...],
        name="rnn_T" if transposed else "rnn", lang_version=(2018, 2), seq_dependencies=False)
    knl = lp.fix_parameters(knl, T=T, B=B, H=H, I=I)
    knl = lp.tag_inames(knl, {"b": "g.0", "h": "l.0", "h0": "l.0"})
    knl = lp.prioritize_loops(knl, "t,k")      # t outermost sequential loop
    knl = lp.prioritize_loops(knl, "t,m")
    return knl

def rnn_blocked(BB, tag="unr"):
    """g.0 = block of BB batch rows, l.0 = hidden unit h; each work item keeps BB private
    accumulators (register blocking: one WT[k,h] load feeds BB FMAs). Carry hloc[BB,H] in local mem."""
    knl = lp.make_kernel(
        "{[bo,t,h,h0,k,m,bb0,bb1,bbk,bbm,bb2]: 0<=bo<B//%d and 0<=t<T and 0<=h,h0,k<H and 0<=m<I"
        " and 0<=bb0,bb1,bbk,bbm,bb2<%d}" % (BB, BB),
        """
        hloc[bb0, h0] = hinit[bo*BB + bb0, h0]                   {id=init, inames=bo:h0:bb0}
        ... lbarrier                                             {id=bar0, dep=init}
        acc[bb1] = bias[h]                                       {id=ainit, dep=bar0, inames=bo:t:h:bb1}
        acc[bbk] = acc[bbk] + WT[k, h]*hloc[bbk, k]              {id=aw, dep=ainit, inames=bo:t:h:k:bbk}
        acc[bbm] = acc[bbm] + UT[m, h]*x[t, bo*BB + bbm, m]      {id=au, dep=aw, inames=bo:t:h:m:bbm}
        ... lbarrier                                             {id=bar1, dep=au, inames=bo:t}
        hloc[bb2, h] = tanh(acc[bb2])                            {id=store, dep=bar1, inames=bo:t:h:bb2}
        hs[t, bo*BB + bb2, h] = hloc[bb2, h]                     {id=out, dep=store, inames=bo:t:h:bb2}
        ... lbarrier                                             {id=bar2, dep=out, inames=bo:t}
        """,
        [lp.GlobalArg("WT", np.float64, shape=("H", "H")), lp.GlobalArg("UT", np.float64, shape=("I", "H")),
         lp.GlobalArg("bias", np.float64, shape=("H",)), lp.GlobalArg("x", np.float64, shape=("T", "B", "I")),
         lp.GlobalArg("hinit", np.float64, shape=("B", "H")), lp.GlobalArg("hs", np.float64, shape=("T", "B", "H")),
         lp.TemporaryVariable("hloc", np.float64, shape=(BB, H), address_space=lp.AddressSpace.LOCAL),
         lp.TemporaryVariable("acc", np.float64, shape=(BB,), address_space=lp.AddressSpace.PRIVATE), ...],
        name=f"rnn_blk{BB}{tag}", lang_version=(2018, 2), seq_dependencies=False,
        silenced_warnings=["v1_scheduler_fallback"])
    knl = lp.fix_parameters(knl, T=T, B=B, H=H, I=I, BB=BB)
    knl = lp.tag_inames(knl, {"bo": "g.0", "h": "l.0", "h0": "l.0", "bbk": tag, "bbm": tag})
    knl = lp.prioritize_loops(knl, "t,k,bbk")    # t outside everything, k outside the unrolled bb
    knl = lp.prioritize_loops(knl, "t,m,bbm")
    return knl

for BB, tag in [(4, "unr"), (8, "unr"), (16, "unr"), (32, "unr"), (8, "ilp"), (16, "ilp")]:
    knl = rnn_blocked(BB, tag)
    if "src" in sys.argv and BB == 16 and tag == "unr": print(lp.generate_code_v2(knl).device_code())
    ex = knl.executor(queue)
    args = dict(bias=cla.to_device(queue, bh), x=cla.to_device(queue, xh), hinit=cla.to_device(queue, h0h),
                hs=cla.empty(queue, (T, B, H), np.float64),
                WT=cla.to_device(queue, np.ascontiguousarray(Wh.T)), UT=cla.to_device(queue, np.ascontiguousarray(Uh.T)))
    t = bench(lambda: (ex(queue, **args), queue.finish()), n=7)
    err = np.abs(args["hs"].get() - ref).max()
    print(f"loopy rnn blocked BB={BB} {tag}: {t*1e3:.1f} ms  ({t/t_np:.2f}x numpy)  maxerr {err:.1e}")

for transposed in ([False, True] if '--simple' in sys.argv else []):
    knl = rnn_knl(transposed)
    if "src" in sys.argv: print(lp.generate_code_v2(knl).device_code())
    ex = knl.executor(queue)
    args = dict(bias=cla.to_device(queue, bh), x=cla.to_device(queue, xh), hinit=cla.to_device(queue, h0h),
                hs=cla.empty(queue, (T, B, H), np.float64))
    if transposed: args.update(WT=cla.to_device(queue, np.ascontiguousarray(Wh.T)), UT=cla.to_device(queue, np.ascontiguousarray(Uh.T)))
    else: args.update(W=cla.to_device(queue, Wh), U=cla.to_device(queue, Uh))
    t = bench(lambda: (ex(queue, **args), queue.finish()), n=7)
    err = np.abs(args["hs"].get() - ref).max()
    print(f"loopy rnn transposed={transposed}: {t*1e3:.1f} ms  ({t/t_np:.2f}x numpy)  maxerr {err:.1e}")
