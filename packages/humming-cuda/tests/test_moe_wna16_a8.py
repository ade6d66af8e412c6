"""moe_wna16_a8 (CPU): which specs it takes and why not others, its configs (the inner WnA16 MoE
kernel per M), the rendered module (quantizer entries, row-scaled policy, distinct names), the
shared weight layout, and that the device routes MX 4-bit x 8-bit MoE layers to it ahead of
moe_w8a8 (verified on the H200 in session 14)."""

from __future__ import annotations

import pytest
from moe_cases import moe_spec

from humming_core.device import GemmProblem
from humming_core.spec import presets
from humming_cuda.caps import caps_for_arch
from humming_cuda.device import CudaDevice
from humming_cuda.kernels import FAMILIES, family_named
from humming_cuda.kernels.moe_wna16 import FAMILY as MOE_WNA16
from humming_cuda.kernels.moe_wna16_a8 import FAMILY, MoeWna16A8Config
from humming_cuda.kernels.moe_wna16_a8.heuristics import codes_spec

SM90 = caps_for_arch("sm_90a")
MXFP4_A8 = moe_spec(presets.MXFP4_A8, glu="silu_mul")
# MXINT4 weights x int8 tokens
MXINT4_I8 = moe_spec(
    presets.MXINT4.replace(act={"dtype": "int8", "quant": "dynamic", "granularity": "token"})
)


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
    cfgs = FAMILY.candidates(MXFP4_A8, problem(rows), SM90)
    assert cfgs and all(c.inner.family == inner for c in cfgs)
    assert cfgs[0].block_m == block
    # exactly the inner family's own configs for the bf16 spec
    device = CudaDevice.for_arch("sm_90a")
    twin_first = device.candidates(codes_spec(MXFP4_A8), problem(rows))[0]
    assert cfgs[0].inner == twin_first


def test_wgmma_inner_only_on_sm90a():
    cfgs = FAMILY.candidates(MXFP4_A8, problem(65536), caps_for_arch("sm_89"))
    assert cfgs and cfgs[0].inner.family == "moe_wna16"


def test_config_round_trips_with_its_inner_kind():
    cfg = FAMILY.candidates(MXFP4_A8, problem(65536), SM90)[0]
    again = MoeWna16A8Config.model_validate(cfg.model_dump())
    assert again == cfg and type(again.inner) is type(cfg.inner)


@pytest.mark.parametrize("rows", [8, 2048, 65536])
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


def test_layout_is_the_wnA16_moe_layout_of_the_codes_spec():
    for rows in (8, 65536):
        cfg = FAMILY.candidates(MXFP4_A8, problem(rows), SM90)[0]
        mine = FAMILY.weight_layout(MXFP4_A8, cfg, SM90).identity
        inner = MOE_WNA16.weight_layout(codes_spec(MXFP4_A8), cfg.inner, SM90).identity
        assert mine == inner


def test_device_routes_mx_a8_layers_to_it_before_moe_w8a8(monkeypatch):
    device = CudaDevice.for_arch("sm_90a")
    monkeypatch.delenv("HUMMING_UNVERIFIED_KERNELS", raising=False)
    for rows in (8, 2048, 65536):
        assert device.candidates(MXFP4_A8, problem(rows))[0].family == "moe_wna16_a8"
