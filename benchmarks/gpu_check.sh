#!/bin/bash
# SPDX-License-Identifier: MIT
# The checks of a session lent an NVIDIA GPU machine, in one call, within a
# budget of seconds (such a machine is lent for minutes: see
# benchmarks/README.md, "On a lent GPU machine").
#
#   here:  bash benchmarks/gpu_check.sh fetch
#          (cp312 wheels of the runtime stack into .whl/, which git ignores)
#   there: bash benchmarks/gpu_check.sh run BUDGET [STEP...]
#          with .whl carried along; each STEP's output goes to $OUT/STEP.txt
#          (or ./gpu-check/ without $OUT). Steps: demo, bench, sweep, w5cold,
#          tests (the whole suite, streamed, so a cut run still reports),
#          hang (the test that hung on an H100, with every thread's Python
#          stack dumped after 40 s, by faulthandler, which needs no GIL),
#          kernels (W3 at the default profile, each kernel's device times:
#          the full sum's spread between runs is not explained yet);
#          jagged (bench_jagged.py and bench_jagged_sequences.py on the GPU),
#          cmd (bash -c "$STEP_CMD", cut at $CMD_LIMIT seconds);
#          default: demo bench sweep w5cold tests.
#          $BENCH_LIMIT, $TESTS_LIMIT and $JAGGED_LIMIT cut those steps
#          sooner (seconds).
#          $SWEEP_ONLY narrows the sweep (gpu_sweep.py --only), $TESTS names
#          the test paths, in the order they should run (default: test).
set -u
cd "$(dirname "$0")/.."

# (../shared/gpu/fetch-wheels.sh fetches the whole pinned stack, notebook
# and doc packages too; this fetches only what the GPU image lacks)
fetch() {
  local plat="--platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64"
  plat="$plat --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64"
  mkdir -p .whl
  for req in loopy islpy pyopencl pymbolic pytools codepy constantdict Mako \
             MarkupSafe platformdirs siphash24 genpy cgen; do
    pin=$(grep -iE "^${req}==" requirements-ci.txt)
    python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
        --implementation cp $plat -d .whl "$pin" 2>/dev/null \
      || python3 -m pip wheel -q --no-deps -w .whl "$pin"
  done
  ls .whl
}

setup() {
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir \
      --upgrade --target /tmp/site .whl/*.whl || exit 3
  export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
  local lib
  lib=$(ldconfig -p | awk '/libnvidia-opencl\.so\.1/{print $NF; exit}')
  [ -z "$lib" ] && lib=$(find /usr/local/nvidia /usr/lib /usr/lib64 \
      -name 'libnvidia-opencl.so.1' 2>/dev/null | head -1)
  if [ -n "$lib" ] && ! grep -qs nvidia-opencl /etc/OpenCL/vendors/*.icd; then
    mkdir -p /etc/OpenCL/vendors && echo "$lib" > /etc/OpenCL/vendors/nvidia.icd
  fi
  PYOPENCL_CTX="$(python3 -c "
import pyopencl as cl
print(next(i for i, p in enumerate(cl.get_platforms()) if 'nvidia' in p.vendor.lower()))"):0"
  export PYOPENCL_CTX
  python3 -c "import pyopencl as cl; print([(p.name, d.name) for p in cl.get_platforms() for d in p.get_devices()])"
}

# step NAME LIMIT CMD...: CMD's output into $out/NAME.txt, cut at LIMIT
# seconds or at what is left of the budget
step() {
  local name=$1 limit=$2 left=$(( budget - ($(date +%s) - start) ))
  shift 2
  [ "$limit" -gt "$left" ] && limit=$left
  if [ "$limit" -lt 10 ]; then echo "=== $name: skipped (no time left)"; return; fi
  echo "=== $name (at most $limit s)"
  timeout "$limit" "$@" > "$out/$name.txt" 2>&1
  echo "=== $name: exit $? ($(( budget - ($(date +%s) - start) )) s left)"
  tail -n 30 "$out/$name.txt"
}

run() {
  budget=${1:?usage: gpu_check.sh run BUDGET [STEP...]}
  shift
  start=$(date +%s)
  out=${OUT:-gpu-check}
  mkdir -p "$out"
  setup
  for s in "${@:-demo bench sweep w5cold tests}"; do
    for name in $s; do
      case $name in
        demo) step demo 60 python3 examples/demo.py ;;
        bench) step bench "${BENCH_LIMIT:-240}" python3 benchmarks/bench_codegen.py --device gpu \
                 --repeat 10 --budget 1 --no-subprocess ;;
        sweep) step sweep 120 python3 benchmarks/gpu_sweep.py --device gpu --repeat 20 \
                 ${SWEEP_ONLY:+--only "$SWEEP_ONLY"} ;;
        kernels) step kernels 60 python3 benchmarks/gpu_sweep.py --device gpu \
                   --repeat 20 --only W3 --variant gpu_local_size=256 --kernels ;;
        w5cold) step w5cold 60 python3 benchmarks/gpu_sweep.py --device gpu --cold \
                  --only W5-irregular --repeat 5 \
                  --variant gpu_max_nest_cost=1500 ;;
        tests) step tests "${TESTS_LIMIT:-600}" python3 -m pytest -p no:cacheprovider -n 16 -v \
                 --timeout 180 -rf ${TESTS:-test} --ignore=test/test_notebook.py
               grep -E "FAILED|ERROR|crashed" "$out/tests.txt" | head -40 ;;
        jagged) step jagged "${JAGGED_LIMIT:-150}" python3 benchmarks/bench_jagged.py \
                  --repeat 3 --no-subprocess
                step jagged_sequences "${JAGGED_LIMIT:-150}" python3 \
                  benchmarks/bench_jagged_sequences.py --repeat 3 --no-subprocess ;;
        cmd) step cmd "${CMD_LIMIT:-120}" bash -c "$STEP_CMD" ;;
        hang) step hang 60 python3 -c "
import faulthandler, sys, pytest
faulthandler.dump_traceback_later(40, exit=True)
sys.exit(pytest.main(['-p', 'no:cacheprovider', '-p', 'no:xdist', '-q', '-s',
    'test/test_codegen_ops.py::test_symbolic_shapes_and_scalars[cpu-w1-n5]']))" ;;
        *) echo "unknown step $name"; exit 2 ;;
      esac
    done
  done
}

case ${1:-} in
  fetch) fetch ;;
  run) shift; run "$@" ;;
  *) echo "usage: gpu_check.sh fetch | run BUDGET [STEP...]"; exit 2 ;;
esac
