#!/bin/bash
# Session 43 (carry .whl), any sm_90 card, <= 4 min: the 128-column stream-K form on one token
# tile of 128 rows (and on 64-row ones) at M = 96-128, where split-K's idle tail costs us against
# the peer's stream-K (run139's ncu: the peer's SMs active 91% of its cycles, ours 71%).
source scripts/gpu_setup.sh >/dev/null 2>&1 || { echo setup failed; exit 1; }
export PYTHONPATH=$PWD/packages/humming-cuda/src:$PWD/packages/humming-core/src:$PWD/packages/humming-cuda/tests:$PWD/benchmarks:/tmp/site
nvidia-smi --query-gpu=name --format=csv,noheader | tee $OUT/gpu.txt
PTS="W4A16_G128:4096x14336:96 W4A16_G128:4096x14336:128 MXFP4:4096x14336:128 W4A16_G128:8192x28672:128 W4A16_G128:6144x4096:128"
SK="--set rs_stream_k=true --set split_k=1 --set rs_cluster_split=false --set rs_cluster_ctas=0"
# 64-row token tiles at the routed stream-K form's 4 stages; 128-row ones at 3 stages (two CTAs'
# shared memory: 4 stages of 128 rows take 124-140 KB a CTA), stages sized for 4- or 8-bit codes
timeout 110 python3 benchmarks/wgmma_config_sweep.py --peer $SK --set rs_block_m=64 --set stages=4 $PTS \
  --out $OUT/sk64.json 2>&1 | grep -v "not a valid\|Warning" | tee $OUT/sk64.txt
timeout 110 python3 benchmarks/wgmma_config_sweep.py $SK --set rs_block_m=128 --set stages=3 --set rs_code_bits=4,8 $PTS \
  --out $OUT/sk128.json 2>&1 | grep -v "not a valid\|Warning" | tee $OUT/sk128.txt

