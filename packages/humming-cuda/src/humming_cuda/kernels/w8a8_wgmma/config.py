"""W8A8-wgmma kernel configuration: a fixed 128x128x128 CTA tile, a chosen pipeline depth and
split-K factor.

The tile is fixed by the kernel's structure (include/humming/kernel/w8a8_wgmma.cuh): two consumer
warpgroups of 64 rows, one wgmma m64n128k32 column block, 128-deep stages matching the 128x128
weight blocks and 128-wide activation groups. The number of stages in the TMA ring varies, and
the K blocks may be split over several CTAs per tile (a launch parameter: the code is the same).
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from ..wgmma_tile import ALIGN_SLACK, BLOCK_M, BLOCK_N, WgmmaTileConfig

BLOCK_K = 128
SPLIT_FLAG_BYTES = 4  # split-K's "last split" flag, after the ring's barriers

__all__ = ["BLOCK_K", "BLOCK_M", "BLOCK_N", "W8a8WgmmaConfig"]


class W8a8WgmmaConfig(WgmmaTileConfig):
    """One producer and two consumer warpgroups over a `stages`-deep ring of A and W tiles.

    split_k > 1 runs each tile's K blocks as that many CTAs (gridDim.z) over contiguous ranges of
    whole 128-deep blocks, summed in fp32 through a workspace (kernels.split_k), so a layer with
    few output tiles fills more SMs; split_iterations may launch fewer when K has few blocks."""

    family: Literal["w8a8_wgmma"] = "w8a8_wgmma"
    stages: int = Field(6, ge=2, le=8)
    split_k: int = Field(1, ge=1, le=16)

    @property
    def stage_bytes(self) -> int:
        return (BLOCK_M + BLOCK_N) * BLOCK_K

    @property
    def smem_bytes(self) -> int:
        """Mirrors WgmmaFp8Tile::SMEM_BYTES: alignment slack, the ring, its mbarriers, the split
        flag."""
        return ALIGN_SLACK + self.stages * self.stage_bytes + self.barrier_bytes + SPLIT_FLAG_BYTES
