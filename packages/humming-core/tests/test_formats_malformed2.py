"""Malformed ModelOpt, HF FP8 block and gpt-oss MXFP4 checkpoints: each error names the problem
(tensor, config key) and what was expected."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from formats_editing import copy_fixture, edit_json, edit_tensors, load_all

from humming_core.formats import FormatError, open_checkpoint

LAYER = "model.layers.0.self_attn.k_proj"
EXPERTS = "model.layers.0.mlp.experts"


# ---- ModelOpt ----------------------------------------------------------------------------------
def test_modelopt_nvfp4_wrong_scale_shape(tmp_path: Path) -> None:
    folder = copy_fixture("modelopt_nvfp4", tmp_path)
    key = f"{LAYER}.weight_scale"
    edit_tensors(folder, lambda t: t.update({key: t[key][:, :-1].contiguous()}))
    with pytest.raises(FormatError, match=rf"{key}.*shape \(128, 7\).*expected \(128, 8\)"):
        load_all(folder)


def test_modelopt_nvfp4_missing_global_scale(tmp_path: Path) -> None:
    folder = copy_fixture("modelopt_nvfp4", tmp_path)
    edit_tensors(folder, lambda t: t.pop(f"{LAYER}.weight_scale_2"))
    with pytest.raises(FormatError, match=rf"{LAYER}\.weight_scale_2.*missing"):
        load_all(folder)


def test_modelopt_nvfp4_per_shard_global_scale_rejected(tmp_path: Path) -> None:
    folder = copy_fixture("modelopt_nvfp4", tmp_path)
    key = f"{LAYER}.weight_scale_2"
    edit_tensors(folder, lambda t: t.update({key: t[key].reshape(1).repeat(2)}))
    with pytest.raises(FormatError, match=rf"{key}.*shape \(2,\).*scalar"):
        load_all(folder)


def test_modelopt_inconsistent_group_size(tmp_path: Path) -> None:
    folder = copy_fixture("modelopt_nvfp4", tmp_path)

    def edit(config: dict) -> None:
        config["quantization_config"]["config_groups"]["group_0"]["weights"]["group_size"] = 32

    edit_json(folder / "config.json", edit)
    with pytest.raises(FormatError, match=r"NVFP4 with group_size=32.*one scale per 16"):
        open_checkpoint(folder)


def test_modelopt_unknown_algo(tmp_path: Path) -> None:
    folder = copy_fixture("modelopt_mxfp8", tmp_path)
    edit_json(
        folder / "config.json", lambda c: c["quantization_config"].update(quant_algo="INT4_AWQ")
    )
    with pytest.raises(FormatError, match=r"quant_algo 'INT4_AWQ'.*NVFP4, W4A16_NVFP4, MXFP8, FP8"):
        open_checkpoint(folder)


def test_modelopt_hf_quant_config_only(tmp_path: Path) -> None:
    """Older exports put the config only in hf_quant_config.json; its group_size is checked too."""
    folder = copy_fixture("modelopt_mxfp8", tmp_path)
    edit_json(folder / "config.json", lambda c: c.pop("quantization_config"))
    fmt = open_checkpoint(folder)
    assert fmt.name == "modelopt" and fmt.layer(LAYER).spec.weight.scale.dtype.name == "e8m0"
    edit_json(folder / "hf_quant_config.json", lambda c: c["quantization"].update(group_size=16))
    with pytest.raises(FormatError, match=r"MXFP8 with group_size=16"):
        open_checkpoint(folder)


def test_modelopt_mxfp8_scale_dtype(tmp_path: Path) -> None:
    folder = copy_fixture("modelopt_mxfp8", tmp_path)
    key = f"{LAYER}.weight_scale"
    edit_tensors(folder, lambda t: t.update({key: t[key].to(torch.float32)}))
    with pytest.raises(FormatError, match=rf"{key}.*dtype torch.float32.*torch.uint8"):
        load_all(folder)


# ---- HF FP8 block ------------------------------------------------------------------------------
def test_fp8_block_inconsistent_block_size(tmp_path: Path) -> None:
    folder = copy_fixture("hf_fp8_block", tmp_path)
    edit_json(
        folder / "config.json",
        lambda c: c["quantization_config"].update(weight_block_size=[64, 128]),
    )
    with pytest.raises(FormatError, match=r"weight_scale_inv.*shape \(1, \d\).*expected \(2, \d\)"):
        load_all(folder)


def test_fp8_block_missing_weight(tmp_path: Path) -> None:
    folder = copy_fixture("hf_fp8_block", tmp_path)
    edit_tensors(folder, lambda t: t.pop(f"{LAYER}.weight"))
    with pytest.raises(FormatError, match=rf"{LAYER}\.weight.*missing"):
        load_all(folder)


def test_fp8_block_wrong_weight_dtype(tmp_path: Path) -> None:
    folder = copy_fixture("hf_fp8_block", tmp_path)
    key = f"{LAYER}.weight"
    edit_tensors(folder, lambda t: t.update({key: t[key].to(torch.bfloat16)}))
    with pytest.raises(FormatError, match=rf"{key}.*dtype torch.bfloat16.*float8_e4m3fn"):
        load_all(folder)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"weight_block_size": None}, "without weight_block_size"),
        ({"activation_scheme": "static"}, "activation_scheme 'static'"),
        ({"weight_block_size": [96, 128]}, r"block\[0\] \(rows of N\)=96"),
    ],
)
def test_fp8_block_bad_config(tmp_path: Path, change: dict, message: str) -> None:
    folder = copy_fixture("hf_fp8_block", tmp_path)
    edit_json(folder / "config.json", lambda c: c["quantization_config"].update(change))
    with pytest.raises(FormatError, match=message):
        open_checkpoint(folder).layers()


# ---- gpt-oss MXFP4 -----------------------------------------------------------------------------
def test_gpt_oss_wrong_block_shape(tmp_path: Path) -> None:
    folder = copy_fixture("gpt_oss_mxfp4", tmp_path)
    key = f"{EXPERTS}.down_proj_blocks"
    edit_tensors(folder, lambda t: t.update({key: t[key].reshape(4, 128, 4, 8)}))
    with pytest.raises(FormatError, match=rf"{key}.*\(4, 128, 4, 8\).*\(experts, N, K/32, 16\)"):
        open_checkpoint(folder).layers()


def test_gpt_oss_inconsistent_scales(tmp_path: Path) -> None:
    folder = copy_fixture("gpt_oss_mxfp4", tmp_path)
    key = f"{EXPERTS}.gate_up_proj_scales"
    edit_tensors(folder, lambda t: t.update({key: t[key][..., :-1].contiguous()}))
    with pytest.raises(FormatError, match=rf"{key}.*shape \(4, 128, 3\).*expected \(4, 128, 4\)"):
        load_all(folder)


def test_gpt_oss_missing_scales(tmp_path: Path) -> None:
    folder = copy_fixture("gpt_oss_mxfp4", tmp_path)
    edit_tensors(folder, lambda t: t.pop(f"{EXPERTS}.down_proj_scales"))
    with pytest.raises(FormatError, match=rf"{EXPERTS}\.down_proj_scales.*missing"):
        load_all(folder)


def test_gpt_oss_wrong_bias_shape(tmp_path: Path) -> None:
    folder = copy_fixture("gpt_oss_mxfp4", tmp_path)
    key = f"{EXPERTS}.down_proj_bias"
    edit_tensors(folder, lambda t: t.update({key: t[key][:, :64].contiguous()}))
    with pytest.raises(FormatError, match=rf"{key}.*shape \(4, 64\).*expected \(4, 128\)"):
        load_all(folder)
