"""The canonical form meets the numerics: for every fixture of every format,
`humming_core.numerics.dequantize_weight(cw)` is the exact value rounded once to fp32 and, in the
producing tool's dtype, bit for bit the tool's own dequantization. Plus the semantics the new
readers put in the spec (gpt-oss interleaved SwiGLU, ModelOpt activation scales, e8m0 FP8 block
scales) and inspect/convert of an MoE checkpoint."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import torch
from formats_oracle import FIXTURES, exact_dequant, reference, sha256_of
from safetensors.torch import load_file, save_file

from humming_core.formats import open_checkpoint
from humming_core.formats.inspect import convert_checkpoint, inspect_checkpoint
from humming_core.numerics import apply_epilogue, dequantize_weight

FIXTURE_NAMES = sorted(p.name for p in FIXTURES.iterdir() if (p / "reference.json").exists())
ROUNDING = {"ct_nvfp4"}  # its reciprocal global scale needs the opt-in
# ModelOpt's NVFP4 dequantization rounds s·g before the product (see formats_oracle); the exact
# value rounded once is what dequantize_weight returns, checked against exact_dequant instead.
TOOL_ORDER = {"modelopt_nvfp4"}
EXPERTS = "model.layers.0.mlp.experts"


def _open(name: str):
    folder = FIXTURES / name
    gguf = sorted(folder.glob("*.gguf"))
    return open_checkpoint(gguf[0] if gguf else folder, allow_rounding=name in ROUNDING)


@pytest.mark.parametrize("name", FIXTURE_NAMES)
def test_dequantize_weight_equals_tool(name: str) -> None:
    meta, _ = reference(name)
    fmt = _open(name)
    for layer, entry in meta["layers"].items():
        cw = fmt.load(layer)
        got = dequantize_weight(cw)
        assert got.dtype == torch.float32
        assert torch.equal(got, exact_dequant(cw).to(torch.float32)), f"{layer}: not exact"
        if name not in TOOL_ORDER:
            as_tool = got.to(getattr(torch, entry["dtype"])) + 0.0
            assert sha256_of(as_tool) == entry["sha256"], f"{layer}: differs from {meta['tool']}"


def _gpt_oss_glu(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor, limit: float) -> torch.Tensor:
    """transformers GptOssExperts: gate_up = x @ W^T + b, gate = [..., ::2], up = [..., 1::2]."""
    gate_up = x @ w.t() + b
    gate, up = gate_up[..., ::2], gate_up[..., 1::2]
    gate, up = gate.clamp(max=limit), up.clamp(-limit, limit)
    return (up + 1) * gate * torch.sigmoid(gate * 1.702)


def test_gpt_oss_interleaved_swiglu() -> None:
    """The spec's epilogue (interleaved, swiglu_oai) computes gpt-oss's expert GLU on the
    canonical weights, which keep the checkpoint's gate/up row interleaving."""
    fmt = open_checkpoint(FIXTURES / "gpt_oss_mxfp4")
    cw = fmt.load(f"{EXPERTS}.gate_up_proj")
    epi = cw.spec.epilogue
    assert (epi.glu, epi.glu_layout, epi.bias, cw.spec.layout) == (
        "swiglu_oai",
        "interleaved",
        True,
        "moe",
    )
    assert fmt.layer(f"{EXPERTS}.down_proj").spec.epilogue.topk_weight
    w = dequantize_weight(cw)
    x = torch.randn(5, cw.k, generator=torch.Generator().manual_seed(0)) * 30
    for e in range(cw.num_experts):
        bias = cw.bias[e].float()
        got = apply_epilogue(x @ w[e].t(), epi, bias=bias)
        want = _gpt_oss_glu(x, w[e], bias, epi.swiglu_limit)
        torch.testing.assert_close(got, want, rtol=0, atol=0)


def test_gpt_oss_inspect_and_convert(tmp_path: Path) -> None:
    report = inspect_checkpoint(FIXTURES / "gpt_oss_mxfp4")
    assert report.format == "gpt-oss-mxfp4"
    assert {layer.experts for layer in report.layers} == {4}
    assert report.bits_per_weight == pytest.approx(4 + 8 / 32, rel=1e-3)  # e2m1 + one e8m0 per 32
    fmt = open_checkpoint(FIXTURES / "gpt_oss_mxfp4")
    owned = [t for t in fmt.plain_tensors() if t.endswith(("_blocks", "_scales", "_bias"))]
    assert not owned, f"expert tensors listed as plain: {owned}"
    out = convert_checkpoint(FIXTURES / "gpt_oss_mxfp4", tmp_path / "out", progress=False)
    tensors = load_file(str(out / "model.safetensors"))
    manifest = json.loads((out / "humming.json").read_text())["layers"]
    name = f"{EXPERTS}.gate_up_proj"
    assert manifest[name]["n"] == 128 and manifest[name]["k"] == 128
    assert tensors[f"{name}.qweight"].shape == (4, 128, 16)
    assert tensors[f"{name}.scales"].dtype == torch.uint8
    assert tensors[f"{name}.bias"].shape == (4, 128)


def test_modelopt_activation_scales() -> None:
    """NVFP4 (W4A4) and FP8 keep ModelOpt's static fp32 input_scale; MXFP8 has none."""
    layer = "model.layers.0.self_attn.q_proj"
    for name, act, has_input in (
        ("modelopt_nvfp4", "e2m1", True),
        ("modelopt_fp8", "e4m3", True),
        ("modelopt_mxfp8", "e4m3", False),
    ):
        fmt = open_checkpoint(FIXTURES / name)
        assert fmt.layer(layer).spec.act.dtype.name == act
        extras = fmt.extras(layer)
        assert ("input_scale" in extras) == has_input
        if has_input:
            assert (
                extras["input_scale"].dtype == torch.float32 and extras["input_scale"].numel() == 1
            )


def test_fp8_block_e8m0_scales(tmp_path: Path) -> None:
    """DeepSeek-V3.1-style ue8m0 scales stored as raw e8m0 bytes become exact fp32 powers of two."""
    folder = tmp_path / "ue8m0"
    shutil.copytree(FIXTURES / "hf_fp8_block", folder)
    file = folder / "model.safetensors"
    tensors = load_file(str(file))
    layer = "model.layers.0.self_attn.k_proj"
    stored = tensors[f"{layer}.weight_scale_inv"]
    codes = (torch.log2(stored).round() + 127).to(torch.uint8)
    tensors[f"{layer}.weight_scale_inv"] = codes.view(torch.float8_e8m0fnu)
    save_file(tensors, str(file))
    cw = open_checkpoint(folder).load(layer)
    assert cw.scales.dtype == torch.float32
    assert torch.equal(cw.scales, torch.exp2(codes.double() - 127).float())
