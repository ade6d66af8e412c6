#!/bin/bash
# run95.sh cut to what a few device minutes allow (carry .whl .abh): the MoE conformance of the
# changed headers, then MXFP4_A8 against main's headers at M = 8192 / 2048 while time lasts.
source scripts/gpu_setup.sh >/dev/null 2>&1 || { echo setup failed; exit 1; }
export PYTHONPATH=$PWD/packages/humming-cuda/src:$PWD/packages/humming-core/src:$PWD/packages/humming-cuda/tests:$PWD/benchmarks:/tmp/site
T0=$SECONDS
nvidia-smi --query-gpu=name --format=csv,noheader | tee $OUT/gpu.txt
T=packages/humming-cuda/tests
timeout 150 python3 -m pytest -q -p no:cacheprovider $T/test_moe_wna16_a8_conformance.py $T/test_moe_wna16_wgmma_conformance.py $T/test_moe_wna16_conformance.py --tb=short 2>&1 | tail -12 | tee $OUT/conf_moe.txt
echo "conformance done at $((SECONDS-T0)) s"
B=.abh/packages/humming-cuda/src/humming_cuda/include
timeout 120 python3 benchmarks/moe_header_ab.py --b $B --specs MXFP4_A8 --m 8192,2048 --out $OUT/ab_a8.json 2>&1 | grep -v Warning | tail -4 | tee $OUT/ab_a8.txt
echo "ab a8 done at $((SECONDS-T0)) s"
