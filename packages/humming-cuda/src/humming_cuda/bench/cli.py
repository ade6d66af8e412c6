"""`humming bench`: a benchmark suite on this GPU; writes JSON and a roofline PNG.

Suites: `dense` (16-bit-activation GEMMs vs cuBLAS fp16, tinygemm int4, cuBLASLt fp8), `act8`
(8-bit-activation GEMMs vs cuBLASLt fp8) and `moe` (the MoE layer vs torch._grouped_mm).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

SUITES = ("dense", "act8", "moe")
TITLES = {
    "dense": "humming dense GEMM",
    "act8": "humming 8-bit-activation GEMM",
    "moe": "humming MoE w13 + w2",
}


def register(sub) -> None:
    p = sub.add_parser(
        "bench", help="benchmark humming against cuBLAS/cuBLASLt/tinygemm/grouped GEMM on this GPU"
    )
    p.add_argument(
        "--suite",
        choices=SUITES,
        default="dense",
        help="dense: WnA16 GEMMs; act8: W8A8/W4A8 GEMMs; moe: Qwen3-30B-A3B experts (default dense)",
    )
    p.add_argument(
        "--specs",
        default=None,
        help="comma list of presets (default per suite: dense W4A16_G128,W8A16,W3A16_G128,"
        "E4M3_G128,MXFP4; act8 W8A8_FP8,W4A8_FP8,FP8_BLOCK128; moe W4A16_G128,MXFP4,MXFP4_A8)",
    )
    p.add_argument(
        "--m",
        default=None,
        help="comma list of M values (default dense/act8 1,8,16,32,64,128,256,1024,4096; "
        "moe 1,8,32,128,512,2048,8192)",
    )
    p.add_argument(
        "--layers",
        default=None,
        help="comma list of NxK for dense/act8 (default the four layers of KERNELS.md)",
    )
    p.add_argument(
        "--out",
        default=None,
        help="JSON output path (default benchmarks/results/<gpu model>/<suite>.json, e.g. h200)",
    )
    p.add_argument("--png", default=None, help="roofline plot path (default: next to the JSON)")
    p.add_argument(
        "--merge-into",
        default=None,
        metavar="FILE",
        help="re-run rows of a results file: this run's rows replace FILE's rows of the same "
        "points, the others are added (same GPU model only); written to --out, else FILE",
    )
    p.set_defaults(func=run)


def suite_call(args):
    """(module, keyword arguments) of the suite's `run` for the parsed arguments."""
    from . import dense, moe

    kwargs = {}
    if args.specs:
        kwargs["specs"] = tuple(s.strip() for s in args.specs.split(","))
    if args.m:
        kwargs["ms"] = tuple(int(v) for v in args.m.split(","))
    if args.suite == "moe":
        if args.layers:
            raise ValueError("--layers applies to the dense and act8 suites; moe has fixed experts")
        return moe, kwargs
    if args.layers:
        kwargs["layers"] = tuple(
            tuple(int(d) for d in item.lower().split("x")) for item in args.layers.split(",")
        )
    if args.suite == "act8":
        kwargs.setdefault("specs", dense.ACT8_SPECS)
        kwargs["baseline_names"] = dense.ACT8_BASELINES
    return dense, kwargs


def results_dir(device_name: str) -> str:
    """The default folder of a GPU's results, named for its model ("NVIDIA H200" -> h200, "NVIDIA
    H100 80GB HBM3" -> h100; a name without a model token: the whole name as a slug), so that a
    run on one model never lands in another's files (the committed ones are an H200's)."""
    words = re.findall(r"[a-z0-9]+", device_name.lower())
    model = next((w for w in words if re.fullmatch(r"[a-z]+\d+[a-z]*", w)), None)
    return f"benchmarks/results/{model or '-'.join(words) or 'gpu'}"


def run(args) -> int:
    import torch

    from .dense import plot
    from .merge import check_device, merge_rows

    if not torch.cuda.is_available():
        raise RuntimeError("humming bench needs an NVIDIA GPU: torch.cuda.is_available() is False")
    module, kwargs = suite_call(args)
    base = None
    if args.merge_into:  # refused before the run, not after it, when the GPU differs
        base = json.loads(Path(args.merge_into).read_text())
        check_device(base, {"device": torch.cuda.get_device_name()})
    default = args.merge_into or f"{results_dir(torch.cuda.get_device_name())}/{args.suite}.json"
    out = Path(args.out or default)
    out.parent.mkdir(parents=True, exist_ok=True)

    def save(result: dict) -> dict:  # after every row: a run cut short still leaves its rows
        if base is not None:  # and, merging, the file's other rows
            result = merge_rows(base, result)
        out.write_text(json.dumps(result, indent=1))
        return result

    result = save(module.run(**kwargs, on_row=save))
    plot(result, args.png or str(out.with_suffix(".png")), title=TITLES[args.suite])
    print(f"wrote {out}")
    return 0
