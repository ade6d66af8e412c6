"""MoE WnA16-wgmma conformance on the GPU (sm_90a) against humming_core.numerics.moe, with the
bound of test_moe_wna16_conformance.py (moe_cases.py): routed rows from 32 to 256 per expert, so
that the layers take this family at block_m 64, 96, 128 and 160 (and every code form at 96 and
160, forced); uniform and skewed routing, split and interleaved GLUs
(gpt-oss's clamped SwiGLU with its biases included), plain activations, router weights, experts
dropped by an expert map (expert -1 blocks), N tails past the 256-column tile and K tails past
the 64-deep step (K a multiple of 8 only); layers of more tiles than CTAs, so each persistent CTA
walks several, with K loops longer and shorter than the ring.
"""

from __future__ import annotations

import pytest
import torch
from moe_cases import (
    OAI,
    SILU,
    UINT8_ZP,
    Case,
    check_moe_gemm,
    expert_map,
    fused_weights,
    routed_bound,
    routing,
    wna16_expert_bound,
)

from humming_core.spec import presets
from humming_core.testing.conformance import UNIT_ROUNDOFF

pytestmark = [
    pytest.mark.cuda,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs an NVIDIA GPU (torch.cuda)"),
]
FAMILY = "moe_wna16_wgmma"
GELU_INTERLEAVED = (("glu", "gelu_tanh_mul"), ("glu_layout", "interleaved"))
# (case, the block_m its M bucket takes for moe_bucket_of(m * top_k) / experts rows per expert:
# heuristics.choose_block_m, 48 at 32 rows (the 128-column tile), 64 at 43, 96 at 64, 160 at 128
# and 256; 128 with zero points and for 8-bit codes, whose 160-row blocks fit no ring depth it
# takes)
CASES = [
    # 512 routed rows over 8 experts; 160 GLU outputs (a 128-column tail), K 264 (a 8-deep tail)
    (Case(8, 2, 256, 320, 264, presets.W4A16_G128, SILU), 96),
    (Case(16, 2, 256, 320, 264, presets.W4A16_G128, SILU, skew=True), 48),  # 32 rows per expert
    (Case(8, 4, 300, 384, 1000, presets.GPTQ_INT4, GELU_INTERLEAVED, skew=True), 128),
    (Case(16, 4, 512, 200, 512, presets.W8A16, (("activation", "relu"),), drop=True), 128),
    (Case(48, 4, 512, 256, 520, presets.MXFP4, OAI, bias=True), 64),  # 43 rows per expert
    (Case(64, 8, 1024, 512, 1024, presets.NVFP4, SILU, skew=True, drop=True), 160),
    (Case(24, 2, 400, 264, 256, presets.GGUF_Q4_K, ()), 64),
    (Case(8, 2, 300, 136, 136, UINT8_ZP, (), skew=True, drop=True), 128),
    # more routed rows than the last M bucket (8192): 16384 rows, 256 per expert
    (Case(64, 8, 2048, 256, 512, presets.W4A16_G128, (), skew=True), 160),
    # K 136: 3 steps, fewer than the ring's stages, over more tiles than the GPU has CTAs: each
    # persistent CTA's producer runs whole tiles ahead of its consumers
    (Case(32, 4, 2048, 512, 136, presets.W4A16_G128, SILU), 160),
]


@pytest.fixture(scope="module")
def device():
    from humming_cuda.device import CudaDevice

    return CudaDevice()


def _layer(device, cw, rows, block_m, block_n=256):
    """A layer for `rows` routed rows, checked to run this family with `block_m` x `block_n`
    tiles."""
    from humming_core.ops import PreparedMoe, moe_bucket_of

    if device.caps().arch != "sm_90a":
        pytest.skip(f"the {FAMILY} family runs on sm_90a only, this GPU is {device.caps().arch}")
    layer = PreparedMoe(cw, device=device, buckets=(moe_bucket_of(rows),))
    config = layer.configs[moe_bucket_of(rows)]
    assert (config.family, config.block_m, config.block_n) == (FAMILY, block_m, block_n)
    return layer


@pytest.mark.parametrize(
    ("case", "block_m"),
    CASES,
    ids=lambda c: f"E{c.experts}k{c.top_k}M{c.m}N{c.n}K{c.k}" if isinstance(c, Case) else f"bm{c}",
)
@pytest.mark.parametrize("router_weights", [False, True])
def test_moe_gemm_matches_reference(device, case, block_m, router_weights):
    # 48-row blocks are routed only into the 128-column tile (heuristics.narrow)
    _check_gemm(device, case, block_m, router_weights, block_n=128 if block_m == 48 else 256)


# Blocks the heuristics take only at some M (48, 96, 160: wgmma n48 / n96 / the wide n160 tile),
# forced on cases of each code form: GLU with N and K tails, a biased interleaved float-code GLU,
# skewed routing with dropped experts (many blocks of one expert, expert -1 blocks).
FORCED = [CASES[0][0], CASES[4][0], CASES[5][0]]


@pytest.mark.parametrize("block_m", [48, 96, 160], ids=lambda b: f"bm{b}")
@pytest.mark.parametrize("case", FORCED, ids=lambda c: f"E{c.experts}k{c.top_k}M{c.m}N{c.n}K{c.k}")
def test_forced_blocks_match_reference(device, case, block_m):
    from humming_cuda.kernels.moe_wna16_wgmma.heuristics import forced_tile

    with forced_tile(block_m):
        _check_gemm(device, case, block_m, router_weights=True)


@pytest.mark.parametrize("block_m", [48, 64, 96], ids=lambda b: f"bm{b}")
@pytest.mark.parametrize("case", FORCED, ids=lambda c: f"E{c.experts}k{c.top_k}M{c.m}N{c.n}K{c.k}")
def test_128_column_tile_matches_reference(device, case, block_m):
    """The 128-column tile (one consumer warpgroup, two persistent CTAs per SM; routed with 48-row
    blocks), forced: its GLU epilogue reads two layout tiles per tile, twice the column tiles per block."""
    from humming_cuda.kernels.moe_wna16_wgmma.heuristics import forced_tile

    with forced_tile(block_m, block_n=128, ctas_per_sm=2):
        _check_gemm(device, case, block_m, router_weights=True, block_n=128)


def _check_gemm(device, case, block_m, router_weights, block_n=256):
    from humming_core.numerics.quant import quantize_weight

    gen = torch.Generator(device="cuda").manual_seed(case.m * 31 + case.experts)
    act = torch.float16 if case.spec.act.dtype.name == "fp16" else torch.bfloat16
    w = torch.randn(case.experts, case.n, case.k, generator=gen, device="cuda") / case.k**0.5
    b = torch.randn(case.experts, case.n, generator=gen, device="cuda") if case.bias else None
    cw = quantize_weight(w, case.spec, bias=b)
    x = torch.randn(case.m, case.k, generator=gen, device="cuda").to(act)
    layer = _layer(device, cw, case.m * case.top_k, block_m, block_n)

    def bound_of(ids, experts, tw):
        return routed_bound(x, cw, ids, experts, case.top_k, tw, wna16_expert_bound, 2.0**-24)

    check_moe_gemm(layer, block_m, case, cw, x, router_weights, gen, bound_of)


@pytest.mark.parametrize(("case", "block_m"), [CASES[5], CASES[4]], ids=["E64k8drop", "E48k4oai"])
def test_fused_moe_matches_reference(device, case, block_m):
    """Both GEMMs of the layer in this family (w2 with the router weights)."""
    from humming_core.numerics.moe import reference_fused_moe
    from humming_core.ops import fused_moe

    gen = torch.Generator(device="cuda").manual_seed(7)
    act = torch.float16 if case.spec.act.dtype.name == "fp16" else torch.bfloat16
    w13, w2 = fused_weights(case, gen)
    x = torch.randn(case.m, case.k, generator=gen, device="cuda").to(act)
    topk_w, topk_ids = routing(case, gen)
    rows = case.m * case.top_k
    l13, l2 = _layer(device, w13, rows, block_m), _layer(device, w2, rows, block_m)
    emap = expert_map(case)
    out = fused_moe(x, topk_w, topk_ids, l13, l2, emap)
    ref = reference_fused_moe(x, topk_w, topk_ids, w13, w2, emap, block_size=block_m)
    # as in test_moe_wna16_conformance: two chained GEMMs, relative to the output's scale
    u = UNIT_ROUNDOFF[case.spec.act.dtype.name]
    scale = ref.float().abs().max().clamp_min(1e-6)
    assert float((out.float() - ref.float()).abs().max() / scale) <= 8 * u * (1 + case.k**0.5 / 8)
