"""`humming inspect PATH` and `humming convert PATH OUT`: checkpoint formats from the command line."""

from __future__ import annotations

from ..formats import FormatError
from ..formats.inspect import convert_checkpoint, format_report, inspect_checkpoint


def register(sub) -> None:
    p = sub.add_parser(
        "inspect", help="show a checkpoint's format, layers, bits per weight and memory"
    )
    p.add_argument("path", help="checkpoint folder, .safetensors file or .gguf file")
    p.set_defaults(func=run_inspect)
    c = sub.add_parser("convert", help="convert a checkpoint to a canonical humming checkpoint")
    c.add_argument("path", help="checkpoint folder, .safetensors file or .gguf file")
    c.add_argument("out", help="output folder (model.safetensors + humming.json)")
    c.add_argument(
        "--allow-rounding",
        action="store_true",
        help="accept conversions that round (e.g. an NVFP4 reciprocal global scale)",
    )
    c.add_argument("--no-progress", action="store_true", help="no progress bar")
    c.set_defaults(func=run_convert)


def run_inspect(args) -> int:
    try:
        print(format_report(inspect_checkpoint(args.path)))
    except FormatError as exc:
        print(f"error: {exc}")
        return 2
    return 0


def run_convert(args) -> int:
    try:
        out = convert_checkpoint(
            args.path, args.out, progress=not args.no_progress, allow_rounding=args.allow_rounding
        )
    except FormatError as exc:
        print(f"error: {exc}")
        return 2
    print(f"wrote {out}")
    return 0
