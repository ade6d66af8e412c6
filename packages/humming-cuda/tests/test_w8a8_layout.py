"""CPU tests of the W8A8 family: spec support and refusals per arch, tile choice, weight layout,
quantizer format, and that the error bound of w8a8_cases.py is tight enough to catch real bugs."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from w8a8_cases import FORMATS, conformance_cases, error_bound, make_spec

from humming_core.device import GemmProblem
from humming_core.numerics import quantize_weight, reference_gemm
from humming_core.packing.bits import unpack_k
from humming_core.spec import ActSpec, presets
from humming_cuda.caps import caps_for_arch
from humming_cuda.device import CudaDevice
from humming_cuda.kernels.act_quant import ActQuantFormat, unsupported_reason
from humming_cuda.kernels.w8a8 import FAMILY, W8a8Config
from humming_cuda.kernels.w8a8.config import W8a8Format
from humming_cuda.kernels.w8a8.layout import W8a8Layout, codes_to_canonical

ACT_QUANT_HEADER = (
    Path(__file__).parents[1] / "src/humming_cuda/include/humming/kernel/act_quant.cuh"
).read_text()

PRESETS = ("W8A8_INT8", "W8A8_FP8", "FP8_BLOCK128")
PROBLEM = GemmProblem(n=4096, k=4096, m=16)


def test_an_unverified_family_is_offered_only_on_the_opt_in(monkeypatch):
    from humming_cuda.kernels.w8a8 import FAMILY

    monkeypatch.delenv("HUMMING_UNVERIFIED_KERNELS", raising=False)
    assert CudaDevice.for_arch("sm_90a").check(presets.W8A8_FP8, PROBLEM)
    monkeypatch.setattr(type(FAMILY), "hardware_verified", False)
    support = CudaDevice.for_arch("sm_90a").check(presets.W8A8_FP8, PROBLEM)
    assert not support
    assert "w8a8: not yet verified on hardware" in support.reason
    monkeypatch.setenv("HUMMING_UNVERIFIED_KERNELS", "1")
    assert CudaDevice.for_arch("sm_90a").check(presets.W8A8_FP8, PROBLEM)


@pytest.mark.parametrize("arch", ["sm_89", "sm_90a"])
@pytest.mark.parametrize("name", PRESETS)
def test_presets_pass_check_on_fp8_arches(arch, name):
    support = CudaDevice.for_arch(arch).check(presets.preset(name), PROBLEM)
    assert support, support.reason


def test_int8_runs_on_sm80_and_fp8_is_refused_with_a_reason():
    device = CudaDevice.for_arch("sm_80")
    assert device.check(presets.W8A8_INT8, PROBLEM)
    for name in ("W8A8_FP8", "FP8_BLOCK128"):
        support = device.check(presets.preset(name), PROBLEM)
        assert not support
        assert "sm_89" in support.reason and "w8a8" in support.reason


def test_sm75_refuses_int8():
    support = FAMILY.supports(presets.W8A8_INT8, PROBLEM, caps_for_arch("sm_75"))
    assert not support and "sm_80" in support.reason


@pytest.mark.parametrize(
    ("spec", "problem", "words"),
    [
        (presets.W8A8_FP8, GemmProblem(n=64, k=72, m=1), "multiple of 16"),
        (presets.W8A16, PROBLEM, "int8 or e4m3 activations"),
        (
            presets.W8A8_FP8.replace(
                act=ActSpec(dtype="e4m3", quant="dynamic", granularity="tensor")
            ),
            PROBLEM,
            "whole tensor",
        ),
        (
            presets.FP8_BLOCK128.replace(
                act=ActSpec(dtype="e4m3", quant="dynamic", granularity="group", group_size=64)
            ),
            PROBLEM,
            "group_size=64",
        ),
        (presets.W8A8_INT8, GemmProblem(n=64, k=1 << 18, m=1), "exact only up to"),
    ],
)
def test_refusals_name_the_problem(spec, problem, words):
    support = FAMILY.supports(spec, problem, caps_for_arch("sm_90a"))
    assert not support and words in support.reason


@pytest.mark.parametrize("arch", ["sm_80", "sm_89", "sm_90a", "sm_120a"])
@pytest.mark.parametrize("m", [1, 16, 17, 64, 65, 4096])
def test_candidates_fit_the_arch(arch, m):
    caps = caps_for_arch(arch)
    for fmt in FORMATS:
        spec = make_spec(*fmt, bias=False, out="bf16")
        configs = FAMILY.candidates(spec, GemmProblem(n=4096, k=4096, m=m), caps)
        if fmt[0] == "e4m3" and arch == "sm_80":
            assert configs == []
            continue
        fmt_ = W8a8Format.from_spec(spec)
        smem = [c.smem_bytes + c.stages * c.factor_bytes(fmt_) for c in configs]
        assert configs and max(smem) <= caps.smem_per_block
        best = configs[0]
        # block scales: a CTA's columns must lie in one 128-row weight block
        assert 128 % best.block_n == 0 or fmt[2] != "block"
        # decode uses one m16 row of fragments; only large batches get 128-row tiles
        assert best.block_m == 16 if m <= 16 else best.block_m <= 64 or m > 64


def test_staged_factor_bytes_mirror_the_kernel():
    """W8a8Kernel::kFactors: per stage, the tile rows' activation-group scales, then the weight
    block scale, in 16-byte units; formats with neither and tiles of more than 64 rows stage none
    (the launch reserves exactly this beside the tiles, so a short count overruns shared memory)."""
    tile = {"arch": "sm_90a", "n_frags": 2, "warps_n": 2, "stages": 4}
    decode = W8a8Config(m_frags=1, warps_m=1, **tile)
    mid = W8a8Config(m_frags=2, warps_m=2, **tile)
    big = W8a8Config(m_frags=4, warps_m=2, **tile)
    assert (decode.block_m, mid.block_m, big.block_m) == (16, 64, 128)
    block128 = W8a8Format.from_spec(make_spec("e4m3", "group", "block", bias=False, out="bf16"))
    groups_only = W8a8Format.from_spec(
        make_spec("e4m3", "group", "channel", bias=False, out="bf16")
    )
    block_only = W8a8Format.from_spec(make_spec("e4m3", "token", "block", bias=False, out="bf16"))
    channel = W8a8Format.from_spec(make_spec("e4m3", "token", "channel", bias=False, out="bf16"))
    assert [decode.factor_bytes(f) for f in (block128, groups_only, block_only, channel)] == [
        80,
        64,
        16,
        0,
    ]
    assert mid.factor_bytes(block128) == 272 and big.factor_bytes(block128) == 0


def test_config_rejects_too_many_warps():
    with pytest.raises(ValueError, match="at most 8"):
        W8a8Config(arch="sm_90a", warps_m=4, warps_n=4)


@pytest.mark.parametrize("fmt", FORMATS)
def test_layout_round_trips_the_canonical_codes(fmt):
    spec = make_spec(*fmt, bias=True, out="bf16")
    n, k = 200, 272
    gen = torch.Generator().manual_seed(0)
    cw = quantize_weight(torch.randn(n, k, generator=gen), spec, bias=torch.randn(n, generator=gen))
    packed = W8a8Layout(W8a8Format.from_spec(spec)).pack(cw, "cpu")
    codes = packed["qweight"]
    assert codes.shape == (n, k) and codes.is_contiguous()
    assert codes.dtype == (torch.int8 if fmt[0] == "int8" else torch.float8_e4m3fn)
    assert torch.equal(codes_to_canonical(codes), unpack_k(cw.qweight, 8, k).to(torch.int64))
    expected = {"tensor": (1,), "channel": (n,), "block": (2, 3)}[fmt[2]]
    assert tuple(packed["weight_scale"].shape) == expected
    assert packed["weight_scale"].dtype == torch.float32
    assert torch.equal(packed["bias"], cw.bias.float())


def test_int8_codes_are_the_signed_values():
    spec = make_spec("int8", "token", "channel", bias=False, out="bf16")
    w = torch.tensor([[-1.0, 0.5, 1.0, 0.0] * 4])
    cw = quantize_weight(w, spec)
    codes = W8a8Layout(W8a8Format.from_spec(spec)).pack(cw, "cpu")["qweight"]
    assert codes[0, :4].tolist() == [-127, 64, 127, 0]


@pytest.mark.parametrize(
    ("act", "mode", "rows"),
    [
        (ActSpec(dtype="int8", quant="dynamic", granularity="token"), "token", 1),
        (ActSpec(dtype="e4m3", quant="static", granularity="tensor"), "static", 1),
        (ActSpec(dtype="e4m3", quant="dynamic", granularity="group", group_size=128), "group", 3),
    ],
)
def test_act_quant_format(act, mode, rows):
    fmt = ActQuantFormat.from_spec(act)
    assert fmt.mode == mode and fmt.scale_rows(272) == rows
    entries = fmt.entries("k")
    assert "k_quant_fp16, half" in entries and "k_quant_bf16, nv_bfloat16" in entries
    # group mode: 8 lanes per group of 128 (16 values each), 256 threads per CTA
    assert fmt.grid(10, 272) == (10 if mode != "group" else -(-(3 * 10 * 8) // 256))
    if mode == "group":
        assert "kPerLane = GROUP < 16 ? 8 : 16;" in ACT_QUANT_HEADER


@pytest.mark.parametrize(
    ("act", "wide"),
    [
        (ActSpec(dtype="int8", quant="dynamic", granularity="token"), False),
        (ActSpec(dtype="e4m3", quant="static", granularity="tensor"), False),
        (ActSpec(dtype="e4m3", quant="dynamic", granularity="group", group_size=128), False),
        (ActSpec(dtype="e4m3", quant="dynamic", granularity="token"), True),
    ],
)
@pytest.mark.parametrize(("m", "k"), [(0, 272), (1, 16), (5, 272), (300, 4096), (3, 8)])
def test_act_quant_buffer_holds_q_then_aligned_scales(act, wide, m, k):
    """q and the scales share one allocation: q at its start (the allocator's alignment, which TMA
    needs), the scales after q's last byte at the next 16-byte boundary, nothing else in it."""
    fmt = ActQuantFormat.from_spec(act, wide=wide)
    size, offset = fmt.buffer_layout(m, k)
    q_bytes = m * k * fmt.q_dtype.itemsize
    assert offset % 16 == 0 and q_bytes <= offset < q_bytes + 16
    assert size == offset + 4 * fmt.scale_rows(k) * m
    buffer, q, scales = fmt.allocate(m, k, torch.device("cpu"))
    assert buffer.dtype == torch.uint8 and buffer.numel() == size
    assert q.dtype == fmt.q_dtype and q.shape == (m, k) and q.is_contiguous()
    assert scales.dtype == torch.float32 and scales.shape == (fmt.scale_rows(k), m)
    assert scales.is_contiguous()
    assert q.data_ptr() == buffer.data_ptr()
    assert scales.data_ptr() - buffer.data_ptr() == offset
    assert q.untyped_storage().data_ptr() == scales.untyped_storage().data_ptr()


def test_act_quant_refuses_4bit_and_mx():
    assert "int8 and e4m3" in unsupported_reason(presets.NVFP4_ACT)
    with pytest.raises(ValueError, match="no activation quantizer"):
        ActQuantFormat.from_spec(ActSpec(dtype="fp16"))


@pytest.mark.parametrize("case", conformance_cases()[::9], ids=lambda c: c.id)
def test_bound_catches_a_wrong_weight_scale(case):
    """The bound holds for the reference against itself recomputed in float64, and a kernel that
    used the neighbouring channel's (or block's) scale would fail it."""
    from humming_core.numerics import dequantize_weight
    from humming_core.numerics.gemm import prepare_act

    spec, gen = case.spec, torch.Generator().manual_seed(case.seed)
    x = torch.randn(case.m, case.k, generator=gen).to(
        getattr(torch, {"bf16": "bfloat16", "fp16": "float16"}[case.x_dtype])
    )
    bias = torch.randn(case.n, generator=gen) * 0.1 if spec.epilogue.bias else None
    cw = quantize_weight(torch.randn(case.n, case.k, generator=gen) * 0.05, spec, bias=bias)
    scale = None
    if spec.act.quant == "static":
        scale = (x.float().abs().amax() / 100.0).reshape(1)
    ref = reference_gemm(x, cw, act_scale_static=scale)
    bound = error_bound(x, cw, ref, scale)
    exact = prepare_act(x, spec.act, scale).double() @ dequantize_weight(cw).double().T
    if bias is not None:
        exact = exact + bias.double()
    assert ((exact - ref.double()).abs() <= bound).all()
    # a 5% scale error: smaller than any neighbouring-scale mix-up, and above the bf16-output and
    # fp8-accumulation allowances even where |xa| @ |w| is much larger than |ref| (cancellation)
    wrong = exact * 1.05
    assert ((wrong - ref.double()).abs() > bound).any()


def test_split_iterations_leave_no_split_empty():
    from humming_cuda.kernels.split_k import split_iterations

    assert split_iterations(17, 5) == (5, 4)
    assert split_iterations(9, 4) == (3, 3)  # 4 requested over 9: three splits of three
    assert split_iterations(3, 16) == (3, 1)
    assert split_iterations(112, 1) == (1, 112)


@pytest.mark.parametrize(
    ("n", "k", "m", "split"),
    [
        (4096, 14336, 1, 8),  # 64 tiles of 64 columns: 8 splits fill ~4 CTAs per SM
        (8192, 28672, 16, 4),
        (6144, 4096, 1, 4),
        (57344, 8192, 1, 1),  # 896 tiles fill the GPU unsplit
        (4096, 512, 1, 1),  # 4 K iterations: too few to split
        (4096, 4096, 4096, 1),
    ],
)
def test_decode_layers_split_k_until_they_fill_the_gpu(n, k, m, split):
    from humming_cuda.kernels.w8a8 import FAMILY

    caps = caps_for_arch("sm_90a")
    configs = FAMILY.candidates(presets.W8A8_FP8, GemmProblem(n=n, k=k, m=m), caps)
    assert configs[0].split_k == split
    assert configs[-1].split_k == 1  # the unsplit form stays a candidate
    unsplit = FAMILY.render(presets.W8A8_FP8, configs[-1], caps).code
    assert ", true>;" not in unsplit  # no split path compiled in
    if split > 1:
        code = FAMILY.render(presets.W8A8_FP8, configs[0], caps).code
        assert ", true>;" in code
        # how many splits is a launch parameter: 2 and 16 splits share one kernel
        other = configs[0].model_copy(update={"split_k": 2 if split != 2 else 16})
        assert FAMILY.render(presets.W8A8_FP8, other, caps).code == code


@pytest.mark.parametrize("arch, pdl", [("sm_90a", True), ("sm_120a", True), ("sm_89", False)])
def test_quantizer_launches_with_pdl_where_the_arch_has_it(arch, pdl):
    """The quantizer kernel waits for the previous grid (kernel/act_quant.cuh), so on sm_90+ it
    launches with PDL, as the decode GEMM after it; older arches have no attribute. The w8a8 bind
    passes its config's pdl (a PPU config says False: its arch has no row in the CUDA table)."""
    from types import SimpleNamespace

    from humming_cuda.kernels.act_quant import ActQuantFormat, ActQuantizer
    from humming_cuda.kernels.family import arch_has_pdl

    assert arch_has_pdl(arch) is pdl
    problem = GemmProblem(n=256, k=256, m=1)
    config = FAMILY.candidates(presets.W8A8_FP8, problem, caps_for_arch(arch))[0]
    assert config.pdl is pdl
    fmt = ActQuantFormat.from_spec(presets.W8A8_FP8.act)
    fn = SimpleNamespace(symbol="humming_w8a8_test_quant_bf16", device_index=0)
    quantizer = ActQuantizer(fmt, {"bf16": fn}, config.pdl)
    assert quantizer._by_dtype[torch.bfloat16][2].pdl is pdl
