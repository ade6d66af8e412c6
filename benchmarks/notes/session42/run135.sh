#!/bin/bash
# Session 42 (carry .whl), run right after run134 on the same warm H200, ~20 s: the two-row-of-tiles
# points of 4096x14336 again (M=192 twice), route A/B of the cluster rule as run134 had it
# (routed at M >= 65 then; since restricted to M <= 128 on this data).
source scripts/gpu_setup.sh >/dev/null 2>&1
export PYTHONPATH=$PWD/packages/humming-cuda/src:$PWD/packages/humming-core/src:$PWD/packages/humming-cuda/tests:$PWD/benchmarks:/tmp/site
timeout 100 python3 benchmarks/route_ab.py --module humming_cuda.kernels.w8a8_wgmma.heuristics --old CLUSTER_MIN_M=1000000 W8A8_FP8:4096x14336:192 W8A8_FP8:4096x14336:160 W8A8_FP8:4096x14336:224 FP8_BLOCK128:4096x14336:192 W8A8_FP8:4096x14336:192 --out $OUT/ab192.json 2>&1 | grep -v Warning
