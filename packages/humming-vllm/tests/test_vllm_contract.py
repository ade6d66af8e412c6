"""Registration and the vLLM 0.33 signatures the adapters override (fail loudly on interface drift)."""

from __future__ import annotations

import inspect

import pytest

pytestmark = [pytest.mark.vllm, pytest.mark.usefixtures("vllm_env")]


def _params(fn) -> list[str]:
    return list(inspect.signature(fn).parameters)


def test_vllm_is_the_pinned_minor():
    import vllm

    from humming_vllm import VLLM_VERSION

    assert vllm.__version__.split(".")[:2] == VLLM_VERSION.split(".")[:2]


def test_linear_method_signatures_match_vllm():
    from vllm.model_executor.layers.linear import LinearMethodBase

    from humming_vllm.linear import HummingLinearMethod

    for name in ("create_weights", "apply", "process_weights_after_loading"):
        assert _params(getattr(LinearMethodBase, name)) == _params(
            getattr(HummingLinearMethod, name)
        ), name


def test_quant_config_signatures_match_vllm():
    from vllm.model_executor.layers.quantization.base_config import QuantizationConfig

    from humming_vllm.config import HummingQuantConfig

    for name in (
        "get_name",
        "get_supported_act_dtypes",
        "get_min_capability",
        "get_config_filenames",
        "from_config",
        "override_quantization_method",
        "get_quant_method",
    ):
        assert _params(getattr(QuantizationConfig, name)) == _params(
            getattr(HummingQuantConfig, name)
        ), name


def test_parameter_classes_take_the_arguments_we_pass():
    from vllm.model_executor.parameter import PackedColumnParameter, PackedvLLMParameter

    assert {"packed_factor", "packed_dim"} <= set(_params(PackedvLLMParameter.__init__))
    assert {"packed_factor", "packed_dim"} <= set(_params(PackedColumnParameter.__init__))


def test_register_is_idempotent_and_uses_the_v2_loader():
    from vllm.model_executor.layers.linear import WEIGHT_LOADER_V2_SUPPORTED
    from vllm.model_executor.layers.quantization import (
        QUANTIZATION_METHODS,
        get_quantization_config,
    )

    import humming_vllm
    from humming_vllm.config import HummingQuantConfig

    humming_vllm.register()
    humming_vllm.register()
    assert QUANTIZATION_METHODS.count("humming_q") == 1
    assert get_quantization_config("humming_q") is HummingQuantConfig
    assert get_quantization_config("humming") is not HummingQuantConfig  # vLLM's own stays
    assert "HummingLinearMethod" in WEIGHT_LOADER_V2_SUPPORTED


def test_override_claims_only_what_vllm_cannot_serve(monkeypatch):
    from humming_vllm.config import HummingQuantConfig

    claim = HummingQuantConfig.override_quantization_method
    gptq = {"quant_method": "gptq", "bits": 4, "group_size": 128, "sym": True, "desc_act": False}
    assert claim(gptq, None) is None
    assert claim({**gptq, "bits": 3}, None) == "humming_q"
    assert claim({**gptq, "sym": False}, None) == "humming_q"
    assert claim({**gptq, "bits": 3}, "gptq_marlin") is None  # the user's choice wins
    assert claim(gptq, "humming_q") == "humming_q"
    monkeypatch.setenv("HUMMING_VLLM_CLAIM", "")
    assert claim({**gptq, "bits": 3}, None) is None


def test_act_order_keeps_g_idx_in_the_weight_mapper():
    # The base declares a staticmethod; ours needs the config, which works because vLLM calls it
    # on the instance (models/utils.py: `quant_config.get_checkpoint_weight_mapper()`).
    from humming_vllm.config import HummingQuantConfig

    gptq = {"quant_method": "gptq", "bits": 4, "group_size": 128, "sym": True}
    keep = HummingQuantConfig({**gptq, "desc_act": True}).get_checkpoint_weight_mapper()
    drop = HummingQuantConfig({**gptq, "desc_act": False}).get_checkpoint_weight_mapper()
    assert keep.map_name("x.g_idx") == "x.g_idx"
    assert drop.map_name("x.g_idx") is None


def test_moe_method_signatures_match_vllm():
    from vllm.model_executor.layers.fused_moe.fused_moe_method_base import FusedMoEMethodBase

    from humming_vllm.moe import HummingMoEMethod

    for name in (
        "create_weights",
        "apply",
        "process_weights_after_loading",
        "get_fused_moe_quant_config",
    ):
        assert _params(getattr(FusedMoEMethodBase, name)) == _params(
            getattr(HummingMoEMethod, name)
        ), name


def test_experts_signatures_match_vllm():
    from vllm.model_executor.layers.fused_moe import modular_kernel as mk

    from humming_vllm.moe import HummingExperts

    for name in ("apply", "workspace_shapes", "moe_problem_size", "activation_format"):
        assert _params(getattr(mk.FusedMoEExpertsModular, name)) == _params(
            getattr(HummingExperts, name)
        ), name
    assert _params(mk.FusedMoEKernel.__init__)[1:] == ["prepare_finalize", "fused_experts"]


def test_moe_schemes_follow_the_plan_and_ignored_experts_stay_unquantized():
    from humming_vllm.config import HummingQuantConfig
    from humming_vllm.moe_scheme import ExpertScheme, GptOssScheme

    gptq = {"quant_method": "gptq", "bits": 4, "group_size": 32, "sym": True}
    plan = HummingQuantConfig({**gptq, "modules_to_not_convert": ["layers.1.mlp"]}).plan
    assert isinstance(plan.moe_scheme_for("model.layers.0.mlp.experts"), ExpertScheme)
    assert plan.moe_scheme_for("model.layers.1.mlp.experts") is None
    assert isinstance(
        HummingQuantConfig({"quant_method": "mxfp4"}).plan.moe_scheme_for("x.experts"),
        GptOssScheme,
    )
