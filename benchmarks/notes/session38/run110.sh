#!/bin/bash
# For the next GPU session (carry .whl .abh; on branch next/stream-uniform, .abh = main's
# include/: `git archive main packages/humming-cuda/src/humming_cuda/include | tar -x -C .abh`),
# ~5 min, any sm_90 card: the stream-K kernel's warp-vote change (and main's walk guard):
# dense wgmma conformance, racecheck / memcheck on the stream-K sanitize cases, then the routed
# stream-K points against main's headers.
source scripts/gpu_setup.sh >/dev/null 2>&1 || { echo setup failed; exit 1; }
export PYTHONPATH=$PWD/packages/humming-cuda/src:$PWD/packages/humming-core/src:$PWD/packages/humming-cuda/tests:$PWD/benchmarks:/tmp/site
T0=$SECONDS
nvidia-smi --query-gpu=name --format=csv,noheader | tee $OUT/gpu.txt
T=packages/humming-cuda/tests
timeout 240 python3 -m pytest -q -p no:cacheprovider $T/test_wna16_wgmma_conformance.py -k "stream or narrow" --tb=short 2>&1 | tail -4 | tee $OUT/conf.txt
echo "conformance done at $((SECONDS-T0)) s"
C="20 21 27 29"  # sanitize_kernels.py's stream-K cases (session 38 run105)
timeout 120 compute-sanitizer --tool racecheck python3 scripts/sanitize_kernels.py $C 2>&1 | tail -2 | tee $OUT/racecheck.txt
timeout 100 compute-sanitizer --tool memcheck --report-api-errors no python3 scripts/sanitize_kernels.py $C 2>&1 | tail -2 | tee $OUT/memcheck.txt
B=.abh/packages/humming-cuda/src/humming_cuda/include
timeout 120 python3 benchmarks/header_ab.py --b $B W4A16_G128:57344x8192:64 MXFP4:57344x8192:64 --out $OUT/ab.json 2>&1 | grep -v Warning | tail -3
echo "done at $((SECONDS-T0)) s"
