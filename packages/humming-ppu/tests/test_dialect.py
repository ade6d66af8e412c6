"""The PPU dialect: instruction spellings, fragment order, the B-row permutation (exact, round
trips, zero points packed along N) and the specs the PPU rejects."""

from __future__ import annotations

import pytest
import torch

from humming_core.device import GemmProblem
from humming_core.packing import CanonicalWeight
from humming_core.spec import presets
from humming_ppu.dialect import (
    B_ROW_PERM,
    PPU,
    PPU_EMULATION,
    check,
    permute_canonical,
    permute_packed_rows,
    permute_rows,
    unpermute_canonical,
    unpermute_packed_rows,
    unpermute_rows,
)


# ---- independent references: plain Python bitstreams -------------------------------------------
def _pack(codes: list[list[int]], bits: int) -> torch.Tensor:
    words = -(-len(codes[0]) * bits // 32)
    rows = []
    for row in codes:
        value = sum(c << (i * bits) for i, c in enumerate(row))
        ws = [(value >> (32 * j)) & 0xFFFFFFFF for j in range(words)]
        rows.append([w - (1 << 32) if w >= 1 << 31 else w for w in ws])
    return torch.tensor(rows, dtype=torch.int32)


def _unpack(words: torch.Tensor, bits: int, count: int) -> list[list[int]]:
    out = []
    for row in words.tolist():
        value = sum((w & 0xFFFFFFFF) << (32 * j) for j, w in enumerate(row))
        out.append([(value >> (i * bits)) & ((1 << bits) - 1) for i in range(count)])
    return out


def _stored_order(n: int) -> list[int]:
    return [8 * (i // 8) + B_ROW_PERM[i % 8] for i in range(n)]


# ---- instructions and fragments ------------------------------------------------------------------
def test_mma_spellings():
    assert PPU.mma_instruction("f16") == "ppu.mma.sync.aligned.m16n16k16.row.col.f32.f16.f16.f32"
    assert PPU.mma_instruction("bf16", "f16").endswith("m16n16k16.row.col.f16.bf16.bf16.f16")
    assert PPU.mma_instruction("s8") == (
        "ppu.mma.sync.aligned.m16n16k32.row.col.satfinite.s32.s8.s8.s32"
    )
    with pytest.raises(ValueError, match="no PPU MMA for operand type 'e4m3'"):
        PPU.mma_instruction("e4m3")


def test_emulation_issues_sm80_n8_instructions():
    assert (
        PPU_EMULATION.mma_instruction("f16") == "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"
    )
    assert PPU_EMULATION.emulate_n16_with_two_n8 and PPU_EMULATION.b_row_perm == PPU.b_row_perm
    with pytest.raises(ValueError, match="accumulator 'f16' with bf16"):
        PPU_EMULATION.mma_instruction("bf16", "f16")


def test_accumulator_fragment_enumerates_n_before_m():
    assert [PPU.acc_position(i) for i in range(4)] == [(0, 0), (0, 1), (1, 0), (1, 1)]
    assert PPU_EMULATION.acc_n_before_m  # emulation keeps the PPU order on purpose


def test_dialect_facts():
    assert PPU.mma_n == 16 and not PPU.half_m_mma and not PPU.evict_first_hint
    assert PPU.plain_copy == "aiu_bulk" and PPU.indexed_copy == "cp.async"
    assert PPU.ldmatrix.format(count=4).startswith("ppu.ldmatrix.sync.aligned.m8n8.x4.swzl")
    assert len(PPU.ldmatrix_operands) == 6 and PPU.ldmatrix_b_rows == 16
    assert "USE_PPU=1" in PPU.defines
    hash(PPU)  # frozen and hashable: usable as part of a render key


# ---- the row permutation -------------------------------------------------------------------------
def test_permute_rows_exact_mapping():
    rows = torch.arange(24)
    assert permute_rows(rows, 0).tolist() == _stored_order(24)
    assert permute_rows(rows, 0)[:8].tolist() == [0, 2, 4, 6, 1, 3, 5, 7]


@pytest.mark.parametrize("dim", [0, 1, -2])
def test_permute_rows_round_trip(dim):
    t = torch.randn(16, 32, 3)
    p = permute_rows(t, dim)
    assert not torch.equal(p, t)
    assert torch.equal(unpermute_rows(p, dim), t)
    assert torch.equal(permute_rows(unpermute_rows(t, dim), dim), t)


def test_permute_rows_needs_groups_of_eight():
    with pytest.raises(ValueError, match="N % 8 == 0"):
        permute_rows(torch.zeros(12, 4), 0)


@pytest.mark.parametrize("bits", range(1, 9))
def test_packed_rows_match_unpack_permute_pack(bits):
    gen = torch.Generator().manual_seed(bits)
    n = 40
    codes = torch.randint(0, 1 << bits, (3, n), generator=gen).tolist()
    words = _pack(codes, bits)
    permuted = permute_packed_rows(words, bits, n)
    order = _stored_order(n)
    assert _unpack(permuted, bits, n) == [[row[j] for j in order] for row in codes]
    assert permuted.shape == words.shape and permuted.dtype == torch.int32
    assert torch.equal(unpermute_packed_rows(permuted, bits, n), words)


# ---- whole canonical weights ---------------------------------------------------------------------
def _gptq_weight(n=32, k=256, g=128) -> CanonicalWeight:
    gen = torch.Generator().manual_seed(0)
    q = torch.randint(0, 16, (n, k), generator=gen)
    z = torch.randint(0, 16, (k // g, n), generator=gen)
    scales = torch.rand(n, k // g, generator=gen).half() + 0.5
    return CanonicalWeight(
        spec=presets.GPTQ_INT4,
        n=n,
        k=k,
        qweight=_pack(q.tolist(), 4),
        scales=scales,
        zeros=_pack(z.tolist(), 4),
    )


def _dequant_int_zp(cw: CanonicalWeight, g: int = 128) -> torch.Tensor:
    q = torch.tensor(_unpack(cw.qweight, 4, cw.k), dtype=torch.float32)
    z = torch.tensor(_unpack(cw.zeros, 4, cw.n), dtype=torch.float32).T  # (n, groups)
    s = cw.scales.float()
    return (q - z.repeat_interleave(g, 1)) * s.repeat_interleave(g, 1)


def test_permuted_weight_dequantizes_to_permuted_rows():
    cw = _gptq_weight()
    ppu = permute_canonical(cw)
    # Every piece moved together: row i of the PPU weight is canonical row order[i], exactly.
    assert torch.equal(_dequant_int_zp(ppu), _dequant_int_zp(cw)[_stored_order(cw.n)])
    back = unpermute_canonical(ppu)
    for name in ("qweight", "scales", "zeros"):
        assert torch.equal(getattr(back, name), getattr(cw, name)), name


def test_scales_applied_after_the_mma_stay_in_output_order():
    cw = _gptq_weight()
    ppu = permute_canonical(cw, scales_before_mma=False)
    assert torch.equal(ppu.scales, cw.scales)
    assert torch.equal(ppu.qweight, permute_rows(cw.qweight, 0))


def test_block_scales_and_float_zero_points():
    n, k = 256, 256
    block = CanonicalWeight(
        spec=presets.FP8_BLOCK128,
        n=n,
        k=k,
        qweight=torch.randint(0, 99, (n, k // 4)),
        scales=torch.rand(2, 2),
    )
    ppu = permute_canonical(block)
    assert torch.equal(ppu.scales, block.scales)  # each block holds whole groups of 8 rows
    gguf = CanonicalWeight(
        spec=presets.GGUF_Q4_K,
        n=16,
        k=64,
        qweight=torch.randint(0, 99, (16, 8)),
        scales=torch.rand(16, 2),
        zeros=torch.rand(16, 2),
    )
    ppu = permute_canonical(gguf)
    assert torch.equal(ppu.zeros, permute_rows(gguf.zeros, 0))
    assert torch.equal(unpermute_canonical(ppu).zeros, gguf.zeros)


def test_moe_weights_permute_per_expert():
    e, n = 3, 16
    qweight = torch.randint(0, 99, (e, n, 4))
    cw = CanonicalWeight(
        spec=presets.W4A16_G128, n=n, k=32, qweight=qweight, scales=torch.rand(e, n, 1)
    )
    ppu = permute_canonical(cw)
    for x in range(e):
        assert torch.equal(ppu.qweight[x], permute_rows(qweight[x], 0))


# ---- specs the PPU rejects -----------------------------------------------------------------------
_PROBLEM = GemmProblem(n=4096, k=4096, m=16)


@pytest.mark.parametrize(
    ("preset", "why"),
    [
        ("W4A4_INT4", "no int4 MMA"),
        ("W8A8_FP8", "no fp8 MMA"),
        ("W4A8_FP8", "no fp8 MMA"),
        ("MXFP4_A8", "no fp8 MMA"),
        ("FP8_BLOCK128", "no fp8 MMA"),
        ("W4A4_NVFP4", "block-scaled MMA"),
    ],
)
def test_rejects_activation_types_without_an_mma(preset, why):
    support = check(presets.preset(preset), _PROBLEM)
    assert not support
    assert why in support.reason and "int8 activations" in support.reason


@pytest.mark.parametrize(
    "preset",
    ["W4A16_G128", "GPTQ_INT4", "MXFP4", "NVFP4", "FP8_CHANNEL", "W8A8_INT8", "W4A8_INT8"],
)
def test_accepts_16_bit_and_int8_activations(preset):
    assert check(presets.preset(preset), _PROBLEM).ok


def test_rejects_n_not_a_multiple_of_8():
    support = check(presets.W4A16_G128, GemmProblem(n=4100, k=4096))
    assert not support and "multiple of 8" in support.reason


def test_problem_act_dtype_may_name_the_quantized_activations():
    # ops.PreparedGemm describes a W8A8 layer's problem with the spec's own act dtype
    problem = GemmProblem(n=4096, k=4096, m=16, act_dtype="int8")
    assert check(presets.W8A8_INT8, problem).ok
    support = check(presets.W4A16_G128, problem)
    assert not support and "must be one of fp16, bf16" in support.reason
