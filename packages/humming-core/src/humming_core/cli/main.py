"""`humming` entry point: one subcommand per module in this package."""

from __future__ import annotations

import argparse
import logging
import sys

from ..env import ENV
from . import compile_cmd, demo, info, spec_cmd

COMMANDS = [info, spec_cmd, demo, compile_cmd]


def _optional_commands() -> list:
    """Subcommands whose modules other work streams add (formats); absent ones are simply not offered."""
    found = []
    for name in ("formats_cmd", "bench_cmd"):
        try:
            found.append(__import__(f"{__package__}.{name}", fromlist=["register"]))
        except ModuleNotFoundError as exc:
            if exc.name != f"{__package__}.{name}":
                raise
    return found


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="humming", description="Humming: quantized GEMM kernels for LLM inference")
    sub = parser.add_subparsers(dest="command", required=True)
    for module in COMMANDS + _optional_commands():
        module.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(level=ENV.HUMMING_LOG_LEVEL.upper(), format="%(levelname)s %(name)s: %(message)s")
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except (ValueError, KeyError, RuntimeError) as exc:
        print(f"humming {args.command}: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
