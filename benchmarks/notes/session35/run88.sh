#!/bin/bash
# Session 35's branch next/rs-n128 on the GPU, call 1 of 2 (~8 min, carry .whl; any sm_90 card:
# same-run ratios): conformance of the register-A kernels (the 128-column tile's new cases and
# every existing one: the template changed), compute-sanitizer on the two new FORCED cases, then
# the first two sweeps of the 128-column tile at two CTAs per SM against the routed plan, the
# published humming-kernels and cuBLAS fp16.
source scripts/gpu_setup.sh >/dev/null 2>&1 || { echo setup failed; exit 1; }
export PYTHONPATH=$PWD/packages/humming-cuda/src:$PWD/packages/humming-core/src:$PWD/packages/humming-cuda/tests:$PWD/benchmarks:/tmp/site
T0=$SECONDS
nvidia-smi --query-gpu=name --format=csv,noheader | tee $OUT/gpu.txt
timeout 230 python3 -m pytest -q -p no:cacheprovider packages/humming-cuda/tests/test_wna16_wgmma_conformance.py --tb=line 2>&1 | tail -8 | tee $OUT/conf.txt
echo "conformance done at $((SECONDS-T0)) s"
timeout 70 compute-sanitizer --tool memcheck --report-api-errors no python3 scripts/sanitize_kernels.py 28 29 2>&1 | tail -4 | tee $OUT/memcheck.txt
timeout 70 compute-sanitizer --tool racecheck python3 scripts/sanitize_kernels.py 28 29 2>&1 | tail -4 | tee $OUT/racecheck.txt
echo "sanitizer done at $((SECONDS-T0)) s"
N128="--set rs_block_n=128 --set rs_ctas_per_sm=2 --peer"
timeout 100 python3 benchmarks/wgmma_config_sweep.py W4A16_G128:57344x8192:64 $N128 --set rs_block_m=64 --set stages=4 --set split_k=1,2,3 --out $OUT/sweep_57344_64.json 2>&1 | grep -v Warning
timeout 100 python3 benchmarks/wgmma_config_sweep.py W4A16_G128:6144x4096:128 $N128 --set rs_block_m=128 --set stages=4 --set split_k=2,4,6 --out $OUT/sweep_6144_128.json 2>&1 | grep -v Warning
echo "done at $((SECONDS-T0)) s"
