"""What NVRTC's --Ofast-compile levels trade: cold compile seconds against kernel GPU time (issue 4).

    python3 benchmarks/fast_compile_compare.py W4A16_G128:4096x4096:64 ... [--levels min,mid,max]
        [--out fast_compile.json]

For each point SPEC:NxK:M, the device's chosen kernel is compiled without the flag and at each
level (cold: NVRTC's and the driver's caches off, humming's cache bypassed; median of 3 compiles
in this process, one at a time), and each build is timed by CUDA-graph replay of 20 calls on the
same packed weights, x and output. Ratios are against the default build in the same run.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import statistics
import time

os.environ.setdefault("CUDA_CACHE_DISABLE", "1")

from points import Point, save

from humming_core.device import GemmProblem
from humming_core.spec import preset
from humming_cuda.bench.timing import graph_time_us
from humming_cuda.device import CudaDevice


def _compile_seconds(device: CudaDevice, source) -> tuple[float, object]:
    times, artifact = [], None
    for _ in range(3):
        start = time.perf_counter()
        artifact = device.compile(source)
        times.append(time.perf_counter() - start)
    return statistics.median(times), artifact


def compare(device: CudaDevice, text: str, levels: list[str]) -> dict:
    point = Point.parse(text)
    spec = point.spec
    config = device.candidates(spec, point.problem)[0]
    cw, x, out = point.tensors()
    packed = device.weight_layout(spec, config).pack(cw, "cuda")
    source = device.render(spec, config)
    row = {"point": text, "family": config.family, "builds": []}
    for level in ["default", *levels]:
        options = () if level == "default" else (f"--Ofast-compile={level}",)
        variant = dataclasses.replace(source, options=(*source.options, *options))
        seconds, artifact = _compile_seconds(device, variant)
        kernel = device.load(artifact)
        us = graph_time_us(lambda i, kernel=kernel: kernel(x=x, out=out, **packed), 20)
        res = artifact.meta.get("resources", {})
        row["builds"].append(
            {
                "level": level,
                "compile_s": round(seconds, 3),
                "us": us,
                "registers": res.get("registers"),
            }
        )
        base = row["builds"][0]
        print(
            f"{text:30s} {config.family:14s} {level:8s} compile {seconds:6.3f} s "
            f"(x{seconds / base['compile_s']:.2f})  {us:9.1f} us (x{base['us'] / us:.2f} speed)  "
            f"regs {res.get('registers')}",
            flush=True,
        )
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("points", nargs="+", help="SPEC:NxK:M")
    parser.add_argument("--levels", default="min,mid,max")
    parser.add_argument("--out")
    args = parser.parse_args()
    device = CudaDevice()
    warm = preset("W4A16_G128")  # one compile first: loading NVRTC itself is not compile time
    device.compile(device.render(warm, device.candidates(warm, GemmProblem(n=512, k=512, m=1))[0]))
    save(args.out, [compare(device, p, args.levels.split(",")) for p in args.points])


if __name__ == "__main__":
    main()
