#!/bin/bash
# Session 33: the 96-row tile under compute-sanitizer (case 26), then a same-run sweep of token tile
# x K split at the points where the cost model splits 128-row tiles (its split cost's calibration).
source scripts/gpu_setup.sh >/dev/null 2>&1 || { echo setup failed; exit 1; }
export PYTHONPATH=$PWD/packages/humming-cuda/src:$PWD/packages/humming-core/src:$PWD/packages/humming-cuda/tests:$PWD/benchmarks:/tmp/site
T0=$SECONDS
timeout 60 compute-sanitizer --tool memcheck --report-api-errors no python3 scripts/sanitize_kernels.py 26 2>&1 | tail -3 | tee $OUT/memcheck26.txt
timeout 60 compute-sanitizer --tool racecheck python3 scripts/sanitize_kernels.py 26 2>&1 | tail -2 | tee $OUT/racecheck26.txt
echo "sanitizer done at $((SECONDS-T0)) s"
timeout 420 python3 benchmarks/wgmma_config_sweep.py --set rs_block_m=64,96,128 --set split_k=1,2,4 \
  W4A16_G128:6144x4096:1024 W4A16_G128:6144x4096:768 W4A16_G128:6144x4096:512 \
  W4A16_G128:6144x4096:256 W4A16_G128:4096x14336:1024 W4A16_G128:4096x14336:512 \
  W4A16_G128:8192x28672:768 W4A16_G128:8192x28672:256 W4A16_G128:57344x8192:256 \
  --out $OUT/sweep_split.json 2>&1 | grep -v Warning | tail -90
echo "sweep done at $((SECONDS-T0)) s"
