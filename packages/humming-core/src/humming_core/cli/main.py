"""`humming` entry point: one subcommand per module in this package."""

from __future__ import annotations

import argparse
import logging
import sys
from importlib.metadata import entry_points

from ..env import ENV
from . import compile_cmd, demo, formats_cmd, info, spec_cmd

COMMANDS = [info, spec_cmd, demo, compile_cmd, formats_cmd]


def _plugin_commands() -> list:
    """Subcommands device packages add through the `humming.cli` entry-point group (e.g. `bench`).

    Each entry point names a module with `register(subparsers)`; one that fails to import is
    logged and left out, like a broken device plugin.
    """
    found = []
    for ep in entry_points(group="humming.cli"):
        try:
            found.append(ep.load())
        except Exception as exc:
            logging.getLogger("humming_core.cli").warning(
                "humming command %r unavailable: %s", ep.name, exc
            )
    return found


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="humming", description="Humming: quantized GEMM kernels for LLM inference"
    )
    sub = parser.add_subparsers(dest="command", required=True)
    for module in COMMANDS + _plugin_commands():
        module.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(
        level=ENV.HUMMING_LOG_LEVEL.upper(), format="%(levelname)s %(name)s: %(message)s"
    )
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except (ValueError, KeyError, RuntimeError) as exc:
        print(f"humming {args.command}: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
