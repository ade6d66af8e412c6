"""`humming spec`: explain a preset or JSON spec — bits per weight, bytes, which devices can run it."""

from __future__ import annotations

from rich.table import Table

from ..device import GemmProblem, registry
from ..spec import PRESETS
from .common import console, human_bytes, load_spec


def register(sub) -> None:
    p = sub.add_parser("spec", help="explain a preset or a JSON spec")
    p.add_argument(
        "spec", nargs="?", help="preset name, JSON text or .json file; omit to list presets"
    )
    p.add_argument(
        "--n", type=int, default=4096, help="output features for the byte count (default 4096)"
    )
    p.add_argument(
        "--k", type=int, default=4096, help="input features for the byte count (default 4096)"
    )
    p.add_argument("--json", action="store_true", help="print the spec as JSON only")
    p.set_defaults(func=run)


def run(args) -> int:
    if args.spec is None:
        table = Table(title="presets")
        for col in ("name", "weight", "scales", "act", "bits/weight"):
            table.add_column(col)
        for name, s in sorted(PRESETS.items()):
            table.add_row(name, *_summary(s), f"{s.weight.bits_per_weight:.3f}")
        console.print(table)
        return 0
    spec = load_spec(args.spec)
    if args.json:
        print(spec.model_dump_json(indent=2))
        return 0
    weight, scales, act = _summary(spec)
    console.print(
        f"weight: {weight}   scales: {scales}   activations: {act}   output: {spec.output_dtype}"
    )
    console.print(f"bits per weight: {spec.weight.bits_per_weight:.4f}")
    nbytes = spec.weight_bytes(args.n, args.k)
    console.print(
        f"{args.n}x{args.k} layer: {human_bytes(nbytes)} (fp16: {human_bytes(2 * args.n * args.k)}, "
        f"{2 * args.n * args.k / nbytes:.2f}x smaller)"
    )
    table = Table(title="devices")
    for col in ("device", "can run", "why"):
        table.add_column(col)
    problem = GemmProblem(n=args.n, k=args.k, m=16, act_dtype=spec.act.dtype.name)
    reg = registry()
    for st in reg.status():
        if not st.available:
            table.add_row(st.name, "-", f"device not available: {st.reason}")
            continue
        support = reg.get(st.name).check(spec, problem)
        table.add_row(st.name, "yes" if support else "no", support.reason or "")
    console.print(table)
    return 0


def _summary(spec) -> tuple[str, str, str]:
    w, a = spec.weight, spec.act
    zp = {"none": "", "int": " + int zero points", "float": " + float offsets"}[w.zero_point]
    gran = {
        "group": f"group {w.scale.group_size}",
        "block": f"block {w.scale.block}",
        "channel": "per channel",
        "tensor": "per tensor",
    }[w.scale.granularity]
    scales = f"{gran} {w.scale.dtype.name}{' x fp32 global' if w.global_scale else ''}"
    act = (
        a.dtype.name
        if not a.is_quantized
        else f"{a.dtype.name} {a.quant} per {a.granularity}{a.group_size or ''}"
    )
    if a.input_glu != "none":
        act += f", input GLU {a.input_glu} (x: gate then up columns, 2K)"
    return w.dtype.name + zp, scales, act
