"""`humming compile`: build the kernel a spec needs for one arch, without that GPU, and print its resources."""

from __future__ import annotations

from rich.table import Table

from ..device import GemmProblem, registry
from .common import console, load_spec


def register(sub) -> None:
    p = sub.add_parser(
        "compile", help="compile a spec's kernel for an arch (no GPU needed) and show resources"
    )
    p.add_argument("--spec", default="W4A16_G128")
    p.add_argument("--device", default="cuda", help="device plugin (default cuda)")
    p.add_argument("--arch", required=True, help="target, e.g. sm_80, sm_90a, sm_120a")
    p.add_argument("--n", type=int, default=4096)
    p.add_argument("--k", type=int, default=4096)
    p.add_argument("--m", type=int, default=16)
    p.set_defaults(func=run)


def run(args) -> int:
    from ..jit import compile_report

    spec = load_spec(args.spec)
    device = registry().load_for_compile(args.device).for_arch(args.arch)
    problem = GemmProblem(n=args.n, k=args.k, m=args.m, act_dtype=spec.act.dtype.name)
    try:
        report = compile_report(device, spec, problem)
    except ValueError as exc:
        raise ValueError(f"{args.device} {args.arch} cannot run {args.spec}: {exc}") from None
    table = Table(title=f"{report['kernel']} for {args.arch}")
    table.add_column("field")
    table.add_column("value")
    for key, value in report.items():
        table.add_row(key, str(value))
    console.print(table)
    return 0
