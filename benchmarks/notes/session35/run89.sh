#!/bin/bash
# Call 2 of 2 (~8 min, right after run88 on the same machine): the 128-column tile at the other
# mid-M gap points (split-K and stream-K), against the routed plan, the peer and cuBLAS fp16.
source scripts/gpu_setup.sh >/dev/null 2>&1 || { echo setup failed; exit 1; }
export PYTHONPATH=$PWD/packages/humming-cuda/src:$PWD/packages/humming-core/src:$PWD/packages/humming-cuda/tests:$PWD/benchmarks:/tmp/site
T0=$SECONDS
nvidia-smi --query-gpu=name --format=csv,noheader | tee $OUT/gpu.txt
N128="--set rs_block_n=128 --set rs_ctas_per_sm=2 --peer"
timeout 100 python3 benchmarks/wgmma_config_sweep.py W4A16_G128:4096x14336:128 $N128 --set rs_block_m=128 --set stages=4 --set split_k=1,2,4,6 --out $OUT/sweep_4096_128.json 2>&1 | grep -v Warning
timeout 80 python3 benchmarks/wgmma_config_sweep.py W4A16_G128:6144x4096:64 $N128 --set rs_block_m=64 --set stages=4 --set split_k=1,2,4,6 --out $OUT/sweep_6144_64.json 2>&1 | grep -v Warning
timeout 80 python3 benchmarks/wgmma_config_sweep.py W4A16_G128:8192x28672:128 $N128 --set rs_block_m=128 --set stages=4 --set split_k=1,2,4 --out $OUT/sweep_8192_128.json 2>&1 | grep -v Warning
timeout 80 python3 benchmarks/wgmma_config_sweep.py W4A16_G128:57344x8192:256 $N128 --set rs_block_m=128 --set stages=4 --set split_k=1,2 --out $OUT/sweep_57344_256.json 2>&1 | grep -v Warning
SK="--set rs_stream_k=true --set split_k=1 --set rs_block_n=128 --set rs_ctas_per_sm=2"
timeout 120 python3 benchmarks/wgmma_config_sweep.py W4A16_G128:6144x4096:128 W4A16_G128:4096x14336:128 $SK --set rs_block_m=128 --set stages=3 --out $OUT/sweep_stream_128.json 2>&1 | grep -v Warning
timeout 60 python3 benchmarks/wgmma_config_sweep.py W4A16_G128:57344x8192:64 $SK --set rs_block_m=64 --set stages=4 --out $OUT/sweep_stream_64.json 2>&1 | grep -v Warning
echo "done at $((SECONDS-T0)) s"
