"""vLLM-free core: config mapping, layer selection, per-rank parameter shapes, act-order regrouping."""

from __future__ import annotations

import pytest
import torch

from humming_vllm.layout import Partition, regroup_act_order
from humming_vllm.plan import QuantPlan, UnsupportedConfig, should_claim

GPTQ = {"quant_method": "gptq", "bits": 4, "group_size": 128, "sym": True, "desc_act": False}


def _ct(**weights):
    w = {
        "num_bits": 4,
        "type": "int",
        "symmetric": True,
        "strategy": "group",
        "group_size": 128,
        **weights,
    }
    return {
        "quant_method": "compressed-tensors",
        "format": "pack-quantized",
        "config_groups": {
            "g0": {"targets": ["Linear"], "weights": w},
            "g1": {"targets": ["re:.*down_proj"], "weights": {**w, "num_bits": 8}},
        },
        "ignore": ["lm_head", "re:.*\\.mlp\\.gate$"],
    }


def test_gptq_modules_to_not_convert_and_fused_shards():
    plan = QuantPlan.from_hf({**GPTQ, "modules_to_not_convert": ["visual", "k_proj"]})
    assert plan.scheme_for("model.layers.0.mlp.down_proj").bits == 4
    assert plan.scheme_for("visual.blocks.0.qkv") is None
    with pytest.raises(UnsupportedConfig, match="quantized differently"):
        plan.scheme_for("model.layers.0.self_attn.qkv_proj", ["q_proj", "k_proj", "v_proj"])


def test_compressed_tensors_specific_target_beats_linear_and_ignore_wins():
    plan = QuantPlan.from_hf(_ct())
    assert plan.scheme_for("model.layers.3.mlp.down_proj").bits == 8
    assert plan.scheme_for("model.layers.3.mlp.gate_up_proj", ["gate_proj", "up_proj"]).bits == 4
    assert plan.scheme_for("model.layers.3.mlp.gate") is None
    assert plan.scheme_for("lm_head") is None


@pytest.mark.parametrize(
    "bad",
    [
        {**GPTQ, "bits": 5},
        {**GPTQ, "dynamic": {"-:.*": {}}},
        {"quant_method": "awq", "bits": 3},
        _ct(type="float"),
    ],
)
def test_unsupported_configs_say_why(bad):
    with pytest.raises(UnsupportedConfig):
        QuantPlan.from_hf(bad)


def test_claim_reasons():
    wanted = ("low_bits", "asymmetric", "act_order")
    assert not should_claim(GPTQ, wanted)
    assert should_claim({**GPTQ, "bits": 2}, wanted)
    assert should_claim({**GPTQ, "desc_act": True}, wanted)
    assert not should_claim({**GPTQ, "desc_act": True}, ("low_bits",))
    assert not should_claim({**GPTQ, "bits": 5}, wanted)  # cannot serve it: never claim


def test_gptq_params_under_row_parallel_act_order_keep_all_groups():
    scheme = QuantPlan.from_hf({**GPTQ, "bits": 3, "sym": False, "desc_act": True}).groups[0][1]
    part = Partition(k=512, n_parts=(256,), k_full=2048)  # rank of TP 4
    shapes = {d.name: (d.shape, d.input_dim) for d in scheme.params(part, torch.float16)}
    assert shapes["qweight"] == ((512 * 3 // 32, 256), 0)
    assert shapes["scales"] == ((16, 256), None)  # every group, whole along K
    assert shapes["qzeros"] == ((16, 256 * 3 // 32), None)
    assert shapes["g_idx"] == ((512,), 0)


def test_group_scales_shard_with_k_and_misaligned_k_is_refused():
    scheme = QuantPlan.from_hf(GPTQ).groups[0][1]
    part = Partition(k=512, n_parts=(128, 128), k_full=2048)
    shapes = {d.name: (d.shape, d.input_dim) for d in scheme.params(part, torch.float16)}
    assert shapes["scales"] == ((4, 256), 0)
    with pytest.raises(ValueError, match="group_size=128"):
        scheme.params(Partition(k=192, n_parts=(128,), k_full=768), torch.float16)


def test_regroup_pads_each_present_group_and_reads_zero_column():
    g_idx = torch.tensor([3, 0, 3, 1, 0])  # a rank's slice: groups 0, 1, 3 present, group size 4
    present, source = regroup_act_order(g_idx, 4)
    assert present.tolist() == [0, 1, 3]
    assert source.tolist() == [1, 4, 5, 5, 3, 5, 5, 5, 0, 2, 5, 5]


def test_regroup_of_a_full_act_order_layer_is_a_permutation():
    g_idx = (torch.arange(64) // 16)[torch.randperm(64, generator=torch.Generator().manual_seed(0))]
    present, source = regroup_act_order(g_idx, 16)
    assert present.tolist() == [0, 1, 2, 3]
    assert sorted(source.tolist()) == list(range(64))
    assert bool((g_idx[source] == torch.arange(64) // 16).all())


def test_regroup_rejects_overfull_groups():
    with pytest.raises(ValueError, match="group_size is 2"):
        regroup_act_order(torch.tensor([0, 0, 0]), 2)
