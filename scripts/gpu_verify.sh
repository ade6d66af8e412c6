# The GPU verification pass, run on the device machine after `source scripts/gpu_setup.sh`, in two
# calls that each fit the device tool's 10-minute limit (the cuda suite alone takes 4-6 minutes):
#   bash scripts/gpu_verify.sh tests   every cuda-marked test (gated families' files opt in)
#   bash scripts/gpu_verify.sh rest    compute-sanitizer on representative kernels (gated families
#                                      included), the JIT benchmark, `humming info` and a demo
# Logs go to $OUT (or ./.out when OUT is unset).
out=${OUT:-.out}; mkdir -p "$out"
case "${1:-}" in
tests)
  timeout 540 python3 -m pytest -m cuda packages -q -p no:cacheprovider -rfE 2>&1 | tee "$out/pytest_cuda.log" | tail -25
  ;;
rest)
  export HUMMING_UNVERIFIED_KERNELS=1  # the sanitizers also cover the gated families
  timeout 150 compute-sanitizer --tool memcheck --report-api-errors no python3 scripts/sanitize_kernels.py 2>&1 | tee "$out/memcheck.log" | tail -12
  timeout 150 compute-sanitizer --tool racecheck python3 scripts/sanitize_kernels.py 2>&1 | tee "$out/racecheck.log" | tail -12
  unset HUMMING_UNVERIFIED_KERNELS
  timeout 150 python3 benchmarks/jit_bench.py --out "$out/jit.json" 2>&1 | tee "$out/jit_bench.log" | tail -12
  humming info 2>&1 | head -12; humming demo --m 1 --n 8192 --k 8192 2>&1 | tail -6
  ;;
*)
  echo "usage: bash scripts/gpu_verify.sh tests|rest" >&2
  exit 2
  ;;
esac
