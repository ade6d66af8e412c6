#!/bin/bash
# Session 37 (carry .whl .abh; branch next/row-scale-src, .abh = main's include/): the MoE
# row-scaled epilogues reading the token scale at the row table's x row, and the decode store's
# router weights / scales read once per row: a8 and bf16 MoE conformance, then the bench layer
# against main's headers at M = 8 / 32 (the decode kernel's w13 and w2), fp8 and bf16 activations.
source scripts/gpu_setup.sh >/dev/null 2>&1 || { echo setup failed; exit 1; }
export PYTHONPATH=$PWD/packages/humming-cuda/src:$PWD/packages/humming-core/src:$PWD/packages/humming-cuda/tests:$PWD/benchmarks:/tmp/site
T=packages/humming-cuda/tests
timeout 150 python3 -m pytest -q -p no:cacheprovider $T/test_moe_wna16_a8_conformance.py $T/test_moe_wna16_conformance.py --tb=short 2>&1 | tail -4
B=.abh/packages/humming-cuda/src/humming_cuda/include
timeout 150 python3 benchmarks/moe_header_ab.py --b $B --specs MXFP4_A8,MXFP4,W4A16_G128 --m 8,32 --out $OUT/ab_rowscale.json 2>&1 | grep -v Warning | tail -7
