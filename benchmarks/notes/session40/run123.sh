#!/bin/bash
# Session 40 (carry .whl), ~2 min, any sm_90 card: a shortened run122 for the last of the session's
# device budget: the routed cluster points not measured before (MXFP4, W8A16 / W3A16 g128 at
# 6144x4096) against the same plan's workspace form, same run.
source scripts/gpu_setup.sh >/dev/null 2>&1 || { echo setup failed; exit 1; }
export PYTHONPATH=$PWD/packages/humming-cuda/src:$PWD/packages/humming-core/src:$PWD/packages/humming-cuda/tests:$PWD/benchmarks:/tmp/site
nvidia-smi --query-gpu=name --format=csv,noheader
P="MXFP4:6144x4096:128 W8A16:6144x4096:256 MXFP4:6144x4096:64 MXFP4:6144x4096:256 W3A16_G128:6144x4096:256 W4A16_G128:6144x4096:192"
timeout 140 python3 benchmarks/wgmma_config_sweep.py $P --set rs_cluster_split=true,false --out $OUT/routed.json 2>&1 | grep -v Warning | cut -c1-150
