#!/bin/bash
# Owed by session 34 (one H200 call, ~8 min; carry .whl): MoE conformance on main (96/160-row
# blocks, MoE buckets past 8192), then the H200 rows they and the fold change: moe.json at
# M = 512 / 2048 / 8192, dense.json MXFP4 from M = 32 and W4A16 g128 at M = 1024.
source scripts/gpu_setup.sh >/dev/null 2>&1 || { echo setup failed; exit 1; }
export PYTHONPATH=$PWD/packages/humming-cuda/src:$PWD/packages/humming-core/src:$PWD/packages/humming-cuda/tests:$PWD/benchmarks:/tmp/site
T0=$SECONDS
GPU=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo "$GPU"
timeout 120 python3 -m pytest -q -p no:cacheprovider packages/humming-cuda/tests/test_moe_wna16_wgmma_conformance.py packages/humming-cuda/tests/test_moe_wna16_a8_conformance.py --tb=line 2>&1 | tail -6 | tee $OUT/conf_moe.txt
echo "conformance done at $((SECONDS-T0)) s"
case "$GPU" in *H200*) ;; *) echo "not an H200: no result rows"; exit 0;; esac
timeout 130 humming bench --suite moe --specs W4A16_G128,MXFP4,MXFP4_A8 --m 512,2048,8192 --out $OUT/moe_rows.json --png $OUT/m.png 2>&1 | grep "M=" | tee $OUT/moe_rows.txt
echo "moe done at $((SECONDS-T0)) s"
timeout 230 humming bench --suite dense --specs MXFP4 --m 32,64,128,256,1024,4096 --out $OUT/dense_mxfp4.json --png $OUT/d1.png 2>&1 | grep "M=" | tee $OUT/dense_mxfp4.txt
echo "dense mxfp4 done at $((SECONDS-T0)) s"
timeout 45 humming bench --suite dense --specs W4A16_G128 --m 1024 --out $OUT/dense_w4_1024.json --png $OUT/d2.png 2>&1 | grep "M=" | tee $OUT/dense_w4.txt
echo "dense w4 done at $((SECONDS-T0)) s"
