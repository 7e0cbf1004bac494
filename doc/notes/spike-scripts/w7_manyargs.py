"""W7: loopy kernel with NARGS separate global array arguments: out[i] = a0[i] + ... + a{N-1}[i]."""
import pymbolic.primitives as p
import sys, time, warnings, numpy as np, pyopencl as cl, pyopencl.array as cla, loopy as lp
from common import ctx_queue, bench
warnings.filterwarnings("ignore", category=cl.CompilerWarning)
ctx, queue = ctx_queue()
dev = queue.device
print("CL_DEVICE_MAX_PARAMETER_SIZE =", dev.max_parameter_size, "bytes;",
      "MAX_CONSTANT_ARGS =", dev.max_constant_args)
n = 1024
NARGS = [int(a) for a in sys.argv[1:] if a.isdigit()] or [10, 100, 126, 127, 128, 200, 1000]
for NA in NARGS:
    names = [f"a{k}" for k in range(NA)]
    hs = [np.full(n, float(k)) for k in range(NA)]
    t0 = time.perf_counter()
    # build a FLAT pymbolic Sum: parsing "a0[i] + a1[i] + ..." nests binary Sums -> RecursionError
    i = p.Variable("i")
    insn = lp.Assignment(p.Variable("out")[i], p.Sum(tuple(p.Variable(nm)[i] for nm in names)))
    knl = lp.make_kernel("{[i]: 0<=i<n}", [insn],
        [lp.GlobalArg(",".join(names), np.float64, shape=("n",)),
         lp.GlobalArg("out", np.float64, shape=("n",)), ...], name=f"many{NA}", lang_version=(2018, 2))
    knl = lp.fix_parameters(knl, n=n)
    knl = lp.split_iname(knl, "i", 128, outer_tag="g.0", inner_tag="l.0")
    if "--skip" in sys.argv: knl = lp.set_options(knl, skip_arg_checks=True)
    t1 = time.perf_counter()
    try:
        code = lp.generate_code_v2(knl).device_code()
        t2 = time.perf_counter()
        ex = knl.executor(queue)
        args = {nm: cla.to_device(queue, h) for nm, h in zip(names, hs)}
        out = cla.empty(queue, n, np.float64)
        ex(queue, out=out, **args); queue.finish()
        t3 = time.perf_counter()
        ok = np.allclose(out.get(), sum(range(NA)))
        tc = bench(lambda: (ex(queue, out=out, **args), queue.finish()), n=5)
        print(f"NARGS={NA:5d}: make+transform {t1-t0:.2f}s  codegen {t2-t1:.2f}s  first call {t3-t2:.2f}s"
              f"  steady call {tc*1e3:.2f} ms  correct={ok}")
    except Exception as e:
        print(f"NARGS={NA:5d}: FAILED after {time.perf_counter()-t1:.1f}s: {type(e).__name__}: {str(e)[:300]}")
