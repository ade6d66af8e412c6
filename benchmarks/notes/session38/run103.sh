#!/bin/bash
# Session 38 (carry .whl), ~6 min, any sm_90 card. Why the 128-column stream-K form loses to the
# published kernel's (same tile: 64 x 128 x 64, two CTAs per SM, stream-K; run102: 186.7 vs 134.1
# us at 57344x8192 M=64): (1) the ring's depth at 64 rows (stages 2-4; 4 is the most that fits two
# CTAs, the peer runs 4) for the stream-K and split-K 128-column forms, peer in the same run;
# (2) ncu sections (speed of light, occupancy, launch, warp states, memory) of our chosen plan,
# our stream-K form and the peer's kernel at 57344x8192 M=64, one report text each (tarred).
source scripts/gpu_setup.sh >/dev/null 2>&1 || { echo setup failed; exit 1; }
export PYTHONPATH=$PWD/packages/humming-cuda/src:$PWD/packages/humming-core/src:$PWD/packages/humming-cuda/tests:$PWD/benchmarks:/tmp/site
T0=$SECONDS
nvidia-smi --query-gpu=name --format=csv,noheader | tee $OUT/gpu.txt
P64="W4A16_G128:57344x8192:64 W4A16_G128:6144x4096:64 W4A16_G128:4096x14336:64 W4A16_G128:8192x28672:64"
N128="--set rs_block_n=128 --set rs_ctas_per_sm=2 --set rs_block_m=64"
timeout 200 python3 benchmarks/wgmma_config_sweep.py $P64 $N128 --set split_k=1 --set rs_stream_k=true \
  --set stages=2,3,4 --peer --out $OUT/stages_sk.json 2>&1 | grep -v Warning | cut -c1-190 | tee $OUT/stages_sk.txt
echo "stream-K sweep done at $((SECONDS-T0)) s"
timeout 120 python3 benchmarks/wgmma_config_sweep.py W4A16_G128:6144x4096:64 W4A16_G128:4096x14336:64 \
  --set stages=2,3,4 --out $OUT/stages_split.json 2>&1 | grep -v Warning | cut -c1-190 | tee $OUT/stages_split.txt
echo "split sweep done at $((SECONDS-T0)) s"
mkdir -p $OUT/ncu
SEC="--section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats --section MemoryWorkloadAnalysis --section SchedulerStats"
P=W4A16_G128:57344x8192:64
timeout 60 ncu $SEC -k regex:humming --launch-skip 2 --launch-count 1 python3 benchmarks/profile_gemm.py $P > $OUT/ncu/chosen.txt 2>&1
timeout 60 ncu $SEC -k regex:humming --launch-skip 2 --launch-count 1 python3 benchmarks/profile_gemm.py $P \
  --set rs_block_n=128 --set rs_ctas_per_sm=2 --set rs_block_m=64 --set split_k=1 --set rs_stream_k=true --set stages=4 > $OUT/ncu/streamk.txt 2>&1
timeout 60 ncu $SEC -k humming --launch-skip 3 --launch-count 1 python3 benchmarks/profile_gemm.py $P --peer > $OUT/ncu/peer.txt 2>&1
echo "ncu done at $((SECONDS-T0)) s"
for f in chosen streamk peer; do echo "== $f"; grep -E "Duration|DRAM Throughput|Memory Throughput|Compute \(SM\)|Achieved Occupancy|Registers Per|Shared Memory Config|Dynamic Shared|Grid Size|Block Size|Issued Warp|No Eligible|Warp Cycles Per Issued" $OUT/ncu/$f.txt | head -20; done
tar -C $OUT -czf $OUT/ncu.tgz ncu && rm -rf $OUT/ncu
