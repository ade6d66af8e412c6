#!/bin/bash
# Session 43 (carry .whl), any sm_90 card, <= 4 min: the 128-column stream-K form on one token
# tile of 128 rows (and on 64-row ones) at M = 96-128, where split-K's idle tail costs us against
# the peer's stream-K (run139's ncu: the peer's SMs active 91% of its cycles, ours 71%).
source scripts/gpu_setup.sh >/dev/null 2>&1 || { echo setup failed; exit 1; }
export PYTHONPATH=$PWD/packages/humming-cuda/src:$PWD/packages/humming-core/src:$PWD/packages/humming-cuda/tests:$PWD/benchmarks:/tmp/site
nvidia-smi --query-gpu=name --format=csv,noheader | tee $OUT/gpu.txt
timeout 220 python3 benchmarks/wgmma_config_sweep.py --peer --set rs_stream_k=true --set split_k=1 --set rs_cluster_split=false --set rs_cluster_ctas=0 --set rs_block_m=64,128 \
  W4A16_G128:4096x14336:96 W4A16_G128:4096x14336:128 MXFP4:4096x14336:128 W4A16_G128:8192x28672:128 W4A16_G128:6144x4096:128 \
  --out $OUT/sk.json 2>&1 | grep -v "not a valid\|Warning" | tee $OUT/sk.txt
cd $OUT && tar czf run140.tgz *.txt *.json; cd - >/dev/null
