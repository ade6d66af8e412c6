#!/bin/bash
# Session 34: after the e4m3 stage fix and zero groups' scales packed as 1: MoE conformance, then
# (H200 only) the MoE rows the 96/160-row blocks and the fold change.
source scripts/gpu_setup.sh >/dev/null 2>&1 || { echo setup failed; exit 1; }
export PYTHONPATH=$PWD/packages/humming-cuda/src:$PWD/packages/humming-core/src:$PWD/packages/humming-cuda/tests:$PWD/benchmarks:/tmp/site
T0=$SECONDS
GPU=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo "$GPU"
timeout 150 python3 -m pytest -q -p no:cacheprovider packages/humming-cuda/tests/test_moe_wna16_wgmma_conformance.py packages/humming-cuda/tests/test_moe_wna16_a8_conformance.py packages/humming-cuda/tests/test_moe_wna16_conformance.py --tb=line 2>&1 | tail -8 | tee $OUT/conf_moe.txt
echo "conformance done at $((SECONDS-T0)) s"
case "$GPU" in *H200*) ;; *) echo "not an H200: no bench rows"; exit 0;; esac
timeout 120 humming bench --suite moe --specs W4A16_G128,MXFP4,MXFP4_A8 --m 512,2048,8192 --out $OUT/moe_rows.json --png $OUT/m1.png 2>&1 | grep -v Warning | tail -12
echo "moe done at $((SECONDS-T0)) s"
timeout 230 humming bench --suite dense --specs MXFP4 --m 32,64,128,256,1024,4096 --out $OUT/dense_mxfp4.json --png $OUT/d1.png 2>&1 | grep -v Warning | tail -26
echo "dense mxfp4 done at $((SECONDS-T0)) s"
