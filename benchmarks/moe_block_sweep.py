"""Same-run sweep of the alignment block of a MoE layer's wgmma kernel (issue 8).

    python3 benchmarks/moe_block_sweep.py [--form e4m3] [--specs MXFP4_A8] [--m 1,8,32,128,512] \\
        [--blocks none,16,16x1,32,64] [--out sweep.json]
    python3 benchmarks/moe_block_sweep.py --form bf16 --specs W4A16_G128,MXFP4 --m 512,2048,8192 \\
        --blocks 64,96,128,160

Per spec and M, the layer of `humming bench --suite moe` (Qwen3-30B-A3B experts, w13 with the SiLU
GLU, w2 with the router weights, routing aligned on the GPU) is built once as the heuristics choose
(the baseline, timed first and last) and once per `--blocks` value, which replaces the form's
block choice for both GEMMs:
- `--form e4m3` (MXFP4 x e4m3 layers): moe_wna16_a8.heuristics.e4m3_block. A row count runs the
  e4m3 form with blocks of that many rows (`16x1`: on one CTA per SM instead of the heuristics'
  split), `none` the kernel the codes spec would take without it (moe_wna16's decode form at few
  rows per expert).
- `--form bf16` (WnA16 layers): moe_wna16_wgmma.heuristics.forced_tile, the register-A kernel's
  block; `none` moe_wna16 (the mma.sync kernels) instead of it; `64n128` 64-row blocks in the
  128-column tile at two CTAs per SM.
Each build is timed as the bench times it (CUDA-graph replay over rotated weight copies and
routings); each variant prints its time and its ratio to the faster baseline.
"""

from __future__ import annotations

import argparse
from contextlib import nullcontext

import torch
from points import save

from humming_core.spec import preset
from humming_cuda.bench.moe import activations, copies_and_calls, humming_fn, layer_pairs, routings
from humming_cuda.bench.timing import graph_time_us
from humming_cuda.kernels.moe_wna16_a8 import heuristics as a8
from humming_cuda.kernels.moe_wna16_wgmma import heuristics as wgmma


def forced_e4m3_block(block: str):
    """Layers built inside take `block` for the e4m3 form: "auto" the heuristics' choice, "none"
    no e4m3 form, "B" blocks of B rows, "Bx1" blocks of B rows on one CTA per SM."""
    if block == "auto":
        return nullcontext()
    rows, _, ctas = block.partition("x")
    value = None if rows == "none" else int(rows)
    return a8.forced_e4m3(value, int(ctas)) if ctas else a8.forced_e4m3(value)


def forced_bf16_block(block: str):
    """Layers built inside take `block` for the register-A MoE kernel: "auto" the heuristics'
    choice, "none" moe_wna16 instead, "B" blocks of B rows, "Bn128" blocks of B rows in the
    128-column tile at two CTAs per SM (not routed)."""
    if block == "auto":
        return nullcontext()
    if block == "none":
        return wgmma.forced_tile(None)
    rows, _, columns = block.partition("n")
    fields = {"block_n": int(columns), "ctas_per_sm": 2} if columns else {}
    return wgmma.forced_tile(int(rows), **fields)


FORMS = {"e4m3": forced_e4m3_block, "bf16": forced_bf16_block}


def _time(form: str, name: str, m: int, block, x, routes, copies: int, calls: int) -> float:
    with FORMS[form](block):
        pairs = layer_pairs(preset(name), torch.device("cuda"), copies, (m,))
    us = graph_time_us(humming_fn(pairs, x, routes), calls)
    del pairs
    torch.cuda.empty_cache()
    return us


def sweep(form: str, name: str, m: int, blocks: list[str]) -> dict:
    copies, calls = copies_and_calls(m)
    x = activations(preset(name), m, torch.device("cuda"))
    routes = routings(m, calls, torch.device("cuda"), seed=m)
    run = lambda block: _time(form, name, m, block, x, routes, copies, calls)  # noqa: E731
    row = {"form": form, "spec": name, "M": m, "baseline_us": [run("auto")], "variants": []}
    for block in blocks:
        try:
            us = run(block)
        except (ValueError, RuntimeError) as exc:  # a block the kernel refuses
            print(f"{name:12s} M={m:<5d} block={block} refused: {exc}", flush=True)
            continue
        row["variants"].append({"block": block, "us": us})
    row["baseline_us"].append(run("auto"))
    base = min(row["baseline_us"])
    print(f"{name:12s} M={m:<5d} baseline {base:8.1f} us", flush=True)
    for v in row["variants"]:
        print(f"{name:12s} M={m:<5d} block={v['block']} {v['us']:8.1f} us  x{v['us'] / base:.3f}")
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--form", choices=sorted(FORMS), default="e4m3")
    parser.add_argument("--specs", default="MXFP4_A8")
    parser.add_argument("--m", default="1,8,32,128,512")
    parser.add_argument("--blocks", default="none,16,16x1,32,64")
    parser.add_argument("--out")
    args = parser.parse_args()
    blocks = args.blocks.split(",")
    rows = [
        sweep(args.form, name, int(m), blocks)
        for name in args.specs.split(",")
        for m in args.m.split(",")
    ]
    save(args.out, rows)


if __name__ == "__main__":
    main()
