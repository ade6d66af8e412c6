#!/bin/bash
# session45/byte_words.patch on the device (carry .whl), any sm_90 card: 8-bit weight codes under
# fp16 taken from the packed word by one byte permute (e4m3 converted by cvt.rn.f16x2.e4m3x2,
# integers beside the magic number; the register-A main loop at 57344x8192 M=1024 249 -> 169
# static instructions per 8 MMA for E4M3 g128, 171 -> 127 for W8A16), applied to this copy, then
# the same-run header A/B against the unpatched headers.
#   full (the default, next session, <= 6 min): the e4m3 / 8-bit integer conformance cases
#     (register-A kernels, the mma.sync kernels on sm_90, MoE) first, then the A/B at 8 points;
#     writes run154.tgz.
#   quick (what session 45's last ~190 device seconds ran): the A/B at the three points it moves
#     most first, then the register-A e4m3 conformance cases as far as time allows.
source scripts/gpu_setup.sh >/dev/null 2>&1 || { echo setup failed; exit 1; }
export PYTHONPATH=$PWD/packages/humming-cuda/src:$PWD/packages/humming-core/src:$PWD/packages/humming-cuda/tests:$PWD/benchmarks:/tmp/site
T=packages/humming-cuda/tests
nvidia-smi --query-gpu=name --format=csv,noheader | tee $OUT/gpu.txt
mkdir -p /tmp/inc_b && cp -r packages/humming-cuda/src/humming_cuda/include /tmp/inc_b/
patch -p1 < benchmarks/notes/session45/byte_words.patch > $OUT/patch.txt 2>&1 || { cat $OUT/patch.txt; exit 1; }
ab() {  # ab LIMIT POINTS...: the header A/B under a time limit of LIMIT seconds
  timeout "$1" python3 benchmarks/header_ab.py --b /tmp/inc_b/include "${@:2}" --out $OUT/ab.json 2>&1 \
    | grep -v Warning | tee $OUT/ab.txt
}
if [ "$1" = quick ]; then
  ab 600 E4M3_G128:57344x8192:1024 W8A16:57344x8192:1024 E4M3_G128:8192x28672:256
  python3 -m pytest -q -p no:cacheprovider $T/test_wna16_wgmma_conformance.py -k "e4m3 and not ue4m3" 2>&1 \
    | tail -4 | tee $OUT/conformance.txt
  exit 0
fi
timeout 150 python3 -m pytest -q -p no:cacheprovider $T/test_wna16_wgmma_conformance.py $T/test_wna16_conformance.py \
  $T/test_moe_wna16_wgmma_conformance.py -k "e4m3 or int8 or uint8" 2>&1 | tail -5 | tee $OUT/conformance.txt
P="E4M3_G128:57344x8192:1024 E4M3_G128:6144x4096:1024 E4M3_G128:8192x28672:256 E4M3_G128:4096x14336:64"
P="$P E4M3_G128:57344x8192:16 W8A16:57344x8192:1024 W8A16:6144x4096:1024 W8A16:4096x14336:64"
ab 150 $P
cd $OUT && tar czf run154.tgz *.txt ab.json && rm -f conformance.txt ab.txt patch.txt
