#!/bin/bash
# Session 46's run163 (W3A16 g128 on the 128-column / stream-K routes, same-run route A/B with the
# peer at 12 points) and then where the MoE layer's eager host time goes (moe_host_overhead.py:
# W4A16 g128 at M = 1 / 8, MXFP4 x fp8 at M = 8 / 128, the points whose bench host_us read 77-300
# us per call). Carry .whl, any sm_90 card, <= 9 min.
source scripts/gpu_setup.sh >/dev/null 2>&1 || { echo setup failed; exit 1; }
export PYTHONPATH=$PWD/packages/humming-cuda/src:$PWD/packages/humming-core/src:$PWD/packages/humming-cuda/tests:$PWD/benchmarks:/tmp/site
T0=$SECONDS
bash benchmarks/notes/session46/run163.sh 2>&1 | tee $OUT/run163.txt
echo "run163 done at $((SECONDS-T0)) s"
timeout $((530 - SECONDS + T0)) python3 benchmarks/moe_host_overhead.py W4A16_G128:1 W4A16_G128:8 \
  MXFP4_A8:8 MXFP4_A8:128 --out $OUT/moe_host.txt 2>&1 | grep -v Warning | grep " us$"
echo "host done at $((SECONDS-T0)) s"
cd $OUT && tar czf run164.tgz *.txt *.json 2>/dev/null && rm -f *.txt *.json
