"""MoE W8A8 / W4A8 conformance on the GPU against humming_core.numerics.moe (reference_moe_gemm and
reference_fused_moe): MXFP4_A8, W4A8_FP8, W8A8_FP8 and the int8 formats as MoE layers; uniform and
skewed routing, E up to 256, top-k up to 8, M from 1 to 4096, w13 GLU epilogues (SiLU, gpt-oss's
clamped SwiGLU with biases), w2 router weights, experts dropped by an expert map (expert -1 blocks).
This file is the family's hardware verification (first passed on an H200 on 2026-11-29).

Bound: the W8A8 accumulator bound of w8a8_cases.py (x is quantized per token by the kernel exactly
as by the reference, so only the 8-bit MMA sums and the scale roundings differ) for each routed
row's x[id // top_k] @ W_e^T (+ bias), carried through the epilogue as moe_cases.py derives (GLU
slope 1.13), times |router weight|, plus the output rounding.
Outputs are poisoned before the call and the rows after the output view must keep their bits.
"""

from __future__ import annotations

import pytest
import torch
from moe_cases import (
    OAI,
    SILU,
    Case,
    check_moe_gemm,
    dense_expert,
    expert_map,
    fused_weights,
    routed_bound,
    routing,
)
from w8a8_cases import TINY
from w8a8_cases import error_bound as accumulator_bound

from humming_core.spec import presets

pytestmark = [
    pytest.mark.cuda,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs an NVIDIA GPU (torch.cuda)"),
]
# fused_moe: w2 quantizes the kernel's bf16 hidden rows, which may differ from the reference's by
# one bf16 rounding and so move single 8-bit codes by one step; relative to the output's scale.
FUSED_TOLERANCE = 2.0**-5


CASES = [
    Case(8, 2, 1, 256, 256, presets.MXFP4_A8, SILU),
    # N=200: each GLU half (100 columns) is padded to 104; K=320 ends inside a 128-deep stage
    Case(8, 2, 5, 200, 320, presets.W4A8_FP8, SILU, skew=True),
    Case(64, 8, 33, 512, 1024, presets.W8A8_FP8, SILU, skew=True),
    Case(32, 1, 64, 320, 512, presets.W8A8_FP8, (("activation", "relu"),), drop=True, bias=True),
    Case(128, 8, 1024, 256, 256, presets.MXFP4_A8, SILU, skew=True, drop=True),
    Case(256, 8, 4096, 256, 512, presets.W4A8_FP8, (), skew=True),
    Case(32, 4, 40, 320, 512, presets.MXFP4_A8, OAI, bias=True),
    Case(16, 2, 300, 256, 256, presets.W8A8_INT8, SILU, skew=True),
    Case(64, 4, 200, 384, 512, presets.W4A8_INT8, SILU, drop=True),
]


@pytest.fixture(scope="module")
def device():
    from humming_cuda.device import CudaDevice

    return CudaDevice()


def _expert_bound(xr, cw, e):
    """(accumulator, its bound) of the routed rows xr through expert e: the kernel quantizes xr
    exactly as prepare_act does, so only the 8-bit MMA sums and the scale roundings differ."""
    from humming_core.numerics import dequantize_weight
    from humming_core.numerics.gemm import prepare_act

    one = dense_expert(cw, e, out_dtype="fp32")
    bias = 0 if cw.bias is None else cw.bias[e].double()
    acc = prepare_act(xr, cw.spec.act).double() @ dequantize_weight(one).double().T + bias
    d = accumulator_bound(xr, one, torch.zeros_like(acc), None)
    if cw.bias is not None:
        d = d + 2.0**-23 * cw.bias[e].double().abs()
    return acc, d


def _layer(device, cw, rows):
    from humming_core.ops import PreparedMoe, bucket_of

    layer = PreparedMoe(cw, device=device, buckets=(bucket_of(rows),))
    config = layer.configs[bucket_of(rows)]
    assert config.family == "moe_w8a8", config
    return layer, config.block_m


@pytest.mark.parametrize(
    "case",
    CASES,
    ids=lambda c: (
        f"{c.base.weight.dtype.name}-{c.base.act.dtype.name}-E{c.experts}k{c.top_k}M{c.m}"
    ),
)
@pytest.mark.parametrize("router_weights", [False, True])
def test_moe_gemm_matches_reference(device, case, router_weights):
    from humming_core.numerics.quant import quantize_weight

    gen = torch.Generator(device="cuda").manual_seed(case.m * 31 + case.experts)
    w = torch.randn(case.experts, case.n, case.k, generator=gen, device="cuda") / case.k**0.5
    b = torch.randn(case.experts, case.n, generator=gen, device="cuda") if case.bias else None
    cw = quantize_weight(w, case.spec, bias=b)
    x = torch.randn(case.m, case.k, generator=gen, device="cuda").bfloat16()
    x[0, :16] *= 40.0  # an outlier token: per-token scales differ between rows
    layer, block = _layer(device, cw, case.m * case.top_k)
    tiny = TINY[cw.spec.output_dtype]

    def bound_of(ids, experts, tw):
        return routed_bound(x, cw, ids, experts, case.top_k, tw, _expert_bound, tiny)

    check_moe_gemm(layer, block, case, cw, x, router_weights, gen, bound_of)


@pytest.mark.parametrize("case", [CASES[4], CASES[6]], ids=["mxfp4a8-drop", "mxfp4a8-oai"])
def test_fused_moe_matches_reference(device, case):
    from humming_core.numerics.moe import reference_fused_moe
    from humming_core.ops import fused_moe

    gen = torch.Generator(device="cuda").manual_seed(7)
    w13, w2 = fused_weights(case, gen)
    x = torch.randn(case.m, case.k, generator=gen, device="cuda").bfloat16()
    topk_w, topk_ids = routing(case, gen)
    rows = case.m * case.top_k
    l13, block = _layer(device, w13, rows)
    l2, block2 = _layer(device, w2, rows)
    assert block == block2 == l13.block_size(rows)
    emap = expert_map(case)
    out = fused_moe(x, topk_w, topk_ids, l13, l2, emap)
    ref = reference_fused_moe(x, topk_w, topk_ids, w13, w2, emap, block_size=block)
    scale = ref.float().abs().max().clamp_min(1e-6)
    worst = float((out.float() - ref.float()).abs().max() / scale)
    assert worst <= FUSED_TOLERANCE, f"max error / max |ref| = {worst:.3g}"
