"""The Python part of one prepared 8-bit-activation GEMM call, on any machine (no GPU needed).

    python benchmarks/act8_call_stubbed.py [--calls 20000] [--base DIR]

A W8A8 / W4A8 / FP8 block-128 layer's prepared call (quantizer launch, then GEMM launch) runs with
humming's real Launcher, parameter blocks and tensor-map cache, but the driver calls stubbed:
cuLaunchKernel(Ex) return success at once without entering cuda.bindings (whose own cost was
0.3-0.45 us per launch into a do-nothing libcuda on the CPU that measured it), and a tensor map is
a zeroed block (the cache's hit path is what a steady state runs). x and out are CPU tensors that
report cuda:0 (tests/fake_launch.py). So the figure is humming's own host code per call plus the
q / scales allocation on the CPU allocator, which is cheaper than torch's CUDA caching allocator
(4.7 us per torch.empty on the H200 host): benchmarks/host_overhead.py measures the real thing on
a GPU.

`--base DIR`: DIR holds another revision's humming_cuda package copied as `humming_cuda_base`
(`cp -r <tree>/packages/humming-cuda/src/humming_cuda DIR/humming_cuda_base`); both are timed in
this process, interleaved, for a before/after on the same idle CPU.
"""

from __future__ import annotations

import argparse
import importlib
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "packages/humming-cuda/tests"))
from fake_launch import FakeFunction, cuda

from humming_core.device import GemmProblem
from humming_core.numerics import quantize_weight
from humming_core.spec import preset

# (spec, N x K, M, family module): the points of benchmarks/notes/session28.md
POINTS = (
    ("W8A8_FP8", 6144, 4096, 256, "w8a8_wgmma"),
    ("W4A8_FP8", 4096, 14336, 256, "w4a8_wgmma"),
    ("FP8_BLOCK128", 6144, 4096, 256, "w8a8_wgmma"),
    ("W8A8_FP8", 6144, 4096, 16, "w8a8"),
)


def stub_driver(pkg: str) -> None:
    """The package's launches and tensor-map encodes without a driver."""
    launch = importlib.import_module(f"{pkg}.launch")
    tma = importlib.import_module(f"{pkg}.kernels.w8a8_wgmma.tma")
    act_quant = importlib.import_module(f"{pkg}.kernels.act_quant")
    split_k = importlib.import_module(f"{pkg}.kernels.split_k")
    real, ok = launch.driver, (launch._SUCCESS,)

    class Driver:  # the binding's types (launch configs, streams), launches that do nothing
        def __getattr__(self, name):
            return getattr(real, name)

        def cuLaunchKernel(self, *args):
            return ok

        def cuLaunchKernelEx(self, *args):
            return ok

    launch.driver = Driver()
    launch.current_stream = lambda index: 0x1234
    tma.encode = lambda address, params: tma.TensorMapParam()

    def from_module(fmt, loaded, base, pdl):
        return act_quant.ActQuantizer(fmt, {"fp16": function(), "bf16": function()}, pdl)

    act_quant.ActQuantizer.from_module = staticmethod(from_module)
    held: dict = {}  # split-K's workspace and counters, as SPLIT_K_BUFFERS keeps them per device

    def workspace(device, floats, tiles):
        ws, ct = held.get("ws"), held.get("ct")
        if ws is None or ws.numel() < floats or ct.numel() < tiles:
            held["ws"] = cuda(torch.zeros(floats))
            held["ct"] = cuda(torch.zeros(tiles, dtype=torch.int32))
        return held["ws"], held["ct"]

    split_k.SPLIT_K_BUFFERS.get = workspace


def function() -> FakeFunction:
    fn = FakeFunction()
    fn.handle = 0
    return fn


def prepared(pkg: str, spec_name: str, n: int, k: int, m: int, family: str, weights: dict):
    """(call, x, out): the prepared call of the point, its template built by one full check."""
    from humming_cuda.caps import caps_for_arch

    fam = importlib.import_module(f"{pkg}.kernels.{family}").FAMILY
    spec = preset(spec_name)
    sm90 = caps_for_arch("sm_90a")
    config = fam.candidates(spec, GemmProblem(n=n, k=k, m=m), sm90)[0]
    key = (spec_name, n, k, family)
    if key not in weights:
        cw = quantize_weight(torch.randn(n, k) * 0.02, spec)
        layout = fam.weight_layout(spec, config, sm90)
        weights[key] = {name: cuda(t) for name, t in layout.pack(cw, "cpu").items()}
    kernel = fam.kernel_type(function(), spec, config)
    call = kernel.prepare(**weights[key])
    x = cuda(torch.randn(m, k).to(torch.bfloat16))
    out = cuda(torch.empty(m, n, dtype=torch.bfloat16))
    empty = torch.empty
    # the full check's q and scales are "on cuda" (views of one buffer: kept there through them)
    torch.empty = lambda *a, **kw: cuda(empty(*a, **kw), kept=True)
    try:
        call(x, out)
    finally:
        torch.empty = empty
    assert call.template is not None, "the first call did not build the template"
    return call, x, out


def per_call_us(call, x, out, calls: int) -> float:
    for _ in range(200):
        call(x, out)
    start = time.perf_counter()
    for _ in range(calls):
        call(x, out)
    return (time.perf_counter() - start) * 1e6 / calls


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=20000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--base", default=None, help="folder holding humming_cuda_base")
    args = parser.parse_args()
    packages = ["humming_cuda"]
    if args.base:
        sys.path.insert(0, args.base)
        packages.insert(0, "humming_cuda_base")
    for pkg in packages:
        stub_driver(pkg)
    weights: dict = {}
    for spec_name, n, k, m, family in POINTS:
        calls = {pkg: prepared(pkg, spec_name, n, k, m, family, weights) for pkg in packages}
        best = dict.fromkeys(packages, float("inf"))
        for _ in range(args.rounds):  # interleaved, best of rounds: the least disturbed run
            for pkg, (call, x, out) in calls.items():
                best[pkg] = min(best[pkg], per_call_us(call, x, out, args.calls))
        figures = ", ".join(f"{pkg} {us:6.2f} us" for pkg, us in best.items())
        print(f"{spec_name:12} {n}x{k} M={m:<4} {family:10}: {figures}")


if __name__ == "__main__":
    main()
