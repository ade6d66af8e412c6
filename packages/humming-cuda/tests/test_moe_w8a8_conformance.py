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
from moe_cases import OAI, SILU, Case, check_a8_fused_moe, check_a8_moe_gemm

from humming_core.spec import presets

pytestmark = [
    pytest.mark.cuda,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs an NVIDIA GPU (torch.cuda)"),
]

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
    from humming_cuda.kernels import family_named

    class MoeW8a8Device(CudaDevice):
        """Runs every layer on moe_w8a8 (the device routes MX 4-bit weights to moe_wna16_a8)."""

        def candidates(self, spec, problem):
            return family_named("moe_w8a8").candidates(spec, problem, self.caps())

    return MoeW8a8Device()


def _layer(device, cw, rows):
    from humming_core.ops import PreparedMoe, moe_bucket_of

    layer = PreparedMoe(cw, device=device, buckets=(moe_bucket_of(rows),))
    config = layer.configs[moe_bucket_of(rows)]
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
    check_a8_moe_gemm(lambda cw, rows: _layer(device, cw, rows), case, router_weights)


@pytest.mark.parametrize("case", [CASES[4], CASES[6]], ids=["mxfp4a8-drop", "mxfp4a8-oai"])
def test_fused_moe_matches_reference(device, case):
    check_a8_fused_moe(lambda cw, rows: _layer(device, cw, rows), case)
