#!/bin/bash
# Profiles for the two widest gaps of session 46's H100 snapshot (carry .whl), any sm_90 card,
# <= 6 min: our MoE w13 and w2 at M = 512 (stall lines and sections; 0.74x the peer there), and
# the peer's dense W4A16 g128 6144x4096 M=1024 kernel (session 46's application replay stopped on
# "unexpected number of profiled kernels": relaxed matching this time). Writes run162.tgz.
source scripts/gpu_setup.sh >/dev/null 2>&1 || { echo setup failed; exit 1; }
export PYTHONPATH=$PWD/packages/humming-cuda/src:$PWD/packages/humming-core/src:$PWD/packages/humming-cuda/tests:$PWD/benchmarks:/tmp/site
nvidia-smi --query-gpu=name --format=csv,noheader | tee $OUT/gpu.txt
for g in w13 w2; do
  timeout 90 python3 benchmarks/ncu_stalls.py moe:W4A16_G128:512 --gemm $g --top 30 --out $OUT/moe512_$g \
    > $OUT/moe512_$g.txt 2>&1
done
S="--section SpeedOfLight --section MemoryWorkloadAnalysis --section Occupancy --section WarpStateStats --section SchedulerStats"
timeout 90 ncu $S --kernel-name regex:humming_moe_w --launch-skip 4 --launch-count 1 \
  python3 benchmarks/profile_moe.py W4A16_G128:512 > $OUT/ncu_moe512_w13.txt 2>&1
timeout 150 ncu $S --replay-mode application --app-replay-mode relaxed --kernel-name humming \
  --launch-skip 3 --launch-count 1 python3 benchmarks/profile_gemm.py W4A16_G128:6144x4096:1024 --peer \
  > $OUT/ncu_peer.txt 2>&1
tail -3 $OUT/ncu_peer.txt
cd $OUT && tar czf run162.tgz *.txt 2>/dev/null && rm -f *.csv moe512_*.txt ncu_*.txt
