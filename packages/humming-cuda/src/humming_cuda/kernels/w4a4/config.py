"""W4A4 kernel configuration (tile shape, pipeline) and the kernel-side view of a spec.

`W4a4Config` is what the heuristics choose; `W4a4Format` is derived from a `QuantSpec` alone: the
MMA path (int4, NVFP4 or MXFP4), the activation quantizer, where the scales apply and the epilogue
(see include/humming/kernel/w4a4.cuh).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from humming_core.spec import QuantSpec

from ..act_quant.act4 import Act4Format
from ..warp_tile import WarpTileConfig

BLOCK_K = 256  # K elements per pipeline stage: 128 bytes of nibbles per row, as a W8A8 stage
MMA_K = 64
PATH_CODES = {"int4": 0, "nvfp4": 1, "mxfp4": 2}
CXX_OUT = {"fp16": "half", "bf16": "nv_bfloat16", "fp32": "float"}
# Native int4 tensor cores (mma.sync m16n8k64 s4). caps.mma lists the instruction for every arch
# where ptxas accepts it, but from sm_90a on ptxas expands it into a sequence of other instructions
# (a one-MMA loop compiles to a 3.5 KB cubin on sm_80/sm_89 and 7.5 KB on sm_90a, 9.4 KB on
# sm_120a, while the s8 form stays 3.5-5.5 KB): W4A4 int4 there would be slower than W8A8.
INT4_TENSOR_CORE_ARCHS = ("sm_80", "sm_86", "sm_87", "sm_89")


class W4a4Config(WarpTileConfig):
    """Block tile 16*m_frags*warps_m (M) x 8*n_frags*warps_n (N) x 256 (K) per stage."""

    family: Literal["w4a4"] = "w4a4"

    @property
    def smem_bytes(self) -> int:
        return self.stages * (self.block_m + self.block_n) * (BLOCK_K // 2)


def path_of(spec: QuantSpec) -> str:
    """int4 | nvfp4 | mxfp4, from the activation type and its scale type."""
    act = spec.act
    if act.dtype.name == "int4":
        return "int4"
    return "nvfp4" if act.scale_dtype.name == "ue4m3" else "mxfp4"


@dataclass(frozen=True)
class W4a4Format:
    """Template arguments describing path, scales and epilogue, derived from a spec."""

    path: str
    act: Act4Format
    w_group: int  # int4 weight group size along K (0: per-channel scales); fp4: the block size
    out: str
    bias: bool

    @classmethod
    def from_spec(cls, spec: QuantSpec) -> W4a4Format:
        s = spec.weight.scale
        return cls(
            path=path_of(spec),
            act=Act4Format.from_spec(spec.act),
            w_group=s.group_size if s.granularity == "group" else 0,
            out=spec.output_dtype,
            bias=spec.epilogue.bias,
        )

    @property
    def scaled(self) -> bool:
        """fp4: the block scales are applied by the MMA."""
        return self.path != "int4"

    @property
    def a_group(self) -> int:
        return self.act.group if self.act.mode == "int4_group" else 0

    @property
    def w_grouped(self) -> bool:
        return not self.scaled and self.w_group > 0

    @property
    def promotes(self) -> bool:
        """int4 partial sums go to fp32 totals per group (mirrors W4a4Format::PROMOTE)."""
        return not self.scaled and (self.a_group > 0 or self.w_grouped)
