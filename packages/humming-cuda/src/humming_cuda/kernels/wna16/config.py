"""WnA16 kernel configuration (how a kernel runs) and the kernel-side view of a weight format.

`Wna16Config` is what candidates/heuristics choose and a tuning database stores. `KernelFormat` is
derived from a `QuantSpec` alone: the template arguments that describe the weights, scales and
epilogue (see include/humming/kernel/wna16.cuh).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from pydantic import Field, model_validator

from humming_core.spec import QuantSpec

from ..base import KernelConfig

# One in-loop scale row for the whole K (per-channel zero points); a power of two above any K.
WHOLE_K_GROUP = 1 << 20
LAYOUT_TILE_N = 64  # columns of one pre-shuffled layout tile (eight n8 MMA blocks)
LAYOUT_TILE_K = 16  # K rows of one layout tile (one k16 MMA step)
SMEM_FLAG_BYTES = 16  # split-K "last CTA" flag, at the end of dynamic shared memory

KIND_CODES = {"int": 0, "uint": 1, "float": 2}
ZERO_CODES = {"none": 0, "int": 1, "float": 2}
EPI_SCALE_CODES = {"none": 0, "channel": 1, "tensor": 2}
CXX_TYPES = {"fp16": "half", "bf16": "nv_bfloat16", "fp32": "float"}


def _pow2(value: int) -> bool:
    return value > 0 and value & (value - 1) == 0


class Wna16Config(KernelConfig):
    """Tile shape and pipeline of one WnA16 kernel.

    Block tile: 16*m_frags rows of M x 64*warps_n columns of N x 16*k_steps*warps_k of K per stage.
    Warps split N (64 columns each) and K (k_steps k16 steps each, summed in shared memory at the
    end). split_k > 1 splits the K loop over CTAs and reduces in fp32 through a workspace.
    """

    family: Literal["wna16"] = "wna16"
    arch: str
    m_frags: int = Field(1, ge=1, le=4)
    warps_n: int = Field(1, ge=1, le=8)
    warps_k: int = Field(4, ge=1, le=8)
    k_steps: int = Field(2, ge=1, le=8)
    stages: int = Field(4, ge=2, le=8)
    split_k: int = Field(1, ge=1, le=64)

    @model_validator(mode="after")
    def _check(self) -> Wna16Config:
        for name in ("warps_n", "warps_k", "k_steps"):
            if not _pow2(getattr(self, name)):
                raise ValueError(
                    f"{name}={getattr(self, name)} must be a power of two (1, 2, 4, 8)"
                )
        if self.warps_n * self.warps_k > 8:
            raise ValueError(
                f"warps_n*warps_k={self.warps_n * self.warps_k} warps: at most 8 per CTA (256 threads)"
            )
        if self.block_k < 64:
            raise ValueError(
                f"block_k=16*k_steps*warps_k={self.block_k}: must be >= 64 (the activation tile's "
                "XOR swizzle spans 8 chunks of 8 values); raise k_steps or warps_k"
            )
        return self

    @property
    def block_m(self) -> int:
        return 16 * self.m_frags

    @property
    def block_n(self) -> int:
        return LAYOUT_TILE_N * self.warps_n

    @property
    def block_k(self) -> int:
        return 16 * self.k_steps * self.warps_k

    @property
    def threads(self) -> int:
        return 32 * self.warps_n * self.warps_k


@dataclass(frozen=True)
class KernelFormat:
    """Template arguments describing the weights and epilogue, derived from a spec."""

    act: str  # fp16 | bf16
    out: str  # fp16 | bf16 | fp32
    bits: int
    kind: str  # int (offset binary, symmetric) | uint | float
    exponent: int
    mantissa: int
    zero: str  # none | int | float
    group: int  # K extent of one in-loop scale row; 0 = no in-loop scales
    epi_scale: str  # none | channel | tensor (fp32, in the epilogue)
    global_scale: bool
    bias: bool

    @property
    def scale_shift(self) -> bool:
        """fp16 in-loop scales carry a per-layer power of two 2^E (undone in the fp32 epilogue), so
        scales from wider types (fp32, bf16, e8m0) keep full fp16 precision and never overflow."""
        return self.act == "fp16" and self.group > 0

    @property
    def folds_float_bias(self) -> bool:
        """bf16 float codes with in-loop scales: the register-A wgmma kernel multiplies each group
        row's scale by the codes' exponent-bias factor instead of every code pair by it
        (Wna16WgmmaRsKernel::FOLD), which bounds the scales the layout takes (layout.py)."""
        return self.act == "bf16" and self.kind == "float" and self.exponent > 0 and self.group > 0

    @property
    def epi_global(self) -> bool:
        """Whether the epilogue multiplies by the fp32 `global_scale` tensor."""
        return self.global_scale or self.scale_shift

    @classmethod
    def from_spec(cls, spec: QuantSpec) -> KernelFormat:
        w = spec.weight
        gran = w.scale.granularity
        if gran == "group":
            group, epi = w.scale.group_size, "none"
        elif gran == "channel" and w.zero_point != "none":
            group, epi = WHOLE_K_GROUP, "none"  # zero points need the scale inside the loop
        elif gran in ("channel", "tensor"):
            group, epi = 0, gran
        else:
            group, epi = -1, "none"  # block scales: rejected by supports()
        return cls(
            act=spec.act.dtype.name,
            out=spec.output_dtype,
            bits=w.dtype.bits,
            kind=w.dtype.kind,
            exponent=w.dtype.exponent,
            mantissa=w.dtype.mantissa,
            zero=w.zero_point,
            group=group,
            epi_scale=epi,
            global_scale=w.global_scale,
            bias=spec.epilogue.bias,
        )

    def smem_bytes(self, cfg: Wna16Config) -> int:
        """Dynamic shared memory of one kernel (mirrors Wna16Smem in kernel/wna16.cuh)."""
        rows = (
            0
            if self.group <= 0
            else (1 if self.group >= cfg.block_k else cfg.block_k // self.group)
        )
        a = cfg.block_m * cfg.block_k * 2
        b = cfg.warps_n * (cfg.block_k // 16) * 128 * self.bits
        s = rows * cfg.block_n * 2
        z = 0 if self.zero == "none" else s
        reduce = (cfg.warps_k - 1) * cfg.warps_n * cfg.m_frags * 32 * 32 * 4
        return max((a + b + s + z) * cfg.stages, reduce) + SMEM_FLAG_BYTES
