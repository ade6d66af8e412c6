#!/bin/bash
# Session 44 (carry .whl), any sm_90 card, <= 7 min: the scatter route (heuristics.with_scatter)
# against the routes before it (SCATTER_MIN_BLOCK_M set past every tile: the workspace form; the
# 128-column split 8's clusters of 2 are in run150's sweep), same run, at every point of the five
# dense specs' grid (M = 17-4096 buckets, four layers) whose route moved; then the register-A
# conformance cases, which now build from the routed configs.
source scripts/gpu_setup.sh >/dev/null 2>&1 || { echo setup failed; exit 1; }
export PYTHONPATH=$PWD/packages/humming-cuda/src:$PWD/packages/humming-core/src:$PWD/packages/humming-cuda/tests:$PWD/benchmarks:/tmp/site
nvidia-smi --query-gpu=name --format=csv,noheader | tee $OUT/gpu.txt
P=""
for s in W4A16_G128 MXFP4 W3A16_G128; do for m in 48 64 80 96 128 160 192 256; do P="$P $s:4096x14336:$m"; done; done
for s in W4A16_G128 MXFP4 W3A16_G128 W8A16 E4M3_G128; do for m in 48 64 80 96 128; do P="$P $s:8192x28672:$m"; done; done
for s in W8A16 E4M3_G128; do for m in 160 192 256; do P="$P $s:4096x14336:$m"; done; done
timeout 240 python3 benchmarks/route_ab.py --module humming_cuda.kernels.wna16_wgmma.heuristics \
  --old SCATTER_MIN_BLOCK_M=100000 $P --out $OUT/ab.json 2>&1 | grep -v Warning | tee $OUT/ab.txt
timeout 120 python3 -m pytest -q -p no:cacheprovider packages/humming-cuda/tests/test_wna16_wgmma_conformance.py \
  -k "register or small_m or mid_m or two_ctas or wide" 2>&1 | tail -6 | tee $OUT/conformance.txt
