#!/bin/bash
# Session 48, first sweep call (carry .whl), any sm_90 card, <= 9 min:
# 1. the routed MoE conformance cases (32 rows per expert now take 48x128 tiles);
# 2. w4a8_decode ring depth 2 vs 3 at M = 1/4/8 and 16 on the four layers, with the peer (session
#    47's run161: 3 stages 109.7 us vs 2 stages 91.6 at 57344x8192 M=1 on an H100);
# 3. the dense 48-row register tile against 64 at M = 40 / 48 (W4A16 g128).
source scripts/gpu_setup.sh >/dev/null 2>&1 || { echo setup failed; exit 1; }
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD/packages/humming-cuda/src:$PWD/packages/humming-core/src:$PWD/packages/humming-cuda/tests:$PWD/benchmarks:/tmp/site
nvidia-smi --query-gpu=name --format=csv,noheader | tee $OUT/gpu.txt
timeout 90 python3 -m pytest -q -p no:cacheprovider packages/humming-cuda/tests/test_moe_wna16_wgmma_conformance.py \
  -k "matches_reference and not forced and not 128_column" 2>&1 | grep -E "passed|failed|Error" | tee $OUT/conf.txt
P=""; for l in 57344x8192 8192x28672 4096x14336 6144x4096; do for m in 1 4 8; do P="$P W4A8_FP8:$l:$m"; done; done
timeout 240 python3 benchmarks/wgmma_config_sweep.py --set stages=2,3 $P --peer --out $OUT/decode_stages.json 2>&1 | grep -v Warning
P=""; for l in 57344x8192 8192x28672 4096x14336 6144x4096; do P="$P W4A8_FP8:$l:16"; done
timeout 100 python3 benchmarks/wgmma_config_sweep.py --set stages=2,3 $P --peer --out $OUT/decode_stages16.json 2>&1 | grep -v Warning
P=""; for l in 57344x8192 8192x28672 4096x14336 6144x4096; do for m in 40 48; do P="$P W4A16_G128:$l:$m"; done; done
timeout 110 python3 benchmarks/wgmma_config_sweep.py --set rs_block_m=64,48 $P --peer --out $OUT/dense48.json 2>&1 | grep -v Warning
