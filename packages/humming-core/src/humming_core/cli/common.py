"""Helpers shared by CLI subcommands."""

from __future__ import annotations

import json
from pathlib import Path

from rich.console import Console

from ..spec import QuantSpec, preset

console = Console()


def load_spec(text: str) -> QuantSpec:
    """A preset name, a JSON string, or a path to a JSON file."""
    stripped = text.strip()
    if stripped.startswith("{"):
        return QuantSpec.model_validate(json.loads(stripped))
    path = Path(stripped)
    if path.suffix == ".json" and path.exists():
        return QuantSpec.from_json(path.read_text())
    return preset(stripped)


def human_bytes(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.1f} {unit}" if unit != "B" else f"{int(n)} B"
        n /= 1024
    raise AssertionError("unreachable")
