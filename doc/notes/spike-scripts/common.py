import time, os
import numpy as np
import pyopencl as cl
import pyopencl.array as cla
import pyopencl.tools as clt
import loopy as lp

def ctx_queue():
    ctx = cl.create_some_context(interactive=False)
    return ctx, cl.CommandQueue(ctx)

def bench(fn, n=5, warm=2):
    for _ in range(warm):
        fn()
    ts = []
    for _ in range(n):
        t = time.perf_counter(); fn(); ts.append(time.perf_counter() - t)
    return min(ts)
