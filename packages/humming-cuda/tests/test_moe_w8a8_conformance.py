"""MoE W8A8 / W4A8 conformance on the GPU against humming_core.numerics.moe (reference_moe_gemm and
reference_fused_moe): MXFP4_A8, W4A8_FP8, W8A8_FP8 and the int8 formats as MoE layers; uniform and
skewed routing, E up to 256, top-k up to 8, M from 1 to 4096, w13 GLU epilogues (SiLU, gpt-oss's
clamped SwiGLU with biases), w2 router weights, experts dropped by an expert map (expert -1 blocks).
This file is the family's hardware verification (it opts in with HUMMING_UNVERIFIED_KERNELS=1).

Bound: the W8A8 accumulator bound of w8a8_cases.py (x is quantized per token by the kernel exactly
as by the reference, so only the 8-bit MMA sums and the scale roundings differ) for each routed
row's x[id // top_k] @ W_e^T (+ bias), carried through the epilogue as in
test_moe_wna16_conformance.py (GLU slope 1.13), times |router weight|, plus the output rounding.
Outputs are poisoned before the call and the rows after the output view must keep their bits.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import pytest
import torch
from w8a8_cases import TINY, UNIT_ROUNDOFF
from w8a8_cases import error_bound as accumulator_bound

from humming_core.spec import presets

pytestmark = [
    pytest.mark.cuda,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs an NVIDIA GPU (torch.cuda)"),
]
POISON = -7777.0
GLU_SLOPE = 1.13  # max |d act / d g| of silu, gelu and gelu_tanh (and of swiglu_oai's h)
# fused_moe: w2 quantizes the kernel's bf16 hidden rows, which may differ from the reference's by
# one bf16 rounding and so move single 8-bit codes by one step; relative to the output's scale.
FUSED_TOLERANCE = 2.0**-5


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
    bias: bool = False  # a per-expert bias [E, N]

    @property
    def spec(self):
        ep = self.base.epilogue.model_copy(update=dict(self.epilogue))
        return self.base.model_copy(update={"layout": "moe", "epilogue": ep})


SILU = (("glu", "silu_mul"),)
OAI = (("glu", "swiglu_oai"), ("glu_layout", "interleaved"))
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
    """These tests are the hardware verification: they opt in to the unverified family."""
    from humming_cuda.device import CudaDevice

    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("HUMMING_UNVERIFIED_KERNELS", "1")
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
    """Expert e as a dense weight with a plain fp32 epilogue: its accumulator before the epilogue."""
    from humming_cuda.kernels.moe_wna16.layout import expert_weight

    plain = cw.spec.epilogue.model_copy(
        update={
            "activation": "none",
            "glu": "none",
            "topk_weight": False,
            "bias": False,
            "out_dtype": "fp32",
        }
    )
    one = expert_weight(cw, e)
    return replace(
        one, spec=cw.spec.model_copy(update={"layout": "dense", "epilogue": plain}), bias=None
    )


def _glu_bound(acc, d, epi):
    """(bound, reference) of a GLU output from its accumulator `acc` and that one's bound `d`."""
    from humming_core.numerics.epilogue import apply_epilogue, split_glu

    (g, u), (dg, du) = split_glu(acc, epi.glu_layout), split_glu(d, epi.glu_layout)
    if epi.glu == "swiglu_oai":
        limit = epi.swiglu_limit
        g, u = g.clamp(max=limit), u.clamp(-limit, limit) + 1.0
        act = g * torch.sigmoid(epi.swiglu_alpha * g)
    else:
        act = apply_epilogue(g, epi.model_copy(update={"glu": "none", "activation": "silu"}))
    return GLU_SLOPE * u.abs() * dg + act.double().abs() * du, act.double() * u


def _bound(x, cw, ids, experts, top_k, weights):
    """Per-element bound of the module docstring for the routed rows `ids` (expert `experts`)."""
    from humming_core.numerics import dequantize_weight
    from humming_core.numerics.gemm import prepare_act

    epi = cw.spec.epilogue
    u_out = UNIT_ROUNDOFF[cw.spec.output_dtype]
    width = cw.n // 2 if epi.glu != "none" else cw.n
    out = torch.zeros(x.shape[0] * top_k, width, dtype=torch.float64, device=x.device)
    for e in torch.unique(experts).tolist():
        rows = ids[experts == e]
        xr, one = x[rows // top_k], _dense(cw, e)
        bias = 0 if cw.bias is None else cw.bias[e].double()
        acc = prepare_act(xr, cw.spec.act).double() @ dequantize_weight(one).double().T + bias
        d = accumulator_bound(xr, one, torch.zeros_like(acc), None)
        if cw.bias is not None:
            d = d + 2.0**-23 * cw.bias[e].double().abs()
        if epi.glu != "none":
            d, ref = _glu_bound(acc, d, epi)
        else:
            d, ref = d * (1.0 if epi.activation == "none" else GLU_SLOPE), acc
        w = 1.0 if weights is None else weights.reshape(-1)[rows].double().abs().reshape(-1, 1)
        out[rows] = (d + 2 * u_out * ref.abs()) * w + TINY[cw.spec.output_dtype]
    return out


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
    from humming_core.numerics.moe import reference_moe_gemm
    from humming_core.numerics.quant import quantize_weight
    from humming_core.ops import moe_align

    gen = torch.Generator(device="cuda").manual_seed(case.m * 31 + case.experts)
    w = torch.randn(case.experts, case.n, case.k, generator=gen, device="cuda") / case.k**0.5
    b = torch.randn(case.experts, case.n, generator=gen, device="cuda") if case.bias else None
    cw = quantize_weight(w, case.spec, bias=b)
    x = torch.randn(case.m, case.k, generator=gen, device="cuda").bfloat16()
    x[0, :16] *= 40.0  # an outlier token: per-token scales differ between rows
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


@pytest.mark.parametrize("case", [CASES[4], CASES[6]], ids=["mxfp4a8-drop", "mxfp4a8-oai"])
def test_fused_moe_matches_reference(device, case):
    from humming_core.numerics.moe import reference_fused_moe
    from humming_core.numerics.quant import quantize_weight
    from humming_core.ops import fused_moe

    gen = torch.Generator(device="cuda").manual_seed(7)
    hidden, inter = case.k, case.n // 2
    w13 = quantize_weight(
        torch.randn(case.experts, 2 * inter, hidden, generator=gen, device="cuda") / hidden**0.5,
        case.spec,
    )
    w2_spec = case.spec.model_copy(update={"epilogue": case.base.epilogue})
    w2 = quantize_weight(
        torch.randn(case.experts, hidden, inter, generator=gen, device="cuda") / inter**0.5, w2_spec
    )
    x = torch.randn(case.m, hidden, generator=gen, device="cuda").bfloat16()
    topk_w, topk_ids = _routing(case, gen)
    rows = case.m * case.top_k
    l13, block = _layer(device, w13, rows)
    l2, block2 = _layer(device, w2, rows)
    assert block == block2 == l13.block_size(rows)
    emap = _expert_map(case)
    out = fused_moe(x, topk_w, topk_ids, l13, l2, emap)
    ref = reference_fused_moe(x, topk_w, topk_ids, w13, w2, emap, block_size=block)
    scale = ref.float().abs().max().clamp_min(1e-6)
    worst = float((out.float() - ref.float()).abs().max() / scale)
    assert worst <= FUSED_TOLERANCE, f"max error / max |ref| = {worst:.3g}"
