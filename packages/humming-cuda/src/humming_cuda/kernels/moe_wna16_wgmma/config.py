"""MoE WnA16-wgmma configuration: wna16_wgmma's register-A tile (two consumer warpgroups over 256
weight columns x `block_m` token rows, a producer warpgroup) with one routing alignment block per
CTA row, plus the block's row table (include/humming/kernel/moe_wna16_wgmma.cuh).

No split-K (as in moe_wna16): a MoE layer has E times the weight tiles of a dense layer, so one
launch's CTAs already cover the GPU.
"""

from __future__ import annotations

from typing import Literal

from pydantic import field_validator

from ..base import KernelConfig
from ..moe_wna16.config import ROW_TABLE_BYTES
from ..wna16_wgmma.config import WgmmaWna16Config

FACTOR_TABLE_BYTES = 8  # per block row: the epilogue's router weight and activation scale (fp32)

STAGES = (4, 6)  # the dense register form's ring depths (wna16_wgmma.heuristics.STAGE_CHOICES)
BLOCK_MS = (64, 128)  # wgmma n64 / n128 token tiles; narrower blocks are moe_wna16's


class MoeWna16WgmmaConfig(KernelConfig):
    """`stages` K steps in flight; `block_m` routed rows per CTA (the routing's block_size)."""

    family: Literal["moe_wna16_wgmma"] = "moe_wna16_wgmma"
    arch: str
    stages: int = 4
    block_m: int = 128

    @field_validator("stages")
    @classmethod
    def _stages(cls, v: int) -> int:
        if v not in STAGES:
            raise ValueError(f"stages={v}: the moe_wna16_wgmma ring takes {STAGES} stages")
        return v

    @field_validator("block_m")
    @classmethod
    def _block_m(cls, v: int) -> int:
        if v not in BLOCK_MS:
            raise ValueError(
                f"block_m={v}: the moe_wna16_wgmma tile takes {BLOCK_MS} rows (smaller alignment "
                "blocks are the moe_wna16 family's)"
            )
        return v

    @property
    def dense(self) -> WgmmaWna16Config:
        """The dense register-A tile this kernel runs per alignment block: the producer warpgroup
        (it gathers x's rows), 4 fragment buffers, launch order (group_m 1: one CTA row is one
        expert's block, there is no M tile order to choose)."""
        return WgmmaWna16Config(
            arch=self.arch,
            stages=self.stages,
            group_m=1,
            weights_in_registers=True,
            rs_producer=True,
            rs_frag_buffers=4,
            rs_block_m=self.block_m,
        )

    @property
    def block_n(self) -> int:
        return self.dense.block_n

    @property
    def threads(self) -> int:
        return self.dense.threads

    @property
    def smem_bytes(self) -> int:
        """MoeWna16WgmmaKernel::SMEM_BYTES: the dense kernel's, the block's row table, then the
        epilogue's row factors."""
        return self.dense.smem_bytes + (ROW_TABLE_BYTES + FACTOR_TABLE_BYTES) * self.block_m
