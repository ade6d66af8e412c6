#!/bin/bash
# Session 39 (carry .whl .abh .abm), ~9 min, any sm_90 card, on branch next/lds-ahead (which holds
# next/stream-uniform and main's stream-K walk guard): .abh = main's include/, .abm =
# next/stream-uniform's (`git archive <rev> packages/humming-cuda/src/humming_cuda/include | tar
# -x -C .abh`). (1) dense + MoE wgmma and register-A conformance; (2) racecheck / memcheck on the
# stream-K sanitize cases; (3) header A/B: this tree against main (both changes) and against
# stream-uniform (the code-word read alone), dense and MoE.
source scripts/gpu_setup.sh >/dev/null 2>&1 || { echo setup failed; exit 1; }
export PYTHONPATH=$PWD/packages/humming-cuda/src:$PWD/packages/humming-core/src:$PWD/packages/humming-cuda/tests:$PWD/benchmarks:/tmp/site
T0=$SECONDS
nvidia-smi --query-gpu=name --format=csv,noheader | tee $OUT/gpu.txt
T=packages/humming-cuda/tests
timeout 270 python3 -m pytest -q -p no:cacheprovider $T/test_wna16_wgmma_conformance.py $T/test_moe_wna16_wgmma_conformance.py \
  $T/test_wgmma_register_a.py --tb=short 2>&1 | tail -15 | tee $OUT/conf.txt
echo "conformance done at $((SECONDS-T0)) s" | tee -a $OUT/conf.txt
C=$(python3 - <<'PY'
import sys; sys.path.insert(0, "scripts")
import sanitize_kernels as s
allc = list(s.CASES) + list(getattr(s, "FORCED", []))
print(" ".join(str(i) for i, c in enumerate(allc) if "rs_stream_k" in str(c)))
PY
)
echo "stream-K cases: $C" | tee $OUT/san.txt
timeout 100 compute-sanitizer --tool racecheck python3 scripts/sanitize_kernels.py $C 2>&1 | tail -2 | tee -a $OUT/san.txt
timeout 80 compute-sanitizer --tool memcheck --report-api-errors no python3 scripts/sanitize_kernels.py $C 2>&1 | tail -2 | tee -a $OUT/san.txt
echo "sanitize done at $((SECONDS-T0)) s" | tee -a $OUT/san.txt
P="W4A16_G128:57344x8192:64 MXFP4:57344x8192:64 W4A16_G128:8192x28672:128 W4A16_G128:6144x4096:256 W3A16_G128:57344x8192:128 MXFP4:8192x28672:256 W4A16_G128:6144x4096:1024 W4A16_G128:4096x14336:64"
H=packages/humming-cuda/src/humming_cuda/include
timeout 110 python3 benchmarks/header_ab.py --b .abh/$H $P --out $OUT/ab_main.json 2>&1 | grep -v Warning | tail -10
echo "A/B main done at $((SECONDS-T0)) s"
timeout 90 python3 benchmarks/header_ab.py --b .abm/$H $P --out $OUT/ab_su.json 2>&1 | grep -v Warning | tail -10
echo "A/B su done at $((SECONDS-T0)) s"
timeout $((570-(SECONDS-T0))) python3 benchmarks/moe_header_ab.py --b .abh/$H --specs W4A16_G128,MXFP4 --m 512,2048 --out $OUT/moe_ab.json 2>&1 | grep -v Warning | tail -6
echo "done at $((SECONDS-T0)) s"
