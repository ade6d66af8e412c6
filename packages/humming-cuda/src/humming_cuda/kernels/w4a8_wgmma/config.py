"""W4A8-wgmma kernel configuration: a CTA tile of 128 weight rows x 128 tokens (32 or 64 tokens
at small M, 160 or 176 at large M), a chosen pipeline depth and split-K factor.

The tile follows the kernel's structure (include/humming/kernel/w4a8_wgmma.cuh): two consumer
warpgroups of 64 weight rows, one wgmma per 32-deep K step over the tile's tokens (m64nBMk32 in
the out^T form, m64n128k32 in the shared-memory form), 128-deep stages (one slab of the W4A8
layout). Each stage holds the A tile and the packed 4-bit slab; each consumer warpgroup expands its
rows of the slab in registers (the default out^T form) or into one of its two e4m3 tiles. K may be
split over several CTAs per tile as in w8a8_wgmma (a launch parameter: the code is the same).
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from ..w8a8_wgmma.config import SPLIT_FLAG_BYTES
from ..wgmma_tile import (
    ALIGN_SLACK,
    BLOCK_M,
    BLOCK_N,
    CONSUMERS,
    MAX_CLUSTER_SPLIT,
    WgmmaTileConfig,
    staged_rows_bytes,
)

BLOCK_K = 128
EXPANDED_BUFFERS = 2  # per consumer warpgroup: one read by wgmma while the next is written
TWO_CTA_BLOCK_M = 32  # the token tile that runs two CTAs per SM

__all__ = ["BLOCK_K", "BLOCK_M", "BLOCK_N", "W4a8WgmmaConfig"]


class W4a8WgmmaConfig(WgmmaTileConfig):
    """One producer and two consumer warpgroups over a `stages`-deep ring of A tiles and slabs;
    split_k as W8a8WgmmaConfig's (whole 128-deep blocks per split, summed in fp32 through a
    workspace)."""

    family: Literal["w4a8_wgmma"] = "w4a8_wgmma"
    stages: int = Field(4, ge=2, le=8)
    split_k: int = Field(1, ge=1, le=16)
    # The out^T form (default): weights as wgmma's register A operand, expanded in registers (no
    # expanded tiles in shared memory), activations as its B operand. False: the shared-memory form,
    # each consumer expanding the slab into an e4m3 tile for a smem x smem wgmma. H200, same run
    # (2026-11-30, wgmma_config_sweep): the register form took 230 / 3237 / 1610 / 33 us where the
    # shared-memory form took 543 / 7772 / 3756 / 73 us (W4A8_FP8 4096x14336 M=1024, 8192x28672
    # M=4096, 57344x8192 M=1024, 6144x4096 M=256).
    weights_in_registers: bool = True
    # Tokens per tile (wgmma's N in the out^T form): 32 or 64 at small M, where a 128-token tile
    # multiplies mostly zero rows; 160 or 176 at large M, where each expanded weight fragment and
    # stage then feeds 1.25-1.4x the tensor work (192 does not fit the consumers' registers:
    # 2 x 96 accumulators and totals next to two fragment sets). The shared-memory form takes 128
    # only (as wna16_wgmma's field).
    rs_block_m: Literal[32, 64, 128, 160, 176] = BLOCK_M
    # CTAs per SM the registers are split for (WgmmaW4a8Tile's CTAS): 2 only with 32-token tiles.
    rs_ctas_per_sm: Literal[1, 2] = 1
    # 2-byte outputs leave each consumer warpgroup through shared memory, one bulk copy per token
    # row (WgmmaW4a8Tile's STAGED; register stores where the output's alignment does not allow
    # it). The out^T form only.
    staged_store: bool = False
    # The two consumer warpgroups issue their K blocks' wgmmas in turns, so one promotes while the
    # other's run (WgmmaW4a8Tile's TURNS, as w8a8_wgmma's consumers always do). The out^T form
    # only. Off unless a config asks for it: 1.05-1.10x the time at six W4A8-fp8 points (H200,
    # same run, benchmarks/notes/session30_w4a8_issue_turns_sweep.json).
    issue_turns: bool = False
    # split-K's splits of a tile as one thread-block cluster, summed over distributed shared
    # memory, each CTA storing a share of the tile's tokens (as W8a8WgmmaConfig.cluster_split).
    # The out^T form stored from registers (no staged_store), 2 to MAX_CLUSTER_SPLIT splits.
    cluster_split: bool = False
    # split-K through the workspace summed by all of a tile's splits at once, each summing and
    # storing a share of the tile's tokens (as W8a8WgmmaConfig.split_scatter, where the launch's
    # whole grid is resident). The out^T form stored from registers (no staged_store), not in
    # clusters.
    split_scatter: bool = False

    @model_validator(mode="after")
    def _tile(self) -> W4a8WgmmaConfig:
        if self.rs_block_m != BLOCK_M and not self.weights_in_registers:
            raise ValueError(
                f"rs_block_m={self.rs_block_m}: tiles of fewer than {BLOCK_M} tokens need the "
                "out^T form (weights_in_registers=True)"
            )
        for name in ("staged_store", "issue_turns"):
            if getattr(self, name) and not self.weights_in_registers:
                raise ValueError(f"{name} needs the out^T form (weights_in_registers=True)")
        if self.rs_ctas_per_sm == 2 and self.rs_block_m != TWO_CTA_BLOCK_M:
            raise ValueError(
                f"rs_ctas_per_sm=2 needs rs_block_m={TWO_CTA_BLOCK_M} (its consumers fit 96 "
                f"registers); got rs_block_m={self.rs_block_m}"
            )
        if self.cluster_split and not (
            self.weights_in_registers
            and not self.staged_store
            and 2 <= self.split_k <= MAX_CLUSTER_SPLIT
        ):
            raise ValueError(
                f"cluster_split needs the out^T form, split_k from 2 to {MAX_CLUSTER_SPLIT} (the "
                "CTAs of a portable cluster) and staged_store=False; got "
                f"weights_in_registers={self.weights_in_registers}, split_k={self.split_k}, "
                f"staged_store={self.staged_store}"
            )
        if self.split_scatter and not (
            self.weights_in_registers
            and not self.staged_store
            and not self.cluster_split
            and self.split_k >= 2
        ):
            raise ValueError(
                "split_scatter needs the out^T form, split_k >= 2, staged_store=False and "
                f"cluster_split=False; got weights_in_registers={self.weights_in_registers}, "
                f"split_k={self.split_k}, staged_store={self.staged_store}, "
                f"cluster_split={self.cluster_split}"
            )
        if self.cluster_split and 4 * self.rs_block_m * BLOCK_N > self.stages * self.stage_bytes:
            raise ValueError(
                f"cluster_split stages a {self.rs_block_m}x{BLOCK_N} fp32 partial tile in the "
                f"ring: {self.stages} stages of {self.stage_bytes} bytes are too few"
            )
        return self

    @property
    def block_m(self) -> int:
        return self.rs_block_m

    @property
    def ctas_per_sm(self) -> int:
        return self.rs_ctas_per_sm

    @property
    def stage_bytes(self) -> int:
        return self.rs_block_m * BLOCK_K + BLOCK_N * BLOCK_K // 2

    @property
    def scale_bytes(self) -> int:
        """Per stage (out^T form): its K block's group scale of each of the tile's weight rows."""
        return 4 * BLOCK_N if self.weights_in_registers else 0

    @property
    def staged_bytes(self) -> int:
        """The consumer warpgroups' staged output rows (staged_store), else 0."""
        # per consumer warpgroup: each token's row of its 64 weight rows (StagedRows<BM, 64>)
        rows = staged_rows_bytes(self.rs_block_m, 64)
        return CONSUMERS * rows if self.staged_store else 0

    @property
    def smem_bytes(self) -> int:
        """Mirrors WgmmaW4a8Tile::SMEM_BYTES: alignment slack, the ring, the stages' scales, the
        expanded tiles, the staged rows, the ring's mbarriers, the split flag."""
        buffers = 0 if self.weights_in_registers else EXPANDED_BUFFERS
        expanded = CONSUMERS * buffers * BLOCK_N * BLOCK_K
        return (
            ALIGN_SLACK
            + self.stages * (self.stage_bytes + self.scale_bytes)
            + expanded
            + self.staged_bytes
            + self.barrier_bytes
            + SPLIT_FLAG_BYTES
        )
