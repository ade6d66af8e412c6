#!/bin/bash
# The first device call of session 47, whatever card comes (carry .whl, <= 7 min: most of the
# budget went to failed starts): on an H200 the owed refresh of the committed results
# (session44/refresh.sh, W4A16 g128 then MXFP4: issue 6's grid), on any other card run160s.sh
# (what decides session 46's 48-row tiles for the MoE M = 512 gap).
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
  bash benchmarks/notes/session44/refresh.sh 400 dense:W4A16_G128 dense:MXFP4
else
  bash benchmarks/notes/session47/run160s.sh
fi
