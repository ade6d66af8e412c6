#!/bin/bash
# The first device call of session 47, whatever card comes (carry .whl, <= 10 min): on an H200
# the owed refresh of the committed results (session44/refresh.sh, W4A16 g128 and MXFP4 first:
# issue 6's grid), on any other card session 46's run160 (48-row tiles for the MoE M = 512 gap).
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
  bash benchmarks/notes/session44/refresh.sh 560 dense:W4A16_G128 dense:MXFP4 dense:W8A16 \
    dense:W3A16_G128 dense:E4M3_G128
else
  bash benchmarks/notes/session46/run160.sh
fi
