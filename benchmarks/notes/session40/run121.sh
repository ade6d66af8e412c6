#!/bin/bash
# Session 40 (carry .whl), ~4 min, any sm_90 card: cluster split-K's co-resident clusters
# (cuOccupancyMaxActiveClusters) at the routed tiles, and a split sweep of the cluster form where
# the first sweep (run119) saw it win and lose.
source scripts/gpu_setup.sh >/dev/null 2>&1 || { echo setup failed; exit 1; }
export PYTHONPATH=$PWD/packages/humming-cuda/src:$PWD/packages/humming-core/src:$PWD/packages/humming-cuda/tests:$PWD/benchmarks:/tmp/site
T0=$SECONDS
nvidia-smi --query-gpu=name --format=csv,noheader | tee $OUT/gpu.txt
timeout 60 python3 benchmarks/cluster_occupancy.py W4A16_G128:6144x4096:128 W4A16_G128:8192x28672:32 W8A16:6144x4096:128 --splits 2,4,5,8 2>&1 | grep -v Warning | tee $OUT/occupancy.txt
echo "occupancy done at $((SECONDS-T0)) s"
P="W4A16_G128:6144x4096:128 W4A16_G128:6144x4096:256 W4A16_G128:4096x14336:128 W4A16_G128:8192x28672:128 W8A16:6144x4096:128"
timeout $((330-(SECONDS-T0))) python3 benchmarks/wgmma_config_sweep.py $P --set split_k=2,3,4,6,8 --set rs_cluster_split=true --out $OUT/cluster_splits.json 2>&1 | grep -v Warning | cut -c1-150 | tee $OUT/cluster_splits.txt
echo "done at $((SECONDS-T0)) s"
