#!/bin/bash
# Session 34 (branch next/mxfp4-fold = main + the fold): the dense rows the fold and the 96-row
# tile change (MXFP4 from M=32 where wna16_wgmma is routed, W4A16 g128 at M=1024) and the MoE
# MXFP4 rows the MoE wgmma kernel runs (M >= 512). H200 only (results/h200).
source scripts/gpu_setup.sh >/dev/null 2>&1 || { echo setup failed; exit 1; }
export PYTHONPATH=$PWD/packages/humming-cuda/src:$PWD/packages/humming-core/src:$PWD/packages/humming-cuda/tests:$PWD/benchmarks:/tmp/site
T0=$SECONDS
nvidia-smi --query-gpu=name --format=csv,noheader
timeout 250 humming bench --suite dense --specs MXFP4 --m 32,64,128,256,1024,4096 --out $OUT/dense_mxfp4.json --png $OUT/d1.png 2>&1 | grep -v Warning | tail -26
echo "dense mxfp4 done at $((SECONDS-T0)) s"
timeout 60 humming bench --suite dense --specs W4A16_G128 --m 1024 --out $OUT/dense_w4_1024.json --png $OUT/d2.png 2>&1 | grep -v Warning | tail -6
echo "dense w4 done at $((SECONDS-T0)) s"
timeout 100 humming bench --suite moe --specs MXFP4 --m 512,2048,8192 --out $OUT/moe_mxfp4.json --png $OUT/m1.png 2>&1 | grep -v Warning | tail -6
echo "moe done at $((SECONDS-T0)) s"
