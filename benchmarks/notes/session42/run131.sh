#!/bin/bash
# Session 42 (carry .whl), any sm_90 card, <= 9 min: session 41's run128 (the unmeasured
# 57344x8192 routes of the wider tiles) and run130 (the read-back priced at twice
# SPLIT_ROW_STEPS) in one device call.
T0=$SECONDS
bash benchmarks/notes/session41/run128.sh
echo "run128 done at $((SECONDS-T0)) s"
bash benchmarks/notes/session41/run130.sh
echo "run130 done at $((SECONDS-T0)) s"
cd $OUT && tar czf run131.tgz *.txt *.json && rm -f *.txt *.json
