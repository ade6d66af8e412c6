#!/bin/bash
# Session 33: the routed 96-row tile: a same-run check at the one newly routed point not swept
# (4096x14336 M=768), then the dense bench's M=1024 rows of W4A16 g128 and MXFP4.
source scripts/gpu_setup.sh >/dev/null 2>&1 || { echo setup failed; exit 1; }
export PYTHONPATH=$PWD/packages/humming-cuda/src:$PWD/packages/humming-core/src:$PWD/packages/humming-cuda/tests:$PWD/benchmarks:/tmp/site
T0=$SECONDS
timeout 80 python3 benchmarks/wgmma_config_sweep.py --set rs_block_m=96,128 --set split_k=1,4 \
  W4A16_G128:4096x14336:768 --out $OUT/sweep_768.json 2>&1 | grep -v Warning | tail -6
echo "sweep done at $((SECONDS-T0)) s"
timeout 150 humming bench --suite dense --specs W4A16_G128,MXFP4 --m 1024 --out $OUT/dense_1024.json 2>&1 | grep -v Warning | tail -10
echo "bench done at $((SECONDS-T0)) s"
