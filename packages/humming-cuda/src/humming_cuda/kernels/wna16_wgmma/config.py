"""WnA16-wgmma kernel configuration (the weight format is the wna16 family's KernelFormat).

Two forms, both with 64-deep K steps (128 bytes of 16-bit activations: one 128B-swizzle row):
- shared-memory B (include/humming/kernel/wna16_wgmma.cuh): a producer and two consumer
  warpgroups of 64 rows over a 128 (M) x 128 (N) tile, the dequantized weights written to smem;
- `weights_in_registers` (wna16_wgmma_rs.cuh): the weights are wgmma's register A operand, two
  consumer warpgroups over 256 (N) x `rs_block_m` (M: 128, or 16 / 32 / 64 at small M, where the
  tokens are wgmma's narrow N, or 160 / 176 at large M), or one over 128 (`rs_block_n`), codes
  and scales streamed through the ring with x by a producer warpgroup (`rs_producer`, the
  default) or by consumer thread 0, and K split `split_k` ways across CTAs (small grids; summed
  through a workspace by the last split or by all at once, `rs_split_scatter`, or within a
  thread-block cluster: `rs_cluster_split`), or
  (`rs_stream_k`, wna16_wgmma_stream.cuh) persistent CTAs sharing the (tile, K step) iterations
  evenly.
The depth of the ring varies.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from ..wgmma_tile import ALIGN_SLACK, BLOCK_M, BLOCK_N, MAX_CLUSTER_SPLIT, WgmmaTileConfig

BLOCK_K = 64
RS_BLOCK_N = 256  # weight columns of the register-A form's tile (two consumer warpgroups)
# One consumer warpgroup's 128 columns (WgmmaWna16RsTile's CONSUMERS = 1), for two CTAs per SM
RS_NARROW_BLOCK_N = 128


def rs_weight_stage_bytes(block_n: int, code_bits: int = 8) -> int:
    """The register-A form's ring stage less its x tile (block_m x 64 x 2 bytes), for codes of up
    to `code_bits` bits: block_n / 64 x 4 layout tiles of them, 4 group rows of block_n scales and
    of zero points (2 bytes each). Its kernel uses less for narrower codes or without group
    scales / zero points (Wna16WgmmaRsKernel::STAGE_BYTES)."""
    return block_n // 64 * 4 * 32 * code_bits * 4 + 2 * 4 * block_n * 2


MAX_SPLIT = 16  # K splits of a register-form tile
RS_BLOCK_MS = (16, 32, 64, 128)  # wgmma N of the register form's token side
# Wider token tiles (humming/mma/wgmma_wide.cuh) for large M: more tensor work per dequantized
# fragment and per stage. Routed by the cost model (heuristics.RS_STEP_COST, measured 2026-12-05).
RS_WIDE_BLOCK_MS = (160, 176)
# 96 rows (m64n96k16, humming/mma/wgmma_narrow.cuh): two whole waves where 128-row tiles leave the
# last one mostly empty (6144 x 4096 at M = 1024 on 132 SMs). Routed by the cost model
# (heuristics.RS_STEP_COST, measured 2026-12-05).
RS_MID_BLOCK_M = 96
# Token tiles of the stream-K form: its epilogue stages parts of at most 64 rows (48 rows: one
# part), and 176 rows (11 parts of 16) spill under ptxas 13.
STREAM_BLOCK_MS = (16, 32, 48, 64, 96, 128, 160)
RS_MAX_BLOCK_M_2CTAS = 32  # the widest 256-column token tile whose accumulators fit two CTAs per SM
# dequantized weight tiles: one read by wgmma, the next being written, and the previous one, which
# the still-running wgmma of the step before may read
B_BUFFERS = 3

__all__ = ["BLOCK_K", "BLOCK_M", "BLOCK_N", "WgmmaWna16Config"]


class WgmmaWna16Config(WgmmaTileConfig):
    """Two consumer warpgroups (and a producer warpgroup in the shared-memory form); `stages`
    steps in flight."""

    family: Literal["wna16_wgmma"] = "wna16_wgmma"
    stages: int = Field(4, ge=2, le=8)
    weights_in_registers: bool = False
    # The register-A form's copies from a producer warpgroup (setmaxnreg 232 / 40) instead of
    # thread 0, and one A-fragment buffer per K slice of a step instead of two in turn. H200, same
    # run (2026-11-30), W8A16 8192x28672 M=1024: 1099 us from thread 0, 732 with the producer;
    # W4A16 g128 57344x8192 M=1024: 1757 with 2 buffers, 1683 with 4.
    rs_producer: bool = True
    rs_frag_buffers: Literal[2, 4] = 4
    # The register form's token rows per tile (wgmma n16 / n32 / n64 at small M) and K splits
    # across CTAs (reduced in a workspace, humming/epilogue/split_tile.cuh).
    rs_block_m: Literal[16, 32, 48, 64, 96, 128, 160, 176] = 128
    split_k: int = Field(1, ge=1, le=MAX_SPLIT)
    # CTAs per SM the register form's registers are split for (WgmmaWna16RsTile::CTAS): 2 halves
    # each consumer's registers (104) for twice the warps per scheduler; narrow tiles only, or any
    # tile of 128 columns (rs_block_n), whose one consumer warpgroup keeps 232.
    rs_ctas_per_sm: Literal[1, 2] = 1
    # Weight columns of the register form's tile: 256 (two consumer warpgroups) or 128 (one,
    # WgmmaWna16RsTile's CONSUMERS = 1), routed for 4-bit codes at M = 64-256 (heuristics.N128_*).
    rs_block_n: Literal[128, 256] = RS_BLOCK_N
    # Persistent stream-K (wna16_wgmma_stream.cuh): one CTA per SM, each taking an even share of
    # the (tile, K step) iterations; partial tiles are summed through a workspace by the last of
    # their CTAs. Configurable, not routed: 1.05-1.31x the time of the routed split-K plan at all
    # seven points of session 30's same-run sweep (benchmarks/notes/session30_wna16_stream_k_sweep.json).
    rs_stream_k: bool = False
    # Launched with programmatic dependent launch: the register form's producer warpgroup issues
    # the first stages' codes and scales before it waits for the previous kernel in the stream
    # (every other form and thread waits before it touches global memory).
    pdl: bool = False
    # The widest codes the register form's ring stages are sized for (the launch's shared memory;
    # the kernel's stages hold the spec's codes). 8 fits any spec and is what the heuristics
    # route; a spec's own width gives 4-bit codes stages of 28 KB instead of 36 (256 x 128-row
    # tile), room for deeper rings that sweeps may try (benchmarks/notes/session39.md: the routed
    # stream-K kernel waits on its 4-stage ring ~18% of its cycles, yet a fifth stage measured
    # 0.99x on an H100, so none is routed). The render refuses wider codes than this.
    rs_code_bits: int = Field(8, ge=1, le=8)
    # The register form's K splits of a tile as one thread-block cluster (dims (1, 1, splits))
    # summing their partial tiles over distributed shared memory, each storing a share of the rows
    # (humming/epilogue/cluster_split.cuh), instead of through split-K's global workspace, whose
    # last CTA reads every split back alone. At most MAX_CLUSTER_SPLIT splits (a portable cluster).
    rs_cluster_split: bool = False
    # With rs_cluster_split: clusters of this many of a tile's splits (a divisor of split_k, 2 up
    # to MAX_CLUSTER_SPLIT), each CTA's share of the rows then summed over the tile's clusters
    # through the workspace; 0: all of them in one cluster (no workspace). Why: a grid of clusters
    # of all its splits may not fit at once (wgmma_tile.CLUSTER_SLOTS), while the workspace's
    # last CTA reads every other split's whole tile; in clusters of 2, it reads the other
    # clusters' half tiles. A launch whose split count (K steps permitting) is not a multiple
    # runs in clusters of their greatest common divisor.
    rs_cluster_ctas: int = Field(0, ge=0, le=MAX_CLUSTER_SPLIT)
    # Split-K through the workspace summed by all of a tile's splits at once, each summing and
    # storing a share of the rows after every split has stored its partial tile (they wait on
    # the tile's counter), instead of by the last to arrive alone: one tile's worth of reads per
    # CTA, all in parallel, where the last CTA reads every other split's whole tile. Only where
    # the launch's grid is resident at once (the bind passes the device's capacity; a larger
    # grid sums the workspace form's way): a CTA waiting for one that cannot start would hang.
    # HUMMING_SPLIT_SCATTER=0 makes every launch sum the workspace form's way (docs/environment.md:
    # for processes that cannot use every SM the device reports). A kernel of its own (the tile's
    # SPLIT_SCATTER): other kernels leave the branch out, a third of their SASS.
    rs_split_scatter: bool = False

    @model_validator(mode="after")
    def _register_form_options(self) -> WgmmaWna16Config:
        if not self.weights_in_registers and (
            self.rs_block_m != BLOCK_M
            or self.split_k != 1
            or self.rs_block_n != RS_BLOCK_N
            or self.rs_code_bits != 8
        ):
            raise ValueError(
                f"rs_block_m={self.rs_block_m}, rs_block_n={self.rs_block_n}, "
                f"split_k={self.split_k}, rs_code_bits={self.rs_code_bits}: only the register-A "
                "form (weights_in_registers=True) has narrow tiles, split-K or stages sized for "
                f"narrower codes; the shared-memory form takes rs_block_m={BLOCK_M}, "
                f"rs_block_n={RS_BLOCK_N}, split_k=1, rs_code_bits=8"
            )
        narrow_n = self.rs_block_n == RS_NARROW_BLOCK_N
        if narrow_n and not self.rs_producer:
            raise ValueError(
                f"rs_block_n={RS_NARROW_BLOCK_N} (one consumer warpgroup) needs the producer "
                "warpgroup (rs_producer=True)"
            )
        if self.rs_ctas_per_sm == 2 and not (
            self.weights_in_registers
            and self.rs_producer
            and (self.rs_block_m <= RS_MAX_BLOCK_M_2CTAS or narrow_n)
        ):
            raise ValueError(
                "rs_ctas_per_sm=2 needs the register-A form with its producer warpgroup and "
                f"rs_block_m <= {RS_MAX_BLOCK_M_2CTAS} (104 registers per consumer thread) or "
                f"rs_block_n={RS_NARROW_BLOCK_N} (one consumer warpgroup); got "
                f"weights_in_registers={self.weights_in_registers}, "
                f"rs_producer={self.rs_producer}, rs_block_m={self.rs_block_m}, "
                f"rs_block_n={self.rs_block_n}"
            )
        if self.rs_stream_k and not (
            self.weights_in_registers
            and self.rs_producer
            and (self.rs_ctas_per_sm == 1 or narrow_n)
            and self.split_k == 1
            and self.rs_block_m in STREAM_BLOCK_MS
        ):
            raise ValueError(
                "rs_stream_k needs the register-A form with its producer warpgroup, one CTA per SM "
                f"(or two with rs_block_n={RS_NARROW_BLOCK_N}), no split_k (stream-K splits K "
                f"itself) and rs_block_m in {STREAM_BLOCK_MS}; got "
                f"weights_in_registers={self.weights_in_registers}, "
                f"rs_producer={self.rs_producer}, rs_ctas_per_sm={self.rs_ctas_per_sm}, "
                f"rs_block_n={self.rs_block_n}, split_k={self.split_k}, "
                f"rs_block_m={self.rs_block_m}"
            )
        most_splits = MAX_SPLIT if self.rs_cluster_ctas else MAX_CLUSTER_SPLIT
        if self.rs_cluster_split and not (
            self.weights_in_registers and not self.rs_stream_k and 2 <= self.split_k <= most_splits
        ):
            raise ValueError(
                "rs_cluster_split needs the register-A form without stream-K and split_k from 2 "
                f"to {MAX_CLUSTER_SPLIT} (the CTAs of a portable cluster; to {MAX_SPLIT} in "
                "clusters of rs_cluster_ctas); got "
                f"weights_in_registers={self.weights_in_registers}, "
                f"rs_stream_k={self.rs_stream_k}, split_k={self.split_k}"
            )
        if self.rs_split_scatter and not (
            self.weights_in_registers
            and not self.rs_stream_k
            and not self.rs_cluster_split
            and self.split_k >= 2
        ):
            raise ValueError(
                "rs_split_scatter needs the register-A form's split-K through the workspace: "
                "weights_in_registers, split_k >= 2, no rs_stream_k and no rs_cluster_split; got "
                f"weights_in_registers={self.weights_in_registers}, split_k={self.split_k}, "
                f"rs_stream_k={self.rs_stream_k}, rs_cluster_split={self.rs_cluster_split}"
            )
        if self.rs_cluster_ctas and not (
            self.rs_cluster_split
            and self.rs_cluster_ctas >= 2
            and self.rs_cluster_ctas < self.split_k
            and self.split_k % self.rs_cluster_ctas == 0
        ):
            raise ValueError(
                f"rs_cluster_ctas={self.rs_cluster_ctas} needs rs_cluster_split and a divisor of "
                f"split_k from 2 to split_k - 1 (0: all splits in one cluster); got "
                f"rs_cluster_split={self.rs_cluster_split}, split_k={self.split_k}"
            )
        return self

    @property
    def part_rows(self) -> int:
        """Rows of the stream-K epilogue's staged part (Wna16WgmmaStreamKernel::PARTS): the most
        8-row groups, at most 8, that divide the tile's."""
        groups = self.block_m // 8
        return 8 * max(g for g in range(1, 9) if groups % g == 0)

    @property
    def block_m(self) -> int:
        return self.rs_block_m if self.weights_in_registers else BLOCK_M

    @property
    def block_n(self) -> int:
        return self.rs_block_n if self.weights_in_registers else BLOCK_N

    @property
    def consumers(self) -> int:
        """Consumer warpgroups: 128 weight columns each in the register-A form."""
        return self.block_n // RS_NARROW_BLOCK_N if self.weights_in_registers else 2

    @property
    def ctas_per_sm(self) -> int:
        return self.rs_ctas_per_sm

    @property
    def threads(self) -> int:
        """The register-A form adds a producer warpgroup only with `rs_producer` (else consumer
        thread 0 issues the copies)."""
        if self.weights_in_registers:
            return 128 * (self.consumers + (1 if self.rs_producer else 0))
        return super().threads

    @property
    def a_bytes(self) -> int:
        return BLOCK_M * BLOCK_K * 2

    @property
    def smem_bytes(self) -> int:
        """Mirrors WgmmaWna16Tile::SMEM_BYTES: alignment slack, the x ring, the B buffers, the
        ring's mbarriers; for the register-A form Wna16WgmmaRsKernel::SMEM_BYTES of the widest
        format its stages hold (rs_code_bits; its ring also holds the epilogue's output tile,
        block_m x block_n fp32); for stream-K Wna16WgmmaStreamKernel::SMEM_BYTES (the ring, then
        a staged part of the tile beside it)."""
        if self.weights_in_registers:
            stage = self.block_m * BLOCK_K * 2 + rs_weight_stage_bytes(
                self.block_n, self.rs_code_bits
            )
            if self.rs_stream_k:
                ring = self.stages * stage + self.part_rows * self.block_n * 4
            else:
                ring = max(self.stages * stage, self.block_m * self.block_n * 4)
            return ALIGN_SLACK + ring + self.barrier_bytes
        b_bytes = BLOCK_N * BLOCK_K * 2
        return ALIGN_SLACK + self.stages * self.a_bytes + B_BUFFERS * b_bytes + self.barrier_bytes
