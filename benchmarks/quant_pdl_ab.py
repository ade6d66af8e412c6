"""Same-run A/B of launching the activation quantizers with PDL (issue 7/8): the layers that
quantize their activations on the GPU (MoE with 8-bit activations, dense W8A8 / W4A8), timed with
every quantizer launched without the PDL attribute (A, as before session 23) and with it (B).

    python3 benchmarks/quant_pdl_ab.py [--moe MXFP4_A8:1,MXFP4_A8:8] \\
        [--dense W4A8_FP8:6144x4096:1,W8A8_FP8:8192x28672:16] [--out ab.json]

MoE points are `humming bench --suite moe`'s layer (routing aligned on the GPU, w13 + w2, rotated
weight copies and routings), dense points `humming bench`'s GEMM over rotated weight copies; both
timed by CUDA-graph replay. One build per point: the quantizers' launchers are switched between
the two forms in place, in A, B, A, B order; each form's time is the lower of its two.
"""

from __future__ import annotations

import argparse
import gc

import torch
from points import Point, rotated_us, save

from humming_core.spec import preset
from humming_cuda.bench.moe import activations, copies_and_calls, humming_fn, layer_pairs, routings
from humming_cuda.bench.timing import graph_time_us
from humming_cuda.device import CudaDevice
from humming_cuda.kernels.act_quant import ActQuantizer
from humming_cuda.launch import Launcher


def set_quantizer_pdl(on: bool) -> int:
    """Relaunch every live quantizer entry with (on) or without the PDL attribute; how many."""
    count = 0
    for obj in gc.get_objects():
        if isinstance(obj, ActQuantizer):
            for dtype, (fn, sig, _old) in list(obj._by_dtype.items()):
                obj._by_dtype[dtype] = (fn, sig, Launcher(fn, sig.ctypes, pdl=on))
                count += 1
    return count


def alternate(timed) -> dict:
    times = {"A": [], "B": []}
    for label in ("A", "B", "A", "B"):
        set_quantizer_pdl(label == "B")
        times[label].append(timed())
    return {k: min(v) for k, v in times.items()}


def moe_point(text: str) -> dict:
    name, m = text.split(":")
    m = int(m)
    copies, calls = copies_and_calls(m)
    dev = torch.device("cuda")
    x = activations(preset(name), m, dev)
    routes = routings(m, calls, dev, seed=m)
    pairs = layer_pairs(preset(name), dev, copies, (m,))
    fn = humming_fn(pairs, x, routes)
    return {"point": f"moe:{text}", **alternate(lambda: graph_time_us(fn, calls))}


def dense_point(device: CudaDevice, text: str) -> dict:
    point = Point.parse(text)
    config = device.candidates(point.spec, point.problem)[0]
    kernel = device.load(device.compile(device.render(point.spec, config)))
    cw, x, out = point.tensors()
    layout = device.weight_layout(point.spec, config)
    packed = [layout.pack(cw, "cuda") for _ in range(point.copies(device.caps()))]
    return {"point": text, **alternate(lambda: rotated_us(kernel, packed, x, out))}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--moe", default="MXFP4_A8:1,MXFP4_A8:8")
    parser.add_argument("--dense", default="")
    parser.add_argument("--out")
    args = parser.parse_args()
    device = CudaDevice()
    rows = [moe_point(p) for p in args.moe.split(",") if p]
    rows += [dense_point(device, p) for p in args.dense.split(",") if p]
    for r in rows:
        r["B/A"] = r["B"] / r["A"]
        print(f"{r['point']:32s} A {r['A']:8.1f} us  B {r['B']:8.1f} us  B/A {r['B/A']:.3f}")
    save(args.out, rows)


if __name__ == "__main__":
    main()
