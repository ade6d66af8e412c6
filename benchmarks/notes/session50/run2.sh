#!/bin/bash
# Session 50: two header changes that leave dead epilogue branches out of kernels, on the GPU:
# the SPLIT_SCATTER template flag (session49/split_scatter_flag.patch; wna16_wgmma's register-A
# kernels) and session50/w8a8_persistent_no_split.patch (w8a8_wgmma's persistent kernels).
# A = this tree with the patches applied on the device copy, B = HEAD's headers (copied aside
# first): the plain register-A kernels (unsplit routed points) lose the scatter branch in A only;
# the rendered source is the same on both sides (the flag defaults to false); the persistent
# W8A8 kernels lose the split reduction in A. Then the split,
# cluster and scatter conformance cases and the persistent W8A8 cases under the patches.
source scripts/gpu_setup.sh >/dev/null 2>&1 || { echo setup failed; exit 1; }
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD/packages/humming-cuda/src:$PWD/packages/humming-core/src:$PWD/packages/humming-cuda/tests:$PWD/benchmarks:/tmp/site
nvidia-smi --query-gpu=name --format=csv,noheader | tee $OUT/gpu.txt
INC=packages/humming-cuda/src/humming_cuda/include
rm -rf /tmp/headB && mkdir -p /tmp/headB && cp -r $INC /tmp/headB/
for p in session49/split_scatter_flag session50/w8a8_persistent_no_split; do
  patch -p1 < benchmarks/notes/$p.patch || { echo patch $p failed; exit 1; }
done
P="W8A16:57344x8192:128 W8A16:57344x8192:1024 W8A16:57344x8192:4096 W8A16:4096x14336:1024"
P="$P W8A16:6144x4096:1024 W8A16:6144x4096:4096 W8A16:8192x28672:4096"
P="$P W4A16_G128:57344x8192:128 W4A16_G128:57344x8192:1024 W4A16_G128:4096x14336:1024 W4A16_G128:6144x4096:4096"
P="$P W8A8_FP8:8192x28672:1024 W8A8_FP8:57344x8192:4096 W8A8_FP8:6144x4096:1024 FP8_BLOCK128:8192x28672:4096"
timeout 240 python3 benchmarks/header_ab.py --b /tmp/headB/include $P --out $OUT/scatter_flag_ab.json 2>&1 | grep -v Warning
T=packages/humming-cuda/tests
timeout 190 python3 -m pytest -q -p no:cacheprovider $T/test_wna16_wgmma_conformance.py \
  -k "split or scatter or cluster or stream" 2>&1 | grep -E "passed|failed|FAILED|Error" | tee $OUT/conf_scatter_flag.txt
timeout 110 python3 -m pytest -q -p no:cacheprovider $T/test_w8a8_wgmma_conformance.py -k "persistent" 2>&1 \
  | grep -E "passed|failed|FAILED|Error" | tee $OUT/conf_w8a8_persistent.txt
