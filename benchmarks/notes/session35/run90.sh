#!/bin/bash
# Call 3 (~5 min; carry .whl and .abh = main's include/ at 99490dd:
#   mkdir -p .abh && git archive 99490dd packages/humming-cuda/src/humming_cuda/include | tar -x -C .abh):
# split-K's last CTA summing its own partial from shared memory (epilogue/split_tile.cuh) against
# main's read-back of every slot, same config each side, at routed split-K points.
source scripts/gpu_setup.sh >/dev/null 2>&1 || { echo setup failed; exit 1; }
export PYTHONPATH=$PWD/packages/humming-cuda/src:$PWD/packages/humming-core/src:$PWD/packages/humming-cuda/tests:$PWD/benchmarks:/tmp/site
nvidia-smi --query-gpu=name --format=csv,noheader | tee $OUT/gpu.txt
timeout 170 python3 benchmarks/header_ab.py --b .abh/packages/humming-cuda/src/humming_cuda/include \
  W4A16_G128:6144x4096:128 W4A16_G128:4096x14336:128 W4A16_G128:6144x4096:64 \
  W4A16_G128:4096x14336:64 W4A16_G128:8192x28672:128 W4A16_G128:6144x4096:32 \
  --out $OUT/ab_split_own.json 2>&1 | grep -v Warning
# wna16_decode's split at M = 16 (issue 6's lowest roofline row: 57344x8192 M=16 at 0.60): session
# 30's run70 had k_steps 8 split 1 at 84.8 us where dense.json (an earlier run) holds 95.4 for the
# routed split 2; same run here, with the peer.
timeout 120 python3 benchmarks/wgmma_config_sweep.py --family wna16_decode --peer --set split_k=1,2,4 \
  W4A16_G128:57344x8192:16 W4A16_G128:8192x28672:16 W4A16_G128:57344x8192:12 \
  --out $OUT/decode_split16.json 2>&1 | grep -v Warning
