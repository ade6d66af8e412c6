#!/bin/bash
# Session 48, verification call (carry .whl and .base: HEAD before this session's host-path
# changes, for the host-time A/B), any sm_90 card, <= 9.5 min:
# 1. conformance of what changed: the dense 48-row tiles (cluster / scatter / split cases), the
#    w4a8_decode 2-stage unsplit tile, the prepared moe_align and moe_wna16_a8 calls (fused MoE
#    layers of every family through PreparedMoe), the vLLM MoE tests;
# 2. route A/B of both routes against the old constants, with the peer;
# 3. MoE host time, this tree against .base, twice each, interleaved.
source scripts/gpu_setup.sh >/dev/null 2>&1 || { echo setup failed; exit 1; }
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD/packages/humming-cuda/src:$PWD/packages/humming-core/src:$PWD/packages/humming-cuda/tests:$PWD/benchmarks:/tmp/site
nvidia-smi --query-gpu=name --format=csv,noheader | tee $OUT/gpu.txt
T=packages/humming-cuda/tests
timeout 200 python3 -m pytest -q -p no:cacheprovider $T/test_wna16_wgmma_conformance.py \
  $T/test_w4a8_decode_conformance.py $T/test_moe_align_cuda.py $T/test_moe_wna16_a8_conformance.py \
  $T/test_moe_wna16_conformance.py -k "cluster_split or scatter or mid_m or small_m or decode or align or a8 or fused" 2>&1 \
  | grep -E "passed|failed|FAILED|Error" | tee $OUT/conf.txt
timeout 60 python3 -m pytest -q -p no:cacheprovider packages/humming-vllm/tests packages/humming-core/tests -m "not cpu" 2>&1 \
  | grep -E "passed|failed|FAILED|Error" | tee $OUT/conf_vllm_core.txt
P=""; for s in W4A16_G128 MXFP4 W8A16 W3A16_G128; do for m in 33 48; do P="$P $s:8192x28672:$m $s:6144x4096:$m"; done; done
timeout 130 python3 benchmarks/route_ab.py --module humming_cuda.kernels.wna16_wgmma.heuristics --old TILE48_MAX_M=0 \
  $P --peer --out $OUT/ab_tile48.json 2>&1 | grep -v Warning
timeout 60 python3 benchmarks/route_ab.py --module humming_cuda.kernels.w4a8_decode.heuristics --old UNSPLIT_ONE_BLOCK_STAGES=3 \
  W4A8_FP8:57344x8192:1 W4A8_FP8:57344x8192:8 W4A8_INT8:57344x8192:1 MXFP4_A8:57344x8192:1 W4A8_FP8:8192x28672:1 \
  --peer --out $OUT/ab_decode.json 2>&1 | grep -v Warning
for r in 1 2; do for t in base new; do
  if [ $t = base ]; then R=$PWD/.base; else R=$PWD; fi
  PYTHONPATH=$R/packages/humming-cuda/src:$R/packages/humming-core/src:$R/packages/humming-cuda/tests:$R/benchmarks:/tmp/site \
    timeout 60 python3 $R/benchmarks/moe_host_overhead.py MXFP4_A8:8 W4A16_G128:1 W4A16_G128:64 2>&1 | grep -E " us$" | sed "s/^/$t$r /" | tee -a $OUT/hostab.txt
done; done
