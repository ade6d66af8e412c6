"""`humming bench`: the dense benchmark grid on this GPU; writes JSON and a roofline PNG."""

from __future__ import annotations

import json
from pathlib import Path


def register(sub) -> None:
    p = sub.add_parser(
        "bench", help="benchmark dense GEMMs against cuBLAS/tinygemm/cuBLASLt on this GPU"
    )
    p.add_argument(
        "--specs",
        default=None,
        help="comma list of presets (default: W4A16_G128,W8A16,W3A16_G128,E4M3_G128,MXFP4)",
    )
    p.add_argument(
        "--m", default=None, help="comma list of M values (default 1,8,16,32,64,128,256,1024,4096)"
    )
    p.add_argument(
        "--layers", default=None, help="comma list of NxK (default the four layers of KERNELS.md)"
    )
    p.add_argument("--out", default="benchmarks/results/h200/dense.json", help="JSON output path")
    p.add_argument("--png", default=None, help="roofline plot path (default: next to the JSON)")
    p.set_defaults(func=run)


def run(args) -> int:
    import torch

    from . import dense

    if not torch.cuda.is_available():
        raise RuntimeError("humming bench needs an NVIDIA GPU: torch.cuda.is_available() is False")
    kwargs = {}
    if args.specs:
        kwargs["specs"] = tuple(s.strip() for s in args.specs.split(","))
    if args.m:
        kwargs["ms"] = tuple(int(v) for v in args.m.split(","))
    if args.layers:
        kwargs["layers"] = tuple(
            tuple(int(d) for d in item.lower().split("x")) for item in args.layers.split(",")
        )
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)

    def save(result: dict) -> None:  # after every row: a run cut short still leaves its rows
        out.write_text(json.dumps(result, indent=1))

    result = dense.run(**kwargs, on_row=save)
    save(result)
    dense.plot(result, args.png or str(out.with_suffix(".png")))
    print(f"wrote {out}")
    return 0
