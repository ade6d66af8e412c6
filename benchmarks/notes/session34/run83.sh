#!/bin/bash
# Session 34: MoE register-A blocks of 96 and 160 rows (moe_wna16_wgmma), forced: conformance,
# then a same-run sweep against the routed 64 / 128-row blocks at M = 512, 2048, 8192.
source scripts/gpu_setup.sh >/dev/null 2>&1 || { echo setup failed; exit 1; }
export PYTHONPATH=$PWD/packages/humming-cuda/src:$PWD/packages/humming-core/src:$PWD/packages/humming-cuda/tests:$PWD/benchmarks:/tmp/site
T0=$SECONDS
nvidia-smi --query-gpu=name --format=csv,noheader
timeout 150 python3 -m pytest -q -p no:cacheprovider -x packages/humming-cuda/tests/test_moe_wna16_wgmma_conformance.py -k forced 2>&1 | tail -3 | tee $OUT/conf_forced.txt
echo "conformance done at $((SECONDS-T0)) s"
for spec in W4A16_G128 MXFP4; do
  timeout 200 python3 benchmarks/moe_block_sweep.py --form bf16 --specs $spec --m 2048 --blocks 96,160 --out $OUT/sweep_${spec}_2048.json 2>&1 | grep -v Warning | tail -4
  echo "$spec 2048 done at $((SECONDS-T0)) s"
done
for spec in W4A16_G128 MXFP4; do
  timeout 150 python3 benchmarks/moe_block_sweep.py --form bf16 --specs $spec --m 8192 --blocks 160 --out $OUT/sweep_${spec}_8192.json 2>&1 | grep -v Warning | tail -3
  echo "$spec 8192 done at $((SECONDS-T0)) s"
done
timeout 100 python3 benchmarks/moe_block_sweep.py --form bf16 --specs W4A16_G128 --m 512 --blocks 96 --out $OUT/sweep_W4A16_G128_512.json 2>&1 | grep -v Warning | tail -3
echo "512 done at $((SECONDS-T0)) s"
