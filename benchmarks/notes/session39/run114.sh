#!/bin/bash
# Session 39 (carry .whl .abx), ~5 min, any sm_90 card, on main: is the register-A kernel bound by
# L2 -> SM traffic of the x tiles (every 128-column CTA reloads its token tile per step)?
# (1) header A/B against .abx, main's headers with the producer loading x only every 8th step
# (wrong results; the time without most x traffic); (2) ncu speed-of-light + memory workload of
# the routed kernel and the peer at 57344x8192 and 6144x4096, M=256.
source scripts/gpu_setup.sh >/dev/null 2>&1 || { echo setup failed; exit 1; }
export PYTHONPATH=$PWD/packages/humming-cuda/src:$PWD/packages/humming-core/src:$PWD/packages/humming-cuda/tests:$PWD/benchmarks:/tmp/site
T0=$SECONDS
nvidia-smi --query-gpu=name --format=csv,noheader | tee $OUT/gpu.txt
H=packages/humming-cuda/src/humming_cuda/include
P="W4A16_G128:57344x8192:256 W4A16_G128:6144x4096:256 W4A16_G128:6144x4096:128 W4A16_G128:8192x28672:128 W4A16_G128:57344x8192:128 W4A16_G128:4096x14336:64 W4A16_G128:6144x4096:1024 W4A16_G128:8192x28672:1024"
timeout 120 python3 benchmarks/header_ab.py --b .abx/$H $P --out $OUT/ab_x.json 2>&1 | grep -v Warning | tail -10
echo "A/B done at $((SECONDS-T0)) s"
S="--section SpeedOfLight --section MemoryWorkloadAnalysis --section MemoryWorkloadAnalysis_Tables --section LaunchStats --section Occupancy"
mkdir -p /tmp/n
for pt in W4A16_G128:57344x8192:256 W4A16_G128:6144x4096:256; do
  timeout 100 ncu $S --kernel-name regex:humming --launch-skip 2 --launch-count 1 python3 benchmarks/profile_gemm.py $pt > /tmp/n/ours_${pt//:/_}.txt 2>&1
  timeout 100 ncu $S --kernel-name humming --launch-skip 3 --launch-count 1 python3 benchmarks/profile_gemm.py $pt --peer > /tmp/n/peer_${pt//:/_}.txt 2>&1
  echo "ncu $pt done at $((SECONDS-T0)) s"
done
grep -H "Duration\|L2 Cache Throughput\|DRAM Throughput\|L1/TEX Cache Throughput\|Grid Size\|Block Size\|Cluster Size" /tmp/n/*.txt | sed 's|/tmp/n/||' | head -60
tar czf $OUT/ncu.tgz -C /tmp n
echo "done at $((SECONDS-T0)) s"
