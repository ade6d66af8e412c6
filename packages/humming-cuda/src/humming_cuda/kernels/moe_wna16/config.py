"""MoE WnA16 configuration: the dense WnA16 tile (one CTA row = one routing alignment block) and the
epilogue policy types of include/humming/kernel/moe_wna16.cuh.

Split-K is fixed to 1: a MoE layer has E times the weight tiles of a dense layer of the same shape,
so the CTAs of one launch already cover the GPU, and the scattering epilogue stays a plain store.
"""

from __future__ import annotations

import struct
from typing import Literal

from pydantic import model_validator

from humming_core.spec import QuantSpec

from ..wna16.config import KernelFormat, Wna16Config

# MoeActivation codes (moe_wna16.cuh); a GLU applies its code to the gate half.
ACTIVATION_CODES = {"none": 0, "relu": 1, "silu": 2, "gelu": 3, "gelu_tanh": 4}
GLU_GATES = {"silu_mul": "silu", "gelu_mul": "gelu", "gelu_tanh_mul": "gelu_tanh"}
# GLUs the epilogue implements: act(gate) * up, and gpt-oss's clamped SwiGLU.
GLUS = (*GLU_GATES, "swiglu_oai")
GLU_HALF_TILE = 32  # gate (and up) columns of one 64-column layout tile
ROW_TABLE_BYTES = 8  # per block row: the source row of x and the token id (two int32)


class MoeWna16Config(Wna16Config):
    """A WnA16 tile whose block_m is the routing alignment block size: 16 * m_frags rows on the
    dense WnA16 K loop (tokens = 0), or `tokens` = 8 rows (one n8 block) on the decode kernel's
    (include/humming/kernel/moe_wna16_decode.cuh; its tile stays one 16-row fragment). The kernel
    also takes 16 tokens, but two blocks were slower than the dense K loop's 16-row tile where
    they would be chosen (heuristics.MAX_DECODE_ROWS), so configs do not offer them."""

    family: Literal["moe_wna16"] = "moe_wna16"  # type: ignore[assignment]
    split_k: Literal[1] = 1  # type: ignore[assignment]
    tokens: Literal[0, 8] = 0

    @model_validator(mode="after")
    def _decode_tile(self) -> MoeWna16Config:
        if self.tokens and self.m_frags != 1:
            raise ValueError(
                f"tokens={self.tokens} with m_frags={self.m_frags}: the decode form takes one "
                "16-row tile (m_frags=1)"
            )
        return self

    @property
    def block_m(self) -> int:
        return self.tokens or 16 * self.m_frags

    @property
    def tile_rows(self) -> int:
        """Rows of the CTA's activation tile (16 * m_frags in both forms)."""
        return 16 * self.m_frags


def _f32_bits(value: float) -> str:
    """The fp32 bit pattern of `value` as a C++ u32 literal (what MoeSwigluOai takes)."""
    return f"0x{struct.unpack('<I', struct.pack('<f', value))[0]:08x}u"


def epilogue_policy(spec: QuantSpec) -> str:
    """The C++ epilogue policy type (moe_wna16.cuh) for the spec's activation or GLU."""
    ep = spec.epilogue
    if ep.glu == "swiglu_oai":
        return f"humming::MoeSwigluOai<{_f32_bits(ep.swiglu_limit)}, {_f32_bits(ep.swiglu_alpha)}>"
    if ep.glu != "none":
        return f"humming::MoeGlu<{ACTIVATION_CODES[GLU_GATES[ep.glu]]}>"
    return f"humming::MoeAct<{ACTIVATION_CODES[ep.activation]}>"


def row_scaled(policy: str, row_scale: str | None) -> str:
    """`policy` wrapped in MoeRowScaled when a row scale is asked for (moe_wna16_a8)."""
    return policy if row_scale is None else f"humming::MoeRowScaled<{policy}>"


def row_scale_key(row_scale: str | None) -> str:
    """What a row-scaled kernel adds to its name's key: the quantizer its module carries."""
    return "" if row_scale is None else f"|rowscale|{row_scale}"


def smem_bytes(fmt: KernelFormat, cfg: MoeWna16Config) -> int:
    """Dynamic shared memory: the dense kernel's (for the tile's rows) plus the tile's row table
    (MoeWna16Kernel::kBytes)."""
    return fmt.smem_bytes(cfg.model_copy(update={"tokens": 0})) + ROW_TABLE_BYTES * cfg.tile_rows
