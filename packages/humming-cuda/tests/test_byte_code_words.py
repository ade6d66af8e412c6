"""8-bit weight codes under fp16 activations. e4m3 on sm_89+ (Dequant::kCvtE4m3): the conversion
instruction gives the value the bit placement gave, code for code, so the kernels' outputs stay
the same (one rounding, the scale multiply, in both); only e4m3fn's two NaN codes differ (NaN
instead of the placement's +-480). The register-A kernel takes each pair's bytes straight from
the packed word (HalfLaneWords<8>: pair 0 in bytes 0 and 2, pair 1 in bytes 1 and 3) with one
byte permute (Dequant::apply_word): beside zeros for the conversion, beside the magic number's
high byte for integer codes (fp16's 1024 + q, as the mask-and-OR gave)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

pytestmark = pytest.mark.cpu

INCLUDE = Path(__file__).resolve().parents[1] / "src/humming_cuda/include/humming"


def _placed_times_256(codes: torch.Tensor) -> torch.Tensor:
    """Dequant::float_pair's placement for e4m3 under fp16: sign to bit 15, exponent|mantissa
    shifted by 7 (value * 2^-8), then times 2^8."""
    bits = ((codes & 0x7F) << 7) | ((codes & 0x80) << 8)
    return bits.to(torch.int16).view(torch.float16).float() * 256.0


def _byte_perm(word: int, high: int, selector: int) -> int:
    """__byte_perm(word, high, selector): result byte i is byte (selector >> 4i) & 7 of the eight
    bytes of word (0-3) and high (4-7)."""
    source = word.to_bytes(4, "little") + high.to_bytes(4, "little")
    return int.from_bytes(bytes(source[(selector >> (4 * i)) & 7] for i in range(4)), "little")


def test_the_conversion_equals_the_placement_except_nan():
    codes = torch.arange(256, dtype=torch.int32)
    converted = codes.to(torch.uint8).view(torch.float8_e4m3fn).to(torch.float16).float()
    placed = _placed_times_256(codes)
    nan = converted.isnan()
    assert nan.nonzero().view(-1).tolist() == [0x7F, 0xFF]
    assert torch.equal(placed[~nan], converted[~nan])
    assert placed[nan].abs().tolist() == [480.0, 480.0]


def test_the_permute_picks_each_pairs_bytes_from_the_word():
    """A word of codes (pair 0 low, pair 1 low, pair 0 high, pair 1 high), the register-A
    kernel's pair(q) = (word >> 8 (q % 2)) & 0x00FF00FF: selector 0x4420 gives pair 0 as the
    conversion reads it (low code in the low byte), 0x4431 pair 1; beside the magic number's
    high byte 0x64, 0x4240 / 0x4341 give pair(q) | 0x64006400 (fp16 1024 + q in each half). The
    header uses those selectors."""
    word = 0xD3C2B1A0  # bytes A0 (pair 0 low), B1 (pair 1 low), C2 (pair 0 high), D3 (pair 1 high)
    pairs = [(word >> (8 * q)) & 0x00FF00FF for q in (0, 1)]
    assert _byte_perm(word, 0, 0x4420) == 0xC2A0
    assert _byte_perm(word, 0, 0x4431) == 0xD3B1
    for q, selector in ((0, 0x4240), (1, 0x4341)):
        assert _byte_perm(word, 0x64646464, selector) == pairs[q] | 0x64006400
    dequant = (INCLUDE / "datatype/dequant.cuh").read_text()
    assert "__byte_perm(word, 0u, odd ? 0x4431 : 0x4420)" in dequant
    assert "__byte_perm(word, kHigh, odd ? 0x4341 : 0x4240)" in dequant
    assert "e4m3x2_to_f16x2(__byte_perm(codes, 0u, 0x4420))" in dequant
    rs = (INCLUDE / "kernel/wna16_wgmma_rs.cuh").read_text()
    assert "Dq::apply_word(hw.w[2 * i + h], 0, gp[i][h])" in rs
    assert "Dq::apply_word(hw.w[2 * i + h], 1, gp[i][h])" in rs
