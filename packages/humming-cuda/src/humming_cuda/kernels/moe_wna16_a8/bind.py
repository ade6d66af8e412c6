"""Bind a loaded MoE W4A8 module: quantize x per token with its own entries (the codes written as
their bf16 values, or as interleaved e4m3 codes for the e4m3 form), then the inner WnA16 MoE
kernel's call with the per-token scales. `prepare` binds one layer's weights (MoeWna16A8Call)."""

from __future__ import annotations

from typing import Any

import torch

from humming_core.spec import QuantSpec

from ..act_quant import ActQuantizer, QuantLaunch
from ..family import arch_has_pdl
from ..moe_wna16.bind import MoeWna16Kernel
from ..moe_wna16_wgmma.bind import MoeWna16WgmmaKernel
from .call import MoeWna16A8Call
from .config import MoeWna16A8Config
from .heuristics import codes_spec, quant_format

INNER_KERNELS = {"moe_wna16": MoeWna16Kernel, "moe_wna16_wgmma": MoeWna16WgmmaKernel}


class MoeWna16A8Kernel:
    """`kernel(x=, out=, sorted_token_ids=, expert_ids=, num_tokens_post_padded=, top_k=,
    block_size=, topk_weights=None, **packed)` as MoeWna16Kernel, with x (fp16 or bf16) [M, K]
    quantized per token first (fresh tensors from torch's caching allocator: no synchronisation,
    graph-capturable). Every call checks all arguments; `kernel.prepare(**packed)` binds one
    layer's weights for repeated calls that check only what changes per call (MoeWna16A8Call)."""

    def __init__(self, function: Any, spec: QuantSpec, config: MoeWna16A8Config) -> None:
        self.config = config
        self.name = function.symbol
        self.inner = INNER_KERNELS[config.inner.family](function, codes_spec(spec), config.inner)
        # the e4m3 form reads e4m3 codes and the rows' exponents; the others bf16 code values
        self.e4m3 = getattr(config.inner, "e4m3", False)
        self.quantizer = ActQuantizer.from_module(
            quant_format(spec, self.e4m3), function, function.symbol, arch_has_pdl(config.arch)
        )

    def inner_values(self, values: dict[str, Any]) -> dict[str, Any]:
        """`values` as the inner kernel takes them: row_exp only for the e4m3 form, which cannot
        run without it (MoeWna16A8Layout packs it for every bucket of an MXFP4 x e4m3 layer)."""
        values = dict(values)
        row_exp = values.pop("row_exp", None)
        if self.e4m3:
            if row_exp is None:
                raise ValueError(
                    f"{self.name}: argument 'row_exp' is missing: the e4m3 kernel needs the "
                    "weights packed by moe_wna16_a8's layout (MoeWna16A8Layout)"
                )
            values["row_exp"] = row_exp
        return values

    def quantize_checked(self, x: Any) -> tuple[torch.Tensor, torch.Tensor, QuantLaunch]:
        """(codes [M, K], per-token scales [M], launch): x checked, the quantizer bound to fresh
        buffers; `launch()` fills them."""
        if not isinstance(x, torch.Tensor) or x.dim() != 2:
            raise ValueError(f"{self.name}: argument 'x': expected a 2-D tensor [M, K]")
        codes, scales, launch = self.quantizer.checked(x, None)  # scales: [1, M]
        return codes, scales.view(-1), launch

    def __call__(self, **values: Any) -> None:
        codes, scales, quantize = self.quantize_checked(values.pop("x"))
        values = self.inner_values(values)
        quantize()
        self.inner(x=codes, a_scales=scales, **values)

    def prepare(self, **packed: torch.Tensor) -> MoeWna16A8Call:
        return MoeWna16A8Call(self, self.inner_values(packed))
