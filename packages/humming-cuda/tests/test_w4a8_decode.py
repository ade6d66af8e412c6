"""CPU tests of the w4a8_decode family: what it takes and refuses, its configs and routing, its
rendered unit, the M guard and split steps of its bound kernel, and that every W4A8 format compiles
for sm_90a without spills at every slab count."""

from __future__ import annotations

import pytest
from compile_units import Units, dumped_ptx
from w8a8_cases import W4_FORMATS, make_w4_spec

from humming_core.device import GemmProblem
from humming_core.spec import presets
from humming_cuda.caps import caps_for_arch
from humming_cuda.device import CudaDevice
from humming_cuda.kernels import FAMILIES
from humming_cuda.kernels.w4a8_decode import FAMILY, W4a8DecodeConfig, W4a8DecodeKernel
from humming_cuda.kernels.w8a8 import FAMILY as W8A8

SM90 = caps_for_arch("sm_90a")
DECODE = GemmProblem(n=8192, k=8192, m=1)


def test_registered_before_w8a8_sharing_its_layout():
    names = [f.name for f in FAMILIES]
    assert names.index("w4a8_decode") < names.index("w8a8")
    spec = presets.W4A8_FP8
    mine = FAMILY.candidates(spec, DECODE, SM90)[0]
    theirs = W8A8.candidates(spec, DECODE, SM90)[0]
    ours, w8 = FAMILY.weight_layout(spec, mine, SM90), W8A8.weight_layout(spec, theirs, SM90)
    assert ours.identity == w8.identity  # one packed copy serves both


@pytest.mark.parametrize("name", ["W4A8_FP8", "W4A8_INT8", "MXFP4_A8"])
@pytest.mark.parametrize(("m", "tokens"), [(None, 8), (1, 8), (8, 8), (9, 16), (16, 16)])
def test_candidates_take_one_token_block_up_to_8(name, m, tokens):
    configs = FAMILY.candidates(presets.preset(name), GemmProblem(n=8192, k=8192, m=m), SM90)
    assert configs and {c.tokens for c in configs} == {tokens}
    assert all((c.m_frags, c.warps_m, c.weight_bits, c.pdl) == (1, 1, 4, True) for c in configs)
    assert configs[-1].split_k == 1  # the unsplit forms follow a split first


@pytest.mark.parametrize(
    ("n", "k", "m", "split"),
    # about eight CTAs per SM, at most 8 splits, at least 4 stages of 256 per split
    # (the H200 sweep's best splits, benchmarks/notes/session24.md)
    [
        (4096, 14336, 1, 8),
        (6144, 4096, 1, 4),
        (57344, 8192, 1, 1),
        (8192, 28672, 8, 8),
        (57344, 8192, 16, 2),
        (8192, 28672, 16, 8),
        (6144, 4096, 9, 4),
    ],
)
def test_split_fills_about_eight_ctas_per_sm(n, k, m, split):
    cfg = FAMILY.candidates(presets.W4A8_FP8, GemmProblem(n=n, k=k, m=m), SM90)[0]
    # one token block: 64 rows and three stages (two unsplit: UNSPLIT_ONE_BLOCK_STAGES); two:
    # 128 rows (both blocks share each weight conversion) and two stages
    tile = (64, 2 if split == 1 else 3) if m <= 8 else (128, 2)
    assert (cfg.split_k, (cfg.block_n, cfg.stages), cfg.slabs) == (split, tile, 2)
    # e2m1 nibbles (MXFP4 x fp8) keep three stages unsplit (measured slower with two)
    mx = FAMILY.candidates(presets.MXFP4_A8, GemmProblem(n=n, k=k, m=m), SM90)[0]
    assert (mx.split_k, (mx.block_n, mx.stages)) == (split, (64, 3) if m <= 8 else (128, 2))


@pytest.mark.parametrize(
    ("spec", "problem", "caps", "words"),
    [
        (presets.W8A8_FP8, DECODE, SM90, "4-bit"),
        (presets.W4A8_FP8, GemmProblem(n=8192, k=8192, m=17), SM90, "M <= 16"),
        (presets.W4A8_FP8, DECODE, caps_for_arch("sm_80"), "e4m3"),
        (presets.W4A8_INT8, DECODE, caps_for_arch("sm_89"), "built for sm_90"),
        (presets.W4A8_FP8, DECODE, caps_for_arch("sm_100a"), "built for sm_90"),
        (presets.W4A16_G128, DECODE, SM90, "int8 or e4m3 activations"),
    ],
)
def test_the_rest_is_refused_with_the_reason(spec, problem, caps, words):
    support = FAMILY.supports(spec, problem, caps)
    assert not support and words in support.reason
    assert FAMILY.candidates(spec, problem, caps) == []


def test_routing_takes_decode_on_sm90(monkeypatch):
    assert FAMILY.hardware_verified is True  # verified on the H200 in session 24
    monkeypatch.delenv("HUMMING_UNVERIFIED_KERNELS", raising=False)
    device = CudaDevice.for_arch("sm_90a")

    def routed(n, k, m):
        return device.candidates(presets.W4A8_FP8, GemmProblem(n=n, k=k, m=m))[0].family

    # one token block: every layer; two: the large layers only (session 24's same-run compare)
    for n, k in ((6144, 4096), (4096, 14336), (8192, 28672), (57344, 8192)):
        assert routed(n, k, 1) == routed(n, k, 8) == "w4a8_decode"
    assert routed(8192, 28672, 16) == routed(57344, 8192, 9) == "w4a8_decode"
    assert routed(4096, 14336, 16) == routed(6144, 4096, 9) == "w8a8"
    assert routed(57344, 8192, 17) != "w4a8_decode"


def test_config_takes_one_row_of_token_fragments():
    with pytest.raises(ValueError, match="one 16-row tile of tokens"):
        W4a8DecodeConfig(arch="sm_90a", m_frags=2)
    with pytest.raises(ValueError, match="one 16-row tile of tokens"):
        W4a8DecodeConfig(arch="sm_90a", warps_m=2)
    with pytest.raises(ValueError):
        W4a8DecodeConfig(arch="sm_90a", weight_bits=8)
    with pytest.raises(ValueError):
        W4a8DecodeConfig(arch="sm_90a", tokens=12)
    with pytest.raises(ValueError):
        W4a8DecodeConfig(arch="sm_90a", slabs=3)
    one = W4a8DecodeConfig(arch="sm_90a", slabs=1, stages=4)
    # per slab 16 token rows of 128 codes and 128 weight rows of 64 bytes, then a scale row of
    # the 128 weight rows per group the stage touches
    assert one.stage_bytes(128) == 16 * 128 + 128 * 64 + 128 * 4
    assert one.stage_bytes(256) == one.stage_bytes(128)
    assert one.stage_bytes(32) == 16 * 128 + 128 * 64 + 4 * 128 * 4
    two = one.model_copy(update={"slabs": 2})
    assert two.stage_bytes(384) == 2 * (16 * 128 + 128 * 64) + 2 * 128 * 4  # a boundary inside
    assert two.stage_bytes(512) == 2 * (16 * 128 + 128 * 64) + 128 * 4
    # the config's own figure (for fitting stages) is the most any group size needs
    assert one.smem_bytes == 4 * one.stage_bytes(32)


def test_render_names_the_decode_entry():
    spec = presets.W4A8_FP8
    cfg = FAMILY.candidates(spec, DECODE, SM90)[0]
    source = FAMILY.render(spec, cfg, SM90)
    assert source.name.startswith("humming_w4a8_decode_")
    # int4 codes, one token block, the config's slabs
    assert "HUMMING_W4A8_DECODE_ENTRY" in source.code
    assert f", 0, 8, {cfg.slabs})" in source.code
    # the quantizer entries w8a8's bind looks up, named after the unit
    assert f"{source.name}_quant_fp16" in source.code and f"{source.name}_quant_bf16" in source.code
    two = cfg.model_copy(update={"tokens": 16})
    assert FAMILY.render(spec, two, SM90).name != source.name
    e2m1 = FAMILY.render(
        presets.MXFP4_A8, FAMILY.candidates(presets.MXFP4_A8, DECODE, SM90)[0], SM90
    )
    assert ", 2, 8, " in e2m1.code  # kWeightFloat
    assert FAMILY.render(spec, cfg.model_copy(update={"slabs": 4}), SM90).name != source.name
    with pytest.raises(ValueError, match=r"config\.arch"):
        FAMILY.render(spec, cfg, caps_for_arch("sm_89"))


class _Function:
    """The parts of a loaded function a kernel binds (no GPU)."""

    symbol = "humming_w4a8_decode_test"
    device_index = 0

    def reserve_smem(self, nbytes: int) -> None:
        pass


def test_bound_kernel_refuses_more_rows_than_its_tokens(monkeypatch):
    import torch

    from humming_cuda.kernels import act_quant

    monkeypatch.setattr(act_quant, "ModuleFunction", lambda loaded, symbol: _Function())
    cfg = FAMILY.candidates(presets.W4A8_FP8, DECODE, SM90)[0]
    kernel = W4a8DecodeKernel(_Function(), presets.W4A8_FP8, cfg)
    assert kernel.max_m == 8
    # launched with the shared memory of its own spec's stages (g128: one scale row per slab)
    assert kernel.smem == cfg.stages * cfg.stage_bytes(128) < cfg.smem_bytes
    x = torch.zeros(9, 256, dtype=torch.float16)
    out = torch.zeros(9, 64, dtype=torch.bfloat16)
    with pytest.raises(ValueError, match=r"9 rows, but this kernel computes at most 8"):
        kernel(x=x, out=out)


@pytest.mark.parametrize(("slabs", "k", "steps"), [(1, 4096, 32), (2, 4096, 16), (4, 4200, 9)])
def test_split_counts_stages_of_slabs(slabs, k, steps, monkeypatch):
    """iters_per_split is in the kernel's stages (slabs * 128 of K), as the kernel counts them."""
    import torch

    from humming_cuda.kernels import act_quant
    from humming_cuda.kernels.w8a8 import bind  # w8a8's split, counted in the config's stages

    monkeypatch.setattr(act_quant, "ModuleFunction", lambda loaded, symbol: _Function())
    seen = {}

    def fake_split_launch(n_steps, split_k, tiles, tile_floats, device):
        seen["steps"] = n_steps
        return 1, {}, {"IPS": n_steps}

    monkeypatch.setattr(bind, "split_launch", fake_split_launch)
    cfg = W4a8DecodeConfig(arch="sm_90a", slabs=slabs, split_k=2)
    kernel = W4a8DecodeKernel(_Function(), presets.W4A8_FP8, cfg)
    kernel._split_k(k, 8, torch.device("cpu"))
    assert seen["steps"] == steps


def _units() -> Units:
    """Every W4A8 conformance format, with and without bias, at M = 1 and 16, at every slab count
    (sm_90a, the arch the family is built for)."""
    units = Units(FAMILY, "sm_90a")
    for fmt in W4_FORMATS:
        for bias, out in ((True, "bf16"), (False, "fp32")):
            spec = make_w4_spec(*fmt, bias=bias, out=out)
            for m in (1, 16):
                cfg = FAMILY.candidates(spec, GemmProblem(n=4096, k=4096, m=m), units.caps)[0]
                for slabs in (1, 2, 4):
                    units.add(spec, cfg.model_copy(update={"slabs": slabs}))
    return units


@pytest.mark.compile
def test_every_format_compiles_without_spills(monkeypatch, tmp_path):
    """The GEMM entry issues fp16 m16n8k16 MMAs and no 8-bit ones, within its register cap."""
    pytest.importorskip("cuda.bindings.nvrtc", reason="NVRTC (cuda-bindings) is not installed")
    monkeypatch.setenv("HUMMING_DUMP_DIR", str(tmp_path))
    units = _units()
    assert len(units) == len(W4_FORMATS) * 2 * 2 * 3
    for spec, cfg, artifact in units.compile(workers=4):
        functions = artifact.meta["functions"]
        assert len(functions) == 3, functions  # the GEMM and two quantizer entries
        gemm = next(v for k, v in functions.items() if "_quant_" not in k)
        where = f"{spec.weight.dtype.name}x{spec.act.dtype.name} {cfg}"
        assert gemm["spill_stores"] == 0, f"spills: {where} {gemm}"
    mma = "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"
    for ptx in dumped_ptx(tmp_path, units, needs=(mma,)):
        assert "m16n8k32" not in ptx


# 57344x8192 (unsplit), same-run H100 route A/B (session 48, benchmarks/notes/session48/h100/
# ab_decode.json): (spec, M, three stages us, two stages us).
UNSPLIT_STAGES_AB = [
    ("W4A8_FP8", 1, 113.1, 96.4),
    ("W4A8_FP8", 8, 115.4, 95.4),
    ("W4A8_INT8", 1, 112.5, 96.5),
    ("MXFP4_A8", 1, 114.7, 125.0),
]


@pytest.mark.parametrize(("name", "m", "three_us", "two_us"), UNSPLIT_STAGES_AB)
def test_unsplit_one_block_tile_takes_the_ring_depth_that_measured_faster(
    name, m, three_us, two_us
):
    cfg = FAMILY.candidates(presets.preset(name), GemmProblem(n=57344, k=8192, m=m), SM90)[0]
    assert cfg.split_k == 1 and cfg.tokens == 8
    assert cfg.stages == (2 if two_us < three_us else 3)
