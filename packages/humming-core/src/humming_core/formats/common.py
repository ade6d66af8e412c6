"""Conversions shared by several formats: byte packing, fp8 codes, act-order, exact scale checks."""

from __future__ import annotations

import torch

from ..packing.bits import pack_k
from ..spec import ActSpec
from .errors import FormatError


def model_act_dtype(model_config: dict) -> str:
    """The 16-bit activation type of the unquantized model (bf16 when the config does not say)."""
    name = str(model_config.get("torch_dtype") or model_config.get("dtype") or "bfloat16")
    return "fp16" if "float16" in name and "bfloat16" not in name else "bf16"


def wide_act(model_config: dict) -> ActSpec:
    return ActSpec(dtype=model_act_dtype(model_config))


def nibble_bytes_to_words(packed: torch.Tensor, k: int) -> torch.Tensor:
    """uint8 (..., K/2), element 2j in the low nibble of byte j, as canonical int32 words.

    Read as a little-endian bitstream that byte order already *is* the canonical stream, so the
    bytes are only regrouped four by four (padding the last word with zeros).
    """
    if packed.dtype != torch.uint8:
        raise FormatError(f"packed FP4 weights must be uint8, got {packed.dtype}")
    words = -(-k * 4 // 32)
    pad = words * 4 - packed.shape[-1]
    if pad:
        packed = torch.nn.functional.pad(packed, (0, pad))
    return packed.contiguous().view(torch.int32)


def byte_codes_to_words(codes: torch.Tensor) -> torch.Tensor:
    """8-bit codes (any 1-byte dtype: int8 offset already applied, uint8, float8) as canonical words."""
    return pack_k(codes.contiguous().view(torch.uint8).to(torch.int32), 8)


def int8_offset_binary(weight: torch.Tensor) -> torch.Tensor:
    """Signed int8 codes to offset binary u = q + 128 (uint8)."""
    return (weight.to(torch.int16) + 128).to(torch.uint8)


def reciprocal_scale(stored: torch.Tensor, name: str, allow_rounding: bool) -> torch.Tensor:
    """1/stored as a float32 direct multiplier; exact only when stored is a power of two.

    compressed-tensors stores NVFP4 global scales as the divisor. The canonical global scale is a
    multiplier, and 1/x is exact in fp32 only for powers of two; otherwise fp32(1/x) carries a
    relative error below 2^-24 (the value vLLM itself multiplies by). That rounding is taken only
    when the caller opts in with allow_rounding=True.
    """
    inv = (1.0 / stored.to(torch.float64)).to(torch.float32)
    exact = bool(torch.all(inv.to(torch.float64) * stored.to(torch.float64) == 1.0))
    if not exact and not allow_rounding:
        raise FormatError(
            f"{name}: the stored global scale {stored.flatten()[:2].tolist()} is a divisor whose "
            "reciprocal is not exact in fp32 (relative error < 2^-24); pass allow_rounding=True "
            "(CLI: --allow-rounding) to accept fp32(1/scale) as the multiplier"
        )
    return inv.reshape(1)


def k_permutation(g_idx: torch.Tensor, group_size: int, name: str) -> torch.Tensor | None:
    """The K order that makes act-order groups contiguous, or None when they already are.

    Act-order (GPTQ `desc_act`, compressed-tensors `actorder`) assigns column k to group g_idx[k].
    Sorting K by group (stably) gives groups of `group_size` consecutive columns, the canonical
    layout. The kernel then computes y = x[:, perm] @ W_perm^T: the run-time side gathers the
    activations' K by `perm` (or the previous layer's output rows are permuted once at load).
    """
    k = g_idx.numel()
    g_idx = g_idx.to(torch.int64)
    if torch.equal(g_idx, torch.arange(k) // group_size):
        return None
    perm = torch.argsort(g_idx, stable=True)
    counts = torch.bincount(g_idx, minlength=-(-k // group_size))
    full = torch.full_like(counts, group_size)
    full[-1] = k - group_size * (counts.numel() - 1)
    if counts.numel() != full.numel() or not torch.equal(counts, full):
        raise FormatError(
            f"{name}: g_idx assigns {counts.tolist()[:8]}... columns to its groups; act-order needs "
            f"exactly group_size={group_size} columns per group (fewer only in the last)"
        )
    return perm


def permute_k(codes: torch.Tensor, perm: torch.Tensor | None) -> torch.Tensor:
    return codes if perm is None else codes.index_select(-1, perm)
