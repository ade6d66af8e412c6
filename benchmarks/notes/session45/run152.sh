#!/bin/bash
# Session 45 (carry .whl), any sm_90 card, one part per call (each <= 6 min; e: <= 9 min):
# e: the essentials of a and b (fewer points), for a short device budget.
# a: session 44's run151 (register-A conformance on the routed configs, the WnA16 scatter route
#    A/B at the moved points not yet timed), the WnA16 scatter conformance (incl. the 32-row tile
#    at two CTAs per SM, not yet run), the W8A8- and W4A8-wgmma split_scatter conformance.
# b: W8A8- and W4A8-wgmma split plans, the workspace form against split_scatter (clusters and
#    staged rows off, the routed split), the routed plan timed beside them, same run.
# c: WnA16 large-M wave shapes: 96 / 128 / 160-row tiles, unsplit and stream-K, at the points
#    furthest behind the peer (6144x4096 / 4096x14336 M=1024), the peer in the same run.
source scripts/gpu_setup.sh >/dev/null 2>&1 || { echo setup failed; exit 1; }
export PYTHONPATH=$PWD/packages/humming-cuda/src:$PWD/packages/humming-core/src:$PWD/packages/humming-cuda/tests:$PWD/benchmarks:/tmp/site
T=packages/humming-cuda/tests
nvidia-smi --query-gpu=name --format=csv,noheader | tee $OUT/gpu.txt
case "$1" in
e)
  # the essentials of a and b in one call, under a deadline ($2 seconds, default 540): each step
  # gets its usual limit or what is left, whichever is less, conformance first
  D=${2:-540}
  left() { local l=$((D - SECONDS)); [ $l -gt $1 ] && echo $1 || echo $((l > 5 ? l : 5)); }
  timeout $(left 140) python3 -m pytest -q -p no:cacheprovider $T/test_wna16_wgmma_conformance.py \
    -k "register or small_m or mid_m or scatter" 2>&1 | tail -4 > $OUT/conformance.txt
  timeout $(left 110) python3 -m pytest -q -p no:cacheprovider $T/test_w8a8_wgmma_conformance.py \
    $T/test_w4a8_wgmma_conformance.py -k scatter 2>&1 | tail -4 >> $OUT/conformance.txt
  cat $OUT/conformance.txt
  P="W8A8_FP8:4096x14336:64 W8A8_FP8:4096x14336:256 W4A8_FP8:4096x14336:64 W4A8_FP8:8192x28672:32"
  P="$P W8A8_FP8:8192x28672:64 FP8_BLOCK128:6144x4096:64 W4A8_FP8:6144x4096:32 W4A8_FP8:4096x14336:128"
  timeout $(left 190) python3 benchmarks/wgmma_config_sweep.py --set cluster_split=false --set staged_store=false \
    --set split_scatter=false,true $P --out $OUT/sweep_act8.json 2>&1 | grep -v Warning | tee $OUT/sweep_act8.txt
  P="W3A16_G128:4096x14336:128 W8A16:8192x28672:64 E4M3_G128:4096x14336:192 MXFP4:8192x28672:96"
  [ $((D - SECONDS)) -gt 40 ] && timeout $(left 100) python3 benchmarks/route_ab.py \
    --module humming_cuda.kernels.wna16_wgmma.heuristics --old SCATTER_MIN_BLOCK_M=100000 \
    --old SCATTER_MIN_BLOCK_M_2CTAS=100000 $P --out $OUT/ab.json 2>&1 | grep -v Warning | tee $OUT/ab.txt ;;
a)
  bash benchmarks/notes/session44/run151.sh > /dev/null 2>&1
  timeout 80 python3 -m pytest -q -p no:cacheprovider $T/test_wna16_wgmma_conformance.py -k scatter 2>&1 \
    | tail -4 > $OUT/scatter.txt
  for f in w8a8 w4a8; do
    timeout 70 python3 -m pytest -q -p no:cacheprovider $T/test_${f}_wgmma_conformance.py -k "scatter" 2>&1 \
      | tail -4 >> $OUT/scatter.txt
  done
  cat $OUT/conformance.txt $OUT/scatter.txt $OUT/ab.txt ;;
b)
  P="W8A8_FP8:4096x14336:32 W8A8_FP8:4096x14336:64 W8A8_FP8:4096x14336:128 W8A8_FP8:4096x14336:256"
  P="$P W8A8_FP8:6144x4096:128 W8A8_FP8:8192x28672:64 W8A8_FP8:8192x28672:128"
  P="$P FP8_BLOCK128:4096x14336:64 FP8_BLOCK128:6144x4096:64"
  P="$P W4A8_FP8:6144x4096:32 W4A8_FP8:6144x4096:64 W4A8_FP8:4096x14336:32 W4A8_FP8:4096x14336:64"
  P="$P W4A8_FP8:4096x14336:128 W4A8_FP8:8192x28672:32 W4A8_FP8:8192x28672:64"
  timeout 330 python3 benchmarks/wgmma_config_sweep.py --set cluster_split=false --set staged_store=false \
    --set split_scatter=false,true $P --out $OUT/sweep_act8.json 2>&1 | grep -v Warning | tee $OUT/sweep_act8.txt ;;
c)
  P="W4A16_G128:6144x4096:1024 W4A16_G128:4096x14336:1024 MXFP4:6144x4096:1024 W4A16_G128:6144x4096:2048"
  timeout 330 python3 benchmarks/wgmma_config_sweep.py --peer --set stages=4 --set rs_block_m=96,128,160 \
    --set rs_stream_k=false,true $P --out $OUT/sweep_wide.json 2>&1 | grep -v Warning | tee $OUT/sweep_wide.txt ;;
esac
