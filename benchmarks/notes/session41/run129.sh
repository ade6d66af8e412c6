#!/bin/bash
# For the next GPU session (carry .whl), any sm_90 card, <= 9.5 min: W8A8 / W4A8 wgmma cluster split-K
# (session41/act8_cluster.patch, unverified: compile-tested on the CPU only). Apply it first in
# the working tree (git apply benchmarks/notes/session41/act8_cluster.patch), then this:
# conformance (cluster split-K within the bound and bit for bit the workspace form's output, the
# split tests around it, both families), then split_k x cluster_split at the split-routed points with the
# workspace form and the peer in the same run (the data to route it).
source scripts/gpu_setup.sh >/dev/null 2>&1 || { echo setup failed; exit 1; }
export PYTHONPATH=$PWD/packages/humming-cuda/src:$PWD/packages/humming-core/src:$PWD/packages/humming-cuda/tests:$PWD/benchmarks:/tmp/site
T0=$SECONDS
nvidia-smi --query-gpu=name --format=csv,noheader | tee $OUT/gpu.txt
grep -q "cluster_split" packages/humming-cuda/src/humming_cuda/kernels/w8a8_wgmma/config.py || { echo "apply act8_cluster.patch first"; exit 2; }
timeout 300 python3 -m pytest -q -p no:cacheprovider packages/humming-cuda/tests/test_w8a8_wgmma_conformance.py packages/humming-cuda/tests/test_w4a8_wgmma_conformance.py -k "cluster or split" 2>&1 | tail -15 > $OUT/conf.txt
echo "conformance done at $((SECONDS-T0)) s"; tail -3 $OUT/conf.txt
W="W4A8_FP8:6144x4096:32 W4A8_FP8:6144x4096:128 W4A8_FP8:4096x14336:64"
P="W8A8_FP8:6144x4096:32 W8A8_FP8:6144x4096:128 W8A8_FP8:8192x28672:32 W8A8_FP8:8192x28672:128 W8A8_FP8:4096x14336:32 W8A8_FP8:4096x14336:128 W8A8_FP8:4096x14336:256 FP8_BLOCK128:6144x4096:64 FP8_BLOCK128:4096x14336:64"
timeout $((450-(SECONDS-T0))) python3 benchmarks/wgmma_config_sweep.py $P --set split_k=2,3,4 --set cluster_split=false,true --set staged_store=false --peer --out $OUT/sweep.json 2>&1 | grep -v Warning | cut -c1-160 > $OUT/sweep.txt
timeout $((570-(SECONDS-T0))) python3 benchmarks/wgmma_config_sweep.py $W --set split_k=2,3,4,5 --set cluster_split=false,true --set staged_store=false --peer --out $OUT/sweep_w4.json 2>&1 | grep -v Warning | cut -c1-160 > $OUT/sweep_w4.txt
echo "done at $((SECONDS-T0)) s"
cd $OUT && tar czf run129.tgz *.txt *.json && rm -f conf.txt sweep*
