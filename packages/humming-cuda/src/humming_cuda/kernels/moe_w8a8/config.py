"""MoE W8A8 / W4A8 configuration: the dense W8A8 warp tile whose block_m (16 * m_frags * warps_m)
is the routing alignment block size, plus the block's row table in shared memory.

Split-K is absent as in the dense family; a MoE layer has E times the weight tiles of a dense layer,
so one launch already covers the GPU.
"""

from __future__ import annotations

from typing import Literal

from ..w8a8.config import W8a8Config

ROW_TABLE_BYTES = 8  # per block row: the source row of the codes and the token id (two int32)
# Gate (and up) columns of one 16-column GLU tile of the layout: one n8 block each, so the gate and
# up of an output column sit in the same lane (include/humming/kernel/moe_w8a8.cuh).
GLU_HALF_TILE = 8


class MoeW8a8Config(W8a8Config):
    """A W8A8 tile; one CTA row is one alignment block of block_m sorted ids."""

    family: Literal["moe_w8a8"] = "moe_w8a8"  # type: ignore[assignment]

    @property
    def smem_bytes(self) -> int:
        """The dense pipeline's buffers plus the row table (MoeW8a8Kernel::kBytes)."""
        return super().smem_bytes + ROW_TABLE_BYTES * self.block_m
