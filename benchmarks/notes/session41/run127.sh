#!/bin/bash
# Session 41 (carry .whl), any sm_90 card, <= 5 min: the wide token tiles (160 / 176 rows)
# offered from M = 512 (WIDE_MIN_M, was 1024) after run126 measured 6144x4096 M=768 in 160-row
# tiles unsplit at 57.1 us against the routed 86.2 (peer 61.6): every W4A16 g128 point it moves
# on the four layers, and three of other formats, old route against new, with the peer; then
# the 96-row tile from M = 192 (MID_MIN_M, now 512) the same way, "old" being the candidate.
source scripts/gpu_setup.sh >/dev/null 2>&1 || { echo setup failed; exit 1; }
export PYTHONPATH=$PWD/packages/humming-cuda/src:$PWD/packages/humming-core/src:$PWD/packages/humming-cuda/tests:$PWD/benchmarks:/tmp/site
T0=$SECONDS
nvidia-smi --query-gpu=name --format=csv,noheader | tee $OUT/gpu.txt
R="python3 benchmarks/route_ab.py --module humming_cuda.kernels.wna16_wgmma.heuristics"
W="W4A16_G128:6144x4096:768 W4A16_G128:4096x14336:640 W4A16_G128:4096x14336:768 W4A16_G128:4096x14336:896 W4A16_G128:8192x28672:512 W4A16_G128:8192x28672:640 W4A16_G128:8192x28672:768 W4A16_G128:8192x28672:896 W4A16_G128:57344x8192:512 W4A16_G128:57344x8192:768 MXFP4:6144x4096:768 W8A16:6144x4096:768 W8A16:8192x28672:768"
timeout 170 $R --old WIDE_MIN_M=1024 $W --peer --out $OUT/wide_ab.json 2>&1 | grep -v Warning > $OUT/wide_ab.txt
echo "wide done at $((SECONDS-T0)) s"
M="W4A16_G128:6144x4096:192 W4A16_G128:6144x4096:384 W4A16_G128:4096x14336:192 W4A16_G128:4096x14336:384 W4A16_G128:8192x28672:192 W4A16_G128:57344x8192:192"
timeout $((235-(SECONDS-T0))) $R --old MID_MIN_M=192 $M --out $OUT/mid_ab.json 2>&1 | grep -v Warning > $OUT/mid_ab.txt
echo "mid done at $((SECONDS-T0)) s"
cat $OUT/wide_ab.txt $OUT/mid_ab.txt
