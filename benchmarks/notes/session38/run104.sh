#!/bin/bash
# Session 38 (carry .whl), ~2 min, any sm_90 card: per-instruction warp stalls and executed counts
# (ncu WarpStateStats + SourceCounters, benchmarks/ncu_stalls.py) of our chosen plan, our
# 128-column stream-K form (64 rows, 4 stages) and the published kernel at 57344x8192 M=64,
# W4A16 g128: run103 found the peer issuing 0.47 instructions per scheduler-cycle against our
# 0.38-0.40 with 3.85 against 2.25-2.47 active warps per scheduler. Reports tarred (8-file limit).
source scripts/gpu_setup.sh >/dev/null 2>&1 || { echo setup failed; exit 1; }
export PYTHONPATH=$PWD/packages/humming-cuda/src:$PWD/packages/humming-core/src:$PWD/packages/humming-cuda/tests:$PWD/benchmarks:/tmp/site
mkdir -p $OUT/st
P=W4A16_G128:57344x8192:64
timeout 90 python3 benchmarks/ncu_stalls.py $P --top 40 --out $OUT/st/chosen 2>&1 | grep -v Warning > $OUT/st/chosen.txt
timeout 90 python3 benchmarks/ncu_stalls.py $P --top 40 --out $OUT/st/streamk --set rs_block_n=128 --set rs_ctas_per_sm=2 \
  --set rs_block_m=64 --set split_k=1 --set rs_stream_k=true --set stages=4 2>&1 | grep -v Warning > $OUT/st/streamk.txt
timeout 90 python3 benchmarks/ncu_stalls.py $P --top 40 --out $OUT/st/peer --peer 2>&1 | grep -v Warning > $OUT/st/peer.txt
for f in chosen streamk peer; do echo "== $f"; head -22 $OUT/st/$f.txt; done
rm -f $OUT/st/*.ncu-rep; tar -C $OUT -czf $OUT/st.tgz st && rm -rf $OUT/st
