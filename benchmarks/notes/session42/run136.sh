#!/bin/bash
# For the next GPU session (carry .whl), any sm_90 card, <= 9.5 min (session42.md section 4,
# items 2, 3 and 5): the W8A8 wgmma conformance file in full with the M = 65-128 cluster route;
# the byte-code routes of E4M3 g128 / W8A16 not yet timed, both ways in one run; ncu of W8A8's
# two forms at 4096x14336 M=192, where clusters lost 1.2x on the H200 (stall reasons).
source scripts/gpu_setup.sh >/dev/null 2>&1 || { echo setup failed; exit 1; }
export PYTHONPATH=$PWD/packages/humming-cuda/src:$PWD/packages/humming-core/src:$PWD/packages/humming-cuda/tests:$PWD/benchmarks:/tmp/site
T0=$SECONDS
nvidia-smi --query-gpu=name --format=csv,noheader | tee $OUT/gpu.txt
timeout 330 python3 -m pytest -q -p no:cacheprovider packages/humming-cuda/tests/test_w8a8_wgmma_conformance.py 2>&1 | tail -15 > $OUT/conf.txt
echo "conformance done at $((SECONDS-T0)) s"; tail -2 $OUT/conf.txt
timeout 100 python3 benchmarks/route_ab.py --module humming_cuda.kernels.wna16_wgmma.heuristics --old BYTE_CODES_MAX_M=0 E4M3_G128:6144x4096:32 E4M3_G128:4096x14336:64 E4M3_G128:4096x14336:128 W8A16:4096x14336:96 W8A16:4096x14336:160 --peer --out $OUT/byte_ab.json 2>&1 | grep -v Warning | tee $OUT/byte_ab.txt
S="--section LaunchStats --section SpeedOfLight --section WarpStateStats --section SchedulerStats"
for form in "cluster_split=true,split_k=2,staged_store=false" "cluster_split=false,split_k=2,staged_store=true"; do
  timeout 60 ncu $S --kernel-name "regex:humming_w8a8_wgmma_[0-9a-f]+$" --launch-skip 2 --launch-count 1 python3 benchmarks/profile_gemm.py W8A8_FP8:4096x14336:192 $(echo $form | tr ',' '\n' | sed 's/^/--set /' | tr '\n' ' ') > $OUT/ncu_${form%%,*}.txt 2>&1
done
echo "done at $((SECONDS-T0)) s"
cd $OUT && tar czf run136.tgz *.txt *.json && rm -f conf.txt byte_ab.* ncu_*
