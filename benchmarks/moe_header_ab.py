"""Same-run A/B of the MoE bench's layer built from this tree's kernel headers (A) against another
version of them (B) (issue 8 perf work).

    git archive main packages/humming-cuda/src/humming_cuda/include | tar -x -C .ab
    python3 benchmarks/moe_header_ab.py --b .ab/packages/humming-cuda/src/humming_cuda/include \\
        [--specs W4A16_G128,MXFP4] [--m 512,2048,8192] [--stages 6] [--out ab.json]
    python3 benchmarks/moe_header_ab.py --b-stages 6 [--stages 4] ...   # a ring depth A/B

(.ab is git-ignored: name it in the device tool's `carry`.) Per spec and M, the layer of
`humming bench --suite moe` (Qwen3-30B-A3B experts, w13 with the SiLU GLU, w2 with the router
weights, routing aligned on the GPU) is built twice in one process, its kernels compiled against
each header tree (the include root enters the kernel cache key, so the builds do not share
cubins), and timed by CUDA-graph replay over rotated weight copies and routings as the bench
times it, in A, B, A, B order; each variant's time is the lower of its two. `--stages N` builds
both with moe_wna16_wgmma's N-stage ring first (the heuristics' order otherwise); `--b-stages N`
builds B with it instead (without `--b`, both from this tree's headers: a ring depth sweep). Only
header and ring depth changes can be compared: rendering, layout and binding are this tree's.
"""

from __future__ import annotations

import argparse
from contextlib import contextmanager
from pathlib import Path

import torch
from points import save

from humming_core.spec import preset
from humming_cuda import compiler
from humming_cuda import device as cuda_device
from humming_cuda.bench.moe import (
    TOPK,
    activations,
    copies_and_calls,
    humming_fn,
    layer_pairs,
    routings,
)
from humming_cuda.bench.timing import graph_time_us
from humming_cuda.kernels.moe_wna16_wgmma import heuristics


@contextmanager
def built_with(include_root: Path | None, stages: int | None):
    """Layers built inside compile against `include_root` (None: this tree's headers) and put
    moe_wna16_wgmma's `stages` ring first (None: unchanged)."""
    saved = compiler.humming_include_root, cuda_device.humming_include_root, heuristics.STAGES
    if include_root is not None:
        compiler.humming_include_root = cuda_device.humming_include_root = lambda: include_root
    if stages is not None:
        heuristics.STAGES = (stages, *(s for s in saved[2] if s != stages))
    try:
        yield
    finally:
        compiler.humming_include_root, cuda_device.humming_include_root, heuristics.STAGES = saved


def compare(
    name: str, m: int, b_root: Path | None, stages: int | None, b_stages: int | None
) -> dict:
    copies, calls = copies_and_calls(m)
    dev = torch.device("cuda")
    x, routes = activations(preset(name), m, dev), routings(m, calls, dev, seed=m)
    fns, row = {}, {"spec": name, "M": m}
    for label, root, depth in (("A", None, stages), ("B", b_root, b_stages or stages)):
        with built_with(root, depth):
            pairs = layer_pairs(preset(name), dev, copies, (m,))
        row[f"{label}_configs"] = [
            layer.config_for(m * TOPK).model_dump(mode="json") for layer in pairs[0]
        ]
        fns[label] = humming_fn(pairs, x, routes)
    times: dict[str, list[float]] = {"A": [], "B": []}
    for label in ("A", "B", "A", "B"):
        times[label].append(graph_time_us(fns[label], calls))
    row |= {"A_us": min(times["A"]), "B_us": min(times["B"]), "samples": times}
    row["B/A"] = round(row["B_us"] / row["A_us"], 3)
    print(
        f"{name:12s} M={m:<5d} A {row['A_us']:9.1f} us  B {row['B_us']:9.1f} us  "
        f"B/A {row['B/A']:.2f}  ({row['A_configs'][0]['family']})",
        flush=True,
    )
    del fns
    torch.cuda.empty_cache()
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--b", type=Path, help="the other version's include/ root (B)")
    parser.add_argument("--specs", default="W4A16_G128,MXFP4")
    parser.add_argument("--m", default="512,2048,8192")
    parser.add_argument("--stages", type=int, help="moe_wna16_wgmma ring depth for both builds")
    parser.add_argument("--b-stages", type=int, help="B's moe_wna16_wgmma ring depth")
    parser.add_argument("--out")
    args = parser.parse_args()
    if args.b is None and args.b_stages is None:
        raise SystemExit("nothing to compare: pass --b (other headers) or --b-stages")
    if args.b is not None and not (args.b / "humming").is_dir():
        raise SystemExit(f"--b {args.b} has no humming/ headers: pass the include/ directory")
    b_root = args.b.resolve() if args.b is not None else None
    rows = [
        compare(name, int(m), b_root, args.stages, args.b_stages)
        for name in args.specs.split(",")
        for m in args.m.split(",")
    ]
    save(args.out, rows, b=str(args.b), stages=args.stages, b_stages=args.b_stages)


if __name__ == "__main__":
    main()
