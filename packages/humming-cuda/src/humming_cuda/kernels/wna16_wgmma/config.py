"""WnA16-wgmma kernel configuration (the weight format is the wna16 family's KernelFormat).

Two forms, both with 64-deep K steps (128 bytes of 16-bit activations: one 128B-swizzle row):
- shared-memory B (include/humming/kernel/wna16_wgmma.cuh): a producer and two consumer
  warpgroups of 64 rows over a 128 (M) x 128 (N) tile, the dequantized weights written to smem;
- `weights_in_registers` (wna16_wgmma_rs.cuh): the weights are wgmma's register A operand, two
  consumer warpgroups over 256 (N) x `rs_block_m` (M: 128, or 16 / 32 / 64 at small M, where the
  tokens are wgmma's narrow N, or 160 / 176 at large M), codes and scales streamed through the
  ring with x by a producer warpgroup (`rs_producer`, the default) or by consumer thread 0, and
  K split `split_k` ways across CTAs (small grids), or (`rs_stream_k`, wna16_wgmma_stream.cuh)
  persistent CTAs sharing the (tile, K step) iterations evenly.
The depth of the ring varies.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from ..wgmma_tile import ALIGN_SLACK, BLOCK_M, BLOCK_N, WgmmaTileConfig

BLOCK_K = 64
RS_BLOCK_N = 256  # weight columns of the register-A form's tile
# The register-A form's ring stage for the widest format, less its x tile (block_m x 64 x 2
# bytes): 8-bit codes of 4 x 4 layout tiles, 4 group rows of 256 scales and of zero points (2
# bytes each). Its kernel uses less for narrower codes; reserving the most costs nothing at one
# CTA per SM.
RS_WEIGHT_STAGE_BYTES = 16 * 32 * 8 * 4 + 2 * 4 * RS_BLOCK_N * 2
RS_BLOCK_MS = (16, 32, 64, 128)  # wgmma N of the register form's token side
# Wider token tiles (humming/mma/wgmma_wide.cuh) for large M: more tensor work per dequantized
# fragment and per stage. Routed by the cost model (heuristics.RS_STEP_COST, measured 2026-12-05).
RS_WIDE_BLOCK_MS = (160, 176)
# 96 rows (m64n96k16, humming/mma/wgmma_narrow.cuh): two whole waves where 128-row tiles leave the
# last one mostly empty (6144 x 4096 at M = 1024 on 132 SMs). Routed by the cost model
# (heuristics.RS_STEP_COST, measured 2026-12-05).
RS_MID_BLOCK_M = 96
# Token tiles of the stream-K form: its epilogue stages parts of at most 64 rows, and 176 rows
# (11 parts of 16) spill under ptxas 13.
STREAM_BLOCK_MS = (16, 32, 64, 96, 128, 160)
RS_MAX_BLOCK_M_2CTAS = 32  # the widest token tile whose accumulators fit two CTAs per SM
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
    rs_block_m: Literal[16, 32, 64, 96, 128, 160, 176] = 128
    split_k: int = Field(1, ge=1, le=16)
    # CTAs per SM the register form's registers are split for (WgmmaWna16RsTile::CTAS): 2 halves
    # each consumer's registers (104) for twice the warps per scheduler; narrow tiles only.
    rs_ctas_per_sm: Literal[1, 2] = 1
    # Persistent stream-K (wna16_wgmma_stream.cuh): one CTA per SM, each taking an even share of
    # the (tile, K step) iterations; partial tiles are summed through a workspace by the last of
    # their CTAs. Configurable, not routed: 1.05-1.31x the time of the routed split-K plan at all
    # seven points of session 30's same-run sweep (benchmarks/notes/session30_wna16_stream_k_sweep.json).
    rs_stream_k: bool = False
    # Launched with programmatic dependent launch: the register form's producer warpgroup issues
    # the first stages' codes and scales before it waits for the previous kernel in the stream
    # (every other form and thread waits before it touches global memory).
    pdl: bool = False

    @model_validator(mode="after")
    def _register_form_options(self) -> WgmmaWna16Config:
        if not self.weights_in_registers and (self.rs_block_m != BLOCK_M or self.split_k != 1):
            raise ValueError(
                f"rs_block_m={self.rs_block_m}, split_k={self.split_k}: only the register-A form "
                "(weights_in_registers=True) has narrow tiles or split-K; the shared-memory form "
                f"takes rs_block_m={BLOCK_M}, split_k=1"
            )
        if self.rs_ctas_per_sm == 2 and not (
            self.weights_in_registers
            and self.rs_producer
            and self.rs_block_m <= RS_MAX_BLOCK_M_2CTAS
        ):
            raise ValueError(
                "rs_ctas_per_sm=2 needs the register-A form with its producer warpgroup and "
                f"rs_block_m <= {RS_MAX_BLOCK_M_2CTAS} (104 registers per consumer thread); got "
                f"weights_in_registers={self.weights_in_registers}, "
                f"rs_producer={self.rs_producer}, rs_block_m={self.rs_block_m}"
            )
        if self.rs_stream_k and not (
            self.weights_in_registers
            and self.rs_producer
            and self.rs_ctas_per_sm == 1
            and self.split_k == 1
            and self.rs_block_m in STREAM_BLOCK_MS
        ):
            raise ValueError(
                "rs_stream_k needs the register-A form with its producer warpgroup, one CTA per SM, "
                f"no split_k (stream-K splits K itself) and rs_block_m in {STREAM_BLOCK_MS}; got "
                f"weights_in_registers={self.weights_in_registers}, "
                f"rs_producer={self.rs_producer}, rs_ctas_per_sm={self.rs_ctas_per_sm}, "
                f"split_k={self.split_k}, rs_block_m={self.rs_block_m}"
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
        return RS_BLOCK_N if self.weights_in_registers else BLOCK_N

    @property
    def ctas_per_sm(self) -> int:
        return self.rs_ctas_per_sm

    @property
    def threads(self) -> int:
        """The register-A form adds a producer warpgroup only with `rs_producer` (else consumer
        thread 0 issues the copies)."""
        if self.weights_in_registers:
            return 128 * (3 if self.rs_producer else 2)
        return super().threads

    @property
    def a_bytes(self) -> int:
        return BLOCK_M * BLOCK_K * 2

    @property
    def smem_bytes(self) -> int:
        """Mirrors WgmmaWna16Tile::SMEM_BYTES: alignment slack, the x ring, the B buffers, the
        ring's mbarriers; for the register-A form Wna16WgmmaRsKernel::SMEM_BYTES of the widest
        format (its ring also holds the epilogue's output tile, block_m x 256 fp32); for stream-K
        Wna16WgmmaStreamKernel::SMEM_BYTES (the ring, then a staged part of the tile beside it)."""
        if self.weights_in_registers:
            stage = self.block_m * BLOCK_K * 2 + RS_WEIGHT_STAGE_BYTES
            if self.rs_stream_k:
                ring = self.stages * stage + self.part_rows * RS_BLOCK_N * 4
            else:
                ring = max(self.stages * stage, self.block_m * RS_BLOCK_N * 4)
            return ALIGN_SLACK + ring + self.barrier_bytes
        b_bytes = BLOCK_N * BLOCK_K * 2
        return ALIGN_SLACK + self.stages * self.a_bytes + B_BUFFERS * b_bytes + self.barrier_bytes
