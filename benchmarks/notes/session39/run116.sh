#!/bin/bash
# Session 39 (carry .whl), ~3 min, any sm_90 card, on main after the 256-column stream-K routing:
# the routed kernels at the points the route changed (and two it kept), the peer in the same run,
# and the stream-K conformance cases.
source scripts/gpu_setup.sh >/dev/null 2>&1 || { echo setup failed; exit 1; }
export PYTHONPATH=$PWD/packages/humming-cuda/src:$PWD/packages/humming-core/src:$PWD/packages/humming-cuda/tests:$PWD/benchmarks:/tmp/site
T0=$SECONDS
nvidia-smi --query-gpu=name --format=csv,noheader | tee $OUT/gpu.txt
P="W4A16_G128:57344x8192:128 W4A16_G128:57344x8192:256 MXFP4:57344x8192:128 MXFP4:57344x8192:256 W4A16_G128:57344x8192:192 W4A16_G128:8192x28672:128"
timeout 120 python3 benchmarks/wgmma_config_sweep.py $P --set rs_stream_k=true,false --peer --out $OUT/routed.json 2>&1 | grep -v Warning | cut -c1-100 | tee $OUT/routed.txt
echo "sweep done at $((SECONDS-T0)) s"
T=packages/humming-cuda/tests
timeout 150 python3 -m pytest -q -p no:cacheprovider $T/test_wna16_wgmma_conformance.py -k "stream" --tb=short 2>&1 | tail -3 | tee $OUT/conf.txt
echo "done at $((SECONDS-T0)) s"
