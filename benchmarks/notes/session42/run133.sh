#!/bin/bash
# Session 42 (carry .whl), any sm_90 card, <= 6 min: W8A8 split-K routed into clusters
# (w8a8_wgmma.heuristics.clusters_where_measured): route A/B against the workspace plan
# (CLUSTER_MIN_M set past every M), then the W8A8 wgmma conformance file with it routed.
source scripts/gpu_setup.sh >/dev/null 2>&1 || { echo setup failed; exit 1; }
export PYTHONPATH=$PWD/packages/humming-cuda/src:$PWD/packages/humming-core/src:$PWD/packages/humming-cuda/tests:$PWD/benchmarks:/tmp/site
nvidia-smi --query-gpu=name --format=csv,noheader | tee $OUT/gpu.txt
P="W8A8_FP8:6144x4096:96 W8A8_FP8:6144x4096:128 W8A8_FP8:4096x14336:80 W8A8_FP8:4096x14336:128 W8A8_FP8:4096x14336:192 W8A8_FP8:4096x14336:256 W8A8_FP8:8192x28672:96 W8A8_FP8:8192x28672:128 FP8_BLOCK128:6144x4096:128 FP8_BLOCK128:4096x14336:128 FP8_BLOCK128:4096x14336:256 FP8_BLOCK128:8192x28672:128"
timeout 200 python3 benchmarks/route_ab.py --module humming_cuda.kernels.w8a8_wgmma.heuristics --old CLUSTER_MIN_M=1000000 $P --peer --out $OUT/cluster_ab.json 2>&1 | grep -v Warning | tee $OUT/cluster_ab.txt
timeout 300 python3 -m pytest -q -p no:cacheprovider packages/humming-cuda/tests/test_w8a8_wgmma_conformance.py 2>&1 | tail -15 > $OUT/conf.txt
tail -3 $OUT/conf.txt
