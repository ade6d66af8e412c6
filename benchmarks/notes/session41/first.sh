#!/bin/bash
# Session 41's first device call: an H200 refreshes the MoE results (owed since session 38);
# any other card runs run124 (the cluster split sweep, same-run ratios only).
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
  bash benchmarks/notes/session38/run109_h200.sh moe
else
  bash benchmarks/notes/session41/run124.sh
fi
