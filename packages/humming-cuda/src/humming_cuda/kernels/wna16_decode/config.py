"""The decode WnA16 kernel's configuration: wna16's tile with one m16 row tile of tokens."""

from __future__ import annotations

from typing import Literal

from pydantic import model_validator

from ..family import check_pdl_arch
from ..wna16.config import Wna16Config


class Wna16DecodeConfig(Wna16Config):
    """Wna16Config with m_frags = 1 (include/humming/kernel/wna16_decode.cuh) and `tokens`, the
    rows of x one launch computes: 8 (one n8 block) or 16 (two). Shared memory, grid and split-K
    are wna16's."""

    family: Literal["wna16_decode"] = "wna16_decode"  # type: ignore[assignment]
    tokens: Literal[8, 16] = 8
    # CTAs per SM the registers are capped for (__launch_bounds__): 3 only for the two-block tile
    # of 128 threads (<= 168 registers, no spills; 256 threads at 3 would leave 85).
    ctas_per_sm: Literal[2, 3] = 2
    # Launched with programmatic dependent launch (sm_90+): the kernel issues its first stages'
    # weight copies before waiting for the previous kernel in the stream.
    pdl: bool = False

    @model_validator(mode="after")
    def _one_token_tile(self) -> Wna16DecodeConfig:
        if self.m_frags != 1:
            raise ValueError(
                f"m_frags={self.m_frags}: the decode kernel takes one 16-row tile of tokens"
            )
        if self.tokens == 16 and self.warps_n != 1:
            # On 2 warps along N this tile spills at two CTAs per SM, and NVRTC 13.0's ptxas (the
            # one CUDA 13.0 installs, the H200 machine's among them) turns its weight copies into
            # LDGSTS through never-written uniform registers: the "illegal instruction" the H200
            # raised (notes/session30.md; root cause in notes/session32.md, tests/test_sass_audit.py
            # pins it). NVRTC 13.5 compiles it correctly, but it is slower than 1 warp along N
            # (W4A16 57344x8192 M=16: 110.6 against 84.8 us), so it is never worth a version check.
            raise ValueError(
                f"tokens=16 needs warps_n=1 (on more warps along N the two-token-block tile "
                f"spills, and NVRTC 13.0 miscompiles its weight copies); got warps_n={self.warps_n}"
            )
        if self.ctas_per_sm == 3 and (self.tokens != 16 or self.threads != 128):
            raise ValueError(
                f"ctas_per_sm=3 needs tokens=16 on 128 threads; got tokens={self.tokens}, "
                f"{self.threads} threads"
            )
        check_pdl_arch(self.pdl, self.arch)
        return self
