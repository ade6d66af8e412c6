"""Where the disk-cache load of one layer's kernels goes (issue 4's disk_load_ms), on a GPU.

    python benchmarks/profile_disk_load.py [--n 4096 --k 4096]

Builds the layer jit_bench.py measures into a fresh cache, then loads it from disk again several
times with the in-process memo cleared, timing each step of CudaDevice.load separately (render,
cache lookup and read, loader.load: cuModuleLoadData + cuFuncLoad + attributes, the binding's
validation, family bind) and printing the cProfile of one whole load. Prints a JSON summary (best over the repeats, milliseconds).
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import os
import pstats
import tempfile
import time

os.environ.setdefault("CUDA_CACHE_DISABLE", "1")
os.environ["HUMMING_CACHE_DIR"] = tempfile.mkdtemp(prefix="humming-disk-load-")

from jit_bench import layer_configs

from humming_core import jit
from humming_core.spec import QuantSpec, preset
from humming_cuda import loader
from humming_cuda.device import CudaDevice
from humming_cuda.kernels import family_named


def steps(device, spec, configs) -> dict[str, float]:
    """One load of the layer, each step of CudaDevice.load timed on its own (ms, summed over the
    layer's kernels)."""
    times = dict.fromkeys(("render", "lookup", "module_load", "validate", "bind"), 0.0)
    jit.clear_memo()
    caps = device.caps()
    for config in configs:
        t0 = time.perf_counter()
        source = device.render(spec, config)
        t1 = time.perf_counter()
        artifact = jit.get_or_build(device, source)
        t2 = time.perf_counter()
        function = loader.load(artifact)
        t3 = time.perf_counter()
        binding = artifact.meta["source"]["binding"]
        family = family_named(binding["family"])
        bound_spec, bound_config = (
            QuantSpec.model_validate(binding["spec"]),
            family.config_type.model_validate(binding["config"]),
        )
        t4 = time.perf_counter()
        family.bind(function, bound_spec, bound_config, caps)
        t5 = time.perf_counter()
        for key, dt in zip(times, (t1 - t0, t2 - t1, t3 - t2, t4 - t3, t5 - t4), strict=True):
            times[key] += dt * 1e3
    return times


def whole(device, spec, configs) -> float:
    jit.clear_memo()
    t0 = time.perf_counter()
    [device.load(jit.get_or_build(device, device.render(spec, c))) for c in configs]
    return (time.perf_counter() - t0) * 1e3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=4096)
    parser.add_argument("--k", type=int, default=4096)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    device = CudaDevice()
    spec = preset("W4A16_G128")
    configs = layer_configs(device, spec, args.n, args.k)
    jit.build_many([(device, device.render(spec, c)) for c in configs])
    runs = [steps(device, spec, configs) for _ in range(args.repeats)]
    best = {key: round(min(r[key] for r in runs), 3) for key in runs[0]}
    wholes = [whole(device, spec, configs) for _ in range(args.repeats)]
    profiler = cProfile.Profile()
    profiler.enable()
    whole(device, spec, configs)
    profiler.disable()
    text = io.StringIO()
    pstats.Stats(profiler, stream=text).sort_stats("cumtime").print_stats(30)
    print(text.getvalue())
    summary = {
        "kernels": len(configs),
        "binary_bytes": [
            len(jit.get_or_build(device, device.render(spec, c)).binary) for c in configs
        ],
        "steps_ms_best": best,
        "whole_ms": [round(w, 2) for w in wholes],
    }
    print(json.dumps(summary, indent=1))


if __name__ == "__main__":
    main()
