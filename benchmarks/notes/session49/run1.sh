#!/bin/bash
# Session 49, first call (carry .whl and .base = git archive of d81da73, HEAD before the fused
# MoE glue change). On an H200: the owed dense refresh (session44/refresh.sh; rows merge as they
# are measured) only. Elsewhere, in priority order (the budget was short after failed starts):
# 1. MoE conformance (fused layers, graphs, prepared calls) for the glue change 781af86;
# 2. sweep: 48- against 64-row token tiles under each point's routed plan at M = 40 / 48;
# 3. dense conformance: 128-column M-tail cases and the new 48-row 128-column cases;
# 4. MoE host time, this tree against .base, once each.
source scripts/gpu_setup.sh >/dev/null 2>&1 || { echo setup failed; exit 1; }
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD/packages/humming-cuda/src:$PWD/packages/humming-core/src:$PWD/packages/humming-cuda/tests:$PWD/benchmarks:/tmp/site
nvidia-smi --query-gpu=name --format=csv,noheader | tee $OUT/gpu.txt
if grep -q H200 $OUT/gpu.txt; then
  exec bash benchmarks/notes/session44/refresh.sh ${DEADLINE:-480} dense:W4A16_G128 dense:MXFP4 dense:W8A16 dense:W3A16_G128 dense:E4M3_G128
fi
T=packages/humming-cuda/tests
timeout 150 python3 -m pytest -q -p no:cacheprovider $T/test_moe_wna16_conformance.py $T/test_moe_wna16_a8_conformance.py \
  $T/test_moe_w8a8_conformance.py $T/test_moe_wna16_wgmma_conformance.py $T/test_grouped_cuda.py $T/test_moe_wna16_prepared_call.py \
  -k "fused or graph or prepared or grouped" 2>&1 | grep -E "passed|failed|FAILED|Error" | tee $OUT/conf_moe.txt
P=""; for m in 40 48; do for l in 57344x8192 8192x28672 4096x14336 6144x4096; do P="$P W4A16_G128:$l:$m"; done; done
P="$P MXFP4:57344x8192:40 MXFP4:6144x4096:40"
timeout 140 python3 benchmarks/wgmma_config_sweep.py --set rs_block_m=64,48 $P --peer --out $OUT/sweep48.json 2>&1 | grep -v Warning
timeout 100 python3 -m pytest -q -p no:cacheprovider $T/test_wna16_wgmma_conformance.py \
  -k "cluster_split or scatter or 128_column" 2>&1 \
  | grep -E "passed|failed|FAILED|Error" | tee $OUT/conf_dense.txt
for t in base new; do
  if [ $t = base ]; then R=$PWD/.base; else R=$PWD; fi
  PYTHONPATH=$R/packages/humming-cuda/src:$R/packages/humming-core/src:$R/packages/humming-cuda/tests:$R/benchmarks:/tmp/site \
    timeout 40 python3 $R/benchmarks/moe_host_overhead.py MXFP4_A8:8 W4A16_G128:1 2>&1 | grep -E " us$" | sed "s/^/$t /" | tee -a $OUT/hostab.txt
done
