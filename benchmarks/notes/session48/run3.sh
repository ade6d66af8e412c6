#!/bin/bash
# Session 48, last call (carry .whl), any sm_90 card, <= 3 min: the 128-column / stream-K plans
# offered from M = 33 (N128_MIN_M) against the 256-column 48- / 64-row plans routed there now,
# same run, with the peer (the heuristics module's N128_MIN_M set to 33 for "new"; "old" = 64).
source scripts/gpu_setup.sh >/dev/null 2>&1 || { echo setup failed; exit 1; }
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD/packages/humming-cuda/src:$PWD/packages/humming-core/src:$PWD/packages/humming-cuda/tests:$PWD/benchmarks:/tmp/site
nvidia-smi --query-gpu=name --format=csv,noheader | tee $OUT/gpu.txt
sed -i 's/^N128_MIN_M, N128_MAX_M = 64, 256/N128_MIN_M, N128_MAX_M = 33, 256/' packages/humming-cuda/src/humming_cuda/kernels/wna16_wgmma/heuristics.py
grep -n "^N128_MIN_M" packages/humming-cuda/src/humming_cuda/kernels/wna16_wgmma/heuristics.py
P=""; for l in 57344x8192 8192x28672 4096x14336 6144x4096; do for m in 40 56; do P="$P W4A16_G128:$l:$m"; done; done
timeout 170 python3 benchmarks/route_ab.py --module humming_cuda.kernels.wna16_wgmma.heuristics --old N128_MIN_M=64 \
  $P MXFP4:57344x8192:40 W3A16_G128:6144x4096:40 --peer --out $OUT/ab_n128_min_m.json 2>&1 | grep -v Warning
