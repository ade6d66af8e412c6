"""Where the eager host time of one GEMM call goes, on the GPU host (issue 4: target <= 15 us).

    python3 benchmarks/host_overhead.py [--spec W8A8_FP8 --layer 6144x4096 --m 256] [--out notes.txt]

Per call (default: M=1 on a W4A16_G128 4096x4096 layer; `--spec`, `--layer`, `--m` pick another,
such as the act8 kernels' prepared calls, which launch a quantizer and the GEMM), with the GPU
queue never full (200 calls, then a sync), from the user API down to the driver call:
- QuantLinear.forward (eager: the layer directly) and the same through the `humming::gemm` op,
- PreparedGemm.run with and without `out`, the prepared call `call(x, out)` (weights bound,
  argument template patched), and the family kernel `kernel(x=, out=, **packed)` (full check),
- the pieces: torch.empty, torch's current stream, and one launch of the same kernel with the same
  parameter block by cuda.bindings cuLaunchKernel (integers and a cached CUstream: humming's
  path; or the raw stream int), cuLaunchKernelEx (a CUlaunchConfig), and libcuda's cuLaunchKernel
  through ctypes (WnA16 specs: one launch on the prepared call's one-CTA-per-tile grid);
then a cProfile of PreparedGemm.run(x, out=out).
"""

from __future__ import annotations

import argparse
import cProfile
import ctypes
import io
import pstats
import time

import torch
from cuda.bindings import driver

from humming_core.nn import QuantLinear
from humming_core.numerics import quantize_weight
from humming_core.ops.gemm import _gemm_op
from humming_core.spec import preset
from humming_cuda.launch import current_stream, stream_handle


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


def raw_launches(call, x, out):
    """The same launch (kernel, grid, parameter block) through three driver bindings."""
    call(x, out)  # builds the template and this thread's parameter block
    fn, address = call.kernel.function, call._params().address
    grid, block, smem = (call.grid_n, 1, call.split), call.block, call.smem
    index = fn.device_index

    def bindings_ints():
        stream = stream_handle(current_stream(index))
        driver.cuLaunchKernel(fn.handle, *grid, *block, smem, stream, address, 0)

    def bindings_raw_stream():  # the binding builds a CUstream from the int on every call
        driver.cuLaunchKernel(fn.handle, *grid, *block, smem, current_stream(index), address, 0)

    config = driver.CUlaunchConfig()
    config.gridDimX, config.gridDimY, config.gridDimZ = grid
    config.blockDimX, config.blockDimY, config.blockDimZ = block
    config.sharedMemBytes = smem

    def bindings_ex():
        config.hStream = current_stream(index)
        driver.cuLaunchKernelEx(config, fn.handle, address, 0)

    libcuda = ctypes.CDLL("libcuda.so.1")
    launch = libcuda.cuLaunchKernel
    launch.argtypes = [ctypes.c_void_p, *[ctypes.c_uint] * 7, ctypes.c_void_p] + [
        ctypes.c_void_p
    ] * 2
    launch.restype = ctypes.c_int
    handle = int(fn.handle)

    def ctypes_ints():
        err = launch(handle, *grid, *block, smem, current_stream(index), address, None)
        assert err == 0, err

    return {
        "cuLaunchKernel (cuda.bindings, ints)": bindings_ints,
        "cuLaunchKernel (cuda.bindings, int stream)": bindings_raw_stream,
        "cuLaunchKernelEx (cuda.bindings, config)": bindings_ex,
        "cuLaunchKernel (ctypes, libcuda)": ctypes_ints,
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--spec", default="W4A16_G128", help="a preset name")
    parser.add_argument("--layer", default="4096x4096", help="NxK")
    parser.add_argument("--m", type=int, default=1, help="rows of x")
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    spec = preset(args.spec)
    n, k = (int(v) for v in args.layer.split("x"))
    m = args.m
    cw = quantize_weight(torch.randn(n, k) * 0.02, spec)
    linear = QuantLinear(cw, "cuda")
    layer = linear._layer
    dtype = torch.bfloat16 if spec.output_dtype == "bf16" else torch.float16
    x = torch.randn(m, k, device="cuda", dtype=dtype)
    out = torch.empty(m, n, device="cuda", dtype=dtype)
    # the kernel of M's bucket (the smallest bucket that holds M, else the largest)
    bucket = min((b for b in layer.kernels if b >= m), default=max(layer.kernels))
    kernel, packed = layer.kernels[bucket], layer.packed
    call = kernel.prepare(**packed)
    print(f"{args.spec} {n}x{k} M={m}: {type(kernel).__name__} {getattr(kernel, 'config', '')}")
    rows = {
        "QuantLinear.forward (eager, direct)": lambda: linear(x),
        "QuantLinear via the humming::gemm op": lambda: _gemm_op(x, layer.id),
        "PreparedGemm.run": lambda: layer.run(x),
        "PreparedGemm.run(out=...)": lambda: layer.run(x, out=out),
        "prepared call(x, out)": lambda: call(x, out),
        "family kernel(**packed) (full check)": lambda: kernel(x=x, out=out, **packed),
        f"torch.empty({m}, {n}) on cuda": lambda: torch.empty(m, n, device="cuda"),
        "torch current stream": lambda: current_stream(0),
        # the act8 calls launch a quantizer and a (possibly persistent) GEMM grid: no one launch
        **(raw_launches(call, x, out) if not spec.act.is_quantized else {}),
    }
    width = max(map(len, rows)) + 1
    lines = [f"{name + ':':{width}} {per_call_us(fn):7.2f} us" for name, fn in rows.items()]
    profile = cProfile.Profile()
    profile.enable()
    for _ in range(2000):
        layer.run(x, out=out)
    profile.disable()
    torch.cuda.synchronize()
    stream = io.StringIO()
    pstats.Stats(profile, stream=stream).sort_stats("tottime").print_stats(15)
    text = (
        "\n".join(lines)
        + "\n\ncProfile, 2000 x PreparedGemm.run(x, out=out):\n"
        + stream.getvalue()
    )
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
