#!/bin/bash
# Session 39 (carry .whl), ~4 min, any sm_90 card, on main (run at the session end on 4 of these
# points, notes section 5: 0.99x each with 5 stages; not routed): the routed stream-K
# forms with ring stages sized for 4-bit codes (rs_code_bits=4, session 39 section 5: the routed
# 256-column kernel waited on its 4-stage ring ~18% of its cycles): stages 4 and 5 against the
# routed 4-stage kernel and the peer, same run; then those configs' conformance is owed before
# routing them (test_wna16_wgmma_conformance's stream cases take --set-like fixtures: add them).
source scripts/gpu_setup.sh >/dev/null 2>&1 || { echo setup failed; exit 1; }
export PYTHONPATH=$PWD/packages/humming-cuda/src:$PWD/packages/humming-core/src:$PWD/packages/humming-cuda/tests:$PWD/benchmarks:/tmp/site
nvidia-smi --query-gpu=name --format=csv,noheader | tee $OUT/gpu.txt
P="W4A16_G128:57344x8192:64 MXFP4:57344x8192:64 W4A16_G128:57344x8192:128 W4A16_G128:57344x8192:256 MXFP4:57344x8192:128 MXFP4:57344x8192:256"
timeout 300 python3 benchmarks/wgmma_config_sweep.py $P --set rs_code_bits=4 --set stages=4,5 --peer --out $OUT/stages_sized.json 2>&1 \
  | grep -v Warning | cut -c1-100 | tee $OUT/stages_sized.txt
