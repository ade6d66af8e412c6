#!/bin/bash
# Session 37 (carry .whl), on main after the e4m3-signs merge: (1) ncu kernel durations (kernels
# serialized, so no PDL overlap counts) of the MoE layer at M = 32 for MXFP4_A8 and MXFP4: why
# the fp8-activation layer takes 15 us more than its bf16 twin there; (2) the MoE bench at
# M = 2048 / 8192 (which humming bench could not reach before config_for) with the peer.
source scripts/gpu_setup.sh >/dev/null 2>&1 || { echo setup failed; exit 1; }
export PYTHONPATH=$PWD/packages/humming-cuda/src:$PWD/packages/humming-core/src:$PWD/packages/humming-cuda/tests:$PWD/benchmarks:/tmp/site
T0=$SECONDS
nvidia-smi --query-gpu=name --format=csv,noheader | tee $OUT/gpu.txt
for P in MXFP4_A8:32 MXFP4:32 MXFP4_A8:8; do
  timeout 100 ncu --metrics gpu__time_duration.sum,launch__grid_size,launch__block_size python3 benchmarks/profile_moe.py $P > $OUT/ncu_${P/:/_}.txt 2>&1
  grep -E "humming_|gpu__time|grid_size|block_size|$P" $OUT/ncu_${P/:/_}.txt | tail -40
done
echo "ncu done at $((SECONDS-T0)) s"
timeout 300 humming bench --suite moe --specs MXFP4_A8,W4A16_G128 --m 2048,8192 --out $OUT/moe_big.json --png $OUT/m.png 2>&1 | grep -v Warn | tail -8 | tee $OUT/moe_big.txt
echo "bench done at $((SECONDS-T0)) s"
