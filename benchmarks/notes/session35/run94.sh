#!/bin/bash
# The routed changes end to end: `humming bench` rows (the peer and cuBLAS in the same run) for
# W4A16 g128 at M = 16 (the decode split) and 64-256 (the 128-column tile), MXFP4 at 64 / 128.
source scripts/gpu_setup.sh >/dev/null 2>&1 || { echo setup failed; exit 1; }
export PYTHONPATH=$PWD/packages/humming-cuda/src:$PWD/packages/humming-core/src:$PWD/packages/humming-cuda/tests:$PWD/benchmarks:/tmp/site
nvidia-smi --query-gpu=name --format=csv,noheader | tee $OUT/gpu.txt
timeout 300 humming bench --suite dense --specs W4A16_G128 --m 16,64,128,256 --out $OUT/dense_w4.json --png $OUT/w4.png 2>&1 | grep "M=" | tee $OUT/dense_w4.txt
timeout 150 humming bench --suite dense --specs MXFP4 --m 64,128 --out $OUT/dense_mx.json --png $OUT/mx.png 2>&1 | grep "M=" | tee $OUT/dense_mx.txt
