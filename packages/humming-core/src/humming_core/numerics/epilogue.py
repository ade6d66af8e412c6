"""The GEMM epilogue, in fp32: bias, activation or GLU, per-row weight, cast to the output dtype.

Order: acc + bias -> activation / GLU -> times row weight -> cast. A GLU halves N: 'split' takes
gate = acc[:, :N/2], up = acc[:, N/2:]; 'interleaved' takes gate = acc[:, 0::2], up = acc[:, 1::2]
(gate and up weight rows alternate, as in gpt-oss checkpoints).

gpt-oss's clamped SwiGLU (vLLM `swigluoai_and_mul`, gpt-oss reference `swiglu`):
gate = min(gate, limit), up = clamp(up, -limit, limit), out = (up + 1) * gate * sigmoid(alpha * gate).
"""

from __future__ import annotations

import math

import torch

from ..spec.quant import EpilogueSpec

OUT_DTYPES = {"fp16": torch.float16, "bf16": torch.bfloat16, "fp32": torch.float32}


def _gelu_erf(x: torch.Tensor) -> torch.Tensor:
    return 0.5 * x * (1.0 + torch.erf(x * math.sqrt(0.5)))


def _gelu_tanh(x: torch.Tensor) -> torch.Tensor:
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x**3)))


_ACTIVATIONS = {
    "none": lambda x: x,
    "relu": torch.relu,
    "silu": lambda x: x * torch.sigmoid(x),
    "gelu": _gelu_erf,
    "gelu_tanh": _gelu_tanh,
}
_GLU_GATES = {"silu_mul": "silu", "gelu_mul": "gelu", "gelu_tanh_mul": "gelu_tanh"}


def glu_gate(glu: str):
    """The activation a GLU applies to its gate half (silu_mul -> silu, ...)."""
    return _ACTIVATIONS[_GLU_GATES[glu]]


def split_glu(acc: torch.Tensor, layout: str) -> tuple[torch.Tensor, torch.Tensor]:
    """(gate, up) halves of a GLU accumulator [M, N]."""
    n = acc.shape[-1]
    if n % 2:
        raise ValueError(f"a GLU epilogue needs an even N (gate and up halves), got N={n}")
    if layout == "split":
        return acc[..., : n // 2], acc[..., n // 2 :]
    return acc[..., 0::2], acc[..., 1::2]


def _glu(acc: torch.Tensor, epi: EpilogueSpec) -> torch.Tensor:
    gate, up = split_glu(acc, epi.glu_layout)
    if epi.glu == "swiglu_oai":
        gate = gate.clamp(max=epi.swiglu_limit)
        up = up.clamp(-epi.swiglu_limit, epi.swiglu_limit)
        return (up + 1.0) * gate * torch.sigmoid(epi.swiglu_alpha * gate)
    return glu_gate(epi.glu)(gate) * up


def resolve_out_dtype(epi: EpilogueSpec, out_dtype: str | torch.dtype | None) -> torch.dtype:
    """The torch dtype to store: the argument, else the spec's out_dtype, else float32."""
    if isinstance(out_dtype, torch.dtype):
        return out_dtype
    name = out_dtype if out_dtype is not None else epi.out_dtype
    if name is None:
        return torch.float32
    if name not in OUT_DTYPES:
        raise ValueError(f"out_dtype {name!r} is not supported: use one of {', '.join(OUT_DTYPES)}")
    return OUT_DTYPES[name]


def apply_epilogue(
    acc: torch.Tensor,
    epi: EpilogueSpec,
    bias: torch.Tensor | None = None,
    row_weight: torch.Tensor | None = None,
    out_dtype: str | torch.dtype | None = None,
) -> torch.Tensor:
    """Apply the epilogue to an fp32 accumulator [M, N]; returns [M, N] or [M, N/2] for a GLU.

    `bias` [N] is required when `epi.bias`; `row_weight` [M] when `epi.topk_weight`. Either is
    applied whenever it is given (the MoE GEMM passes router weights on its own terms).
    `out_dtype` overrides `epi.out_dtype`; with neither the result stays float32.
    """
    if epi.bias and bias is None:
        raise ValueError("epilogue.bias=True but no bias was given: pass bias of shape [N]")
    if epi.topk_weight and row_weight is None:
        raise ValueError(
            "epilogue.topk_weight=True but no row weight was given: pass row_weight of shape [M]"
        )
    out = acc.float()
    if bias is not None:
        if bias.shape[-1] != out.shape[-1]:
            raise ValueError(
                f"bias has {bias.shape[-1]} entries, the accumulator has N={out.shape[-1]}"
            )
        out = out + bias.float()
    out = _glu(out, epi) if epi.glu != "none" else _ACTIVATIONS[epi.activation](out)
    if row_weight is not None:
        out = out * row_weight.float().reshape(-1, 1)
    return out.to(resolve_out_dtype(epi, out_dtype))
