#!/bin/bash
# The 128-column tile over every split at the mid-M points (the cost model's fit data), same run.
# Run with wna16_wgmma/heuristics.py as of 367f6f6^ in the working tree (git show
# 367f6f6^:packages/humming-cuda/src/humming_cuda/kernels/wna16_wgmma/heuristics.py > that file),
# so that each row's "chosen" is the 256-column plan the tile is compared with; restore it after.
source scripts/gpu_setup.sh >/dev/null 2>&1 || { echo setup failed; exit 1; }
export PYTHONPATH=$PWD/packages/humming-cuda/src:$PWD/packages/humming-core/src:$PWD/packages/humming-cuda/tests:$PWD/benchmarks:/tmp/site
nvidia-smi --query-gpu=name --format=csv,noheader
N="--set rs_block_n=128 --set rs_ctas_per_sm=2 --set stages=4 --set rs_block_m=64,128 --set split_k=1,2,3,4,5,6,8"
S=benchmarks/wgmma_config_sweep.py
i=0
for P in W4A16_G128:57344x8192:64 W4A16_G128:57344x8192:128 W4A16_G128:57344x8192:256 \
         W4A16_G128:8192x28672:64 W4A16_G128:8192x28672:128 W4A16_G128:8192x28672:256 \
         W4A16_G128:4096x14336:64 W4A16_G128:4096x14336:128 W4A16_G128:4096x14336:256 \
         W4A16_G128:6144x4096:64 W4A16_G128:6144x4096:128 W4A16_G128:6144x4096:256 \
         MXFP4:6144x4096:128 MXFP4:4096x14336:128 W8A16:4096x14336:128; do
  i=$((i+1)); timeout 60 python3 $S $P $N --out $OUT/d$i.json 2>&1 | grep -v Warning | awk '{print $1, $NF-0, $0}' | sed -n '1,100p' | cut -c1-160
done
