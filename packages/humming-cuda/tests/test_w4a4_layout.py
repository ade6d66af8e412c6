"""CPU tests of the W4A4 family: which arch runs which path (and the refusals, H200 included), the
configs, the 4-bit activation quantizer formats, and the packed layouts: a CPU emulation of what the
kernel computes from the packed operands (include/humming/kernel/w4a4.cuh) matches the reference
GEMM."""

from __future__ import annotations

import pytest
import torch

from humming_core.device import GemmProblem
from humming_core.numerics import quantize_act, quantize_weight, reference_gemm
from humming_core.numerics.codec import decode, encode
from humming_core.ops.layer import M_BUCKETS
from humming_core.spec import ActSpec, ScaleSpec, WeightSpec, presets
from humming_cuda.caps import ARCHS, caps_for_arch
from humming_cuda.device import CudaDevice
from humming_cuda.kernels import FAMILIES
from humming_cuda.kernels.act_quant.act4 import Act4Format, unsupported_reason
from humming_cuda.kernels.w4a4 import FAMILY, W4a4Config
from humming_cuda.kernels.w4a4.config import W4a4Format
from humming_cuda.kernels.w4a4.layout import W4a4Layout, bytes_to_canonical

PROBLEM = GemmProblem(n=4096, k=4096, m=16)
NEITHER = "W4A4 needs int4 mma.sync (sm80-sm89) or block-scaled fp4 mma (sm120a/sm121a)"
INT4_ARCHS = ("sm_80", "sm_86", "sm_87", "sm_89")
FP4_ARCHS = ("sm_120a", "sm_121a")
W4A4 = ("W4A4_INT4", "W4A4_NVFP4", "W4A4_MXFP4")


def _int4_spec(act_group: int | None = None, w_group: int | None = 128, bias: bool = False):
    act = ActSpec(
        dtype="int4",
        quant="dynamic",
        granularity="group" if act_group else "token",
        group_size=act_group,
    )
    scale = (
        {"granularity": "group", "group_size": w_group} if w_group else {"granularity": "channel"}
    )
    weight = WeightSpec(dtype="int4", scale=ScaleSpec(dtype="fp16", **scale))
    return presets.W4A4_INT4.replace(
        act=act, weight=weight, epilogue={"bias": bias, "out_dtype": "fp16"}
    )


# ---- which arch runs what ------------------------------------------------------------------------
def test_h200_refuses_every_w4a4_spec_with_the_reason():
    caps = caps_for_arch("sm_90a")
    for name in W4A4:
        support = FAMILY.supports(presets.preset(name), PROBLEM, caps)
        assert not support and support.reason == f"{NEITHER}; sm_90a has neither"


@pytest.mark.parametrize("arch", ARCHS)
def test_paths_per_arch(arch):
    caps = caps_for_arch(arch)
    int4 = FAMILY.supports(presets.W4A4_INT4, PROBLEM, caps)
    assert bool(int4) == (arch in INT4_ARCHS), int4.reason
    for name in ("W4A4_NVFP4", "W4A4_MXFP4"):
        fp4 = FAMILY.supports(presets.preset(name), PROBLEM, caps)
        assert bool(fp4) == (arch in FP4_ARCHS), fp4.reason
    if arch in INT4_ARCHS:
        reason = FAMILY.supports(presets.W4A4_NVFP4, PROBLEM, caps).reason
        assert reason.endswith("has only int4 mma.sync, which this nvfp4 spec does not use")


def test_family_is_unverified_and_never_offered_by_default(monkeypatch):
    assert FAMILY.hardware_verified is False and FAMILY in FAMILIES
    monkeypatch.delenv("HUMMING_UNVERIFIED_KERNELS", raising=False)
    support = CudaDevice.for_arch("sm_89").check(presets.W4A4_INT4, PROBLEM)
    assert not support and "w4a4: not yet verified on hardware" in support.reason
    monkeypatch.setenv("HUMMING_UNVERIFIED_KERNELS", "1")
    assert CudaDevice.for_arch("sm_89").candidates(presets.W4A4_INT4, PROBLEM)[0].family == "w4a4"
    h200 = CudaDevice.for_arch("sm_90a").check(presets.W4A4_NVFP4, PROBLEM)
    assert not h200 and "sm_90a has neither" in h200.reason


@pytest.mark.parametrize(
    ("spec", "words"),
    [
        (
            presets.W4A4_INT4.replace(
                weight=WeightSpec(dtype="int4", scale=ScaleSpec(granularity="tensor"))
            ),
            "per-channel scales or groups",
        ),
        (_int4_spec(w_group=32), "groups of 64, 128"),
        (_int4_spec(act_group=32), "group_size=32"),
        (presets.W4A4_NVFP4.replace(weight=presets.MXFP4.weight), "NVFP4 weights"),
        (presets.W4A8_INT8, "int4 or e2m1 activations"),
        (presets.W4A4_INT4.replace(epilogue={"glu": "silu_mul"}), "no activation/GLU"),
    ],
)
def test_spec_refusals_name_the_problem(spec, words):
    support = FAMILY.supports(spec, PROBLEM, caps_for_arch("sm_89"))
    assert not support and words in support.reason, support.reason


def test_k_must_be_a_multiple_of_64():
    support = FAMILY.supports(
        presets.W4A4_INT4, GemmProblem(n=64, k=4160 + 32, m=1), caps_for_arch("sm_80")
    )
    assert not support and "multiple of 64" in support.reason


# ---- configs ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("arch", INT4_ARCHS + FP4_ARCHS)
def test_candidates_fit_and_render(arch):
    caps = caps_for_arch(arch)
    spec = presets.W4A4_INT4 if arch in INT4_ARCHS else presets.W4A4_NVFP4
    for m in M_BUCKETS:
        configs = FAMILY.candidates(spec, GemmProblem(n=4096, k=4096, m=m), caps)
        assert configs and all(c.smem_bytes <= caps.smem_per_block for c in configs)
        source = FAMILY.render(spec, configs[0], caps)
        assert "HUMMING_W4A4_ENTRY" in source.code and "HUMMING_ACT_QUANT4_ENTRY" in source.code
    assert FAMILY.candidates(spec, PROBLEM, caps_for_arch("sm_90a")) == []


def test_config_rules():
    cfg = W4a4Config(arch="sm_80", m_frags=2, n_frags=4, warps_m=2, warps_n=4, stages=3)
    assert (cfg.block_m, cfg.block_n, cfg.threads) == (64, 128, 256)
    assert cfg.smem_bytes == 3 * (64 + 128) * 128
    with pytest.raises(ValueError, match="power of two"):
        W4a4Config(arch="sm_80", n_frags=6)
    with pytest.raises(ValueError, match="at most 8"):
        W4a4Config(arch="sm_80", warps_m=4, warps_n=4)


# ---- activation quantizer formats ----------------------------------------------------------------
def test_act4_formats():
    assert Act4Format.from_spec(presets.W4A4_INT4.act) == Act4Format("int4_token", 0)
    assert Act4Format.from_spec(presets.W4A4_NVFP4.act) == Act4Format("nvfp4", 16)
    assert Act4Format.from_spec(presets.W4A4_MXFP4.act) == Act4Format("mxfp4", 32)
    static = ActSpec(dtype="int4", quant="static", granularity="tensor")
    assert Act4Format.from_spec(static).scale_shape(5, 256) == (1, 5)
    assert Act4Format("int4_group", 128).scale_shape(5, 256) == (2, 5)
    assert Act4Format("nvfp4", 16).scale_shape(5, 256) == (5, 16)
    nv = Act4Format("nvfp4", 16).entries("b")
    assert "HUMMING_ACT_AMAX4_ENTRY(b_amax4_bf16, nv_bfloat16)" in nv
    assert "AMAX4" not in Act4Format("mxfp4", 32).entries("b")
    dyn_tensor = ActSpec(dtype="int4", quant="dynamic", granularity="tensor")
    assert "whole-tensor amax" in unsupported_reason(dyn_tensor)
    fp4_g32_fp32 = ActSpec(dtype="e2m1", quant="dynamic", granularity="group", group_size=32)
    assert "NVFP4 (group 16" in unsupported_reason(fp4_g32_fp32)


# ---- packed layout: emulate the kernel on CPU ------------------------------------------------------
def _act_operands(x: torch.Tensor, spec):
    """What the GPU quantizer writes, built from the reference: (values, scale per element)."""
    values, scales = quantize_act(x, spec.act)
    k = x.shape[1]
    tile = k if spec.act.granularity == "token" else spec.act.group_size
    return values, scales.repeat_interleave(tile, dim=1)[:, :k]


def _weight_operands(packed: dict, cw, fmt: W4a4Format):
    """The kernel's view of the packed weights: (element values, scale per element)."""
    n, k = cw.n, cw.k
    name = cw.spec.weight.dtype.name
    words = bytes_to_canonical(packed["qweight"], name)
    assert torch.equal(words, cw.qweight)  # the byte view is the canonical stream
    nib = packed["qweight"].to(torch.int64)
    codes = torch.stack([nib & 0xF, nib >> 4], dim=-1).reshape(n, k)
    values = decode(name, codes)  # int4: two's complement nibbles
    if fmt.scaled:
        sdt = "ue4m3" if fmt.path == "nvfp4" else "e8m0"
        s = decode(sdt, packed["weight_scale"]).repeat_interleave(fmt.w_group, dim=1)
        if fmt.path == "nvfp4":
            s = s * packed["weight_global"]
    elif fmt.w_grouped:
        s = packed["weight_scale"].T.repeat_interleave(fmt.w_group, dim=1)[:, :k]
    else:
        s = packed["weight_scale"].reshape(n, 1).expand(n, k)
    return values, s


@pytest.mark.parametrize(
    "spec",
    [
        presets.W4A4_INT4,
        _int4_spec(act_group=64, w_group=None, bias=True),
        _int4_spec(act_group=256, w_group=512),
        presets.W4A4_NVFP4,
        presets.W4A4_MXFP4,
    ],
    ids=["int4-token-g128", "int4-g64-channel", "int4-g256-g512", "nvfp4", "mxfp4"],
)
def test_packed_operands_reproduce_the_reference(spec):
    gen = torch.Generator().manual_seed(3)
    n, k, m = 48, 1024, 5
    w = torch.randn(n, k, generator=gen)
    bias = torch.randn(n, generator=gen) if spec.epilogue.bias else None
    cw = quantize_weight(w, spec, bias=bias)
    fmt = W4a4Format.from_spec(cw.spec)
    packed = W4a4Layout(fmt).pack(cw, "cpu")
    assert packed["qweight"].shape == (n, k // 2) and packed["qweight"].dtype == torch.uint8
    x = (torch.randn(m, k, generator=gen) * 3).to(torch.bfloat16)
    a_vals, a_s = _act_operands(x, cw.spec)
    w_vals, w_s = _weight_operands(packed, cw, fmt)
    emulated = (a_vals * a_s) @ (w_vals * w_s).T
    if bias is not None:
        emulated = emulated + packed["bias"]
    ref = reference_gemm(x, cw).float()
    assert torch.allclose(emulated.to(ref.dtype).float(), ref, rtol=1e-2, atol=1e-2)
    # the element codes of both operands are exact 4-bit values
    name = cw.spec.weight.dtype.name
    assert torch.equal(decode(name, encode(name, a_vals)), a_vals)
