"""moe_wna16_a8 (CPU): which specs it takes and why not others, its configs (the inner WnA16 MoE
kernel per M), the rendered module (quantizer entries, row-scaled policy, distinct names), the
shared weight layout, and that the device routes MX 4-bit x 8-bit MoE layers to it ahead of
moe_w8a8 (verified on the H200 in session 14)."""

from __future__ import annotations

import pytest
import torch
from moe_cases import moe_spec

from humming_core.device import GemmProblem
from humming_core.spec import presets
from humming_cuda.caps import caps_for_arch
from humming_cuda.device import CudaDevice
from humming_cuda.kernels import FAMILIES, family_named
from humming_cuda.kernels.moe_wna16 import FAMILY as MOE_WNA16
from humming_cuda.kernels.moe_wna16.layout import glu_order
from humming_cuda.kernels.moe_wna16_a8 import FAMILY, MoeWna16A8Config
from humming_cuda.kernels.moe_wna16_a8.heuristics import (
    E4M3_MIN_ROWS_PER_EXPERT,
    codes_spec,
    e4m3_reason,
    forced_e4m3,
)
from humming_cuda.kernels.moe_wna16_a8.layout import E8M0_ONE, lane_order, row_exponents
from humming_cuda.kernels.moe_wna16_wgmma.config import smem_bytes, smem_limit
from humming_cuda.kernels.wna16.config import KernelFormat
from humming_cuda.kernels.wna16.layout import permute_columns

SM90 = caps_for_arch("sm_90a")
MXFP4_A8 = moe_spec(presets.MXFP4_A8, glu="silu_mul")
# MXINT4 weights x int8 tokens
MXINT4_I8 = moe_spec(
    presets.MXINT4.replace(act={"dtype": "int8", "quant": "dynamic", "granularity": "token"})
)


# the most routed rows of 128 experts that stay on the decode kernel
DECODE_ROWS = 128 * (E4M3_MIN_ROWS_PER_EXPERT - 1)


def problem(rows: int) -> GemmProblem:
    return GemmProblem(n=1536, k=2048, m=rows, num_experts=128)


def test_registered_before_moe_w8a8_and_verified():
    names = [f.name for f in FAMILIES]
    assert family_named("moe_wna16_a8") is FAMILY
    assert names.index("moe_wna16_a8") < names.index("moe_w8a8")
    assert FAMILY.hardware_verified is True


@pytest.mark.parametrize(
    ("spec", "words"),
    [
        (presets.MXFP4_A8, "layout"),
        (moe_spec(presets.MXFP4), "int8 or e4m3"),
        (moe_spec(presets.W4A8_FP8), "power-of-two"),  # int4 with fp16 group scales
        (moe_spec(presets.W8A8_FP8), "4-bit codes"),
    ],
)
def test_refusals_name_the_reason(spec, words):
    support = FAMILY.supports(spec, problem(64), SM90)
    assert not support and words in support.reason, support.reason


def test_k_must_fill_the_quantizers_16_byte_chunks():
    odd = GemmProblem(n=1536, k=2056, m=64, num_experts=128)
    support = FAMILY.supports(MXFP4_A8, odd, SM90)
    assert not support and "multiple of 16" in support.reason


@pytest.mark.parametrize(
    ("rows", "inner", "block"),
    [(8, "moe_wna16", 8), (2048, "moe_wna16", 16), (65536, "moe_wna16_wgmma", 128)],
)
def test_candidates_wrap_the_inner_kernel_the_codes_spec_would_run(rows, inner, block):
    """The inner kernel is the bf16 codes spec's own route, except at 16-32 rows per expert, where
    that spec takes the 128-column tile's 48-row blocks (moe_wna16_wgmma.heuristics.narrow,
    measured without row scales) and the row-scaled kernel stays on moe_wna16."""
    cfgs = FAMILY.candidates(MXINT4_I8, problem(rows), SM90)
    assert cfgs and all(c.inner.family == inner for c in cfgs)
    assert cfgs[0].block_m == block
    device = CudaDevice.for_arch("sm_90a")
    twin_first = device.candidates(codes_spec(MXINT4_I8), problem(rows))[0]
    if rows == 2048:  # 16 rows per expert
        assert (twin_first.family, twin_first.block_m, twin_first.block_n) == (
            "moe_wna16_wgmma",
            48,
            128,
        )
        assert cfgs[0].inner == MOE_WNA16.candidates(codes_spec(MXINT4_I8), problem(rows), SM90)[0]
    else:
        assert cfgs[0].inner == twin_first


def test_row_scaled_inner_kernel_keeps_blocks_its_registers_allow():
    """At 128 rows per expert the bf16 codes spec takes 160-row blocks; rendered with per-row
    activation scales (a producer of 80 registers) the kernel is built for 128 at most."""
    rows = 128 * 128
    device = CudaDevice.for_arch("sm_90a")
    assert device.candidates(codes_spec(MXINT4_I8), problem(rows))[0].block_m == 160
    cfgs = FAMILY.candidates(MXINT4_I8, problem(rows), SM90)
    assert cfgs and {c.inner.family for c in cfgs} == {"moe_wna16_wgmma"}
    assert {c.block_m for c in cfgs} == {128}
    FAMILY.render(MXINT4_I8, cfgs[0], SM90)  # renders (a 160-row one raises, test_moe_wna16_wgmma)


@pytest.mark.parametrize(
    ("rows", "block", "stages", "ctas"),
    [
        (DECODE_ROWS + 1, 16, 3, 2),  # E4M3_MIN_ROWS_PER_EXPERT rows per expert
        (2048, 16, 3, 2),
        (4096, 64, 6, 1),
        (8192, 128, 4, 1),
        (65536, 128, 4, 1),
    ],
)
def test_mxfp4_x_e4m3_takes_the_e4m3_form_of_the_wgmma_kernel(rows, block, stages, ctas):
    cfgs = FAMILY.candidates(MXFP4_A8, problem(rows), SM90)
    assert cfgs and all(c.inner.family == "moe_wna16_wgmma" and c.inner.e4m3 for c in cfgs)
    first = cfgs[0].inner
    assert (first.block_m, first.stages, first.ctas_per_sm) == (block, stages, ctas)
    fmt = KernelFormat.from_spec(codes_spec(MXFP4_A8))
    # two CTAs share an SM's shared memory; one-CTA configs of the block follow them
    assert all(smem_bytes(fmt, c.inner) <= smem_limit(c.inner, SM90.smem_per_block) for c in cfgs)
    assert all(2 * smem_bytes(fmt, c.inner) < SM90.smem_per_block
               for c in cfgs if c.inner.ctas_per_sm == 2)  # fmt: skip
    assert ctas == 1 or any(c.inner.ctas_per_sm == 1 for c in cfgs)
    source = FAMILY.render(MXFP4_A8, cfgs[0], SM90)
    # the interleaved e4m3 quantizer, the e4m3 entry
    assert f"HUMMING_ACT_QUANT_INTERLEAVED_ENTRY({source.name}_quant_bf16" in source.code
    assert f"HUMMING_MOE_WNA16_WGMMA_E4M3_ENTRY({source.name}, Fmt, Tile, " in source.code
    split = f", {ctas}" if ctas == 2 else ""
    assert f"using Tile = humming::WgmmaE4m3RsTile<{stages}, {block}{split}>;" in source.code


@pytest.mark.parametrize(
    ("spec", "words"),
    [
        (MXINT4_I8, "int8"),
        (moe_spec(presets.MXINT4.replace(act=presets.MXFP4_A8.act)), "e2m1"),
    ],
)
def test_e4m3_form_refusals_name_the_reason(spec, words):
    assert words in e4m3_reason(spec)
    cfgs = FAMILY.candidates(spec, problem(65536), SM90)
    assert cfgs and not any(c.inner.e4m3 for c in cfgs)


def test_decode_form_below_the_e4m3_forms_rows():
    cfgs = FAMILY.candidates(MXFP4_A8, problem(DECODE_ROWS), SM90)
    assert cfgs and all(c.inner.family == "moe_wna16" for c in cfgs)


def test_forced_e4m3_overrides_the_block_inside_only():
    """forced_e4m3 (the conformance tests' and block sweeps' override): the forced block at any
    rows per expert, its CTAs per SM for narrow blocks, no e4m3 form with None, and the
    heuristics' choice again after; a CTA count the form has not is refused by name."""

    def firsts(rows):
        inner = [c.inner for c in FAMILY.candidates(MXFP4_A8, problem(rows), SM90)]
        return [(getattr(c, "e4m3", False), c.block_m, getattr(c, "ctas_per_sm", 1)) for c in inner]

    with forced_e4m3(16, narrow_ctas=1):
        assert set(firsts(DECODE_ROWS)) == {(True, 16, 1)}
    with forced_e4m3(64):
        assert {b for _, b, _ in firsts(DECODE_ROWS)} == {64}
    with forced_e4m3(None):
        assert not any(e4m3 for e4m3, _, _ in firsts(65536))
    assert not any(e4m3 for e4m3, _, _ in firsts(DECODE_ROWS))
    assert firsts(65536)[0] == (True, 128, 1)
    with pytest.raises(ValueError, match="narrow_ctas=3"), forced_e4m3(16, narrow_ctas=3):
        pass


def test_wgmma_inner_only_on_sm90a():
    cfgs = FAMILY.candidates(MXFP4_A8, problem(65536), caps_for_arch("sm_89"))
    assert cfgs and cfgs[0].inner.family == "moe_wna16"


def test_config_round_trips_with_its_inner_kind():
    cfg = FAMILY.candidates(MXFP4_A8, problem(65536), SM90)[0]
    again = MoeWna16A8Config.model_validate(cfg.model_dump())
    assert again == cfg and type(again.inner) is type(cfg.inner)


@pytest.mark.parametrize("rows", [8, DECODE_ROWS])
def test_render_carries_the_quantizer_and_a_row_scaled_policy(rows):
    cfg = FAMILY.candidates(MXFP4_A8, problem(rows), SM90)[0]
    source = FAMILY.render(MXFP4_A8, cfg, SM90)
    assert source.code.startswith('#include "humming/kernel/act_quant.cuh"\n')
    # the wide quantizer: codes written as their bf16 values, the inner kernel's x
    assert f"HUMMING_ACT_QUANT_WIDE_ENTRY({source.name}_quant_bf16" in source.code
    assert "humming::MoeRowScaled<humming::MoeGlu<2>>" in source.code
    assert source.meta["family"] == "moe_wna16_a8"
    # the same kernel without the row scale (the bf16 spec's) has another name
    inner = family_named(cfg.inner.family).render(codes_spec(MXFP4_A8), cfg.inner, SM90)
    assert inner.name != source.name and "MoeRowScaled" not in inner.code


def test_names_differ_by_activation_code():
    e4m3 = moe_spec(presets.MXINT4.replace(act=presets.MXFP4_A8.act))
    cfg = FAMILY.candidates(e4m3, problem(8), SM90)[0]
    assert FAMILY.candidates(MXINT4_I8, problem(8), SM90)[0] == cfg
    names = {FAMILY.render(s, cfg, SM90).name for s in (e4m3, MXINT4_I8)}
    assert len(names) == 2


def test_layout_is_the_wnA16_moe_layout_of_the_codes_spec_plus_row_exponents():
    for spec, row_exp in ((MXFP4_A8, True), (MXINT4_I8, False)):
        layouts = set()
        for rows in (8, 2048, 65536):
            cfg = FAMILY.candidates(spec, problem(rows), SM90)[0]
            layout = FAMILY.weight_layout(spec, cfg, SM90)
            inner = MOE_WNA16.weight_layout(codes_spec(spec), cfg.inner, SM90).identity
            assert layout.identity == ("moe_wna16_a8", inner, row_exp)
            layouts.add(layout.identity)
        assert len(layouts) == 1  # one packed copy serves every bucket


def test_row_exponents_skip_zero_groups_and_follow_the_scale_columns():
    codes = torch.zeros(3, 96, dtype=torch.int32)
    codes[0, 5], codes[0, 40] = 3, 9  # groups 0 and 1
    codes[1, 70] = 8  # -0 only: a group of zeros
    scales = torch.tensor([[120, 125, 254], [130, 131, 132], [1, 2, 3]], dtype=torch.uint8)
    assert row_exponents(codes, scales, 32).tolist() == [125, E8M0_ONE, E8M0_ONE]
    # the packed order of the scale columns (GLU reorder, pad, lane permutation)
    values = torch.arange(1, 101, dtype=torch.int32)
    packed = lane_order(values, "split")
    reference = permute_columns(
        torch.cat([values, torch.zeros(1, dtype=torch.int32)])[glu_order(100, "split")].view(1, -1)
    )
    assert packed.tolist() == reference.view(-1).tolist() and packed.numel() == 128


def test_layout_packs_row_exponents_in_the_scales_order():
    from humming_core.numerics.quant import quantize_weight

    cw = quantize_weight(torch.randn(2, 96, 64) * 0.02, MXFP4_A8)
    cfg = FAMILY.candidates(MXFP4_A8, problem(65536), SM90)[0]
    packed = FAMILY.weight_layout(MXFP4_A8, cfg, SM90).pack(cw, "cpu")
    assert packed["row_exp"].shape == (2, 128) and packed["row_exp"].dtype == torch.int32
    # every row here has a nonzero code: its exponent is the largest of its packed bf16 scales
    largest = (packed["scales"].view(torch.int16).int() >> 7).amax(1)
    real = packed["scales"].float().amax(1) > 0
    assert torch.equal(packed["row_exp"][real], largest[real])


def test_device_routes_mx_a8_layers_to_it_before_moe_w8a8(monkeypatch):
    device = CudaDevice.for_arch("sm_90a")
    monkeypatch.delenv("HUMMING_UNVERIFIED_KERNELS", raising=False)
    for rows in (8, 2048, 65536):
        assert device.candidates(MXFP4_A8, problem(rows))[0].family == "moe_wna16_a8"
