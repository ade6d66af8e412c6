"""Where the eager host time of one GEMM call goes, on the GPU host (issue 4/6: target <= 15 us).

    python3 benchmarks/host_overhead.py [--out notes.txt]

Times, per call at M=1 on a W4A16_G128 4096x4096 layer (GPU queue never full: 200 calls then sync):
QuantLinear.forward (torch custom op), PreparedGemm.run, the family kernel called directly, and the
kernel's pieces (argument check, parameter packing, launch); then a cProfile of PreparedGemm.run.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import time

import torch

from humming_core.nn import QuantLinear
from humming_core.numerics import quantize_weight
from humming_core.spec import W4A16_G128


def per_call_us(fn, calls: int = 200) -> float:
    for _ in range(20):
        fn()
    torch.cuda.synchronize()
    best = float("inf")
    for _ in range(5):
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        best = min(best, (time.perf_counter() - start) * 1e6 / calls)
        torch.cuda.synchronize()
    return best


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    cw = quantize_weight(torch.randn(4096, 4096) * 0.02, W4A16_G128)
    linear = QuantLinear(cw, "cuda")
    layer = linear._layer
    x = torch.randn(1, 4096, device="cuda", dtype=torch.float16)
    out = torch.empty(1, 4096, device="cuda", dtype=torch.float16)
    kernel = layer.kernels[1]
    packed = layer.packed
    lines = [
        f"QuantLinear.forward (custom op): {per_call_us(lambda: linear(x)):7.2f} us",
        f"PreparedGemm.run:                {per_call_us(lambda: layer.run(x)):7.2f} us",
        f"PreparedGemm.run(out=...):       {per_call_us(lambda: layer.run(x, out=out)):7.2f} us",
        f"family kernel(**packed):         {per_call_us(lambda: kernel(x=x, out=out, **packed)):7.2f} us",
        f"torch.empty(1, 4096) on cuda:    {per_call_us(lambda: torch.empty(1, 4096, device='cuda')):7.2f} us",
    ]
    profile = cProfile.Profile()
    profile.enable()
    for _ in range(2000):
        layer.run(x, out=out)
    profile.disable()
    torch.cuda.synchronize()
    stream = io.StringIO()
    pstats.Stats(profile, stream=stream).sort_stats("tottime").print_stats(25)
    text = "\n".join(lines) + "\n\n" + stream.getvalue()
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
