"""Fit wna16_wgmma's register-form cost model (heuristics.py) to wgmma_config_sweep results.

    python3 benchmarks/fit_rs_cost.py notes/session11_mid_m_sweep.json notes/session33/sweep_split.json
        [--set RS_STEP_COST.96=1.42] [--grid SPLIT_ROW_STEPS=0.006,0.012,0.03]

The model prices a plan (token tile, K split) in K-step units; within one sweep point only the
ratios between its variants matter (the unit's length in us is the point's own), so each point's
log-times are compared with the log-costs after removing their mean. Prints the fit's error and,
per point, the measured-fastest variant against the model's pick and the pick's regret. Variants
with other forms (stream-K, two CTAs per SM, the shared-memory form) are skipped. `--grid` tries
every combination of the listed values (`NAME=v1,v2`, `RS_STEP_COST.<rows>=...` for one step
cost) and reports the best by worst regret, then mean error.
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
from dataclasses import dataclass, replace

from points import Point

from humming_cuda.kernels.wgmma_tile import waves
from humming_cuda.kernels.wna16.heuristics import DEFAULT_SMS
from humming_cuda.kernels.wna16_wgmma import heuristics as h
from humming_cuda.kernels.wna16_wgmma.config import BLOCK_K, RS_BLOCK_N


@dataclass(frozen=True)
class Model:
    step: dict
    fixed: float
    split_row: float

    def cost(self, n: int, k: int, m: int, block_m: int, split: int) -> float:
        """heuristics.register_plans' cost of a one-CTA-per-SM plan, under this model's values."""
        tiles = -(-m // block_m) * -(-n // RS_BLOCK_N)
        cta = h.cta_cost(-(-k // BLOCK_K), block_m, split, self.step, self.fixed, self.split_row)
        return waves(tiles * split, DEFAULT_SMS) * cta


def measured(paths: list[str]) -> list[tuple[str, list[tuple[int, int, float]]]]:
    """(point, [(rows, split, us)]) of every register-form, one-CTA-per-SM variant."""
    out = []
    for path in paths:
        with open(path) as f:
            rows = json.load(f)
        for row in rows["rows"] if isinstance(rows, dict) else rows:
            base = row["chosen"]
            found = {}
            for v in row.get("variants", []):
                if "us" not in v:  # a combination that was not a valid config (not timed)
                    continue
                cfg = {**base, **{k: v[k] for k in v if k != "us"}}
                if str(cfg.get("rs_stream_k", False)).lower() == "true":
                    continue
                if int(cfg.get("rs_ctas_per_sm", 1)) != 1 or not cfg.get("weights_in_registers"):
                    continue
                key = (int(cfg["rs_block_m"]), int(cfg["split_k"]))
                found[key] = min(v["us"], found.get(key, math.inf))
            if len(found) >= 2:
                out.append((row["point"], [(b, s, us) for (b, s), us in sorted(found.items())]))
    return out


def evaluate(model: Model, data) -> tuple[float, float, list[str]]:
    """(rms log error, worst regret, report lines)."""
    sq, count, worst, lines = 0.0, 0, 1.0, []
    for text, variants in data:
        p = Point.parse(text)
        usable = [(b, s, us) for b, s, us in variants if b in model.step]
        costs = [model.cost(p.n, p.k, p.m, b, s) for b, s, _ in usable]
        logs = [math.log(us) - math.log(c) for (_, _, us), c in zip(usable, costs, strict=True)]
        mean = sum(logs) / len(logs)
        sq += sum((x - mean) ** 2 for x in logs)
        count += len(logs)
        best = min(usable, key=lambda v: v[2])
        pick = usable[min(range(len(usable)), key=costs.__getitem__)]
        regret = pick[2] / best[2]
        worst = max(worst, regret)
        lines.append(
            f"{text:28s} fastest {best[0]:3d}x{best[1]} {best[2]:8.1f} us  model {pick[0]:3d}x"
            f"{pick[1]} {pick[2]:8.1f} us  regret {regret:.3f}"
        )
    return math.sqrt(sq / max(count, 1)), worst, lines


def with_value(model: Model, name: str, value: float) -> Model:
    if name.startswith("RS_STEP_COST."):
        return replace(model, step={**model.step, int(name.split(".")[1]): value})
    field = {"FIXED_STEPS": "fixed", "SPLIT_ROW_STEPS": "split_row"}[name]
    return replace(model, **{field: value})


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("sweeps", nargs="+")
    ap.add_argument("--set", action="append", default=[], help="NAME=value over heuristics.py's")
    ap.add_argument("--grid", action="append", default=[], help="NAME=v1,v2,... to search")
    args = ap.parse_args()
    model = Model(dict(h.RS_STEP_COST), h.FIXED_STEPS, h.SPLIT_ROW_STEPS)
    for item in args.set:
        name, value = item.split("=")
        model = with_value(model, name, float(value))
    data = measured(args.sweeps)
    grid = [(g.split("=")[0], [float(x) for x in g.split("=")[1].split(",")]) for g in args.grid]
    best = None
    for values in itertools.product(*(vals for _, vals in grid)):
        trial = model
        for (name, _), value in zip(grid, values, strict=True):
            trial = with_value(trial, name, value)
        err, worst, _ = evaluate(trial, data)
        if best is None or (worst, err) < best[0]:
            best = ((worst, err), trial, values)
    (worst, err), model, values = best
    if grid:
        print("best:", ", ".join(f"{n}={v}" for (n, _), v in zip(grid, values, strict=True)))
    err, worst, lines = evaluate(model, data)
    print("\n".join(lines))
    print(f"rms log error {err:.3f}, worst regret {worst:.3f} over {len(data)} points")


if __name__ == "__main__":
    main()
