"""The W4A8 decode kernel's configuration: w8a8's one-row-of-fragments tile with `tokens`."""

from __future__ import annotations

from typing import Literal

from pydantic import model_validator

from ..w8a8.config import BLOCK_K, W8a8Config


class W4a8DecodeConfig(W8a8Config):
    """W8a8Config for include/humming/kernel/w4a8_decode.cuh: m_frags = warps_m = 1 (one 16-row
    tile of x per CTA), 4-bit weights, and `tokens`, the rows of x one launch computes: 8 (one n8
    block of tokens per MMA) or 16 (two). Each warp holds 8 * n_frags weight rows, n_frags / 2
    blocks of 16. Grid and split-K are w8a8's, split in stages of `slabs` slabs."""

    family: Literal["w4a8_decode"] = "w4a8_decode"  # type: ignore[assignment]
    weight_bits: Literal[4] = 4  # type: ignore[assignment]
    tokens: Literal[8, 16] = 8
    # 128-deep K slabs per pipeline stage: 64 * slabs contiguous bytes of each weight row per copy
    slabs: Literal[1, 2, 4] = 2

    @model_validator(mode="after")
    def _one_token_tile(self) -> W4a8DecodeConfig:
        if self.m_frags != 1 or self.warps_m != 1:
            raise ValueError(
                f"m_frags={self.m_frags}, warps_m={self.warps_m}: the decode kernel reads one "
                "16-row tile of tokens (both must be 1)"
            )
        return self

    @property
    def stage_k(self) -> int:
        return self.slabs * BLOCK_K

    def stage_bytes(self, group: int) -> int:
        """One stage for weight groups of `group` (mirrors W4a8DecodeKernel::kStage): per slab
        16 token rows of 128 codes and the tile's weight rows of 64 bytes, then the fp32 scales
        of the group rows the stage touches."""
        return self.slabs * (self.block_m * BLOCK_K + self.block_n * BLOCK_K // 2) + (
            scale_rows(group, self.stage_k) * self.block_n * 4
        )

    @property
    def smem_bytes(self) -> int:
        """The most any spec needs (groups of 32 touch the most scale rows); a bound kernel
        launches with its spec's own `stages * stage_bytes(group)`."""
        return self.stages * self.stage_bytes(MIN_GROUP)


MIN_GROUP = 32  # the smallest W4A8 weight group (w8a8.heuristics)


def scale_rows(group: int, depth: int) -> int:
    """Weight group rows a stage `depth` deep touches (W4a8DecodeKernel::SROWS): its depth in
    groups, one more where a group boundary can fall inside it."""
    return -(-depth // group) + (depth % group != 0 and group % depth != 0)
