#!/bin/bash
# Session 38 (carry .whl), ~4 min, any sm_90 card: conformance after (1) the register-A main
# loop's group in the source (Fmt::GROUP_SHIFT), unsigned ring arithmetic and desc_advance's
# low-word add (every wgmma kernel), (2) the stream-K producer's incremental walk: dense wgmma,
# MoE wgmma, W8A8 / W4A8 wgmma conformance; racecheck + memcheck on the stream-K sanitize cases.
source scripts/gpu_setup.sh >/dev/null 2>&1 || { echo setup failed; exit 1; }
export PYTHONPATH=$PWD/packages/humming-cuda/src:$PWD/packages/humming-core/src:$PWD/packages/humming-cuda/tests:$PWD/benchmarks:/tmp/site
T0=$SECONDS
nvidia-smi --query-gpu=name --format=csv,noheader | tee $OUT/gpu.txt
T=packages/humming-cuda/tests
timeout 300 python3 -m pytest -q -p no:cacheprovider $T/test_wna16_wgmma_conformance.py $T/test_moe_wna16_wgmma_conformance.py \
  $T/test_wgmma_register_a.py $T/test_w8a8_wgmma_conformance.py $T/test_w4a8_wgmma_conformance.py --tb=short 2>&1 | tail -15 | tee $OUT/conf.txt
echo "conformance done at $((SECONDS-T0)) s"
python3 - > $OUT/cases.txt <<'PY'
import sys; sys.path.insert(0, "scripts")
import sanitize_kernels as s
allc = list(s.CASES) + list(getattr(s, "FORCED", []))
print(" ".join(str(i) for i, c in enumerate(allc) if "rs_stream_k" in str(c)))
PY
C=$(cat $OUT/cases.txt); echo "stream-K cases: $C"
timeout 150 compute-sanitizer --tool racecheck python3 scripts/sanitize_kernels.py $C 2>&1 | tail -3 | tee $OUT/racecheck.txt
timeout 100 compute-sanitizer --tool memcheck --report-api-errors no python3 scripts/sanitize_kernels.py $C 2>&1 | tail -3 | tee $OUT/memcheck.txt
echo "sanitize done at $((SECONDS-T0)) s"
