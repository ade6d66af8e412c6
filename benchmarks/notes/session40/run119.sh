#!/bin/bash
# Session 40 (carry .whl .abh), ~9 min, any sm_90 card, with session39/consumer_vote.patch applied
# and cluster split-K (rs_cluster_split) added: .abh = main's include/ (08abf09).
# (1) W8A8 wgmma and dense wgmma conformance (shared-memory form, cluster split-K cases);
# (2) header A/B (this tree = vote, B = main) on act8 points and on the unrouted shared-memory WnA16
# form; (3) cluster split-K against the workspace at the routed split-K plans.
source scripts/gpu_setup.sh >/dev/null 2>&1 || { echo setup failed; exit 1; }
export PYTHONPATH=$PWD/packages/humming-cuda/src:$PWD/packages/humming-core/src:$PWD/packages/humming-cuda/tests:$PWD/benchmarks:/tmp/site
T0=$SECONDS
nvidia-smi --query-gpu=name --format=csv,noheader | tee $OUT/gpu.txt
T=packages/humming-cuda/tests
timeout 170 python3 -m pytest -q -p no:cacheprovider -x $T/test_wna16_wgmma_conformance.py -k "cluster or replays" --tb=short 2>&1 | tail -15 | tee $OUT/conf_cluster.txt
echo "cluster conformance done at $((SECONDS-T0)) s" | tee -a $OUT/conf_cluster.txt
P="W4A16_G128:6144x4096:64 W4A16_G128:6144x4096:128 W4A16_G128:6144x4096:256 W4A16_G128:4096x14336:128 W4A16_G128:4096x14336:256 W4A16_G128:8192x28672:32 W4A16_G128:8192x28672:128 W8A16:6144x4096:128"
timeout 130 python3 benchmarks/wgmma_config_sweep.py $P --set rs_cluster_split=false,true --out $OUT/cluster.json 2>&1 | grep -v Warning | cut -c1-150 | tee $OUT/cluster.txt
echo "cluster sweep done at $((SECONDS-T0)) s"
timeout 100 python3 -m pytest -q -p no:cacheprovider $T/test_w8a8_wgmma_conformance.py --tb=short 2>&1 | tail -8 | tee $OUT/conf.txt
timeout 60 python3 -m pytest -q -p no:cacheprovider $T/test_wna16_wgmma_conformance.py \
  -k "test_matches_reference or deeper_ring or float_codes" --tb=short 2>&1 | tail -8 | tee -a $OUT/conf.txt
echo "conformance done at $((SECONDS-T0)) s" | tee -a $OUT/conf.txt
H=.abh/packages/humming-cuda/src/humming_cuda/include
P8="W8A8_FP8:8192x28672:4096 FP8_BLOCK128:8192x28672:4096 W8A8_FP8:6144x4096:1024"
timeout $((500-(SECONDS-T0))) python3 benchmarks/header_ab.py --b $H $P8 --out $OUT/ab_act8.json 2>&1 | grep -v Warning | tail -10
echo "done at $((SECONDS-T0)) s"
cd $OUT && tar -czf run119.tgz *.json *.txt 2>/dev/null; ls $OUT
