#!/bin/bash
# Header A/B (carry .whl), any sm_90 card: the register-A main loop loading every slice's code
# words right after the full barrier (words_ahead.patch, not on main) against the headers
# without it, at 9 points. Session 46 (H100): 0.95-0.97x at the 96-row points and at 57344x8192
# M=64, 0.99-1.03x at the other four; not kept.
source scripts/gpu_setup.sh >/dev/null 2>&1 || { echo setup failed; exit 1; }
export PYTHONPATH=$PWD/packages/humming-cuda/src:$PWD/packages/humming-core/src:$PWD/packages/humming-cuda/tests:$PWD/benchmarks:/tmp/site
mkdir -p /tmp/inc_b && cp -r packages/humming-cuda/src/humming_cuda/include /tmp/inc_b/
patch -p1 < benchmarks/notes/session46/words_ahead.patch > /dev/null || { echo patch failed; exit 1; }
nvidia-smi --query-gpu=name --format=csv,noheader
P="W4A16_G128:6144x4096:1024 MXFP4:6144x4096:1024 W3A16_G128:6144x4096:1024 E4M3_G128:6144x4096:1024 W4A16_G128:4096x14336:128 W4A16_G128:57344x8192:64 W4A16_G128:8192x28672:256 W4A16_G128:4096x14336:1024 W8A16:4096x14336:64"
timeout 400 python3 benchmarks/header_ab.py --b /tmp/inc_b/include $P --out $OUT/ab.json 2>&1 | grep -v Warning
