#!/bin/bash
# Session 51, first call on any card (carry .whl .base). An H200: the owed dense refresh.
# Else: every M bucket through ops (48 new), the fused input GLU's GPU tests, MoE host time against .base (pre-781af86), and full
# ncu profiles (details page + stalls) of W4A8-fp8 and W8A8-fp8 at 6144x4096 M=4096 against the
# peer's and cuBLASLt fp8's kernels at that shape: both our fp8 wgmma kernels sit at 0.6-0.9x
# cuBLASLt at large M and the reason is not known (no profile of either at large M since
# session 23); notes/session51.md says what to read in them.
source scripts/gpu_setup.sh >/dev/null 2>&1 || { echo setup failed; exit 1; }
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD/packages/humming-cuda/src:$PWD/packages/humming-core/src:$PWD/packages/humming-cuda/tests:$PWD/benchmarks:/tmp/site
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader | tee $OUT/gpu.txt
if grep -q H200 $OUT/gpu.txt; then
  exec bash benchmarks/notes/session44/refresh.sh ${DEADLINE:-540} dense:W4A16_G128 dense:MXFP4 dense:W8A16 dense:W3A16_G128 dense:E4M3_G128
fi
T=packages/humming-cuda/tests
timeout 200 python3 -m pytest -q -p no:cacheprovider $T/test_user_api_cuda.py 2>&1 | grep -E "passed|failed|FAILED|Error" | tee $OUT/user_api.txt
# the fused input GLU (94ab070), never run on a GPU: quantizer codes / scales and every act8 family
timeout 200 python3 -m pytest -q -p no:cacheprovider $T/test_input_glu_cuda.py 2>&1 | grep -E "passed|failed|FAILED|Error" | tee -a $OUT/user_api.txt
for t in base new; do
  if [ $t = base ]; then R=$PWD/.base; else R=$PWD; fi
  PYTHONPATH=$R/packages/humming-cuda/src:$R/packages/humming-core/src:$R/packages/humming-cuda/tests:$R/benchmarks:/tmp/site \
    timeout 40 python3 $R/benchmarks/moe_host_overhead.py MXFP4_A8:8 W4A16_G128:1 2>&1 | grep -E " us$" | sed "s/^/$t /" | tee -a $OUT/hostab.txt
done
# SM clock and power under our fp8 kernels and cuBLASLt's at large M (clock_under_load.py)
timeout 90 python3 benchmarks/clock_under_load.py W4A8_FP8:8192x28672:4096 W8A8_FP8:8192x28672:4096 \
  --seconds 4 --out $OUT/clocks.json 2>&1 | grep -v Warning
for job in "ours W4A8_FP8 --kernel humming_w4a8_wgmma_[0-9a-f]+$" "peer W4A8_FP8 --peer" \
           "cublas W4A8_FP8 --cublas" "ours8 W8A8_FP8 --kernel humming_w8a8_wgmma_[0-9a-f]+$"; do
  read -r who spec flags <<< "$job"
  left=$((${DEADLINE:-560} - SECONDS)); [ $left -lt 40 ] && break
  timeout $left python3 benchmarks/ncu_stalls.py $spec:6144x4096:4096 $flags --full --top 30 \
    --out /tmp/st_$who 2>&1 | grep -v Warning > $OUT/ncu_$who.txt
done
