#!/bin/bash
# Session 42 (carry .whl), any sm_90 card, <= 9 min: (1) ncu launch stats of ours and the peer's
# W4A16 g128 4096x14336 kernels at M = 64 / 128 (the grid's largest gaps: what grid, block,
# cluster and shared memory the peer runs); (2) run133: W8A8 cluster split-K route A/B and the
# W8A8 wgmma conformance file with it routed.
source scripts/gpu_setup.sh >/dev/null 2>&1 || { echo setup failed; exit 1; }
export PYTHONPATH=$PWD/packages/humming-cuda/src:$PWD/packages/humming-core/src:$PWD/packages/humming-cuda/tests:$PWD/benchmarks:/tmp/site
T0=$SECONDS
mkdir -p /tmp/n
S="--section LaunchStats --section Occupancy --section SpeedOfLight"
for pt in W4A16_G128:4096x14336:128 W4A16_G128:4096x14336:64; do
  timeout 60 ncu $S --kernel-name regex:humming --launch-skip 2 --launch-count 1 python3 benchmarks/profile_gemm.py $pt > /tmp/n/ours_${pt//:/_}.txt 2>&1
  timeout 60 ncu $S --kernel-name humming --launch-skip 3 --launch-count 1 python3 benchmarks/profile_gemm.py $pt --peer > /tmp/n/peer_${pt//:/_}.txt 2>&1
  echo "ncu $pt done at $((SECONDS-T0)) s"
done
tar czf $OUT/ncu134.tgz -C /tmp n
bash benchmarks/notes/session42/run133.sh
echo "done at $((SECONDS-T0)) s"
