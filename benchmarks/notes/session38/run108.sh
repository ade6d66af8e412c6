#!/bin/bash
# Session 38 (carry .whl .abh; .abh = main b490d7f's include/ with its WgmmaWna16Format taking and
# ignoring the new GROUP_SHIFT argument, so this tree's render compiles against the old kernels):
# the MoE bench layer (moe_wna16_wgmma at these M) old headers (B) against new (A) in one process,
# W4A16 g128 (main loop 276 -> 184 static instructions per K step) and MXFP4 (297 -> 240). ~2 min.
source scripts/gpu_setup.sh >/dev/null 2>&1 || { echo setup failed; exit 1; }
export PYTHONPATH=$PWD/packages/humming-cuda/src:$PWD/packages/humming-core/src:$PWD/packages/humming-cuda/tests:$PWD/benchmarks:/tmp/site
nvidia-smi --query-gpu=name --format=csv,noheader | tee $OUT/gpu.txt
B=.abh/packages/humming-cuda/src/humming_cuda/include
timeout 170 python3 benchmarks/moe_header_ab.py --b $B --specs W4A16_G128,MXFP4 --m 8192,2048 --out $OUT/moe_ab.json 2>&1 | grep -v Warning | tail -6
# Then, on the same warm machine (one command each, the same setup lines):
#   python3 benchmarks/header_ab.py --b $B W3A16_G128:57344x8192:64 E4M3_G128:57344x8192:256 \
#     W8A16:8192x28672:1024 MXFP4:8192x28672:32 W4A16_G128:8192x28672:32 MXFP4:4096x14336:4096 \
#     --out $OUT/dense_ab.json
#   python3 benchmarks/header_ab.py --b $B W4A16_G128:8192x28672:32 W4A16_G128:57344x8192:32 \
#     W4A16_G128:6144x4096:32 W4A16_G128:4096x14336:32 W4A16_G128:8192x28672:128 \
#     W8A16:57344x8192:64 --out $OUT/dense_ab2.json
