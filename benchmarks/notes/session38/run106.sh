#!/bin/bash
# Session 38 (carry .whl .abx; .abx = git archive of main b490d7f's packages/ and benchmarks/):
# the register-A changes (group in the source, unsigned ring arithmetic, desc_advance's low-word
# add, stream-K producer walk) against main, each tree's chosen plan and the peer timed in the
# same process (wgmma_config_sweep --peer), new tree first then old, then the new tree's 128-column
# stream-K form at M = 64. ~4 min, any sm_90 card.
source scripts/gpu_setup.sh >/dev/null 2>&1 || { echo setup failed; exit 1; }
R=$PWD
NEW=$R/packages/humming-cuda/src:$R/packages/humming-core/src:$R/packages/humming-cuda/tests:$R/benchmarks:/tmp/site
OLD=$R/.abx/packages/humming-cuda/src:$R/.abx/packages/humming-core/src:$R/.abx/packages/humming-cuda/tests:$R/.abx/benchmarks:/tmp/site
T0=$SECONDS
nvidia-smi --query-gpu=name --format=csv,noheader | tee $OUT/gpu.txt
P="W4A16_G128:57344x8192:64 W4A16_G128:6144x4096:64 W4A16_G128:6144x4096:128 W4A16_G128:4096x14336:128 \
W4A16_G128:8192x28672:128 W4A16_G128:57344x8192:256 W4A16_G128:57344x8192:1024 W4A16_G128:8192x28672:4096 \
MXFP4:57344x8192:64 MXFP4:57344x8192:1024"
for tree in new old; do
  if [ $tree = new ]; then export PYTHONPATH=$NEW; S=$R/benchmarks; else export PYTHONPATH=$OLD; S=$R/.abx/benchmarks; fi
  timeout 200 python3 $S/wgmma_config_sweep.py $P --peer --out $OUT/ab_$tree.json 2>&1 | grep -v Warning | cut -c1-120 | tee $OUT/ab_$tree.txt
  echo "$tree done at $((SECONDS-T0)) s"
done
export PYTHONPATH=$NEW
timeout 120 python3 benchmarks/wgmma_config_sweep.py W4A16_G128:57344x8192:64 W4A16_G128:8192x28672:64 W4A16_G128:4096x14336:64 \
  --set rs_block_n=128 --set rs_ctas_per_sm=2 --set rs_block_m=64 --set split_k=1 --set rs_stream_k=true --set stages=4 --peer \
  --out $OUT/stream_new.json 2>&1 | grep -v Warning | cut -c1-190 | tee $OUT/stream_new.txt
echo "stream done at $((SECONDS-T0)) s"
