#!/bin/bash
# Session 33: the 96-token register-A tile (conformance, then a same-run sweep against 128), then
# ncu stall profiles of the small layer at M = 1024 (split 2 vs stream-K) and MXFP4 at 57344x8192.
source scripts/gpu_setup.sh >/dev/null 2>&1 || { echo setup failed; exit 1; }
export PYTHONPATH=$PWD/packages/humming-cuda/src:$PWD/packages/humming-core/src:$PWD/packages/humming-cuda/tests:$PWD/benchmarks:/tmp/site
T0=$SECONDS
timeout 150 python3 -m pytest -q -p no:cacheprovider packages/humming-cuda/tests/test_wna16_wgmma_conformance.py -k "mid_m" 2>&1 | tail -3 | tee $OUT/conf_mid.txt
echo "conformance done at $((SECONDS-T0)) s"
timeout 200 python3 benchmarks/wgmma_config_sweep.py --set rs_block_m=96,128 --set split_k=1,2 \
  W4A16_G128:6144x4096:1024 MXFP4:6144x4096:1024 W4A16_G128:6144x4096:2048 \
  --out $OUT/sweep96.json 2>&1 | grep -v Warning | tail -30
echo "sweep done at $((SECONDS-T0)) s"
run() { n=$1; shift; timeout 100 python3 benchmarks/ncu_stalls.py "$@" --top 30 --out $OUT/st_$n > $OUT/st_$n.txt 2>&1; echo "== $n rc $? at $((SECONDS-T0)) s"; grep -v "^$" $OUT/st_$n.txt | head -12; }
run w4_6144_1024 W4A16_G128:6144x4096:1024
run w4_6144_1024_sk W4A16_G128:6144x4096:1024 --set split_k=1 --set rs_stream_k=true
run mx_57344_1024 MXFP4:57344x8192:1024
rm -f $OUT/*.ncu-rep
