"""Same-run A/B of the MoE layer on the two WnA16 MoE families (issue 8): moe_wna16 (mma.sync)
against the device's routing, which gives moe_wna16_wgmma the M buckets with enough rows per
expert (its heuristics' threshold, overridable here to measure it; its block choice is
benchmarks/moe_block_sweep.py's to measure).

    python3 benchmarks/moe_family_ab.py [--specs W4A16_G128,MXFP4] [--m 128,512,2048,8192]
        [--min-rows 32] [--out ab.json]
    python3 benchmarks/moe_family_ab.py --decode [--m 1,8,32,128] ...

Per spec and M: the humming bench's MoE layer (Qwen3-30B-A3B experts, w13 with the SiLU GLU, w2
with the router weights, routing aligned on the GPU) timed by CUDA-graph replay over rotated
weight copies and routings exactly as `humming bench --suite moe` times it, once built with
moe_wna16_wgmma left out (A) and once routed (B), in one process. Prints both times, B/A, and the
families each layer's M bucket ran. `--decode` compares moe_wna16's forms instead: A without its
decode form (moe_wna16.heuristics.decode_config never taken), B as the device routes.
"""

from __future__ import annotations

import argparse
from contextlib import contextmanager

import torch
from points import save

from humming_core.spec import preset
from humming_cuda.bench.moe import (
    TOPK,
    activations,
    copies_and_calls,
    humming_fn,
    layer_pairs,
    routings,
)
from humming_cuda.bench.timing import graph_time_us
from humming_cuda.kernels.moe_wna16 import heuristics as moe_wna16_heuristics
from humming_cuda.kernels.moe_wna16_wgmma import heuristics

NEVER = 1 << 62  # more rows per expert than any layer routes: moe_wna16_wgmma left out


@contextmanager
def threshold(min_rows: int):
    """moe_wna16_wgmma's routing threshold set for the layers built inside."""
    saved = heuristics.MIN_ROWS_PER_EXPERT
    heuristics.MIN_ROWS_PER_EXPERT = min_rows
    try:
        yield
    finally:
        heuristics.MIN_ROWS_PER_EXPERT = saved


@contextmanager
def without_decode():
    """moe_wna16's decode form left out of the layers built inside."""
    saved = moe_wna16_heuristics.decode_config
    moe_wna16_heuristics.decode_config = lambda *args: None
    try:
        yield
    finally:
        moe_wna16_heuristics.decode_config = saved


def compare(name: str, m: int, min_rows: int, decode: bool = False) -> dict:
    copies, calls = copies_and_calls(m)
    x = activations(preset(name), m, torch.device("cuda"))
    routes = routings(m, calls, torch.device("cuda"), seed=m)
    row = {"spec": name, "M": m}
    a_build = without_decode() if decode else threshold(NEVER)
    for label, build in (("A", a_build), ("B", threshold(min_rows))):
        with build:
            pairs = layer_pairs(preset(name), torch.device("cuda"), copies, (m,))
        configs = [layer.config_for(m * TOPK) for layer in pairs[0]]
        row[f"{label}_families"] = [
            c.family + ("_decode" if getattr(c, "tokens", 0) else "") for c in configs
        ]
        row[f"{label}_us"] = graph_time_us(humming_fn(pairs, x, routes), calls)
        del pairs
        torch.cuda.empty_cache()
    row["B/A"] = row["B_us"] / row["A_us"]
    print(
        f"{name:12s} M={m:<5d} A {row['A_us']:9.1f} us {row['A_families']}  "
        f"B {row['B_us']:9.1f} us {row['B_families']}  B/A {row['B/A']:.2f}",
        flush=True,
    )
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--specs", default="W4A16_G128,MXFP4")
    parser.add_argument("--m", default="128,512,2048,8192")
    parser.add_argument("--min-rows", type=int, default=heuristics.MIN_ROWS_PER_EXPERT)
    parser.add_argument("--decode", action="store_true", help="A/B of moe_wna16's decode form")
    parser.add_argument("--out")
    args = parser.parse_args()
    rows = [
        compare(name, int(m), args.min_rows, args.decode)
        for name in args.specs.split(",")
        for m in args.m.split(",")
    ]
    save(args.out, rows)


if __name__ == "__main__":
    main()
