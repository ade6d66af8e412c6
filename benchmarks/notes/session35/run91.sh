#!/bin/bash
# The MoE kernel's 128-column tile (two persistent CTAs per SM, not routed), ~7 min, carry .whl:
# conformance (forced cases and every routed one: the header changed), compute-sanitizer on
# sanitize_moe.py's forced case 11, then the Qwen3-30B-A3B layer of `humming bench --suite moe`
# with 64- / 96-row blocks in the new tile against the routed blocks.
source scripts/gpu_setup.sh >/dev/null 2>&1 || { echo setup failed; exit 1; }
export PYTHONPATH=$PWD/packages/humming-cuda/src:$PWD/packages/humming-core/src:$PWD/packages/humming-cuda/tests:$PWD/benchmarks:/tmp/site
T0=$SECONDS
nvidia-smi --query-gpu=name --format=csv,noheader | tee $OUT/gpu.txt
timeout 150 python3 -m pytest -q -p no:cacheprovider packages/humming-cuda/tests/test_moe_wna16_wgmma_conformance.py --tb=line 2>&1 | tail -6 | tee $OUT/conf_moe.txt
echo "conformance done at $((SECONDS-T0)) s"
timeout 60 compute-sanitizer --tool memcheck --report-api-errors no python3 scripts/sanitize_moe.py 11 2>&1 | tail -3 | tee $OUT/memcheck_moe.txt
timeout 60 compute-sanitizer --tool racecheck python3 scripts/sanitize_moe.py 11 2>&1 | tail -3 | tee $OUT/racecheck_moe.txt
echo "sanitizer done at $((SECONDS-T0)) s"
timeout 200 python3 benchmarks/moe_block_sweep.py --form bf16 --specs W4A16_G128,MXFP4 --m 512,2048 --blocks 64,64n128,96n128 --out $OUT/moe_n128.json 2>&1 | grep -v Warning
echo "done at $((SECONDS-T0)) s"
