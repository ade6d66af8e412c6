"""Synthetic AWQ / 8-bit / FP4 checkpoint shards with their exact dense weights, per format.

Values are decoded here from first principles (E2M1 table, e8m0 = 2^(c-127), torch's own fp8),
independently of humming_core's codecs, so a layout or convention mistake shows as a mismatch.
Each `make_*` takes (N, K, seed, shard index) and returns (checkpoint tensors, dense (N, K) fp32).
"""

from __future__ import annotations

import torch

_E2M1 = torch.tensor([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0])
_AWQ_ORDER = (0, 2, 4, 6, 1, 3, 5, 7)
BLOCK = (32, 32)  # small FP8 blocks so fused sub-layers split across 4 ranks stay block-aligned


def _gen(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def _i32(words: torch.Tensor) -> torch.Tensor:
    return torch.where(words >= 1 << 31, words - (1 << 32), words).to(torch.int32)


def awq_pack(codes: torch.Tensor) -> torch.Tensor:
    """(R, N) 4-bit codes -> (R, N/8) int32, nibble i of a word = column _AWQ_ORDER[i] of its 8."""
    r, n = codes.shape
    grouped = codes.to(torch.int64).reshape(r, n // 8, 8)
    words = torch.zeros(r, n // 8, dtype=torch.int64)
    for i, col in enumerate(_AWQ_ORDER):
        words |= grouped[..., col] << (4 * i)
    return _i32(words)


def make_awq(n: int, k: int, seed: int, shard: int, group: int = 32):
    g = _gen(seed)
    codes = torch.randint(0, 16, (k, n), generator=g)
    zeros = torch.randint(0, 16, (k // group, n), generator=g)
    scales = (torch.rand(k // group, n, generator=g) * 0.02 + 0.005).to(torch.float16)
    rows = torch.arange(k) // group
    dense = (scales.float()[rows] * (codes - zeros[rows]).float()).t()
    tensors = {"qweight": awq_pack(codes), "qzeros": awq_pack(zeros), "scales": scales}
    return tensors, dense.contiguous()


def _fp8_codes(n: int, k: int, g: torch.Generator) -> torch.Tensor:
    return (torch.randn(n, k, generator=g) * 40).to(torch.float8_e4m3fn)


def make_fp8_tensor(n: int, k: int, seed: int, shard: int):
    """Per-tensor weight scale (a different one per shard) and a static input scale."""
    g = _gen(seed)
    w = _fp8_codes(n, k, g)
    scale = torch.tensor([0.001 * (shard + 1)], dtype=torch.float32)
    input_scale = torch.tensor([0.01 + 0.005 * shard], dtype=torch.float32)
    dense = w.float() * scale
    return {"weight": w, "weight_scale": scale, "input_scale": input_scale}, dense


def make_fp8_channel(n: int, k: int, seed: int, shard: int, int8: bool = False):
    g = _gen(seed)
    if int8:
        w = torch.randint(-127, 128, (n, k), generator=g).to(torch.int8)
    else:
        w = _fp8_codes(n, k, g)
    scale = (torch.rand(n, 1, generator=g) * 0.002 + 0.0005).to(torch.bfloat16)
    return {"weight": w, "weight_scale": scale}, w.float() * scale.float()


def make_fp8_block(n: int, k: int, seed: int, shard: int, scale_name: str = "weight_scale"):
    g = _gen(seed)
    w = _fp8_codes(n, k, g)
    bn, bk = BLOCK
    scale = torch.rand(n // bn, k // bk, generator=g) * 0.002 + 0.0005
    full = scale.repeat_interleave(bn, 0).repeat_interleave(bk, 1)
    return {"weight": w, scale_name: scale}, w.float() * full


def _fp4(n: int, k: int, g: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """(packed uint8 (N, K/2), element 2j in the low nibble; E2M1 values (N, K))."""
    codes = torch.randint(0, 16, (n, k), generator=g)
    values = _E2M1[codes & 7] * torch.where(codes >= 8, -1.0, 1.0)
    packed = (codes[:, 0::2] | (codes[:, 1::2] << 4)).to(torch.uint8)
    return packed, values


def make_nvfp4(n: int, k: int, seed: int, shard: int, modelopt: bool = False):
    """NVFP4 W4A4: e4m3 group-16 scales, a per-shard global scale (a power of two, different per
    shard, so fusing must fold it exactly), a static activation global scale."""
    g = _gen(seed)
    packed, values = _fp4(n, k, g)
    scale = (torch.rand(n, k // 16, generator=g) * 4 + 0.5).to(torch.float8_e4m3fn)
    mult = torch.tensor([2.0 ** -(shard + 6)])
    dense = values * scale.float().repeat_interleave(16, 1) * mult
    act_mult = torch.tensor([0.004 + 0.001 * shard])
    if modelopt:  # ModelOpt stores multipliers
        names = ("weight", "weight_scale_2", "input_scale")
        return dict(zip(names, (packed, mult, act_mult), strict=True), weight_scale=scale), dense
    tensors = {
        "weight_packed": packed,
        "weight_scale": scale,
        "weight_global_scale": 1.0 / mult,  # compressed-tensors stores the divisor
        "input_global_scale": 1.0 / act_mult,
    }
    return tensors, dense


def make_mxfp4(n: int, k: int, seed: int, shard: int):
    g = _gen(seed)
    packed, values = _fp4(n, k, g)
    codes = torch.randint(118, 124, (n, k // 32), generator=g).to(torch.uint8)  # 2^-9 .. 2^-4
    dense = values * torch.exp2(codes.float() - 127).repeat_interleave(32, 1)
    return {"weight_packed": packed, "weight_scale": codes}, dense
