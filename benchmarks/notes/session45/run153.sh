#!/bin/bash
# For the next session (carry .whl), any sm_90 card, <= 6 min: where W4A16 g128 6144x4096 M=1024's
# time goes (issue 6's widest gap at large M: routed 96-row tiles, 2 waves, 93.7 us against the
# peer's 77.2 on an H100, session 45; neither stream-K nor wider tiles closed it), ours against
# the peer (replayed whole: kernel replay segfaults on its layer): throughput, memory, occupancy,
# scheduler and stall sections. MXFP4 at the same point for ours. Writes run153.tgz.
source scripts/gpu_setup.sh >/dev/null 2>&1 || { echo setup failed; exit 1; }
export PYTHONPATH=$PWD/packages/humming-cuda/src:$PWD/packages/humming-core/src:$PWD/packages/humming-cuda/tests:$PWD/benchmarks:/tmp/site
T0=$SECONDS
nvidia-smi --query-gpu=name --format=csv,noheader | tee $OUT/gpu.txt
S="--section SpeedOfLight --section MemoryWorkloadAnalysis --section LaunchStats --section Occupancy --section WarpStateStats --section SchedulerStats --section ComputeWorkloadAnalysis"
for P in W4A16_G128:6144x4096:1024 MXFP4:6144x4096:1024; do
  timeout 100 ncu $S --kernel-name regex:humming_wna16 --launch-skip 2 --launch-count 1 \
    python3 benchmarks/profile_gemm.py $P > $OUT/ncu_${P%%:*}.txt 2>&1
done
echo "ours done at $((SECONDS-T0)) s"
timeout 150 ncu $S --replay-mode application --kernel-name humming --launch-skip 3 --launch-count 1 \
  python3 benchmarks/profile_gemm.py W4A16_G128:6144x4096:1024 --peer > $OUT/ncu_peer.txt 2>&1
echo "peer done at $((SECONDS-T0)) s"; tail -5 $OUT/ncu_peer.txt
timeout 90 python3 benchmarks/ncu_stalls.py W4A16_G128:6144x4096:1024 --top 30 --out $OUT/stalls > $OUT/stalls.txt 2>&1
cd $OUT && tar czf run153.tgz *.txt *.csv 2>/dev/null && rm -f ncu_*.txt stalls.csv
