#!/bin/bash
# MoE at M = 512 (32 routed rows per expert), the bench's widest issue-8 gap in session 46's H100
# snapshot (W4A16 g128 255.9 us against the peer's 189.2, MXFP4 272.8 / 212.5; M = 128 and 2048
# are at or above the peer): per-kernel times, ours against the peer's, then the block sweep
# (moe_wna16 instead, 64-row blocks in 256 or 128 columns, 96 rows). Carry .whl; <= 4 min.
source scripts/gpu_setup.sh >/dev/null 2>&1 || { echo setup failed; exit 1; }
export PYTHONPATH=$PWD/packages/humming-cuda/src:$PWD/packages/humming-core/src:$PWD/packages/humming-cuda/tests:$PWD/benchmarks:/tmp/site
nvidia-smi --query-gpu=name --format=csv,noheader
timeout 100 python3 benchmarks/moe_kernel_times.py --specs W4A16_G128 --m 512 --peer --out $OUT/times512.json 2>&1 | grep -v Warning | tail -25
timeout 120 python3 benchmarks/moe_block_sweep.py --form bf16 --specs W4A16_G128 --m 512 --blocks none,64n128,96 --out $OUT/blocks512.json 2>&1 | grep -v Warning | tail -8
