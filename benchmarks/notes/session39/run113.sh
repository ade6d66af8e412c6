#!/bin/bash
# Session 39 (carry .whl .abh .ab2), ~8 min, any sm_90 card, on branch next/in-flight: the
# register-A loop keeps 3 slices' wgmma running (wait<3>; 1 on main = .abh, 2 in .ab2) for 4
# fragment buffers at token tiles of <= 64 or 128 rows. Header A/B dense and MoE, then the dense +
# MoE wgmma conformance of this tree.
source scripts/gpu_setup.sh >/dev/null 2>&1 || { echo setup failed; exit 1; }
export PYTHONPATH=$PWD/packages/humming-cuda/src:$PWD/packages/humming-core/src:$PWD/packages/humming-cuda/tests:$PWD/benchmarks:/tmp/site
T0=$SECONDS
nvidia-smi --query-gpu=name --format=csv,noheader | tee $OUT/gpu.txt
H=packages/humming-cuda/src/humming_cuda/include
P="W4A16_G128:57344x8192:64 W4A16_G128:6144x4096:64 W4A16_G128:6144x4096:128 W4A16_G128:4096x14336:128 W4A16_G128:57344x8192:128 W4A16_G128:6144x4096:256 W4A16_G128:57344x8192:256 W4A16_G128:8192x28672:32 MXFP4:8192x28672:128 MXFP4:57344x8192:256 W8A16:8192x28672:256 W4A16_G128:57344x8192:4096"
timeout 150 python3 benchmarks/header_ab.py --b .abh/$H $P --out $OUT/ab_main.json 2>&1 | grep -v Warning | tail -14
echo "A/B main done at $((SECONDS-T0)) s"
timeout 130 python3 benchmarks/header_ab.py --b .ab2/$H $P --out $OUT/ab_2.json 2>&1 | grep -v Warning | tail -14
echo "A/B 2 done at $((SECONDS-T0)) s"
timeout 100 python3 benchmarks/moe_header_ab.py --b .abh/$H --specs W4A16_G128,MXFP4 --m 128,512,2048 --out $OUT/moe_ab.json 2>&1 | grep -v Warning | tail -8
echo "MoE A/B done at $((SECONDS-T0)) s"
T=packages/humming-cuda/tests
timeout $((575-(SECONDS-T0))) python3 -m pytest -q -p no:cacheprovider $T/test_wna16_wgmma_conformance.py $T/test_moe_wna16_wgmma_conformance.py \
  --tb=short -x 2>&1 | tail -5 | tee $OUT/conf.txt
echo "done at $((SECONDS-T0)) s"
