"""JIT runtime benchmark: cold compile, parallel layer compile, disk-cache load, eager launch overhead.

    python benchmarks/jit_bench.py [--out benchmarks/results/h200/jit.json] [--n 4096 --k 4096]
        [--kernels family|test]
    python benchmarks/jit_bench.py --compile-only sm_90a --out compile.json   # no GPU needed

Kernels come from the registered cuda kernel families: the heuristic's first config for each M
bucket of a W4A16_G128 N×K layer, deduplicated (the kernels one layer needs). With no family that
supports that spec (or with --kernels test), it uses the JIT test kernel (packages/humming-cuda/tests)
and says so in the JSON.

Measures (targets from shared/KERNELS.md):
- cold_compile_s: NVRTC time per kernel, one at a time, no cache (after one warm-up compile that
  loads NVRTC itself), the median of REPEATS compiles; mean over the layer's kernels (≤ 1 s), with
  the slowest kernel's as cold_compile_s_max.
- layer_cold_compile_s: render + build_many of all the layer's kernels into an empty cache, the
  median of REPEATS builds (≤ 2 s).
- disk_load_ms: memo cleared, all the layer's kernels from the disk cache to callable kernels:
  render, key (header tree hash), read + verify, cuModuleLoadData, bind (≤ 20 ms); best of 5,
  garbage collector paused while timing (benchmarks/profile_disk_load.py splits it by step).
- launch_overhead_us: eager wall time per call minus GPU time per call (CUDA-graph replay), M=1
  (≤ 15 µs), of the call a layer makes (`kernel.prepare(**packed)(x, out)`); host_call_us is the
  Python-side time of one such call with the GPU queue not full, host_call_full_check_us the same
  for `kernel(x=, out=, **packed)`, which checks every argument.
- compile_phases: where one cold compile's time goes (the slowest of the layer's kernels): NVRTC to
  PTX only (front end + NVVM) against the full compile (+ ptxas), and NVRTC's
  --fdevice-time-trace totals per phase.

`--compile-only ARCH` measures the compile side only (cold_compile_*, layer_cold_compile_*,
compile_phases) for ARCH's capability row (its default SM count routes the layer), on any machine:
NVRTC needs no GPU, and one NVRTC compile is single-threaded, so per-kernel figures from a CPU box
compare with the GPU host's where both run the same code (the layer's parallel build does not:
it depends on the cores).
"""

from __future__ import annotations

import argparse
import datetime
import gc
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

# Cold means cold: NVRTC 12.9+ also caches compiled programs through the driver (humming asks it
# not to with --no-cache; this covers an NVRTC that lacks that flag).
os.environ.setdefault("CUDA_CACHE_DISABLE", "1")

import torch

from humming_core import jit
from humming_core.device import GemmProblem
from humming_core.env import ENV
from humming_core.ops.layer import M_BUCKETS
from humming_core.spec import preset
from humming_cuda.bench.timing import captured
from humming_cuda.device import CudaDevice

ROOT = Path(__file__).resolve().parents[1]
SPEC = "W4A16_G128"
REPEATS = 3  # cold compiles per kernel and layer builds; the medians are reported
TARGETS = {
    "cold_compile_s": 1.0,
    "layer_cold_compile_s": 2.0,
    "disk_load_ms": 20.0,
    "launch_overhead_us": 15.0,
}


def layer_configs(device, spec, n, k):
    """First-choice configs over the M buckets, one per distinct kernel: what one layer needs.

    Configs that render the same code (e.g. differing only in a run-time split-K factor) share
    one compiled kernel, so only the first of them is kept.
    """
    configs, codes = [], set()
    for m in M_BUCKETS:
        config = device.candidates(spec, GemmProblem(n=n, k=k, m=m))[0]
        code = device.render(spec, config).code
        if code not in codes:
            configs.append(config)
            codes.add(code)
    return configs


def family_kernels(device, n, k):
    spec = preset(SPEC)
    support = device.check(spec, GemmProblem(n=n, k=k))
    if not support:
        return None, support.reason
    configs = layer_configs(device, spec, n, k)
    return (
        spec,
        configs,
    ), (
        f"{' + '.join(dict.fromkeys(c.family for c in configs))} families, {SPEC} {n}x{k}, "
        f"{len(configs)} distinct kernels"
    )


def test_kernel_sources(arch):
    sys.path.insert(0, str(ROOT / "packages" / "humming-cuda" / "tests"))
    from testkernels import hmma_source

    return [hmma_source(arch, True), hmma_source(arch, False)]


def timed(fn):
    start = time.perf_counter()
    result = fn()
    return result, time.perf_counter() - start


def measure_cold(device, sources, repeats=REPEATS):
    """Each kernel compiled `repeats` times one after another; its median (single compiles on the
    H200 host varied by ~30% between runs: benchmarks/notes/jit_session6_run.json)."""
    jit.clear_memo()
    device.compile(sources[0])  # warm-up: loads NVRTC and its builtins once
    rows = []
    for source in sources:
        samples = []
        for _ in range(repeats):
            artifact, seconds = timed(lambda s=source: device.compile(s))
            samples.append(round(seconds, 3))
        res = artifact.meta.get("resources", {})
        rows.append(
            {
                "kernel": source.name,
                "seconds": statistics.median(samples),
                "samples": samples,
                **res,
            }
        )
    return rows


def measure_layer(device, render_all, repeats=REPEATS):
    """Median of `repeats` parallel builds of the layer, each into an empty disk cache (a fresh
    HUMMING_CACHE_DIR); the last build's cache stays for the disk-load measurement."""
    samples = []
    for _ in range(repeats):
        os.environ["HUMMING_CACHE_DIR"] = tempfile.mkdtemp(prefix="humming-jit-bench-")
        jit.clear_memo()
        before = jit.compile_count()
        artifacts, seconds = timed(lambda: jit.build_many([(device, s) for s in render_all()]))
        compiles = jit.compile_count() - before
        samples.append(round(seconds, 3))
    return artifacts, statistics.median(samples), samples, compiles


def measure_disk_load(device, render_all, load_all, repeats=5):
    """Best of `repeats` loads; like timeit, with the cyclic garbage collector run before each
    and paused during it, so a collection of the previous repeat's kernels (whose modules are
    unloaded by finalizers) is not charged to the load."""
    best = float("inf")
    for _ in range(repeats):
        jit.clear_memo()
        before = jit.compile_count()
        gc.collect()
        gc.disable()
        try:
            kernels, seconds = timed(
                lambda: load_all([jit.get_or_build(device, s) for s in render_all()])
            )
        finally:
            gc.enable()
        del kernels
        assert jit.compile_count() == before, "disk-load measurement compiled something"
        best = min(best, seconds)
    return best


def gpu_time_per_call(call, calls=100, replays=5):
    graph = captured(lambda i: call(), calls)
    best = float("inf")
    for _ in range(replays):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        graph.replay()
        end.record()
        torch.cuda.synchronize()
        best = min(best, start.elapsed_time(end) * 1e3 / calls)
    return best


def _calls_then_sync(call, calls):
    for _ in range(calls):
        call()
    torch.cuda.synchronize()


def eager_time_per_call(call, calls=2000):
    _calls_then_sync(call, 20)
    _, wall = timed(lambda: _calls_then_sync(call, calls))
    host_calls = 200  # few enough that the launch queue never fills: pure host time
    start = time.perf_counter()
    for _ in range(host_calls):
        call()
    host = time.perf_counter() - start
    torch.cuda.synchronize()
    return wall * 1e6 / calls, host * 1e6 / host_calls


def family_call(device, spec, config, n, k):
    from humming_core.packing.canonical import CanonicalWeight

    bits = spec.weight.dtype.bits
    gen = torch.Generator().manual_seed(0)
    qweight = torch.randint(
        -(2**31), 2**31 - 1, (n, k * bits // 32), generator=gen, dtype=torch.int64
    )
    scales = (torch.rand(n, k // spec.weight.scale.group_size, generator=gen) * 0.01 + 0.001).half()
    cw = CanonicalWeight(spec=spec, n=n, k=k, qweight=qweight.to(torch.int32), scales=scales)
    packed = device.weight_layout(spec, config).pack(cw, "cuda")
    kernel = device.load(jit.get_or_build(device, device.render(spec, config)))
    x = torch.randn(1, k, dtype=torch.float16, device="cuda")
    out = torch.empty(1, n, dtype=torch.float16, device="cuda")
    call = kernel.prepare(**packed)  # what a layer calls: weights bound, argument template
    return (lambda: call(x, out)), (lambda: kernel(x=x, out=out, **packed))


def test_kernel_call(device, source):
    from testkernels import HMMA_SIGNATURE

    from humming_cuda.launch import BoundKernel, LaunchShape
    from humming_cuda.loader import load

    function = load(jit.get_or_build(device, source))
    kernel = BoundKernel(
        "hmma",
        function,
        HMMA_SIGNATURE,
        lambda d: LaunchShape((d["N"] // 8, d["M"] // 16, 1), (32, 1, 1)),
    )
    a = torch.randn(16, 64, dtype=torch.float16, device="cuda")
    b = torch.randn(64, 64, dtype=torch.float16, device="cuda")
    bias = torch.randn(64, dtype=torch.float16, device="cuda")
    out = torch.empty(16, 64, dtype=torch.float16, device="cuda")
    call = lambda: kernel(a=a, b=b, bias=bias, out=out, scale=1.0)  # noqa: E731
    return call, call


_PHASES = ("CUDA C++ Front-End", "NVVM Optimizer", "NVVM CodeGen", "Total PTXAS Time")


def _nvrtc_seconds(source, options):
    from cuda.bindings import nvrtc

    from humming_cuda.compiler import _compile_program

    start = time.perf_counter()
    prog, result, log, _ = _compile_program(source, options)
    seconds = time.perf_counter() - start
    nvrtc.nvrtcDestroyProgram(prog)
    if result != nvrtc.nvrtcResult.NVRTC_SUCCESS:
        raise RuntimeError(f"{source.name}: {' '.join(options[-2:])}: {log[-2000:]}")
    return seconds


def compile_phases(sources):
    """Full compile vs PTX only, and the trace's per-phase milliseconds, for the slowest kernel."""
    import dataclasses

    from humming_cuda.compiler import compile_options

    timed_sources = [(_nvrtc_seconds(s, compile_options(s)), s) for s in sources]
    full_s, source = max(timed_sources, key=lambda pair: pair[0])
    ptx_source = dataclasses.replace(source, arch=source.arch.replace("sm_", "compute_"))
    options = [o for o in compile_options(ptx_source) if not o.startswith("--ptxas")]
    result = {"kernel": source.name, "full_s": round(full_s, 3)}
    result["ptx_only_s"] = round(_nvrtc_seconds(ptx_source, options), 3)
    with tempfile.TemporaryDirectory() as folder:
        trace = Path(folder) / "trace"
        try:
            _nvrtc_seconds(source, [*compile_options(source), f"--fdevice-time-trace={trace}"])
        except RuntimeError as exc:  # an NVRTC without the flag: say so, keep the rest
            return {**result, "trace_ms": f"unavailable: {str(exc)[-200:]}"}
        files = sorted(Path(folder).glob("trace*"))
        events = json.loads(files[0].read_text()) if files else {}
    events = events.get("traceEvents", events) if isinstance(events, dict) else events
    totals = dict.fromkeys(_PHASES, 0.0)
    for event in events:
        if event.get("ph") == "X" and event.get("name") in totals:
            totals[event["name"]] += event.get("dur", 0) / 1e3
    return {**result, "trace_ms": {k: round(v, 1) for k, v in totals.items()}}


def kernel_set(device, caps, n, k, use_family=True):
    """(render_all, load_all, make_call, note) for the family's layer, or the test-kernel fallback."""
    found, description = family_kernels(device, n, k) if use_family else (None, "--kernels test")
    if found is not None:
        spec, configs = found
        return (
            lambda: [device.render(spec, c) for c in configs],
            lambda artifacts: [device.load(a) for a in artifacts],
            lambda: family_call(device, spec, configs[0], n, k),
            f"kernels: {description}",
        )
    from humming_cuda.loader import load

    sources = test_kernel_sources(caps.arch)
    return (
        lambda: list(sources),
        lambda artifacts: [load(a) for a in artifacts],
        lambda: test_kernel_call(device, sources[0]),
        f"fallback to the JIT test kernel: no family supports {SPEC} ({description})",
    )


def run(args) -> dict:
    import cuda.bindings

    device = CudaDevice.for_arch(args.compile_only) if args.compile_only else CudaDevice()
    caps = device.caps()
    render_all, load_all, make_call, note = kernel_set(
        device, caps, args.n, args.k, args.kernels == "family"
    )
    result = compile_side(device, render_all)
    if not args.compile_only:
        result |= launch_side(device, render_all, load_all, make_call)
    return result | {
        "compile_phases": compile_phases(render_all()),
        "kernels": note,
        "targets": TARGETS,
        "device": f"{caps.name} ({caps.arch}, {caps.sm_count} SMs)"
        + (", compile only: no GPU, the capability row's routing" if args.compile_only else ""),
        "torch": torch.__version__,
        "cuda_bindings": cuda.bindings.__version__,
        "fingerprint": device.fingerprint(),
        "cpus": os.cpu_count(),
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "command": " ".join(["python", *sys.argv]),
    }


def compile_side(device, render_all) -> dict:
    """Cold compiles one at a time, then the layer's parallel build."""
    cold = measure_cold(device, render_all())
    layer_artifacts, layer_s, layer_samples, layer_compiles = measure_layer(device, render_all)
    return {
        "cold_compile_s": round(statistics.mean(r["seconds"] for r in cold), 3),
        "cold_compile_s_max": max(r["seconds"] for r in cold),
        "cold_compile_per_kernel": cold,
        "layer_cold_compile_s": round(layer_s, 3),
        "layer_cold_compile_samples_s": layer_samples,
        "layer_kernels": len(cold),
        # each kernel's NVRTC time inside the parallel build: near cold_compile_per_kernel when
        # compiles run side by side, inflated when they serialise or share a core
        "layer_kernel_compile_s": sorted(
            {a.name: a.meta.get("compile_s") for a in layer_artifacts}.values()
        ),
        "layer_compiles": layer_compiles,
        "compile_workers": ENV.HUMMING_COMPILE_WORKERS,
    }


def launch_side(device, render_all, load_all, make_call) -> dict:
    """The GPU host's part: the layer from the disk cache (measure_layer's), launch overhead."""
    disk_s = measure_disk_load(device, render_all, load_all)
    call, full_check_call = make_call()
    gpu_us = gpu_time_per_call(call)
    wall_us, host_us = eager_time_per_call(call)
    _, full_check_host_us = eager_time_per_call(full_check_call)
    return {
        "disk_load_ms": round(disk_s * 1e3, 2),
        "launch_overhead_us": round(max(0.0, wall_us - gpu_us), 2),
        "launch_wall_us": round(wall_us, 2),
        "launch_gpu_us": round(gpu_us, 2),
        "host_call_us": round(host_us, 2),
        "host_call_full_check_us": round(full_check_host_us, 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--out", type=Path, help="the JSON to write (default: benchmarks/results/h200/jit.json)"
    )
    parser.add_argument("--n", type=int, default=4096)
    parser.add_argument("--k", type=int, default=4096)
    parser.add_argument(
        "--kernels",
        choices=("family", "test"),
        default="family",
        help="what to build: the layer's family kernels or the JIT test kernel",
    )
    parser.add_argument(
        "--compile-only",
        metavar="ARCH",
        help="compile side only, for this arch's capability row (e.g. sm_90a); no GPU needed",
    )
    args = parser.parse_args()
    if args.out is None:
        if args.compile_only:
            raise SystemExit("--compile-only needs --out (the default is the GPU host's jit.json)")
        args.out = ROOT / "benchmarks" / "results" / "h200" / "jit.json"
    if not args.compile_only and not torch.cuda.is_available():
        raise SystemExit(
            "jit_bench needs an NVIDIA GPU (torch.cuda.is_available() is False); "
            "--compile-only ARCH measures the compile side without one"
        )
    result = run(args)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps({k: v for k, v in result.items() if k != "cold_compile_per_kernel"}, indent=1))


if __name__ == "__main__":
    main()
