"""Same-run sweep of moe_wna16's decode-form config on one GEMM of the MoE bench's layer (issue 8).

    python3 benchmarks/moe_decode_sweep.py --gemm w13 --set stages=3,4,6,8 --set warps_k=2,4 \\
        [--specs W4A16_G128,MXFP4] [--m 1,8] [--out sweep.json]

Per spec and M, the layer of `humming bench --suite moe` (Qwen3-30B-A3B experts, w13 with the SiLU
GLU, w2 with the router weights, routing aligned on the GPU) is built once as the heuristics choose
(the baseline) and once per combination of the `--set` values, applied to the decode config of the
`--gemm` layer only (the other layer keeps its choice), and each build is timed as the bench times
it (CUDA-graph replay over rotated weight copies and routings). The baseline is timed first and
last; each variant prints its time and its ratio to the faster baseline. Only M buckets that the
decode form serves are swept (at most heuristics.MAX_DECODE_ROWS rows per expert).
"""

from __future__ import annotations

import argparse
import itertools
from contextlib import contextmanager

import torch
from points import field_values, save, with_fields

from humming_core.spec import preset
from humming_cuda.bench.moe import (
    HIDDEN,
    WIDTH,
    activations,
    copies_and_calls,
    humming_fn,
    layer_pairs,
    routings,
)
from humming_cuda.bench.timing import graph_time_us
from humming_cuda.kernels.moe_wna16 import heuristics

GEMM_N = {"w13": 2 * WIDTH, "w2": HIDDEN}  # output columns of each GEMM's weight


@contextmanager
def decode_fields(gemm: str, update: dict):
    """Layers built inside take `update` on the decode config of `gemm`'s weight."""
    saved = heuristics.decode_config

    def patched(spec, problem, caps):
        cfg = saved(spec, problem, caps)
        if cfg is None or problem.n != GEMM_N[gemm] or not update:
            return cfg
        return with_fields(cfg, update)

    heuristics.decode_config = patched
    try:
        yield
    finally:
        heuristics.decode_config = saved


def _time(name: str, m: int, gemm: str, update: dict, x, routes, copies: int, calls: int) -> float:
    with decode_fields(gemm, update):
        pairs = layer_pairs(preset(name), torch.device("cuda"), copies, (m,))
    us = graph_time_us(humming_fn(pairs, x, routes), calls)
    del pairs
    torch.cuda.empty_cache()
    return us


def sweep(name: str, m: int, gemm: str, grid: dict) -> dict:
    copies, calls = copies_and_calls(m)
    x = activations(preset(name), m, torch.device("cuda"))
    routes = routings(m, calls, torch.device("cuda"), seed=m)
    run = lambda update: _time(name, m, gemm, update, x, routes, copies, calls)  # noqa: E731
    row = {"spec": name, "M": m, "gemm": gemm, "baseline_us": [run({})], "variants": []}
    for values in itertools.product(*grid.values()):
        update = dict(zip(grid, values, strict=True))
        try:
            us = run(update)
        except (ValueError, RuntimeError) as exc:  # a config the kernel refuses (shared memory)
            print(f"{name:12s} M={m:<5d} {gemm} {update} refused: {exc}", flush=True)
            continue
        row["variants"].append({**update, "us": us})
    row["baseline_us"].append(run({}))
    base = min(row["baseline_us"])
    print(f"{name:12s} M={m:<5d} {gemm} baseline {base:8.1f} us", flush=True)
    for v in row["variants"]:
        fields = {k: v[k] for k in grid}
        print(f"{name:12s} M={m:<5d} {gemm} {fields} {v['us']:8.1f} us  x{v['us'] / base:.3f}")
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gemm", choices=tuple(GEMM_N), default="w13")
    parser.add_argument("--set", action="append", default=[], help="field=v1,v2,...")
    parser.add_argument("--specs", default="W4A16_G128")
    parser.add_argument("--m", default="1,8")
    parser.add_argument("--out")
    args = parser.parse_args()
    grid = field_values(args.set, many=True)
    rows = [
        sweep(name, int(m), args.gemm, grid)
        for name in args.specs.split(",")
        for m in args.m.split(",")
    ]
    save(args.out, rows)


if __name__ == "__main__":
    main()
