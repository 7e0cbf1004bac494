"""W6 best: vanilla RNN scan h_{t+1} = tanh(W h_t + U x_t + b), T=64, B=32, H=256, I=128, ONE launch.
g.0 = block of BB batch rows; l.0 = hv (H/V work-items, each owns V consecutive hidden units as one
doubleV vector); private acc[BB] of doubleV (register blocking as in the matmul recipe);
carry hloc[BB, H] in LOCAL memory; t is the outermost sequential loop; 2 local barriers per step."""
import sys, warnings, numpy as np, pyopencl as cl, pyopencl.array as cla, loopy as lp
import vecpatch  # vectorized tanh(doubleV)
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
ref = np_rnn(); t_np = bench(np_rnn, n=7)
print(f"numpy loop {t_np*1e3:.1f} ms")

def rnn_vec(BB=8, V=8, bbtag="ilp"):
    knl = lp.make_kernel(
        # param//param is not affine for isl -> substitute numbers into the domain string
        f"{{[bo,t,hv,k,m,bb0,jv0,bb1,jv1,bbk,jvk,bbm,jvm,bb2,jv2,bb3,jv3]: 0<=bo<{B//BB} and 0<=t<{T}"
        f" and 0<=hv<{H//V} and 0<=k<{H} and 0<=m<{I}"
        f" and 0<=bb0,bb1,bbk,bbm,bb2,bb3<{BB} and 0<=jv0,jv1,jvk,jvm,jv2,jv3<{V}}}",
        """
        hloc[bb0, hv*V + jv0] = hinit[bo*BB + bb0, hv, jv0]              {id=init, inames=bo:hv:bb0:jv0}
        ... lbarrier                                                     {id=bar0, dep=init}
        acc[bb1, jv1] = bias[hv, jv1]                                    {id=ainit, dep=bar0, inames=bo:t:hv:bb1:jv1}
        acc[bbk, jvk] = acc[bbk, jvk] + hloc[bbk, k] * WT[k, hv, jvk]     {id=aw, dep=ainit, inames=bo:t:hv:k:bbk:jvk}
        acc[bbm, jvm] = acc[bbm, jvm] + x[t, bo*BB + bbm, m] * UT[m, hv, jvm]  {id=au, dep=aw, inames=bo:t:hv:m:bbm:jvm}
        hn[bb2, jv2] = tanh(acc[bb2, jv2])                               {id=act, dep=au, inames=bo:t:hv:bb2:jv2}
        hs[t, bo*BB + bb2, hv, jv2] = hn[bb2, jv2]                       {id=out, dep=act, inames=bo:t:hv:bb2:jv2}
        ... lbarrier                                                     {id=bar1, dep=act, inames=bo:t}
        hloc[bb3, hv*V + jv3] = hn[bb3, jv3]                             {id=store, dep=bar1, inames=bo:t:hv:bb3:jv3}
        ... lbarrier                                                     {id=bar2, dep=store, inames=bo:t}
        """,
        [lp.GlobalArg("WT", np.float64, shape=("H", "H//V", "V")),
         lp.GlobalArg("UT", np.float64, shape=("I", "H//V", "V")),
         lp.GlobalArg("bias", np.float64, shape=("H//V", "V")),
         lp.GlobalArg("x", np.float64, shape=("T", "B", "I")),
         lp.GlobalArg("hinit", np.float64, shape=("B", "H//V", "V")),
         lp.GlobalArg("hs", np.float64, shape=("T", "B", "H//V", "V")),
         lp.TemporaryVariable("hloc", np.float64, shape=("BB", "H"), address_space=lp.AddressSpace.LOCAL),
         *[lp.TemporaryVariable(nm, np.float64, shape=("BB", "V"), address_space=lp.AddressSpace.PRIVATE)
           for nm in ["acc", "hn"]], ...],
        name=f"rnn_vec{BB}x{V}", lang_version=(2018, 2), seq_dependencies=False,
        silenced_warnings=["v1_scheduler_fallback"])
    knl = lp.fix_parameters(knl, T=T, B=B, H=H, I=I, BB=BB, V=V)
    knl = lp.tag_array_axes(knl, "WT,UT", "c,c,vec")
    knl = lp.tag_array_axes(knl, "hs", "c,c,c,vec")
    knl = lp.tag_array_axes(knl, "bias,acc,hn", "c,vec")
    knl = lp.tag_inames(knl, {"bo": "g.0", "hv": "l.0",
                              "jv1": "vec", "jvk": "vec", "jvm": "vec", "jv2": "vec", "jv3": "unr",
                              "bbk": bbtag, "bbm": bbtag, "bb1": "unr", "bb2": "unr"})
    knl = lp.prioritize_loops(knl, "t,k,bbk")    # t outermost; k outside the unrolled batch block
    knl = lp.prioritize_loops(knl, "t,m,bbm")
    return knl

def run(knl):
    ex = knl.executor(queue)
    V = knl.default_entrypoint.temporary_variables["acc"].shape[1]
    args = dict(WT=cla.to_device(queue, np.ascontiguousarray(Wh.T).reshape(H, H//V, V)),
                UT=cla.to_device(queue, np.ascontiguousarray(Uh.T).reshape(I, H//V, V)),
                bias=cla.to_device(queue, bh.reshape(H//V, V)), x=cla.to_device(queue, xh),
                hinit=cla.to_device(queue, h0h.reshape(B, H//V, V)), hs=cla.empty(queue, (T, B, H//V, V), np.float64))
    t = bench(lambda: (ex(queue, **args), queue.finish()), n=9)
    return t, np.abs(args["hs"].get().reshape(T, B, H) - ref).max()

for BB, V, tag in [(2, 16, "ilp"), (2, 8, "ilp"), (4, 8, "ilp"), (8, 8, "ilp"), (1, 16, "ilp")]:
    try:
        knl = rnn_vec(BB, V, tag)
        if "src" in sys.argv and (BB, V) == (8, 8): print(lp.generate_code_v2(knl).device_code())
        t, err = run(knl)
        print(f"rnn_vec BB={BB:2d} V={V:2d} {tag}: {t*1e3:6.1f} ms ({t/t_np:.2f}x numpy loop) maxerr {err:.1e}")
    except Exception as e:
        print(BB, V, tag, "FAILED", type(e).__name__, str(e)[:400])
