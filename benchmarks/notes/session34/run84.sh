#!/bin/bash
# Session 34: MoE 96/160-row blocks routed (867853d+): sanitizer and conformance, then (H200 only)
# the dense rows of the fold and the 96-row tile and the MoE rows the new blocks change.
source scripts/gpu_setup.sh >/dev/null 2>&1 || { echo setup failed; exit 1; }
export PYTHONPATH=$PWD/packages/humming-cuda/src:$PWD/packages/humming-core/src:$PWD/packages/humming-cuda/tests:$PWD/benchmarks:/tmp/site
T0=$SECONDS
GPU=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo "$GPU"
timeout 90 compute-sanitizer --tool memcheck --report-api-errors no python3 scripts/sanitize_moe.py 3 4 5 2>&1 | tail -5 | tee $OUT/memcheck_moe.txt
for c in 3 4; do timeout 70 compute-sanitizer --tool racecheck python3 scripts/sanitize_moe.py $c 2>&1 | tail -2 | tee -a $OUT/racecheck_moe.txt; done
echo "sanitizer done at $((SECONDS-T0)) s"
timeout 150 python3 -m pytest -q -p no:cacheprovider packages/humming-cuda/tests/test_moe_wna16_wgmma_conformance.py packages/humming-cuda/tests/test_moe_wna16_a8_conformance.py --tb=line 2>&1 | tail -12 | tee $OUT/conf_moe.txt
echo "conformance done at $((SECONDS-T0)) s"
case "$GPU" in *H200*) ;; *) echo "not an H200: no bench rows"; exit 0;; esac
timeout 100 humming bench --suite moe --specs W4A16_G128,MXFP4 --m 512,2048,8192 --out $OUT/moe_rows.json --png $OUT/m1.png 2>&1 | grep -v Warning | tail -8
echo "moe done at $((SECONDS-T0)) s"
timeout 230 humming bench --suite dense --specs MXFP4 --m 32,64,128,256,1024,4096 --out $OUT/dense_mxfp4.json --png $OUT/d1.png 2>&1 | grep -v Warning | tail -26
echo "dense mxfp4 done at $((SECONDS-T0)) s"
