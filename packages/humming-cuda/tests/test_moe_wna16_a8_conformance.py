"""moe_wna16_a8 conformance on the GPU against humming_core.numerics.moe (reference_moe_gemm and
reference_fused_moe): MXFP4 x e4m3 and MXINT4 x int8 MoE layers through each inner kernel
(moe_wna16's decode form at <= 8 rows per expert, its dense K loop above, moe_wna16_wgmma from 32
rows per expert on sm_90a; MXFP4 x e4m3 on sm_90a takes the e4m3 form from 4 rows per expert, in
16-row blocks on two CTAs per SM, then 64- and 128-row blocks), uniform and
skewed routing, SiLU and gpt-oss's clamped SwiGLU with biases, w2 router weights, experts dropped
by an expert map, K and N tails, and MXFP4 rows whose scales span more than the e4m3 form's exact
window, with a group of zero codes under a huge scale (the family's hardware check: it passed on
the H200 in session 14, the e4m3 form in session 20).

Bound: moe_w8a8's (moe_cases.w8a8_expert_bound: x quantized per token exactly as the reference
does, then the W8A8 accumulator bound), which covers this family's exact products summed in fp32;
for the e4m3 form moe_cases.e4m3_expert_bound (fp8 sums over all of K, small groups rounded).
Outputs are poisoned before the call and the rows after the output view must keep their bits.
"""

from __future__ import annotations

import pytest
import torch
from moe_cases import (
    OAI,
    SILU,
    Case,
    check_a8_fused_moe,
    check_a8_moe_gemm,
    e4m3_expert_bound,
    w8a8_expert_bound,
)

from humming_core.spec import presets

pytestmark = [
    pytest.mark.cuda,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs an NVIDIA GPU (torch.cuda)"),
]
MXINT4_I8 = presets.MXINT4.replace(
    act={"dtype": "int8", "quant": "dynamic", "granularity": "token"},
    epilogue={"out_dtype": "bf16"},
)

CASES = [  # (case, inner kernel on sm_90a)
    (Case(8, 2, 1, 256, 256, presets.MXFP4_A8, SILU), "moe_wna16"),  # decode form
    (Case(64, 8, 33, 512, 1040, presets.MXFP4_A8, SILU, skew=True), "e4m3"),  # 16 rows, K tail
    (Case(32, 4, 40, 320, 512, presets.MXFP4_A8, OAI, bias=True), "e4m3"),  # 16-row blocks
    (Case(16, 4, 60, 256, 384, presets.MXFP4_A8, (), drop=True), "e4m3"),  # 16-row blocks
    (Case(64, 4, 200, 384, 512, MXINT4_I8, SILU, skew=True), "moe_wna16"),
    (Case(8, 2, 300, 256, 512, presets.MXFP4_A8, SILU), "e4m3"),  # 128-row blocks
    (Case(16, 8, 600, 512, 1024, presets.MXFP4_A8, OAI, bias=True, drop=True), "e4m3"),
    (Case(8, 4, 400, 320, 272, MXINT4_I8, (), skew=True), "moe_wna16_wgmma"),  # K tail
    (Case(8, 4, 400, 320, 272, presets.MXFP4_A8, ()), "e4m3"),  # K and N tails
]


@pytest.fixture(scope="module")
def device():
    from humming_cuda.device import CudaDevice

    return CudaDevice()


def _layer(device, cw, rows, inner=None, block=None):
    """(layer, block size); `inner`: the inner kernel it must run on sm_90a ("e4m3": the e4m3 form
    of moe_wna16_wgmma), `block`: its block size there."""
    from humming_core.ops import PreparedMoe, moe_bucket_of

    layer = PreparedMoe(cw, device=device, buckets=(moe_bucket_of(rows),))
    config = layer.configs[moe_bucket_of(rows)]
    assert config.family == "moe_wna16_a8", config
    if inner is not None and device.caps().arch == "sm_90a":
        e4m3 = getattr(config.inner, "e4m3", False)
        expected = ("moe_wna16_wgmma", True) if inner == "e4m3" else (inner, False)
        assert (config.inner.family, e4m3) == expected, config
        assert block is None or config.block_m == block, config
    return layer, config.block_m


@pytest.mark.parametrize(
    ("case", "inner"),
    CASES,
    ids=lambda c: (
        f"{c.base.weight.dtype.name}-{c.base.act.dtype.name}-E{c.experts}k{c.top_k}M{c.m}"
        if isinstance(c, Case)
        else c
    ),
)
@pytest.mark.parametrize("router_weights", [False, True])
def test_moe_gemm_matches_reference(device, case, inner, router_weights):
    check_a8_moe_gemm(
        lambda cw, rows: _layer(device, cw, rows, inner),
        case,
        router_weights,
        e4m3_expert_bound if inner == "e4m3" else w8a8_expert_bound,
    )


def _wide_scales(cw):
    """Expert 0, rows 0-3: a group 17 binades below the row's largest (rounded by the e4m3 form),
    and a group of zero codes under the largest e8m0 scale (left out of the row's exponent:
    counted, it would push the row's other groups below the window)."""
    from humming_core.packing.bits import pack_k, unpack_k

    codes = unpack_k(cw.qweight[0].contiguous(), 4, cw.k)
    codes[:4, 64:96] = 0
    cw.qweight[0] = pack_k(codes, 4)
    scales = cw.scales[0].to(torch.int32)
    scales[:4, 2] = 254
    scales[:4, 5] = scales[:4, 3:].amax(-1) - 17
    cw.scales[0] = scales.to(cw.scales.dtype)


@pytest.mark.parametrize(
    ("case", "block"),
    [  # rows per expert of the M bucket: 16, 16 (K tail), 32 (K tail)
        (Case(32, 4, 100, 256, 512, presets.MXFP4_A8, SILU, skew=True), 16),
        (Case(16, 4, 60, 320, 528, presets.MXFP4_A8, SILU, skew=True), 16),
        (Case(32, 4, 250, 256, 528, presets.MXFP4_A8, SILU, skew=True), 64),
    ],
    ids=lambda c: str(c) if isinstance(c, int) else f"E{c.experts}M{c.m}K{c.k}",
)
@pytest.mark.parametrize("router_weights", [False, True])
def test_e4m3_form_block_sizes(device, case, block, router_weights):
    check_a8_moe_gemm(
        lambda cw, rows: _layer(device, cw, rows, "e4m3", block=block),
        case,
        router_weights,
        e4m3_expert_bound,
    )


def test_bf16_codes_where_the_e4m3_form_does_not_run(device):
    """moe_wna16's dense K loop on the widened codes: what MXFP4 x e4m3 runs on GPUs without the
    e4m3 form (it runs on sm_90a from 4 rows per expert)."""
    from humming_cuda.kernels.moe_wna16_a8 import heuristics

    case = Case(16, 4, 60, 256, 384, presets.MXFP4_A8, OAI, bias=True, drop=True)
    with heuristics.forced_e4m3(None):
        check_a8_moe_gemm(
            lambda cw, rows: _layer(device, cw, rows, "moe_wna16"), case, True, w8a8_expert_bound
        )


def test_e4m3_form_rows_past_the_exact_window(device):
    case = Case(8, 2, 300, 256, 512, presets.MXFP4_A8, SILU)
    check_a8_moe_gemm(
        lambda cw, rows: _layer(device, cw, rows, "e4m3"),
        case,
        True,
        e4m3_expert_bound,
        tweak=_wide_scales,
    )


@pytest.mark.parametrize("index", [0, 1, 6], ids=["decode", "e4m3-16-skew", "e4m3-128-oai-drop"])
def test_fused_moe_matches_reference(device, index):
    check_a8_fused_moe(lambda cw, rows: _layer(device, cw, rows), CASES[index][0])
