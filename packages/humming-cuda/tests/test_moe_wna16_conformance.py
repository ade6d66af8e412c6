"""MoE WnA16 conformance on the GPU against humming_core.numerics.moe (reference_moe_gemm and
reference_fused_moe): uniform and skewed routing, E up to 256, top-k up to 8, M from 1 to 4096,
w13 GLU epilogues (gpt-oss's clamped SwiGLU with its biases included) and w2 router weights,
experts dropped by an expert map (expert -1 blocks). Up to 8 rows per expert the decode form runs (K tails
included), above it the dense K loop's tiles.

Bound: the shared GEMM bound (humming_core.testing.conformance.error_bound) of each row's
accumulator x[id // top_k] @ W_e^T (+ bias), carried through the epilogue (moe_cases.py derives the
GLU part), times |router weight|, plus the output rounding. Outputs are poisoned before the call
and the rows after the output view must keep their bits.
"""

from __future__ import annotations

import pytest
import torch
from moe_cases import (
    OAI,
    SILU,
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
# A small limit, so that both clamps cut a large share of the N(0, 1) accumulators.
OAI_TIGHT = (("glu", "swiglu_oai"), ("swiglu_limit", 0.75))
CASES = [
    Case(8, 2, 1, 256, 256, presets.W4A16_G128, SILU),
    Case(8, 2, 5, 200, 264, presets.W4A16_G128, SILU, skew=True),
    Case(64, 8, 33, 512, 1024, presets.GPTQ_INT4, SILU, skew=True),
    Case(
        16,
        4,
        200,
        384,
        768,
        presets.MXFP4,
        (("glu", "gelu_tanh_mul"), ("glu_layout", "interleaved")),
    ),
    Case(32, 1, 64, 320, 512, presets.W8A16, (("activation", "relu"),), drop=True),
    Case(128, 8, 1024, 256, 256, presets.NVFP4, SILU, skew=True, drop=True),
    Case(256, 8, 4096, 256, 512, presets.W4A16_G128, (), skew=True),
    Case(256, 8, 4096, 512, 256, presets.GGUF_Q4_K, SILU),
    Case(32, 4, 40, 320, 512, presets.MXFP4, OAI, bias=True),
    Case(16, 2, 300, 256, 256, presets.W4A16_G128, OAI_TIGHT, skew=True, bias=True),
    Case(128, 8, 1024, 384, 512, presets.MXFP4, OAI, drop=True),
    # 2048 routed rows of 8-bit weights: the kernel ptxas 13.0 miscompiled while the weight copies
    # carried the evict-first hint (tests/sass_audit.py); it died with an illegal instruction.
    Case(64, 8, 256, 512, 1024, presets.W8A16, SILU, skew=True),
    # 12-13 rows per expert: the dense K loop's 16-row blocks
    Case(32, 4, 100, 320, 520, presets.W4A16_G128, SILU, skew=True),
    # 2-3 rows per expert over 128 experts: the decode form's one-K-warp tile for many expert
    # tiles (heuristics.MANY_TILES_PER_SM), with 32-element groups too
    Case(128, 8, 40, 1024, 512, presets.W4A16_G128, SILU, skew=True),
    Case(128, 8, 40, 1024, 512, presets.MXFP4, SILU),
    # the same on K = 2048 with 4-bit float codes: one 64-column warp, a 2-deep ring
    # (heuristics.FLOAT4_NARROW_TILE), a ragged last group of K rows per expert
    Case(128, 8, 40, 512, 2048, presets.MXFP4, SILU, skew=True),
]


@pytest.fixture(scope="module")
def device():
    """moe_wna16 is hardware-verified: no opt-in to unverified families."""
    from humming_cuda.device import CudaDevice

    with pytest.MonkeyPatch.context() as patch:
        patch.delenv("HUMMING_UNVERIFIED_KERNELS", raising=False)
        yield CudaDevice()


def _layer(device, cw, rows):
    from humming_core.ops import PreparedMoe, moe_bucket_of

    layer = PreparedMoe(cw, device=device, buckets=(moe_bucket_of(rows),))
    return layer, layer.configs[moe_bucket_of(rows)].block_m


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"E{c.experts}k{c.top_k}M{c.m}N{c.n}K{c.k}")
@pytest.mark.parametrize("router_weights", [False, True])
def test_moe_gemm_matches_reference(device, case, router_weights):
    from humming_core.numerics.quant import quantize_weight

    gen = torch.Generator(device="cuda").manual_seed(case.m * 31 + case.experts)
    act = torch.float16 if case.spec.act.dtype.name == "fp16" else torch.bfloat16
    w = torch.randn(case.experts, case.n, case.k, generator=gen, device="cuda") / case.k**0.5
    b = torch.randn(case.experts, case.n, generator=gen, device="cuda") if case.bias else None
    cw = quantize_weight(w, case.spec, bias=b)
    x = torch.randn(case.m, case.k, generator=gen, device="cuda").to(act)
    layer, block = _layer(device, cw, case.m * case.top_k)

    def bound_of(ids, experts, tw):
        return routed_bound(x, cw, ids, experts, case.top_k, tw, wna16_expert_bound, 2.0**-24)

    check_moe_gemm(layer, block, case, cw, x, router_weights, gen, bound_of)


@pytest.mark.parametrize(
    "case", [CASES[2], CASES[5], CASES[10]], ids=["E64k8", "E128k8drop", "E128k8oai"]
)
def test_fused_moe_matches_reference(device, case):
    from humming_core.numerics.moe import reference_fused_moe
    from humming_core.ops import fused_moe

    gen = torch.Generator(device="cuda").manual_seed(7)
    act = torch.float16 if case.spec.act.dtype.name == "fp16" else torch.bfloat16
    hidden = case.k
    w13, w2 = fused_weights(case, gen)
    x = torch.randn(case.m, hidden, generator=gen, device="cuda").to(act)
    topk_w, topk_ids = routing(case, gen)
    rows = case.m * case.top_k
    l13, block = _layer(device, w13, rows)
    l2, block2 = _layer(device, w2, rows)
    assert block == block2 == l13.block_size(rows)
    emap = expert_map(case)
    out = fused_moe(x, topk_w, topk_ids, l13, l2, emap)
    ref = reference_fused_moe(x, topk_w, topk_ids, w13, w2, emap, block_size=block)
    # Two chained GEMMs: compare relative to the output's scale with the 16-bit unit roundoff times
    # a K-proportional factor (the per-GEMM bounds are checked by the test above).
    u = UNIT_ROUNDOFF[case.spec.act.dtype.name]
    scale = ref.float().abs().max().clamp_min(1e-6)
    assert float((out.float() - ref.float()).abs().max() / scale) <= 8 * u * (1 + hidden**0.5 / 8)


def test_fused_moe_compiles_nothing_after_the_layers_are_built(device, monkeypatch):
    """The routing alignment is built with the layers (PreparedMoe -> prepare_moe_align): with the
    compile memo, the disk cache and the loaded moe_align kernels forgotten, building w13 and w2
    compiles every alignment kernel, and fused_moe then compiles nothing, for int32 and int64 ids,
    eager or captured in a CUDA graph."""
    from humming_core import jit
    from humming_core.numerics.quant import quantize_weight
    from humming_core.ops import ROUTING_ID_DTYPES, PreparedMoe, fused_moe, moe_bucket_of
    from humming_cuda.kernels import moe_align as align_module

    monkeypatch.setenv("HUMMING_DISABLE_DISK_CACHE", "1")
    monkeypatch.setattr(align_module, "_KERNELS", {})
    jit.clear_memo()
    experts, top_k, m, hidden, inter = 8, 2, 5, 256, 128
    gen = torch.Generator(device="cuda").manual_seed(3)
    spec13 = presets.MXFP4.replace(layout="moe", epilogue={"glu": "swiglu_oai"})
    spec2 = presets.MXFP4.replace(layout="moe")
    w13 = torch.randn(experts, 2 * inter, hidden, generator=gen, device="cuda") / hidden**0.5
    w2 = torch.randn(experts, hidden, inter, generator=gen, device="cuda") / inter**0.5
    compiled: list[str] = []
    remove = jit.on_compile(lambda event: compiled.append(event.name))
    try:
        buckets = (moe_bucket_of(m * top_k),)
        l13 = PreparedMoe(quantize_weight(w13, spec13), device=device, buckets=buckets)
        l2 = PreparedMoe(quantize_weight(w2, spec2), device=device, buckets=buckets)
        arch = device.caps().arch
        wanted = {s.name for s in align_module.prebuild_sources(arch, ROUTING_ID_DTYPES)}
        assert wanted <= set(compiled), "building the layers did not build moe_align"
        before = jit.compile_count()
        x = torch.randn(m, hidden, generator=gen, device="cuda").bfloat16()
        logits = torch.randn(m, experts, generator=gen, device="cuda")
        weights, ids = torch.softmax(logits, -1).topk(top_k, dim=-1)
        ids = ids.to(torch.int32)
        eager = {d: fused_moe(x, weights, ids.to(d), l13, l2) for d in ROUTING_ID_DTYPES}
        torch.testing.assert_close(eager[torch.int32], eager[torch.int64], rtol=0, atol=0)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            static = fused_moe(x, weights, ids, l13, l2)
        graph.replay()
        torch.cuda.synchronize()
        torch.testing.assert_close(static, eager[torch.int32], rtol=0, atol=0)
        assert jit.compile_count() == before, f"compiled after construction: {compiled[-3:]}"
    finally:
        remove()
