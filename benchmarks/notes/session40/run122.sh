#!/bin/bash
# Session 40 (carry .whl), ~2 min, any sm_90 card, after routing cluster split-K
# (heuristics.CLUSTER_FILL): every routed point of it on the four layers (the 6144x4096 ones),
# the workspace form of the same plan and the peer in the same run.
source scripts/gpu_setup.sh >/dev/null 2>&1 || { echo setup failed; exit 1; }
export PYTHONPATH=$PWD/packages/humming-cuda/src:$PWD/packages/humming-core/src:$PWD/packages/humming-cuda/tests:$PWD/benchmarks:/tmp/site
T0=$SECONDS
nvidia-smi --query-gpu=name --format=csv,noheader | tee $OUT/gpu.txt
P="W4A16_G128:6144x4096:64 W4A16_G128:6144x4096:96 W4A16_G128:6144x4096:128 W4A16_G128:6144x4096:192 W4A16_G128:6144x4096:256 MXFP4:6144x4096:64 MXFP4:6144x4096:128 MXFP4:6144x4096:256 W8A16:6144x4096:256 W3A16_G128:6144x4096:256 E4M3_G128:6144x4096:256"
timeout 200 python3 benchmarks/wgmma_config_sweep.py $P --set rs_cluster_split=true,false --peer --out $OUT/routed.json 2>&1 | grep -v Warning | cut -c1-150 | tee $OUT/routed.txt
echo "done at $((SECONDS-T0)) s"
