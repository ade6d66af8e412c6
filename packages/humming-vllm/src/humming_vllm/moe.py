"""vLLM adapter: the MoE method. It creates `w13_*` / `w2_*` parameters for vLLM's RoutedExperts
weight loader, converts and prepares them once loaded, and runs the layer through its own
`FusedMoEKernel`: vLLM's no-DP/EP prepare/finalize plus `HummingExperts`, whose apply() runs
`humming_core.ops.fused_moe` (routing alignment, w13 GEMM with the GLU epilogue, w2 GEMM with the
router weights, top-k sum) and so returns a NoOP weight-and-reduce.

vLLM has no registry for experts classes (its oracles hard-code their lists), hence the kernel is
built here, in process_weights_after_loading, as vLLM's own in-tree Humming method does.
"""

from __future__ import annotations

import torch
from vllm.model_executor.layers.fused_moe import modular_kernel as mk
from vllm.model_executor.layers.fused_moe.activation import MoEActivation
from vllm.model_executor.layers.fused_moe.config import FUSED_MOE_UNQUANTIZED_CONFIG
from vllm.model_executor.layers.fused_moe.fused_moe_method_base import FusedMoEMethodBase
from vllm.model_executor.layers.fused_moe.prepare_finalize.no_dp_ep import (
    MoEPrepareAndFinalizeNoDPEPModular,
)
from vllm.model_executor.layers.fused_moe.topk_weight_and_reduce import TopKWeightAndReduceNoOP
from vllm.model_executor.utils import set_weight_attrs

from humming_core.ops import PreparedMoe, fused_moe

from .moe_scheme import ExpertScheme, GptOssScheme, MoeShape


class HummingExperts(mk.FusedMoEExpertsModular):
    """Both expert GEMMs on prepared Humming layers; weights the rows and reduces over top-k."""

    def __init__(self, moe_config, quant_config, w13: PreparedMoe, w2: PreparedMoe) -> None:
        super().__init__(moe_config, quant_config)
        self.w13, self.w2 = w13, w2

    @staticmethod
    def activation_format() -> mk.FusedMoEActivationFormat:
        return mk.FusedMoEActivationFormat.Standard

    @staticmethod
    def _supports_current_device() -> bool:
        return True  # the Humming device was chosen (and checked) when the layers were prepared

    @staticmethod
    def _supports_no_act_and_mul() -> bool:
        return False

    @staticmethod
    def _supports_quant_scheme(weight_key, activation_key) -> bool:
        return True  # the spec of each prepared layer carries its own quantization

    @staticmethod
    def _supports_activation(activation: MoEActivation) -> bool:
        return activation.value in ("silu", "gelu", "gelu_tanh", "swigluoai")

    @staticmethod
    def _supports_parallel_config(moe_parallel_config) -> bool:
        return not moe_parallel_config.use_all2all_kernels

    @property
    def expects_unquantized_inputs(self) -> bool:
        return True  # the kernels quantize activations themselves where the spec says so

    def moe_problem_size(self, a1, w1, w2, topk_ids) -> tuple[int, int, int, int, int]:
        return self.w13.num_experts, a1.size(0), self.w13.n, a1.size(-1), topk_ids.size(1)

    def workspace_shapes(
        self, M, N, K, topk, global_num_experts, local_num_experts, expert_tokens_meta, activation
    ):
        return (0,), (0,), (M, K)

    def finalize_weight_and_reduce_impl(self) -> mk.TopKWeightAndReduce:
        return TopKWeightAndReduceNoOP()

    def apply(
        self,
        output,
        hidden_states,
        w1,
        w2,
        topk_weights,
        topk_ids,
        activation,
        global_num_experts,
        expert_map,
        a1q_scale,
        a2_scale,
        workspace13,
        workspace2,
        expert_tokens_meta,
        apply_router_weight_on_input,
    ):
        if apply_router_weight_on_input:
            raise ValueError(
                "apply_router_weight_on_input=True is not served by humming_q: the router weight "
                "multiplies w2's output (epilogue.topk_weight)"
            )
        out = fused_moe(hidden_states, topk_weights, topk_ids, self.w13, self.w2, expert_map)
        output.copy_(out)


class HummingMoEMethod(FusedMoEMethodBase):
    """Creates the checkpoint's expert tensors, then serves them on Humming MoE kernels."""

    def __init__(self, moe, scheme: ExpertScheme | GptOssScheme) -> None:
        super().__init__(moe)
        self.scheme = scheme

    def create_weights(
        self,
        layer: torch.nn.Module,
        num_experts: int,
        hidden_size: int,
        intermediate_size_per_partition: int,
        params_dtype: torch.dtype,
        **extra_weight_attrs,
    ) -> None:
        shape = MoeShape(
            num_experts,
            hidden_size,
            intermediate_size_per_partition,
            self.moe.intermediate_size,
            params_dtype,
            self.moe.activation.value,
            getattr(self.moe, "swiglu_limit", None),
        )
        params = self.scheme.params(shape)
        for p in params:
            param = torch.nn.Parameter(torch.empty(p.shape, dtype=p.dtype), requires_grad=False)
            attrs = {**extra_weight_attrs, "is_transposed": p.is_transposed}
            if p.quant_method is not None:
                attrs["quant_method"] = p.quant_method
            set_weight_attrs(param, attrs)
            layer.register_parameter(p.name, param)
        layer.humming_moe_shape = shape
        layer.humming_param_names = [p.name for p in params]

    def get_fused_moe_quant_config(self, layer: torch.nn.Module):
        # The prepare step must hand over unquantized activations: our kernels quantize them.
        return FUSED_MOE_UNQUANTIZED_CONFIG

    def process_weights_after_loading(self, layer: torch.nn.Module) -> None:
        names = layer.humming_param_names
        tensors = {name: getattr(layer, name).data for name in names}
        if "w2_bias" in tensors and self.moe.tp_rank != 0:
            # Every rank's partial output is summed: the bias must be added once.
            tensors["w2_bias"] = torch.zeros_like(tensors["w2_bias"])
        w13, w2 = self.scheme.to_canonical(tensors, layer.humming_moe_shape)
        # Every kernel for every M bucket is built here, never in apply().
        prepared13, prepared2 = PreparedMoe(w13), PreparedMoe(w2)
        for name in names:
            delattr(layer, name)
        self.moe_quant_config = self.get_fused_moe_quant_config(layer)
        experts = HummingExperts(self.moe, self.moe_quant_config, prepared13, prepared2)
        self.moe_kernel = mk.FusedMoEKernel(MoEPrepareAndFinalizeNoDPEPModular(), experts)
        layer.humming_placeholder = prepared13.packed["qweight"]

    def apply(
        self,
        layer: torch.nn.Module,
        x: torch.Tensor,
        topk_weights: torch.Tensor,
        topk_ids: torch.Tensor,
        shared_experts,
        shared_experts_input,
    ) -> torch.Tensor:
        # w1/w2 only give the kernel shapes; HummingExperts holds the prepared weights.
        w = layer.humming_placeholder
        return self.moe_kernel.apply(
            hidden_states=x,
            w1=w,
            w2=w,
            topk_weights=topk_weights,
            topk_ids=topk_ids,
            activation=layer.activation,
            global_num_experts=layer.global_num_experts,
            expert_map=layer.expert_map,
            apply_router_weight_on_input=False,
            shared_experts=shared_experts,
            shared_experts_input=shared_experts_input,
        )
