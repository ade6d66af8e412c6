"""The GPU 4-bit activation quantizers (the W4A4 GEMM's input) are bit-identical to
humming_core.numerics.act.quantize_act: same codes (packed two per byte) and same scales, for int4
per token / per group of 64, 128, 256 / static, NVFP4 with a computed or a given global scale, and
MXFP4, from fp16 and bf16, including all-zero rows and groups, rounding ties, -0 and bf16 values
below fp32's normal range. They use no 4-bit MMA, so they run on any sm_89+ GPU (the H200 here)."""

from __future__ import annotations

import pytest
import torch

pytestmark = [
    pytest.mark.cuda,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs an NVIDIA GPU (torch.cuda)"),
]

INT4 = {
    "int4_token": {"granularity": "token"},
    "int4_g64": {"granularity": "group", "group_size": 64},
    "int4_g128": {"granularity": "group", "group_size": 128},
    "int4_g256": {"granularity": "group", "group_size": 256},
    "int4_static": {"granularity": "tensor", "quant": "static"},
}
CASES = [*INT4, "nvfp4", "nvfp4_static", "mxfp4"]
SHAPES = ((9, 256), (33, 1024), (300, 4096))


def _act(case: str):
    from humming_core.spec import ActSpec, presets

    if case in INT4:
        return ActSpec(dtype="int4", **({"quant": "dynamic"} | INT4[case]))
    return presets.W4A4_MXFP4.act if case == "mxfp4" else presets.W4A4_NVFP4.act


_CACHE: dict = {}


def _quantizer(act):
    from humming_cuda import loader
    from humming_cuda.compiler import compile_source
    from humming_cuda.device import CudaDevice
    from humming_cuda.kernels.act_quant.act4 import Act4Format, Act4Quantizer, render_source

    fmt = Act4Format.from_spec(act)
    if fmt not in _CACHE:
        source = render_source(fmt, CudaDevice().caps().arch)
        module = loader.load(compile_source(source))
        _CACHE[fmt] = Act4Quantizer.from_module(fmt, module, source.meta["base"])
    return _CACHE[fmt]


def _inputs(m: int, k: int, dtype: torch.dtype, case: str) -> torch.Tensor:
    gen = torch.Generator().manual_seed(m * 7 + k)
    x = torch.randn(m, k, generator=gen) * torch.logspace(-3, 3, m).unsqueeze(1)
    x[1] = 0.0  # all-zero row
    x[2, :256] = 0.0  # all-zero groups
    x[2, 3] = -0.0
    x[3] = 0.0
    if case.startswith("int4"):
        # amax 7: the scale is exactly 1 and these are ties (half to even)
        x[3, :8] = torch.tensor([7.0, 0.5, 1.5, 2.5, -2.5, -3.5, 6.5, -0.5])
    else:
        # amax 6: MX scale 2^0 (and NVFP4 with global 1: group scale 1); e2m1 ties
        x[3, :16] = torch.tensor([6.0, 0.25, 0.75, 1.25, 1.75, 2.5, 3.5, -5.0] * 2)
    x[4] = x[4] * 1e-38  # bf16 keeps values below 2^-126: fp32-subnormal amax
    return x.to(dtype)


def _unpack(q: torch.Tensor) -> torch.Tensor:
    q = q.cpu().to(torch.int64)
    return torch.stack([q & 0xF, q >> 4], dim=-1).reshape(q.shape[0], -1)


def _static(case: str, x: torch.Tensor):
    if case == "int4_static":
        return (x.float().abs().amax() / 5.0).reshape(1)
    return torch.ones(1) if case == "nvfp4_static" else None


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("case", CASES)
def test_bit_identical_to_reference(case, dtype):
    from humming_core.numerics.act import quantize_act
    from humming_core.numerics.codec import decode, encode

    act = _act(case)
    quantize = _quantizer(act)
    elem = act.dtype.name
    for m, k in SHAPES:
        x = _inputs(m, k, dtype, case)
        static = _static(case, x)
        values, scales = quantize_act(x, act, static)
        q, s, g = quantize(x.cuda(), None if static is None else static.cuda())
        torch.cuda.synchronize()
        where = f"{case} {dtype} M={m} K={k}"
        assert q.shape == (m, k // 2), where
        # codes, including the sign of zero (numerics.codec keeps it)
        assert torch.equal(_unpack(q), encode(elem, values).to(torch.int64)), f"codes: {where}"
        if elem == "int4":
            expected = scales.t().expand(s.shape[0], m).contiguous()  # [G, M], static per row
            assert torch.equal(s.cpu().view(torch.int32), expected.view(torch.int32)), where
            continue
        got = decode("ue4m3" if case.startswith("nvfp4") else "e8m0", s.cpu())
        if g is not None:
            got = got * g.cpu()
        assert torch.equal(got.view(torch.int32), scales.view(torch.int32)), f"scales: {where}"


def test_nvfp4_global_scale_is_the_reference_one():
    from humming_core.numerics.scales import global_scale
    from humming_core.spec import scalar

    quantize = _quantizer(_act("nvfp4"))
    x = _inputs(33, 1024, torch.bfloat16, "nvfp4")
    _, _, g = quantize(x.cuda())
    expected = global_scale(x.float().abs().amax(), scalar("e2m1"), scalar("ue4m3")).reshape(1)
    assert torch.equal(g.cpu().view(torch.int32), expected.view(torch.int32))
    _, _, g0 = quantize(torch.zeros(4, 64, dtype=torch.bfloat16, device="cuda"))
    assert g0.item() == 1.0  # a zero tensor gets global 1


def test_refuses_k_not_a_multiple_of_64():
    quantize = _quantizer(_act("mxfp4"))
    with pytest.raises(ValueError, match="multiple of 64"):
        quantize(torch.zeros(2, 96, dtype=torch.float16, device="cuda"))
