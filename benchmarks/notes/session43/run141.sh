#!/bin/bash
# Session 43 (carry .whl), any sm_90 card, <= 8 min: run140's stream-K sweep, then where split-K's
# time goes at W4A16 g128 4096x14336 M=128: the same configs (split 8 through the workspace, split
# 8 in clusters of 2) timed with split_tile.cuh's sum_parts patched on this copy only -- (B) every
# split stores its partial and counts, none sums or stores the tile; (A) no split stores
# anything (main loop, staging, exit) -- against the real kernel. Diagnostics: A and B write no
# output, their times are only the parts' costs. Last, split 7 in one cluster of 7 per tile, and
# ncu's L2 bytes at 8192x28672 M=128 (notes section 5).
bash benchmarks/notes/session43/run140.sh
source scripts/gpu_setup.sh >/dev/null 2>&1 || { echo setup failed; exit 1; }
export PYTHONPATH=$PWD/packages/humming-cuda/src:$PWD/packages/humming-core/src:$PWD/packages/humming-cuda/tests:$PWD/benchmarks:/tmp/site
# (moved to session44/diag.sh, which session 44 runs alone)
bash benchmarks/notes/session44/diag.sh
# split 7 in one cluster per tile (224 CTAs at 4096x14336 M = 64-128): the tile's whole sum over
# distributed shared memory, if clusters of 7 fit at once (CLUSTER_SLOTS has no 7)
timeout 40 python3 benchmarks/cluster_occupancy.py W4A16_G128:4096x14336:128 --splits 6,7,8 2>&1 | tee $OUT/occ7.txt
timeout 90 python3 benchmarks/wgmma_config_sweep.py --set split_k=7,8 --set rs_cluster_split=true --set rs_cluster_ctas=0 \
  W4A16_G128:4096x14336:64 W4A16_G128:4096x14336:96 W4A16_G128:4096x14336:128 MXFP4:4096x14336:128 \
  --out $OUT/c7.json 2>&1 | grep -v "not a valid\|Warning" | tee $OUT/c7.txt
# section 5's hypothesis: L2-to-SM bytes and their share of L2's peak at 8192x28672 M=128
timeout 60 ncu --metrics lts__t_bytes.sum.per_second,lts__t_bytes.sum.pct_of_peak_sustained_elapsed,lts__t_sectors_srcunit_tex_op_read.sum,dram__bytes.sum.per_second,gpu__time_duration.sum \
  --kernel-name regex:humming_wna16 --launch-skip 2 --launch-count 1 python3 benchmarks/profile_gemm.py W4A16_G128:8192x28672:128 > $OUT/ncu_l2.txt 2>&1
cd $OUT && rm -f run140.tgz && tar czf run141.tgz *.txt *.json && rm -f *.txt *.json
