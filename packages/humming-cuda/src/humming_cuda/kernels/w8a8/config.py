"""W8A8 / W4A8 kernel configuration (tile shape, pipeline) and the kernel-side view of a spec.

`W8a8Config` is what the heuristics choose; `W8a8Format` is derived from a `QuantSpec` alone: MMA
code type (the activations'), weight storage (8-bit codes or 4-bit nibbles), where the activation
and weight scales apply, epilogue (see include/humming/kernel/w8a8.cuh).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from pydantic import Field, model_validator

from humming_core.spec import QuantSpec

from ..act_quant import ActQuantFormat
from ..family import check_pdl_arch
from ..warp_tile import WarpTileConfig

BLOCK_K = 128  # K depth of one pipeline stage, of an activation group and of a weight block
WEIGHT_SCALE_CODES = {"tensor": 0, "channel": 1, "block": 2, "group": 3}
CODE_CODES = {"int8": 0, "e4m3": 1}
NIBBLE_TYPES = ("int4", "uint4", "e2m1")  # 4-bit weights, expanded to 8-bit codes in registers
CXX_OUT = {"fp16": "half", "bf16": "nv_bfloat16", "fp32": "float"}


class W8a8Config(WarpTileConfig):
    """Block tile 16*m_frags*warps_m (M) x 8*n_frags*warps_n (N) x 128 (K) per stage.

    split_k > 1 splits the K loop over that many CTAs per tile (a launch parameter: the compiled
    code is the same) and sums their partials through a workspace, so layers with few output
    tiles still fill the GPU at decode."""

    family: Literal["w8a8"] = "w8a8"
    # 8: W8A8 weight tiles (128 bytes per row and stage); 4: W4A8 nibbles (64 bytes)
    weight_bits: Literal[4, 8] = 8
    split_k: int = Field(1, ge=1, le=64)
    # Launched with programmatic dependent launch (sm_90+): the GEMM issues its first stages'
    # weight copies while the activation quantizer before it runs.
    pdl: bool = False

    @model_validator(mode="after")
    def _pdl_arch(self) -> W8a8Config:
        check_pdl_arch(self.pdl, self.arch)
        return self

    @property
    def stage_k(self) -> int:
        """K depth of one pipeline stage: the unit split-K divides (iters_per_split counts it)."""
        return BLOCK_K

    @property
    def smem_bytes(self) -> int:
        """The stages' tiles; a format with staged factors adds `factor_bytes` per stage."""
        return self.stages * (
            self.block_m * BLOCK_K + self.block_n * BLOCK_K * self.weight_bits // 8
        )

    def factor_bytes(self, fmt: W8a8Format) -> int:
        """Shared memory per stage for the scales copied with it (W8a8Kernel::kFactors): the tile
        rows' activation-group scales and the weight block scale, in 16-byte units; none in tiles
        of more than 64 rows, which read them from global memory."""
        if self.block_m > 64:
            return 0
        words = (self.block_m if fmt.act_group else 0) + (fmt.weight_scale == "block")
        return -(-words // 4) * 16


@dataclass(frozen=True)
class W8a8Format:
    """Template arguments describing codes, scales and epilogue, derived from a spec."""

    code: str  # MMA operand code, the activations': int8 | e4m3
    weight: str  # weight dtype: int8 | e4m3 (8-bit) or int4 | uint4 | e2m1 (4-bit nibbles)
    act: ActQuantFormat
    weight_scale: str  # tensor | channel | block | group
    group: int  # weight group size along K (0 unless weight_scale == "group")
    zero: bool  # integer zero points (uint4 x int8)
    out: str
    bias: bool

    @classmethod
    def from_spec(cls, spec: QuantSpec) -> W8a8Format:
        w = spec.weight
        grouped = w.scale.granularity == "group"
        return cls(
            code=spec.act.dtype.name,
            weight=w.dtype.name,
            act=ActQuantFormat.from_spec(spec.act),
            weight_scale=w.scale.granularity,
            group=w.scale.group_size if grouped else 0,
            zero=w.zero_point == "int",
            out=spec.output_dtype,
            bias=spec.epilogue.bias,
        )

    @property
    def act_group(self) -> bool:
        return self.act.mode == "group"

    @property
    def weight_bits(self) -> int:
        return 4 if self.weight in NIBBLE_TYPES else 8

    @property
    def promotes(self) -> bool:
        """Partial sums go to fp32 totals per group / block (mirrors W8a8Format::PROMOTE)."""
        return self.code == "e4m3" or self.act_group or self.weight_scale in ("block", "group")
