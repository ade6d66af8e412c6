#!/bin/bash
# rs_x_multicast (x_multicast.patch, not on main) on the device (carry .whl), any sm_90 card,
# <= 10 min: its conformance cases
# (test_x_multicast_matches_reference, 14), the same-run sweep plain vs multicast at the routed
# unsplit large-M plans (with the peer), then compute-sanitizer memcheck / racecheck on
# sanitize_kernels.py case 30 (the multicast tile). Writes run157.tgz.
source scripts/gpu_setup.sh >/dev/null 2>&1 || { echo setup failed; exit 1; }
# rs_x_multicast is not on main: applied to this copy
patch -p1 < benchmarks/notes/session46/x_multicast.patch > /dev/null || { echo patch failed; exit 1; }
export PYTHONPATH=$PWD/packages/humming-cuda/src:$PWD/packages/humming-core/src:$PWD/packages/humming-cuda/tests:$PWD/benchmarks:/tmp/site
T=packages/humming-cuda/tests; T0=$SECONDS
nvidia-smi --query-gpu=name --format=csv,noheader | tee $OUT/gpu.txt
timeout 170 python3 -m pytest -q -p no:cacheprovider -x $T/test_wna16_wgmma_conformance.py -k x_multicast 2>&1 \
  | tail -6 | tee $OUT/conformance.txt
echo "conformance done at $((SECONDS-T0)) s"
P="W4A16_G128:6144x4096:1024 MXFP4:6144x4096:1024 E4M3_G128:6144x4096:1024 W4A16_G128:4096x14336:1024"
P="$P W4A16_G128:6144x4096:512 W4A16_G128:8192x28672:512 W4A16_G128:57344x8192:1024 W4A16_G128:6144x4096:4096"
timeout 250 python3 benchmarks/wgmma_config_sweep.py --set rs_x_multicast=false,true $P --peer --out $OUT/sweep.json 2>&1 \
  | grep -v Warning | tee $OUT/sweep.txt
echo "sweep done at $((SECONDS-T0)) s"
timeout 70 compute-sanitizer --tool memcheck --report-api-errors no python3 scripts/sanitize_kernels.py 30 2>&1 | tail -4 | tee $OUT/memcheck.txt
timeout 90 compute-sanitizer --tool racecheck python3 scripts/sanitize_kernels.py 30 2>&1 | tail -4 | tee $OUT/racecheck.txt
cd $OUT && tar czf run157.tgz *.txt *.json 2>/dev/null && rm -f conformance.txt sweep.txt memcheck.txt racecheck.txt
