#!/bin/bash
# Session 38 (carry .whl), ~6 min, any sm_90 card: (1) the dense wgmma conformance file again
# (run105's thread-0 form fixture failed to compile: the routing now picks 128-column / two-CTA
# tiles, which need the producer warpgroup; the fixture now pins 256 columns, one CTA per SM);
# (2) the 128-column stream-K form after the producer walk fix (run106: 57344x8192 M=64 141.2 us
# against the routed 165.5 and the peer 132.8) over M = 64 / 128 / 256 on the four layers, 64-row
# tiles at 4 stages and 128-row ones at 3, peer and the routed plan in the same run.
source scripts/gpu_setup.sh >/dev/null 2>&1 || { echo setup failed; exit 1; }
export PYTHONPATH=$PWD/packages/humming-cuda/src:$PWD/packages/humming-core/src:$PWD/packages/humming-cuda/tests:$PWD/benchmarks:/tmp/site
T0=$SECONDS
nvidia-smi --query-gpu=name --format=csv,noheader | tee $OUT/gpu.txt
T=packages/humming-cuda/tests
timeout 240 python3 -m pytest -q -p no:cacheprovider $T/test_wna16_wgmma_conformance.py --tb=short 2>&1 | tail -6 | tee $OUT/conf.txt
echo "conformance done at $((SECONDS-T0)) s"
P=""
for L in 57344x8192 8192x28672 6144x4096 4096x14336; do for M in 64 128 256; do P="$P W4A16_G128:$L:$M"; done; done
P="$P MXFP4:57344x8192:64 MXFP4:57344x8192:128 MXFP4:8192x28672:128"
N128="--set rs_block_n=128 --set rs_ctas_per_sm=2 --set split_k=1 --set rs_stream_k=true"
timeout 170 python3 benchmarks/wgmma_config_sweep.py $P $N128 --set rs_block_m=64 --set stages=4 --peer --out $OUT/sk64.json 2>&1 \
  | grep -v Warning | cut -c1-70 | tee $OUT/sk64.txt
echo "64-row sweep done at $((SECONDS-T0)) s"
timeout 150 python3 benchmarks/wgmma_config_sweep.py $P $N128 --set rs_block_m=128 --set stages=3 --out $OUT/sk128.json 2>&1 \
  | grep -v Warning | cut -c1-70 | tee $OUT/sk128.txt
echo "128-row sweep done at $((SECONDS-T0)) s"
