"""Reference dense GEMM: quantized activations x dequantized weights, fp32 accumulation, epilogue.

out = epilogue(dequant(quant(x)) @ dequant(W)^T). The only rounding besides the formats' own is the
fp32 accumulation of the matmul and the epilogue's fp32 arithmetic, so a kernel is compared against
this with a tolerance of fp32 accumulation over K (plus its output dtype's rounding).
"""

from __future__ import annotations

import torch

from ..packing.canonical import CanonicalWeight
from ..spec.quant import ActSpec
from .act import dequantize_act, quantize_act
from .epilogue import apply_epilogue
from .quant import dequantize_weight

_WIDE = {"fp16": torch.float16, "bf16": torch.bfloat16}


def prepare_act(
    x: torch.Tensor, act: ActSpec, static_scale: torch.Tensor | float | None = None
) -> torch.Tensor:
    """The float32 activations a kernel of this spec multiplies: quantized and dequantized back,
    or rounded to the 16-bit activation dtype."""
    if x.dim() != 2 or not x.is_floating_point():
        raise ValueError(
            f"activations must be a float [M, K] tensor, got {x.dtype} {tuple(x.shape)}"
        )
    if act.is_quantized:
        values, scales = quantize_act(x, act, static_scale)
        return dequantize_act(values, scales, act)
    if static_scale is not None:
        raise ValueError(
            f"act_scale_static was given but act dtype {act.dtype.name!r} is not quantized"
        )
    wide = _WIDE[act.dtype.name]
    if x.dtype in _WIDE.values() and x.dtype != wide:
        raise ValueError(
            f"activations are {x.dtype} but the spec's act dtype is {act.dtype.name}: convert them "
            "first, or use a spec with the matching act dtype"
        )
    return x.to(wide).float()


def reference_gemm(
    x: torch.Tensor,
    cw: CanonicalWeight,
    bias: torch.Tensor | None = None,
    act_scale_static: torch.Tensor | float | None = None,
) -> torch.Tensor:
    """x [M, K] (fp16/bf16, or fp32 rounded to the act dtype; [M, 2K] = [gate | up] with
    act.input_glu) times a dense canonical weight: [M, N] (or [M, N/2] with a GLU epilogue) in
    the spec's output dtype."""
    if cw.is_moe:
        raise ValueError(
            "reference_gemm takes a dense weight; for (E, N, K) weights use reference_moe_gemm, "
            "reference_grouped_gemm or reference_fused_moe"
        )
    act = cw.spec.act
    if x.shape[-1] != cw.k * act.x_columns:
        if act.input_glu == "none":
            raise ValueError(f"x has K={x.shape[-1]} columns but the weight has K={cw.k}")
        raise ValueError(
            f"x has {x.shape[-1]} columns but act.input_glu={act.input_glu!r} takes [gate | up] "
            f"= 2K = {2 * cw.k} for the weight's K={cw.k}"
        )
    xa = prepare_act(x, cw.spec.act, act_scale_static)
    acc = xa @ dequantize_weight(cw).T
    bias = bias if bias is not None else cw.bias
    return apply_epilogue(acc, cw.spec.epilogue, bias=bias, out_dtype=cw.spec.output_dtype)
