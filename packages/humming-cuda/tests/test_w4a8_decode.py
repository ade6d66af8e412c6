"""CPU tests of the w4a8_decode family: what it takes and refuses, its configs and routing, its
rendered unit, the M guard of its bound kernel, and that every W4A8 format compiles on every arch
it supports (no spills on sm_90a, where it runs)."""

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
    # w8a8's rule: about four CTAs per SM, a power of two, at least 4 K iterations per split
    [(4096, 14336, 1, 16), (6144, 4096, 1, 8), (57344, 8192, 1, 1), (8192, 28672, 16, 8)],
)
def test_split_follows_w8a8s_rule(n, k, m, split):
    cfg = FAMILY.candidates(presets.W4A8_FP8, GemmProblem(n=n, k=k, m=m), SM90)[0]
    assert cfg.split_k == split


@pytest.mark.parametrize(
    ("spec", "problem", "caps", "words"),
    [
        (presets.W8A8_FP8, DECODE, SM90, "4-bit"),
        (presets.W4A8_FP8, GemmProblem(n=8192, k=8192, m=17), SM90, "M <= 16"),
        (presets.W4A8_FP8, DECODE, caps_for_arch("sm_80"), "e4m3"),
        (presets.W4A8_INT8, DECODE, caps_for_arch("sm_75"), "int8"),
        (presets.W4A16_G128, DECODE, SM90, "int8 or e4m3 activations"),
    ],
)
def test_the_rest_is_refused_with_the_reason(spec, problem, caps, words):
    support = FAMILY.supports(spec, problem, caps)
    assert not support and words in support.reason
    assert FAMILY.candidates(spec, problem, caps) == []


def test_routing_prefers_it_on_sm90_only(monkeypatch):
    monkeypatch.setenv("HUMMING_UNVERIFIED_KERNELS", "1")
    for m in (1, 16):
        problem = GemmProblem(n=8192, k=8192, m=m)
        assert CudaDevice.for_arch("sm_90a").candidates(presets.W4A8_FP8, problem)[0].family == (
            "w4a8_decode"
        )
        assert CudaDevice.for_arch("sm_89").candidates(presets.W4A8_FP8, problem)[0].family == (
            "w8a8"
        )
    big = GemmProblem(n=8192, k=8192, m=17)
    assert CudaDevice.for_arch("sm_90a").candidates(presets.W4A8_FP8, big)[0].family != (
        "w4a8_decode"
    )


def test_config_takes_one_row_of_token_fragments():
    with pytest.raises(ValueError, match="one 16-row tile of tokens"):
        W4a8DecodeConfig(arch="sm_90a", m_frags=2)
    with pytest.raises(ValueError, match="one 16-row tile of tokens"):
        W4a8DecodeConfig(arch="sm_90a", warps_m=2)
    with pytest.raises(ValueError):
        W4a8DecodeConfig(arch="sm_90a", weight_bits=8)
    with pytest.raises(ValueError):
        W4a8DecodeConfig(arch="sm_90a", tokens=12)


def test_render_names_the_decode_entry():
    spec = presets.W4A8_FP8
    cfg = FAMILY.candidates(spec, DECODE, SM90)[0]
    source = FAMILY.render(spec, cfg, SM90)
    assert source.name.startswith("humming_w4a8_decode_")
    assert "HUMMING_W4A8_DECODE_ENTRY" in source.code and ", 0, 8)" in source.code  # int4, 8
    # the quantizer entries w8a8's bind looks up, named after the unit
    assert f"{source.name}_quant_fp16" in source.code and f"{source.name}_quant_bf16" in source.code
    two = cfg.model_copy(update={"tokens": 16})
    assert FAMILY.render(spec, two, SM90).name != source.name
    e2m1 = FAMILY.render(
        presets.MXFP4_A8, FAMILY.candidates(presets.MXFP4_A8, DECODE, SM90)[0], SM90
    )
    assert ", 2, 8)" in e2m1.code  # kWeightFloat
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
    x = torch.zeros(9, 256, dtype=torch.float16)
    out = torch.zeros(9, 64, dtype=torch.bfloat16)
    with pytest.raises(ValueError, match=r"9 rows, but this kernel computes at most 8"):
        kernel(x=x, out=out)


ARCHS = ("sm_80", "sm_89", "sm_90a", "sm_100a", "sm_120a")


def _units(arch: str) -> Units:
    """Every W4A8 conformance format the arch runs, with and without bias, at M = 1 and 16."""
    units = Units(FAMILY, arch)
    for fmt in W4_FORMATS:
        for bias, out in ((True, "bf16"), (False, "fp32")):
            spec = make_w4_spec(*fmt, bias=bias, out=out)
            for m in (1, 16):
                problem = GemmProblem(n=4096, k=4096, m=m)
                if FAMILY.supports(spec, problem, units.caps):
                    units.add_first(spec, problem)
    return units


@pytest.mark.compile
@pytest.mark.parametrize("arch", ARCHS)
def test_every_format_compiles(arch, monkeypatch, tmp_path):
    """The GEMM entry issues fp16 m16n8k16 MMAs and no 8-bit ones; no spills on sm_90a (where it
    is preferred), at most a few bytes elsewhere (e2m1 with two token blocks on sm_100a)."""
    pytest.importorskip("cuda.bindings.nvrtc", reason="NVRTC (cuda-bindings) is not installed")
    monkeypatch.setenv("HUMMING_DUMP_DIR", str(tmp_path))
    units = _units(arch)
    assert len(units) >= 8 if arch != "sm_80" else len(units) >= 4
    for spec, cfg, artifact in units.compile(workers=4):
        functions = artifact.meta["functions"]
        assert len(functions) == 3, functions  # the GEMM and two quantizer entries
        gemm = next(v for k, v in functions.items() if "_quant_" not in k)
        where = f"{arch} {spec.weight.dtype.name}x{spec.act.dtype.name} {cfg}"
        assert gemm["spill_stores"] <= (0 if arch == "sm_90a" else 16), f"spills: {where} {gemm}"
    for ptx in dumped_ptx(
        tmp_path, units, needs=("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32",)
    ):
        assert "m16n8k32" not in ptx
