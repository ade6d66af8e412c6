"""WnA16-wgmma kernel configuration (the weight format is the wna16 family's KernelFormat).

The CTA tile is fixed by the kernel's structure (include/humming/kernel/wna16_wgmma.cuh): two
consumer warpgroups of 64 rows, one wgmma m64n128k16 column block, 64-deep K steps (128 bytes of
16-bit activations: one 128B-swizzle row). Only the depth of the activation TMA ring varies.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from ..wgmma_tile import ALIGN_SLACK, BLOCK_M, BLOCK_N, WgmmaTileConfig

BLOCK_K = 64
# dequantized weight tiles: one read by wgmma, the next being written, and the previous one, which
# the still-running wgmma of the step before may read
B_BUFFERS = 3

__all__ = ["BLOCK_K", "BLOCK_M", "BLOCK_N", "WgmmaWna16Config"]


class WgmmaWna16Config(WgmmaTileConfig):
    """One producer and two consumer warpgroups; `stages` x tiles in flight."""

    family: Literal["wna16_wgmma"] = "wna16_wgmma"
    stages: int = Field(4, ge=2, le=8)

    @property
    def a_bytes(self) -> int:
        return BLOCK_M * BLOCK_K * 2

    @property
    def smem_bytes(self) -> int:
        """Mirrors WgmmaWna16Tile::SMEM_BYTES: alignment slack, the x ring, the B buffers, the
        ring's mbarriers."""
        b_bytes = BLOCK_N * BLOCK_K * 2
        return ALIGN_SLACK + self.stages * self.a_bytes + B_BUFFERS * b_bytes + self.barrier_bytes
