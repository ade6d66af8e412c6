"""Activation quantization: dynamic and static, per tensor / token / group, int and float types,
MX and NVFP4 group scales. Each case is checked against an independent re-computation of the
scale rule and against the half-step error bound."""

from __future__ import annotations

import math

import pytest
import torch

from humming_core.numerics.act import dequantize_act, quantize_act
from humming_core.numerics.codec import decode, encode, round_to
from humming_core.spec import NVFP4_ACT, ActSpec, scalar

ELEM_MAX = {"int8": 127.0, "e4m3": 448.0, "e5m2": 57344.0, "int4": 7.0, "e2m1": 6.0}


def _x(m: int = 6, k: int = 200, seed: int = 0) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(m, k, generator=g) * torch.logspace(-2, 2, m).reshape(m, 1)
    x[0, :] = 0.0  # an all-zero token
    return x.to(torch.bfloat16)


def _tile(spec: ActSpec, m: int, k: int) -> tuple[int, int]:
    return {"tensor": (m, k), "token": (1, k), "group": (1, spec.group_size or 0)}[spec.granularity]


def _expand(s: torch.Tensor, m: int, k: int, tile) -> torch.Tensor:
    return s.repeat_interleave(tile[0], 0)[:m].repeat_interleave(tile[1], 1)[:, :k]


def _tile_amax(x: torch.Tensor, tile) -> torch.Tensor:
    m, k = x.shape
    gk = -(-k // tile[1])
    padded = torch.nn.functional.pad(x.abs(), (0, gk * tile[1] - k))
    return padded.reshape(-1 if tile[0] == 1 else 1, m if tile[0] != 1 else 1, gk, tile[1]).amax(
        dim=(1, 3)
    )


def _half_step(t, v: torch.Tensor) -> torch.Tensor:
    if t.is_integer:
        return torch.full_like(v, 0.5)
    e = torch.floor(torch.log2(v.abs().clamp(min=2.0 ** (1 - t.bias), max=t.max_value)))
    return torch.exp2(e - t.mantissa - 1)


CASES = [
    (dtype, gran, group)
    for dtype in ELEM_MAX
    for gran, group in (("tensor", None), ("token", None), ("group", 32), ("group", 128))
]


@pytest.mark.parametrize(("dtype", "gran", "group"), CASES)
def test_dynamic_fp32_scales(dtype, gran, group):
    spec = ActSpec(dtype=dtype, quant="dynamic", granularity=gran, group_size=group)
    x = _x()
    m, k = x.shape
    values, scales = quantize_act(x, spec)
    tile = _tile(spec, m, k)
    assert scales.dtype == torch.float32 and scales.shape == (-(-m // tile[0]), -(-k // tile[1]))
    assert torch.equal(scales, _tile_amax(x.float(), tile) / ELEM_MAX[dtype])
    t = scalar(dtype)
    assert torch.equal(round_to(t, values), values)  # values are exact element values
    s = _expand(scales, m, k, tile)
    xf = x.float()
    units = torch.where(s > 0, xf / torch.where(s > 0, s, 1.0), 0.0)
    assert ((units - values).abs() <= _half_step(t, units) * (1 + 1e-6) + 1e-6).all()
    assert torch.equal(dequantize_act(values, scales, spec), values * s)
    assert (values[0] == 0).all()  # the zero token stays zero (scale 0 for per-token/group)


def test_static_per_tensor():
    spec = ActSpec(dtype="int8", quant="static", granularity="tensor")
    x = _x()
    values, scales = quantize_act(x, spec, static_scale=torch.tensor([0.05]))
    assert scales.tolist() == [[0.05000000074505806]]
    expected = torch.round(x.float() / torch.tensor(0.05)).clamp(-128, 127)
    assert torch.equal(values, expected)
    fp8 = ActSpec(dtype="e4m3", quant="static", granularity="tensor")
    v8, _ = quantize_act(x, fp8, static_scale=0.01)
    # torch's e4m3 cast is an independent encoder (clamped first: not every release saturates)
    expected = (x.float() / torch.tensor(0.01)).clamp(-448, 448).to(torch.float8_e4m3fn).float()
    assert torch.equal(v8, expected)


@pytest.mark.parametrize("dtype", ["e2m1", "e4m3", "int8"])
def test_mx_group_scales(dtype):
    spec = ActSpec(
        dtype=dtype, quant="dynamic", granularity="group", group_size=32, scale_dtype="e8m0"
    )
    x = _x(k=96)
    values, scales = quantize_act(x, spec)
    amax = _tile_amax(x.float(), (1, 32))
    emax = math.floor(math.log2(ELEM_MAX[dtype]))
    exponent = torch.where(amax > 0, torch.floor(torch.log2(amax)) - emax, torch.tensor(-127.0))
    assert torch.equal(scales, torch.exp2(exponent))
    assert torch.equal(round_to(dtype, values), values)
    assert (values.abs() <= ELEM_MAX[dtype]).all()


@pytest.mark.parametrize("static", [False, True])
def test_nvfp4_group_scales_with_a_global_scale(static):
    spec = NVFP4_ACT
    x = _x(k=64)
    gs = torch.tensor(0.002) if static else x.float().abs().max() / (448.0 * 6.0)
    values, scales = quantize_act(x, spec, static_scale=gs if static else None)
    group = scales / gs
    # the group part is a ue4m3 value: amax / 6 / global rounded to nearest
    expected = decode("ue4m3", encode("ue4m3", _tile_amax(x.float(), (1, 16)) / 6.0 / gs))
    assert torch.allclose(group, expected, rtol=1e-6, atol=0)
    assert torch.equal(round_to("e2m1", values), values)
    assert torch.equal(
        dequantize_act(values, scales, spec), values * _expand(scales, 6, 64, (1, 16))
    )


def test_partial_last_group():
    spec = ActSpec(dtype="int8", quant="dynamic", granularity="group", group_size=32)
    x = torch.ones(2, 40)
    x[:, 32:] = 0.5
    values, scales = quantize_act(x, spec)
    assert scales.shape == (2, 2)
    assert torch.equal(scales[:, 1], torch.full((2,), 0.5 / 127))
    assert torch.allclose(dequantize_act(values, scales, spec), x)


def test_errors_name_the_problem():
    x = _x()
    with pytest.raises(ValueError, match="not quantized"):
        quantize_act(x, ActSpec(dtype="bf16"))
    with pytest.raises(ValueError, match="needs static_scale"):
        quantize_act(x, ActSpec(dtype="int8", quant="static", granularity="tensor"))
    with pytest.raises(ValueError, match="only used with quant='static'"):
        quantize_act(
            x, ActSpec(dtype="int8", quant="dynamic", granularity="token"), static_scale=1.0
        )
    with pytest.raises(ValueError, match=r"\[M, K\]"):
        quantize_act(
            x.reshape(2, 3, -1), ActSpec(dtype="int8", quant="dynamic", granularity="token")
        )
