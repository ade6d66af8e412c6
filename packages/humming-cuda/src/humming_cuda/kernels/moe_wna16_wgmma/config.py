"""MoE WnA16-wgmma configuration: wna16_wgmma's register-A tile (two consumer warpgroups over 256
weight columns x `block_m` token rows, a producer warpgroup; or one over 128 columns, two CTAs per
SM: `block_n`) run by persistent CTAs over (routing alignment block, column tile) tiles, with the
epilogue's staging buffer and row tables beside the ring
(include/humming/kernel/moe_wna16_wgmma.cuh).

No split-K (as in moe_wna16): a MoE layer has E times the weight tiles of a dense layer, so one
launch's CTAs already cover the GPU.
"""

from __future__ import annotations

from typing import Literal

from pydantic import field_validator, model_validator

from ..base import KernelConfig
from ..wgmma_tile import ALIGN_SLACK
from ..wna16.config import KernelFormat
from ..wna16_wgmma.config import BLOCK_K, RS_BLOCK_N, RS_NARROW_BLOCK_N, WgmmaWna16Config

# per block row, twice (tables of two tiles in flight): the routed id, the router weight and the
# activation scale (int32, fp32, fp32)
ROW_TABLE_BYTES = 2 * 12
PARTS = 2  # the epilogue stages the fp32 output tile in halves of rows

STAGES = (3, 4, 5, 6, 8)  # ring depths the kernel is built with; the heuristics pick among them
# wgmma n48 / n64 / n96 / n128 / n160 token tiles (narrower blocks are moe_wna16's). 160 rows need
# the consumers' 208 registers: the producer of zero-point codes or per-row activation scales keeps
# 80 and leaves them 200, where ptxas serializes the n160 wgmmas
# (MoeWna16WgmmaKernel::WIDE_PRODUCER).
BLOCK_MS = (48, 64, 96, 128, 160)
NARROW_PRODUCER_MAX_BLOCK_M = 128
# The e4m3 form also takes narrow blocks (wgmma n16 / n32: few rows per expert, where its fp8
# operands still beat the mma.sync decode kernels on bf16 codes).
E4M3_BLOCK_MS = (16, 32, 64, 128)
E4M3_TWO_CTA_BLOCK_M = 16  # 32-row blocks spilled at two CTAs per SM
E4M3_BLOCK_K = 128  # the e4m3 form's K step: four k32 wgmma (moe_wna16_wgmma_e4m3.cuh)
# The bf16 form's 128-column tile (one consumer warpgroup) runs two CTAs per SM; its consumers
# keep 184 registers beside the gathering producer's 72 (176 / 80 with zero points or row scales):
# blocks of up to 96 rows (MoeWna16WgmmaKernel::CONSUMER_REGS).
NARROW_N_BLOCK_MS = (48, 64, 96)
E4M3_TABLE_BYTES = 4096  # E2m1E4m3Tables::BYTES


class MoeWna16WgmmaConfig(KernelConfig):
    """`stages` K steps in flight; `block_m` routed rows per CTA (the routing's block_size)."""

    family: Literal["moe_wna16_wgmma"] = "moe_wna16_wgmma"
    arch: str
    stages: int = 4
    block_m: int = 128
    # The e4m3 form (moe_wna16_wgmma_e4m3.cuh): e4m3 activations x MXFP4 weights on fp8 wgmma, 128
    # K per step. Only moe_wna16_a8 asks for it (its quantizer writes the interleaved codes).
    e4m3: bool = False
    # CTAs per SM the registers are split for (WgmmaE4m3RsTile::CTAS, WgmmaWna16RsTile::CTAS): 2
    # for the e4m3 form's narrow blocks (E4M3_TWO_CTA_BLOCK_M rows at most) and the bf16 form's
    # 128-column tile, whose shared memory must then fit half an SM (smem_limit).
    ctas_per_sm: Literal[1, 2] = 1
    # Weight columns per tile: 256 (two consumer warpgroups), or 128 for the bf16 form at two
    # CTAs per SM (one consumer warpgroup, NARROW_N_BLOCK_MS). Configurable, not routed: the bench
    # layer measured 0.99-1.02x at M = 512 and far slower at 2048 (notes/session35.md, H100).
    block_n: Literal[128, 256] = RS_BLOCK_N

    @field_validator("stages")
    @classmethod
    def _stages(cls, v: int) -> int:
        if v not in STAGES:
            raise ValueError(f"stages={v}: the moe_wna16_wgmma ring takes {STAGES} stages")
        return v

    @model_validator(mode="after")
    def _block_m(self) -> MoeWna16WgmmaConfig:
        allowed = E4M3_BLOCK_MS if self.e4m3 else BLOCK_MS
        if self.block_m not in allowed:
            form, rest = (
                ("e4m3 form", "")
                if self.e4m3
                else ("bf16 form", " (smaller alignment blocks are the moe_wna16 family's)")
            )
            raise ValueError(
                f"block_m={self.block_m}: the moe_wna16_wgmma {form} takes {allowed} rows{rest}"
            )
        narrow_n = self.block_n == RS_NARROW_BLOCK_N
        if narrow_n and (
            self.e4m3 or self.ctas_per_sm != 2 or self.block_m not in NARROW_N_BLOCK_MS
        ):
            raise ValueError(
                f"block_n={self.block_n} with e4m3={self.e4m3}, ctas_per_sm={self.ctas_per_sm}, "
                f"block_m={self.block_m}: the 128-column tile is the bf16 form's at two CTAs per "
                f"SM with blocks of {NARROW_N_BLOCK_MS} rows (its consumers fit 184 registers)"
            )
        if self.ctas_per_sm == 2 and not (
            narrow_n or (self.e4m3 and self.block_m <= E4M3_TWO_CTA_BLOCK_M)
        ):
            raise ValueError(
                f"ctas_per_sm=2 with e4m3={self.e4m3}, block_m={self.block_m}: two CTAs per SM "
                f"take the e4m3 form with blocks of at most {E4M3_TWO_CTA_BLOCK_M} rows (their "
                f"consumers fit 96 registers), or the bf16 form with block_n={RS_NARROW_BLOCK_N}"
            )
        return self

    @property
    def dense(self) -> WgmmaWna16Config:
        """The dense register-A tile this kernel runs per alignment block: the producer warpgroup
        (it gathers x's rows), 4 fragment buffers, group_m 1 (the persistent CTAs walk the tiles
        in their own order: there is no launch order to choose), the 128-column tile's two CTAs
        per SM (the e4m3 form has its own tile, WgmmaE4m3RsTile)."""
        narrow_n = self.block_n == RS_NARROW_BLOCK_N
        return WgmmaWna16Config(
            arch=self.arch,
            stages=self.stages,
            group_m=1,
            weights_in_registers=True,
            rs_producer=True,
            rs_frag_buffers=4,
            rs_block_m=self.block_m,
            rs_block_n=self.block_n,
            rs_ctas_per_sm=self.ctas_per_sm if narrow_n else 1,
        )

    @property
    def threads(self) -> int:
        return self.dense.threads


def block_ms(fmt: KernelFormat, row_scaled: bool) -> tuple[int, ...]:
    """The bf16 form's blocks for `fmt`: without 160 where the producer keeps 80 registers (zero
    points, per-row activation scales)."""
    if fmt.zero == "none" and not row_scaled:
        return BLOCK_MS
    return tuple(b for b in BLOCK_MS if b <= NARROW_PRODUCER_MAX_BLOCK_M)


def weight_stage_bytes(fmt: KernelFormat, block_n: int = RS_BLOCK_N) -> int:
    """A ring stage less its x tile (Wna16WgmmaRsKernel's W_BYTES + S_BYTES + Z_BYTES):
    block_n / 64 x 4 layout tiles of `bits`-bit codes (32 * bits words each), then 4 group rows
    of block_n scales when the scales are in the loop and of block_n zero points when there are
    any (2 bytes each)."""
    rows = 4 * block_n * 2
    return (
        block_n // 64 * 4 * 32 * fmt.bits * 4
        + (rows if fmt.group > 0 else 0)
        + (rows if fmt.zero != "none" else 0)
    )


def e4m3_stage_bytes(fmt: KernelFormat, block_m: int) -> int:
    """A ring stage of the e4m3 form (E4m3RsSteps): the e4m3 x tile, 4 x 8 layout tiles of codes,
    the step's 4 group rows of 256 bf16 scales (groups are 32 deep or more)."""
    return block_m * E4M3_BLOCK_K + 32 * 32 * fmt.bits * 4 + 4 * RS_BLOCK_N * 2


def smem_limit(cfg: MoeWna16WgmmaConfig, smem_per_block: int) -> int:
    """The shared memory one CTA of `cfg` may take: the arch's per-block limit, or with two CTAs
    per SM half of it less the 1 KB the driver reserves per CTA."""
    return smem_per_block if cfg.ctas_per_sm == 1 else smem_per_block // 2 - 1024


def smem_bytes(fmt: KernelFormat, cfg: MoeWna16WgmmaConfig) -> int:
    """Mirrors MoeWna16WgmmaKernel::SMEM_BYTES for `fmt`: alignment slack, the ring, a part of the
    fp32 output tile, the ring's mbarriers, the row tables (and the e4m3 form's code tables)."""
    if cfg.e4m3:
        stage, tables = e4m3_stage_bytes(fmt, cfg.block_m), E4M3_TABLE_BYTES
    else:
        stage, tables = cfg.block_m * BLOCK_K * 2 + weight_stage_bytes(fmt, cfg.block_n), 0
    part = cfg.block_m // PARTS * cfg.block_n * 4
    return (
        ALIGN_SLACK
        + cfg.stages * stage
        + part
        + cfg.dense.barrier_bytes
        + ROW_TABLE_BYTES * cfg.block_m
        + tables
    )
