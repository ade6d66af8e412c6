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
  through ctypes (WnA16 specs: one launch on the prepared call's grid);
- for the 8-bit-activation specs (W8A8_*, W4A8_*, FP8_BLOCK128, ...: prepared calls that launch
  a quantizer, then the GEMM), the pieces of one prepared call (`act8_pieces`): each launch
  alone as the call issues it (Launcher.launch, same parameter block and grid) and the driver
  call under it, the q + scales allocation (one torch.empty; and the two the call made before),
  q's tensor-map lookup (wgmma kernels);
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
from humming_cuda.kernels.act_quant import THREADS
from humming_cuda.kernels.w8a8.call import W8a8Call
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
    fn, address = call.kernel.function, call.template.block().address
    grid, block, smem = call.grid(-(-x.shape[0] // call.block_m)), call.block, call.smem
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


def driver_call(launcher, grid, block, smem, address):
    """The driver call under `launcher.launch(grid, block, smem, address)` alone: cuLaunchKernel
    with the cached stream handle, or cuLaunchKernelEx with the launcher's own config."""
    fn = launcher.function
    raw = current_stream(fn.device_index)
    if not launcher._attrs:
        stream = stream_handle(raw)
        return lambda: driver.cuLaunchKernel(fn.handle, *grid, *block, smem, stream, address, 0)
    config = launcher._config(grid, block, smem, raw)
    return lambda: driver.cuLaunchKernelEx(config, fn.handle, address, 0)


def act8_pieces(call, x, out):
    """Rows timing the pieces of one prepared quantizer + GEMM call (kernels/w8a8/call.py) alone.

    One call first: it builds the templates, and leaves this thread's two parameter blocks
    pointing at its q and scales buffer, which the call holds until its next call (none is made
    while these rows run), so the launches below read and write live memory."""
    call(x, out)
    m, k = x.shape
    quant, fmt = call.quant, call.quant.fmt
    q_address, gemm_address = quant.params.block().address, call.template.block().address
    q_grid, q_block = (fmt.grid(m, k), 1, 1), (THREADS, 1, 1)
    grid = call.grid(-(-m // call.block_m))
    size = fmt.buffer_layout(m, k)[0]
    rows = {
        "quantizer launch (Launcher.launch)": lambda: quant.launcher.launch(
            q_grid, q_block, 0, q_address
        ),
        "quantizer: its driver call alone": driver_call(
            quant.launcher, q_grid, q_block, 0, q_address
        ),
        "GEMM launch (Launcher.launch)": lambda: call.launcher.launch(
            grid, call.block, call.smem, gemm_address
        ),
        "GEMM: its driver call alone": driver_call(
            call.launcher, grid, call.block, call.smem, gemm_address
        ),
        f"q + scales: one torch.empty({size}) bytes": lambda: torch.empty(
            size, dtype=torch.uint8, device=quant.device
        ),
        "q, scales: two torch.empty (before)": lambda: (
            torch.empty((m, k), dtype=fmt.q_dtype, device=x.device),
            torch.empty((fmt.scale_rows(k), m), dtype=torch.float32, device=x.device),
        ),
    }
    maps = getattr(call.kernel, "maps", None)
    if maps is not None:  # wgmma kernels: q reaches the GEMM as a tensor map (a cache hit here)
        box_rows = call.kernel.a_box_rows(m)
        address = call._held.buffer.data_ptr()  # q starts the buffer
        rows["q's tensor map (cache lookup)"] = lambda: maps.of(
            address, m, k, k, "activations a", box_rows=box_rows
        )
    return rows


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
    width = 44
    lines = [f"{name + ':':{width}} {per_call_us(fn):7.2f} us" for name, fn in rows.items()]
    if isinstance(call, W8a8Call):  # timed after the rows above, which call `call` again
        lines.append("pieces of one prepared call:")
        lines += [
            f"{name + ':':{width}} {per_call_us(fn):7.2f} us"
            for name, fn in act8_pieces(call, x, out).items()
        ]
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
