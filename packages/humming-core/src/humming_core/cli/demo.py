"""`humming demo`: quantize a random layer, run it on the best device, report error and time."""

from __future__ import annotations

import time

import torch

from ..device import get_device
from .common import console, load_spec


def register(sub) -> None:
    p = sub.add_parser("demo", help="quantize a random layer and run the quantized GEMM")
    p.add_argument(
        "--spec", default="W4A16_G128", help="preset name or JSON spec (default W4A16_G128)"
    )
    p.add_argument("--n", type=int, default=4096)
    p.add_argument("--k", type=int, default=4096)
    p.add_argument("--m", type=int, default=16)
    p.add_argument("--device", default=None, help="device name (default: the best available)")
    p.add_argument("--seed", type=int, default=0)
    p.set_defaults(func=run)


def _rel(a: torch.Tensor, b: torch.Tensor) -> float:
    return float((a.float() - b.float()).norm() / b.float().norm().clamp_min(1e-30))


def run(args) -> int:
    from ..numerics import dequantize_weight, quantize_weight
    from ..ops import prepare

    spec = load_spec(args.spec)
    device = get_device(args.device)
    target = getattr(device, "torch_device", None) or torch.device("cpu")
    dtype = {"fp16": torch.float16, "bf16": torch.bfloat16}.get(spec.act.dtype.name, torch.bfloat16)
    gen = torch.Generator().manual_seed(args.seed)
    w = torch.randn(args.n, args.k, generator=gen) / args.k**0.5
    x = torch.randn(args.m, args.k, generator=gen).to(dtype)
    console.print(
        f"device: [bold]{device.name}[/bold]  spec: {args.spec}  layer {args.n}x{args.k}, M={args.m}"
    )

    t0 = time.perf_counter()
    cw = quantize_weight(w, spec)
    t_quant = time.perf_counter() - t0
    t0 = time.perf_counter()
    layer = prepare(cw, device)
    t_prep = time.perf_counter() - t0

    xd = x.to(target)
    out = layer.run(xd)  # warm-up
    _sync(target)
    reps = 3 if target.type == "cpu" else 50
    t0 = time.perf_counter()
    for _ in range(reps):
        out = layer.run(xd)
    _sync(target)
    t_gemm = (time.perf_counter() - t0) / reps

    ref16 = (x.float() @ w.T).to(dtype)
    deq = (x.float() @ dequantize_weight(cw).T).to(dtype)
    console.print(
        f"quantize {t_quant * 1e3:.1f} ms, prepare (pack + {layer.num_kernels} kernel(s)) {t_prep * 1e3:.1f} ms"
    )
    console.print(f"gemm: {t_gemm * 1e6:.1f} us per call")
    console.print(
        f"relative error vs fp16 weights (quantization error): {_rel(out.cpu(), ref16):.4e}"
    )
    console.print(
        f"relative error vs dequantized weights (kernel error):  {_rel(out.cpu(), deq):.4e}"
    )
    return 0


def _sync(target: torch.device) -> None:
    if target.type == "cuda":
        torch.cuda.synchronize(target)
