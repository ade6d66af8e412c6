#!/bin/bash
# Session 37 (carry .whl), ~3 min: (1) ncu durations of the MoE layer's own kernels (serialized,
# so a PDL-launched quantizer's wait on w13 is not counted) at M = 32 and 8, MXFP4_A8 against
# MXFP4; (2) the dense W4A16 g128 bench at M = 64 / 128 with the 128-column tile's split 8.
source scripts/gpu_setup.sh >/dev/null 2>&1 || { echo setup failed; exit 1; }
export PYTHONPATH=$PWD/packages/humming-cuda/src:$PWD/packages/humming-core/src:$PWD/packages/humming-cuda/tests:$PWD/benchmarks:/tmp/site
T0=$SECONDS
nvidia-smi --query-gpu=name --format=csv,noheader | tee $OUT/gpu.txt
for P in MXFP4_A8:32 MXFP4:32 MXFP4_A8:8 MXFP4:8; do
  timeout 60 ncu -k regex:humming_moe --metrics gpu__time_duration.sum python3 benchmarks/profile_moe.py $P > $OUT/ncu_${P/:/_}.txt 2>&1
  echo "== $P"; grep -E "^  humming_moe|gpu__time_duration" $OUT/ncu_${P/:/_}.txt | paste - - | awk '{print $1, $(NF)}' | tail -10
done
echo "ncu done at $((SECONDS-T0)) s"
timeout 150 humming bench --suite dense --specs W4A16_G128 --m 64,128 --out $OUT/dense_w4.json --png $OUT/w4.png 2>&1 | grep "M=" | tee $OUT/dense_w4.txt
echo "dense done at $((SECONDS-T0)) s"
