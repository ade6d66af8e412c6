#!/bin/bash
# On an H200: the owed refresh of the committed dense results; on another card: run1.sh's sweeps.
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
  bash benchmarks/notes/session44/refresh.sh 560 dense:W4A16_G128 dense:MXFP4 dense:W8A16 dense:W3A16_G128 dense:E4M3_G128
else
  bash benchmarks/notes/session48/run1.sh
fi
