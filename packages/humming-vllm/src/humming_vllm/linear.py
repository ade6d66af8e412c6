"""vLLM adapter: the linear method (v2 weight loader) running a layer on a Humming kernel."""

from __future__ import annotations

import torch
from vllm.model_executor.layers.linear import (
    LinearMethodBase,
    register_weight_loader_v2_supported_method,
)
from vllm.model_executor.parameter import (
    BasevLLMParameter,
    BlockQuantScaleParameter,
    ChannelQuantScaleParameter,
    GroupQuantScaleParameter,
    PackedColumnParameter,
    PackedvLLMParameter,
    PerTensorScaleParameter,
    RowvLLMParameter,
)

from humming_core.ops import gemm, prepare

from .layout import ParamDef, Partition
from .plan import Scheme


def make_param(d: ParamDef, weight_loader) -> BasevLLMParameter:
    """The vLLM parameter class whose loader shards `d` the way its dims say."""
    data = torch.empty(d.shape, dtype=d.dtype)
    common = {"data": data, "weight_loader": weight_loader}
    if d.kind == "per_tensor":
        # Unloaded slots must not pass for a scale (vLLM fills fused-on-disk layers into all).
        data.fill_(float("nan") if d.dtype.is_floating_point else 0)
        return PerTensorScaleParameter(**common)
    if d.kind == "block":
        return BlockQuantScaleParameter(input_dim=d.input_dim, output_dim=d.output_dim, **common)
    if d.input_dim is not None and d.output_dim is not None:
        if d.packed_dim is not None:
            return PackedvLLMParameter(
                input_dim=d.input_dim,
                output_dim=d.output_dim,
                packed_dim=d.packed_dim,
                packed_factor=d.packed_factor,
                **common,
            )
        return GroupQuantScaleParameter(input_dim=d.input_dim, output_dim=d.output_dim, **common)
    if d.output_dim is not None:
        if d.packed_dim is not None:
            return PackedColumnParameter(
                output_dim=d.output_dim,
                packed_dim=d.packed_dim,
                packed_factor=d.packed_factor,
                **common,
            )
        return ChannelQuantScaleParameter(output_dim=d.output_dim, **common)
    if d.input_dim is not None:
        return RowvLLMParameter(input_dim=d.input_dim, **common)
    return BasevLLMParameter(**common)


@register_weight_loader_v2_supported_method
class HummingLinearMethod(LinearMethodBase):
    """Holds the checkpoint's own tensors while loading; converts and prepares them once loaded."""

    def __init__(self, scheme: Scheme) -> None:
        self.scheme = scheme

    def create_weights(
        self,
        layer: torch.nn.Module,
        input_size_per_partition: int,
        output_partition_sizes: list[int],
        input_size: int,
        output_size: int,
        params_dtype: torch.dtype,
        **extra_weight_attrs,
    ) -> None:
        part = Partition(input_size_per_partition, tuple(output_partition_sizes), input_size)
        defs = self.scheme.params(part, params_dtype)
        for d in defs:
            layer.register_parameter(d.name, make_param(d, extra_weight_attrs["weight_loader"]))
        layer.humming_partition = part
        layer.humming_param_names = [d.name for d in defs]
        layer.humming_act_dtype = params_dtype
        block = getattr(self.scheme, "block", None)
        if block is not None:  # vLLM's loaders read it to shard BlockQuantScaleParameter by blocks
            layer.weight_block_size = list(block)

    def process_weights_after_loading(self, layer: torch.nn.Module) -> None:
        names = layer.humming_param_names
        tensors = {name: getattr(layer, name).data for name in names}
        loaded = self.scheme.to_canonical(tensors, layer.humming_partition, layer.humming_act_dtype)
        # Every kernel the layer can need (all M buckets) is built here, never in apply().
        layer.humming_gemm = prepare(loaded.weight)
        device = tensors[names[0]].device
        index = loaded.input_index
        layer.humming_input_index = None if index is None else index.to(device)
        scale = loaded.act_scale
        layer.humming_act_scale = None if scale is None else scale.to(device)
        for name in names:  # the packed copy replaces the checkpoint tensors
            delattr(layer, name)

    def apply(
        self, layer: torch.nn.Module, x: torch.Tensor, bias: torch.Tensor | None = None
    ) -> torch.Tensor:
        index = layer.humming_input_index
        if index is not None:
            # Act-order: reorder K to the grouped order; index == K reads the appended zero column.
            x = torch.nn.functional.pad(x, (0, 1)).index_select(-1, index)
        if layer.humming_act_scale is None:
            out = gemm(x, layer.humming_gemm)
        else:  # static activation scale: the prepared layer takes it per call
            out = layer.humming_gemm.run(x, act_scale=layer.humming_act_scale)
        # vLLM passes bias only where it must be added (rank 0 of a row-parallel layer, no skip_bias_add).
        return out if bias is None else out + bias
