"""MoE WnA16 configuration: the dense WnA16 tile (one CTA row = one routing alignment block) and the
epilogue codes of include/humming/kernel/moe_wna16.cuh.

Split-K is fixed to 1: a MoE layer has E times the weight tiles of a dense layer of the same shape,
so the CTAs of one launch already cover the GPU, and the scattering epilogue stays a plain store.
"""

from __future__ import annotations

from typing import Literal

from humming_core.spec import QuantSpec

from ..wna16.config import KernelFormat, Wna16Config

# MoeActivation codes (moe_wna16.cuh); a GLU applies its code to the gate half.
ACTIVATION_CODES = {"none": 0, "relu": 1, "silu": 2, "gelu": 3, "gelu_tanh": 4}
GLU_GATES = {"silu_mul": "silu", "gelu_mul": "gelu", "gelu_tanh_mul": "gelu_tanh"}
GLU_HALF_TILE = 32  # gate (and up) columns of one 64-column layout tile
ROW_TABLE_BYTES = 8  # per block row: the source row of x and the token id (two int32)


class MoeWna16Config(Wna16Config):
    """A WnA16 tile whose block_m (16 * m_frags) is the routing alignment block size."""

    family: Literal["moe_wna16"] = "moe_wna16"  # type: ignore[assignment]
    split_k: Literal[1] = 1  # type: ignore[assignment]


def activation_code(spec: QuantSpec) -> int:
    """The MoeActivation code of the spec's activation, or of its GLU's gate."""
    ep = spec.epilogue
    return ACTIVATION_CODES[GLU_GATES[ep.glu] if ep.glu != "none" else ep.activation]


def smem_bytes(fmt: KernelFormat, cfg: MoeWna16Config) -> int:
    """Dynamic shared memory: the dense kernel's plus the block's row table (MoeWna16Kernel::kBytes)."""
    return fmt.smem_bytes(cfg) + ROW_TABLE_BYTES * cfg.block_m
