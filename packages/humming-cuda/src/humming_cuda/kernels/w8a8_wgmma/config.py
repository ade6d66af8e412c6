"""W8A8-wgmma kernel configuration: a fixed 128x128x128 CTA tile, a chosen pipeline depth.

The tile is fixed by the kernel's structure (include/humming/kernel/w8a8_wgmma.cuh): two consumer
warpgroups of 64 rows, one wgmma m64n128k32 column block, 128-deep stages matching the 128x128
weight blocks and 128-wide activation groups. Only the number of stages in the TMA ring varies.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from ..base import KernelConfig

BLOCK_M = 128
BLOCK_N = 128
BLOCK_K = 128
CONSUMERS = 2  # consumer warpgroups, 64 rows each
# The 128B swizzle atom alignment the ring needs, slack for aligning dynamic smem to it.
ALIGN_SLACK = 1024


class W8a8WgmmaConfig(KernelConfig):
    """One producer and two consumer warpgroups over a `stages`-deep ring of A and W tiles."""

    family: Literal["w8a8_wgmma"] = "w8a8_wgmma"
    arch: str
    stages: int = Field(6, ge=2, le=8)

    @property
    def block_m(self) -> int:
        return BLOCK_M

    @property
    def block_n(self) -> int:
        return BLOCK_N

    @property
    def threads(self) -> int:
        return 128 * (1 + CONSUMERS)

    @property
    def stage_bytes(self) -> int:
        return (BLOCK_M + BLOCK_N) * BLOCK_K

    @property
    def smem_bytes(self) -> int:
        """Mirrors WgmmaFp8Tile::SMEM_BYTES: alignment slack, the ring, a full and an empty
        mbarrier (8 bytes each) per stage."""
        return ALIGN_SLACK + self.stages * self.stage_bytes + 16 * self.stages
