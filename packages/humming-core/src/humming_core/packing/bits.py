"""The canonical bitstream: codes of 1..8 bits packed little-endian and contiguously into int32 words.

Element i of a row occupies bits [i*b, (i+1)*b) of the row's stream; bit j of the stream is bit
j % 32 of word j // 32. For 3, 5, 6 and 7 bits some codes straddle two words. A row of K codes takes
ceil(K*b/32) words; the unused high bits of the last word are zero.

The work is done on bytes: every 8 codes fill exactly b bytes, so a row is viewed as groups of 8
codes and the loops run only over the byte and code positions inside one group (fixed and tiny,
never over tensor elements). uint8 arithmetic keeps the memory traffic at one byte per code, and the
bytes become int32 words by a view, which is exact on little-endian hosts and devices.
"""

from __future__ import annotations

import sys

import torch

if sys.byteorder != "little":  # pragma: no cover - every supported host is little-endian
    raise ImportError(
        "humming_core.packing.bits views bytes as int32 words and needs a little-endian host"
    )

_GROUP = 8  # codes per group; a group of b-bit codes is exactly b bytes


def _check_bits(bits: int) -> None:
    if not isinstance(bits, int) or not 1 <= bits <= 8:
        raise ValueError(f"bits={bits!r} is not supported: codes are 1 to 8 bits wide")


def words_for(count: int, bits: int) -> int:
    """Number of int32 words holding `count` codes of `bits` bits."""
    return -(-count * bits // 32)


def _pad_last(x: torch.Tensor, length: int) -> torch.Tensor:
    if x.shape[-1] >= length:
        return x
    return torch.nn.functional.pad(x, (0, length - x.shape[-1]))


def _byte_parts(bits: int, byte: int) -> list[tuple[int, int]]:
    """(code index, shift) of each code overlapping byte `byte` of a group; shift < 0 means >> -shift."""
    lo, hi = 8 * byte, 8 * byte + 8
    return [(i, i * bits - lo) for i in range(_GROUP) if i * bits < hi and (i + 1) * bits > lo]


def pack_k(codes: torch.Tensor, bits: int) -> torch.Tensor:
    """Pack codes [..., K] (integers in [0, 2^bits)) along the last dim into int32 [..., ceil(K*bits/32)]."""
    _check_bits(bits)
    if codes.is_floating_point():
        raise TypeError(f"pack_k takes integer codes, got dtype {codes.dtype}")
    k, lead = codes.shape[-1], codes.shape[:-1]
    groups = -(-k // _GROUP)
    c = (codes & ((1 << bits) - 1)).to(torch.uint8)
    c = _pad_last(c, groups * _GROUP).reshape(*lead, groups, _GROUP)
    out = torch.empty((*lead, groups, bits), dtype=torch.uint8, device=codes.device)
    for byte in range(bits):
        acc = None
        for i, shift in _byte_parts(bits, byte):
            # uint8 shifts drop the bits that belong to the neighbouring byte.
            part = c[..., i] << shift if shift >= 0 else c[..., i] >> -shift
            acc = part if acc is None else acc | part
        out[..., byte] = acc
    n_words = words_for(k, bits)
    stream = _pad_last(out.reshape(*lead, groups * bits), 4 * n_words)[..., : 4 * n_words]
    # A fresh row-major copy: viewing bytes as int32 needs every row stride to be a multiple of 4.
    return stream.clone(memory_format=torch.contiguous_format).view(torch.int32)


def unpack_k(
    words: torch.Tensor, bits: int, k: int, dtype: torch.dtype = torch.int32
) -> torch.Tensor:
    """Inverse of `pack_k`: int32 words [..., W] -> codes [..., k] (int32, or `dtype`: uint8 saves
    memory traffic for callers that only index or convert the codes)."""
    _check_bits(bits)
    if words.dtype != torch.int32:
        raise TypeError(f"unpack_k takes int32 words, got dtype {words.dtype}")
    need = words_for(k, bits)
    if words.shape[-1] < need:
        raise ValueError(
            f"{words.shape[-1]} words hold fewer than k={k} codes of {bits} bits: need {need} words"
        )
    lead = words.shape[:-1]
    groups = -(-k // _GROUP)
    stream = words[..., :need].contiguous().view(torch.uint8)
    stream = _pad_last(stream, groups * bits)[..., : groups * bits].reshape(*lead, groups, bits)
    mask = (1 << bits) - 1
    out = torch.empty((*lead, groups, _GROUP), dtype=torch.uint8, device=words.device)
    for i in range(_GROUP):
        byte, offset = divmod(i * bits, 8)
        value = stream[..., byte] >> offset
        if offset + bits > 8:
            value = value | (stream[..., byte + 1] << (8 - offset))
        out[..., i] = value & mask
    return out.reshape(*lead, groups * _GROUP)[..., :k].to(dtype)


def pack_n(codes: torch.Tensor, bits: int) -> torch.Tensor:
    """Pack zero-point codes laid out like the scales, [..., N, G], into the canonical [..., G, ceil(N*bits/32)]."""
    return pack_k(codes.transpose(-1, -2), bits)


def unpack_n(words: torch.Tensor, bits: int, n: int) -> torch.Tensor:
    """Inverse of `pack_n`: int32 [..., G, W] -> int32 codes [..., N, G]."""
    return unpack_k(words, bits, n).transpose(-1, -2).contiguous()
