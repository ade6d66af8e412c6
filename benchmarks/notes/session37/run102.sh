#!/bin/bash
# For the next GPU session (carry .whl), ~5 min, any sm_90 card: the 128-column tile in its
# stream-K form (two CTAs per SM, as the published kernel schedules its 128-column tiles at mid M)
# against the routed plan and the peer, same run, at the mid-M points where the peer leads
# (H100, session 37's run100: 0.72-0.95x the peer at M = 64 / 128). Stages 3: two 128-row CTAs
# fit 3 beside their staged parts (wna16_wgmma_cases.NARROW_N_STREAM_SHAPES).
source scripts/gpu_setup.sh >/dev/null 2>&1 || { echo setup failed; exit 1; }
export PYTHONPATH=$PWD/packages/humming-cuda/src:$PWD/packages/humming-core/src:$PWD/packages/humming-cuda/tests:$PWD/benchmarks:/tmp/site
nvidia-smi --query-gpu=name --format=csv,noheader | tee $OUT/gpu.txt
S="--set rs_block_n=128 --set rs_ctas_per_sm=2 --set rs_stream_k=true --set split_k=1 --set stages=3 --set rs_block_m=64,128 --peer"
timeout 500 python3 benchmarks/wgmma_config_sweep.py W4A16_G128:6144x4096:64 W4A16_G128:6144x4096:128 \
  W4A16_G128:6144x4096:256 W4A16_G128:4096x14336:64 W4A16_G128:4096x14336:128 W4A16_G128:57344x8192:64 \
  W4A16_G128:57344x8192:256 W4A16_G128:8192x28672:64 W4A16_G128:8192x28672:128 $S --out $OUT/stream128.json 2>&1 \
  | grep -v Warning | cut -c1-170 | tee $OUT/stream128.txt
