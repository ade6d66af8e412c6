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
    def smem_bytes(self) -> int:
        return self.stages * self.slabs * (self.block_m * BLOCK_K + self.block_n * BLOCK_K // 2)
