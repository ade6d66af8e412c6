"""The fused input GLU on the GPU (ActSpec.input_glu): the quantizer's codes and scales against the
reference (numerics.act.quantize_act, which applies the GLU first), and layers of every
quantized-activation family taking x = [gate | up] end to end.

The quantizer's gate activation uses the epilogues' fast exp / division (arith/activation.cuh),
so its fp32 product may differ from the reference's by a few ulp and, where that straddles a
16-bit rounding boundary, its rounded value by one 16-bit ulp. So: the scales agree to one 16-bit
ulp of the amax; with the device's own scale, every code is the reference value's code or (at
such elements) a neighbour, and such elements are rare (a few per ten thousand at most). A
swapped gate / up, another activation or a wrong row stride fails both by far. The layer test
multiplies what the quantizer wrote: its reference is the device codes and scales times the
weights, within the conformance suite's error bound."""

from __future__ import annotations

import pytest
import torch

pytestmark = [
    pytest.mark.cuda,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs an NVIDIA GPU (torch.cuda)"),
]

GLUS = ("silu_mul", "gelu_mul", "gelu_tanh_mul")
MODES = (("dynamic", "token"), ("dynamic", "group"), ("static", "tensor"))
ULP16 = {torch.float16: 2.0**-10, torch.bfloat16: 2.0**-7}


def _act(code: str, quant: str, gran: str, glu: str):
    from humming_core.spec import ActSpec

    size = 128 if gran == "group" else None
    return ActSpec(dtype=code, quant=quant, granularity=gran, group_size=size, input_glu=glu)


def _quantizer(act):
    from humming_cuda import loader
    from humming_cuda.compiler import compile_source
    from humming_cuda.device import CudaDevice
    from humming_cuda.kernels.act_quant import ActQuantFormat, ActQuantizer, render_source
    from humming_cuda.kernels.family import arch_has_pdl

    fmt = ActQuantFormat.from_spec(act)
    arch = CudaDevice().caps().arch
    source = render_source(fmt, arch)
    module = loader.load(compile_source(source))
    return ActQuantizer.from_module(fmt, module, source.meta["base"], arch_has_pdl(arch))


def _x(m: int, k: int, dtype: torch.dtype) -> torch.Tensor:
    """[gate | up] rows over three decades (products stay finite in fp16), an all-zero row and an
    all-zero first group."""
    gen = torch.Generator().manual_seed(m + k)
    x = torch.randn(m, 2 * k, generator=gen) * torch.logspace(-2, 1, m).unsqueeze(1)
    x[1] = 0.0
    x[2, :128] = 0.0
    return x.to(dtype)


def _spacing(code: str, v: torch.Tensor) -> torch.Tensor:
    """The distance from code value v to the next larger one in magnitude (int8: 1; e4m3: 3
    mantissa bits, subnormal spacing 2^-9)."""
    if code == "int8":
        return torch.ones_like(v)
    e = torch.floor(torch.log2(v.abs().clamp(min=2.0**-9))).clamp(min=-6)
    return torch.exp2(e - 3)


def _per_element(scales: torch.Tensor, m: int, k: int) -> torch.Tensor:
    """[G, M] scales (one row for per token / static) as [M, K]."""
    per = -(-k // scales.shape[0])
    return scales.T.repeat_interleave(per, dim=1)[:, :k]


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("glu", GLUS)
@pytest.mark.parametrize(("quant", "gran"), MODES)
@pytest.mark.parametrize("code", ["int8", "e4m3"])
def test_codes_and_scales_match_the_reference(code, quant, gran, glu, dtype):
    from humming_core.numerics import quantize_act
    from humming_core.numerics.act import glu_input
    from humming_core.numerics.codec import round_to

    act = _act(code, quant, gran, glu)
    m, k = 67, 1024
    x = _x(m, k, dtype)
    static = torch.tensor([0.05]) if quant == "static" else None
    q, scales = _quantizer(act)(x.cuda(), static.cuda() if static is not None else None)
    torch.cuda.synchronize()
    values, ref_scales = quantize_act(x, act, static)
    dev_scales = scales.cpu()
    assert q.shape == (m, k) and dev_scales.shape == (ref_scales.shape[1], m)
    # scales: one 16-bit ulp of the amax apart at most (static: the given scale)
    if quant == "static":
        assert torch.equal(dev_scales, torch.full_like(dev_scales, 0.05))
    else:
        ref = ref_scales.T
        assert ((dev_scales - ref).abs() <= ref * ULP16[dtype]).all()
        assert torch.equal(dev_scales == 0, ref == 0)  # the zero row and group
    # codes: with the device's scale, the reference value's code or a neighbour, rarely
    y = glu_input(x, act).float()
    s = _per_element(dev_scales, m, k)
    expected = round_to(
        act.dtype, torch.where(s > 0, y / torch.where(s > 0, s, 1.0), 0.0), saturate=True
    )
    got = q.cpu().float()
    off = got != expected
    if off.any():
        step = round_to(act.dtype, expected.abs() * 1.2, saturate=True) - expected.abs()
        assert ((got - expected).abs()[off] <= step.abs()[off].clamp(min=1.0)).all()
    assert off.sum() <= max(4, off.numel() // 2000), (
        f"{int(off.sum())} of {off.numel()} codes differ"
    )
    # the reference itself, where the device's scale equals it: the same codes but for those
    if torch.equal(dev_scales, ref_scales.T) or quant == "static":
        assert (values != got).sum() == off.sum()


LAYERS = [
    ("W8A8_FP8", 1),
    ("W8A8_FP8", 300),
    ("W8A8_INT8", 16),
    ("W4A8_FP8", 1),
    ("W4A8_FP8", 64),
    ("W4A8_FP8", 1100),
    ("FP8_BLOCK128", 40),
]


@pytest.mark.parametrize("glu", ["silu_mul", "gelu_tanh_mul"])
@pytest.mark.parametrize(("name", "m"), LAYERS)
def test_layers_multiply_the_fused_quantizers_output(name, m, glu):
    from humming_core.numerics import dequantize_act, quantize_weight
    from humming_core.numerics.epilogue import apply_epilogue
    from humming_core.numerics.quant import dequantize_weight
    from humming_core.ops import PreparedGemm
    from humming_core.spec import preset
    from humming_core.testing.conformance import error_bound

    base = preset(name)
    spec = base.replace(act=base.act.model_copy(update={"input_glu": glu}))
    n, k = 384, 1024
    gen = torch.Generator().manual_seed(m)
    cw = quantize_weight(torch.randn(n, k, generator=gen) * 0.05, spec)
    x = (torch.randn(m, 2 * k, generator=gen) * 2).to(torch.bfloat16)
    layer = PreparedGemm(cw, "cuda")
    out = torch.full((m, n), float("nan"), dtype=layer.out_dtype, device="cuda")
    layer.run(x.cuda(), out=out)
    layer.run(x.cuda(), out=out)  # the prepared (quick) path after the checked first call
    q, scales = _quantizer(spec.act)(x.cuda())
    torch.cuda.synchronize()
    a = dequantize_act(q.cpu().float(), scales.cpu().T, spec.act)
    ref = apply_epilogue(a @ dequantize_weight(cw).T, spec.epilogue, out_dtype=spec.output_dtype)
    err = (out.cpu().double() - ref.double()).abs()
    bound = error_bound(a.to(torch.bfloat16), cw, ref)
    assert not torch.isnan(out).any()
    assert float((err / bound).max()) <= 1.0
