"""inspect/convert, act-order permutation semantics, on committed fixtures."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import torch
from formats_oracle import FIXTURES, exact_dequant
from safetensors.torch import load_file, save_file

from humming_core.formats import FormatError, open_checkpoint
from humming_core.formats.inspect import convert_checkpoint, format_report, inspect_checkpoint
from humming_core.packing import CanonicalWeight
from humming_core.packing.bits import pack_k, unpack_k
from humming_core.spec import QuantSpec

LAYER = "model.layers.0.self_attn.k_proj"


def test_inspect_reports_format_and_bits() -> None:
    report = inspect_checkpoint(FIXTURES / "ct_w4a16_asym_sharded")
    assert report.format == "compressed-tensors" and len(report.layers) == 7
    # 4-bit codes + bf16 scale and 4-bit zero per group of 128: 4 + 16/128 + 4/128
    assert report.bits_per_weight == pytest.approx(4 + 20 / 128)
    assert "uint4" in format_report(report)


def test_convert_round_trips(tmp_path: Path) -> None:
    out = convert_checkpoint(FIXTURES / "gptq_w4_asym", tmp_path / "out", progress=False)
    manifest = json.loads((out / "humming.json").read_text())
    tensors = load_file(str(out / "model.safetensors"))
    fmt = open_checkpoint(FIXTURES / "gptq_w4_asym")
    for name, entry in manifest["layers"].items():
        spec = QuantSpec.model_validate(entry["spec"])
        cw = CanonicalWeight(
            spec,
            entry["n"],
            entry["k"],
            tensors[f"{name}.qweight"],
            tensors[f"{name}.scales"],
            tensors.get(f"{name}.zeros"),
        )
        assert torch.equal(exact_dequant(cw), exact_dequant(fmt.load(name)))


def test_desc_act_permutation(tmp_path: Path) -> None:
    """A GPTQ act-order checkpoint, built from a real one by moving K rows: group g_idx[k] of
    column k. The canonical weight is the dense weight with K reordered by k_permutation."""
    folder = tmp_path / "descact"
    shutil.copytree(FIXTURES / "gptq_w4_sym", folder)
    tensors = load_file(str(folder / "model.safetensors"))
    k, g = 128, 32
    p = torch.randperm(k, generator=torch.Generator().manual_seed(0))  # stored row p[j] <- row j
    codes = unpack_k(tensors[f"{LAYER}.qweight"].t().contiguous(), 4, k)  # (N, K)
    moved = torch.empty_like(codes)
    moved[:, p] = codes
    tensors[f"{LAYER}.qweight"] = pack_k(moved, 4).t().contiguous()
    g_idx = torch.empty(k, dtype=torch.int32)
    g_idx[p] = (torch.arange(k) // g).to(torch.int32)
    tensors[f"{LAYER}.g_idx"] = g_idx
    save_file(tensors, str(folder / "model.safetensors"))
    config = json.loads((folder / "config.json").read_text())
    config["quantization_config"]["desc_act"] = True
    (folder / "config.json").write_text(json.dumps(config))

    original = exact_dequant(open_checkpoint(FIXTURES / "gptq_w4_sym").load(LAYER))  # (N, K) sorted
    fmt = open_checkpoint(folder)
    perm = fmt.k_permutation(LAYER)
    dense = torch.empty_like(original)
    dense[:, p] = original  # the act-order checkpoint's weight in input-channel order
    assert torch.equal(exact_dequant(fmt.load(LAYER)), dense[:, perm])
    x = torch.randn(3, k, dtype=torch.float64)
    assert torch.allclose(x[:, perm] @ exact_dequant(fmt.load(LAYER)).t(), x @ dense.t())


QKV = [f"model.layers.0.self_attn.{p}_proj" for p in "qkv"]


@pytest.mark.parametrize("name", ["ct_fp8_tensor", "ct_nvfp4", "gptq_w4_asym", "gguf_slice"])
def test_fused_shards_are_exact(name: str) -> None:
    from humming_core.formats.fuse import fuse_shards

    if name == "gguf_slice":
        fmt = open_checkpoint(FIXTURES / name / "slice.gguf")
        layers = ["blk.0.attn_output", "blk.0.attn_output"]
    else:
        fmt = open_checkpoint(FIXTURES / name, allow_rounding=True)
        layers = QKV
    shards = [fmt.load(layer) for layer in layers]
    fused = fuse_shards(shards)
    assert torch.equal(exact_dequant(fused), torch.cat([exact_dequant(s) for s in shards]))
    if name == "ct_fp8_tensor":  # different per-tensor scales became per-channel ones
        assert len({s.scales.item() for s in shards}) > 1
        assert fused.spec.weight.scale.granularity == "channel"


def test_fuse_folds_different_global_scales_when_exact() -> None:
    from dataclasses import replace

    from humming_core.formats.fuse import fuse_shards

    fmt = open_checkpoint(FIXTURES / "ct_nvfp4", allow_rounding=True)
    q, k = fmt.load(QKV[0]), fmt.load(QKV[1])
    with pytest.raises(FormatError, match="separate GEMMs"):  # fp32(1/x) * ue4m3 rounds
        fuse_shards([q, replace(k, global_scale=torch.tensor([0.5]))])
    # powers of two: ue4m3 * 2^e is exact in fp32
    q2, k2 = (
        replace(q, global_scale=torch.tensor([0.25])),
        replace(k, global_scale=torch.tensor([0.5])),
    )
    fused = fuse_shards([q2, k2])
    assert not fused.spec.weight.global_scale and fused.spec.weight.scale.dtype.name == "fp32"
    assert torch.equal(exact_dequant(fused), torch.cat([exact_dequant(q2), exact_dequant(k2)]))
