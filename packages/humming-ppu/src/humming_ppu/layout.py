"""The PPU weight layouts: humming-cuda's WnA16 and W8A8 layouts of the weights in PPU row order.

The PPU MMA's B operand enumerates output channels even-then-odd within every 8, so the weights,
integer or float zero points and the scales applied before the MMA are stored with rows permuted
by dialect.B_ROW_PERM. Scales applied after the MMA, bias and global scale index output columns,
which the kernel writes in natural order, so they do not move:
- WnA16 applies group scales (and the per-channel scale that zero points pull into the K loop)
  while dequantizing, before the MMA: they move.
- W8A8 / W4A8 (int8 activations) apply every weight scale after the MMA (per channel / tensor in
  the epilogue, per group or 128x128 block when partial sums are promoted): only the weights and
  the W4A8 integer zero points (subtracted from the codes before the MMA) move. The 8-bit weights
  stay raw row-major [N, K] ("same-width A/B uses the raw row-major weight", PPU.md), rows
  permuted.
The same layouts serve "ppu" and "ppu_emulation" (the emulation checks these data paths on an
NVIDIA GPU).
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass

import torch

from humming_core.packing import CanonicalWeight
from humming_cuda.kernels.w8a8 import W8a8Layout
from humming_cuda.kernels.wna16 import Wna16Layout

from .dialect import permute_canonical


def _check_rows(cw: CanonicalWeight) -> None:
    if cw.n % 8:
        raise ValueError(
            f"N={cw.n}: the PPU weight layout permutes output rows in groups of 8, so N must be "
            "a multiple of 8; pad the layer's output dimension"
        )


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
        _check_rows(cw)
        return self.inner.pack(permute_canonical(cw, self.scales_before_mma), device)


@dataclass(frozen=True)
class PpuW8a8Layout:
    """`WeightLayout`: permute the canonical weight rows (and integer zero points), then pack
    with the W8A8 / W4A8 layout; every weight scale is applied after the MMA and stays put."""

    inner: W8a8Layout

    @property
    def identity(self) -> Hashable:
        return ("ppu-rows", self.inner.identity)

    @property
    def scales_before_mma(self) -> bool:
        return False

    def pack(self, cw: CanonicalWeight, device: torch.device | str) -> dict[str, torch.Tensor]:
        _check_rows(cw)
        return self.inner.pack(permute_canonical(cw, self.scales_before_mma), device)
