"""vLLM-free core: parameters and conversion of the N-major schemes and the MoE schemes."""

from __future__ import annotations

import pytest
import torch
from fmt_ckpt import make_fp8_tensor, make_nvfp4

from humming_core.numerics import dequantize_weight
from humming_vllm.layout import Partition
from humming_vllm.moe_scheme import ExpertScheme, GptOssScheme, MoeShape
from humming_vllm.plan import QuantPlan, UnsupportedConfig

FP8_TENSOR = {
    "quant_method": "compressed-tensors",
    "format": "float-quantized",
    "config_groups": {
        "g": {
            "targets": ["Linear"],
            "weights": {"num_bits": 8, "type": "float", "strategy": "tensor"},
            "input_activations": {
                "num_bits": 8,
                "type": "float",
                "strategy": "tensor",
                "dynamic": False,
            },
        }
    },
}


def _scheme(cfg):
    return QuantPlan.from_hf(cfg).groups[0][1]


def test_per_tensor_scales_are_one_per_fused_shard_and_fuse_exactly():
    scheme = _scheme(FP8_TENSOR)
    part = Partition(k=64, n_parts=(32, 16), k_full=64)
    defs = {d.name: d for d in scheme.params(part, torch.bfloat16)}
    assert defs["weight_scale"].shape == (2,) and defs["weight_scale"].kind == "per_tensor"
    assert defs["input_scale"].shape == (2,)
    shards = [make_fp8_tensor(32, 64, 1, 0), make_fp8_tensor(16, 64, 2, 1)]
    fused = {
        name: torch.cat([t[name] for t, _ in shards]) if name != "weight" else None for name in defs
    }
    fused["weight"] = torch.cat([t["weight"] for t, _ in shards])
    loaded = scheme.to_canonical(fused, part, torch.bfloat16)
    dense = torch.cat([d for _, d in shards])
    assert torch.equal(dequantize_weight(loaded.weight), dense)
    assert float(loaded.act_scale) == max(float(t["input_scale"]) for t, _ in shards)


def test_nvfp4_global_scales_per_shard_fold_exactly():
    cfg = {
        "quant_method": "modelopt",
        "quant_algo": "W4A16_NVFP4",
        "group_size": 16,
    }
    scheme = _scheme(cfg)
    part = Partition(k=64, n_parts=(16, 16), k_full=64)
    shards = [make_nvfp4(16, 64, s, s, modelopt=True) for s in (0, 1)]
    tensors = {
        name: torch.cat([t[name] for t, _ in shards])
        for name in ("weight", "weight_scale", "weight_scale_2")
    }
    loaded = scheme.to_canonical(tensors, part, torch.bfloat16)
    assert loaded.act_scale is None
    assert torch.equal(dequantize_weight(loaded.weight), torch.cat([d for _, d in shards]))


def test_block_scales_need_block_aligned_shards_per_rank():
    scheme = _scheme(
        {"quant_method": "fp8", "weight_block_size": [128, 128], "activation_scheme": "dynamic"}
    )
    ok = {d.name: d for d in scheme.params(Partition(256, (128, 256), 256), torch.bfloat16)}
    assert ok["weight_scale_inv"].shape == (3, 2) and ok["weight_scale_inv"].kind == "block"
    with pytest.raises(ValueError, match="multiple of that many rows"):
        scheme.params(Partition(256, (64, 64), 256), torch.bfloat16)
    with pytest.raises(ValueError, match="not a multiple of 128"):
        scheme.params(Partition(64, (128,), 256), torch.bfloat16)


@pytest.mark.parametrize(
    "bad",
    [
        {"quant_method": "fp8", "activation_scheme": "static"},
        {**FP8_TENSOR, "format": "marlin-24"},
        {"quant_method": "modelopt", "quant_algo": "MIXED_PRECISION"},
    ],
)
def test_unserved_configs_say_why(bad):
    with pytest.raises((UnsupportedConfig, ValueError)):
        scheme = _scheme(bad)
        scheme.params(Partition(64, (64,), 64), torch.bfloat16)


def test_expert_params_mirror_the_dense_scheme_with_an_expert_dim():
    scheme = ExpertScheme(_scheme({"quant_method": "gptq", "bits": 4, "group_size": 32}))
    shape = MoeShape(4, 128, 32, 128, torch.float16, "silu")
    params = {p.name: p for p in scheme.params(shape)}
    assert params["w13_qweight"].shape == (4, 16, 64) and params["w13_qweight"].is_transposed
    assert params["w2_scales"].shape == (4, 1, 128) and params["w2_scales"].quant_method == "group"
    with pytest.raises(ValueError, match="activation"):
        scheme.params(MoeShape(4, 128, 32, 128, torch.float16, "relu2_no_mul"))


def test_gpt_oss_params_and_activation_check():
    shape = MoeShape(2, 64, 32, 64, torch.bfloat16, "swigluoai", 7.0)
    params = {p.name: p.shape for p in GptOssScheme().params(shape)}
    assert params["w13_weight"] == (2, 64, 32) and params["w2_weight_scale"] == (2, 64, 1)
    with pytest.raises(ValueError, match="swigluoai"):
        GptOssScheme().params(MoeShape(2, 64, 32, 64, torch.bfloat16, "silu"))
