"""Every committed fixture (made by the real producing tool, scripts/make_format_fixtures.py) reads
to canonical weights whose exact value, rounded once to the tool's output dtype, is bit for bit the
tool's own dequantization of the same checkpoint (compared by SHA-256, first rows by value)."""

from __future__ import annotations

import pytest
import torch
from formats_oracle import FIXTURES, exact_dequant, reference, scale_product_first, sha256_of

from humming_core.formats import FormatError, open_checkpoint

FIXTURE_NAMES = sorted(p.name for p in FIXTURES.iterdir() if (p / "reference.json").exists())
# Readers that need the opt-in: compressed-tensors NVFP4 stores its global scale as a divisor.
ROUNDING = {"ct_nvfp4"}
# Tools whose output is the fp32 product (e4m3 code times an fp32 scale, or e2m1 · ue4m3 · fp32
# global): the exact value is not an fp32 number, and the tool's value is its one rounding to fp32.
FP32_PRODUCT = {"hf_fp8_block", "modelopt_fp8"}
# Tools that round in another order than the exact value's one rounding (see the oracle function).
TOOL_ORDER = {"modelopt_nvfp4": scale_product_first}
# fixture -> {layer suffix: (weight dtype, scale granularity, zero point, act dtype)}
EXPECTED_SPECS = {
    "ct_gptq_actorder": {
        "k_proj": ("int4", "group", "none", "bf16"),
        "down_proj": ("uint4", "group", "int", "bf16"),
    },
    "ct_w4a16_asym_sharded": {"q_proj": ("uint4", "group", "int", "bf16")},
    "ct_w8a8_int": {"q_proj": ("int8", "channel", "none", "int8")},
    "ct_fp8_channel": {"q_proj": ("e4m3", "channel", "none", "e4m3")},
    "ct_fp8_tensor": {"q_proj": ("e4m3", "tensor", "none", "e4m3")},
    "ct_fp8_block": {"q_proj": ("e4m3", "block", "none", "e4m3")},
    "ct_nvfp4": {"q_proj": ("e2m1", "group", "none", "e2m1")},
    "ct_mxfp4": {"q_proj": ("e2m1", "group", "none", "bf16")},
    "gptq_w4_sym": {"q_proj": ("int4", "group", "none", "fp16")},
    "gptq_w4_asym": {"q_proj": ("uint4", "group", "int", "fp16")},
    "gptq_w3_g128": {"q_proj": ("int3", "group", "none", "fp16")},
    "gptq_w2_asym": {
        "q_proj": ("uint2", "group", "int", "fp16"),
        "gate_proj": ("uint2", "group", "float", "fp16"),
    },
    "gptq_w8_sym": {"q_proj": ("int8", "group", "none", "fp16")},
    "awq_w4": {"q_proj": ("uint4", "group", "int", "fp16")},
    "modelopt_nvfp4": {"q_proj": ("e2m1", "group", "none", "e2m1")},
    "modelopt_mxfp8": {"q_proj": ("e4m3", "group", "none", "e4m3")},
    "modelopt_fp8": {"q_proj": ("e4m3", "tensor", "none", "e4m3")},
    "hf_fp8_block": {"q_proj": ("e4m3", "block", "none", "e4m3")},
    "gpt_oss_mxfp4": {
        "gate_up_proj": ("e2m1", "group", "none", "bf16"),
        "down_proj": ("e2m1", "group", "none", "bf16"),
    },
    "gguf_slice": {
        "attn_q": ("int4", "group", "none", "fp16"),
        "attn_output": ("uint4", "group", "float", "fp16"),
        "ffn_down": ("int6", "group", "none", "fp16"),
        "attn_k": ("int5", "group", "none", "fp16"),
        "attn_v": ("int8", "group", "none", "fp16"),
    },
}


def _open(name: str):
    folder = FIXTURES / name
    gguf = sorted(folder.glob("*.gguf"))
    return open_checkpoint(gguf[0] if gguf else folder, allow_rounding=name in ROUNDING)


@pytest.mark.parametrize("name", FIXTURE_NAMES)
def test_dequantized_equals_producer(name: str) -> None:
    meta, rows = reference(name)
    fmt = _open(name)
    assert sorted(layer.name for layer in fmt.layers()) == sorted(meta["layers"])
    for layer, entry in meta["layers"].items():
        cw = fmt.load(layer)
        assert [cw.num_experts] * cw.is_moe + [cw.n, cw.k] == entry["shape"]
        exact = exact_dequant(cw)
        # Every value here is exact in fp32 (checked), so fp32 -> tool dtype is the single rounding.
        as32 = exact.to(torch.float32)
        if name in TOOL_ORDER:
            as32 = TOOL_ORDER[name](cw)
            # The tool's rounding order moves a value by at most one fp32 ulp from the exact one.
            assert torch.all((as32.to(torch.float64) - exact).abs() <= exact.abs() * 2**-23)
        elif name not in ROUNDING | FP32_PRODUCT:
            assert torch.equal(as32.to(torch.float64), exact), f"{layer}: value not exact in fp32"
        got = as32.to(getattr(torch, entry["dtype"])) + 0.0
        first = got[..., :4, :].to(torch.float32)
        assert torch.equal(first, rows[layer]), f"{layer}: first rows differ"
        assert sha256_of(got) == entry["sha256"], f"{layer}: differs from {meta['tool']}"


@pytest.mark.parametrize("name", sorted(EXPECTED_SPECS))
def test_specs(name: str) -> None:
    if name not in FIXTURE_NAMES:
        pytest.skip(f"fixture {name} was not generated")
    layers = {layer.name: layer for layer in _open(name).layers()}
    for suffix, (dtype, granularity, zero, act) in EXPECTED_SPECS[name].items():
        layer = next(v for k, v in layers.items() if k.endswith(suffix))
        w = layer.spec.weight
        assert (w.dtype.name, w.scale.granularity, w.zero_point, layer.spec.act.dtype.name) == (
            dtype,
            granularity,
            zero,
            act,
        )


def test_config_groups_and_ignore() -> None:
    """Two config groups (regex targets) and an ignored layer (its `re:` pattern resolved by the tool)."""
    fmt = _open("ct_gptq_actorder")
    names = {layer.name.rsplit(".", 1)[-1]: layer for layer in fmt.layers()}
    assert "o_proj" not in names
    assert names["q_proj"].spec.weight.scale.group_size == 32
    assert names["gate_proj"].spec.weight.scale.group_size == 64


def test_sharded_index_is_read_lazily() -> None:
    fmt = _open("ct_w4a16_asym_sharded")
    files = {info.file.name for info in fmt.tensors.infos.values()}
    assert len(files) == 2
    assert len(fmt.layers()) == 7


def test_nvfp4_reciprocal_needs_opt_in() -> None:
    with pytest.raises(FormatError, match="allow_rounding"):
        fmt = open_checkpoint(FIXTURES / "ct_nvfp4")
        fmt.load(fmt.layers()[0].name)
    fmt = open_checkpoint(FIXTURES / "ct_nvfp4", allow_rounding=True)
    cw = fmt.load("model.layers.0.self_attn.k_proj")
    stored = fmt.tensors.get("model.layers.0.self_attn.k_proj.weight_global_scale")
    assert cw.global_scale.item() == pytest.approx(1 / stored.item(), rel=2**-24)
