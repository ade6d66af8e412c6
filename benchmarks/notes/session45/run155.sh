#!/bin/bash
# Session 45's last device minutes (carry .whl), any sm_90 card, ~2 min: session45/byte_words.patch
# applied to this copy, the same-run header A/B against the unpatched headers at the two large-M
# points it moves most, then as many of its e4m3 / int8 register-A conformance cases as time allows.
source scripts/gpu_setup.sh >/dev/null 2>&1 || { echo setup failed; exit 1; }
export PYTHONPATH=$PWD/packages/humming-cuda/src:$PWD/packages/humming-core/src:$PWD/packages/humming-cuda/tests:$PWD/benchmarks:/tmp/site
T=packages/humming-cuda/tests
nvidia-smi --query-gpu=name --format=csv,noheader | tee $OUT/gpu.txt
mkdir -p /tmp/inc_b && cp -r packages/humming-cuda/src/humming_cuda/include /tmp/inc_b/
patch -p1 < benchmarks/notes/session45/byte_words.patch > $OUT/patch.txt 2>&1 || { cat $OUT/patch.txt; exit 1; }
python3 benchmarks/header_ab.py --b /tmp/inc_b/include E4M3_G128:57344x8192:1024 W8A16:57344x8192:1024 \
  E4M3_G128:8192x28672:256 --out $OUT/ab.json 2>&1 | grep -v Warning | tee $OUT/ab.txt
python3 -m pytest -q -p no:cacheprovider $T/test_wna16_wgmma_conformance.py -k "e4m3 and not ue4m3" 2>&1 \
  | tail -4 | tee $OUT/conformance.txt
