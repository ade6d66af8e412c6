"""Helpers for the malformed-checkpoint tests: copy a fixture, then break one thing in the copy."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from formats_oracle import FIXTURES
from safetensors.torch import load_file, save_file

from humming_core.formats import open_checkpoint


def copy_fixture(name: str, tmp_path: Path) -> Path:
    if not (FIXTURES / name).exists():
        pytest.skip(f"fixture {name} was not generated")
    out = tmp_path / name
    shutil.copytree(FIXTURES / name, out)
    return out


def edit_tensors(folder: Path, edit) -> None:
    """Apply `edit(tensors)` to the folder's model.safetensors in place."""
    file = folder / "model.safetensors"
    tensors = load_file(str(file))
    edit(tensors)
    save_file(tensors, str(file))


def edit_json(file: Path, edit) -> None:
    data = json.loads(file.read_text())
    edit(data)
    file.write_text(json.dumps(data))


def load_all(folder: Path, **kw) -> None:
    """Open the checkpoint and load every layer (where malformed input must raise)."""
    fmt = open_checkpoint(folder, **kw)
    for layer in fmt.layers():
        fmt.load(layer.name)
