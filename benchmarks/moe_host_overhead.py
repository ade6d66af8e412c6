"""Where the eager host time of one MoE layer call goes, on the GPU host (issue 8).

    python3 benchmarks/moe_host_overhead.py W4A16_G128:1 MXFP4_A8:8 [--out notes.txt]

The bench's `host_us` for the MoE layer (eager wall minus graph GPU time) reads 77-84 us per call
for W4A16 g128 at M = 1-8 and 150-300 us for MXFP4 x fp8 at M <= 128 (session 46's H100
snapshot). Per SPEC:M point, on `humming bench --suite moe`'s layer (one weight copy, the bench's
routing), with the GPU queue never full (calls far cheaper on the GPU than on the host, then a
sync), per call:
- the whole layer as the bench calls it (`fused_moe_rows`) and the pieces it issues one by one:
  the routing alignment for w13's block, w13's GEMM, the cast of its output to w2's activation
  dtype when there is one, w2's GEMM (each on tensors from one real layer call);
then a cProfile of 200 layer calls (top 25 functions by own time).
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats

import torch
from host_overhead import per_call_us

from humming_core.ops import fused_moe_rows, moe_align
from humming_core.spec import preset
from humming_cuda.bench.moe import TOPK, activations, layer_pairs, routings


def pieces(x, weights, ids, w13, w2, out) -> dict[str, float]:
    """Eager per-call microseconds of the layer and of each step it issues."""
    rows = ids.numel()
    b13, b2 = w13.block_size(rows), w2.block_size(rows)
    experts = w13.num_experts
    a13 = moe_align(ids, b13, experts, ignore_invalid_experts=True, device=w13.device)
    a2 = (
        a13
        if b2 == b13
        else moe_align(ids, b2, experts, ignore_invalid_experts=True, device=w13.device)
    )
    hidden = w13.run(x, *a13, TOPK, b13, zero_unrouted=False)
    cast = w2.act_dtype is not None
    h2 = hidden.to(w2.act_dtype) if cast else hidden
    times = {
        "layer": per_call_us(lambda: fused_moe_rows(x, weights, ids, w13, w2, out=out)),
        f"align (block {b13})": per_call_us(
            lambda: moe_align(ids, b13, experts, ignore_invalid_experts=True, device=w13.device)
        ),
        "w13": per_call_us(lambda: w13.run(x, *a13, TOPK, b13, zero_unrouted=False)),
        "w2": per_call_us(
            lambda: w2.run(h2, *a2, 1, b2, topk_weights=weights, out=out, zero_unrouted=False)
        ),
    }
    if cast:
        times[f"cast to {w2.act_dtype}"] = per_call_us(lambda: hidden.to(w2.act_dtype))
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("points", nargs="+", help="SPEC:M, e.g. W4A16_G128:1")
    parser.add_argument("--out", help="also write the report here")
    args = parser.parse_args()
    dev = torch.device("cuda")
    report = []
    for point in args.points:
        name, m = point.split(":")
        spec, m = preset(name), int(m)
        ((w13, w2),) = layer_pairs(spec, dev, 1, (m,))
        x = activations(spec, m, dev)
        ((weights, ids),) = routings(m, 1, dev, seed=m)
        out = torch.empty(m * TOPK, w2.n_out, dtype=w2.out_dtype, device=dev)
        for piece, us in pieces(x, weights, ids, w13, w2, out).items():
            report.append(f"{point} {piece}: {us:.1f} us")
            print(report[-1], flush=True)
        prof = cProfile.Profile()
        prof.enable()
        for _ in range(200):
            fused_moe_rows(x, weights, ids, w13, w2, out=out)
        prof.disable()
        torch.cuda.synchronize()
        text = io.StringIO()
        pstats.Stats(prof, stream=text).sort_stats("tottime").print_stats(25)
        report.append(f"{point} cProfile, 200 layer calls:\n{text.getvalue()}")
        print(report[-1], flush=True)
    if args.out:
        with open(args.out, "w") as f:
            f.write("\n".join(report) + "\n")


if __name__ == "__main__":
    main()
