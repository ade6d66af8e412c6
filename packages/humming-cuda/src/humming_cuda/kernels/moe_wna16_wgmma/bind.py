"""Bind a loaded MoE WnA16-wgmma function: moe_wna16's call contract, checks, launch and prepared
call (MoeWna16Kernel, MoeWna16Call), with this entry's parameters and shared memory."""

from __future__ import annotations

from typing import Any

import torch

from ...args import Signature, TensorArg
from ..moe_wna16.bind import SCALARS, MoeWna16Kernel
from ..moe_wna16.bind import signature as moe_signature
from ..wna16.config import KernelFormat
from ..wna16_wgmma.bind import group_shift
from .config import smem_bytes

# HUMMING_MOE_WNA16_ENTRY's scalars plus the scale group's log2 after `groups`
_AFTER_GROUPS = [name for name, _ in SCALARS].index("groups") + 1
_SCALARS = (*SCALARS[:_AFTER_GROUPS], ("group_shift", "GS"), *SCALARS[_AFTER_GROUPS:])


def signature(fmt: KernelFormat, name: str, e4m3: bool = False) -> Signature:
    """Parameters in the order of HUMMING_MOE_WNA16_WGMMA_ENTRY (moe_wna16_wgmma.cuh); `e4m3`:
    of HUMMING_MOE_WNA16_WGMMA_E4M3_ENTRY (moe_wna16_wgmma_e4m3.cuh), whose x holds the e4m3 codes
    and which takes the rows' scale exponents last."""
    sig = moe_signature(fmt, name, _SCALARS)
    if not e4m3:
        return sig
    codes = TensorArg("x", torch.float8_e4m3fn, ("M", "K"), layout="rows")
    return Signature(
        *(codes if a.name == "x" else a for a in sig.args),
        TensorArg("row_exp", torch.int32, ("E", "NP")),
        kernel=name,
    )


class MoeWna16WgmmaKernel(MoeWna16Kernel):
    """`kernel(x=, out=, sorted_token_ids=, expert_ids=, num_tokens_post_padded=, top_k=,
    block_size=, topk_weights=None, **packed)` exactly as MoeWna16Kernel (`prepare` included).
    Persistent: as many CTAs as the GPU holds at once (at most one per tile), each walking the
    (alignment block of `block_m` sorted ids, 256 weight columns) tiles."""

    def _persistent_ctas(self) -> int:
        return self.function.resident_ctas(self.config.threads, self.smem)

    def _signature(self) -> Signature:
        return signature(self.fmt, self.name, self.config.e4m3)

    def _smem_bytes(self) -> int:
        return smem_bytes(self.fmt, self.config)

    def _check_call(self, values: dict[str, Any]) -> None:
        super()._check_call(values)
        # The producer warpgroup gathers x's rows in 16-byte chunks (cp.async): the signature
        # checks x's base and row stride for 16-byte alignment, K must fill whole chunks.
        x = values.get("x")
        per_chunk = 16 if self.config.e4m3 else 8  # values per 16-byte chunk
        if isinstance(x, torch.Tensor) and x.dim() == 2 and x.shape[1] % per_chunk:
            raise ValueError(
                f"{self.name}: argument 'x': K={x.shape[1]}, but the kernel copies rows in 16-byte "
                f"chunks: K must be a multiple of {per_chunk} (pad K with zero weights)"
            )

    def _dims(self, values: dict[str, Any]) -> dict[str, int]:
        return {**super()._dims(values), "GS": group_shift(self.fmt)}
