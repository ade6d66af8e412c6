#!/bin/bash
# Session 43 (carry .whl), any sm_90 card, <= 7 min: the 128-column split plans in clusters of 2
# (N128_CLUSTER_CTAS) against the workspace routes, same run, at every point it moves (W4A16 g128
# and MXFP4: 4096x14336 M = 64-256, 8192x28672 M = 64-128), with the peer; then the peer's kernel
# at 4096x14336 M=128 under ncu in application replay, three sections only (run138's seven ran
# past its limit).
source scripts/gpu_setup.sh >/dev/null 2>&1 || { echo setup failed; exit 1; }
export PYTHONPATH=$PWD/packages/humming-cuda/src:$PWD/packages/humming-core/src:$PWD/packages/humming-cuda/tests:$PWD/benchmarks:/tmp/site
T0=$SECONDS
nvidia-smi --query-gpu=name --format=csv,noheader | tee $OUT/gpu.txt
P=""
for s in W4A16_G128 MXFP4; do
  for m in 64 96 128 192 256; do P="$P $s:4096x14336:$m"; done
  for m in 64 96 128; do P="$P $s:8192x28672:$m"; done
done
timeout 300 python3 benchmarks/route_ab.py --module humming_cuda.kernels.wna16_wgmma.heuristics --old N128_CLUSTER_CTAS=0 $P --peer --out $OUT/ab.json 2>&1 | grep -v Warning | tee $OUT/ab.txt
echo "ab done at $((SECONDS-T0)) s"
timeout 150 ncu --section SpeedOfLight --section LaunchStats --section Occupancy --replay-mode application --kernel-name humming --launch-skip 3 --launch-count 1 python3 benchmarks/profile_gemm.py W4A16_G128:4096x14336:128 --peer > $OUT/ncu_peer.txt 2>&1
echo "peer done at $((SECONDS-T0)) s"; grep -E "Duration|Grid Size|Block Size|Cluster Size|SM Active|Elapsed|Throughput|Registers|Shared Memory Per|Achieved Occ" $OUT/ncu_peer.txt
cd $OUT && tar czf run139.tgz *.txt *.json
