"""Replay wna16_wgmma's routing of the 128-column tile over session 37's sweep (h100/d*.json:
the 256-column plan's time as "chosen_us", the tile's (rs_block_m, split_k) variants), for a
choice of the N128_* constants: per point, what the routing takes and its measured time against
the 256-column plan and against the best measured variant.

    PYTHONPATH=packages/humming-cuda/src:packages/humming-core/src:benchmarks \\
        python3 benchmarks/notes/session37/fit_n128_routing.py
"""

from __future__ import annotations

import json
from pathlib import Path

from points import Point

import humming_cuda.kernels.wna16_wgmma.heuristics as H
from humming_cuda.caps import caps_for_arch

CAPS = caps_for_arch("sm_90a")
ROWS = [
    r
    for f in Path("benchmarks/notes/session37/h100").glob("d*.json")
    for r in json.loads(f.read_text())["rows"]
]
NAMES = ("N128_STEP_COST", "N128_FIXED_STEPS", "N128_ALONE", "N128_SPLITS")


def routing(values: tuple, show: bool = False) -> tuple[float, float]:
    """Mean and worst (routed time / 256-column plan's time) with the N128 constants `values`."""
    saved = tuple(getattr(H, n) for n in NAMES)
    for name, value in zip(NAMES, values, strict=True):
        setattr(H, name, value)
    ratios = []
    try:
        for row in sorted(ROWS, key=lambda r: r["point"]):
            point = Point.parse(row["point"])
            plan = H.best_plan(point.problem, CAPS, narrow_n=point.spec.weight.dtype.bits == 4)
            routed = row["chosen_us"]
            if plan.block_n == 128:
                routed = next(
                    v["us"]
                    for v in row["variants"]
                    if (v["rs_block_m"], v["split_k"]) == (plan.block_m, plan.split_k)
                )
            best = min([row["chosen_us"], *(v["us"] for v in row["variants"])])
            ratios.append(routed / row["chosen_us"])
            if show:
                what = f"n128 {plan.block_m} s{plan.split_k}" if plan.block_n == 128 else "256"
                print(
                    f"  {row['point']:28} {what:12} {routed:7.1f} us: "
                    f"{ratios[-1]:.3f}x the 256-column plan, {routed / best:.3f}x the best"
                )
    finally:
        for name, value in zip(NAMES, saved, strict=True):
            setattr(H, name, value)
    return sum(ratios) / len(ratios), max(ratios)


if __name__ == "__main__":
    step, fixed, alone = H.N128_STEP_COST, H.N128_FIXED_STEPS, H.N128_ALONE
    for splits in ((1, 2, 4), (1, 2, 4, 8), (1, 2, 3, 4, 5, 6, 8)):
        print(f"splits {splits}: mean / worst {routing((step, fixed, alone, splits), show=True)}")
    print("the grid refit's constants:", routing(({64: 1.0, 128: 1.4}, 20, 0.6, (1, 2, 4))))
