#!/bin/bash
# Session 41 (carry .whl), any sm_90 card, <= 9.5 min: run122 (the routed cluster points with the
# peer), then split_k x rs_cluster_split at the split-routed points of the three larger-K layers
# and 6144x4096's non-cluster buckets, the data to choose the split with clusters in mind.
source scripts/gpu_setup.sh >/dev/null 2>&1 || { echo setup failed; exit 1; }
export PYTHONPATH=$PWD/packages/humming-cuda/src:$PWD/packages/humming-core/src:$PWD/packages/humming-cuda/tests:$PWD/benchmarks:/tmp/site
T0=$SECONDS
nvidia-smi --query-gpu=name --format=csv,noheader | tee $OUT/gpu.txt
S="python3 benchmarks/wgmma_config_sweep.py"
P="W4A16_G128:6144x4096:64 W4A16_G128:6144x4096:128 W4A16_G128:6144x4096:192 W4A16_G128:6144x4096:256 MXFP4:6144x4096:64 MXFP4:6144x4096:128 MXFP4:6144x4096:256 W8A16:6144x4096:256 E4M3_G128:6144x4096:256"
timeout 110 $S $P --set rs_cluster_split=true,false --peer --out $OUT/routed.json 2>&1 | grep -v Warning | cut -c1-150 > $OUT/routed.txt
echo "routed done at $((SECONDS-T0)) s"
G="--set split_k=2,3,4,5,6,8 --set rs_cluster_split=true,false"
P1="W4A16_G128:4096x14336:32 W4A16_G128:4096x14336:64 W4A16_G128:4096x14336:128 W4A16_G128:4096x14336:256 W4A16_G128:4096x14336:384 W4A16_G128:6144x4096:32 W4A16_G128:6144x4096:48 W4A16_G128:6144x4096:384"
P2="W4A16_G128:8192x28672:32 W4A16_G128:8192x28672:64 W4A16_G128:8192x28672:128 W4A16_G128:8192x28672:256"
P3="W8A16:6144x4096:64 W8A16:6144x4096:128 W8A16:4096x14336:64 W8A16:4096x14336:128 W8A16:4096x14336:256 W8A16:8192x28672:64 W8A16:8192x28672:128"
for i in 1 2 3; do
  eval "PTS=\$P$i"
  left=$((560-(SECONDS-T0))); [ $left -lt 30 ] && break
  timeout $left $S $PTS $G --out $OUT/splits$i.json 2>&1 | grep -v Warning | cut -c1-150 > $OUT/splits$i.txt
  echo "splits$i done at $((SECONDS-T0)) s"
done
cd $OUT && tar czf run124.tgz *.txt *.json && rm -f routed.* splits*
