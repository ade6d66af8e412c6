"""Synthetic GPTQ / compressed-tensors checkpoint tensors with their exact dense weights.

Packing here is written independently of humming_core (bit by bit), so a layout mistake in either
side shows up as a mismatch.
"""

from __future__ import annotations

import torch


def pack_stream(codes: torch.Tensor, bits: int) -> torch.Tensor:
    """Codes [rows, count] -> int32 [rows, ceil(count*bits/32)], element i at bits [i*b, (i+1)*b)."""
    rows, count = codes.shape
    words = -(-count * bits // 32)
    out = torch.zeros(rows, words, dtype=torch.int64)
    for j in range(bits):
        pos = torch.arange(count) * bits + j
        bit = (codes.to(torch.int64) >> j) & 1
        out.index_add_(1, pos // 32, bit << (pos % 32))
    return torch.where(out >= 1 << 31, out - (1 << 32), out).to(torch.int32)


def random_quant(
    n: int, k: int, bits: int, group: int, sym: bool, act_order: bool, seed: int, zero_lo: int = 0
):
    """Codes (N, K), scales (N, G), zeros (N, G) in [zero_lo, 2^b + zero_lo) or None, g_idx (K,)
    and the dense weight (N, K). GPTQ v1 stores z - 1, so its zero points run from 1 to 2^b."""
    gen = torch.Generator().manual_seed(seed)
    groups = k // group
    codes = torch.randint(0, 1 << bits, (n, k), generator=gen)
    scales = (torch.rand(n, groups, generator=gen) * 0.02 + 0.005).to(torch.float16)
    zeros = (
        None if sym else torch.randint(zero_lo, (1 << bits) + zero_lo, (n, groups), generator=gen)
    )
    g_idx = torch.arange(k) // group
    if act_order:
        g_idx = g_idx[torch.randperm(k, generator=gen)]
    z = torch.full((n, groups), 1 << (bits - 1)) if zeros is None else zeros
    dense = scales.float()[:, g_idx] * (codes - z[:, g_idx]).float()
    return codes, scales, zeros, g_idx.to(torch.int32), dense


def gptq_tensors(codes, scales, zeros, g_idx, bits: int, v1: bool) -> dict[str, torch.Tensor]:
    n = codes.shape[0]
    z = torch.full_like(scales, 1 << (bits - 1), dtype=torch.int64) if zeros is None else zeros
    stored_z = z - 1 if v1 else z
    return {
        "qweight": pack_stream(codes, bits).t().contiguous(),  # (K*b/32, N): along K
        "scales": scales.t().contiguous(),
        "qzeros": pack_stream(stored_z.t(), bits),  # (G, N*b/32): along N per group
        "g_idx": g_idx,
        "_n": torch.tensor(n),
    }


def ct_tensors(
    codes, scales, zeros, g_idx, bits: int, dtype: torch.dtype
) -> dict[str, torch.Tensor]:
    n, k = codes.shape
    out = {
        "weight_packed": pack_stream(codes, bits),
        "weight_scale": scales.to(dtype),
        "weight_shape": torch.tensor([n, k]),
        "weight_g_idx": g_idx,
    }
    if zeros is not None:
        out["weight_zero_point"] = pack_stream(zeros.t(), bits).t().contiguous()  # packed along N
    return out
