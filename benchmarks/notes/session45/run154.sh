#!/bin/bash
# For the next session (carry .whl), any sm_90 card, <= 6 min: session45/byte_words.patch (8-bit
# weight codes under fp16 taken from the packed word by one byte permute: e4m3 converted by
# cvt.rn.f16x2.e4m3x2, integers beside the magic number; the register-A main loop at 57344x8192
# M=1024 249 -> 169 static instructions per 8 MMA for E4M3 g128, 171 -> 127 for W8A16) applied to
# this copy, its conformance (e4m3 and 8-bit integer cases of the register-A kernels, the mma.sync
# kernels on sm_90, MoE), then the same-run header A/B against the unpatched headers.
# Writes run154.tgz.
source scripts/gpu_setup.sh >/dev/null 2>&1 || { echo setup failed; exit 1; }
export PYTHONPATH=$PWD/packages/humming-cuda/src:$PWD/packages/humming-core/src:$PWD/packages/humming-cuda/tests:$PWD/benchmarks:/tmp/site
T=packages/humming-cuda/tests
nvidia-smi --query-gpu=name --format=csv,noheader | tee $OUT/gpu.txt
mkdir -p /tmp/inc_b && cp -r packages/humming-cuda/src/humming_cuda/include /tmp/inc_b/
patch -p1 < benchmarks/notes/session45/byte_words.patch > $OUT/patch.txt 2>&1 || { cat $OUT/patch.txt; exit 1; }
timeout 150 python3 -m pytest -q -p no:cacheprovider $T/test_wna16_wgmma_conformance.py $T/test_wna16_conformance.py \
  $T/test_moe_wna16_wgmma_conformance.py -k "e4m3 or int8 or uint8" 2>&1 | tail -5 | tee $OUT/conformance.txt
P="E4M3_G128:57344x8192:1024 E4M3_G128:6144x4096:1024 E4M3_G128:8192x28672:256 E4M3_G128:4096x14336:64"
P="$P E4M3_G128:57344x8192:16 W8A16:57344x8192:1024 W8A16:6144x4096:1024 W8A16:4096x14336:64"
timeout 150 python3 benchmarks/header_ab.py --b /tmp/inc_b/include $P --out $OUT/ab.json 2>&1 | grep -v Warning | tee $OUT/ab.txt
cd $OUT && tar czf run154.tgz *.txt ab.json && rm -f conformance.txt ab.txt patch.txt
