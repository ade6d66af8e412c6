"""A routing change's effect, same run: each point's routed config under the heuristics as they
are and under the heuristics with some module constants set back (`--old NAME=value`), both
timed by CUDA-graph replay over rotated weight copies (as wgmma_config_sweep times), points where
both route to the same config timed once.

    python3 benchmarks/route_ab.py --module humming_cuda.kernels.wna16_wgmma.heuristics \\
        --old WIDE_MIN_M=1024 W4A16_G128:6144x4096:768 [--peer] [--out ab.json]
"""

from __future__ import annotations

import argparse
import importlib
from contextlib import contextmanager

from points import Point, config_us, field_value, packed_copies, peer_us, save

from humming_cuda.bench.baselines import Unavailable
from humming_cuda.device import CudaDevice


@contextmanager
def constants(module, values: dict):
    """`module`'s attributes set to `values` inside the block (each must exist)."""
    missing = [name for name in values if not hasattr(module, name)]
    if missing:
        raise SystemExit(f"{module.__name__} has no {missing}")
    saved = {name: getattr(module, name) for name in values}
    try:
        for name, value in values.items():
            setattr(module, name, value)
        yield
    finally:
        for name, value in saved.items():
            setattr(module, name, value)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("points", nargs="+", help="SPEC:NxK:M")
    parser.add_argument(
        "--module", required=True, help="the heuristics module the constants live in"
    )
    parser.add_argument(
        "--old",
        action="append",
        default=[],
        help="NAME=value (or NAME=v1,v2: a tuple), the old routing",
    )
    parser.add_argument("--peer", action="store_true", help="time the published package too")
    parser.add_argument("--out")
    args = parser.parse_args()
    module = importlib.import_module(args.module)
    old = {}
    for item in args.old:
        name, sep, value = item.partition("=")
        if not sep:
            raise SystemExit(f"{item!r}: expected NAME=value")
        # a comma list sets a tuple constant (e.g. --old RS_BLOCK_MS=16,32,64,128)
        parts = [field_value(v) for v in value.split(",")]
        old[name] = tuple(parts) if "," in value else parts[0]
    device = CudaDevice()
    rows = []
    for text in args.points:
        point = Point.parse(text)
        new_cfg = device.candidates(point.spec, point.problem)[0]
        with constants(module, old):
            old_cfg = device.candidates(point.spec, point.problem)[0]
        cw, x, out = point.tensors()
        copies = point.copies(device.caps())
        row = {"point": text}
        sides = {"new": new_cfg} | ({"old": old_cfg} if old_cfg != new_cfg else {})
        for side, cfg in sides.items():
            row[side] = cfg.model_dump(mode="json")
            packed = packed_copies(device, point.spec, cfg, cw, copies)
            row[f"{side}_us"] = config_us(device, point.spec, cfg, packed, x, out)
        if args.peer:
            try:
                row["peer_us"] = peer_us(point, x, copies)
            except Unavailable as exc:
                row["peer"] = str(exc)
        ratio = f"new/old {row['new_us'] / row['old_us']:.3f}" if "old_us" in row else "same"
        print(
            f"{text:30s} new {row['new_us']:9.1f} us  old {row.get('old_us', row['new_us']):9.1f}"
            f"  {ratio}  peer {row.get('peer_us', float('nan')):9.1f}",
            flush=True,
        )
        rows.append(row)
    save(args.out, rows, old=old)


if __name__ == "__main__":
    main()
