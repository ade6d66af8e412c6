#!/bin/bash
# More points of the 128-column tile at two CTAs per SM (routing data), same machine as run88-91.
source scripts/gpu_setup.sh >/dev/null 2>&1 || { echo setup failed; exit 1; }
export PYTHONPATH=$PWD/packages/humming-cuda/src:$PWD/packages/humming-core/src:$PWD/packages/humming-cuda/tests:$PWD/benchmarks:/tmp/site
N="--set rs_block_n=128 --set rs_ctas_per_sm=2 --set stages=4"
S=benchmarks/wgmma_config_sweep.py
timeout 80 python3 $S W4A16_G128:57344x8192:128 W4A16_G128:57344x8192:1024 $N --set rs_block_m=128 --set split_k=1,2 --out $OUT/s1.json 2>&1 | grep -v Warning
timeout 80 python3 $S W4A16_G128:8192x28672:64 W4A16_G128:4096x14336:64 $N --set rs_block_m=64 --set split_k=2,4,8 --out $OUT/s2.json 2>&1 | grep -v Warning
timeout 90 python3 $S W4A16_G128:6144x4096:256 W4A16_G128:4096x14336:256 W4A16_G128:8192x28672:256 $N --set rs_block_m=128 --set split_k=1,2,4 --out $OUT/s3.json 2>&1 | grep -v Warning
timeout 80 python3 $S MXFP4:57344x8192:64 MXFP4:6144x4096:128 $N --set rs_block_m=64,128 --set split_k=1,2,4 --out $OUT/s4.json 2>&1 | grep -v Warning
