#!/bin/bash
# Session 41 (carry .whl), <= 100 s: the newly routed points of 57344x8192 not in run127.
source scripts/gpu_setup.sh >/dev/null 2>&1 || { echo setup failed; exit 1; }
export PYTHONPATH=$PWD/packages/humming-cuda/src:$PWD/packages/humming-core/src:$PWD/packages/humming-cuda/tests:$PWD/benchmarks:/tmp/site
timeout 90 python3 benchmarks/route_ab.py --module humming_cuda.kernels.wna16_wgmma.heuristics --old MID_MIN_M=512 --old WIDE_MIN_M=1024 W4A16_G128:57344x8192:384 W4A16_G128:57344x8192:512 W4A16_G128:57344x8192:320 --out $OUT/big_ab.json 2>&1 | grep -v Warning
