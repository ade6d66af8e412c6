"""MoE WnA16 conformance on the GPU against humming_core.numerics.moe (reference_moe_gemm and
reference_fused_moe): uniform and skewed routing, E up to 256, top-k up to 8, M from 1 to 4096,
w13 GLU epilogues (gpt-oss's clamped SwiGLU with its biases included) and w2 router weights,
experts dropped by an expert map (expert -1 blocks).

Bound: the shared GEMM bound (humming_core.testing.conformance.error_bound) of each row's
accumulator x[id // top_k] @ W_e^T (+ bias), carried through the epilogue: for a GLU act(g) * u,
|act'| <= 1.13 (silu, gelu, gelu_tanh) gives |d| <= 1.13 |u| dg + |act(g)| du. gpt-oss's
swiglu_oai is (cu + 1) * h(cg) with cg = min(g, limit), cu = clamp(u, -limit, limit) and
h(t) = t * sigmoid(alpha * t): the clamps are 1-Lipschitz and h'(t) = silu'(alpha * t), whose
maximum (1.0998) does not depend on the slope alpha > 0, so |d| <= 1.13 |cu + 1| dg + |h(cg)| du.
Then times |router weight|, plus the output rounding. Outputs are poisoned before the call and the
rows after the output view must keep their bits.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import pytest
import torch

from humming_core.numerics.epilogue import apply_epilogue, split_glu
from humming_core.spec import presets
from humming_core.testing.conformance import UNIT_ROUNDOFF, error_bound

pytestmark = [
    pytest.mark.cuda,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs an NVIDIA GPU (torch.cuda)"),
]
POISON = -7777.0
GLU_SLOPE = 1.13  # max |d act / d g| of silu, gelu and gelu_tanh


@dataclass(frozen=True)
class Case:
    experts: int
    top_k: int
    m: int
    n: int
    k: int
    base: object
    epilogue: tuple = ()
    skew: bool = False
    drop: bool = False  # an expert map marks a quarter of the experts non-local (-1)
    bias: bool = False  # a per-expert bias [E, N] (gpt-oss's experts have one)

    @property
    def spec(self):
        ep = self.base.epilogue.model_copy(update=dict(self.epilogue))
        return self.base.model_copy(update={"layout": "moe", "epilogue": ep})


SILU = (("glu", "silu_mul"),)
# gpt-oss: interleaved gate/up, limit 7, alpha 1.702 (the spec's defaults), biases.
OAI = (("glu", "swiglu_oai"), ("glu_layout", "interleaved"))
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
]


@pytest.fixture(scope="module")
def device():
    """moe_wna16 is hardware-verified: no opt-in to unverified families."""
    from humming_cuda.device import CudaDevice

    with pytest.MonkeyPatch.context() as patch:
        patch.delenv("HUMMING_UNVERIFIED_KERNELS", raising=False)
        yield CudaDevice()


def _routing(case: Case, gen: torch.Generator):
    logits = torch.randn(case.m, case.experts, generator=gen, device="cuda")
    if case.skew:  # a few hot experts take most tokens
        logits += 4.0 * (torch.arange(case.experts, device="cuda") < 3)
    weights, ids = torch.softmax(logits, -1).topk(case.top_k, dim=-1)
    return weights.float(), ids.to(torch.int32)


def _expert_map(case: Case):
    if not case.drop:
        return None
    emap = torch.arange(case.experts, dtype=torch.int32, device="cuda")
    emap[::4] = -1
    return emap


def _dense(cw, e):
    from humming_cuda.kernels.moe_wna16.layout import expert_weight

    plain = cw.spec.epilogue.model_copy(
        update={"activation": "none", "glu": "none", "topk_weight": False, "bias": False}
    )
    one = expert_weight(cw, e)
    return replace(
        one, spec=cw.spec.model_copy(update={"layout": "dense", "epilogue": plain}), bias=None
    )


def _bound(x, cw, ids, experts, top_k, weights):
    """Per-element bound of the module docstring for the routed rows `ids` (expert `experts`)."""
    from humming_core.numerics import dequantize_weight

    epi = cw.spec.epilogue
    u_out = UNIT_ROUNDOFF[cw.spec.output_dtype]
    width = cw.n // 2 if epi.glu != "none" else cw.n
    out = torch.zeros(x.shape[0] * top_k, width, dtype=torch.float64, device=x.device)
    for e in torch.unique(experts).tolist():
        rows = ids[experts == e]
        xa, one = x[rows // top_k], _dense(cw, e)
        acc = (xa.double() @ dequantize_weight(one).double().T) + (
            0 if cw.bias is None else cw.bias[e].double()
        )
        d = error_bound(xa, one, acc)
        if epi.glu != "none":
            d, ref = _glu_bound(acc, d, epi)
        else:
            d, ref = d * (1.0 if epi.activation == "none" else GLU_SLOPE), acc
        w = 1.0 if weights is None else weights.reshape(-1)[rows].double().abs().reshape(-1, 1)
        out[rows] = (d + 2 * u_out * ref.abs()) * w + 2.0**-24
    return out


GLU_GATE = {"silu_mul": "silu", "gelu_mul": "gelu", "gelu_tanh_mul": "gelu_tanh"}


def _glu_bound(acc, d, epi):
    """(bound, reference) of a GLU output from its accumulator `acc` and that one's bound `d`."""
    (g, u), (dg, du) = split_glu(acc, epi.glu_layout), split_glu(d, epi.glu_layout)
    if epi.glu == "swiglu_oai":
        limit = epi.swiglu_limit
        g, u = g.clamp(max=limit), u.clamp(-limit, limit) + 1.0
        act = g * torch.sigmoid(epi.swiglu_alpha * g)
    else:
        act = apply_epilogue(
            g, epi.model_copy(update={"glu": "none", "activation": GLU_GATE[epi.glu]})
        ).double()
    return GLU_SLOPE * u.abs() * dg + act.abs() * du, act * u


def _layer(device, cw, rows):
    from humming_core.ops import PreparedMoe, bucket_of

    layer = PreparedMoe(cw, device=device, buckets=(bucket_of(rows),))
    return layer, layer.configs[bucket_of(rows)].block_m


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"E{c.experts}k{c.top_k}M{c.m}N{c.n}K{c.k}")
@pytest.mark.parametrize("router_weights", [False, True])
def test_moe_gemm_matches_reference(device, case, router_weights):
    from humming_core.numerics.moe import reference_moe_gemm
    from humming_core.numerics.quant import quantize_weight
    from humming_core.ops import moe_align

    gen = torch.Generator(device="cuda").manual_seed(case.m * 31 + case.experts)
    act = torch.float16 if case.spec.act.dtype.name == "fp16" else torch.bfloat16
    w = torch.randn(case.experts, case.n, case.k, generator=gen, device="cuda") / case.k**0.5
    b = torch.randn(case.experts, case.n, generator=gen, device="cuda") if case.bias else None
    cw = quantize_weight(w, case.spec, bias=b)
    x = torch.randn(case.m, case.k, generator=gen, device="cuda").to(act)
    topk_w, topk_ids = _routing(case, gen)
    rows = case.m * case.top_k
    layer, block = _layer(device, cw, rows)
    align = moe_align(topk_ids, block, case.experts, _expert_map(case), ignore_invalid_experts=True)
    tw = topk_w if router_weights else None
    buf = torch.full((rows + 3, layer.n_out), POISON, dtype=layer.out_dtype, device="cuda")
    out = layer.run(x, *align, case.top_k, block, topk_weights=tw, out=buf[:rows])
    ref = reference_moe_gemm(x, cw, *align, case.top_k, tw, block_size=block)
    total = int(align[2][0])
    ids = align[0][:total].long()
    experts = align[1].long()[torch.arange(total, device="cuda") // block]
    keep = (ids < rows) & (experts >= 0)
    bound = _bound(x, cw, ids[keep], experts[keep], case.top_k, tw)
    unrouted = (bound == 0).all(-1)  # routed only to dropped experts: the contract is exact zeros
    assert (out[unrouted] == 0).all(), "rows routed to no local expert must be written as zeros"
    err = (out.double() - ref.double()).abs()[~unrouted] / bound[~unrouted]
    assert float(err.max()) <= 1.0, f"max error / bound = {float(err.max()):.3g}"
    assert (buf[rows:] == POISON).all(), "the kernel wrote past the output rows"


@pytest.mark.parametrize(
    "case", [CASES[2], CASES[5], CASES[10]], ids=["E64k8", "E128k8drop", "E128k8oai"]
)
def test_fused_moe_matches_reference(device, case):
    from humming_core.numerics.moe import reference_fused_moe
    from humming_core.numerics.quant import quantize_weight
    from humming_core.ops import fused_moe

    gen = torch.Generator(device="cuda").manual_seed(7)
    act = torch.float16 if case.spec.act.dtype.name == "fp16" else torch.bfloat16
    hidden, inter = case.k, case.n // 2
    w13 = quantize_weight(
        torch.randn(case.experts, 2 * inter, hidden, generator=gen, device="cuda") / hidden**0.5,
        case.spec,
    )
    w2_spec = case.spec.model_copy(update={"epilogue": case.base.epilogue})
    w2 = quantize_weight(
        torch.randn(case.experts, hidden, inter, generator=gen, device="cuda") / inter**0.5, w2_spec
    )
    x = torch.randn(case.m, hidden, generator=gen, device="cuda").to(act)
    topk_w, topk_ids = _routing(case, gen)
    rows = case.m * case.top_k
    l13, block = _layer(device, w13, rows)
    l2, block2 = _layer(device, w2, rows)
    assert block == block2 == l13.block_size(rows)
    emap = _expert_map(case)
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
    from humming_core.ops import ROUTING_ID_DTYPES, PreparedMoe, bucket_of, fused_moe
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
        buckets = (bucket_of(m * top_k),)
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
