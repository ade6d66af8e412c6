"""The MoE W8A8 / W4A8 weight layout: every expert in the dense W8A8 layout, stacked on a leading E.

Tensors: `qweight` (E, N, K) 8-bit codes or (E, N, ceil(K/128) * 16) int32 nibble words,
`weight_scale` (E, 1) per tensor, (E, N) per channel or (E, ceil(K/g), N) per group (fp32),
`zeros` (E, ceil(K/g), N) uint8, `bias` (E, N) fp32 (see w8a8.layout for one expert's tensors).

With a GLU epilogue the N axis (weight rows, scales, zero points, bias) is first reordered so that
every 16 packed columns hold 8 gate columns followed by their 8 up columns (moe_wna16.layout's
reorder with half tiles of 8); each half is padded to a multiple of 8 with zero-scaled columns,
which the kernel never stores.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass

import torch

from humming_core.packing.canonical import CanonicalWeight

from ..moe_wna16.layout import expert_weight, reorder_glu
from ..w8a8.config import W8a8Format
from ..w8a8.layout import W8a8Layout
from .config import GLU_HALF_TILE


@dataclass(frozen=True)
class MoeW8a8Layout:
    """`WeightLayout` of the MoE W8A8 family: one packed copy serves every tile config."""

    fmt: W8a8Format
    glu_layout: str | None  # None: no GLU (plain N order)

    @property
    def identity(self) -> Hashable:
        return ("moe_w8a8", W8a8Layout(self.fmt).identity, self.fmt.bias, self.glu_layout)

    def pack(self, cw: CanonicalWeight, device: torch.device | str) -> dict[str, torch.Tensor]:
        if not cw.is_moe:
            raise ValueError(
                "the moe_w8a8 layout packs expert-stacked weights (E, N, K); dense weights need "
                "the w8a8 family"
            )
        dense = W8a8Layout(self.fmt)
        parts: dict[str, list[torch.Tensor]] = {}
        for e in range(cw.num_experts):
            one = expert_weight(cw, e)
            if self.glu_layout is not None:
                one = reorder_glu(one, self.glu_layout, GLU_HALF_TILE)
            for name, t in dense.pack(one, device).items():
                parts.setdefault(name, []).append(t)
        return {name: torch.stack(ts).contiguous() for name, ts in parts.items()}
