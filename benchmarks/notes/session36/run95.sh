#!/bin/bash
# Ordered by priority: the device budget may cut the tail (each part writes $OUT as it goes).
# Session 36 (carry .whl .abh): (1) the e4m3 MoE conversion change (signs from prmt's
# sign-replicate mode, scale offsets hoisted) and (2) the GLU epilogues' fast division, both in
# the headers: MoE conformance (decode, wgmma incl. the forced tiles through the new
# heuristics.forced_tile, a8), then the bench layer against main's headers (.abh = git archive of
# main's include/) in one process: MXFP4_A8 (both changes), W4A16 g128 (the division only).
source scripts/gpu_setup.sh >/dev/null 2>&1 || { echo setup failed; exit 1; }
export PYTHONPATH=$PWD/packages/humming-cuda/src:$PWD/packages/humming-core/src:$PWD/packages/humming-cuda/tests:$PWD/benchmarks:/tmp/site
T0=$SECONDS
nvidia-smi --query-gpu=name --format=csv,noheader | tee $OUT/gpu.txt
T=packages/humming-cuda/tests
timeout 200 python3 -m pytest -q -p no:cacheprovider $T/test_moe_wna16_a8_conformance.py $T/test_moe_wna16_wgmma_conformance.py $T/test_moe_wna16_conformance.py --tb=short 2>&1 | tail -15 | tee $OUT/conf_moe.txt
echo "conformance done at $((SECONDS-T0)) s"
timeout 40 python3 scripts/sanitize_moe.py 11 2>&1 | tail -2 | tee $OUT/forced_case.txt
B=.abh/packages/humming-cuda/src/humming_cuda/include
timeout 150 python3 benchmarks/moe_header_ab.py --b $B --specs MXFP4_A8 --m 2048,8192,512 --out $OUT/ab_a8.json 2>&1 | grep -v Warning | tail -6 | tee $OUT/ab_a8.txt
echo "ab a8 done at $((SECONDS-T0)) s"
timeout 90 python3 benchmarks/moe_header_ab.py --b $B --specs W4A16_G128 --m 512,8192 --out $OUT/ab_w4.json 2>&1 | grep -v Warning | tail -4 | tee $OUT/ab_w4.txt
echo "ab w4 done at $((SECONDS-T0)) s"
# with the cheaper conversion, does the 16-row e4m3 form now beat the decode kernel below 8 rows
# per expert (E4M3_MIN_ROWS_PER_EXPERT)? M = 32 / 64: 2 / 4 rows per expert
timeout 80 python3 benchmarks/moe_block_sweep.py --form e4m3 --specs MXFP4_A8 --m 32,64 --blocks none,16 --out $OUT/e4m3_blocks.json 2>&1 | grep -v Warning | tail -8 | tee $OUT/e4m3_blocks.txt
echo "block sweep done at $((SECONDS-T0)) s"
