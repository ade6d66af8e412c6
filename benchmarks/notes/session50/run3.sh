#!/bin/bash
# Session 50, first call on any card (carry .whl): what is owed first, in one call.
# 1. MoE conformance of the fused-glue change 781af86 (never run on a GPU);
# 2. dense conformance: the 128-column M-tail and 48-row 128-column cases of 625dcae;
# 3. header A/B of run2.sh (SPLIT_SCATTER flag, persistent W8A8 without split reduction),
#    the patches applied after 1-2 so those run HEAD's headers.
source scripts/gpu_setup.sh >/dev/null 2>&1 || { echo setup failed; exit 1; }
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD/packages/humming-cuda/src:$PWD/packages/humming-core/src:$PWD/packages/humming-cuda/tests:$PWD/benchmarks:/tmp/site
nvidia-smi --query-gpu=name --format=csv,noheader | tee $OUT/gpu.txt
T=packages/humming-cuda/tests
timeout 150 python3 -m pytest -q -p no:cacheprovider $T/test_moe_wna16_conformance.py $T/test_moe_wna16_a8_conformance.py \
  $T/test_moe_w8a8_conformance.py $T/test_moe_wna16_wgmma_conformance.py $T/test_grouped_cuda.py $T/test_moe_wna16_prepared_call.py \
  -k "fused or graph or prepared or grouped" 2>&1 | grep -E "passed|failed|FAILED|Error" | tee $OUT/conf_moe.txt
timeout 100 python3 -m pytest -q -p no:cacheprovider $T/test_wna16_wgmma_conformance.py \
  -k "cluster_split or scatter or 128_column" 2>&1 | grep -E "passed|failed|FAILED|Error" | tee $OUT/conf_dense.txt
INC=packages/humming-cuda/src/humming_cuda/include
rm -rf /tmp/headB && mkdir -p /tmp/headB && cp -r $INC /tmp/headB/
for p in session49/split_scatter_flag session50/w8a8_persistent_no_split; do
  patch -p1 < benchmarks/notes/$p.patch || { echo patch $p failed; exit 1; }
done
P="W8A16:57344x8192:128 W8A16:57344x8192:1024 W8A16:4096x14336:1024 W8A16:6144x4096:1024"
P="$P W8A16:6144x4096:4096 W4A16_G128:57344x8192:128 W4A16_G128:57344x8192:1024 W4A16_G128:6144x4096:4096"
P="$P W8A8_FP8:8192x28672:1024 W8A8_FP8:6144x4096:1024 FP8_BLOCK128:8192x28672:4096"
left=$((${DEADLINE:-570} - SECONDS))
timeout $left python3 benchmarks/header_ab.py --b /tmp/headB/include $P --out $OUT/header_ab.json 2>&1 | grep -v Warning | tee $OUT/header_ab.txt
