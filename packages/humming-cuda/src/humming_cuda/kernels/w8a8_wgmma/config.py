"""W8A8-wgmma kernel configuration: a 128x128x128 CTA tile (or 64x128x128 for small M), a chosen
pipeline depth and split-K factor.

The tile follows the kernel's structure (include/humming/kernel/w8a8_wgmma.cuh): consumer
warpgroups of 64 rows (two, or one in the 64-row tile that runs two CTAs per SM), one wgmma
m64n128k32 column block, 128-deep stages matching the 128x128 weight blocks and 128-wide
activation groups. The number of stages in the TMA ring varies, and the K blocks may be split over
several CTAs per tile (a launch parameter: the code is the same).
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from ..wgmma_tile import (
    ALIGN_SLACK,
    BLOCK_M,
    BLOCK_N,
    MAX_CLUSTER_SPLIT,
    WgmmaTileConfig,
    staged_rows_bytes,
)

BLOCK_K = 128
NARROW_BLOCK_M = 64  # the one-consumer tile, two CTAs per SM
SPLIT_FLAG_BYTES = 4  # split-K's "last split" flag, after the ring's barriers

__all__ = ["BLOCK_K", "BLOCK_M", "BLOCK_N", "NARROW_BLOCK_M", "W8a8WgmmaConfig"]


class W8a8WgmmaConfig(WgmmaTileConfig):
    """One producer and two consumer warpgroups over a `stages`-deep ring of A and W tiles.

    split_k > 1 runs each tile's K blocks as that many CTAs (gridDim.z) over contiguous ranges of
    whole 128-deep blocks, summed in fp32 through a workspace (kernels.split_k), so a layer with
    few output tiles fills more SMs; split_iterations may launch fewer when K has few blocks."""

    family: Literal["w8a8_wgmma"] = "w8a8_wgmma"
    stages: int = Field(6, ge=2, le=8)
    split_k: int = Field(1, ge=1, le=16)
    # Rows of M per CTA tile: 128 (two consumer warpgroups, one CTA per SM) or 64 (one consumer
    # warpgroup, two CTAs per SM: WgmmaFp8Tile's CONSUMERS = 1), for M <= 64.
    tile_rows: Literal[64, 128] = BLOCK_M
    # One CTA per SM walking the tiles, its ring carrying on across them (WgmmaFp8Tile's
    # PERSISTENT): the next tile's loads overlap the epilogue. Unsplit 128-row tiles only.
    persistent: bool = False
    # 2-byte outputs leave each consumer warpgroup through shared memory and one bulk copy per
    # row (WgmmaFp8Tile's STAGED; the kernel stores from registers where the output's alignment
    # does not allow it). 128-row tiles only: two 64-row CTAs per SM have no room for the rows.
    staged_store: bool = False
    # Columns of N per CTA tile: 128, or 192 (m64n192k32 wgmmas: 1.5x the flops per byte of A
    # loaded, 96 accumulators and 96 totals per consumer thread under setmaxnreg 232). 128-row
    # tiles only, and not with 128x128 block weight scales.
    tile_cols: Literal[128, 192] = BLOCK_N
    # split-K's splits of a tile as one thread-block cluster (dims (1, 1, splits)), summing their
    # partials over distributed shared memory, each CTA storing a share of the tile's columns
    # (reduce_wgmma_cluster, kernel/wgmma_cta.cuh), instead of through the global workspace,
    # whose last split reads every partial back alone. 2 to MAX_CLUSTER_SPLIT splits, not
    # persistent, stored from registers (no staged_store).
    cluster_split: bool = False
    # split-K through the workspace summed by all of a tile's splits at once, each summing and
    # storing a share of the tile's columns once every split has stored its partial
    # (reduce_wgmma_scatter, kernel/wgmma_cta.cuh), where the launch's whole grid is resident
    # (the bind passes the device's capacity; a larger grid, or HUMMING_SPLIT_SCATTER=0, sums
    # the workspace form's way). Stored from registers: no staged_store, no cluster_split. Not
    # routed: 0.97-1.00x the workspace form at six split points (H100, same run, session 45;
    # w4a8_wgmma/heuristics.py SCATTER_MIN_SPLIT_BLOCKS has the figures).
    split_scatter: bool = False

    @model_validator(mode="after")
    def _persistent_form(self) -> W8a8WgmmaConfig:
        if self.tile_cols != BLOCK_N and self.tile_rows != BLOCK_M:
            raise ValueError(
                f"tile_cols={self.tile_cols} needs the 128-row tile; got tile_rows={self.tile_rows}"
            )
        if self.staged_store and self.tile_rows != BLOCK_M:
            raise ValueError(
                "staged_store needs the 128-row tile (its rows fill the second CTA's shared "
                f"memory); got tile_rows={self.tile_rows}"
            )
        if self.persistent and self.tile_rows != BLOCK_M:
            raise ValueError(
                "a persistent kernel needs the 128-row tile (one CTA per SM); "
                f"got tile_rows={self.tile_rows}"
            )
        if self.persistent and self.split_k > 1:
            raise ValueError(
                f"a persistent kernel runs each tile over all of K: split_k={self.split_k} "
                "needs persistent=False"
            )
        if self.cluster_split and not (
            2 <= self.split_k <= MAX_CLUSTER_SPLIT and not self.persistent and not self.staged_store
        ):
            raise ValueError(
                f"cluster_split needs split_k from 2 to {MAX_CLUSTER_SPLIT} (the CTAs of a "
                "portable cluster), persistent=False and staged_store=False; got "
                f"split_k={self.split_k}, persistent={self.persistent}, "
                f"staged_store={self.staged_store}"
            )
        if self.split_scatter and not (
            self.split_k >= 2
            and not self.persistent
            and not self.staged_store
            and not self.cluster_split
        ):
            raise ValueError(
                "split_scatter needs split_k >= 2, persistent=False, staged_store=False and "
                f"cluster_split=False; got split_k={self.split_k}, persistent={self.persistent}, "
                f"staged_store={self.staged_store}, cluster_split={self.cluster_split}"
            )
        if (
            self.cluster_split
            and 4 * self.tile_rows * self.tile_cols > self.stages * self.stage_bytes
        ):
            raise ValueError(
                f"cluster_split stages a {self.tile_rows}x{self.tile_cols} fp32 partial tile in "
                f"the ring: {self.stages} stages of {self.stage_bytes} bytes are too few"
            )
        return self

    @property
    def block_m(self) -> int:
        return self.tile_rows

    @property
    def block_n(self) -> int:
        return self.tile_cols

    @property
    def consumers(self) -> int:
        return self.tile_rows // 64

    @property
    def threads(self) -> int:
        return 128 * (1 + self.consumers)

    @property
    def ctas_per_sm(self) -> int:
        return 2 if self.tile_rows == NARROW_BLOCK_M else 1

    @property
    def stage_bytes(self) -> int:
        return (self.tile_rows + self.tile_cols) * BLOCK_K

    @property
    def factor_bytes(self) -> int:
        """Per stage: its K block's fp32 factor of every tile row (read by the block-128 and
        group-scaled formats, reserved by all)."""
        return 4 * self.tile_rows

    @property
    def staged_bytes(self) -> int:
        """The consumer warpgroups' staged output rows (staged_store), else 0."""
        return self.consumers * staged_rows_bytes(64, self.tile_cols) if self.staged_store else 0

    @property
    def smem_bytes(self) -> int:
        """Mirrors WgmmaFp8Tile::SMEM_BYTES: alignment slack, the ring, the stages' factors, the
        staged rows, its mbarriers, the split flag."""
        ring = self.stages * (self.stage_bytes + self.factor_bytes)
        return ALIGN_SLACK + ring + self.staged_bytes + self.barrier_bytes + SPLIT_FLAG_BYTES
