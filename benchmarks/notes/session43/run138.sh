#!/bin/bash
# Session 43 (carry .whl), any sm_90 card, <= 6 min: where W4A16 g128 4096x14336 M=128's time
# goes, ours (routed split 8 through the workspace; split 6 in one cluster) against the peer
# (replayed whole, since kernel replay segfaulted on its layer): memory workload, occupancy,
# stalls.
source scripts/gpu_setup.sh >/dev/null 2>&1 || { echo setup failed; exit 1; }
export PYTHONPATH=$PWD/packages/humming-cuda/src:$PWD/packages/humming-core/src:$PWD/packages/humming-cuda/tests:$PWD/benchmarks:/tmp/site
T0=$SECONDS
nvidia-smi --query-gpu=name --format=csv,noheader | tee $OUT/gpu.txt
P=W4A16_G128:4096x14336:128
S="--section SpeedOfLight --section MemoryWorkloadAnalysis --section LaunchStats --section Occupancy --section WarpStateStats --section SchedulerStats --section ComputeWorkloadAnalysis"
timeout 100 ncu $S --kernel-name regex:humming_wna16 --launch-skip 2 --launch-count 1 python3 benchmarks/profile_gemm.py $P > $OUT/ncu_ws8.txt 2>&1
timeout 100 ncu $S --kernel-name regex:humming_wna16 --launch-skip 2 --launch-count 1 python3 benchmarks/profile_gemm.py $P --set split_k=6 --set rs_cluster_split=true > $OUT/ncu_c6.txt 2>&1
echo "ours done at $((SECONDS-T0)) s"
timeout 150 ncu $S --replay-mode application --kernel-name humming --launch-skip 3 --launch-count 1 python3 benchmarks/profile_gemm.py $P --peer > $OUT/ncu_peer.txt 2>&1
echo "peer done at $((SECONDS-T0)) s"; tail -5 $OUT/ncu_peer.txt
cd $OUT && tar czf run138.tgz *.txt && rm -f ncu_*.txt
