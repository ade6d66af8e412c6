"""The canonical bitstream: layout bit for bit, pack/unpack identity for every width, speed."""

from __future__ import annotations

import time

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from humming_core.packing.bits import pack_k, pack_n, unpack_k, unpack_n, words_for


def _stream_int(words_row: list[int]) -> int:
    """A row of int32 words as one little-endian Python integer."""
    return sum((w & 0xFFFFFFFF) << (32 * j) for j, w in enumerate(words_row))


@pytest.mark.parametrize("bits", range(1, 9))
@pytest.mark.parametrize("k", [1, 7, 8, 31, 32, 33, 96, 129])
def test_layout_is_a_little_endian_bitstream(bits, k):
    g = torch.Generator().manual_seed(bits * 1000 + k)
    codes = torch.randint(0, 1 << bits, (3, k), generator=g)
    words = pack_k(codes, bits)
    assert words.dtype == torch.int32 and words.shape == (3, words_for(k, bits))
    for row, packed in zip(codes.tolist(), words.tolist(), strict=True):
        # element i at bits [i*b, (i+1)*b); unused high bits zero
        assert _stream_int(packed) == sum(v << (bits * i) for i, v in enumerate(row))


def test_three_bit_codes_straddle_words():
    codes = torch.zeros(1, 11, dtype=torch.int32)
    codes[0, 10] = 0b111  # bits 30, 31, 32: two in word 0, one in word 1
    words = pack_k(codes, 3)
    assert [w & 0xFFFFFFFF for w in words[0].tolist()] == [0xC0000000, 0x1]
    assert unpack_k(words, 3, 11)[0, 10].item() == 7


@settings(max_examples=150, deadline=None)
@given(
    bits=st.integers(1, 8),
    lead=st.lists(st.integers(1, 3), max_size=2),
    k=st.integers(1, 300),
    seed=st.integers(0, 2**31 - 1),
)
def test_pack_unpack_identity(bits, lead, k, seed):
    g = torch.Generator().manual_seed(seed)
    codes = torch.randint(0, 1 << bits, (*lead, k), generator=g, dtype=torch.int32)
    words = pack_k(codes, bits)
    assert words.shape == (*lead, words_for(k, bits))
    assert torch.equal(unpack_k(words, bits, k), codes)
    assert torch.equal(pack_k(unpack_k(words, bits, k), bits), words)
    assert torch.equal(unpack_k(words, bits, k, dtype=torch.uint8), codes.to(torch.uint8))


@settings(max_examples=60, deadline=None)
@given(
    bits=st.integers(1, 8),
    n=st.integers(1, 100),
    groups=st.integers(1, 5),
    seed=st.integers(0, 2**31 - 1),
)
def test_zero_points_pack_along_n(bits, n, groups, seed):
    g = torch.Generator().manual_seed(seed)
    zeros = torch.randint(
        0, 1 << bits, (n, groups), generator=g, dtype=torch.int32
    )  # laid out like scales
    words = pack_n(zeros, bits)
    assert words.shape == (groups, words_for(n, bits))
    assert torch.equal(words, pack_k(zeros.T, bits))  # each group's N codes are one bitstream
    assert torch.equal(unpack_n(words, bits, n), zeros)


def test_signed_values_pack_as_their_low_bits():
    q = torch.tensor([[-8, -1, 0, 7]])
    assert torch.equal(unpack_k(pack_k(q, 4), 4, 4), q & 15)


def test_errors_name_the_problem():
    with pytest.raises(ValueError, match="1 to 8 bits"):
        pack_k(torch.zeros(1, 4, dtype=torch.int32), 9)
    with pytest.raises(TypeError, match="integer codes"):
        pack_k(torch.zeros(1, 4), 4)
    with pytest.raises(ValueError, match="need 2 words"):
        unpack_k(torch.zeros(1, 1, dtype=torch.int32), 4, 9)
    with pytest.raises(TypeError, match="int32 words"):
        unpack_k(torch.zeros(1, 1, dtype=torch.int64), 4, 8)


def test_int4_pack_of_a_large_layer_is_fast():
    codes = torch.randint(0, 16, (4096, 14336), dtype=torch.uint8)
    pack_k(codes[:8], 4)  # warm-up
    best = min(_timed(lambda: pack_k(codes, 4)) for _ in range(2))
    # ~0.15 s on an idle 2-core CPU; the bound leaves room for a loaded CI machine.
    assert best < 1.0, f"packing 4096x14336 int4 took {best:.2f} s"
    words = pack_k(codes, 4)
    best = min(_timed(lambda: unpack_k(words, 4, 14336)) for _ in range(2))
    assert best < 3.0, f"unpacking 4096x14336 int4 took {best:.2f} s"


def _timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start
