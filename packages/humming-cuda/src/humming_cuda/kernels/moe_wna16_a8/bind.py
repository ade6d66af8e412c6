"""Bind a loaded MoE W4A8 module: quantize x per token with its own entries (the codes written as
their bf16 values), then the inner WnA16 MoE kernel's call with the per-token scales."""

from __future__ import annotations

from typing import Any

import torch

from humming_core.spec import QuantSpec

from ..act_quant import ActQuantizer
from ..moe_wna16.bind import MoeWna16Kernel
from ..moe_wna16_wgmma.bind import MoeWna16WgmmaKernel
from .config import MoeWna16A8Config
from .heuristics import codes_spec, quant_format

INNER_KERNELS = {"moe_wna16": MoeWna16Kernel, "moe_wna16_wgmma": MoeWna16WgmmaKernel}


class MoeWna16A8Kernel:
    """`kernel(x=, out=, sorted_token_ids=, expert_ids=, num_tokens_post_padded=, top_k=,
    block_size=, topk_weights=None, **packed)` as MoeWna16Kernel, with x (fp16 or bf16) [M, K]
    quantized per token first (fresh tensors from torch's caching allocator: no synchronisation,
    graph-capturable). Every call checks all arguments (no prepared fast path)."""

    prepare = None  # PreparedMoe binds the weights with functools.partial instead

    def __init__(self, function: Any, spec: QuantSpec, config: MoeWna16A8Config) -> None:
        self.config = config
        self.name = function.symbol
        self.inner = INNER_KERNELS[config.inner.family](function, codes_spec(spec), config.inner)
        self.quantizer = ActQuantizer.from_module(quant_format(spec), function, function.symbol)

    def __call__(self, **values: Any) -> None:
        x = values.pop("x")
        if not isinstance(x, torch.Tensor) or x.dim() != 2:
            raise ValueError(f"{self.name}: argument 'x': expected a 2-D tensor [M, K]")
        codes, scales = self.quantizer(x, None)  # codes: bf16 values; scales: [1, M]
        self.inner(x=codes, a_scales=scales.view(-1), **values)
