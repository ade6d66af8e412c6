#!/bin/bash
# Session 39 (carry .whl), ~2.5 min, any sm_90 card, on main: where the mainloop's time goes
# against the peer's at 57344x8192 M=256 (W4A16 g128, our routed 256-column stream-K form): ncu's
# compute workload (pipe utilization), memory tables (shared-memory wavefronts and bank
# conflicts) and warp states, both kernels.
source scripts/gpu_setup.sh >/dev/null 2>&1 || { echo setup failed; exit 1; }
export PYTHONPATH=$PWD/packages/humming-cuda/src:$PWD/packages/humming-core/src:$PWD/packages/humming-cuda/tests:$PWD/benchmarks:/tmp/site
T0=$SECONDS
nvidia-smi --query-gpu=name --format=csv,noheader | tee $OUT/gpu.txt
S="--section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis_Tables --section WarpStateStats --section SpeedOfLight --print-details all"
pt=W4A16_G128:57344x8192:256
mkdir -p /tmp/n
timeout 70 ncu $S --kernel-name regex:humming --launch-skip 2 --launch-count 1 python3 benchmarks/profile_gemm.py $pt > /tmp/n/ours.txt 2>&1
echo "ours done at $((SECONDS-T0)) s"
timeout 70 ncu $S --kernel-name humming --launch-skip 3 --launch-count 1 python3 benchmarks/profile_gemm.py $pt --peer > /tmp/n/peer.txt 2>&1
echo "peer done at $((SECONDS-T0)) s"
grep -H -i "Duration\|Tensor\|Shared\|Bank\|Wavefront\|Issued Warp\|Stall" /tmp/n/*.txt | sed 's|/tmp/n/||' | cut -c1-140 | head -80
tar czf $OUT/ncu117.tgz -C /tmp n
