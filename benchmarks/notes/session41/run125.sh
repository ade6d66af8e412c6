#!/bin/bash
# Session 41 (carry .whl), any sm_90 card, <= 9.5 min, after heuristics.with_clusters: the cluster
# capacity at 3 / 6 splits, the newly routed cluster points against their workspace form (and the
# old split 5) with the peer in the same run, then the cluster conformance tests (new shapes: the
# 176- / 96-row tiles, several waves of clusters).
source scripts/gpu_setup.sh >/dev/null 2>&1 || { echo setup failed; exit 1; }
export PYTHONPATH=$PWD/packages/humming-cuda/src:$PWD/packages/humming-core/src:$PWD/packages/humming-cuda/tests:$PWD/benchmarks:/tmp/site
T0=$SECONDS
nvidia-smi --query-gpu=name --format=csv,noheader | tee $OUT/gpu.txt
timeout 60 python3 benchmarks/cluster_occupancy.py W4A16_G128:6144x4096:128 W8A16:6144x4096:128 W4A16_G128:8192x28672:32 --splits 2,3,4,5,6,8 2>&1 | grep -v Warning > $OUT/occupancy.txt
echo "occupancy done at $((SECONDS-T0)) s"
S="python3 benchmarks/wgmma_config_sweep.py"
A="W4A16_G128:57344x8192:384 W4A16_G128:8192x28672:192 W4A16_G128:8192x28672:768 W4A16_G128:8192x28672:1024 W4A16_G128:6144x4096:384 W4A16_G128:6144x4096:768 W4A16_G128:4096x14336:512 W4A16_G128:4096x14336:2048 W8A16:57344x8192:256 W8A16:8192x28672:192 MXFP4:8192x28672:256 E4M3_G128:6144x4096:768"
timeout 200 $S $A --set rs_cluster_split=true,false --peer --out $OUT/ab_same_split.json 2>&1 | grep -v Warning | cut -c1-150 > $OUT/ab_same_split.txt
echo "A done at $((SECONDS-T0)) s"
B="W8A16:6144x4096:48 W8A16:6144x4096:80 W8A16:6144x4096:96 E4M3_G128:6144x4096:64 E4M3_G128:6144x4096:128 W3A16_G128:6144x4096:128 MXFP4:6144x4096:48"
timeout 120 $S $B --set split_k=4,5 --set rs_cluster_split=true,false --peer --out $OUT/ab_split.json 2>&1 | grep -v Warning | cut -c1-150 > $OUT/ab_split.txt
echo "B done at $((SECONDS-T0)) s"
timeout $((570-(SECONDS-T0))) python3 -m pytest -q -p no:cacheprovider packages/humming-cuda/tests/test_wna16_wgmma_conformance.py -k cluster 2>&1 | tail -15 > $OUT/conf.txt
echo "conformance done at $((SECONDS-T0)) s"; tail -3 $OUT/conf.txt
cd $OUT && tar czf run125.tgz *.txt *.json && rm -f occupancy.txt ab_* conf.txt
