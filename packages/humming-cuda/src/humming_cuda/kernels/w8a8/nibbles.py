"""The W4A8 weight layout: 4-bit codes pre-shuffled for the 8-bit MMA, and their expansion tables.

Storage (int32 words, `(N, ceil(K/128) * 16)`, i.e. 64 bytes per row and 128-deep K slab, half the
bytes of W8A8): K is padded to a multiple of 128 with the code of value 0. Inside slab `s` of row
`n`, word `4t + ks` (t = 0..3, ks = 0..3) holds, nibble by nibble (nibble i at bits [4i, 4i + 4)),

    nibble j     (j = 0..3) = code of K element 128s + 32ks + 4t + j
    nibble 4 + j (j = 0..3) = code of K element 128s + 32ks + 16 + 4t + j

which are exactly the bytes of the m16n8k32 B fragment registers b0 and b1 of lane (g, t) for
column n and k32 step ks. So lane (g, t) loads one 16-byte chunk (words 4t..4t+3) per slab and
column, and the chunks of a warp's eight columns are 512 contiguous bytes in shared memory.

Codes are the canonical ones (offset binary for int4, raw bits for e2m1, plain for uint4); the
kernel maps each to its 8-bit MMA code through a 16-entry table (`nibble_table`, four 32-bit
immediates of include/humming/datatype/nibble8.cuh). uint4 with integer zero points uses the
identity table and subtracts its zero point in the int8 lanes.
"""

from __future__ import annotations

import torch

from humming_core.numerics.codec import canonical_table, encode

SLAB_K = 128  # K elements per 64-byte slab of a row (one pipeline stage)
WORDS_PER_SLAB = SLAB_K // 8


def slab_words(k: int) -> int:
    """int32 words per row of the W4A8 layout for K elements."""
    return -(-k // SLAB_K) * WORDS_PER_SLAB


def nibble_table(weight: str, code: str, zero_point: bool) -> list[int]:
    """The 16 operand bytes (0..255) of canonical codes 0..15: exact int8 or e4m3 codes of their
    values (the stored code itself when a zero point is subtracted later)."""
    if zero_point:
        return list(range(16))
    values = canonical_table(weight).double()
    if code == "int8":
        if not torch.equal(values, values.round()) or values.abs().max() > 127:
            raise ValueError(f"{weight} values are not all int8 integers: no int8 table")
        return [int(v) & 0xFF for v in values.tolist()]
    codes = encode("e4m3", values.float(), saturate=False)
    exact = canonical_table("e4m3").double()[codes.long()]
    if not torch.equal(exact, values):
        raise ValueError(f"some {weight} values are not exact in e4m3: no e4m3 table")
    return [int(c) for c in codes.tolist()]


def table_words(table: list[int]) -> tuple[int, int, int, int]:
    """16 bytes -> T0..T3 (entry 4i + j in byte j of word i)."""
    return tuple(sum(table[4 * i + j] << (8 * j) for j in range(4)) for i in range(4))


def zero_code(table: list[int]) -> int:
    """A canonical code whose operand byte is 0 (value 0): the K padding."""
    return table.index(0)


def _to_int32(x: torch.Tensor) -> torch.Tensor:
    """int64 holding 32-bit patterns -> int32 with the same bits."""
    return torch.where(x >= 1 << 31, x - (1 << 32), x).to(torch.int32)


def shuffle(codes: torch.Tensor, pad_code: int) -> torch.Tensor:
    """Canonical codes (N, K) in 0..15 -> the layout's int32 words (N, slab_words(K))."""
    n, k = codes.shape
    k_pad = -(-k // SLAB_K) * SLAB_K
    padded = torch.full((n, k_pad), pad_code, dtype=torch.int64, device=codes.device)
    padded[:, :k] = codes.to(torch.int64)
    # k = 128 s + 32 ks + 16 h + 4 t + j  ->  word (s, t, ks), nibble 4 h + j
    v = padded.view(n, k_pad // SLAB_K, 4, 2, 4, 4).permute(0, 1, 4, 2, 3, 5)
    v = v.reshape(n, -1, 8)
    shifts = torch.arange(0, 32, 4, device=codes.device, dtype=torch.int64)
    return _to_int32((v << shifts).sum(dim=-1)).contiguous()


def unshuffle(words: torch.Tensor, k: int) -> torch.Tensor:
    """Inverse of `shuffle`: int32 words (N, slab_words(K)) -> canonical codes (N, K) int64."""
    n = words.shape[0]
    shifts = torch.arange(0, 32, 4, device=words.device, dtype=torch.int64)
    nib = (words.to(torch.int64) & 0xFFFFFFFF)[..., None] >> shifts & 0xF
    slabs = words.shape[1] // WORDS_PER_SLAB
    v = nib.view(n, slabs, 4, 4, 2, 4).permute(0, 1, 3, 4, 2, 5)  # n s t ks h j -> n s ks h t j
    return v.reshape(n, slabs * SLAB_K)[:, :k]
