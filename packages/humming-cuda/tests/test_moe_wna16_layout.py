"""MoE WnA16 (CPU): configs and heuristics, the [E, ...] layout and its GLU column order, refusals."""

from __future__ import annotations

import pytest
import torch

from humming_core.device import GemmProblem
from humming_core.numerics.quant import dequantize_weight, quantize_weight
from humming_core.packing.canonical import CanonicalWeight
from humming_core.spec import presets
from humming_cuda.caps import caps_for_arch
from humming_cuda.kernels import family_named
from humming_cuda.kernels.moe_wna16 import FAMILY, MoeWna16Config, block_m_for
from humming_cuda.kernels.moe_wna16.bind import MoeWna16Kernel
from humming_cuda.kernels.moe_wna16.config import smem_bytes
from humming_cuda.kernels.moe_wna16.layout import glu_order, reorder_glu
from humming_cuda.kernels.wna16.config import KernelFormat
from humming_cuda.kernels.wna16.layout import Wna16Layout, unpack_tiles

CAPS = caps_for_arch("sm_90a")


def moe_spec(base=presets.W4A16_G128, **epilogue):
    return base.model_copy(
        update={"layout": "moe", "epilogue": base.epilogue.model_copy(update=epilogue)}
    )


def test_registered_and_verified():
    assert family_named("moe_wna16") is FAMILY
    assert FAMILY.hardware_verified is True


@pytest.mark.parametrize(("rows", "experts", "block"), [(1, 8, 16), (256, 8, 32), (4096, 8, 64)])
def test_block_m_follows_rows_per_expert(rows, experts, block):
    # the dense K loop's tiles; the decode form (tokens > 0) is tested below
    assert block_m_for(rows, experts) == block
    cfgs = FAMILY.candidates(
        moe_spec(), GemmProblem(n=1024, k=512, m=rows, num_experts=experts), CAPS
    )
    dense = [c for c in cfgs if not c.tokens]
    assert dense and all(c.block_m == block and c.split_k == 1 for c in dense)


@pytest.mark.parametrize(
    ("base", "rows", "tokens"),
    [
        (presets.W4A16_G128, 8, 8),  # 1 row per expert: one n8 block of tokens
        (presets.W4A16_G128, 64, 8),  # 8 rows
        (presets.W4A16_G128, 72, 0),  # 9 rows: the dense K loop's 16-row tile
        (presets.W8A16, 64, 8),
        (presets.MXFP4, 64, 8),
        (presets.GGUF_Q4_K, 8, 0),  # float zero points are applied per weight: dense K loop
        (presets.W4A16_G128, 136, 0),  # 17 rows
    ],
)
def test_decode_form_up_to_8_rows_per_expert(base, rows, tokens):
    problem = GemmProblem(n=1024, k=512, m=rows, num_experts=8)
    first = FAMILY.candidates(moe_spec(base), problem, CAPS)[0]
    assert first.tokens == tokens
    if tokens:
        # the routing block is the token count; the tile stays one 16-row fragment
        assert (first.block_m, first.tile_rows, first.m_frags) == (tokens, 16, 1)


def test_decode_tile_narrows_when_its_ctas_would_not_fill_the_gpu():
    # 8 blocks x 8 columns tiles of 128 < 2 CTAs per SM: one 64-column warp per CTA
    few = FAMILY.candidates(moe_spec(), GemmProblem(n=1024, k=2048, m=8, num_experts=8), CAPS)
    many = FAMILY.candidates(moe_spec(), GemmProblem(n=4096, k=2048, m=256, num_experts=64), CAPS)
    assert (few[0].tokens, few[0].warps_n) == (8, 1)
    assert (many[0].tokens, many[0].warps_n) == (8, 2)


@pytest.mark.parametrize(
    ("base", "k", "tile"),
    [
        (presets.MXFP4, 2048, (1, 1, 2)),  # 4-bit float codes on long K: the narrow tile
        (presets.MXFP4, 1024, (2, 1, 3)),  # short K keeps the many-tiles tile
        (presets.W4A16_G128, 2048, (2, 1, 3)),  # integer codes keep it
        (presets.NVFP4, 2048, (2, 4, 3)),  # 16-element groups: the dense decode tile
    ],
)
def test_many_tiles_decode_tile_per_code_kind_and_k(base, k, tile):
    problem = GemmProblem(n=1536, k=k, m=256, num_experts=128)  # 2 rows per expert
    first = FAMILY.candidates(moe_spec(base), problem, CAPS)[0]
    assert first.tokens == 8 and (first.warps_n, first.warps_k, first.stages) == tile


def test_decode_config_checks_its_tile_and_sizes_shared_memory_for_16_rows():
    with pytest.raises(ValueError, match="m_frags=1"):
        MoeWna16Config(arch="sm_90a", tokens=8, m_frags=2)
    fmt = KernelFormat.from_spec(moe_spec())
    decode = MoeWna16Config(arch="sm_90a", tokens=8, warps_n=2, k_steps=4)
    assert (
        smem_bytes(fmt, decode) == fmt.smem_bytes(decode.model_copy(update={"tokens": 0})) + 8 * 16
    )


def test_split_k_is_fixed_to_one():
    with pytest.raises(ValueError):
        MoeWna16Config(arch="sm_90a", split_k=2)


@pytest.mark.parametrize(
    ("spec", "problem", "words"),
    [
        (presets.W4A16_G128, GemmProblem(n=64, k=64, num_experts=4), "layout='moe'"),
        (moe_spec(), GemmProblem(n=64, k=60, num_experts=4), "multiple of 8"),
        (moe_spec(glu="silu_mul"), GemmProblem(n=63, k=64, num_experts=4), "even N"),
    ],
)
def test_refusals_say_why(spec, problem, words):
    support = FAMILY.supports(spec, problem, CAPS)
    assert not support and words in support.reason


@pytest.mark.parametrize(
    ("epilogue", "policy"),
    [
        ({}, "humming::MoeAct<0>"),
        ({"activation": "relu"}, "humming::MoeAct<1>"),
        ({"glu": "silu_mul"}, "humming::MoeGlu<2>"),
        ({"glu": "gelu_tanh_mul"}, "humming::MoeGlu<4>"),
        # gpt-oss: limit 7.0 = 0x40e00000, alpha 1.702 rounded to fp32 = 0x3fd9db23
        ({"glu": "swiglu_oai"}, "humming::MoeSwigluOai<0x40e00000u, 0x3fd9db23u>"),
        ({"glu": "swiglu_oai", "swiglu_limit": 0.75}, "MoeSwigluOai<0x3f400000u, 0x3fd9db23u>"),
    ],
)
def test_render_bakes_the_epilogue_policy(epilogue, policy):
    spec = moe_spec(**epilogue)
    problem = GemmProblem(n=128, k=128, m=8, num_experts=4)
    assert FAMILY.supports(spec, problem, CAPS)
    decode, dense = FAMILY.candidates(spec, problem, CAPS)[:2]
    assert decode.tokens == 8 and not dense.tokens
    for cfg, entry in (
        (decode, "HUMMING_MOE_WNA16_DECODE_ENTRY("),
        (dense, "HUMMING_MOE_WNA16_ENTRY("),
    ):
        source = FAMILY.render(spec, cfg, CAPS)
        assert policy in source.code and entry in source.code
    assert "Act, 8)" in FAMILY.render(spec, decode, CAPS).code


def test_swiglu_constants_enter_the_kernel_name():
    problem = GemmProblem(n=128, k=128, m=8, num_experts=4)
    names = set()
    for limit in (7.0, 10.0):
        spec = moe_spec(glu="swiglu_oai", swiglu_limit=limit)
        names.add(FAMILY.render(spec, FAMILY.candidates(spec, problem, CAPS)[0], CAPS).name)
    assert len(names) == 2


@pytest.mark.parametrize("layout", ["split", "interleaved"])
def test_glu_order_pairs_gate_and_up(layout):
    n = 2 * 40  # 40 output columns: two layout tiles, the second half padding
    order = glu_order(n, layout).view(-1, 2, 32)
    assert order.shape[0] == 2
    for t in range(2):
        for i in range(32):
            c = 32 * t + i
            gate, up = (c, c + 40) if layout == "split" else (2 * c, 2 * c + 1)
            want = (gate, up) if c < 40 else (n, n)
            assert (int(order[t, 0, i]), int(order[t, 1, i])) == want


def _weights(spec, e=3, n=96, k=128, bias=False):
    torch.manual_seed(0)
    w = torch.randn(e, n, k)
    b = torch.randn(e, n) if bias else None
    return quantize_weight(w, spec, bias=b)


@pytest.mark.parametrize(
    "base", [presets.W4A16_G128, presets.W8A16, presets.GPTQ_INT4, presets.NVFP4, presets.GGUF_Q4_K]
)
def test_expert_layout_is_dense_layout_per_expert(base):
    cw = _weights(moe_spec(base), bias=True)
    spec = cw.spec
    packed = FAMILY.weight_layout(spec, None, CAPS).pack(cw, "cpu")
    assert packed["qweight"].shape[0] == cw.num_experts and packed["bias"].shape == (3, 96)
    for e in range(cw.num_experts):
        one = CanonicalWeight(
            spec, cw.n, cw.k, cw.qweight[e], cw.scales[e],
            None if cw.zeros is None else cw.zeros[e],
            None if cw.global_scale is None else cw.global_scale.reshape(-1)[e : e + 1],
            cw.bias[e],
        )  # fmt: skip
        dense = Wna16Layout(FAMILY.weight_layout(spec, None, CAPS).fmt).pack(one, "cpu")
        for name, t in dense.items():
            assert torch.equal(packed[name][e].reshape(t.shape), t), name


@pytest.mark.parametrize("layout", ["split", "interleaved"])
def test_glu_reorder_moves_rows_exactly(layout):
    spec = moe_spec(presets.GPTQ_INT4, glu="silu_mul", glu_layout=layout)
    cw = _weights(spec, e=1, n=80, bias=True)
    one = CanonicalWeight(
        spec, cw.n, cw.k, cw.qweight[0], cw.scales[0], cw.zeros[0], None, cw.bias[0]
    )
    moved = reorder_glu(one, layout)
    order = glu_order(cw.n, layout)
    valid = order < cw.n
    before = dequantize_weight(one)
    after = dequantize_weight(moved)
    assert moved.n == 128
    assert torch.equal(after[valid], before[order[valid]])
    assert torch.equal(moved.bias[valid], one.bias[order[valid]])
    assert (moved.bias[~valid] == 0).all() and (moved.scales[~valid] == 0).all()


def test_packed_glu_codes_round_trip():
    spec = moe_spec(presets.W4A16_G128, glu="silu_mul")
    cw = _weights(spec, e=2, n=64)
    packed = FAMILY.weight_layout(spec, None, CAPS).pack(cw, "cpu")
    from humming_core.packing.bits import unpack_k

    order = glu_order(cw.n, "split")
    for e in range(2):
        codes = unpack_tiles(packed["qweight"][e], 4)[:, : cw.k]
        want = unpack_k(cw.qweight[e], 4, cw.k)[order]
        assert torch.equal(codes, want)


def test_kernel_refuses_block_size_mismatch():
    kernel = MoeWna16Kernel.__new__(MoeWna16Kernel)
    kernel.config, kernel.name = MoeWna16Config(arch="sm_90a", m_frags=2), "k"
    with pytest.raises(ValueError, match="block_m=32"):
        kernel._check_call({"block_size": 16, "out": torch.zeros(4, 4)})


def test_signature_follows_the_entry_parameters_of_the_header():
    """HUMMING_MOE_WNA16_PARAMS (both entries of the family take it) in the binding's order."""
    import re
    from pathlib import Path

    import humming_cuda
    from humming_cuda.kernels.moe_wna16.bind import signature

    header = Path(humming_cuda.__file__).parent / "include/humming/kernel/moe_wna16.cuh"
    body = header.read_text().split("#define HUMMING_MOE_WNA16_PARAMS(T, EPI)", 1)[1]
    params = re.split(r"\n#define", body.replace("\\\n", " "), maxsplit=1)[0]
    c_names = [p.split()[-1].lstrip("*") for p in params.split(",")]
    c_of = {
        "qweight": "w",
        "sorted_token_ids": "sorted_ids",
        "num_tokens_post_padded": "num_post_padded",
    }
    names = signature(KernelFormat.from_spec(moe_spec()), "k").names
    assert [c_of.get(n, n) for n in names] == c_names
