"""MoE ops through the device flow on the reference device, against the numerics' references."""

from __future__ import annotations

import pytest
import torch

from humming_core.device import get_device
from humming_core.numerics import quantize_weight
from humming_core.numerics.moe import moe_align, reference_fused_moe, reference_moe_gemm
from humming_core.ops import PreparedGemm, PreparedMoe, fused_moe, moe_gemm
from humming_core.spec import W4A16_G128

REF = get_device("reference")


def _routing(m: int, e: int, topk: int, seed: int):
    g = torch.Generator().manual_seed(seed)
    ids = torch.stack([torch.randperm(e, generator=g)[:topk] for _ in range(m)]).int()
    weights = torch.rand(m, topk, generator=g).softmax(-1)
    return ids, weights


def test_indexed_moe_gemm_matches_reference():
    e, n, k, m, topk, block = 6, 64, 128, 9, 2, 4
    cw = quantize_weight(torch.randn(e, n, k) * 0.1, W4A16_G128.replace(layout="moe"))
    ids, weights = _routing(m, e, topk, 0)
    align = moe_align(ids, block, e)
    x = torch.randn(m, k).to(torch.float16)
    out = moe_gemm(x, PreparedMoe(cw, REF), *align, topk, block, topk_weights=weights)
    ref = reference_moe_gemm(x, cw, *align, topk, weights, block_size=block)
    torch.testing.assert_close(out, ref, rtol=0, atol=0)


def test_fused_moe_matches_reference_with_expert_map():
    e, hidden, inter, m, topk = 8, 64, 32, 11, 2
    w13_spec = W4A16_G128.replace(layout="moe", epilogue={"glu": "silu_mul"})
    w13 = quantize_weight(torch.randn(e, 2 * inter, hidden) * 0.1, w13_spec)
    w2 = quantize_weight(
        torch.randn(e, hidden, inter) * 0.1,
        W4A16_G128.replace(
            layout="moe",
            weight={"dtype": "int4", "scale": {"granularity": "group", "group_size": 32}},
        ),
    )
    ids, weights = _routing(m, e, topk, 1)
    x = torch.randn(m, hidden).to(torch.float16)
    out = fused_moe(x, weights, ids, PreparedMoe(w13, REF), PreparedMoe(w2, REF))
    ref = reference_fused_moe(x, weights, ids, w13, w2)
    torch.testing.assert_close(out, ref, rtol=0, atol=0)


def test_dense_and_moe_layers_refuse_each_others_weights():
    dense = quantize_weight(torch.randn(32, 128), W4A16_G128)
    moe = quantize_weight(torch.randn(2, 32, 128), W4A16_G128.replace(layout="moe"))
    with pytest.raises(ValueError, match="expert dimension"):
        PreparedGemm(moe, REF)
    with pytest.raises(ValueError, match="expert-stacked"):
        PreparedMoe(dense, REF)
