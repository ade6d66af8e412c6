#!/bin/bash
# Session 46's run160 cut to what decides blocks48.patch (this session's device budget went to
# failed starts), carry .whl, any sm_90 card, <= 6.5 min: the 48-row conformance cases (dense and
# MoE), then the MoE block sweep at M = 512 (W4A16 g128, MXFP4): the routed block against 64, 48
# and their 128-column forms. The dense 48-vs-64 sweep and the per-kernel times with the peer wait.
source scripts/gpu_setup.sh >/dev/null 2>&1 || { echo setup failed; exit 1; }
export PYTHONPATH=$PWD/packages/humming-cuda/src:$PWD/packages/humming-core/src:$PWD/packages/humming-cuda/tests:$PWD/benchmarks:/tmp/site
patch -p1 < benchmarks/notes/session46/blocks48.patch > /dev/null || { echo patch failed; exit 1; }
T=packages/humming-cuda/tests; T0=$SECONDS
nvidia-smi --query-gpu=name --format=csv,noheader | tee $OUT/gpu.txt
timeout 150 python3 -m pytest -q -p no:cacheprovider $T/test_wna16_wgmma_conformance.py \
  $T/test_moe_wna16_wgmma_conformance.py -k "(mid_m and m48) or bm48" 2>&1 | tail -5 | tee $OUT/conformance.txt
echo "conformance done at $((SECONDS-T0)) s"
timeout $((370 - SECONDS + T0)) python3 benchmarks/moe_block_sweep.py --form bf16 --specs W4A16_G128,MXFP4 \
  --m 512 --blocks 64,48,64n128,48n128 --out $OUT/blocks.json 2>&1 | grep -v Warning | tee $OUT/blocks.txt
echo "moe sweep done at $((SECONDS-T0)) s"
