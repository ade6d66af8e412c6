"""CPU tests of the W4A8 part of the w8a8 family: spec support and refusals per arch, the nibble
layout, and a bit-exact emulation of the kernel's B-fragment expansion (include/humming/datatype/
nibble8.cuh) checked against the reference dequantization."""

from __future__ import annotations

import pytest
import torch
from w8a8_cases import W4_FORMATS, make_w4_spec

from humming_core.device import GemmProblem
from humming_core.numerics import quantize_weight
from humming_core.numerics.codec import canonical_table
from humming_core.numerics.scales import scale_values
from humming_core.packing.bits import unpack_k, unpack_n
from humming_core.spec import presets
from humming_cuda.caps import caps_for_arch
from humming_cuda.device import CudaDevice
from humming_cuda.kernels.w8a8 import FAMILY
from humming_cuda.kernels.w8a8.config import W8a8Format
from humming_cuda.kernels.w8a8.layout import W8a8Layout
from humming_cuda.kernels.w8a8.nibbles import (
    nibble_table,
    shuffle,
    slab_words,
    table_words,
    unshuffle,
)
from humming_cuda.kernels.w8a8.render import render

W4_PRESETS = ("W4A8_FP8", "W4A8_INT8", "MXFP4_A8")
PROBLEM = GemmProblem(n=4096, k=4096, m=16)


# ---- support --------------------------------------------------------------------------------------
@pytest.mark.parametrize("arch", ["sm_89", "sm_90a"])
@pytest.mark.parametrize("name", W4_PRESETS)
def test_presets_pass_check_on_fp8_arches(arch, name):
    device = CudaDevice.for_arch(arch)
    support = device.check(presets.preset(name), PROBLEM)
    assert support, support.reason
    assert device.candidates(presets.preset(name), PROBLEM)[0].weight_bits == 4


def test_sm80_runs_int8_and_refuses_fp8_with_a_reason():
    device = CudaDevice.for_arch("sm_80")
    assert device.check(presets.W4A8_INT8, PROBLEM)
    for name in ("W4A8_FP8", "MXFP4_A8"):
        support = device.check(presets.preset(name), PROBLEM)
        assert not support and "sm_89" in support.reason


@pytest.mark.parametrize("name", W4_PRESETS)
def test_refused_on_sm75(name):
    support = FAMILY.supports(presets.preset(name), PROBLEM, caps_for_arch("sm_75"))
    assert not support and "sm_8" in support.reason


def _w4(weight="int4", code="int8", group=128, scale="fp16", zero=None):
    spec = make_w4_spec(weight, code, "token", group, scale, bias=False, out="bf16")
    if zero is not None:
        spec = spec.replace(weight=spec.weight.model_copy(update={"zero_point": zero}))
    return spec


@pytest.mark.parametrize(
    ("spec", "words"),
    [
        (_w4("uint4", "e4m3", zero="int"), "must be one of int4, e2m1 for e4m3"),
        (_w4("uint4", zero="none"), "uint4 with integer zero points"),
        (_w4("int4", zero="int"), "uint4 with integer zero points"),
        (_w4(group=16), "group scales of 32, 64 or a multiple of 128"),
        (
            presets.W4A8_INT8.replace(
                weight=presets.W4A16_G128.weight.model_copy(
                    update={"scale": presets.W8A16.weight.scale}
                )
            ),
            "group scales",
        ),
        (presets.W4A4_INT4, "int8 or e4m3 activations"),
    ],
)
def test_refusals_name_the_problem(spec, words):
    support = FAMILY.supports(spec, PROBLEM, caps_for_arch("sm_90a"))
    assert not support and words in support.reason, support.reason


@pytest.mark.parametrize("arch", ["sm_80", "sm_89", "sm_90a", "sm_120a"])
@pytest.mark.parametrize("m", [1, 16, 64, 4096])
def test_candidates_fit_the_arch_and_use_nibble_tiles(arch, m):
    caps = caps_for_arch(arch)
    for fmt in W4_FORMATS:
        spec = make_w4_spec(*fmt, bias=False, out="bf16")
        configs = FAMILY.candidates(spec, GemmProblem(n=4096, k=4096, m=m), caps)
        if fmt[1] == "e4m3" and arch == "sm_80":
            assert configs == []
            continue
        assert configs and all(c.smem_bytes <= caps.smem_per_block for c in configs)
        # a stage holds BM x 128 activation bytes and BN x 64 weight bytes
        c = configs[0]
        assert c.weight_bits == 4
        assert c.smem_bytes == c.stages * (c.block_m * 128 + c.block_n * 64)


@pytest.mark.parametrize("m", [1, 16])
def test_decode_tile_takes_32_columns_per_warp_for_4_bit_weights(m):
    # 8-bit weights keep 16 columns per warp: the wider tile is for half-byte weight rows
    caps, problem = caps_for_arch("sm_90a"), GemmProblem(n=4096, k=4096, m=m)
    w4 = FAMILY.candidates(presets.W4A8_FP8, problem, caps)
    w8 = FAMILY.candidates(presets.W8A8_FP8, problem, caps)
    assert {(c.block_m, c.block_n) for c in w4} == {(16, 128)}
    assert {(c.block_m, c.block_n) for c in w8} == {(16, 64)}


def test_render_refuses_a_config_of_the_other_width():
    caps = caps_for_arch("sm_90a")
    cfg = FAMILY.candidates(presets.W8A8_FP8, PROBLEM, caps)[0]
    with pytest.raises(ValueError, match="weight_bits=8"):
        render(presets.W4A8_FP8, cfg, caps)


# ---- tables and layout ----------------------------------------------------------------------------
def test_tables_are_exact():
    assert nibble_table("int4", "int8", False) == [v & 0xFF for v in range(-8, 8)]
    e4m3 = canonical_table("e4m3")
    for weight in ("int4", "e2m1"):
        table = nibble_table(weight, "e4m3", False)
        assert torch.equal(e4m3[table], canonical_table(weight))
    assert table_words(list(range(16)))[0] == 0x03020100


def test_no_table_for_values_the_operand_cannot_hold():
    with pytest.raises(ValueError, match="not exact in e4m3"):
        nibble_table("int8", "e4m3", False)  # 17 has no e4m3 code
    with pytest.raises(ValueError, match="not all int8 integers"):
        nibble_table("e2m1", "int8", False)


def test_shuffle_round_trips_and_pads_k():
    gen = torch.Generator().manual_seed(3)
    codes = torch.randint(0, 16, (9, 272), generator=gen)
    words = shuffle(codes, pad_code=8)
    assert words.shape == (9, slab_words(272)) == (9, 48) and words.dtype == torch.int32
    assert torch.equal(unshuffle(words, 272), codes)
    assert (unshuffle(words, 384)[:, 272:] == 8).all()


@pytest.mark.parametrize("fmt", W4_FORMATS, ids=lambda f: "-".join(map(str, f)))
def test_pack_holds_codes_scales_and_zeros(fmt):
    spec = make_w4_spec(*fmt, bias=True, out="bf16")
    n, k = 72, 272
    gen = torch.Generator().manual_seed(0)
    cw = quantize_weight(torch.randn(n, k, generator=gen), spec, bias=torch.randn(n, generator=gen))
    packed = W8a8Layout(W8a8Format.from_spec(spec)).pack(cw, "cpu")
    assert torch.equal(unshuffle(packed["qweight"], k), unpack_k(cw.qweight, 4, k).long())
    groups = -(-k // fmt[3])
    scales = packed["weight_scale"]
    assert scales.shape == (groups, n) and scales.dtype == torch.float32
    assert torch.equal(scales, scale_values(cw.scales, spec.weight.scale.dtype).float().T)
    if fmt[0] == "uint4":
        assert packed["zeros"].shape == (groups, n) and packed["zeros"].dtype == torch.uint8
        assert torch.equal(packed["zeros"].long(), unpack_n(cw.zeros, 4, n).T.long())
    else:
        assert "zeros" not in packed
    assert torch.equal(packed["bias"], cw.bias.float())


# ---- emulation of the kernel's fragment expansion -------------------------------------------------
def prmt(a: int, b: int, sel: int) -> int:
    """PTX prmt.b32 (default mode): byte i of the result is byte (sel nibble i & 7) of b:a, or that
    byte's sign replicated when the nibble's bit 3 is set."""
    pool = [(a >> (8 * i)) & 0xFF for i in range(4)] + [(b >> (8 * i)) & 0xFF for i in range(4)]
    out = 0
    for i in range(4):
        nib = (sel >> (4 * i)) & 0xF
        byte = pool[nib & 7]
        if nib & 8:
            byte = 0xFF if byte & 0x80 else 0
        out |= byte << (8 * i)
    return out


def expand(t: tuple[int, int, int, int], w: int) -> tuple[int, int]:
    """NibbleLut::expand (and pick), operation for operation: one word's two registers."""
    up, idx = (w << 4) & 0xFFFFFFFF, w & 0x77777777

    def pick(sel: int, upper: int) -> int:
        lo, hi = prmt(t[0], t[1], sel & 0xFFFF), prmt(t[2], t[3], sel & 0xFFFF)
        return (lo & ~upper & 0xFFFFFFFF) | (hi & upper)

    return pick(idx, prmt(w, up, 0x9D8C)), pick(idx >> 16, prmt(w, up, 0xBFAE))


def sub_zero4(codes: int, zero: int) -> int:
    """sub_zero4 of nibble8.cuh in 32-bit arithmetic."""
    return (((codes | 0x80808080) - zero * 0x01010101) & 0xFFFFFFFF) ^ 0x80808080


def _bytes(word: int) -> list[int]:
    return [(word >> (8 * j)) & 0xFF for j in range(4)]


def test_expand_maps_every_nibble_through_the_table():
    """Nibble j of a word to byte j of the first register (j < 4) or byte j - 4 of the second, for
    every code in every position: the byte masks' sign-replicate selectors pick the right half of
    the table for each lane."""
    table = [(37 * i + 11) & 0xFF for i in range(16)]  # distinct bytes, some with the sign bit
    t = table_words(table)
    for a in range(256):  # every code in every position, next to every code in each neighbour
        nibbles = [((a >> (4 * (j % 2))) + j) & 0xF for j in range(8)]
        w = sum(x << (4 * j) for j, x in enumerate(nibbles))
        b0, b1 = expand(t, w)
        assert _bytes(b0) + _bytes(b1) == [table[x] for x in nibbles]
    from humming_cuda.headers import humming_include_root

    header = (humming_include_root() / "humming" / "datatype" / "nibble8.cuh").read_text()
    for step in (
        "up = w << 4, idx = w & 0x77777777u",
        "prmt(w, up, 0x9D8Cu)",
        "prmt(w, up, 0xBFAEu)",
    ):
        assert step in header  # the emulated selectors are the kernel's


def test_sub_zero4_is_exact_for_every_code_and_zero():
    for u in range(16):
        for z in range(16):
            got = _bytes(sub_zero4(u * 0x01010101, z))
            assert all((b ^ 0x80) - 0x80 == u - z for b in got)


@pytest.mark.parametrize("fmt", W4_FORMATS, ids=lambda f: "-".join(map(str, f)))
def test_fragments_carry_the_dequantized_weights(fmt):
    """Lane (g, t), column n, slab s, k32 step ks: its word (4t + ks of the slab) expanded like the
    kernel gives the 8-bit operands whose values, times the group scale, are the reference weights
    of K elements 128s + 32ks + 4t + j (b0) and + 16 (b1)."""
    from humming_core.numerics import dequantize_weight

    spec = make_w4_spec(*fmt, bias=False, out="bf16")
    n, k = 8, 272
    cw = quantize_weight(torch.randn(n, k, generator=torch.Generator().manual_seed(5)), spec)
    f = W8a8Format.from_spec(spec)
    packed = W8a8Layout(f).pack(cw, "cpu")
    t = table_words(nibble_table(f.weight, f.code, f.zero))
    operand = canonical_table("e4m3").double() if f.code == "e4m3" else None
    ref = dequantize_weight(cw)  # float32: each weight is the exact product rounded once
    words = packed["qweight"].long() & 0xFFFFFFFF
    for col in range(n):
        for kk in range(0, k, 4):
            s, ks, h, lane_t = kk // 128, kk % 128 // 32, kk % 32 // 16, kk % 16 // 4
            word = int(words[col, 16 * s + 4 * lane_t + ks])
            reg = expand(t, word)[h]
            if f.zero:
                reg = sub_zero4(reg, int(packed["zeros"][kk // f.group, col]))
            raw = _bytes(reg)
            vals = [operand[b].item() if operand is not None else (b ^ 0x80) - 0x80 for b in raw]
            scale = packed["weight_scale"][kk // f.group, col].item()
            for j in range(4):
                if kk + j < k:
                    got = torch.tensor(vals[j] * scale, dtype=torch.float64).float()
                    assert got == ref[col, kk + j], (col, kk + j)


def test_fp16_form_recognises_exactly_int4s_table():
    """mma/fp8_as_f16.cuh takes the fp16 k32 step for int4 weights by matching their e4m3 table
    words: those must be nibble_table's, and no other weight type's table may match."""
    import re

    from humming_cuda.headers import humming_include_root

    header = (humming_include_root() / "humming" / "mma" / "fp8_as_f16.cuh").read_text()
    body = header[header.index("constexpr bool is_int4_e4m3_table") :]
    words = tuple(int(w, 16) for w in re.findall(r"t\d == (0x[0-9a-f]+)u", body)[:4])
    assert words == table_words(nibble_table("int4", "e4m3", False))
    assert table_words(nibble_table("e2m1", "e4m3", False)) != words


def _int4_pairs(word: int) -> list[tuple[float, float]]:
    """fp8_as_f16.cuh's int4_pairs on the host: the magic-number fp16 conversion, bit for bit."""
    import numpy as np

    def half2(bits: int) -> np.ndarray:
        return np.array([bits & 0xFFFF, bits >> 16], dtype=np.uint16).view(np.float16)

    magic, w8 = 0x64006400, word >> 8
    out = []
    for j, raw in enumerate(
        ((word & 0x000F000F), (word & 0x00F000F0), (w8 & 0x000F000F), (w8 & 0x00F000F0))
    ):
        v = half2(raw | magic)
        if j % 2 == 0:
            r = v - np.float16(1032.0)
        else:  # the fma rounds once: exact here, as every value is a small integer
            r = (v.astype(np.float32) * np.float32(1 / 16) + np.float32(-72.0)).astype(np.float16)
        out.append((float(r[0]), float(r[1])))
    return out


def test_int4_fp16_pairs_are_the_codes_values_in_the_mma_order():
    """Pair j of a layout word holds (nibble j, nibble j + 4) as exact fp16 values (code - 8): the
    K elements 4t + j and 16 + 4t + j that the activations are paired with."""
    gen = torch.Generator().manual_seed(5)
    for word in torch.randint(0, 1 << 32, (256,), generator=gen, dtype=torch.int64).tolist():
        nibbles = [(word >> (4 * i)) & 0xF for i in range(8)]
        assert _int4_pairs(word) == [(nibbles[j] - 8.0, nibbles[j + 4] - 8.0) for j in range(4)]
