"""MoE W8A8 / W4A8 (CPU): gating, configs, refusals, rendering, and the [E, ...] layout checked by
emulating the kernel's arithmetic on the packed tensors against humming_core.numerics.moe."""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch

from humming_core.device import GemmProblem
from humming_core.numerics.codec import canonical_table
from humming_core.numerics.epilogue import apply_epilogue
from humming_core.numerics.gemm import prepare_act
from humming_core.numerics.moe import moe_align, reference_moe_gemm
from humming_core.numerics.quant import quantize_weight
from humming_core.spec import WeightSpec, presets
from humming_cuda.caps import caps_for_arch
from humming_cuda.device import CudaDevice
from humming_cuda.kernels import FAMILIES, family_named
from humming_cuda.kernels.moe_w8a8 import FAMILY, MoeW8a8Config
from humming_cuda.kernels.moe_w8a8.bind import signature
from humming_cuda.kernels.w8a8 import nibbles
from humming_cuda.kernels.w8a8.config import W8a8Format
from humming_cuda.kernels.w8a8.layout import codes_to_canonical

CAPS = caps_for_arch("sm_90a")
W4A8_UINT4 = presets.W4A8_INT8.replace(
    weight=WeightSpec(dtype="uint4", scale=presets.W4A8_INT8.weight.scale, zero_point="int")
)
PROBLEM = GemmProblem(n=256, k=256, m=16, num_experts=8)


def moe_spec(base=presets.MXFP4_A8, **epilogue):
    return base.model_copy(
        update={"layout": "moe", "epilogue": base.epilogue.model_copy(update=epilogue)}
    )


def test_family_is_verified_and_offered_by_default(monkeypatch):
    assert FAMILY.hardware_verified is True and FAMILY in FAMILIES
    assert family_named("moe_w8a8") is FAMILY
    monkeypatch.delenv("HUMMING_UNVERIFIED_KERNELS", raising=False)
    device = CudaDevice.for_arch("sm_90a")
    # W4A8 with int4 weights and fp16 group scales is moe_w8a8's; MX weights go to moe_wna16_a8
    spec = moe_spec(presets.W4A8_FP8, glu="silu_mul")
    assert device.candidates(spec, PROBLEM)[0].family == "moe_w8a8"
    assert device.candidates(moe_spec(glu="silu_mul"), PROBLEM)[0].family == "moe_wna16_a8"


@pytest.mark.parametrize(("rows", "block"), [(1, 16), (256, 32), (4096, 64)])
@pytest.mark.parametrize("name", ["MXFP4_A8", "W8A8_FP8"])
def test_block_m_follows_rows_per_expert(rows, block, name):
    problem = GemmProblem(n=1024, k=512, m=rows, num_experts=8)
    cfgs = FAMILY.candidates(moe_spec(presets.preset(name)), problem, CAPS)
    assert cfgs and all(c.block_m == block for c in cfgs)
    assert all(c.smem_bytes <= CAPS.smem_per_block for c in cfgs)
    assert cfgs[0].weight_bits == (4 if name == "MXFP4_A8" else 8)


def test_shared_memory_holds_the_row_table():
    cfg = MoeW8a8Config(arch="sm_90a", m_frags=2, n_frags=4, warps_m=2, warps_n=2, stages=3)
    assert cfg.smem_bytes == 3 * (64 * 128 + 64 * 128) + 8 * 64


@pytest.mark.parametrize(
    ("spec", "problem", "words"),
    [
        (presets.MXFP4_A8, PROBLEM, "layout='moe'"),
        (moe_spec(), GemmProblem(n=64, k=72, num_experts=4), "multiple of 16"),
        (moe_spec(glu="silu_mul"), GemmProblem(n=63, k=64, num_experts=4), "even N"),
        (moe_spec(presets.FP8_BLOCK128), PROBLEM, "per token"),
        (moe_spec(presets.MXFP4), PROBLEM, "int8 or e4m3 activations"),
        (moe_spec(presets.W8A8_INT8), GemmProblem(n=64, k=1 << 20, num_experts=2), "exact"),
        (moe_spec(presets.W8A8_INT8), GemmProblem(n=64, k=64, num_experts=0), "num_experts"),
    ],
)
def test_refusals_say_why(spec, problem, words):
    support = FAMILY.supports(spec, problem, CAPS)
    assert not support and words in support.reason


def test_static_activation_scales_and_block_weights_are_refused():
    static = moe_spec(presets.W8A8_FP8).model_copy(
        update={"act": presets.W8A8_FP8.act.model_copy(update={"quant": "static"})}
    )
    assert "per token" in FAMILY.supports(static, PROBLEM, CAPS).reason
    block = moe_spec(presets.FP8_BLOCK128).model_copy(update={"act": presets.W8A8_FP8.act})
    assert "block weight scales" in FAMILY.supports(block, PROBLEM, CAPS).reason


@pytest.mark.parametrize(("arch", "ok"), [("sm_80", False), ("sm_89", True), ("sm_120a", True)])
def test_fp8_needs_ada_int8_runs_on_ampere(arch, ok):
    caps = caps_for_arch(arch)
    assert bool(FAMILY.supports(moe_spec(presets.W4A8_FP8), PROBLEM, caps)) == ok
    assert FAMILY.supports(moe_spec(presets.W4A8_INT8), PROBLEM, caps)


@pytest.mark.parametrize(
    ("epilogue", "policy"),
    [
        ({}, "humming::MoeAct<0>"),
        ({"activation": "relu"}, "humming::MoeAct<1>"),
        ({"glu": "silu_mul"}, "humming::MoeGlu<2>"),
        ({"glu": "swiglu_oai"}, "humming::MoeSwigluOai<0x40e00000u, 0x3fd9db23u>"),
    ],
)
def test_render_bakes_the_epilogue_policy(epilogue, policy):
    spec = moe_spec(**epilogue)
    source = FAMILY.render(spec, FAMILY.candidates(spec, PROBLEM, CAPS)[0], CAPS)
    assert policy in source.code and "HUMMING_MOE_W8A8_ENTRY" in source.code
    assert "HUMMING_ACT_QUANT_ENTRY" in source.code  # x is quantized by the module's own entries
    assert source.name.startswith("humming_moe_w8a8_")


def test_render_refuses_a_config_for_another_arch_or_width():
    spec = moe_spec()
    cfg = FAMILY.candidates(spec, PROBLEM, CAPS)[0]
    with pytest.raises(ValueError, match=r"config\.arch"):
        FAMILY.render(spec, cfg, caps_for_arch("sm_89"))
    with pytest.raises(ValueError, match="weight_bits"):
        FAMILY.render(spec, cfg.model_copy(update={"weight_bits": 8}), CAPS)


def test_signature_matches_the_entry_parameters():
    names = signature(W8a8Format.from_spec(moe_spec()), "k").names
    assert names[:3] == ("a", "a_scales", "qweight") and names[-1] == "num_experts"
    assert len(names) == 20  # HUMMING_MOE_W8A8_ENTRY's parameter count


def _packed_weight(packed, spec, e: int, k: int) -> torch.Tensor:
    """Expert e's weights [NP, K] as the kernel multiplies them (dequantized, in packed order)."""
    fmt = W8a8Format.from_spec(spec)
    qw, ws = packed["qweight"][e], packed["weight_scale"][e]
    if fmt.weight_bits == 8:
        codes = codes_to_canonical(qw)
        return canonical_table(fmt.weight).double()[codes] * ws.double().reshape(-1, 1)
    codes = nibbles.unshuffle(qw, k)
    values = canonical_table(fmt.weight).double()[codes]
    per_k = lambda t: t.double().T.repeat_interleave(fmt.group, dim=1)[:, :k]  # noqa: E731
    if fmt.zero:
        values = codes.double() - per_k(packed["zeros"][e])
    return values * per_k(ws)


def _emulate(x, spec, packed, align, top_k, block, n_out, weights=None):
    """The kernel's arithmetic on the packed tensors: gather, per-expert GEMM, scattering epilogue
    (GLU gate of n8 block 2p paired with the up of block 2p + 1), n_out columns stored."""
    ep, glu = spec.epilogue, spec.epilogue.glu != "none"
    xa = prepare_act(x, spec.act).double()
    sorted_ids, expert_ids, post = align
    k = x.shape[1]
    out = torch.zeros(x.shape[0] * top_k, n_out, dtype=torch.float64)
    for slot in range(int(post[0])):
        tid, e = int(sorted_ids[slot]), int(expert_ids[slot // block])
        if tid >= out.shape[0] or e < 0:
            continue
        acc = xa[tid // top_k] @ _packed_weight(packed, spec, e, k).T
        if "bias" in packed:
            acc = acc + packed["bias"][e].double()
        if glu:
            c = torch.arange(n_out)
            gate = 16 * (c // 8) + c % 8
            acc = torch.cat([acc[gate], acc[gate + 8]])
            ep = ep.model_copy(update={"glu_layout": "split"})
        w = None if weights is None else weights.reshape(-1)[tid : tid + 1]
        plain = ep.model_copy(update={"bias": False})
        out[tid] = apply_epilogue(acc[None], plain, row_weight=w, out_dtype=torch.float64)[0]
    return out


CASES = [
    (presets.MXFP4_A8, {"glu": "silu_mul"}),
    (presets.W4A8_FP8, {"glu": "swiglu_oai", "glu_layout": "interleaved", "bias": True}),
    (presets.W8A8_FP8, {"glu": "gelu_tanh_mul"}),
    (presets.W8A8_INT8, {"activation": "relu", "bias": True}),
    (presets.W4A8_INT8, {}),
    (W4A8_UINT4, {"glu": "silu_mul", "glu_layout": "interleaved"}),  # zero points, GLU order
]


@pytest.mark.parametrize(
    ("base", "epilogue"),
    CASES,
    ids=["mxfp4_silu", "w4a8_oai_bias", "fp8_gelu", "int8_relu", "w4a8i", "uint4_zero_glu"],
)
def test_layout_emulation_matches_the_reference(base, epilogue):
    """Packed layout + the kernel's column pairing reproduce reference_moe_gemm (fp32 outputs, so
    only the summation order differs). N=200 pads the GLU halves (100 -> 104 columns)."""
    experts, top_k, m, n, k = 4, 2, 7, 200, 160
    spec = moe_spec(base, out_dtype="fp32", **epilogue)
    gen = torch.Generator().manual_seed(5)
    w = torch.randn(experts, n, k, generator=gen) / k**0.5
    bias = torch.randn(experts, n, generator=gen) if spec.epilogue.bias else None
    cw = quantize_weight(w, spec, bias=bias)
    x = torch.randn(m, k, generator=gen).bfloat16()
    ids = torch.randint(0, experts, (m, top_k), generator=gen, dtype=torch.int32)
    weights = torch.rand(m, top_k, generator=gen)
    problem = GemmProblem(n=n, k=k, m=m * top_k, num_experts=experts)
    cfg = FAMILY.candidates(spec, problem, CAPS)[0]
    packed = FAMILY.weight_layout(spec, cfg, CAPS).pack(cw, "cpu")
    align = moe_align(ids, cfg.block_m, experts)
    n_out = n // 2 if spec.epilogue.glu != "none" else n
    got = _emulate(x, spec, packed, align, top_k, cfg.block_m, n_out, weights)
    ref = reference_moe_gemm(x, cw, *align, top_k, weights, block_size=cfg.block_m)
    assert got.shape == ref.shape
    torch.testing.assert_close(got, ref.double(), rtol=1e-5, atol=1e-5)


def test_layout_identity_separates_glu_orders():
    spec = moe_spec(glu="silu_mul")
    cfg = FAMILY.candidates(spec, PROBLEM, CAPS)[0]
    split = FAMILY.weight_layout(spec, cfg, CAPS)
    inter = FAMILY.weight_layout(moe_spec(glu="silu_mul", glu_layout="interleaved"), cfg, CAPS)
    plain = FAMILY.weight_layout(moe_spec(), cfg, CAPS)
    assert len({split.identity, inter.identity, plain.identity}) == 3


def test_layout_refuses_dense_weights():
    spec = moe_spec()
    cfg = FAMILY.candidates(spec, PROBLEM, CAPS)[0]
    dense = quantize_weight(torch.randn(64, 128), presets.MXFP4_A8)
    with pytest.raises(ValueError, match="expert-stacked"):
        FAMILY.weight_layout(spec, cfg, CAPS).pack(dense, "cpu")


@pytest.mark.parametrize("name", ["MXFP4_A8", "W4A8_FP8", "W8A8_FP8", "W8A8_INT8"])
def test_reference_quantizes_each_token_before_the_gather(name):
    """What the kernel relies on: per-token activation quantization makes a routed row's result
    independent of the other tokens, so quantizing x [M, K] once and gathering rows equals the
    dense reference of each expert on its tokens."""
    from humming_core.numerics.gemm import reference_gemm
    from humming_cuda.kernels.moe_wna16.layout import expert_weight

    spec = moe_spec(presets.preset(name), out_dtype="fp32")
    gen = torch.Generator().manual_seed(2)
    experts, top_k, m, n, k = 3, 2, 6, 64, 128
    cw = quantize_weight(torch.randn(experts, n, k, generator=gen) / k**0.5, spec)
    x = torch.randn(m, k, generator=gen).bfloat16()
    x[0] *= 50.0  # an outlier token: a shared (per-tensor) scale would change the other rows
    ids = torch.randint(0, experts, (m, top_k), generator=gen, dtype=torch.int32)
    align = moe_align(ids, 16, experts)
    out = reference_moe_gemm(x, cw, *align, top_k, block_size=16)
    for t in range(m):
        for j in range(top_k):
            one = expert_weight(cw, int(ids[t, j]))
            dense = replace(one, spec=spec.replace(layout="dense"))
            want = reference_gemm(x[t : t + 1], dense)[0]
            # fp32 sums in another order; an activation scale shared with the outlier token
            # would move the other rows by the fp8 / int8 step (>= 2^-8 relative)
            torch.testing.assert_close(out[t * top_k + j], want, rtol=1e-4, atol=1e-5)


def test_bench_moe_suite_runs_mxfp4_a8(monkeypatch):
    """`humming bench --suite moe` measures MXFP4_A8 (this family) by default."""
    from humming_core.spec.presets import preset
    from humming_cuda.bench import moe

    monkeypatch.delenv("HUMMING_UNVERIFIED_KERNELS", raising=False)
    assert moe.unsupported_reason(CudaDevice.for_arch("sm_90a"), preset("MXFP4_A8")) is None
