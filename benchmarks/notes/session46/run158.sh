#!/bin/bash
# A same-run snapshot of issue 6's grid on this tree (carry .whl), any sm_90 card (an H100 in
# session 46: ratios only; benchmarks/results/h200 holds H200 runs): W4A16 g128 at the four
# layers x M in {1 .. 4096} with every baseline (peer included), then E4M3 g128 at M >= 64 (the
# byte-permute dequantizer landed this session), under one deadline. `humming bench` saves each
# row as it goes, so a cut keeps what it measured. Writes dense_*.json (+ PNGs) to $OUT.
source scripts/gpu_setup.sh >/dev/null 2>&1 || { echo setup failed; exit 1; }
export PYTHONPATH=$PWD/packages/humming-cuda/src:$PWD/packages/humming-core/src:$PWD/packages/humming-cuda/tests:$PWD/benchmarks:/tmp/site
nvidia-smi --query-gpu=name --format=csv,noheader | tee $OUT/gpu.txt
timeout 380 humming bench --suite dense --specs W4A16_G128 --out $OUT/dense_w4a16.json 2>&1 | grep "M=" | tee $OUT/rows.txt
left=$((540 - SECONDS))
[ $left -gt 40 ] && timeout $left humming bench --suite dense --specs E4M3_G128 --m 64,256,1024,4096 \
  --out $OUT/dense_e4m3.json 2>&1 | grep "M=" | tee -a $OUT/rows.txt
echo "done at $SECONDS s"
