"""Reference dense GEMM: the composition it promises, fp32 accumulation, act quantization, speed."""

from __future__ import annotations

import time

import pytest
import torch

from humming_core.numerics.gemm import reference_gemm
from humming_core.numerics.quant import dequantize_weight, quantize_weight
from humming_core.spec import QuantSpec, presets


def _data(m: int, n: int, k: int, seed: int = 0, dtype=torch.float16):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(m, k, generator=g).to(dtype), torch.randn(n, k, generator=g) * 0.05


def test_w4a16_is_x_times_dequantized_weights_in_fp32():
    x, w = _data(5, 48, 256)
    cw = quantize_weight(w, presets.W4A16_G128)
    out = reference_gemm(x, cw)
    assert out.dtype == torch.float16 and out.shape == (5, 48)
    wd = dequantize_weight(cw).double()
    exact = x.double() @ wd.T
    # fp32 accumulation over K: |error| <= K * 2^-24 * sum |x||w| (a loose form of the usual bound),
    # then one rounding to fp16.
    bound = 256 * 2.0**-24 * (x.double().abs() @ wd.abs().T) + exact.abs() * 2.0**-11
    assert ((out.double() - exact).abs() <= bound + 1e-12).all()


def test_bias_comes_from_the_argument_or_the_weight():
    x, w = _data(3, 32, 128)
    spec = presets.W4A16_G128.replace(epilogue={"bias": True})
    bias = torch.linspace(-1, 1, 32)
    cw = quantize_weight(w, spec, bias=bias)
    with_weight_bias = reference_gemm(x, cw)
    assert torch.equal(with_weight_bias, reference_gemm(x, quantize_weight(w, spec), bias=bias))
    acc = x.float() @ dequantize_weight(cw).T
    assert torch.equal(with_weight_bias, (acc + bias).to(torch.float16))


def test_w8a8_int8_quantizes_each_token():
    x, w = _data(4, 40, 128, dtype=torch.bfloat16)
    cw = quantize_weight(w, presets.W8A8_INT8)
    out = reference_gemm(x, cw)
    assert out.dtype == torch.bfloat16
    xf = x.float()
    s = xf.abs().amax(dim=1, keepdim=True) / 127
    q = torch.round(xf / s).clamp(-128, 127)
    expected = ((q * s) @ dequantize_weight(cw).T).to(torch.bfloat16)
    torch.testing.assert_close(out, expected, rtol=0, atol=0)


def test_glu_epilogue_halves_n_and_quantized_fp4_runs():
    x, w = _data(6, 64, 128, dtype=torch.bfloat16)
    spec = presets.W4A4_NVFP4.replace(epilogue={"glu": "silu_mul", "out_dtype": "fp32"})
    cw = quantize_weight(w, spec)
    out = reference_gemm(x, cw)
    assert out.shape == (6, 32) and out.dtype == torch.float32
    full = x.float() @ w.T
    gate, up = full[:, :32], full[:, 32:]
    ideal = torch.nn.functional.silu(gate) * up
    # W4A4: ~1/4 relative error per operand at worst; the result tracks the ideal one closely on average
    assert (out - ideal).norm() / ideal.norm() < 0.3


def test_static_activation_scale_is_used():
    x, w = _data(2, 16, 64)
    spec = QuantSpec(
        weight=presets.FP8_CHANNEL.weight,
        act={"dtype": "e4m3", "quant": "static", "granularity": "tensor"},
    )
    cw = quantize_weight(w, spec)
    out = reference_gemm(x, cw, act_scale_static=torch.tensor(0.02))
    s = torch.tensor(0.02)
    xq = (x.float() / s).clamp(-448, 448).to(torch.float8_e4m3fn).float() * s
    torch.testing.assert_close(
        out, (xq @ dequantize_weight(cw).T).to(torch.bfloat16), rtol=0, atol=0
    )


def test_errors_say_what_to_do():
    x, w = _data(2, 16, 64)
    cw = quantize_weight(w, presets.W4A16_G128.replace(act={"dtype": "fp16"}))
    with pytest.raises(ValueError, match="convert them first"):
        reference_gemm(x.to(torch.bfloat16), cw)
    with pytest.raises(ValueError, match="K=32 columns"):
        reference_gemm(x[:, :32], cw)
    with pytest.raises(ValueError, match="not quantized"):
        reference_gemm(x, cw, act_scale_static=1.0)
    moe = quantize_weight(
        torch.randn(2, 16, 64), QuantSpec(weight=presets.W4A16_G128.weight, layout="moe")
    )
    with pytest.raises(ValueError, match="reference_moe_gemm"):
        reference_gemm(x, moe)
    assert (
        reference_gemm(x.float(), cw).dtype == torch.float16
    )  # fp32 input is rounded to the act dtype


def test_w4a16_4096x4096_at_m16_takes_under_a_second():
    x, w = _data(16, 4096, 4096)
    cw = quantize_weight(w, presets.W4A16_G128)
    reference_gemm(x, cw)  # warm-up: first-call allocations and thread-pool start
    times = []
    for _ in range(3):
        start = time.perf_counter()
        reference_gemm(x, cw)
        times.append(time.perf_counter() - start)
    # ~0.15 s on an idle 2-core CPU (unpack, dequantize, fp32 matmul); the bound is the issue's.
    assert min(times) < 1.0, f"reference W4A16 GEMM took {min(times):.2f} s"


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs an NVIDIA GPU")
@pytest.mark.parametrize(
    "name",
    [
        "W4A16_G128",
        "W3A16_G128",
        "GPTQ_INT4",
        "GGUF_Q4_K",
        "MXFP4_A8",
        "W4A4_NVFP4",
        "FP8_BLOCK128",
        "W8A8_INT8",
    ],
)
def test_reference_numerics_agree_on_cuda(name):
    # The oracle runs on any torch device: the same codes and scales bit for bit on the GPU, and the
    # same GEMM up to the order of fp32 accumulation.
    spec = presets.PRESETS[name]
    x, w = _data(
        8, 256, 384, dtype=torch.bfloat16 if spec.act.dtype.name != "fp16" else torch.float16
    )
    cpu = quantize_weight(w, spec)
    gpu = quantize_weight(w.cuda(), spec)
    for field in ("qweight", "scales", "zeros", "global_scale"):
        a, b = getattr(cpu, field), getattr(gpu, field)
        assert (a is None and b is None) or torch.equal(
            a.view(torch.uint8) if a.dtype == torch.float8_e4m3fn else a,
            (b.view(torch.uint8) if b.dtype == torch.float8_e4m3fn else b).cpu(),
        ), field
    assert torch.equal(dequantize_weight(gpu).cpu(), dequantize_weight(cpu))
    out_gpu = reference_gemm(x.cuda(), gpu).cpu().float()
    out_cpu = reference_gemm(x, cpu).float()
    torch.testing.assert_close(out_gpu, out_cpu, rtol=1e-2, atol=1e-3)
