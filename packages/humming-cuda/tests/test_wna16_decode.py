"""CPU tests of the wna16_decode family: what it takes and refuses, its configs, the gating that
keeps it off by default until verified on hardware, its rendered unit, and that every weight
format compiles for every mma.sync arch without spills at 2 CTAs of 256 threads per SM."""

from __future__ import annotations

import pytest
from compile_units import Units
from wna16_cases import FORMATS, make_spec

from humming_core.device import GemmProblem
from humming_core.spec import presets
from humming_cuda.caps import caps_for_arch
from humming_cuda.device import CudaDevice
from humming_cuda.kernels import FAMILIES
from humming_cuda.kernels.wna16 import FAMILY as WNA16
from humming_cuda.kernels.wna16.config import KernelFormat
from humming_cuda.kernels.wna16_decode import FAMILY, Wna16DecodeConfig

SM90 = caps_for_arch("sm_90a")
SM80 = caps_for_arch("sm_80")
DECODE = GemmProblem(n=8192, k=8192, m=1)


def test_registered_before_wna16_and_routed_by_default(monkeypatch):
    names = [f.name for f in FAMILIES]
    assert names.index("wna16_decode") < names.index("wna16")
    assert FAMILY.hardware_verified is True  # verified on the H200 in session 6
    device = CudaDevice.for_arch("sm_90a")
    monkeypatch.delenv("HUMMING_UNVERIFIED_KERNELS", raising=False)
    mine = device.candidates(presets.W4A16_G128, DECODE)[0]
    assert mine.family == "wna16_decode"
    two = device.candidates(presets.W4A16_G128, GemmProblem(n=8192, k=8192, m=9))[0]
    assert (two.family, two.tokens) == ("wna16_decode", 16)
    big = device.candidates(presets.W4A16_G128, GemmProblem(n=8192, k=8192, m=17))[0]
    assert big.family != "wna16_decode"
    # one packed copy serves both families
    layouts = [device.weight_layout(presets.W4A16_G128, c) for c in (mine, big)]
    assert layouts[0].identity == layouts[1].identity


@pytest.mark.parametrize(
    ("spec", "m", "family"),
    [
        (presets.MXFP4, 8, "wna16_decode"),  # one block of tokens: every group size
        (presets.MXFP4, 9, "wna16"),  # two blocks with 32-element groups: left to wna16
        (presets.NVFP4, 16, "wna16"),  # 16-element groups
        (presets.W2A16_G64, 16, "wna16_decode"),  # 64-element groups and up keep two blocks
        (presets.W4A16_G128, 12, "wna16_decode"),
        (presets.W8A16, 16, "wna16_decode"),  # per-channel scales (mma.sync arch: no wgmma)
    ],
)
def test_two_token_blocks_only_for_groups_of_64_or_more(spec, m, family):
    device = CudaDevice.for_arch("sm_80")
    assert device.candidates(spec, GemmProblem(n=8192, k=8192, m=m))[0].family == family


@pytest.mark.parametrize(
    ("spec", "problem", "words"),
    [
        (presets.W4A16_G128, GemmProblem(n=8192, k=8192, m=17), "M <= 16"),
        (
            presets.W4A16_G128.replace(
                weight={
                    "dtype": "uint4",
                    "zero_point": "float",
                    "scale": {"granularity": "group", "group_size": 128},
                }
            ),
            DECODE,
            "float zero points",
        ),
        (presets.W8A8_FP8, DECODE, "quantized"),  # wna16's own reasons come first
    ],
)
def test_the_rest_is_refused_with_the_reason(spec, problem, words):
    support = FAMILY.supports(spec, problem, SM90)
    assert not support and words in support.reason, support.reason


@pytest.mark.parametrize("m", [None, 1, 8, 9, 16])
def test_configs_take_wna16s_decode_tile(m):
    """wna16's M <= 8 tile with one block of tokens up to M = 8; above, two blocks on one warp
    along N (two blocks' accumulators at 128 registers, two CTAs of 256 threads, would spill)."""
    problem = GemmProblem(n=8192, k=28672, m=m)
    (cfg,) = FAMILY.candidates(presets.W4A16_G128, problem, SM90)
    m8 = min(m or 1, 8)
    base = WNA16.candidates(presets.W4A16_G128, GemmProblem(n=8192, k=28672, m=m8), SM90)[0]
    assert cfg.family == "wna16_decode"
    two = (m or 1) > 8
    assert cfg.tokens == (16 if two else 8)
    assert cfg.model_dump(
        exclude={"family", "split_k", "tokens", "warps_n", "k_steps", "ctas_per_sm", "pdl"}
    ) == base.model_dump(exclude={"family", "split_k", "warps_n", "k_steps"})
    assert cfg.warps_n == (1 if two else base.warps_n)
    # two blocks: 8 k16 steps per warp where two CTAs' shared memory fits (sm_90)
    assert cfg.k_steps == (8 if two else base.k_steps)


@pytest.mark.parametrize(
    ("n", "k", "m", "split"),
    [
        # the H200 sweep's best (benchmarks/notes/wna16_decode_split_sweep_*.json)
        (57344, 8192, 1, 2),  # 448 tiles: more than a wave of two per SM, so halved waves
        (28672, 4096, 1, 1),  # 224 tiles: within one wave, unsplit
        (8192, 28672, 1, 4),  # 64 tiles: four splits fill the wave
        (6144, 4096, 8, 4),  # 48 tiles: 5 would fit, the power of two below
        (1024, 8192, 1, 8),  # 8 tiles, 32 K iterations: 33 would fit, 8 keeps 4 iterations each
        (1024, 512, 1, 1),  # 2 K iterations of 256: a split keeps at least 4
    ],
)
def test_split_fills_one_wave_of_two_ctas_per_sm(n, k, m, split):
    (cfg,) = FAMILY.candidates(presets.W4A16_G128, GemmProblem(n=n, k=k, m=m), SM90)
    assert cfg.split_k == split


def test_config_takes_one_token_tile():
    with pytest.raises(ValueError, match="one 16-row tile"):
        Wna16DecodeConfig(arch="sm_90a", m_frags=2)


@pytest.mark.parametrize(
    "n, k, m, ctas",
    [
        (57344, 8192, 16, 3),  # 896 tiles x 2 splits: many waves; 1.16x on the H200 (session 15)
        (57344, 8192, 12, 3),
        (8192, 28672, 16, 2),  # 128 tiles x 2: one wave of two per SM, 0.98x at three
        (6144, 4096, 16, 2),
        (57344, 8192, 8, 2),  # one block of tokens: the 256-thread tile stays at two
    ],
)
def test_two_block_tile_takes_three_ctas_per_sm_beyond_one_wave(n, k, m, ctas):
    """Where the deep two-block tile does not fit twice per SM (sm_80's 163 KB per block)."""
    (cfg,) = FAMILY.candidates(presets.W4A16_G128, GemmProblem(n=n, k=k, m=m), SM80)
    assert cfg.k_steps == 4
    assert cfg.ctas_per_sm == ctas
    source = FAMILY.render(presets.W4A16_G128, cfg, SM80).code
    assert source.rstrip().endswith(f", {cfg.tokens}, {ctas})")


@pytest.mark.parametrize(
    ("n", "k", "m", "split"),
    [(57344, 8192, 16, 1), (57344, 8192, 12, 1), (8192, 28672, 16, 2), (6144, 4096, 16, 2)],
)
def test_two_block_tile_takes_8_steps_per_warp_at_two_ctas_on_sm90(n, k, m, split):
    """The measured form (notes/session16.md): k_steps 8 at two CTAs per SM, split as chosen for
    4 steps per warp, but whole K where the 896 tiles of 57344 columns fill more than a wave
    (notes/session35.md: 1.12x at M=16, 1.05x at M=12); one token block keeps 4 steps."""
    (cfg,) = FAMILY.candidates(presets.W4A16_G128, GemmProblem(n=n, k=k, m=m), SM90)
    assert (cfg.tokens, cfg.k_steps, cfg.ctas_per_sm, cfg.split_k) == (16, 8, 2, split)
    assert 2 * KernelFormat.from_spec(presets.W4A16_G128).smem_bytes(cfg) <= SM90.smem_per_block
    (one,) = FAMILY.candidates(presets.W4A16_G128, GemmProblem(n=n, k=k, m=8), SM90)
    assert one.k_steps == 4


def test_three_ctas_per_sm_only_for_the_128_thread_two_block_tile():
    with pytest.raises(ValueError, match="ctas_per_sm=3"):
        Wna16DecodeConfig(arch="sm_90a", tokens=8, warps_n=1, warps_k=4, ctas_per_sm=3)
    with pytest.raises(ValueError, match="ctas_per_sm=3"):
        Wna16DecodeConfig(arch="sm_90a", tokens=16, warps_n=1, warps_k=8, ctas_per_sm=3)
    # groups below 64 (which `prefers` leaves to wna16) would spill at three: they keep two
    (mx,) = FAMILY.candidates(presets.MXFP4, GemmProblem(n=57344, k=8192, m=16), SM90)
    assert (mx.tokens, mx.ctas_per_sm) == (16, 2)
    one = Wna16DecodeConfig(arch="sm_90a", tokens=16, warps_n=1, warps_k=4)
    three = one.model_copy(update={"ctas_per_sm": 3})
    names = {FAMILY.render(presets.W4A16_G128, c, SM90).name for c in (one, three)}
    assert len(names) == 2


@pytest.mark.parametrize("ctas", [2, 3])
def test_two_token_blocks_refuse_more_than_one_warp_along_n(ctas):
    """The H200 faulted (illegal instruction, notes/session30.md) on this tile with 2 warps along
    N, a ptxas 13.0 miscompile (test_sass_audit.py); the config says so before anything is
    rendered."""
    with pytest.raises(ValueError, match=r"tokens=16 needs warps_n=1.*got warps_n=2"):
        Wna16DecodeConfig(arch="sm_90a", tokens=16, warps_n=2, warps_k=2, ctas_per_sm=ctas)


@pytest.mark.parametrize("arch", ["sm_75", "sm_80", "sm_89", "sm_90a", "sm_100a", "sm_120a"])
def test_launched_with_pdl_where_the_arch_has_it(arch):
    """sm_90+ launch the kernel with programmatic dependent launch (it waits with
    griddepcontrol.wait before reading x); older arches cannot, and a config that asks is refused."""
    caps = caps_for_arch(arch)
    (cfg,) = FAMILY.candidates(presets.W4A16_G128, DECODE, caps)
    assert cfg.pdl == (arch in ("sm_90a", "sm_100a", "sm_120a"))
    if not cfg.pdl:
        with pytest.raises(ValueError, match="no programmatic dependent launch"):
            Wna16DecodeConfig(arch=arch, pdl=True)


def test_humming_pdl_0_launches_without_the_attribute(monkeypatch):
    from humming_cuda.launch import Launcher

    monkeypatch.setenv("HUMMING_PDL", "1")
    with_pdl = Launcher(object(), [], pdl=True)
    assert with_pdl.pdl and len(with_pdl._attrs) == 1
    monkeypatch.setenv("HUMMING_PDL", "0")
    plain = Launcher(object(), [], pdl=True)
    assert not plain.pdl and plain._attrs == []


def test_render_names_the_decode_entry():
    cfg = FAMILY.candidates(presets.W4A16_G128, DECODE, SM90)[0]
    source = FAMILY.render(presets.W4A16_G128, cfg, SM90)
    assert source.name.startswith("humming_wna16_decode_")
    assert "HUMMING_WNA16_DECODE_ENTRY" in source.code
    # its own name: wna16's kernel for the same config is another unit
    plain = WNA16.render(
        presets.W4A16_G128,
        WNA16.config_type(**cfg.model_dump(exclude={"family", "tokens", "ctas_per_sm", "pdl"})),
        SM90,
    )
    assert plain.name != source.name
    with pytest.raises(ValueError, match=r"config\.arch"):
        FAMILY.render(presets.W4A16_G128, cfg, caps_for_arch("sm_80"))


ARCHS = ("sm_75", "sm_80", "sm_86", "sm_89", "sm_90a", "sm_120a")


def _units(arch: str) -> Units:
    """Every conformance format (both activation types where the arch has bf16) on sm_90a; elsewhere int4, uint4 with zero points and e2m1 (one per weight kind), and W4A16; each at M = 1 (one
    block of tokens) and M = 16 (two; on a wide layer also at three CTAs per SM)."""
    units = Units(FAMILY, arch)
    acts = ("fp16", "bf16") if units.caps.has("bf16") else ("fp16",)
    kinds = [next(f for f in FORMATS if f[0] == name) for name in ("int4", "uint4", "e2m1")]
    formats = FORMATS if arch == "sm_90a" else kinds
    for fmt in formats:
        for act in acts:
            spec = make_spec(fmt, act, 64, 4096, bias=True, out=None, sdt=fmt[2][-1])
            # n = 57344 at M = 16: the two-block tile capped for three CTAs per SM
            for n, m in ((4096, 1), (4096, 16), (57344, 16)):
                problem = GemmProblem(n=n, k=4096, m=m)
                if FAMILY.supports(spec, problem, units.caps):
                    units.add_first(spec, problem)
    units.add_first(presets.W4A16_G128, DECODE)
    return units


@pytest.mark.compile
@pytest.mark.parametrize("arch", ARCHS)
def test_every_format_compiles_within_two_ctas_per_sm(arch):
    pytest.importorskip("cuda.bindings.nvrtc", reason="NVRTC (cuda-bindings) is not installed")
    units = _units(arch)
    assert len(units) >= 2
    for spec, cfg, artifact in units.compile(workers=4):
        res = artifact.meta["resources"]
        where = f"{arch} {spec.weight.dtype.name} {spec.act.dtype.name} {cfg}"
        # as in test_wna16_compile: a few bytes on rare formats (int6), anything larger regresses
        assert res["spill_stores"] <= 16, f"spills: {where} {res}"
        # the entry caps registers for two CTAs per SM (128 at the one-block tile's 256 threads)
        # or three (168 at the two-block tile's 128)
        assert res["registers"] <= 65536 // (cfg.ctas_per_sm * cfg.threads), f"{where} {res}"
        if cfg.tokens == 16:
            assert cfg.threads == 128 and res["spill_stores"] == 0, f"{where} {res}"
