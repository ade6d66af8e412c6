"""MoE WnA16-wgmma (CPU): configs and their shared memory, what the family supports and prefers,
the rendered unit, the entry's parameter order, the routing between it and moe_wna16 (by default,
no opt-in since its verification) and the weight layout both share."""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest
import torch
from moe_cases import UINT8_ZP, moe_spec

import humming_cuda
from humming_core.device import GemmProblem
from humming_core.numerics.quant import quantize_weight
from humming_core.spec import presets
from humming_cuda.caps import caps_for_arch
from humming_cuda.device import CudaDevice
from humming_cuda.kernels import FAMILIES, family_named
from humming_cuda.kernels.moe_wna16 import FAMILY as MOE_WNA16
from humming_cuda.kernels.moe_wna16_wgmma import FAMILY, MoeWna16WgmmaConfig
from humming_cuda.kernels.moe_wna16_wgmma.bind import signature
from humming_cuda.kernels.moe_wna16_wgmma.config import (
    BLOCK_MS,
    block_ms,
    smem_bytes,
    smem_limit,
    weight_stage_bytes,
)
from humming_cuda.kernels.moe_wna16_wgmma.heuristics import (
    MIN_ROWS_PER_EXPERT,
    NARROW_MAX_ROWS,
    NARROW_MIN_ROWS,
    STAGES,
    choose_block_m,
    expected_blocks,
    forced_tile,
)
from humming_cuda.kernels.moe_wna16_wgmma.heuristics import _configs as heuristics_configs
from humming_cuda.kernels.wgmma_tile import ALIGN_SLACK
from humming_cuda.kernels.wna16.config import KernelFormat
from humming_cuda.kernels.wna16_wgmma.render import template_arguments

SM90 = caps_for_arch("sm_90a")
HEADER = Path(humming_cuda.__file__).parent / "include/humming/kernel/moe_wna16_wgmma.cuh"
E = 64
LARGE = GemmProblem(n=1536, k=2048, m=E * 256, num_experts=E)  # 256 routed rows per expert
SMALL = GemmProblem(n=1536, k=2048, m=E * 8, num_experts=E)
GLU = moe_spec(presets.W4A16_G128, glu="silu_mul")
BLOCK_SCALED = presets.FP8_BLOCK128.replace(act={"dtype": "bf16"})  # 2D block scales, bf16 x
# HUMMING_MOE_WNA16_WGMMA_ENTRY's parameters: HUMMING_MOE_WNA16_ENTRY's plus group_shift
ENTRY_PARAMS = [
    *("x", "qweight", "scales", "zeros", "channel_scale", "global_scale", "bias", "topk_weights"),
    *("sorted_ids", "expert_ids", "num_post_padded", "out", "N", "n_out", "K", "lda", "ldc"),
    *("n_pad", "k_tiles", "groups", "group_shift", "top_k", "numel", "num_ids", "num_experts"),
    "a_scales",
]
# the Python names of the routing tensors (PreparedMoe.run's keywords) where C abbreviates them
C_NAMES = {"sorted_token_ids": "sorted_ids", "num_tokens_post_padded": "num_post_padded"}


def test_registered_before_moe_wna16_and_verified():
    names = [f.name for f in FAMILIES]
    assert family_named("moe_wna16_wgmma") is FAMILY
    assert names.index("moe_wna16_wgmma") < names.index("moe_wna16")
    assert FAMILY.hardware_verified is True
    assert FAMILY.unverified_reason(GLU) == ""


@pytest.mark.parametrize(
    ("fields", "words"),
    [
        ({"stages": 2}, r"stages=2: .* \(3, 4, 5, 6, 8\)"),
        ({"stages": 7}, r"stages=7: .* \(3, 4, 5, 6, 8\)"),
        ({"block_m": 32}, r"block_m=32: .* \(48, 64, 96, 128, 160\) rows .* moe_wna16"),
        ({"block_m": 256}, r"block_m=256: .* \(48, 64, 96, 128, 160\)"),
        ({"block_m": 176}, r"block_m=176: .* \(48, 64, 96, 128, 160\)"),
        ({"block_m": 48, "e4m3": True}, r"block_m=48: .* e4m3 form takes \(16, 32, 64, 128\)"),
        ({"block_m": 32, "e4m3": True, "ctas_per_sm": 2}, r"ctas_per_sm=2 .* at most 16 rows"),
        ({"block_m": 64, "ctas_per_sm": 2}, r"ctas_per_sm=2 with e4m3=False"),
    ],
)
def test_config_refuses_what_the_kernel_is_not_built_for(fields, words):
    with pytest.raises(ValueError, match=words):
        MoeWna16WgmmaConfig(arch="sm_90a", **fields)


@pytest.mark.parametrize(
    ("spec", "weights"),
    [
        # 4 x 4 layout tiles of codes (32 * bits words), 4 rows of 256 scales, of zero points
        (GLU, 16 * 32 * 4 * 4 + 2048),
        (moe_spec(UINT8_ZP), 16 * 32 * 8 * 4 + 2048 + 2048),
        (moe_spec(presets.MXFP4), 16 * 32 * 4 * 4 + 2048),
    ],
)
@pytest.mark.parametrize(("stages", "block_m"), [(4, 64), (8, 64), (4, 128), (5, 128)])
def test_smem_is_the_ring_a_staged_half_tile_and_two_row_tables(spec, weights, stages, block_m):
    cfg = MoeWna16WgmmaConfig(arch="sm_90a", stages=stages, block_m=block_m)
    fmt = KernelFormat.from_spec(spec)
    assert weight_stage_bytes(fmt) == weights
    # per stage: x tile (block_m x 64 bf16) + the weights'; half the block_m x 256 fp32 output
    # tile; a full and an empty barrier per stage; per row and tile in flight (two) the routed
    # id, router weight and activation scale
    stage = block_m * 64 * 2 + weights
    want = ALIGN_SLACK + stages * stage + block_m // 2 * 256 * 4 + 16 * stages + 2 * 12 * block_m
    assert smem_bytes(fmt, cfg) == want
    assert (cfg.block_n, cfg.threads) == (256, 384)


@pytest.mark.parametrize(
    ("spec", "problem", "arch", "words"),
    [
        (GLU, LARGE, "sm_80", ("sm_90a", "moe_wna16 family")),
        (GLU, LARGE, "sm_120a", ("sm_90a", "moe_wna16 family")),
        (presets.W4A16_G128, LARGE, "sm_90a", ("layout='dense'", "layout='moe'")),
        (moe_spec(presets.W8A8_FP8), LARGE, "sm_90a", ("quantized", "fp16 or bf16")),
        (moe_spec(BLOCK_SCALED), LARGE, "sm_90a", ("granularity 'block'",)),
        (GLU, GemmProblem(n=1536, k=2044, m=4096, num_experts=E), "sm_90a", ("multiple of 8",)),
        (GLU, GemmProblem(n=1535, k=2048, m=4096, num_experts=E), "sm_90a", ("even N",)),
        (GLU, GemmProblem(n=1536, k=2048, m=4096, num_experts=0), "sm_90a", ("one expert",)),
    ],
)
def test_refusals_say_why(spec, problem, arch, words):
    support = FAMILY.supports(spec, problem, caps_for_arch(arch))
    assert not support
    for word in words:
        assert word in support.reason, support.reason
    assert not FAMILY.candidates(spec, problem, caps_for_arch(arch))


def _rows(per_expert: int) -> GemmProblem:
    return GemmProblem(n=1536, k=2048, m=E * per_expert, num_experts=E)


@pytest.mark.parametrize(
    ("m", "prefers", "block_m"),
    [
        (None, False, 64),
        (E * (NARROW_MIN_ROWS - 1), False, 64),
        (E * NARROW_MIN_ROWS, True, 48),  # the 128-column tile (M = 256 of the bench's layer)
        (E * (MIN_ROWS_PER_EXPERT - 1), True, 48),
        (E * MIN_ROWS_PER_EXPERT - E + 1, True, 48),  # rounds up to MIN_ROWS_PER_EXPERT (M = 512)
        (E * (NARROW_MAX_ROWS + 1), True, 64),
        (E * 48, True, 64),
        (E * 64, True, 96),  # M = 1024 of the bench's layer (top 8)
        (E * 80, True, 96),
        (E * 112, True, 128),
        (E * 128, True, 160),  # M = 2048
        (E * 256, True, 160),  # M = 4096
        (E * 512, True, 128),  # M = 8192
        (E * 1024, True, 160),
    ],
)
def test_prefers_and_block_follow_the_rows_per_expert(m, prefers, block_m):
    problem = GemmProblem(n=1536, k=2048, m=m, num_experts=E)
    assert FAMILY.supports(GLU, problem, SM90)
    assert FAMILY.prefers(GLU, problem, SM90) is prefers
    configs = FAMILY.candidates(GLU, problem, SM90)
    fmt = KernelFormat.from_spec(GLU)
    # 48-row blocks run in the 128-column tile at two CTAs per SM (heuristics.NARROW_TILE)
    tile = {"block_n": 128, "ctas_per_sm": 2} if block_m == 48 else {}
    tiles = [MoeWna16WgmmaConfig(arch="sm_90a", stages=s, block_m=block_m, **tile) for s in STAGES]
    fits = [c for c in tiles if smem_bytes(fmt, c) <= smem_limit(c, SM90.smem_per_block)]
    assert fits and configs == fits


def test_forced_tile_overrides_the_choice_inside_only():
    """forced_tile (the conformance tests', sanitizer's and block sweeps' override): any rows per
    expert take the forced block and fields inside, moe_wna16 with block_m None, and the
    heuristics' choice again after."""
    before = FAMILY.candidates(GLU, SMALL, SM90)
    assert not FAMILY.prefers(GLU, SMALL, SM90) and before
    with forced_tile(96, block_n=128, ctas_per_sm=2):
        assert FAMILY.prefers(GLU, SMALL, SM90)
        forced = FAMILY.candidates(GLU, SMALL, SM90)
        assert forced and {(c.block_m, c.block_n, c.ctas_per_sm) for c in forced} == {(96, 128, 2)}
    with forced_tile(None):
        assert not FAMILY.prefers(GLU, LARGE, SM90)
        assert not FAMILY.candidates(GLU, LARGE, SM90)
    assert FAMILY.candidates(GLU, SMALL, SM90) == before
    assert FAMILY.prefers(GLU, LARGE, SM90)


def test_expected_blocks_match_the_binomial_expectation():
    """expected_blocks (normal approximation) against E[ceil(rows / block)] summed exactly over
    the binomial distribution of an expert's rows, within 2%."""
    for m, experts in ((128 * 32, 128), (128 * 128, 128), (64 * 80, 64), (128 * 512, 128)):
        problem = GemmProblem(n=1536, k=2048, m=m, num_experts=experts)
        p = 1 / experts
        pmf = [math.exp(log_binomial_pmf(m, c, p)) for c in range(m + 1)]
        for block_m in BLOCK_MS:
            exact = sum(q * -(-c // block_m) for c, q in enumerate(pmf))
            assert expected_blocks(problem, block_m) == pytest.approx(exact, rel=0.02)


def log_binomial_pmf(n: int, c: int, p: float) -> float:
    return (
        math.lgamma(n + 1) - math.lgamma(c + 1) - math.lgamma(n - c + 1)
        + c * math.log(p) + (n - c) * math.log1p(-p)
    )  # fmt: skip


def test_wide_blocks_only_where_the_producer_leaves_the_registers():
    """160-row blocks need 208 consumer registers: not with zero points or per-row activation
    scales (their producer keeps 80), where the heuristics take 128 and render refuses 160."""
    at_128 = GemmProblem(n=1536, k=2048, m=E * 128, num_experts=E)
    zp = moe_spec(UINT8_ZP)
    assert choose_block_m(GLU, at_128, SM90) == 160
    assert choose_block_m(GLU, at_128, SM90, row_scaled=True) == 128
    assert choose_block_m(zp, at_128, SM90) == 128
    # 8-bit codes: 160-row blocks fit 3 stages only, not a depth of STAGES
    assert choose_block_m(moe_spec(presets.W8A16), at_128, SM90) == 128
    # a GPU whose shared memory holds no block's ring: no block, no candidates
    small = SM90.model_copy(update={"smem_per_block": 64 * 1024})
    assert choose_block_m(GLU, at_128, small) is None
    assert FAMILY.candidates(GLU, at_128, small) == []
    assert block_ms(KernelFormat.from_spec(zp), False) == (48, 64, 96, 128)
    wide = MoeWna16WgmmaConfig(arch="sm_90a", stages=4, block_m=160)
    FAMILY.render(GLU, wide, SM90)
    with pytest.raises(
        ValueError, match=r"block_m=160: .* \(48, 64, 96, 128\) row blocks .* uint8"
    ):
        FAMILY.render(zp, wide, SM90)
    with pytest.raises(ValueError, match=r"block_m=160: .* row scale 'int8'"):
        FAMILY.render(GLU, wide, SM90, row_scale="int8")


def test_only_ring_depths_that_fit_are_candidates():
    # W4A16 g128, 128-row blocks: 4 stages take 173 KB, 6 stages 226 KB
    fmt = KernelFormat.from_spec(GLU)
    deep = MoeWna16WgmmaConfig(arch="sm_90a", stages=6, block_m=128)
    tight = SM90.model_copy(update={"smem_per_block": smem_bytes(fmt, deep) - 1})
    assert [c.stages for c in FAMILY.candidates(GLU, _rows(512), SM90)] == list(STAGES)
    assert [c.stages for c in FAMILY.candidates(GLU, _rows(512), tight)] == [
        s for s in STAGES if s < 6
    ]


@pytest.mark.parametrize(
    ("spec", "cfg", "policy", "types"),
    [
        (GLU, (4, 64), "humming::MoeGlu<2>", "half, half, false"),
        (
            moe_spec(presets.MXFP4, glu="swiglu_oai", glu_layout="interleaved", bias=True),
            (6, 128),
            "humming::MoeSwigluOai<0x40e00000u, 0x3fd9db23u>",
            "nv_bfloat16, nv_bfloat16, true",
        ),
        (
            moe_spec(presets.GPTQ_INT4.replace(epilogue={"out_dtype": "fp32"}), topk_weight=True),
            (4, 128),
            "humming::MoeAct<0>",
            "half, float, false",
        ),
    ],
)
def test_render_instantiates_the_entry_with_the_dense_register_tile(spec, cfg, policy, types):
    stages, block_m = cfg
    config = MoeWna16WgmmaConfig(arch="sm_90a", stages=stages, block_m=block_m)
    source = FAMILY.render(spec, config, SM90)
    weight, tile = template_arguments(KernelFormat.from_spec(spec), config.dense)
    assert tile == f"humming::WgmmaWna16RsTile<{stages}, 1, true, 4, {block_m}>"
    assert re.fullmatch(r"humming_moe_wna16_wgmma_[0-9a-f]{16}", source.name)
    assert source.code == (
        '#include "humming/kernel/moe_wna16_wgmma.cuh"\n'
        f"using Fmt = {weight};\n"
        f"using Tile = {tile};\n"
        f"using Policy = {policy};\n"
        f"HUMMING_MOE_WNA16_WGMMA_ENTRY({source.name}, Fmt, Tile, {types}, Policy)\n"
        f"static_assert(humming::MoeWna16WgmmaKernel<Fmt, Tile, {types}, Policy>::SMEM_BYTES "
        f"== {smem_bytes(KernelFormat.from_spec(spec), config)}, "
        '"the launch reserves other shared memory");\n'
    )
    assert source.arch == "sm_90a" and source.meta["family"] == "moe_wna16_wgmma"


def test_128_column_tile_is_the_bf16_form_at_two_ctas_per_sm():
    """block_n = 128 (one consumer warpgroup; routed with 48-row blocks): two CTAs per SM of 256
    threads, 64- or 96-row blocks, a ring of half the codes and group rows, a staged half tile of 128
    columns, each within half an SM's shared memory; the dense tile renders CTAS 2, CONSUMERS 1."""
    header = HEADER.read_text()
    assert "__launch_bounds__(TILE::THREADS, TILE::CTAS)" in header
    assert "PAIR_OF_ONE    ? (WIDE_PRODUCER ? 176 : 184)" in header
    fmt = KernelFormat.from_spec(GLU)
    assert weight_stage_bytes(fmt, 128) == 8 * 32 * 4 * 4 + 4 * 128 * 2
    offered = heuristics_configs(fmt, 64, SM90, block_n=128, ctas_per_sm=2)
    assert [c.stages for c in offered] == [6, 5, 4]
    for block_m, stages in ((64, 6), (96, 5)):
        cfg = MoeWna16WgmmaConfig(
            arch="sm_90a", stages=stages, block_m=block_m, block_n=128, ctas_per_sm=2
        )
        assert (cfg.block_n, cfg.threads) == (128, 256)
        stage = block_m * 64 * 2 + weight_stage_bytes(fmt, 128)
        part = block_m // 2 * 128 * 4
        want = ALIGN_SLACK + stages * stage + part + 16 * stages + 2 * 12 * block_m
        assert smem_bytes(fmt, cfg) == want <= smem_limit(cfg, SM90.smem_per_block)
        _, tile = template_arguments(fmt, cfg.dense)
        assert tile == f"humming::WgmmaWna16RsTile<{stages}, 1, true, 4, {block_m}, 2, 1>"
        assert f"using Tile = {tile};" in FAMILY.render(GLU, cfg, SM90).code
    for bad in ({"block_m": 128}, {"ctas_per_sm": 1}, {"e4m3": True}):
        fields = {"stages": 4, "block_m": 64, "block_n": 128, "ctas_per_sm": 2, **bad}
        with pytest.raises(ValueError, match=r"block_n=128 .* the 128-column tile"):
            MoeWna16WgmmaConfig(arch="sm_90a", **fields)


def test_every_config_renders_its_own_kernel():
    configs = [MoeWna16WgmmaConfig(arch="sm_90a", stages=s, block_m=b) for s in (4, 6) for b in (64, 128)]  # fmt: skip
    names = {FAMILY.render(GLU, c, SM90).name for c in configs}
    names.add(FAMILY.render(moe_spec(presets.W4A16_G128), configs[0], SM90).name)  # no GLU
    assert len(names) == 5
    with pytest.raises(ValueError, match=r"config\.arch"):
        FAMILY.render(GLU, configs[0], caps_for_arch("sm_100a"))


def test_signature_has_the_entry_parameters_in_order():
    names = signature(KernelFormat.from_spec(GLU), "k").names
    assert [C_NAMES.get(n, n) for n in names] == ENTRY_PARAMS


def _macro_params(text: str) -> list[str]:
    """Parameter names of HUMMING_MOE_WNA16_WGMMA_ENTRY's kernel, as the header declares them."""
    body = text.split("#define HUMMING_MOE_WNA16_WGMMA_ENTRY(", 1)[1].replace("\\\n", " ")
    params = re.search(r"NAME\((.*?)\)\s*\{", body, re.S).group(1)
    return [p.split()[-1].lstrip("*") for p in params.split(",")]


@pytest.mark.skipif(not HEADER.exists(), reason=f"{HEADER.name} is not written yet")
def test_signature_follows_the_entry_macro_of_the_header():
    names = signature(KernelFormat.from_spec(GLU), "k").names
    assert [C_NAMES.get(n, n) for n in names] == _macro_params(HEADER.read_text())


def test_cuda_device_routes_large_m_to_it(monkeypatch):
    device = CudaDevice.for_arch("sm_90a")
    monkeypatch.delenv("HUMMING_UNVERIFIED_KERNELS", raising=False)
    assert device.candidates(GLU, LARGE)[0].family == "moe_wna16_wgmma"
    # what it leaves (few rows per expert) or cannot run (other arches) stays moe_wna16's
    assert device.candidates(GLU, SMALL)[0].family == "moe_wna16"
    assert CudaDevice.for_arch("sm_80").candidates(GLU, LARGE)[0].family == "moe_wna16"


@pytest.mark.parametrize(
    "spec",
    [
        GLU,
        moe_spec(presets.GPTQ_INT4, glu="gelu_mul", glu_layout="interleaved", bias=True),
        moe_spec(presets.MXFP4),
    ],
)
def test_weights_share_the_moe_wna16_layout(spec):
    mine = FAMILY.weight_layout(spec, FAMILY.candidates(spec, LARGE, SM90)[0], SM90)
    theirs = MOE_WNA16.weight_layout(spec, MOE_WNA16.candidates(spec, SMALL, SM90)[0], SM90)
    assert mine == theirs and mine.identity == theirs.identity
    torch.manual_seed(0)
    e, n, k = 3, 96, 128
    bias = torch.randn(e, n) if spec.epilogue.bias else None
    cw = quantize_weight(torch.randn(e, n, k) / k**0.5, spec, bias=bias)
    packed, want = mine.pack(cw, "cpu"), theirs.pack(cw, "cpu")
    assert packed.keys() == want.keys()
    for name, t in want.items():
        assert torch.equal(packed[name], t), name
