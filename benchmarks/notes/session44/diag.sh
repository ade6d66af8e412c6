#!/bin/bash
# Session 44 (carry .whl), any sm_90 card, ~2.5 min: session43/run141.sh's diagnosis alone (not
# its stream-K sweep, cluster-of-7 sweep or ncu): split 8 at W4A16 g128 / MXFP4 4096x14336 M=128
# (through the workspace, in one cluster of 8, in clusters of 2) timed as built, then with
# split_tile.cuh's sum_parts patched on this copy: (B) every split stores its partial and counts,
# none reads the others back; (A) no split stores anything. A and B write no output: their times
# are the parts' costs only. Writes diag.tgz.
source scripts/gpu_setup.sh >/dev/null 2>&1 || { echo setup failed; exit 1; }
export PYTHONPATH=$PWD/packages/humming-cuda/src:$PWD/packages/humming-core/src:$PWD/packages/humming-cuda/tests:$PWD/benchmarks:/tmp/site
nvidia-smi --query-gpu=name --format=csv,noheader | tee $OUT/diag_gpu.txt
H=packages/humming-cuda/src/humming_cuda/include/humming/epilogue/split_tile.cuh
cp $H /tmp/split_tile.orig
SW="python3 benchmarks/wgmma_config_sweep.py --set split_k=8 --set rs_cluster_split=false,true --set rs_cluster_ctas=0,2 W4A16_G128:4096x14336:128 MXFP4:4096x14336:128"
timeout 40 $SW --out $OUT/diag_full.json 2>&1 | grep "us " | tee $OUT/diag_full.txt
python3 - $H <<'P'
import sys; p=sys.argv[1]; s=open(p).read()
a='  if (!named_barrier_any<THREADS>(BAR, last)) return false;\n'
assert a in s
s=s.replace(a, a+'  if (parts > 1) { if (t == 0) *counter = 0; named_barrier<THREADS>(BAR); return false; }  // DIAG B\n')
open(p,'w').write(s)
P
timeout 40 $SW --out $OUT/diag_b.json 2>&1 | grep "us " | tee $OUT/diag_b.txt
cp /tmp/split_tile.orig $H
python3 - $H <<'P'
import sys; p=sys.argv[1]; s=open(p).read()
a='  const int t = threadIdx.x % THREADS;\n  for (int i = t; i < vecs'
assert a in s
s=s.replace(a, '  if (parts > 1) return false;  // DIAG A\n'+a)
open(p,'w').write(s)
P
timeout 40 $SW --out $OUT/diag_a.json 2>&1 | grep "us " | tee $OUT/diag_a.txt
cp /tmp/split_tile.orig $H
cd $OUT && tar czf diag.tgz diag_* && rm -f diag_*
