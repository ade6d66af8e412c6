#!/bin/bash
# Session 44 (carry .whl), any sm_90 card, <= 5 min: the register-A conformance cases that build
# from the routed configs (now with rs_split_scatter where routed), then the scatter route
# (heuristics.with_scatter) against the route before it (SCATTER_MIN_BLOCK_M set past every tile:
# the workspace form), same run, at moved points run150's sweep did not time.
source scripts/gpu_setup.sh >/dev/null 2>&1 || { echo setup failed; exit 1; }
export PYTHONPATH=$PWD/packages/humming-cuda/src:$PWD/packages/humming-core/src:$PWD/packages/humming-cuda/tests:$PWD/benchmarks:/tmp/site
nvidia-smi --query-gpu=name --format=csv,noheader | tee $OUT/gpu.txt
timeout 100 python3 -m pytest -q -p no:cacheprovider packages/humming-cuda/tests/test_wna16_wgmma_conformance.py \
  -k "register or small_m or mid_m" 2>&1 | tail -6 | tee $OUT/conformance.txt
P="W3A16_G128:4096x14336:64 W3A16_G128:4096x14336:128 W3A16_G128:4096x14336:256 W8A16:8192x28672:64 W8A16:8192x28672:128"
P="$P E4M3_G128:8192x28672:96 E4M3_G128:4096x14336:192 W8A16:4096x14336:160 MXFP4:4096x14336:64 MXFP4:8192x28672:96"
P="$P W4A16_G128:4096x14336:48 W4A16_G128:4096x14336:192 W4A16_G128:8192x28672:80 MXFP4:8192x28672:24 E4M3_G128:8192x28672:16"
timeout 150 python3 benchmarks/route_ab.py --module humming_cuda.kernels.wna16_wgmma.heuristics \
  --old SCATTER_MIN_BLOCK_M=100000 --old SCATTER_MIN_BLOCK_M_2CTAS=100000 $P --out $OUT/ab.json 2>&1 | grep -v Warning | tee $OUT/ab.txt
