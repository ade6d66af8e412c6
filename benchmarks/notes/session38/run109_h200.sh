#!/bin/bash
# For the next session that gets an H200 (carry .whl; `kind: nvidia-h200`): refresh the committed
# results after session 38's kernel changes (register-A loop, stream-K routing, MoE epilogues),
# one part per device call (each well under the 10-minute limit), rows merged into the committed
# files (`humming bench --merge-into`: same GPU model only; the files' `command` records it).
#   bash benchmarks/notes/session38/run109_h200.sh moe      # W4A16_G128, MXFP4, MXFP4_A8, all M
#   bash benchmarks/notes/session38/run109_h200.sh w4       # dense W4A16 g128, M >= 32
#   bash benchmarks/notes/session38/run109_h200.sh mx       # dense MXFP4, M >= 32
#   bash benchmarks/notes/session38/run109_h200.sh other    # dense W3A16 g128, E4M3 g128, W8A16
# Each copies the merged file (and its PNG) to $OUT: commit them from files_at.
source scripts/gpu_setup.sh >/dev/null 2>&1 || { echo setup failed; exit 1; }
export PYTHONPATH=$PWD/packages/humming-cuda/src:$PWD/packages/humming-core/src:$PWD/packages/humming-cuda/tests:$PWD/benchmarks:/tmp/site
nvidia-smi --query-gpu=name --format=csv,noheader | tee $OUT/gpu.txt
grep -q H200 $OUT/gpu.txt || { echo "not an H200: the results files are H200 runs"; exit 1; }
R=benchmarks/results/h200
case "$1" in
  moe) humming bench --suite moe --merge-into $R/moe.json 2>&1 | grep "M=" ; F=moe ;;
  w4) humming bench --suite dense --specs W4A16_G128 --m 32,64,128,256,1024,4096 --merge-into $R/dense.json 2>&1 | grep "M=" ; F=dense ;;
  mx) humming bench --suite dense --specs MXFP4 --m 32,64,128,256,1024,4096 --merge-into $R/dense.json 2>&1 | grep "M=" ; F=dense ;;
  other) humming bench --suite dense --specs W3A16_G128,E4M3_G128,W8A16 --m 32,64,256,4096 --merge-into $R/dense.json 2>&1 | grep "M=" ; F=dense ;;
  *) echo "part: moe | w4 | mx | other"; exit 2 ;;
esac
cp $R/$F.json $R/$F.png $OUT/
