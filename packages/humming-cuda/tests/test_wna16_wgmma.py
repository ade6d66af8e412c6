"""CPU tests of the WnA16-wgmma family: which specs it takes and refuses (with reasons), its
configs' shared-memory budget, the rendered source, the shared wna16 weight layout (the kernel's
reading of it, emulated lane by lane, reproduces the canonical weights), the activation tensor-map
parameters and the launch signature. The arch / problem refusals and the registry order shared
with w8a8_wgmma are tested in test_wgmma_tile.py."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import torch
from wna16_cases import make_spec
from wna16_wgmma_cases import INTEGER_FORMATS

from humming_core.device import GemmProblem
from humming_core.numerics import dequantize_weight, quantize_weight
from humming_core.spec import QuantSpec, ScaleSpec, WeightSpec, presets
from humming_cuda.caps import caps_for_arch
from humming_cuda.device import CudaDevice
from humming_cuda.kernels.wna16 import FAMILY as WNA16
from humming_cuda.kernels.wna16.config import KernelFormat
from humming_cuda.kernels.wna16.layout import plane_widths
from humming_cuda.kernels.wna16_wgmma import FAMILY, WgmmaWna16Config, heuristics
from humming_cuda.kernels.wna16_wgmma.bind import signature
from humming_cuda.kernels.wna16_wgmma.config import RS_WIDE_BLOCK_MS
from humming_cuda.kernels.wna16_wgmma.tma import act_map_params

SM90 = caps_for_arch("sm_90a")
LARGE = GemmProblem(n=4096, k=4096, m=1024)
KERNELS = Path(__file__).parents[1] / "src/humming_cuda/include/humming/kernel"
HEADER = (KERNELS / "wna16_wgmma.cuh").read_text()
RS_HEADER = (KERNELS / "wna16_wgmma_rs.cuh").read_text()


@pytest.mark.parametrize(
    "name", ["W4A16_G128", "W8A16", "GPTQ_INT4", "AWQ_INT4", "W3A16_G128", "GGUF_Q4_K", "MXINT4"]
)
def test_presets_are_supported_at_large_m_on_sm90a(name):
    support = FAMILY.supports(presets.preset(name), LARGE, SM90)
    assert support, support.reason
    assert FAMILY.candidates(presets.preset(name), LARGE, SM90)


def _weight(dtype: str, scale: ScaleSpec, zero: str = "none") -> QuantSpec:
    return QuantSpec(
        weight=WeightSpec(dtype=dtype, scale=scale, zero_point=zero), act={"dtype": "fp16"}
    )


@pytest.mark.parametrize(
    ("spec", "words"),
    [
        (presets.W8A8_INT8, "fp16 or bf16 activations"),
        (_weight("int4", ScaleSpec(granularity="group", group_size=128), "int"), "use uint4"),
        (_weight("uint8", ScaleSpec(granularity="block", block=(128, 128))), "'block'"),
        (
            QuantSpec(
                weight=presets.W4A16_G128.weight,
                act={"dtype": "fp16"},
                epilogue={"activation": "silu"},
            ),
            "scales, bias and the output dtype only",
        ),
    ],
)
def test_other_specs_are_refused_with_the_reason(spec, words):
    support = FAMILY.supports(spec, LARGE, SM90)
    assert not support and words in support.reason


def test_configs_mirror_the_header():
    configs = FAMILY.candidates(presets.GPTQ_INT4, LARGE, SM90)
    assert [c.stages for c in configs] == [4, 6]
    assert "BM = 128, BN = 128, BK = 64" in HEADER
    assert "A_BYTES = BM * BK * 2, B_BYTES = BN * BK * 2, B_BUFFERS = 3" in HEADER
    assert "SMEM_BYTES = 1024 + STAGES * A_BYTES + B_BUFFERS * B_BYTES + 16 * STAGES" in HEADER
    assert WgmmaWna16Config(arch="sm_90a", stages=4).smem_bytes == 1024 + 4 * 16384 + 3 * 16384 + 64


def test_render_instantiates_one_entry_with_the_spec_arguments():
    """The shared-memory form (the register-A form's render: test_wna16_wgmma_compile.py)."""
    cfg = FAMILY.candidates(presets.W4A16_G128, LARGE, SM90)[0]
    cfg = cfg.model_copy(update={"weights_in_registers": False})
    source = FAMILY.render(presets.W4A16_G128, cfg, SM90)
    assert source.arch == "sm_90a"
    assert '#include "humming/kernel/wna16_wgmma.cuh"' in source.code
    # int4: offset-binary codes, in-loop fp16 scales with their power-of-two shift in the epilogue,
    # integer codes' float defaults, then log2 of the group (128)
    assert "humming::WgmmaWna16Format<4, 0, 8, true, 0, true, false, 0, 0, 7>" in source.code
    assert f"humming::WgmmaWna16Tile<{cfg.stages}, {cfg.group_m}>" in source.code
    assert re.search(
        rf"HUMMING_WNA16_WGMMA_ENTRY\({source.name}, Fmt, Tile, half, half, false\)", source.code
    )
    gptq = FAMILY.render(presets.GPTQ_INT4, cfg, SM90)
    assert "humming::WgmmaWna16Format<4, 1, 0, true, 0, true, false, 0, 0, 7>" in gptq.code
    assert gptq.name != source.name
    w8 = FAMILY.render(presets.W8A16, cfg, SM90)  # per-channel scales in the fp32 epilogue
    assert "humming::WgmmaWna16Format<8, 0, 128, false, 1, false>" in w8.code  # no group shift


def _pair_codes(words: list[int], bits: int, pair: int) -> tuple[int, int]:
    """pair_codes in wna16_wgmma.cuh: the two codes of `pair`, bit planes reassembled."""
    lo = hi = offset = 0
    for width in plane_widths(bits):
        per = 16 // width
        word = words[offset + pair // per] >> ((pair % per) * width)
        lo |= (word & ((1 << width) - 1)) << offset
        hi |= ((word >> 16) & ((1 << width) - 1)) << offset
        offset += width
    return lo, hi


def _kernel_weights(packed: dict, fmt: KernelFormat, n: int, k: int) -> torch.Tensor:
    """W [n, k] as the kernel's consumer lanes form it from the wna16 layout (load / dequant in
    wna16_wgmma.cuh): lane 4g+t of a 64 x 16 tile, pair 2j+h -> column 8j+g, K 8h+2t (+1); its
    eight scales / zero points at tile columns 8g..8g+7; one rounding to the activation type."""
    words = (packed["qweight"].to(torch.int64) & 0xFFFFFFFF).tolist()
    nt_count, kt_count = len(words), len(words[0])
    act = {"fp16": torch.float16, "bf16": torch.bfloat16}[fmt.act]
    shift = fmt.group.bit_length() - 1 if fmt.group > 0 else 0
    codes = torch.zeros(nt_count * 64, kt_count * 16, dtype=torch.float64)
    s = torch.ones_like(codes)
    z = torch.full_like(codes, 1 << (fmt.bits - 1) if fmt.kind == "int" else 0)
    for nt in range(nt_count):
        for kt in range(kt_count):
            row = ((kt * 16) >> shift) if fmt.group > 0 else 0
            for lane in range(32):
                g, t = divmod(lane, 4)
                lane_words = words[nt][kt][lane * fmt.bits : (lane + 1) * fmt.bits]
                for j in range(8):
                    col = nt * 64 + 8 * j + g
                    src = nt * 64 + 8 * g + j
                    for h in range(2):
                        ks = slice(kt * 16 + 8 * h + 2 * t, kt * 16 + 8 * h + 2 * t + 2)
                        codes[col, ks] = torch.tensor(_pair_codes(lane_words, fmt.bits, 2 * j + h))
                        if fmt.group > 0:
                            s[col, ks] = packed["scales"][row, src].double()
                        if fmt.zero != "none":
                            z[col, ks] = packed["zeros"][row, src].double()
    w = codes * s - z if fmt.zero == "float" else (codes - z) * s  # exact in float64 here
    w = w.to(act).double()[:n, :k]
    if fmt.epi_scale != "none":
        w = w * packed["channel_scale"][:n].double().reshape(-1, 1)
    if fmt.epi_global:
        w = w * packed["global_scale"].double()
    return w


@pytest.mark.parametrize("fmt", INTEGER_FORMATS, ids=lambda f: f"{f[0]}-z{f[1]}-{f[2][-1]}")
def test_kernel_reading_of_the_wna16_layout_gives_the_canonical_weights(fmt):
    n, k = 72, 40  # N and K tails: the layout pads to 64 columns and 16-deep tiles
    act = "bf16" if fmt[0] in ("int8", "uint8") else "fp16"
    group = "channel" if fmt[1] == "int" and fmt[0] == "uint4" else 16
    spec = make_spec(fmt, act, group, k, True, None, fmt[2][-1])
    gen = torch.Generator().manual_seed(3)
    cw = quantize_weight(torch.randn(n, k, generator=gen) * 0.05, spec, bias=torch.randn(n))
    cfg = WgmmaWna16Config(arch="sm_90a")
    layout = FAMILY.weight_layout(spec, cfg, SM90)
    packed = layout.pack(cw, "cpu")
    want = dequantize_weight(cw).double()
    got = _kernel_weights(packed, KernelFormat.from_spec(spec), n, k)
    # two roundings, as in the conformance bound: the layout's scale (fp32 / e8m0 -> activation
    # type) and the dequantized weight
    u = {"fp16": 2.0**-11, "bf16": 2.0**-8}[act]
    tiny = 2.0**-24 * packed.get("global_scale", torch.ones(1)).item()  # fp16 subnormal spacing
    assert ((got - want).abs() <= 2 * u * want.abs() + tiny).all()


@pytest.mark.parametrize("spec", [presets.W4A16_G128, presets.GPTQ_INT4, presets.W8A16])
def test_weights_share_the_wna16_layout_over_every_m_bucket(spec):
    ours = FAMILY.weight_layout(spec, FAMILY.candidates(spec, LARGE, SM90)[0], SM90)
    small = WNA16.candidates(spec, GemmProblem(n=4096, k=4096, m=16), SM90)[0]
    assert ours.identity == WNA16.weight_layout(spec, small, SM90).identity


def test_act_map_params_describe_k_major_128_byte_boxes():
    p = act_map_params(rows=300, k=1040, row_stride=2 * 1048, what="x")
    assert p.global_dim == (1040, 300) and p.global_strides == (2096,)
    assert p.box_dim == (64, 128) and p.element_bytes == 2
    assert p.box_bytes == 128 * 64 * 2  # the expect_tx count of one stage
    with pytest.raises(ValueError, match="multiple of 16"):
        act_map_params(rows=4, k=60, row_stride=120, what="x")
    with pytest.raises(ValueError, match="at least"):
        act_map_params(rows=4, k=64, row_stride=64, what="x")


def _param_names(text: str) -> list[str]:
    return [p.split()[-1].lstrip("*") for p in text.replace("\\", " ").split(",")]


def test_signatures_follow_the_entry_macros():
    """Both forms' parameters (HM_WNA16_WGMMA_PARAMS; the register-A entry appends split-K's and
    the resident CTAs that rs_split_scatter waits on)."""
    fmt = KernelFormat.from_spec(presets.GPTQ_INT4)
    shared = re.search(r"PARAMS\(ACT, OUT\)(.*?)#define", HEADER, re.S).group(1)
    params = _param_names(shared)
    assert params[0] == "tmap_x" and tuple(params[1:]) == signature(fmt, "k").names[1:]
    extra = re.search(r"PARAMS\(ACT, OUT\), (.*?)\)\s*\{", RS_HEADER, re.S).group(1)
    split = signature(fmt, "k", split=True).names[1:]
    assert tuple(params[1:] + _param_names(extra)) == split
    assert split[-4:] == ("workspace", "counters", "iters_per_split", "resident")


def test_float_weights_take_this_family_at_large_m(monkeypatch):
    """Float codes passed their conformance cases on an H200 (session 5), so they are offered by
    default like the integer codes; the rest of the routing is in test_wgmma_tile.py."""
    device = CudaDevice.for_arch("sm_90a")
    monkeypatch.delenv("HUMMING_UNVERIFIED_KERNELS", raising=False)
    for spec in (presets.MXFP4, presets.E4M3_G128, presets.GPTQ_INT4):
        assert FAMILY.unverified_reason(spec) == ""
        assert device.candidates(spec, LARGE)[0].family == "wna16_wgmma"
    cfg = device.candidates(presets.MXFP4, LARGE)[0]
    # e2m1: float, 2, 1; groups of 32: shift 5
    assert ", true, 2, 1, 5>" in FAMILY.render(presets.MXFP4, cfg, SM90).code


def test_signature_refuses_what_tma_cannot_load_before_the_device_check():
    """x rows must be 16-byte aligned (TMA); packed tensors must have the wna16 layout's shapes.
    Checked on CPU tensors: the shape and layout checks come before the device check."""
    spec = presets.GPTQ_INT4
    sig = signature(KernelFormat.from_spec(spec), "k")
    cw = quantize_weight(torch.randn(200, 136) * 0.05, spec)
    cfg = FAMILY.candidates(spec, LARGE, SM90)[0]
    packed = FAMILY.weight_layout(spec, cfg, SM90).pack(cw, "cpu")
    out = torch.empty(130, 200, dtype=torch.float16)
    dims = {"LDC": 200, "NT": 4, "NP": 256, "KT": 9, "GS": 7}
    wide = torch.zeros(130, 144, dtype=torch.float16)
    with pytest.raises(ValueError, match="aligned to 16 bytes"):
        sig.check({"x": wide[:, 4:140], "out": out, **packed}, dims)  # starts 8 bytes in
    odd = torch.zeros(130, 140, dtype=torch.float16)[:, :136]  # 280-byte rows
    with pytest.raises(ValueError, match="row stride"):
        sig.check({"x": odd, "out": out, **packed}, dims)
    x = torch.zeros(130, 136, dtype=torch.float16)
    with pytest.raises(ValueError, match="qweight"):
        sig.check({"x": x, "out": out, **packed}, {**dims, "KT": 10})
    with pytest.raises(ValueError, match="CUDA device"):
        sig.check({"x": x, "out": out, **packed}, dims)  # everything else is right


@pytest.mark.parametrize(("n", "k", "group_m"), [(57344, 8192, 8), (6144, 4096, 1)])
def test_tiles_are_grouped_only_when_the_weights_overflow_l2(n, k, group_m):
    """235 MB of int4 weights leave L2 between waves (groups of 8 M tiles share them); 13 MB stay."""
    problem = GemmProblem(n=n, k=k, m=4096)
    configs = FAMILY.candidates(presets.W4A16_G128, problem, SM90)
    assert configs and {c.group_m for c in configs} == {group_m}


@pytest.mark.parametrize(
    "n, k, m, registers",
    [
        (57344, 8192, 256, True),  # 4 register-form waves (x1.4) against 7
        (8192, 28672, 512, True),  # 1 against 2
        (6144, 4096, 512, True),
        (8192, 28672, 256, True),  # one wave either way, but the register form splits K in 2
        (4096, 14336, 512, True),
        (4096, 14336, 1024, True),
        (4224, 4096, 512, False),  # 132 small tiles: one wave; 68 register tiles split or not lose
    ],
)
def test_register_form_where_its_waves_finish_first(n, k, m, registers):
    """The H200 points behind the cost model: the heuristic's first config takes the register-A
    form (producer warpgroup, 4 fragment buffers) where it measured faster, and the shared-memory
    form where its smaller tiles fill the SMs in one wave."""
    spec = presets.W4A16_G128
    cfg = FAMILY.candidates(spec, GemmProblem(n=n, k=k, m=m, act_dtype="fp16"), SM90)[0]
    assert cfg.weights_in_registers == registers
    if registers:
        assert cfg.rs_producer and cfg.rs_frag_buffers == 4
        # a producer and two consumer warpgroups, or one over the 128-column tile
        assert cfg.threads == {256: 384, 128: 256}[cfg.block_n]


# wgmma_config_sweep on the H200 (2026-11-30, benchmarks/notes/session11_mid_m.md, after the
# split reduction's batched loads): the fastest (rs_block_m, split_k) of {64, 128} x {1, 2, 4, 6,
# 8} at M >= 96, or of the narrow tile's splits {1, 2, 4, 8, 16} below, and its time in us; one
# CTA per SM unless a last field says 2 (session 15, notes/session15.md: rs_ctas_per_sm 1 / 2 x
# splits 1, 2, 4, 8 at M = 16 and 32)
MID_M_SWEEP = [
    # 42.2; wna16 65.1 (earlier run); session 37 (H100): the 128-column tile, split 8, 39.4 against
    # 40.0 us
    ("W4A16_G128", 4096, 14336, 128, 128, 8, 2),
    # 111.8; wna16 211.0 (earlier run); session 35 (H100): the 128-column tile at two CTAs per SM
    # 99.0 against 102.3 us
    ("W4A16_G128", 8192, 28672, 128, 128, 4, 2),
    ("W4A16_G128", 4096, 14336, 256, 128, 4, 2),  # 62.7; session 35: 128 columns 55.6 vs 57.0
    ("W4A16_G128", 8192, 28672, 256, 128, 2),  # 206.6; shared-memory form 302.4 (earlier run)
    ("W4A16_G128", 6144, 4096, 256, 128, 2, 2),  # 40.4; session 35: 128 columns 33.9 vs 35.6
    ("W8A16", 8192, 28672, 128, 128, 4),  # 108.2; wna16 221.7 (earlier run)
    ("W8A16", 4096, 14336, 256, 128, 4),  # 62.0; wna16 118.1 (earlier run)
    # 42.4; wna16 64.1 (earlier run); since session 37 the 128-column tile, split 8: unmeasured at
    # M=96, whose one 128-row tile is M=128's (0.98x there in that tile)
    ("W4A16_G128", 4096, 14336, 96, 128, 8, 2),
    ("W4A16_G128", 4096, 14336, 512, 128, 2),  # 108.7
    ("W4A16_G128", 57344, 8192, 128, 128, 1),  # 231.4
    ("W4A16_G128", 8192, 28672, 32, 32, 8, 2),  # 56.4; one CTA per SM, split 4: 72.7
    ("W4A16_G128", 57344, 8192, 32, 32, 1, 2),  # 111.6; one CTA per SM: 153.9
    ("W4A16_G128", 4096, 14336, 32, 32, 8),  # 24.0; two CTAs per SM, split 8: 24.6
    ("W4A16_G128", 4096, 14336, 16, 16, 8),  # 19.3
    ("W8A16", 8192, 28672, 16, 16, 8, 2),  # 63.5; one CTA per SM, split 4: 66.4
    ("W8A16", 57344, 8192, 16, 16, 1, 2),  # 113.8; one CTA per SM: 134.0
]


@pytest.mark.parametrize(
    "spec, n, k, m, block_m, split, ctas", [(*row, 1)[:7] for row in MID_M_SWEEP]
)
def test_cost_model_picks_the_fastest_measured_tile_and_split(spec, n, k, m, block_m, split, ctas):
    """The register form with the sweep's fastest token tile, K split and CTAs per SM (M >= 17:
    routed here rather than to wna16's split-K mma.sync kernels)."""
    problem = GemmProblem(n=n, k=k, m=m, act_dtype="fp16")
    cfg = FAMILY.candidates(presets.preset(spec), problem, SM90)[0]
    if m >= 17:
        assert CudaDevice.for_arch("sm_90a").candidates(presets.preset(spec), problem)[0] == cfg
    assert cfg.weights_in_registers and (cfg.rs_block_m, cfg.split_k) == (block_m, split)
    assert cfg.rs_ctas_per_sm == ctas
    # two CTAs per SM: the narrow tiles of 256 columns, or from 64 rows the 128-column tile
    assert cfg.block_n == (128 if ctas == 2 and block_m >= 64 else 256)


@pytest.mark.parametrize(
    "m, taken4, taken8, block_m",
    [(1, False, False, 16), (8, False, False, 16), (9, False, True, 16), (16, False, True, 16),
     (17, True, True, 32), (33, True, True, 48), (48, True, True, 48), (64, True, True, 64),
     (65, True, True, 128)],
)  # fmt: skip
def test_small_m_takes_the_narrowest_register_tile_in_its_range(m, taken4, taken8, block_m):
    """From M = 9 for 8-bit codes, 17 for narrower ones, M goes to the register form: below 64
    rows the narrowest tile that holds M (on this layer from M = 33 the 128-column tile's plan,
    N128_MIN_M, on 48-row tiles to M = 48, TILE48_MAX_M); M below is wna16_decode's or wna16's.
    The narrow tiles' ring is as deep as shared memory allows."""
    problem = GemmProblem(n=57344, k=8192, m=m, act_dtype="fp16")
    assert FAMILY.prefers(presets.W4A16_G128, problem, SM90) == taken4
    assert FAMILY.prefers(presets.MXFP4, problem, SM90) == taken4
    assert FAMILY.prefers(presets.W8A16, problem, SM90) == taken8
    assert FAMILY.prefers(presets.E4M3_G128, problem, SM90) == taken8
    configs = FAMILY.candidates(presets.W4A16_G128, problem, SM90)
    cfg = configs[0]
    assert cfg.weights_in_registers and cfg.block_m == block_m
    # at M = 33-64 this layer takes the 128-column tile's stream-K form (STREAM_SWEEP,
    # N128_MIN_AB), above it the 256-column one (STREAM_WIDE_SWEEP)
    assert (cfg.block_n, cfg.rs_stream_k) == ((128, True) if 33 <= m <= 64 else (256, m > 64))
    if block_m < 128:
        # one CTA per SM: the deepest ring; two (these 224-tile grids): the deepest both fit
        assert cfg.stages == (8 if cfg.rs_ctas_per_sm == 1 else 4)
        assert all(c.fits_smem(SM90) for c in configs)


@pytest.mark.parametrize(
    "n, k, split",
    [
        # 224 tiles: 2 waves of whole-K CTAs; the H200 measured 172.8 us, against 184.9 / 177.6 /
        # 204.2 split 2 / 4 / 8 (session 10)
        (57344, 8192, 1),
        (8192, 28672, 8),  # 32 tiles x 8 = 256 CTAs, one wave of two per SM
        (4096, 14336, 8),  # 16 tiles x 8
        (6144, 4096, 5),  # 24 tiles x 5 = 120; 6 would leave 10 steps per split, 2 waves
        (1024, 512, 1),  # 8 steps: no split leaves 8 per split
    ],
)
def test_split_k_fills_the_sms_under_the_cost_model(n, k, split):
    cfg = FAMILY.candidates(presets.W4A16_G128, GemmProblem(n=n, k=k, m=16), SM90)[0]
    assert cfg.split_k == split
    steps = -(-k // 64)
    assert split == 1 or steps // split >= 8


def test_two_ctas_per_sm_only_for_narrow_register_tiles_with_a_producer():
    narrow = {"arch": "sm_90a", "stages": 4, "weights_in_registers": True, "rs_block_m": 32}
    two = WgmmaWna16Config(**narrow, rs_ctas_per_sm=2)
    assert (
        "WgmmaWna16RsTile<4, 8, true, 4, 32, 2>"
        in FAMILY.render(presets.W4A16_G128, two, SM90).code
    )
    # one CTA per SM renders the verified source (the template's default)
    one = FAMILY.render(presets.W4A16_G128, WgmmaWna16Config(**narrow), SM90).code
    assert "WgmmaWna16RsTile<4, 8, true, 4, 32>" in one
    for bad in (
        {"rs_block_m": 64},
        {"rs_producer": False},
        {"weights_in_registers": False, "rs_block_m": 128},
    ):
        with pytest.raises(ValueError, match="rs_ctas_per_sm=2"):
            WgmmaWna16Config(**{**narrow, "rs_ctas_per_sm": 2, **bad})
    # wider token tiles take two CTAs per SM over 128 columns (one consumer warpgroup)
    wider = WgmmaWna16Config(**{**narrow, "rs_block_m": 64, "rs_block_n": 128}, rs_ctas_per_sm=2)
    assert wider.ctas_per_sm == 2


def test_128_column_tile_has_one_consumer_warpgroup_and_mirrors_its_shared_memory():
    """rs_block_n = 128 (WgmmaWna16RsTile's CONSUMERS = 1): 256 threads, a ring stage of half the
    codes and group rows, two CTAs per SM at any token tile whose ring fits, and the 256-column
    tile's sources unchanged (the template's defaults)."""
    assert "BN = 128 * CONSUMERS" in RS_HEADER
    assert "CONSUMER_REGS = CTAS == 1 || CONSUMERS == 1 ? 232 : 104" in RS_HEADER
    base = {"arch": "sm_90a", "stages": 4, "weights_in_registers": True, "rs_block_n": 128}
    for block_m in (32, 64, 96, 128):
        cfg = WgmmaWna16Config(**base, rs_block_m=block_m, rs_ctas_per_sm=2)
        assert (cfg.block_n, cfg.consumers, cfg.threads) == (128, 1, 256)
        # x tile, 8-bit codes of 2 x 4 layout tiles, 4 group rows of 128 scales and zero points
        stage = block_m * 64 * 2 + 8 * 32 * 8 * 4 + 2 * 4 * 128 * 2
        assert cfg.smem_bytes == 1024 + max(4 * stage, block_m * 128 * 4) + 16 * 4
        assert cfg.fits_smem(SM90)
        code = FAMILY.render(presets.W4A16_G128, cfg, SM90).code
        assert f"WgmmaWna16RsTile<4, 8, true, 4, {block_m}, 2, 1>" in code
    wide = WgmmaWna16Config(**base, rs_block_m=176, rs_ctas_per_sm=2)
    assert not wide.fits_smem(SM90)  # its 4-deep ring does not fit twice; 3 stages do
    assert wide.with_fields(stages=3).fits_smem(SM90)
    one = WgmmaWna16Config(**base, rs_block_m=128)
    assert (
        "WgmmaWna16RsTile<4, 8, true, 4, 128, 1, 1>"
        in FAMILY.render(presets.W4A16_G128, one, SM90).code
    )
    two_consumers = WgmmaWna16Config(**{**base, "rs_block_n": 256}, rs_block_m=128)
    assert (two_consumers.consumers, two_consumers.threads) == (2, 384)
    assert (
        "WgmmaWna16RsTile<4, 8, true, 4, 128>"
        in FAMILY.render(presets.W4A16_G128, two_consumers, SM90).code
    )
    with pytest.raises(ValueError, match=r"rs_block_n=128 .* needs the producer"):
        WgmmaWna16Config(**base, rs_producer=False)
    with pytest.raises(ValueError, match="only the register-A form"):
        WgmmaWna16Config(arch="sm_90a", rs_block_n=128)
    # stream-K: the ring beside a staged part of 64 rows; at 128 rows two CTAs fit 3 stages
    stream = WgmmaWna16Config(**{**base, "stages": 3}, rs_stream_k=True, rs_ctas_per_sm=2)
    assert stream.smem_bytes == 1024 + 3 * (128 * 64 * 2 + 10240) + 64 * 128 * 4 + 16 * 3
    assert stream.fits_smem(SM90) and not stream.with_fields(stages=4).fits_smem(SM90)
    with pytest.raises(ValueError, match="rs_stream_k needs"):  # two CTAs of 256 columns
        WgmmaWna16Config(
            **{**base, "rs_block_n": 256}, rs_block_m=32, rs_stream_k=True, rs_ctas_per_sm=2
        )


def test_consumer_places_cover_the_tile_columns_once():
    """Kernel::Place as the header writes it, mirrored: over the consumer warps of one or two
    warpgroups, the (layout column, pair half) places are all distinct and within the tile, and
    stage()'s column of each (warp, lane, wgmma i, row half h) covers [0, BN) exactly once, so
    every output column is written by one accumulator."""
    assert "return Place{(threadIdx.x / 32) % 4, threadIdx.x / 128};" in RS_HEADER
    assert "return Place{threadIdx.x / 64, (threadIdx.x / 32) % 2};" in RS_HEADER
    assert "const int nl = 64 * p.col + 8 * (4 * p.half + 2 * i + h) + g;" in RS_HEADER

    def place(tid: int, consumers: int) -> tuple[int, int]:
        if consumers == 2:
            return (tid // 32) % 4, tid // 128
        return tid // 64, (tid // 32) % 2

    for consumers in (1, 2):
        block_n = 128 * consumers
        places = {place(32 * w, consumers) for w in range(4 * consumers)}
        assert len(places) == 4 * consumers
        assert all(0 <= c < block_n // 64 and h in (0, 1) for c, h in places)
        columns = [
            64 * col + 8 * (4 * half + 2 * i + h) + lane // 4
            for tid in range(0, 128 * consumers, 4)  # one thread per lane quad: its g = lane / 4
            for col, half in [place(tid, consumers)]
            for lane in [tid % 32]
            for i in (0, 1)
            for h in (0, 1)
        ]
        assert sorted(columns) == list(range(block_n))


# Session 35's same-run H100 sweep (benchmarks/notes/session35.md, session35/h100/*.json): the
# routed plan's time, the 128-column tile's (rows, split) the model takes and its time, in us;
# None: the model keeps the routed plan (the tile measured 1.01x at 57344x8192 M=128). The three
# split-8 rows: session 37's same-run H100 sweep over splits 1-8 (notes/session37.md). The
# 57344x8192 M=64 rows moved to STREAM_SWEEP (the stream-K form takes them).
N128_SWEEP = [
    ("W4A16_G128", 8192, 28672, 64, 79.6, (64, 4), 72.7),
    ("W4A16_G128", 6144, 4096, 64, 17.7, (64, 4), 17.4),
    ("W4A16_G128", 6144, 4096, 128, 27.4, (128, 4), 25.7),
    ("W4A16_G128", 6144, 4096, 256, 35.6, (128, 2), 33.9),
    ("W4A16_G128", 4096, 14336, 256, 57.0, (128, 4), 55.6),
    ("W4A16_G128", 8192, 28672, 128, 102.3, (128, 4), 99.0),
    ("W4A16_G128", 57344, 8192, 256, 413.1, (128, 2), 401.3),
    ("MXFP4", 6144, 4096, 128, 29.7, (128, 4), 26.2),
    ("W4A16_G128", 57344, 8192, 128, 197.3, None, 199.3),
    ("W4A16_G128", 4096, 14336, 64, 29.8, (64, 8), 26.9),
    ("W4A16_G128", 4096, 14336, 128, 40.0, (128, 8), 39.4),
    ("MXFP4", 4096, 14336, 128, 43.4, (128, 8), 40.3),
    ("W4A16_G128", 8192, 28672, 256, 180.8, None, 180.5),
]


# Session 38's same-run H100 sweep (notes/session38.md, session38/h100/sk64.json): the plan routed
# before stream-K was offered and the 128-column stream-K form on 64-row tiles (4 stages), in us.
STREAM_SWEEP = [
    ("W4A16_G128", 57344, 8192, 64, 164.5, 141.7),
    ("MXFP4", 57344, 8192, 64, 187.1, 159.4),
    ("W4A16_G128", 8192, 28672, 64, 75.9, 76.1),
    ("W4A16_G128", 6144, 4096, 64, 17.6, 17.5),
    ("W4A16_G128", 4096, 14336, 64, 26.7, 28.8),
    ("W4A16_G128", 6144, 4096, 128, 25.6, 23.2),
    ("W4A16_G128", 57344, 8192, 128, 204.0, 271.8),
    ("W4A16_G128", 8192, 28672, 256, 184.3, 265.2),
]


# Session 39's same-run H100 sweep (notes/session39.md, session39/h100/run115_sk256.json): the
# routed plan and the 256-column stream-K form on 128-row tiles (one CTA per SM, 4 stages), in us.
STREAM_WIDE_SWEEP = [
    ("W4A16_G128", 57344, 8192, 128, 204.6, 196.0),
    ("W4A16_G128", 57344, 8192, 256, 399.3, 375.2),
    ("MXFP4", 57344, 8192, 128, 226.4, 205.7),
    ("MXFP4", 57344, 8192, 256, 421.1, 386.9),
    ("W4A16_G128", 8192, 28672, 128, 101.8, 111.2),
    ("W4A16_G128", 8192, 28672, 256, 186.0, 193.7),
    ("MXFP4", 8192, 28672, 128, 107.0, 116.1),
    ("W4A16_G128", 6144, 4096, 128, 25.9, 30.6),
    ("W4A16_G128", 6144, 4096, 256, 34.9, 37.7),
    ("W4A16_G128", 4096, 14336, 128, 39.6, 47.6),
    ("W4A16_G128", 4096, 14336, 256, 54.5, 64.7),
    ("W4A16_G128", 57344, 8192, 512, 713.4, 738.3),
]
STREAM_WIDE_TAKEN = {
    (s, n, k, m) for s, n, k, m, routed, wide in STREAM_WIDE_SWEEP if wide < routed
}


@pytest.mark.parametrize("spec, n, k, m, routed_us, stream_us", STREAM_WIDE_SWEEP)
def test_stream_k_256_column_tile_where_the_model_clears_its_margin(
    spec, n, k, m, routed_us, stream_us
):
    """The 256-column stream-K form on 128-row tiles is routed exactly where it measured faster
    than the plan routed before (57344x8192 at M = 128 and 256: 0.91-0.96x), never where it
    measured slower (the smaller layers, M = 512), and not for 8-bit codes (not measured)."""
    problem = GemmProblem(n=n, k=k, m=m, act_dtype="bf16" if spec == "MXFP4" else "fp16")
    cfg = FAMILY.candidates(presets.preset(spec), problem, SM90)[0]
    if stream_us < routed_us:
        assert cfg.rs_stream_k
        assert (cfg.block_n, cfg.rs_block_m, cfg.rs_ctas_per_sm, cfg.split_k) == (256, 128, 1, 1)
        assert cfg.stages == 4 and cfg.fits_smem(SM90)
    else:
        assert not cfg.rs_stream_k
    wide = FAMILY.candidates(presets.W8A16, GemmProblem(n=n, k=k, m=m, act_dtype="fp16"), SM90)
    assert not wide[0].rs_stream_k


@pytest.mark.parametrize("spec, n, k, m, routed_us, stream_us", STREAM_SWEEP)
def test_stream_k_128_column_tile_where_the_model_clears_its_margin(
    spec, n, k, m, routed_us, stream_us
):
    """The stream-K form of the 128-column tile at M <= STREAM_MAX_M where its modeled cost is
    under N128_MARGIN of the other plans: taken at the two points where it measured 0.85-0.86x
    the routed plan, nowhere it measured slower, and never for two or more token tiles (6144x4096
    M=128 measured faster, but the larger layers' 1.33-1.44x keep M > 64 out)."""
    problem = GemmProblem(n=n, k=k, m=m, act_dtype="bf16" if spec == "MXFP4" else "fp16")
    cfg = FAMILY.candidates(presets.preset(spec), problem, SM90)[0]
    if stream_us < 0.9 * routed_us and m <= heuristics.STREAM_MAX_M:
        assert cfg.rs_stream_k
        assert (cfg.block_n, cfg.rs_block_m, cfg.rs_ctas_per_sm, cfg.split_k) == (128, 64, 2, 1)
        assert cfg.stages == 4 and cfg.fits_smem(SM90)
    else:  # the 256-column stream-K form takes some of these points since (STREAM_WIDE_SWEEP)
        assert not cfg.rs_stream_k or (spec, n, k, m) in STREAM_WIDE_TAKEN
        assert cfg.block_n == 256 or not cfg.rs_stream_k
    wide = FAMILY.candidates(presets.W8A16, GemmProblem(n=n, k=k, m=m, act_dtype="fp16"), SM90)
    assert not wide[0].rs_stream_k  # 8-bit codes: not measured


# Session 47's same-run H100 route A/B with the peer (notes/session47.md, session47/h100/
# w3_ab*.json): W3A16 g128 routed as before (3-bit codes kept off the 128-column and stream-K
# plans) and with them offered (heuristics.N128_MIN_BITS = 3), in us. The same plan at 8192x28672
# M=256.
W3_NARROW_AB = [
    (57344, 8192, 64, 182.5, 149.3),
    (57344, 8192, 128, 217.8, 208.2),
    (57344, 8192, 256, 427.3, 396.3),
    (8192, 28672, 64, 85.6, 80.3),
    (8192, 28672, 128, 104.5, 103.0),
    (8192, 28672, 256, 193.1, 193.1),
    (6144, 4096, 64, 17.7, 15.6),
    (6144, 4096, 128, 21.9, 19.9),
    (6144, 4096, 256, 34.8, 32.9),
    (4096, 14336, 64, 28.9, 26.9),
    (4096, 14336, 128, 35.9, 33.4),
    (4096, 14336, 256, 58.0, 55.0),
]


@pytest.mark.parametrize("n, k, m, before_us, offered_us", W3_NARROW_AB)
def test_3_bit_codes_take_the_128_column_plans_where_they_measured_faster(
    n, k, m, before_us, offered_us
):
    """3-bit codes are priced on the 128-column and stream-K plans like 4-bit ones: every point
    whose route moved measured faster, and the route is the one the A/B timed."""
    problem = GemmProblem(n=n, k=k, m=m, act_dtype="fp16")
    cfg = FAMILY.candidates(presets.W3A16_G128, problem, SM90)[0]
    offered = heuristics.best_plan(problem, SM90, narrow_n=True)
    before = heuristics.best_plan(problem, SM90, narrow_n=False)
    assert heuristics.narrow_n(3) and not heuristics.narrow_n(8)
    assert (cfg.rs_block_m, cfg.block_n, cfg.rs_ctas_per_sm, cfg.split_k) == (
        offered.block_m,
        offered.block_n,
        offered.ctas_per_sm,
        offered.split_k,
    )
    assert cfg.rs_stream_k == offered.stream_k
    if offered != before:
        assert offered_us < before_us
    else:
        assert offered_us == before_us


# M = 33-48 on 48-row tiles under the 64-row plan (heuristics.TILE48_MAX_M): same-run H100 sweep
# (session 48, benchmarks/notes/session48/h100/dense48.json), W4A16 g128, (N, K, M, 64-row tiles
# us, 48-row tiles us).
TILE48_SWEEP = [
    (57344, 8192, 40, 165.6, 157.9),
    (57344, 8192, 48, 165.5, 158.2),
    (8192, 28672, 40, 78.3, 74.6),
    (8192, 28672, 48, 78.3, 75.0),
    (4096, 14336, 40, 26.5, 25.4),
    (4096, 14336, 48, 26.2, 25.4),
    (6144, 4096, 40, 16.1, 14.7),
    (6144, 4096, 48, 15.9, 14.8),
]


@pytest.mark.parametrize("n, k, m, tile64_us, tile48_us", TILE48_SWEEP)
def test_48_row_tiles_run_the_64_row_plan_where_they_measured_faster(
    n, k, m, tile64_us, tile48_us, monkeypatch
):
    """The swept points take 48-row tiles with every other field of the 64-row route (split,
    clusters, scatter, ring, columns), which they measured faster than. (Swept before 4-bit codes
    took the 128-column plans from M = 33: N128_MIN_M set back.)"""
    monkeypatch.setattr(heuristics, "N128_MIN_M", 64)
    problem = GemmProblem(n=n, k=k, m=m, act_dtype="fp16")
    cfg = FAMILY.candidates(presets.W4A16_G128, problem, SM90)[0]
    monkeypatch.setattr(heuristics, "TILE48_MAX_M", 0)
    before = FAMILY.candidates(presets.W4A16_G128, problem, SM90)[0]
    assert (cfg.rs_block_m, before.rs_block_m) == (48, 64)
    assert cfg == before.with_fields(rs_block_m=48)
    assert tile48_us < tile64_us


# 8-bit codes (no 128-column plans) keep the 48-row tiles: same-run H100 route A/B (session 48,
# notes/session48/h100/ab_tile48.json), W8A16, (N, K, M, 64-row tiles us, 48-row tiles us).
TILE48_BYTE_CODES_AB = [
    (8192, 28672, 33, 101.4, 101.4),
    (6144, 4096, 33, 15.5, 15.1),
    (8192, 28672, 48, 102.0, 101.0),
    (6144, 4096, 48, 15.4, 14.4),
]


@pytest.mark.parametrize("n, k, m, tile64_us, tile48_us", TILE48_BYTE_CODES_AB)
def test_8_bit_codes_take_48_row_tiles_at_33_to_48_rows(n, k, m, tile64_us, tile48_us):
    cfg = FAMILY.candidates(presets.W8A16, GemmProblem(n=n, k=k, m=m, act_dtype="fp16"), SM90)[0]
    assert (cfg.rs_block_m, cfg.block_n) == (48, 256) and tile48_us <= tile64_us


# 4-bit and 3-bit codes offered the 128-column / stream-K plans from M = 33 (N128_MIN_M; 64
# before): same-run H100 route A/B with the peer (session 48, notes/session48/h100/
# ab_n128_min_m.json), (spec, N, K, M, before us, now us).
N128_MIN_AB = [
    ("W4A16_G128", 57344, 8192, 40, 158.6, 137.7),
    ("W4A16_G128", 57344, 8192, 56, 167.2, 137.8),
    ("W4A16_G128", 8192, 28672, 40, 76.5, 73.4),
    ("W4A16_G128", 8192, 28672, 56, 80.7, 74.4),
    ("W4A16_G128", 4096, 14336, 40, 25.4, 24.6),
    ("W4A16_G128", 4096, 14336, 56, 26.9, 25.2),
    ("W4A16_G128", 6144, 4096, 40, 14.6, 14.8),
    ("W4A16_G128", 6144, 4096, 56, 16.2, 14.8),
    ("MXFP4", 57344, 8192, 40, 179.2, 156.1),
    ("W3A16_G128", 6144, 4096, 40, 16.0, 15.7),
]


def test_128_column_plans_from_33_rows_measured_faster_overall(monkeypatch):
    """Every A/B point moved to a 128-column plan; 9 of 10 measured faster, the tenth within 2%
    (6144x4096 M=40), and the total time fell by more than 10%."""
    moved = []
    for spec, n, k, m, before_us, now_us in N128_MIN_AB:
        problem = GemmProblem(n=n, k=k, m=m, act_dtype="fp16")
        cfg = FAMILY.candidates(presets.preset(spec), problem, SM90)[0]
        assert cfg.block_n == 128 and now_us < 1.02 * before_us
        moved.append(now_us < before_us)
    with monkeypatch.context() as patch:
        patch.setattr(heuristics, "N128_MIN_M", 64)
        for spec, n, k, m, *_ in N128_MIN_AB:
            problem = GemmProblem(n=n, k=k, m=m, act_dtype="fp16")
            assert FAMILY.candidates(presets.preset(spec), problem, SM90)[0].block_n == 256
    assert sum(moved) == 9
    assert sum(r[5] for r in N128_MIN_AB) < 0.9 * sum(r[4] for r in N128_MIN_AB)


@pytest.mark.parametrize("spec, n, k, m, routed_us, plan, tile_us", N128_SWEEP)
def test_128_column_tile_where_the_model_clears_its_margin(spec, n, k, m, routed_us, plan, tile_us):
    """The 128-column tile (two CTAs per SM, 4-bit codes, M = 64-256) where the cost model puts it
    under N128_MARGIN of the other plans: at every sweep point it takes, the tile measured faster
    than the plan routed before; elsewhere the routed plan stays. 8-bit codes (not measured) keep
    256 columns. Points the 256-column stream-K form took since (STREAM_WIDE_SWEEP) are checked
    there."""
    problem = GemmProblem(n=n, k=k, m=m, act_dtype="bf16" if spec == "MXFP4" else "fp16")
    cfg = FAMILY.candidates(presets.preset(spec), problem, SM90)[0]
    if (spec, n, k, m) in STREAM_WIDE_TAKEN:
        assert cfg.rs_stream_k and cfg.block_n == 256
        return
    if plan is None:
        assert cfg.block_n == 256 or not cfg.weights_in_registers
        return
    assert tile_us < routed_us
    assert (cfg.block_n, cfg.rs_ctas_per_sm, cfg.stages) == (128, 2, 4)
    assert (cfg.rs_block_m, cfg.split_k) == plan
    assert cfg.fits_smem(SM90)
    wide = FAMILY.candidates(presets.W8A16, GemmProblem(n=n, k=k, m=m, act_dtype="fp16"), SM90)
    assert wide[0].block_n == 256 or not wide[0].weights_in_registers


def test_split_k_and_narrow_tiles_belong_to_the_register_form():
    with pytest.raises(ValueError, match="register-A form"):
        WgmmaWna16Config(arch="sm_90a", stages=4, split_k=2)
    with pytest.raises(ValueError, match="register-A form"):
        WgmmaWna16Config(arch="sm_90a", stages=4, rs_block_m=16)
    narrow = WgmmaWna16Config(arch="sm_90a", stages=8, weights_in_registers=True, rs_block_m=16)
    # the ring's stages hold a 16 x 64 x tile plus the widest codes and group rows
    assert narrow.smem_bytes == 1024 + 8 * (16 * 64 * 2 + 16 * 32 * 8 * 4 + 4096) + 16 * 8
    assert (
        "WgmmaWna16RsTile<8, 8, true, 4, 16>"
        in FAMILY.render(presets.W4A16_G128, narrow, SM90).code
    )


def test_wide_token_tiles_render_and_reserve_the_output_tile():
    """160 / 176 token rows (humming/mma/wgmma_wide.cuh) in the register form: their shared memory
    is the epilogue's fp32 tile (block_m x 256), larger than a 4-deep ring; 6 stages do not fit sm_90a's 227 KB; no 192 (ptxas serializes its wgmmas)."""
    wide = {"arch": "sm_90a", "stages": 4, "weights_in_registers": True}
    for block_m in RS_WIDE_BLOCK_MS:
        cfg = WgmmaWna16Config(**wide, rs_block_m=block_m)
        assert cfg.block_m == block_m
        assert cfg.smem_bytes == 1024 + block_m * 256 * 4 + 16 * 4
        assert cfg.smem_bytes <= SM90.smem_per_block
        assert WgmmaWna16Config(**{**wide, "stages": 6}, rs_block_m=block_m).smem_bytes > (
            SM90.smem_per_block
        )
        code = FAMILY.render(presets.W4A16_G128, cfg, SM90).code
        assert f"WgmmaWna16RsTile<4, 8, true, 4, {block_m}>" in code
        with pytest.raises(ValueError, match="rs_ctas_per_sm=2"):
            WgmmaWna16Config(**wide, rs_block_m=block_m, rs_ctas_per_sm=2)
    with pytest.raises(ValueError, match="rs_block_m"):
        WgmmaWna16Config(**wide, rs_block_m=192)


# wgmma_config_sweep --set rs_block_m=128,160,176 on the H200 (2026-12-05,
# benchmarks/notes/session30_wna16_wide_sweep.json): the fastest tile and its time in us against
# the 128-row tile's
WIDE_SWEEP = [
    (57344, 8192, 1024, 176),  # 1302.0 vs 1434.9
    (8192, 28672, 4096, 176),  # 2523.1 vs 2899.2
    (4096, 14336, 4096, 176),  # 609.3 vs 699.7
    (6144, 4096, 4096, 160),  # 294.7 vs 318.9 (176: 311.9)
]


@pytest.mark.parametrize("n, k, m, block_m", WIDE_SWEEP)
def test_cost_model_takes_the_measured_fastest_wide_tile(n, k, m, block_m):
    cfg = FAMILY.candidates(presets.W4A16_G128, GemmProblem(n, k, m=m, act_dtype="fp16"), SM90)[0]
    assert cfg.weights_in_registers and cfg.block_m == block_m and cfg.split_k == 1


# Session 41's route A/B (H100, same run, benchmarks/notes/session41/h100/run127_*.json): points
# the 96-row tile from M = 192 (MID_MIN_M) and the unsplit 160 / 176-row tiles from M = 512
# (WIDE_MIN_M) moved, (spec, N, K, M, the routed (token rows, split, cluster), its time in us,
# the previous route's time).
WIDER_TILES_AB = [
    ("W4A16_G128", 6144, 4096, 192, (96, 2, True), 28.3, 30.7),
    ("W4A16_G128", 6144, 4096, 384, (96, 1, False), 46.2, 49.2),
    ("W4A16_G128", 4096, 14336, 192, (96, 4, False), 49.3, 53.7),
    ("W4A16_G128", 4096, 14336, 384, (96, 2, True), 83.1, 98.0),
    ("W4A16_G128", 8192, 28672, 192, (96, 2, True), 158.7, 177.1),
    ("W4A16_G128", 57344, 8192, 192, (96, 2, True), 352.3, 358.3),
    ("W4A16_G128", 6144, 4096, 768, (160, 1, False), 57.4, 86.9),
    ("W4A16_G128", 8192, 28672, 640, (160, 1, False), 382.6, 490.6),
    ("W4A16_G128", 57344, 8192, 768, (160, 1, False), 1010.3, 1122.3),
    ("MXFP4", 6144, 4096, 768, (160, 1, False), 62.7, 94.0),
    ("W8A16", 6144, 4096, 768, (160, 1, False), 55.7, 83.4),
]


@pytest.mark.parametrize("spec, n, k, m, plan, routed_us, before_us", WIDER_TILES_AB)
def test_wider_token_tiles_routed_where_they_measured_faster(
    spec, n, k, m, plan, routed_us, before_us
):
    problem = GemmProblem(n, k, m=m, act_dtype="fp16")
    cfg = FAMILY.candidates(presets.preset(spec), problem, SM90)[0]
    assert (cfg.block_m, cfg.split_k, cfg.rs_cluster_split) == plan
    assert routed_us < before_us


# The wide tiles with a split through the workspace measured slower below M = 1024 (run127:
# 4096x14336 M=896 160 rows split 4 195.9 us vs 170.2 for 128 rows unsplit, 8192x28672 M=512 176
# rows split 4 364.8 vs 347.9, M=768 split 4 546.0 vs 538.4): there they run unsplit (or, through
# with_clusters, split in clusters), and below WIDE_MIN_M not at all.
@pytest.mark.parametrize("m", [128, 256, 511, 512, 640, 768, 896, 1023])
def test_wide_tiles_split_through_the_workspace_only_from_1024_rows(m):
    for spec in (presets.W4A16_G128, presets.W8A16):
        for n, k in ((57344, 8192), (8192, 28672), (6144, 4096), (4096, 14336), (4224, 4096)):
            cfg = FAMILY.candidates(spec, GemmProblem(n, k, m=m, act_dtype="fp16"), SM90)[0]
            if m < heuristics.WIDE_MIN_M:
                assert cfg.block_m <= 128, (n, k, m)
            elif cfg.block_m in RS_WIDE_BLOCK_MS:
                assert cfg.split_k == 1 or cfg.rs_cluster_split, (n, k, m)


# wgmma_config_sweep --set rs_block_m=64,96,128 --set split_k=1,2,4 on an H100 (132 SMs, as the
# H200; session 33, benchmarks/notes/session33/sweep_split.json): (N, K, M, the model's tile and
# split), the measured times in us
MID_SWEEP = [
    (6144, 4096, 1024, 96, 1),  # 96.3; routed before: 128 x 2, 111.4 (128 x 1: 106.2)
    (6144, 4096, 512, 128, 1),  # 52.1, the fastest (96 x 1: 94.7)
    (4096, 14336, 1024, 128, 1),  # 177.8, the fastest (96 x 2: 260.0)
    (8192, 28672, 768, 128, 2),  # 556.2, the fastest (96 x 1: 614.7)
]


@pytest.mark.parametrize("n, k, m, block_m, split", MID_SWEEP)
def test_cost_model_takes_96_row_tiles_where_they_fill_whole_waves(n, k, m, block_m, split):
    cfg = FAMILY.candidates(presets.W4A16_G128, GemmProblem(n, k, m=m, act_dtype="fp16"), SM90)[0]
    assert cfg.weights_in_registers and (cfg.block_m, cfg.split_k) == (block_m, split)


@pytest.mark.parametrize("m", [65, 96, 128, 191])
def test_96_row_tiles_only_from_the_smallest_measured_m(m):
    """Below MID_MIN_M the 96-row tile's step cost was not measured."""
    for n, k in ((6144, 4096), (4096, 14336), (57344, 8192), (8192, 28672)):
        problem = GemmProblem(n, k, m=m, act_dtype="fp16")
        assert FAMILY.candidates(presets.W4A16_G128, problem, SM90)[0].block_m != 96


def test_stream_k_renders_its_own_kernel_and_mirrors_its_shared_memory():
    """rs_stream_k (wna16_wgmma_stream.cuh): another entry and name for the same tile; the ring
    plus a staged part of at most 64 rows (160 rows: parts of 40); only with the producer, one
    CTA per SM, no split_k and a tile whose epilogue fits registers (not 176 rows)."""
    header = (KERNELS / "wna16_wgmma_stream.cuh").read_text()
    assert "SMEM_BYTES = 1024 + RING + PART_BYTES + 16 * STAGES" in header
    stream = {"arch": "sm_90a", "stages": 4, "weights_in_registers": True, "rs_stream_k": True}
    stage = 128 * 64 * 2 + 16 * 32 * 8 * 4 + 4096
    cfg = WgmmaWna16Config(**stream)
    assert cfg.part_rows == 64
    assert cfg.smem_bytes == 1024 + 4 * stage + 64 * 256 * 4 + 16 * 4 <= SM90.smem_per_block
    assert WgmmaWna16Config(**stream, rs_block_m=160).part_rows == 40
    assert WgmmaWna16Config(**stream, rs_block_m=16).part_rows == 16
    source = FAMILY.render(presets.W4A16_G128, cfg, SM90)
    assert '#include "humming/kernel/wna16_wgmma_stream.cuh"' in source.code
    assert "HUMMING_WNA16_WGMMA_STREAM_ENTRY(" in source.code
    plain = FAMILY.render(presets.W4A16_G128, cfg.model_copy(update={"rs_stream_k": False}), SM90)
    assert "HUMMING_WNA16_WGMMA_RS_ENTRY(" in plain.code and plain.name != source.name
    for bad in (
        {"split_k": 2},
        {"rs_producer": False},
        {"rs_block_m": 16, "rs_ctas_per_sm": 2},
        {"rs_block_m": 176},
        {"weights_in_registers": False},
    ):
        with pytest.raises(ValueError, match="rs_stream_k needs"):
            WgmmaWna16Config(**{**stream, **bad})


def test_a_changed_config_is_validated_like_a_hand_made_one():
    # heuristics derive configs with with_fields: a change the kernel refuses must fail here, not
    # reach a render (pydantic's model_copy would have returned the invalid tile silently)
    shared = WgmmaWna16Config(arch="sm_90a")
    with pytest.raises(ValueError, match="only the register-A form"):
        shared.with_fields(split_k=2)
    register = shared.with_fields(weights_in_registers=True, split_k=2, rs_block_m=64)
    assert (register.split_k, register.rs_block_m, register.stages) == (2, 64, shared.stages)


def test_ring_stages_can_be_sized_for_the_specs_codes():
    """rs_code_bits sizes the register form's stages for narrower codes than 8 (a sweep's option;
    the heuristics keep 8): the 256-column stream-K tile of 128 rows then fits 5 stages with 4-bit
    codes, which the 8-bit reservation cannot; the render refuses wider codes than the stages
    hold and has the compiler check the kernel's own size against the launch's."""
    base = {"arch": "sm_90a", "weights_in_registers": True, "rs_stream_k": True, "pdl": True}
    base |= {"rs_block_m": 128, "stages": 5}
    reserved, sized = WgmmaWna16Config(**base), WgmmaWna16Config(**base, rs_code_bits=4)
    assert not reserved.fits_smem(SM90) and sized.fits_smem(SM90)
    # slack, 5 x (x tile, 4 x 4 layout tiles of 4-bit codes, scale and zero rows), the staged
    # 64-row part of the tile, the barriers
    stage = 128 * 64 * 2 + 4 * 4 * 32 * 4 * 4 + 2 * 4 * 256 * 2
    assert sized.smem_bytes == 1024 + 5 * stage + 64 * 256 * 4 + 16 * 5
    routed = GemmProblem(n=57344, k=8192, m=256, act_dtype="bf16")  # this form, 4-bit codes
    assert all(c.rs_code_bits == 8 for c in FAMILY.candidates(presets.MXFP4, routed, SM90))
    with pytest.raises(ValueError, match=r"8-bit codes.*rs_code_bits=4"):
        FAMILY.render(presets.W8A16, sized, SM90)
    code = FAMILY.render(presets.W4A16_G128, sized, SM90).code
    assert f"Kernel<Fmt, Tile, half, half, false>::SMEM_BYTES <= {sized.smem_bytes}" in code
    assert "static_assert" not in FAMILY.render(presets.W4A16_G128, reserved, SM90).code
    with pytest.raises(ValueError, match="register-A form"):
        WgmmaWna16Config(arch="sm_90a", stages=4, rs_code_bits=4)


# Cluster split-K against the workspace reduction, same-run H100 sweeps: (spec, N, K, M, the cost
# model's split-K plan's split (best_plan, workspace form), its time in us, the routed variant
# ("w<split>": workspace, "c<split>": cluster), its time). Session 41's split_k x rs_cluster_split
# sweep (benchmarks/notes/session41/h100/run124_splits*.json; fastest variant where it is not the
# routed one: 4096x14336 M=128 c6 35.7, M=384 c2 91.3, W8A16 4096x14336 M=64 / 128 c6 28.9 /
# 35.9, 8192x28672 M=64 c3 85.7), session 40's routed points against their workspace form
# (run124_routed.json), and the points routed to clusters by with_clusters outside that sweep
# (run125_ab_*.json: several waves of clusters of 2 and 3; split 4 in clusters for split 5).
# Points whose token tile run127 moved (M = 384, 768 of some layers) are in WIDER_TILES_AB. The
# split-K plan's column is best_plan's without byte_codes (the 4-bit pricing).
CLUSTER_SWEEP = [
    ("W4A16_G128", 4096, 14336, 32, 8, 22.6, "w8", 22.6),
    # splits summed all at once since session 44 (heuristics.with_scatter; SCATTER_AB below)
    ("W4A16_G128", 4096, 14336, 64, 8, 27.7, "s8", 25.3),
    ("W4A16_G128", 4096, 14336, 128, 8, 39.4, "s8", 32.9),
    ("W4A16_G128", 4096, 14336, 256, 4, 55.0, "s4", 52.3),
    ("W4A16_G128", 6144, 4096, 32, 5, 12.6, "w5", 12.6),
    ("W4A16_G128", 6144, 4096, 48, 5, 16.8, "c4", 15.4),
    ("W4A16_G128", 6144, 4096, 64, 4, 17.8, "c4", 14.5),
    ("W4A16_G128", 6144, 4096, 128, 4, 25.3, "c4", 18.9),
    ("W4A16_G128", 6144, 4096, 192, 2, 34.8, "c2", 30.5),
    ("W4A16_G128", 6144, 4096, 256, 2, 35.1, "c2", 30.1),
    ("W4A16_G128", 8192, 28672, 32, 8, 62.5, "s8", 57.0),
    ("W4A16_G128", 8192, 28672, 64, 4, 76.1, "s4", 72.3),
    ("W4A16_G128", 8192, 28672, 128, 4, 102.6, "s4", 99.0),
    ("W4A16_G128", 8192, 28672, 256, 2, 184.2, "c2", 182.6),
    ("MXFP4", 6144, 4096, 64, 4, 19.0, "c4", 15.8),
    ("MXFP4", 6144, 4096, 128, 4, 26.9, "c4", 20.1),
    ("MXFP4", 6144, 4096, 256, 2, 36.7, "c2", 32.8),
    ("W8A16", 6144, 4096, 64, 5, 20.8, "c4", 16.2),
    ("W8A16", 6144, 4096, 128, 5, 28.7, "c4", 20.0),
    ("W8A16", 6144, 4096, 256, 2, 36.5, "c2", 29.9),
    # 8-bit codes below 192 rows: routed to the sweep's fastest since session 42
    # (heuristics.BYTE_CODES_MAX_M)
    ("W8A16", 4096, 14336, 64, 8, 34.5, "c6", 28.9),
    ("W8A16", 4096, 14336, 128, 8, 46.0, "c6", 35.9),
    ("W8A16", 4096, 14336, 256, 4, 58.9, "s4", 51.7),
    ("E4M3_G128", 6144, 4096, 256, 2, 40.6, "c2", 34.6),
    ("W4A16_G128", 8192, 28672, 192, 2, 178.9, "c2", 175.7),
    ("W4A16_G128", 8192, 28672, 768, 2, 549.0, "c2", 541.8),
    ("W4A16_G128", 8192, 28672, 1024, 2, 648.0, "c2", 632.2),
    ("W4A16_G128", 4096, 14336, 512, 2, 99.5, "c2", 94.6),
    ("W4A16_G128", 4096, 14336, 2048, 2, 348.9, "c2", 328.8),
    ("W8A16", 57344, 8192, 256, 2, 401.0, "c2", 374.6),
    ("W8A16", 8192, 28672, 192, 2, 166.7, "c2", 165.5),
    ("MXFP4", 8192, 28672, 256, 2, 201.5, "c2", 200.3),
    ("W8A16", 6144, 4096, 48, 5, 20.9, "c4", 16.4),
    ("W8A16", 6144, 4096, 80, 5, 28.4, "c4", 20.0),
    ("W8A16", 6144, 4096, 96, 5, 28.4, "c4", 19.8),
    ("E4M3_G128", 6144, 4096, 64, 5, 20.8, "c4", 18.5),
    ("E4M3_G128", 6144, 4096, 128, 5, 29.9, "c4", 22.2),
    ("MXFP4", 6144, 4096, 48, 5, 17.7, "c4", 16.7),
]


def route_label(cfg) -> str:
    """ "w<split>" (workspace, the last split sums), "s<split>" (workspace, all splits sum at
    once), "c<split>" (one cluster per tile), "c<split>/<CTAs per cluster>"."""
    clusters = f"/{cfg.rs_cluster_ctas}" if cfg.rs_cluster_ctas else ""
    form = "c" if cfg.rs_cluster_split else "s" if cfg.rs_split_scatter else "w"
    return f"{form}{cfg.split_k}{clusters}"


@pytest.mark.parametrize("spec, n, k, m, split, workspace_us, routed, routed_us", CLUSTER_SWEEP)
def test_cluster_split_k_routed_where_it_measured_faster(
    spec, n, k, m, split, workspace_us, routed, routed_us, monkeypatch
):
    """At every swept point the routed variant is the table's (the cost model's split plan, or its
    tile's cluster form at the split the model prices cheapest: heuristics.with_clusters), and
    it measured no slower than the plan's workspace form; the tile and CTAs per SM stay. (Swept
    before M = 33-48 took 48-row tiles and 4-bit codes the 128-column plans from 33: the plan's 64
    here, TILE48_MAX_M and N128_MIN_M set back.)"""
    monkeypatch.setattr(heuristics, "TILE48_MAX_M", 0)
    monkeypatch.setattr(heuristics, "N128_MIN_M", 64)
    problem = GemmProblem(n=n, k=k, m=m, act_dtype="fp16")
    cfg = FAMILY.candidates(presets.preset(spec), problem, SM90)[0]
    assert route_label(cfg) == routed
    assert routed_us <= workspace_us
    plain = heuristics.best_plan(
        problem, SM90, narrow_n=heuristics.narrow_n(presets.preset(spec).weight.dtype.bits)
    )
    assert plain.split_k == split and not plain.cluster
    assert (plain.block_m, plain.block_n, plain.ctas_per_sm) == (
        cfg.block_m,
        cfg.block_n,
        cfg.rs_ctas_per_sm,
    )


# Split-K summed by all of a tile's splits at once (heuristics.with_scatter), H100 same run
# (session 44, benchmarks/notes/session44/h100/wide.json and scatter.json), us: (spec, N, K, M,
# the route without it (the workspace form's last split sums), its time, the route now, its
# time). The 128-column split 8 ran in clusters of 2 before (session 43): 26.7 / 35.8 / 36.3 us at
# M = 64 / 96 / 128, MXFP4 M=128 38.1, all slower than scatter. The 32-row tiles at one CTA per
# SM keep the workspace form (SCATTER_MIN_BLOCK_M): 6144x4096 M=32 measured 12.8 -> 14.1.
SCATTER_AB = [
    ("W4A16_G128", 4096, 14336, 64, "w8", 27.7, "s8", 25.3),
    ("W4A16_G128", 4096, 14336, 96, "w8", 39.1, "s8", 31.1),
    ("W4A16_G128", 4096, 14336, 128, "w8", 39.4, "s8", 32.9),
    ("W4A16_G128", 4096, 14336, 256, "w4", 55.0, "s4", 52.3),
    ("MXFP4", 4096, 14336, 128, "w8", 40.9, "s8", 34.9),
    ("W4A16_G128", 8192, 28672, 64, "w4", 76.1, "s4", 72.3),
    ("W4A16_G128", 8192, 28672, 128, "w4", 102.6, "s4", 99.0),
    ("W8A16", 4096, 14336, 256, "w4", 58.9, "s4", 51.7),
    ("W4A16_G128", 8192, 28672, 32, "w8", 62.5, "s8", 57.0),
    ("W8A16", 8192, 28672, 32, "w8", 104.5, "s8", 89.8),
    ("W4A16_G128", 6144, 4096, 32, "w5", 12.8, "w5", 12.8),
    ("W4A16_G128", 4096, 14336, 32, "w8", 23.2, "w8", 23.2),
]


@pytest.mark.parametrize("spec, n, k, m, before, before_us, now, now_us", SCATTER_AB)
def test_split_k_sums_all_at_once_where_it_measured_faster(
    spec, n, k, m, before, before_us, now, now_us, monkeypatch
):
    """The measured points route as the table says, and as it says before (the SCATTER_MIN_*
    constants past every tile); where the route moved it measured faster; tile and CTAs per SM
    stay."""
    problem = GemmProblem(n=n, k=k, m=m, act_dtype="fp16")
    cfg = FAMILY.candidates(presets.preset(spec), problem, SM90)[0]
    assert route_label(cfg) == now
    monkeypatch.setattr(heuristics, "SCATTER_MIN_BLOCK_M", 1 << 20)
    monkeypatch.setattr(heuristics, "SCATTER_MIN_BLOCK_M_2CTAS", 1 << 20)
    old = FAMILY.candidates(presets.preset(spec), problem, SM90)[0]
    assert route_label(old) == before
    assert (old.block_m, old.block_n, old.rs_ctas_per_sm) == (
        cfg.block_m,
        cfg.block_n,
        cfg.rs_ctas_per_sm,
    )
    assert now == before or now_us < before_us


def test_scatter_is_routed_only_where_the_grid_is_resident_at_once():
    """Every routed scatter config's grid fits the CTAs the GPU holds at once (its CTAs per SM
    on the caps' SMs), over the family's M buckets on the four layers and five specs: a larger grid
    would sum the workspace form's way, and the route would say otherwise."""
    for spec in ("W4A16_G128", "MXFP4", "W8A16", "W3A16_G128", "E4M3_G128"):
        for n, k in ((57344, 8192), (8192, 28672), (6144, 4096), (4096, 14336)):
            for m in (17, 32, 48, 64, 96, 128, 192, 256, 384, 512, 1024, 4096):
                problem = GemmProblem(n=n, k=k, m=m, act_dtype="fp16")
                cfg = FAMILY.candidates(presets.preset(spec), problem, SM90)[0]
                if cfg.family != "wna16_wgmma" or not cfg.rs_split_scatter:
                    continue
                tiles = -(-m // cfg.block_m) * -(-n // cfg.block_n)
                sms = SM90.sm_count or heuristics.DEFAULT_SMS
                assert tiles * cfg.split_k <= cfg.rs_ctas_per_sm * sms
                least = heuristics.SCATTER_MIN_BLOCK_M
                if cfg.rs_ctas_per_sm == 2:
                    least = heuristics.SCATTER_MIN_BLOCK_M_2CTAS
                # 48-row tiles run 64-row plans (TILE48_MAX_M)
                assert cfg.block_m >= least or (cfg.block_m, least) == (48, 64)


# 8-bit codes below MID_MIN_M rows (heuristics.BYTE_CODES_MAX_M): H100, same run (session 42's
# run130, benchmarks/notes/session42/h100/run131_split_row_ab.json: both routes timed), us,
# (spec, N, K, M, previous route, its time, route now, its time).
BYTE_CODES_AB = [
    ("W8A16", 6144, 4096, 17, (32, 5, False), 15.5, (32, 4, True), 14.1),
    ("W8A16", 6144, 4096, 32, (32, 5, False), 15.8, (32, 4, True), 14.1),
    ("W8A16", 4096, 14336, 48, (64, 8, False), 37.3, (64, 6, True), 32.6),
    ("W8A16", 4096, 14336, 64, (64, 8, False), 37.7, (64, 6, True), 32.6),
]


@pytest.mark.parametrize("spec, n, k, m, before, before_us, now, now_us", BYTE_CODES_AB)
def test_byte_codes_below_192_rows_price_the_read_back_twice_with_clusters_in_the_choice(
    spec, n, k, m, before, before_us, now, now_us, monkeypatch
):
    """The measured points route as the table says now, and did as it says before (the
    constant set back); the route now measured faster. 4-bit codes and rows from MID_MIN_M
    are priced as before. (Measured before M = 33-48 took 48-row tiles: the plan's 64 here,
    TILE48_MAX_M.)"""
    monkeypatch.setattr(heuristics, "TILE48_MAX_M", 0)
    problem = GemmProblem(n=n, k=k, m=m, act_dtype="fp16")

    def route(spec_name: str, p: GemmProblem) -> tuple:
        cfg = FAMILY.candidates(presets.preset(spec_name), p, SM90)[0]
        return (cfg.rs_block_m, cfg.split_k, cfg.rs_cluster_split)

    assert route(spec, problem) == now and now_us < before_us
    mid = GemmProblem(n=n, k=k, m=heuristics.MID_MIN_M, act_dtype="fp16")
    others = [("W4A16_G128", problem), ("MXFP4", problem), (spec, mid)]
    current = [route(name, p) for name, p in others]
    monkeypatch.setattr(heuristics, "BYTE_CODES_MAX_M", 0)
    assert route(spec, problem) == before
    assert [route(name, p) for name, p in others] == current


def test_clusters_of_fewer_splits_divide_the_split_and_need_cluster_split():
    """rs_cluster_ctas: a divisor of split_k from 2 to split_k - 1, with rs_cluster_split; it lets
    split_k past a portable cluster (the clusters are smaller); the rest is refused by name."""
    rs = {"arch": "sm_90a", "stages": 4, "weights_in_registers": True}
    cfg = WgmmaWna16Config(**rs, split_k=16, rs_cluster_split=True, rs_cluster_ctas=4)
    assert (cfg.split_k, cfg.rs_cluster_ctas) == (16, 4)
    with pytest.raises(ValueError, match="rs_cluster_split needs"):  # 16 CTAs in one cluster
        WgmmaWna16Config(**rs, split_k=16, rs_cluster_split=True)
    for fields in (
        {"split_k": 8, "rs_cluster_ctas": 2},  # without rs_cluster_split
        {"split_k": 8, "rs_cluster_split": True, "rs_cluster_ctas": 3},  # not a divisor
        {"split_k": 4, "rs_cluster_split": True, "rs_cluster_ctas": 4},  # the whole split: 0
        {"split_k": 9, "rs_cluster_split": True, "rs_cluster_ctas": 9},  # past a cluster
    ):
        with pytest.raises(ValueError, match="rs_cluster_ctas"):
            WgmmaWna16Config(**rs, **fields)


def test_split_scatter_needs_the_register_forms_workspace_split():
    """rs_split_scatter sums split-K's workspace: the register-A form with split_k >= 2 and
    neither stream-K nor clusters (which sum their splits their own ways); refused by name."""
    rs = {"arch": "sm_90a", "stages": 4, "weights_in_registers": True}
    assert WgmmaWna16Config(**rs, split_k=16, rs_split_scatter=True).rs_split_scatter
    for fields in (
        {"split_k": 1},
        {"split_k": 8, "rs_cluster_split": True},
        {"split_k": 8, "rs_cluster_split": True, "rs_cluster_ctas": 2},
        {"split_k": 1, "rs_stream_k": True, "rs_block_m": 64},
        {"split_k": 1, "weights_in_registers": False},
    ):
        with pytest.raises(ValueError, match="rs_split_scatter needs"):
            WgmmaWna16Config(**{**rs, **fields, "rs_split_scatter": True})


def test_only_split_scatter_configs_compile_the_scatter_branch():
    """The scatter epilogue is a third of a plain register-A kernel's SASS (session 49), so the
    tile's SPLIT_SCATTER flag is set for rs_split_scatter configs alone: an unsplit config of the
    same tile renders the template's default (no flag), a scatter config sets it after the
    cluster flag (false)."""
    rs = {"arch": "sm_90a", "stages": 4, "weights_in_registers": True, "rs_block_m": 64}

    def tile(**fields) -> list[str]:
        code = FAMILY.render(presets.GPTQ_INT4, WgmmaWna16Config(**rs, **fields), SM90).code
        return re.search(r"WgmmaWna16RsTile<([^>]*)>", code).group(1).split(", ")

    # ..., CTAS, CONSUMERS, CLUSTER_SPLIT, SPLIT_SCATTER
    assert tile(split_k=4, rs_split_scatter=True)[-4:] == ["1", "2", "false", "true"]
    for fields in ({"split_k": 1}, {"split_k": 4}, {"split_k": 4, "rs_cluster_split": True}):
        assert len(tile(**fields)) <= 8, fields  # no ninth argument: SPLIT_SCATTER stays false


def test_cluster_split_k_is_never_routed_beyond_a_portable_cluster_or_with_stream_k():
    """No routed config asks for a cluster of more than 8 CTAs, or for clusters with stream-K or
    without a split, across the family's M buckets on the four layers."""
    for spec in (presets.W4A16_G128, presets.MXFP4, presets.W8A16):
        for n, k in ((57344, 8192), (8192, 28672), (6144, 4096), (4096, 14336)):
            for m in (17, 32, 48, 64, 96, 128, 192, 256, 512, 1024, 4096):
                problem = GemmProblem(n=n, k=k, m=m, act_dtype="fp16")
                cfg = FAMILY.candidates(spec, problem, SM90)[0]
                if cfg.rs_cluster_split:
                    assert 2 <= cfg.split_k <= 8 and not cfg.rs_stream_k, (spec.weight, n, k, m)
