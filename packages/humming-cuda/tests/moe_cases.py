"""What the MoE GEMM conformance tests (test_moe_wna16_conformance.py, test_moe_w8a8_conformance.py)
share: the case, the routing and expert map, the bound carried through the GLU epilogue and the
checks of one routed GEMM's output. The families differ only in the accumulator bound of one
expert (`ExpertBound`), their activations and which family a layer must pick.

The GLU bound: for act(g) * u, |act'| <= GLU_SLOPE (silu, gelu, gelu_tanh) gives
|d| <= GLU_SLOPE |u| dg + |act(g)| du. gpt-oss's swiglu_oai is (cu + 1) * h(cg) with
cg = min(g, limit), cu = clamp(u, -limit, limit) and h(t) = t * sigmoid(alpha * t): the clamps are
1-Lipschitz and h'(t) = silu'(alpha * t), whose maximum (1.0998) does not depend on the slope
alpha > 0, so |d| <= GLU_SLOPE |cu + 1| dg + |h(cg)| du.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

import torch

from humming_core.spec import QuantSpec

POISON = -7777.0
GLU_SLOPE = 1.13  # max |d act / d g| of silu, gelu and gelu_tanh (and of swiglu_oai's h)
GLU_GATE = {"silu_mul": "silu", "gelu_mul": "gelu", "gelu_tanh_mul": "gelu_tanh"}
SILU = (("glu", "silu_mul"),)
# gpt-oss: interleaved gate/up, limit 7, alpha 1.702 (the spec's defaults).
OAI = (("glu", "swiglu_oai"), ("glu_layout", "interleaved"))
# 8-bit codes with integer zero points and 64-element bf16 groups: the widest codes, zero points
# and group rows that change within a 128-deep K step
UINT8_ZP = QuantSpec.model_validate(
    {
        "weight": {
            "dtype": "uint8",
            "scale": {"granularity": "group", "group_size": 64, "dtype": "bf16"},
            "zero_point": "int",
        },
        "act": {"dtype": "bf16"},
    }
)

# (routed activation rows, one expert as a dense weight, its index) -> (accumulator, its bound)
ExpertBound = Callable[[torch.Tensor, object, int], tuple[torch.Tensor, torch.Tensor]]


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
        return moe_spec(self.base, **dict(self.epilogue))


def moe_spec(base, **epilogue):
    """`base` as an MoE spec, its epilogue updated with `epilogue`."""
    return base.model_copy(
        update={"layout": "moe", "epilogue": base.epilogue.model_copy(update=epilogue)}
    )


def routing(case: Case, gen: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """(top-k weights fp32, top-k expert ids int32) of random, optionally skewed, router logits."""
    logits = torch.randn(case.m, case.experts, generator=gen, device="cuda")
    if case.skew:  # a few hot experts take most tokens
        logits += 4.0 * (torch.arange(case.experts, device="cuda") < 3)
    weights, ids = torch.softmax(logits, -1).topk(case.top_k, dim=-1)
    return weights.float(), ids.to(torch.int32)


def expert_map(case: Case) -> torch.Tensor | None:
    if not case.drop:
        return None
    emap = torch.arange(case.experts, dtype=torch.int32, device="cuda")
    emap[::4] = -1
    return emap


def dense_expert(cw, e: int, **epilogue):
    """Expert e as a dense weight with a plain epilogue (plus `epilogue`'s fields): its
    accumulator before the epilogue."""
    from humming_cuda.kernels.moe_wna16.layout import expert_weight

    plain = cw.spec.epilogue.model_copy(
        update={"activation": "none", "glu": "none", "topk_weight": False, "bias": False} | epilogue
    )
    one = expert_weight(cw, e)
    return replace(
        one, spec=cw.spec.model_copy(update={"layout": "dense", "epilogue": plain}), bias=None
    )


def wna16_expert_bound(xa, cw, e) -> tuple[torch.Tensor, torch.Tensor]:
    """`ExpertBound` of the WnA16 MoE families: the accumulator of the routed rows xa through
    expert e (bias included) and the shared GEMM bound (humming_core.testing.conformance)."""
    from humming_core.numerics import dequantize_weight
    from humming_core.testing.conformance import error_bound

    one = dense_expert(cw, e)
    acc = (xa.double() @ dequantize_weight(one).double().T) + (
        0 if cw.bias is None else cw.bias[e].double()
    )
    return acc, error_bound(xa, one, acc)


def w8a8_expert_bound(xr, cw, e) -> tuple[torch.Tensor, torch.Tensor]:
    """`ExpertBound` of the MoE families with 8-bit activations: the kernel quantizes the routed
    rows xr exactly as prepare_act does, so only the sums and the scale roundings differ: the W8A8
    accumulator bound of w8a8_cases.py (bias included)."""
    from w8a8_cases import error_bound as accumulator_bound

    from humming_core.numerics import dequantize_weight
    from humming_core.numerics.gemm import prepare_act

    one = dense_expert(cw, e, out_dtype="fp32")
    bias = 0 if cw.bias is None else cw.bias[e].double()
    acc = prepare_act(xr, cw.spec.act).double() @ dequantize_weight(one).double().T + bias
    d = accumulator_bound(xr, one, torch.zeros_like(acc), None)
    if cw.bias is not None:
        d = d + 2.0**-23 * cw.bias[e].double().abs()
    return acc, d


# The e4m3 form of moe_wna16_wgmma (moe_wna16_wgmma_e4m3.cuh) keeps one fp32 accumulator set over
# all of K: each k32 wgmma step adds its exact products with the tensor cores' alignment, allowed
# 2^-12 of the sum of |products| so far (w8a8_cases' per-step allowance), so ceil(K / 32) * 2^-12
# of the row's |xa| @ |w|^T in all, where the promoted kernels take 2^-10.
E4M3_STEP_SUM = 2.0**-12


def e4m3_expert_bound(xr, cw, e) -> tuple[torch.Tensor, torch.Tensor]:
    """w8a8_expert_bound for the e4m3 form: the per-step allowance over ceil(K / 32) steps in place
    of the promoted blocks' 2^-10, plus the rounding of groups more than 14 binades below their
    row's largest to e4m3 subnormals (half their spacing 2^(smax - 15): at most 2^-15 of the
    row's largest |w|, which is 2^smax / 2 or more)."""
    from w8a8_cases import FP8_BLOCK_SUM

    from humming_core.numerics import dequantize_weight
    from humming_core.numerics.gemm import prepare_act

    acc, d = w8a8_expert_bound(xr, cw, e)
    xa = prepare_act(xr, cw.spec.act).double().abs()
    w = dequantize_weight(dense_expert(cw, e, out_dtype="fp32")).double().abs()
    steps = -(-cw.k // 32)
    d = d + (steps * E4M3_STEP_SUM - FP8_BLOCK_SUM) * (xa @ w.T)
    d = d + 2.0**-15 * xa.sum(-1, keepdim=True) * w.amax(-1)
    return acc, d


def glu_bound(acc, d, epi) -> tuple[torch.Tensor, torch.Tensor]:
    """(bound, reference) of a GLU output from its accumulator `acc` and that one's bound `d`."""
    from humming_core.numerics.epilogue import apply_epilogue, split_glu

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


def routed_bound(x, cw, ids, experts, top_k, weights, expert_bound: ExpertBound, tiny: float):
    """Per-element bound for the routed rows `ids` (expert `experts`): each expert's accumulator
    bound carried through the epilogue, times |router weight|, plus the output rounding."""
    from humming_core.testing.conformance import UNIT_ROUNDOFF

    epi = cw.spec.epilogue
    u_out = UNIT_ROUNDOFF[cw.spec.output_dtype]
    width = cw.n // 2 if epi.glu != "none" else cw.n
    out = torch.zeros(x.shape[0] * top_k, width, dtype=torch.float64, device=x.device)
    for e in torch.unique(experts).tolist():
        rows = ids[experts == e]
        acc, d = expert_bound(x[rows // top_k], cw, e)
        if epi.glu != "none":
            d, ref = glu_bound(acc, d, epi)
        else:
            d, ref = d * (1.0 if epi.activation == "none" else GLU_SLOPE), acc
        w = 1.0 if weights is None else weights.reshape(-1)[rows].double().abs().reshape(-1, 1)
        out[rows] = (d + 2 * u_out * ref.abs()) * w + tiny
    return out


def check_moe_gemm(layer, block, case: Case, cw, x, router_weights, gen, bound_of) -> None:
    """Run `layer` on x with `case`'s routing into a poisoned buffer and compare with
    reference_moe_gemm: rows routed to no local expert must be zeros, the others within
    `bound_of(ids, experts, top_k weights)`, and the rows after the output must keep their bits."""
    from humming_core.numerics.moe import reference_moe_gemm
    from humming_core.ops import moe_align

    topk_w, topk_ids = routing(case, gen)
    rows = case.m * case.top_k
    align = moe_align(topk_ids, block, case.experts, expert_map(case), ignore_invalid_experts=True)
    tw = topk_w if router_weights else None
    buf = torch.full((rows + 3, layer.n_out), POISON, dtype=layer.out_dtype, device="cuda")
    out = layer.run(x, *align, case.top_k, block, topk_weights=tw, out=buf[:rows])
    ref = reference_moe_gemm(x, cw, *align, case.top_k, tw, block_size=block)
    total = int(align[2][0])
    ids = align[0][:total].long()
    experts = align[1].long()[torch.arange(total, device="cuda") // block]
    keep = (ids < rows) & (experts >= 0)
    bound = bound_of(ids[keep], experts[keep], tw)
    unrouted = (bound == 0).all(-1)  # routed only to dropped experts: the contract is exact zeros
    assert (out[unrouted] == 0).all(), "rows routed to no local expert must be written as zeros"
    err = (out.double() - ref.double()).abs()[~unrouted] / bound[~unrouted]
    assert float(err.max()) <= 1.0, f"max error / bound = {float(err.max()):.3g}"
    assert (buf[rows:] == POISON).all(), "the kernel wrote past the output rows"


def fused_weights(case: Case, gen: torch.Generator):
    """(w13, w2) canonical weights for fused_moe: w13 with `case`'s GLU epilogue, w2 plain."""
    from humming_core.numerics.quant import quantize_weight

    hidden, inter = case.k, case.n // 2
    w13 = quantize_weight(
        torch.randn(case.experts, 2 * inter, hidden, generator=gen, device="cuda") / hidden**0.5,
        case.spec,
    )
    w2_spec = case.spec.model_copy(update={"epilogue": case.base.epilogue})
    w2 = quantize_weight(
        torch.randn(case.experts, hidden, inter, generator=gen, device="cuda") / inter**0.5, w2_spec
    )
    return w13, w2


def check_a8_moe_gemm(
    layer_of,
    case: Case,
    router_weights: bool,
    expert_bound: ExpertBound = w8a8_expert_bound,
    tweak=None,
) -> None:
    """check_moe_gemm for a family with 8-bit activations: bf16 x with an outlier token (per-token
    scales differ between rows), bounded by `expert_bound`. `layer_of(cw, rows)` builds the
    layer and returns (layer, block size); `tweak(cw)` edits the quantized weights first."""
    from w8a8_cases import TINY

    from humming_core.numerics.quant import quantize_weight

    gen = torch.Generator(device="cuda").manual_seed(case.m * 31 + case.experts)
    w = torch.randn(case.experts, case.n, case.k, generator=gen, device="cuda") / case.k**0.5
    b = torch.randn(case.experts, case.n, generator=gen, device="cuda") if case.bias else None
    cw = quantize_weight(w, case.spec, bias=b)
    if tweak is not None:
        tweak(cw)
    x = torch.randn(case.m, case.k, generator=gen, device="cuda").bfloat16()
    x[0, :16] *= 40.0
    layer, block = layer_of(cw, case.m * case.top_k)
    tiny = TINY[cw.spec.output_dtype]

    def bound_of(ids, experts, tw):
        return routed_bound(x, cw, ids, experts, case.top_k, tw, expert_bound, tiny)

    check_moe_gemm(layer, block, case, cw, x, router_weights, gen, bound_of)


# fused_moe with 8-bit activations: w2 quantizes the kernel's bf16 hidden rows, which may differ
# from the reference's by one bf16 rounding and so move single 8-bit codes by one step; relative
# to the output's scale.
A8_FUSED_TOLERANCE = 2.0**-5


def check_a8_fused_moe(layer_of, case: Case) -> None:
    """fused_moe against reference_fused_moe for a family with 8-bit activations (layer_of as in
    check_a8_moe_gemm), within A8_FUSED_TOLERANCE of the output's largest value."""
    from humming_core.numerics.moe import reference_fused_moe
    from humming_core.ops import fused_moe

    gen = torch.Generator(device="cuda").manual_seed(7)
    w13, w2 = fused_weights(case, gen)
    x = torch.randn(case.m, case.k, generator=gen, device="cuda").bfloat16()
    topk_w, topk_ids = routing(case, gen)
    rows = case.m * case.top_k
    l13, block = layer_of(w13, rows)
    l2, block2 = layer_of(w2, rows)
    assert block == block2 == l13.block_size(rows)
    emap = expert_map(case)
    out = fused_moe(x, topk_w, topk_ids, l13, l2, emap)
    ref = reference_fused_moe(x, topk_w, topk_ids, w13, w2, emap, block_size=block)
    scale = ref.float().abs().max().clamp_min(1e-6)
    worst = float((out.float() - ref.float()).abs().max() / scale)
    assert worst <= A8_FUSED_TOLERANCE, f"max error / max |ref| = {worst:.3g}"
