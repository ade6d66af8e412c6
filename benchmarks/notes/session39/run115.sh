#!/bin/bash
# Session 39 (carry .whl), ~4 min, any sm_90 card, on main: the 256-column stream-K form (two
# consumer warpgroups, one CTA per SM, 128-row token tiles) since the producer's walk stopped
# dividing per step (session 38 measured only the 128-column form after it), at M = 128 / 256,
# against the routed plan and the peer in the same run.
source scripts/gpu_setup.sh >/dev/null 2>&1 || { echo setup failed; exit 1; }
export PYTHONPATH=$PWD/packages/humming-cuda/src:$PWD/packages/humming-core/src:$PWD/packages/humming-cuda/tests:$PWD/benchmarks:/tmp/site
T0=$SECONDS
nvidia-smi --query-gpu=name --format=csv,noheader | tee $OUT/gpu.txt
P=""
for L in 57344x8192 8192x28672 6144x4096 4096x14336; do for M in 128 256; do P="$P W4A16_G128:$L:$M"; done; done
P="$P MXFP4:57344x8192:128 MXFP4:57344x8192:256 MXFP4:8192x28672:128 W4A16_G128:57344x8192:512"
SK="--set rs_block_n=256 --set rs_ctas_per_sm=1 --set split_k=1 --set rs_stream_k=true --set stages=4"
timeout 280 python3 benchmarks/wgmma_config_sweep.py $P $SK --set rs_block_m=128 --peer --out $OUT/sk256.json 2>&1 \
  | grep -v Warning | cut -c1-90 | tee $OUT/sk256.txt
echo "done at $((SECONDS-T0)) s"
