#!/bin/bash
# The owed H200 refresh of the committed results (carry .whl; an H200 only: the files are H200
# runs and `--merge-into` refuses another GPU model). Jobs run in order, each `SUITE:SPECS[:MS]`
# (MS defaults to the suite's whole grid), under one deadline (first argument, seconds) so the call
# stays inside the device's 10-minute limit: `humming bench` saves after every row, so a job cut
# at the deadline keeps the rows it measured and the next call re-runs the rest.
#   bash benchmarks/notes/session44/refresh.sh 560 dense:W4A16_G128 dense:MXFP4
# The merged files (and PNGs) of the suites touched come back in $OUT with each job's seconds.
source scripts/gpu_setup.sh >/dev/null 2>&1 || { echo setup failed; exit 1; }
export PYTHONPATH=$PWD/packages/humming-cuda/src:$PWD/packages/humming-core/src:$PWD/packages/humming-cuda/tests:$PWD/benchmarks:/tmp/site
nvidia-smi --query-gpu=name --format=csv,noheader | tee $OUT/gpu.txt
grep -q H200 $OUT/gpu.txt || { echo "not an H200: the results files are H200 runs"; exit 1; }
R=benchmarks/results/h200
DEADLINE=$1; shift
touched=""
for job in "$@"; do
  IFS=: read -r suite specs ms <<< "$job"
  left=$((DEADLINE - SECONDS))
  if [ $left -lt 30 ]; then echo "skipped $job: ${left}s left" | tee -a $OUT/times.txt; continue; fi
  start=$SECONDS
  timeout $left humming bench --suite $suite --specs $specs ${ms:+--m $ms} --merge-into $R/$suite.json 2>&1 \
    | grep "M=" | tee -a $OUT/rows.txt
  echo "$job rc=${PIPESTATUS[0]} $((SECONDS - start))s" | tee -a $OUT/times.txt
  touched="$touched $suite"
done
for suite in $(echo $touched | tr ' ' '\n' | sort -u); do
  python3 -c "import json; from humming_cuda.bench.cli import TITLES; from humming_cuda.bench.dense import plot; plot(json.load(open('$R/$suite.json')), '$R/$suite.png', title=TITLES['$suite'])"
  cp $R/$suite.json $R/$suite.png $OUT/
done
