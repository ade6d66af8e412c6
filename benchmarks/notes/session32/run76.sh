#!/bin/bash
# Session 32: every-thread stage release (racecheck), routed wide W4A8 tiles, then the benches.
source scripts/gpu_setup.sh >/dev/null 2>&1 || { echo setup failed; exit 1; }
export PYTHONPATH=$PWD/packages/humming-cuda/src:$PWD/packages/humming-core/src:$PWD/packages/humming-cuda/tests:$PWD/benchmarks:/tmp/site
T0=$SECONDS
for c in 23 25; do timeout 60 compute-sanitizer --tool racecheck python3 scripts/sanitize_kernels.py $c 2>&1 | tail -2 | tee -a $OUT/racecheck.txt; done
timeout 60 compute-sanitizer --tool memcheck --report-api-errors no python3 scripts/sanitize_kernels.py 23 24 25 2>&1 | tail -4 | tee $OUT/memcheck.txt
echo "sanitizer done at $((SECONDS-T0)) s"
timeout 120 python3 -m pytest -q -p no:cacheprovider packages/humming-cuda/tests/test_w4a8_wgmma_conformance.py packages/humming-cuda/tests/test_w4a8_wgmma.py -x 2>&1 | tail -3 | tee $OUT/conf_w4a8.txt
echo "conformance done at $((SECONDS-T0)) s"
timeout 170 python3 -m pytest -q -p no:cacheprovider packages/humming-cuda/tests/test_w8a8_conformance.py packages/humming-ppu/tests/test_ppu_w8a8_conformance.py packages/humming-cuda/tests/test_moe_w8a8_conformance.py -x 2>&1 | tail -3 | tee $OUT/conf_w8a8.txt
echo "w8a8 conformance done at $((SECONDS-T0)) s"
timeout 80 python3 benchmarks/header_ab.py --b .abp/packages/humming-cuda/src/humming_cuda/include \
  W4A8_FP8:8192x28672:4096 W4A8_FP8:57344x8192:1024 W4A8_FP8:6144x4096:4096 W4A8_FP8:57344x8192:64 \
  --out $OUT/ab_release.json 2>&1 | grep -v Warning | tail -5
echo "ab done at $((SECONDS-T0)) s"
timeout 180 humming bench --suite act8 --specs W4A8_FP8 --out $OUT/act8_w4a8.json --png $OUT/act8_w4a8.png 2>&1 | grep -v Warning | tail -40
echo "act8 done at $((SECONDS-T0)) s"
