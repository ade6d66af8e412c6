#!/bin/bash
# Session 41 (carry .whl), any sm_90 card, <= 9 min: the small layers at M = 192-768, where the
# peer leads most (6144x4096 M=384 36.2 vs 49.2 us, run125): the register form's tiles (256
# columns at one CTA per SM: 64-160 rows; 128 columns at two: 64 / 128 rows) x splits 1-6 x
# cluster, 4 stages, against the routed plan and the peer; then the two stream-K forms.
source scripts/gpu_setup.sh >/dev/null 2>&1 || { echo setup failed; exit 1; }
export PYTHONPATH=$PWD/packages/humming-cuda/src:$PWD/packages/humming-core/src:$PWD/packages/humming-cuda/tests:$PWD/benchmarks:/tmp/site
T0=$SECONDS
nvidia-smi --query-gpu=name --format=csv,noheader | tee $OUT/gpu.txt
S="python3 benchmarks/wgmma_config_sweep.py"
C="--set split_k=1,2,3,4,6 --set rs_cluster_split=false,true --set stages=4"
i=0
for P in W4A16_G128:6144x4096:384 W4A16_G128:6144x4096:192 W4A16_G128:6144x4096:768 W4A16_G128:6144x4096:256 W4A16_G128:4096x14336:512; do
  i=$((i+1)); left=$((480-(SECONDS-T0))); [ $left -lt 30 ] && break
  timeout $left $S $P --set rs_block_n=256 --set rs_ctas_per_sm=1 --set rs_block_m=64,96,128,160 $C --peer --out $OUT/wide$i.json 2>&1 | grep -v "Warning\|not a valid" | cut -c1-170 > $OUT/wide$i.txt
  left=$((480-(SECONDS-T0))); [ $left -lt 20 ] && break
  timeout $left $S $P --set rs_block_n=128 --set rs_ctas_per_sm=2 --set rs_block_m=64,128 $C --out $OUT/narrow$i.json 2>&1 | grep -v "Warning\|not a valid" | cut -c1-170 > $OUT/narrow$i.txt
  echo "$P done at $((SECONDS-T0)) s"
done
left=$((560-(SECONDS-T0)))
[ $left -gt 20 ] && timeout $left $S W4A16_G128:6144x4096:384 W4A16_G128:6144x4096:192 --set rs_stream_k=true --set split_k=1 --set rs_cluster_split=false --set rs_block_m=64,128 --set rs_block_n=128,256 --set rs_ctas_per_sm=1,2 --set stages=4 --out $OUT/stream.json 2>&1 | grep -v "Warning\|not a valid" | cut -c1-170 > $OUT/stream.txt
echo "done at $((SECONDS-T0)) s"
cd $OUT && tar czf run126.tgz *.txt *.json && rm -f wide* narrow* stream*
