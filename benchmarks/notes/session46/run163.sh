#!/bin/bash
# W3A16 g128 on the 128-column / stream-K plans (carry .whl), any sm_90 card, <= 5 min. Why:
# session 46's H100 snapshot has W3A16 g128 at 0.72-0.92x the peer at 20 points, e.g. 57344x8192
# M=64 180.6 us on the 256-column tile against W4A16's 138.6 on the 128-column stream-K plan
# that only 4-bit codes take (wna16_wgmma.heuristics.N128_MIN_BITS = 4). Same-run route A/B:
# A = the heuristics as they are, B = with N128_MIN_BITS=3 (route_ab's --old sets the constant;
# here that is the candidate), at the 12 points where the route moves, with the peer. Then the
# 3-bit cases of the 128-column tiles' conformance (already GPU-verified; run again for the
# record). If B wins: set N128_MIN_BITS = 3 and update the routing tests.
source scripts/gpu_setup.sh >/dev/null 2>&1 || { echo setup failed; exit 1; }
export PYTHONPATH=$PWD/packages/humming-cuda/src:$PWD/packages/humming-core/src:$PWD/packages/humming-cuda/tests:$PWD/benchmarks:/tmp/site
nvidia-smi --query-gpu=name --format=csv,noheader
P=""
for l in 57344x8192 8192x28672 6144x4096 4096x14336; do for m in 64 128 256; do P="$P W3A16_G128:$l:$m"; done; done
timeout 220 python3 benchmarks/route_ab.py --module humming_cuda.kernels.wna16_wgmma.heuristics \
  --old N128_MIN_BITS=3 $P --peer --out $OUT/w3_narrow_ab.json 2>&1 | grep -v Warning
timeout 60 python3 -m pytest -q -p no:cacheprovider packages/humming-cuda/tests/test_wna16_wgmma_conformance.py \
  -k "128_column and (int3 or uint3)" 2>&1 | tail -3
