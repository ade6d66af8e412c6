#!/bin/bash
# Session 33's branch next/mxfp4-fold: bf16 float codes' exponent bias folded into the group scales
# in the register-A wgmma kernel, and scale rows reloaded only where a group starts. Correctness
# first (conformance, sanitizer), then same-run A/B against main's headers (.abm = git archive
# 3f46d37 packages/humming-cuda/src/humming_cuda/include). Carry .whl .gpu .abm.
source scripts/gpu_setup.sh >/dev/null 2>&1 || { echo setup failed; exit 1; }
export PYTHONPATH=$PWD/packages/humming-cuda/src:$PWD/packages/humming-core/src:$PWD/packages/humming-cuda/tests:$PWD/benchmarks:/tmp/site
T0=$SECONDS
timeout 60 compute-sanitizer --tool memcheck --report-api-errors no python3 scripts/sanitize_kernels.py 2 21 26 2>&1 | tail -4 | tee $OUT/memcheck_fold.txt
for c in 2 21; do timeout 60 compute-sanitizer --tool racecheck python3 scripts/sanitize_kernels.py $c 2>&1 | tail -2 | tee -a $OUT/racecheck_fold.txt; done
echo "sanitizer done at $((SECONDS-T0)) s"
timeout 240 python3 -m pytest -q -p no:cacheprovider -x packages/humming-cuda/tests/test_wna16_wgmma_conformance.py packages/humming-cuda/tests/test_moe_wna16_wgmma_conformance.py 2>&1 | tail -3 | tee $OUT/conf_fold.txt
echo "conformance done at $((SECONDS-T0)) s"
timeout 100 python3 benchmarks/header_ab.py --b .abm/packages/humming-cuda/src/humming_cuda/include \
  MXFP4:57344x8192:1024 MXFP4:6144x4096:256 MXFP4:8192x28672:4096 MXFP4:4096x14336:64 \
  W4A16_G128:57344x8192:1024 W4A16_G128:6144x4096:256 --out $OUT/ab_fold.json 2>&1 | grep -v Warning | tail -8
echo "ab done at $((SECONDS-T0)) s"
timeout 100 python3 benchmarks/moe_header_ab.py --b .abm/packages/humming-cuda/src/humming_cuda/include \
  --specs MXFP4 --m 512,2048 --out $OUT/moe_ab_fold.json 2>&1 | grep -v Warning | tail -5
echo "moe ab done at $((SECONDS-T0)) s"
