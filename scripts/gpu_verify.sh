# The GPU verification pass, run on the device machine after `source scripts/gpu_setup.sh`:
# every cuda-marked test (the gated families' conformance files opt in themselves), compute-sanitizer
# on representative kernels (gated families included), the JIT benchmark.
# Logs go to $OUT (or ./.out when OUT is unset).
out=${OUT:-.out}; mkdir -p "$out"
timeout 360 python3 -m pytest -m cuda packages -q -p no:cacheprovider -rfE 2>&1 | tee "$out/pytest_cuda.log" | tail -25
export HUMMING_UNVERIFIED_KERNELS=1  # the sanitizers also cover the gated families
timeout 120 compute-sanitizer --tool memcheck --report-api-errors no python3 scripts/sanitize_kernels.py 2>&1 | tee "$out/memcheck.log" | tail -8
timeout 120 compute-sanitizer --tool racecheck python3 scripts/sanitize_kernels.py 2>&1 | tee "$out/racecheck.log" | tail -8
unset HUMMING_UNVERIFIED_KERNELS
timeout 150 python3 benchmarks/jit_bench.py --out "$out/jit.json" 2>&1 | tee "$out/jit_bench.log" | tail -12
humming info 2>&1 | head -12; humming demo --m 1 --n 8192 --k 8192 2>&1 | tail -6
