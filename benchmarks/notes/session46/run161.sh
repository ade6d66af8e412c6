#!/bin/bash
# W4A8-fp8 at M <= 16 on the big layers (w4a8_decode), carry .whl, any sm_90 card, <= 6 min.
# Why: session 46's H100 act8 snapshot has it at 0.81-0.89x the peer (57344x8192 M=1 107.1 us
# against 89.8), while our W4A16 decode reads the same bytes in 87.4; the decode tile (3 stages,
# 2 slabs, 2 n-frags, 4 warps) was tuned on an H200 (session 24). Same-run sweep of the ring
# depth, slabs per stage, n-frags and warps with the peer, at M = 1 and 16.
source scripts/gpu_setup.sh >/dev/null 2>&1 || { echo setup failed; exit 1; }
export PYTHONPATH=$PWD/packages/humming-cuda/src:$PWD/packages/humming-core/src:$PWD/packages/humming-cuda/tests:$PWD/benchmarks:/tmp/site
nvidia-smi --query-gpu=name --format=csv,noheader
timeout 200 python3 benchmarks/wgmma_config_sweep.py --set stages=2,3,4 --set slabs=1,2,4 \
  W4A8_FP8:57344x8192:1 W4A8_FP8:8192x28672:1 --peer --out $OUT/decode_ring.json 2>&1 | grep -v Warning
timeout 150 python3 benchmarks/wgmma_config_sweep.py --set n_frags=2,4 --set warps_n=4,8 \
  W4A8_FP8:57344x8192:1 W4A8_FP8:57344x8192:16 W4A8_FP8:8192x28672:16 --out $OUT/decode_tile.json 2>&1 \
  | grep -v Warning
