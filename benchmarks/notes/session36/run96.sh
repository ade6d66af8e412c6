#!/bin/bash
# Session 36 (carry .whl): MXFP4_A8 MoE through `humming bench` (the peer and grouped_mm in the
# same run) with the e4m3 change, then session 35's owed run94 (dense W4A16 g128 M = 16-256 and
# MXFP4 M = 64 / 128 with the routing of session 35).
source scripts/gpu_setup.sh >/dev/null 2>&1 || { echo setup failed; exit 1; }
export PYTHONPATH=$PWD/packages/humming-cuda/src:$PWD/packages/humming-core/src:$PWD/packages/humming-cuda/tests:$PWD/benchmarks:/tmp/site
T0=$SECONDS
nvidia-smi --query-gpu=name --format=csv,noheader | tee $OUT/gpu.txt
timeout 150 humming bench --suite moe --specs MXFP4_A8 --m 128,512,2048,8192 --out $OUT/moe_a8.json --png $OUT/m.png 2>&1 | grep "M=" | tee $OUT/moe_a8.txt
echo "moe done at $((SECONDS-T0)) s"
timeout 260 humming bench --suite dense --specs W4A16_G128 --m 16,64,128,256 --out $OUT/dense_w4.json --png $OUT/w4.png 2>&1 | grep "M=" | tee $OUT/dense_w4.txt
echo "dense w4 done at $((SECONDS-T0)) s"
timeout 140 humming bench --suite dense --specs MXFP4 --m 64,128 --out $OUT/dense_mx.json --png $OUT/mx.png 2>&1 | grep "M=" | tee $OUT/dense_mx.txt
echo "dense mx done at $((SECONDS-T0)) s"
