#!/bin/bash
# Session 44 (carry .whl), any sm_90 card, <= 9 min, one tarball back (run150.tgz):
# 1. conformance of rs_split_scatter (every split sums a share of the tile's rows once all have
#    stored: split_tile.cuh's scatter_parts) and the graph-replay counters, with the cluster
#    forms beside it (cluster_split.cuh's share() now takes the rows inside M);
# 2. the split plans at the M = 64-128 gaps: split-K through the workspace, summed all at once
#    (scatter), in one cluster, in clusters of 2, with the peer;
# 3. session44/diag.sh (split 8's time, as built and with the read-back / partial stores cut).
source scripts/gpu_setup.sh >/dev/null 2>&1 || { echo setup failed; exit 1; }
export PYTHONPATH=$PWD/packages/humming-cuda/src:$PWD/packages/humming-core/src:$PWD/packages/humming-cuda/tests:$PWD/benchmarks:/tmp/site
nvidia-smi --query-gpu=name --format=csv,noheader | tee $OUT/gpu.txt
timeout 150 python3 -m pytest -q -p no:cacheprovider -x packages/humming-cuda/tests/test_wna16_wgmma_conformance.py \
  -k "scatter or replays" 2>&1 | tail -15 | tee $OUT/conformance.txt
PTS="W4A16_G128:4096x14336:64 W4A16_G128:4096x14336:96 W4A16_G128:4096x14336:128 MXFP4:4096x14336:128 W4A16_G128:8192x28672:64 W4A16_G128:8192x28672:128"
timeout 200 python3 benchmarks/wgmma_config_sweep.py --peer --set split_k=4,8 --set rs_cluster_split=false,true \
  --set rs_cluster_ctas=0,2 --set rs_split_scatter=false,true $PTS --out $OUT/scatter.json 2>&1 \
  | grep -v "not a valid\|Warning" | tee $OUT/scatter.txt
timeout 130 bash benchmarks/notes/session44/diag.sh 2>&1 | tail -3
cd $OUT && tar czf run150.tgz *.txt *.json && rm -f *.txt *.json
