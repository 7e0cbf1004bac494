"""W8: first-call cost breakdown for a simple kernel; run twice with a fresh cache dir to see disk-cache effect.
Usage: XDG_CACHE_HOME=/tmp/spike/cache_x POCL_CACHE_DIR=/tmp/spike/pocl_x python w8_compile.py [tag]"""
import time; T0 = time.perf_counter()
import sys, os, warnings, numpy as np
import pyopencl as cl, pyopencl.array as cla, loopy as lp
warnings.filterwarnings("ignore")
T1 = time.perf_counter()
ctx = cl.create_some_context(interactive=False); queue = cl.CommandQueue(ctx)
T2 = time.perf_counter()
knl = lp.make_kernel("{[i]: 0<=i<n}", "out[i] = exp(-x[i]*x[i])*sin(3*x[i]) + 0.5*x[i]/(1+x[i]*x[i])",
    [lp.GlobalArg("x,out", np.float64, shape=("n",)), ...], name="w8k", lang_version=(2018, 2))
knl = lp.split_iname(knl, "i", 256, outer_tag="g.0", inner_tag="l.0")
T3 = time.perf_counter()
if "exonly" not in sys.argv:
    code = lp.generate_code_v2(knl).device_code()        # how to get the OpenCL source
T4 = time.perf_counter()
if "exonly" not in sys.argv:
    prg = cl.Program(ctx, code).build()                  # OpenCL (PoCL/clang) build alone
T5 = time.perf_counter()
ex = knl.executor(queue)
x = cla.to_device(queue, np.linspace(-1, 1, 1 << 16)); out = cla.empty_like(x)
T6 = time.perf_counter()
ex(queue, x=x, out=out); queue.finish()                  # first executor call (typing+codegen+build+invoker)
T7 = time.perf_counter()
ex(queue, x=x, out=out); queue.finish()
T8 = time.perf_counter()
print(f"{sys.argv[1:]} LOOPY_NO_CACHE={os.environ.get('LOOPY_NO_CACHE')} import {T1-T0:.2f}s  ctx {T2-T1:.2f}s"
      f"  make_kernel+split {T3-T2:.3f}s  generate_code_v2 {T4-T3:.3f}s  cl build {T5-T4:.3f}s"
      f"  executor 1st call {T7-T6:.3f}s  2nd call {1e3*(T8-T7):.2f} ms")
