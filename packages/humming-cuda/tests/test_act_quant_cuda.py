"""The GPU activation quantizers are bit-identical to humming_core.numerics.act.quantize_act:
same codes and same fp32 scales, for int8 and e4m3, per token, per group of 128 and static per
tensor, from fp16 and bf16 input, including all-zero rows and groups, a partial last group, values
that clip (static) and exact rounding ties; the wide form (codes written as their bf16 values, for
moe_wna16_a8) gives the same values."""

from __future__ import annotations

import pytest
import torch

pytestmark = [
    pytest.mark.cuda,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs an NVIDIA GPU (torch.cuda)"),
]

ACTS = [
    (code, quant, gran)
    for code in ("int8", "e4m3")
    for quant, gran in (("dynamic", "token"), ("dynamic", "group"), ("static", "tensor"))
]


def _act(code, quant, gran):
    from humming_core.spec import ActSpec

    return ActSpec(
        dtype=code, quant=quant, granularity=gran, group_size=128 if gran == "group" else None
    )


def _quantizer(act, wide=False):
    from humming_cuda import loader
    from humming_cuda.compiler import compile_source
    from humming_cuda.device import CudaDevice
    from humming_cuda.kernels.act_quant import ActQuantFormat, ActQuantizer, render_source
    from humming_cuda.kernels.family import arch_has_pdl

    fmt = ActQuantFormat.from_spec(act, wide=wide)
    arch = CudaDevice().caps().arch
    source = render_source(fmt, arch)
    module = loader.load(compile_source(source))
    return ActQuantizer.from_module(fmt, module, source.meta["base"], arch_has_pdl(arch))


def _inputs(m: int, k: int, dtype: torch.dtype, code: str) -> torch.Tensor:
    gen = torch.Generator().manual_seed(m * 7 + k)
    x = torch.randn(m, k, generator=gen) * torch.logspace(-3, 3, m).unsqueeze(1)
    x[1] = 0.0  # all-zero row: scale 0, codes 0
    x[2, :128] = 0.0  # all-zero group
    # amax = the code's max, so the dynamic scale is exactly 1 and these are rounding ties
    # (int8: halves; e4m3: 17, 19, 21 lie halfway between neighbours 2 apart)
    x[3] = 0.0
    top = 127.0 if code == "int8" else 448.0
    x[3, :8] = torch.tensor([top, 0.5, 1.5, 2.5, -2.5, 17.0, 19.0, -21.0])
    return x.to(dtype)


@pytest.mark.parametrize("wide", [False, True], ids=["codes", "wide"])
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize(("code", "quant", "gran"), ACTS)
def test_bit_identical_to_reference(code, quant, gran, dtype, wide):
    from humming_core.numerics.act import quantize_act

    act = _act(code, quant, gran)
    quantize = _quantizer(act, wide)
    for m, k in ((9, 272), (33, 1024), (300, 4096)):
        x = _inputs(m, k, dtype, code)
        static = (x.float().abs().amax() / 300.0).reshape(1) if quant == "static" else None
        values, scales = quantize_act(x, act, static)
        q, s = quantize(x.cuda(), None if static is None else static.cuda())
        torch.cuda.synchronize()
        assert q.shape == (m, k) and s.shape == (scales.shape[1], m)
        narrow = torch.int8 if code == "int8" else torch.float8_e4m3fn
        assert q.dtype == (torch.bfloat16 if wide else narrow)
        # scales come back [G, M]; a static scale is written for every row
        expected = scales.t().expand(s.shape[0], m).contiguous()
        assert torch.equal(s.cpu().view(torch.int32), expected.view(torch.int32))
        assert torch.equal(q.cpu().float(), values), f"codes differ at M={m} K={k}"


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize(("code", "quant", "gran"), ACTS)
def test_every_quotient_correctly_rounded_at_scale(code, quant, gran, dtype):
    """The kernels divide by a reciprocal and one correction step (humming/arith/divide.cuh), not
    by __fdiv_rn: 4M values with random full-precision mantissas, over rows of scales that are not
    powers of two, still give the reference's codes bit for bit (a quotient one ulp off shows up as
    a code one step off wherever it lies near a rounding boundary). Static scales also cover
    quotients past the float range (bf16 input), which saturate."""
    from humming_core.numerics.act import quantize_act

    act = _act(code, quant, gran)
    quantize = _quantizer(act)
    m, k = 1024, 4096
    gen = torch.Generator().manual_seed(11)
    # full-precision mantissas over 13 binades (where the codes are not all 0), each row scaled
    # by its own factor so that row maxima and scales are not powers of two
    x = torch.rand(m, k, generator=gen) * 2.0 - 1.0
    x = x * torch.exp2(torch.randint(-12, 1, (m, k), generator=gen).float())
    span = 20.0 if dtype == torch.bfloat16 else 6.0  # fp16 ends at 65504
    x = (x * torch.exp(torch.empty(m, 1).uniform_(-span, span, generator=gen))).to(dtype)
    static = None
    if quant == "static":
        static = torch.tensor([0.0173], dtype=torch.float32)
        if dtype == torch.bfloat16:
            x[0, :4] = torch.tensor([3.0e38, -3.0e38, 1.0e30, -7.0e-39], dtype=dtype)
    values, scales = quantize_act(x, act, static)
    q, s = quantize(x.cuda(), None if static is None else static.cuda())
    torch.cuda.synchronize()
    assert torch.equal(
        s.cpu().view(torch.int32), scales.t().expand(s.shape[0], m).view(torch.int32)
    )
    assert torch.equal(q.cpu().float(), values), "codes differ"


def test_rejects_wrong_static_scale_use():
    quantize = _quantizer(_act("int8", "dynamic", "token"))
    x = torch.ones(4, 128, dtype=torch.float16, device="cuda")
    with pytest.raises(ValueError, match="takes no static scale"):
        quantize(x, torch.ones(1, device="cuda"))
