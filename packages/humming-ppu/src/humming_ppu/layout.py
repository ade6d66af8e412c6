"""The PPU weight layout: humming-cuda's WnA16 layout of the weights in PPU row order.

The PPU MMA's B operand enumerates output channels even-then-odd within every 8, so the packed
weights, integer or float zero points and the scales applied before the MMA (group scales, and the
per-channel scale that zero points pull into the K loop) are stored with rows permuted by
dialect.B_ROW_PERM. Scales applied in the epilogue, bias and global scale index output columns,
which the kernel writes in natural order, so they do not move. The same layout serves "ppu" and
"ppu_emulation" (the emulation checks these data paths on an NVIDIA GPU).
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass

import torch

from humming_core.packing import CanonicalWeight
from humming_cuda.kernels.wna16 import Wna16Layout

from .dialect import permute_canonical


@dataclass(frozen=True)
class PpuWna16Layout:
    """`WeightLayout`: permute the canonical rows, then pack with the WnA16 layout."""

    inner: Wna16Layout

    @property
    def identity(self) -> Hashable:
        return ("ppu-rows", self.inner.identity)

    @property
    def scales_before_mma(self) -> bool:
        """Whether the kernel applies the weight scales inside the K loop (then they permute too)."""
        return self.inner.fmt.group > 0

    def pack(self, cw: CanonicalWeight, device: torch.device | str) -> dict[str, torch.Tensor]:
        if cw.n % 8:
            raise ValueError(
                f"N={cw.n}: the PPU weight layout permutes output rows in groups of 8, so N must be "
                "a multiple of 8; pad the layer's output dimension"
            )
        return self.inner.pack(permute_canonical(cw, self.scales_before_mma), device)
