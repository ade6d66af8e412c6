"""The W8A8 / W4A8 weight layouts, repacked from the canonical form.

8-bit weights: codes row-major [N, K] (K contiguous). No pre-shuffle: the kernel's ldmatrix reads
the mma.sync B fragments straight from K-contiguous rows. int8 codes become two's complement bytes
(the canonical form stores offset binary), E4M3 codes keep their bit patterns (as
torch.float8_e4m3fn). Scales: `weight_scale` (1,) per tensor, (N,) per channel, (ceil(N/128),
ceil(K/128)) per 128x128 block, all fp32 (exact from fp16/bf16 scales).

4-bit weights (W4A8): canonical codes pre-shuffled into int32 words (N, ceil(K/128) * 16), see
`nibbles`; group scales transposed to fp32 (ceil(K/g), N) so a promotion reads adjacent columns
(exact from fp16/bf16/e8m0); integer zero points unpacked to uint8 (ceil(K/g), N).
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass

import torch

from humming_core.numerics.scales import scale_values
from humming_core.packing.bits import unpack_k, unpack_n
from humming_core.packing.canonical import CanonicalWeight

from . import nibbles
from .config import W8a8Format

_ROWS_PER_CHUNK = 8192  # rows repacked at once: bounds the int64 temporaries of unpack_k


def weight_codes(cw: CanonicalWeight) -> torch.Tensor:
    """Canonical codes -> the kernel's bytes: int8 (two's complement) or float8_e4m3fn patterns."""
    parts = []
    for r0 in range(0, cw.n, _ROWS_PER_CHUNK):
        rows = cw.qweight[r0 : r0 + _ROWS_PER_CHUNK].contiguous()
        parts.append(unpack_k(rows, 8, cw.k).to(torch.int16))
    codes = torch.cat(parts, dim=0)
    if cw.spec.weight.dtype.name == "int8":
        return (codes - 128).to(torch.int8).contiguous()
    return codes.to(torch.uint8).view(torch.float8_e4m3fn).contiguous()


def codes_to_canonical(qweight: torch.Tensor) -> torch.Tensor:
    """Inverse of `weight_codes` up to packing: the kernel's bytes -> canonical codes (N, K) int64."""
    if qweight.dtype == torch.int8:
        return qweight.to(torch.int64) + 128
    return qweight.view(torch.uint8).to(torch.int64)


@dataclass(frozen=True)
class W8a8Layout:
    """`WeightLayout` of the W8A8 family: one packed copy serves every tile config of a spec."""

    fmt: W8a8Format

    @property
    def identity(self) -> Hashable:
        f = self.fmt
        return ("w8a8", f.weight, f.code, f.weight_scale, f.group, f.zero)

    def pack(self, cw: CanonicalWeight, device: torch.device | str) -> dict[str, torch.Tensor]:
        if cw.is_moe:
            raise ValueError(
                "the w8a8 layout packs dense weights (N, K); MoE weights need a MoE family"
            )
        cw = cw.to(device)
        if self.fmt.weight_bits == 4:
            return self._pack_nibbles(cw)
        scales = cw.scales.float()
        if self.fmt.weight_scale == "tensor":
            scales = scales.reshape(1)
        elif self.fmt.weight_scale == "channel":
            scales = scales.reshape(cw.n)
        out = {"qweight": weight_codes(cw), "weight_scale": scales.contiguous()}
        if cw.bias is not None and self.fmt.bias:
            out["bias"] = cw.bias.float().reshape(cw.n).contiguous()
        return out

    def _pack_nibbles(self, cw: CanonicalWeight) -> dict[str, torch.Tensor]:
        ws, f = cw.spec.weight, self.fmt
        table = nibbles.nibble_table(f.weight, f.code, f.zero)
        parts = []
        for r0 in range(0, cw.n, _ROWS_PER_CHUNK):
            rows = cw.qweight[r0 : r0 + _ROWS_PER_CHUNK].contiguous()
            codes = unpack_k(rows, 4, cw.k, dtype=torch.uint8)
            parts.append(nibbles.shuffle(codes, nibbles.zero_code(table)))
        scales = scale_values(cw.scales, ws.scale.dtype).float()
        out = {"qweight": torch.cat(parts, dim=0), "weight_scale": scales.T.contiguous()}
        if f.zero:
            # unpack_n gives [N, G]; the kernel reads one group's adjacent columns
            out["zeros"] = unpack_n(cw.zeros, 4, cw.n).T.to(torch.uint8).contiguous()
        if cw.bias is not None and f.bias:
            out["bias"] = cw.bias.float().reshape(cw.n).contiguous()
        return out
