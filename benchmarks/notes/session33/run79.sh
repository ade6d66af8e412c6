#!/bin/bash
# Session 33: the 96-row tile (split and stream-K) under compute-sanitizer and conformance, then
# same-run sweeps: token tile x K split where the cost model splits 128-row tiles, and the
# persistent stream-K form on 96-row tiles (whole tiles per CTA at 6144x4096 M=1024).
source scripts/gpu_setup.sh >/dev/null 2>&1 || { echo setup failed; exit 1; }
export PYTHONPATH=$PWD/packages/humming-cuda/src:$PWD/packages/humming-core/src:$PWD/packages/humming-cuda/tests:$PWD/benchmarks:/tmp/site
T0=$SECONDS
timeout 60 compute-sanitizer --tool memcheck --report-api-errors no python3 scripts/sanitize_kernels.py 26 27 2>&1 | tail -3 | tee $OUT/memcheck26.txt
for c in 26 27; do timeout 60 compute-sanitizer --tool racecheck python3 scripts/sanitize_kernels.py $c 2>&1 | tail -2 | tee -a $OUT/racecheck26.txt; done
echo "sanitizer done at $((SECONDS-T0)) s"
timeout 120 python3 -m pytest -q -p no:cacheprovider packages/humming-cuda/tests/test_wna16_wgmma_conformance.py -k "stream_k_matches or mid_m" 2>&1 | tail -3 | tee $OUT/conf_96.txt
echo "conformance done at $((SECONDS-T0)) s"
timeout 100 python3 benchmarks/wgmma_config_sweep.py --set rs_block_m=96,128 --set split_k=1 --set rs_stream_k=false,true \
  W4A16_G128:6144x4096:1024 MXFP4:6144x4096:1024 W4A16_G128:6144x4096:256 \
  --out $OUT/sweep_stream96.json 2>&1 | grep -v Warning | tail -20
echo "stream sweep done at $((SECONDS-T0)) s"
timeout 300 python3 benchmarks/wgmma_config_sweep.py --set rs_block_m=64,96,128 --set split_k=1,2,4 \
  W4A16_G128:6144x4096:1024 W4A16_G128:6144x4096:768 W4A16_G128:6144x4096:512 \
  W4A16_G128:6144x4096:256 W4A16_G128:4096x14336:1024 W4A16_G128:4096x14336:512 \
  W4A16_G128:8192x28672:768 W4A16_G128:8192x28672:256 W4A16_G128:57344x8192:256 \
  --out $OUT/sweep_split.json 2>&1 | grep -v Warning | tail -90
echo "sweep done at $((SECONDS-T0)) s"
