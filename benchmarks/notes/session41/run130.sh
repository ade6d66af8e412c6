#!/bin/bash
# For a later GPU session (carry .whl), any sm_90 card, ~3 min: the workspace read-back priced at
# twice SPLIT_ROW_STEPS (0.024 K steps per split row instead of 0.012; the sweeps of session 41
# put the read-back at about three times the model's price). route_ab's "old" side is the
# candidate here: the points whose route that value moves, each timed both ways in one run.
source scripts/gpu_setup.sh >/dev/null 2>&1 || { echo setup failed; exit 1; }
export PYTHONPATH=$PWD/packages/humming-cuda/src:$PWD/packages/humming-core/src:$PWD/packages/humming-cuda/tests:$PWD/benchmarks:/tmp/site
nvidia-smi --query-gpu=name --format=csv,noheader | tee $OUT/gpu.txt
P="W4A16_G128:8192x28672:384 W4A16_G128:6144x4096:17 W4A16_G128:6144x4096:32 W4A16_G128:6144x4096:64 W4A16_G128:4096x14336:48 W8A16:8192x28672:384 W8A16:6144x4096:17 W8A16:6144x4096:32 W8A16:6144x4096:96 W8A16:6144x4096:128 W8A16:4096x14336:48 W8A16:4096x14336:64 W8A16:4096x14336:96 W8A16:4096x14336:128"
timeout 400 python3 benchmarks/route_ab.py --module humming_cuda.kernels.wna16_wgmma.heuristics --old SPLIT_ROW_STEPS=0.024 $P --peer --out $OUT/split_row_ab.json 2>&1 | grep -v Warning | tee $OUT/split_row_ab.txt
