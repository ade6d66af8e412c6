"""SM clock and board power while one GEMM runs back to back (issue 7: is part of a kernel's
large-M gap to cuBLASLt the clock it runs at? An fp8 kernel that issues more instructions per MMA
draws more power per FLOP, and a card at its power limit lowers the clock).

    python3 benchmarks/clock_under_load.py W4A8_FP8:8192x28672:4096 W8A8_FP8:8192x28672:4096 \\
        [--seconds 4] [--out $OUT/clocks.json]

For each point, our layer (PreparedGemm) and cuBLASLt fp8 (`torch._scaled_mm`, row-wise scales,
the bench's baseline) at the point's N, K, M: replays a CUDA graph of ten calls for `--seconds`
while nvidia-smi samples the SM clock and the power every 100 ms, and prints, over the samples
after the first second (the clocks settle), the mean SM clock (MHz) and power (W), with the time
per call over the same span and the TFLOPS it gives.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import time

import torch
from points import Point

from humming_core.ops import PreparedGemm
from humming_cuda.bench.baselines import cublaslt_fp8
from humming_cuda.bench.timing import captured

CALLS = 10  # per graph replay


def under_load(fn, seconds: float) -> dict[str, float]:
    """Replay fn's graph for `seconds` under nvidia-smi sampling: mean clock, power, us per call."""
    graph = captured(lambda i: fn(), CALLS)
    smi = subprocess.Popen(
        ["nvidia-smi", "--query-gpu=clocks.sm,power.draw", "--format=csv,noheader,nounits",
         "-lms", "100"],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    start = time.perf_counter()
    settled = None
    replays = 0
    while (now := time.perf_counter()) - start < seconds:
        graph.replay()
        if settled is None and now - start >= 1.0:
            torch.cuda.synchronize()
            settled, replays = time.perf_counter(), 0
        replays += 1
        if replays % 20 == 0:
            torch.cuda.synchronize()  # keep the queue short so the time span is the GPU's
    torch.cuda.synchronize()
    span = time.perf_counter() - settled
    smi.terminate()
    samples = [line.split(",") for line in smi.communicate()[0].splitlines() if "," in line]
    late = samples[10:] or samples  # after the first second
    clock = sum(float(c) for c, _ in late) / len(late)
    power = sum(float(p) for _, p in late) / len(late)
    return {"clock_mhz": clock, "power_w": power, "us": span / (replays * CALLS) * 1e6}


def measure(text: str, seconds: float) -> list[dict]:
    """Our layer and cuBLASLt fp8 at one point, each under_load."""
    point = Point.parse(text)
    cw, x, out = point.tensors()
    layer = PreparedGemm(cw, "cuda")
    base = cublaslt_fp8(x.to(torch.bfloat16), point.n, copies=1)
    flops = 2 * point.m * point.n * point.k
    rows = []
    for name, fn in (("humming", lambda: layer.run(x, out=out)), ("cublaslt_fp8", lambda: base(0))):
        r = under_load(fn, seconds)
        r.update(point=text, impl=name, tflops=flops / r["us"] / 1e6)
        rows.append(r)
        print(
            f"{text} {name:13s} {r['us']:9.1f} us  {r['tflops']:6.0f} TFLOPS  "
            f"SM {r['clock_mhz']:6.0f} MHz  {r['power_w']:5.0f} W"
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("points", nargs="+", help="SPEC:NxK:M with 8-bit activations")
    parser.add_argument("--seconds", type=float, default=4.0)
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    rows = [row for text in args.points for row in measure(text, args.seconds)]
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"device": torch.cuda.get_device_name(), "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
