"""vLLM adapter: the `humming_q` quantization config."""

from __future__ import annotations

from typing import Any

import torch
from vllm.model_executor.layers.linear import LinearBase, UnquantizedLinearMethod
from vllm.model_executor.layers.quantization.base_config import (
    QuantizationConfig,
    QuantizeMethodBase,
)

from humming_core.env import ENV

from .plan import QuantPlan, should_claim

QUANT_NAME = "humming_q"  # not "humming": vLLM's in-tree integration owns that name


class HummingQuantConfig(QuantizationConfig):
    """Serves GPTQ, AWQ, compressed-tensors, HF FP8 block, ModelOpt and gpt-oss MXFP4 checkpoints
    (dense linear and MoE layers) on Humming kernels."""

    def __init__(self, hf_quant_config: dict[str, Any]) -> None:
        super().__init__()
        self.hf_quant_config = hf_quant_config
        self.plan = QuantPlan.from_hf(hf_quant_config)

    def get_name(self) -> str:
        return QUANT_NAME

    def get_supported_act_dtypes(self) -> list[torch.dtype]:
        return [torch.float16, torch.bfloat16]

    @classmethod
    def get_min_capability(cls) -> int:
        # The Humming device decides what it can run (the reference device runs anywhere).
        return 0

    @staticmethod
    def get_config_filenames() -> list[str]:
        return ["quantize_config.json"]

    @classmethod
    def from_config(cls, config: dict[str, Any]) -> HummingQuantConfig:
        return cls(config)

    @classmethod
    def override_quantization_method(
        cls, hf_quant_cfg: dict[str, Any], user_quant: str | None, hf_config: Any = None
    ) -> str | None:
        """Claim the checkpoint when asked by name, or (unasked) when vLLM's kernels cannot serve it.

        Auto-claim covers the reasons in HUMMING_VLLM_CLAIM (low_bits, asymmetric, act_order by
        default); a user who names another method keeps it.
        """
        if user_quant == QUANT_NAME:
            return QUANT_NAME
        if user_quant is not None:
            return None
        return QUANT_NAME if should_claim(hf_quant_cfg, tuple(ENV.HUMMING_VLLM_CLAIM)) else None

    def get_checkpoint_weight_mapper(self):
        """Keep GPTQ `.g_idx` when act-order is on (the base class drops it)."""
        from vllm.model_executor.models.utils import WeightsMapper

        keep = self.plan.method == "gptq" and any(s.act_order for _, s in self.plan.groups)
        return WeightsMapper() if keep else WeightsMapper(orig_to_new_suffix={".g_idx": None})

    def get_quant_method(self, layer: torch.nn.Module, prefix: str) -> QuantizeMethodBase | None:
        from vllm.model_executor.layers.fused_moe.routed_experts import RoutedExperts
        from vllm.model_executor.layers.fused_moe.unquantized_fused_moe_method import (
            UnquantizedFusedMoEMethod,
        )

        from .linear import HummingLinearMethod

        if isinstance(layer, LinearBase):
            shards = self.packed_modules_mapping.get(prefix.rpartition(".")[2])
            scheme = self.plan.scheme_for(prefix, shards)
            return UnquantizedLinearMethod() if scheme is None else HummingLinearMethod(scheme)
        if isinstance(layer, RoutedExperts):
            from .moe import HummingMoEMethod

            moe_scheme = self.plan.moe_scheme_for(prefix)
            if moe_scheme is None:
                return UnquantizedFusedMoEMethod(layer.moe_config)
            return HummingMoEMethod(layer.moe_config, moe_scheme)
        return None
