"""Malformed checkpoints: each error names the problem (tensor, file or config key) and the fix."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from formats_editing import copy_fixture, edit_json, edit_tensors, load_all
from safetensors.torch import load_file, save_file

from humming_core.formats import FormatError, open_checkpoint

LAYER = "model.layers.0.self_attn.k_proj"


def _edit_config(folder: Path, **changes) -> None:
    edit_json(folder / "config.json", lambda config: config["quantization_config"].update(changes))


def test_wrong_shape_names_tensor(tmp_path: Path) -> None:
    folder = copy_fixture("ct_w8a8_int", tmp_path)
    edit_tensors(
        folder, lambda t: t.update({f"{LAYER}.weight_scale": t[f"{LAYER}.weight_scale"][:-1]})
    )
    with pytest.raises(
        FormatError, match=rf"{LAYER}\.weight_scale.*shape \(127, 1\).*expected \(128, 1\)"
    ):
        load_all(folder)


def test_missing_tensor_names_it(tmp_path: Path) -> None:
    folder = copy_fixture("ct_w4a16_asym_sharded", tmp_path)
    index = json.loads((folder / "model.safetensors.index.json").read_text())
    shard = folder / index["weight_map"][f"{LAYER}.weight_zero_point"]
    tensors = load_file(str(shard))
    del tensors[f"{LAYER}.weight_zero_point"]
    save_file(tensors, str(shard))
    with pytest.raises(FormatError, match=rf"{LAYER}\.weight_zero_point.*missing"):
        load_all(folder)


def test_missing_shard_names_file(tmp_path: Path) -> None:
    folder = copy_fixture("ct_w4a16_asym_sharded", tmp_path)
    (folder / "model-00002-of-00002.safetensors").unlink()
    with pytest.raises(FormatError, match=r"model-00002-of-00002\.safetensors"):
        open_checkpoint(folder)


def test_unknown_quant_method(tmp_path: Path) -> None:
    folder = copy_fixture("gptq_w4_sym", tmp_path)
    _edit_config(folder, quant_method="superquant")
    with pytest.raises(FormatError, match=r"unknown quant_method 'superquant'.*gptq"):
        open_checkpoint(folder)


def test_unknown_compressed_tensors_format(tmp_path: Path) -> None:
    folder = copy_fixture("ct_w8a8_int", tmp_path)
    config = json.loads((folder / "config.json").read_text())
    config["quantization_config"]["config_groups"]["group_0"]["format"] = "sparse-24-bitmask"
    (folder / "config.json").write_text(json.dumps(config))
    with pytest.raises(FormatError, match="format 'sparse-24-bitmask' is not supported"):
        open_checkpoint(folder)


def test_inconsistent_bits(tmp_path: Path) -> None:
    folder = copy_fixture("gptq_w4_sym", tmp_path)
    _edit_config(folder, bits=8)
    with pytest.raises(FormatError, match=r"bits=8 and group_size=32.*does not match"):
        open_checkpoint(folder).layers()


def test_inconsistent_group_size(tmp_path: Path) -> None:
    folder = copy_fixture("awq_w4", tmp_path)
    _edit_config(folder, group_size=128)
    with pytest.raises(FormatError, match="group_size=128"):
        open_checkpoint(folder).layers()


def test_sym_with_asymmetric_zeros(tmp_path: Path) -> None:
    folder = copy_fixture("gptq_w4_asym", tmp_path)
    _edit_config(folder, sym=True)
    with pytest.raises(FormatError, match="sym=true but the zero points are not all 8"):
        load_all(folder)


def test_truncated_safetensors(tmp_path: Path) -> None:
    folder = copy_fixture("ct_w8a8_int", tmp_path)
    file = folder / "model.safetensors"
    data = file.read_bytes()
    file.write_bytes(data[: len(data) - 1000])
    with pytest.raises(FormatError, match="truncated"):
        open_checkpoint(folder)


def test_truncated_gguf(tmp_path: Path) -> None:
    folder = copy_fixture("gguf_slice", tmp_path)
    file = folder / "slice.gguf"
    data = file.read_bytes()
    file.write_bytes(data[: len(data) - 100])
    with pytest.raises(FormatError, match="truncated"):
        open_checkpoint(file)
    file.write_bytes(data[:40])
    with pytest.raises(FormatError, match="truncated GGUF header"):
        open_checkpoint(file)


def test_not_quantized(tmp_path: Path) -> None:
    save_file({"w": torch.zeros(2, 2)}, str(tmp_path / "model.safetensors"))
    (tmp_path / "config.json").write_text("{}")
    with pytest.raises(FormatError, match="no quantization config"):
        open_checkpoint(tmp_path)
