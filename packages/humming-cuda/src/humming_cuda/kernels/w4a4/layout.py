"""W4A4 weight storage: canonical 4-bit codes as K-contiguous nibbles, and the scales as the kernel
reads them.

qweight: uint8 `(N, K/2)`, element k of a row in byte k/2 (even k in the low nibble). That is the
canonical little-endian bitstream itself, read as bytes; int4 codes are turned from offset binary
into two's complement (each nibble xor 8), e2m1 codes are raw bits already.
weight_scale: int4 per channel fp32 `(N,)`; int4 per group fp32 `(ceil(K/g), N)` (transposed, so a
promotion reads adjacent columns; exact from fp16/bf16/e8m0); fp4 the canonical `(N, K/V)` codes as
bytes (ue4m3 for NVFP4, e8m0 for MXFP4). weight_global (NVFP4): the canonical fp32 `(1,)`.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass

import torch

from humming_core.numerics.scales import scale_values
from humming_core.packing.canonical import CanonicalWeight

from .config import W4a4Format

# 0x88888888 as an int32: flips the top bit of every nibble (offset binary <-> two's complement)
_FLIP_NIBBLE_SIGNS = 0x88888888 - (1 << 32)


def nibble_bytes(cw: CanonicalWeight) -> torch.Tensor:
    """Canonical 4-bit codes -> the kernel's (N, K/2) bytes."""
    words = cw.qweight.contiguous()
    if cw.spec.weight.dtype.name == "int4":
        words = words ^ _FLIP_NIBBLE_SIGNS
    return words.view(torch.uint8).reshape(cw.n, cw.k // 2).contiguous()


def bytes_to_canonical(qweight: torch.Tensor, weight_dtype: str) -> torch.Tensor:
    """Inverse of `nibble_bytes`: (N, K/2) bytes -> canonical int32 words (N, K/8)."""
    words = qweight.contiguous().view(torch.int32)
    return words ^ _FLIP_NIBBLE_SIGNS if weight_dtype == "int4" else words


@dataclass(frozen=True)
class W4a4Layout:
    """`WeightLayout` of the W4A4 family: one packed copy serves every tile config of a spec."""

    fmt: W4a4Format

    @property
    def identity(self) -> Hashable:
        return ("w4a4", self.fmt.path, self.fmt.w_group)

    def pack(self, cw: CanonicalWeight, device: torch.device | str) -> dict[str, torch.Tensor]:
        if cw.is_moe:
            raise ValueError(
                "the w4a4 layout packs dense weights (N, K); MoE weights need a MoE family"
            )
        if cw.k % 64:
            raise ValueError(f"K={cw.k}: W4A4 weights need K to be a multiple of 64; pad K")
        cw = cw.to(device)
        out = {"qweight": nibble_bytes(cw)}
        scale_dtype = cw.spec.weight.scale.dtype
        if self.fmt.scaled:
            out["weight_scale"] = cw.scales.contiguous().view(torch.uint8)
            if self.fmt.path == "nvfp4":
                out["weight_global"] = cw.global_scale.float().reshape(1).contiguous()
        elif self.fmt.w_grouped:
            out["weight_scale"] = scale_values(cw.scales, scale_dtype).float().T.contiguous()
        else:
            out["weight_scale"] = scale_values(cw.scales, scale_dtype).float().reshape(cw.n)
        if cw.bias is not None and self.fmt.bias:
            out["bias"] = cw.bias.float().reshape(cw.n).contiguous()
        return out
