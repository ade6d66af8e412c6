#!/bin/bash
# Session 37 (carry .whl): where MXFP4 x fp8 MoE spends its time at small M, where it runs the
# decode kernel on bf16 codes (0.81-0.87x the peer at M = 8-128 in moe.json, and slower than its
# own bf16-activation twin MXFP4 by 6-15 us): per-kernel device time of one layer call (ours,
# both specs; the peer's MXFP4_A8), torch.profiler, eager.
source scripts/gpu_setup.sh >/dev/null 2>&1 || { echo setup failed; exit 1; }
export PYTHONPATH=$PWD/packages/humming-cuda/src:$PWD/packages/humming-core/src:$PWD/packages/humming-cuda/tests:$PWD/benchmarks:/tmp/site
T0=$SECONDS
nvidia-smi --query-gpu=name --format=csv,noheader | tee $OUT/gpu.txt
timeout 150 python3 benchmarks/moe_kernel_times.py --specs MXFP4_A8,MXFP4 --m 1,8,32 --out $OUT/times_ours.json 2>&1 | grep -v Warning | tee $OUT/times_ours.txt
echo "ours done at $((SECONDS-T0)) s"
timeout 100 python3 benchmarks/moe_kernel_times.py --peer --specs MXFP4_A8 --m 1,8,32 --out $OUT/times_peer.json 2>&1 | grep -v Warning | tee $OUT/times_peer.txt
echo "peer done at $((SECONDS-T0)) s"
