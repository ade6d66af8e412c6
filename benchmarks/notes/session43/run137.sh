#!/bin/bash
# Session 43, first GPU call (carry .whl), any sm_90 card, <= 9.5 min: split-K in several
# clusters per tile (rs_cluster_ctas) -- its conformance and the old split / cluster forms'
# (both reducers changed), then a sweep of split x cluster form at issue 6's split-routed gaps.
source scripts/gpu_setup.sh >/dev/null 2>&1 || { echo setup failed; exit 1; }
export PYTHONPATH=$PWD/packages/humming-cuda/src:$PWD/packages/humming-core/src:$PWD/packages/humming-cuda/tests:$PWD/benchmarks:/tmp/site
T0=$SECONDS
nvidia-smi --query-gpu=name --format=csv,noheader | tee $OUT/gpu.txt
timeout 240 python3 -m pytest -q -p no:cacheprovider packages/humming-cuda/tests/test_wna16_wgmma_conformance.py -k "cluster or split_k" 2>&1 | tail -15 > $OUT/conf.txt
echo "conformance done at $((SECONDS-T0)) s"; tail -3 $OUT/conf.txt
timeout 300 python3 benchmarks/wgmma_config_sweep.py --peer --set split_k=4,6,8 --set rs_cluster_split=false,true --set rs_cluster_ctas=0,2,3,4 \
  W4A16_G128:4096x14336:128 W4A16_G128:4096x14336:64 W4A16_G128:8192x28672:64 W8A16:4096x14336:128 MXFP4:4096x14336:128 W4A16_G128:6144x4096:64 \
  --out $OUT/sweep.json 2>&1 | grep -v "not a valid\|Warning" | tee $OUT/sweep.txt
echo "done at $((SECONDS-T0)) s"
cd $OUT && tar czf run137.tgz *.txt *.json
