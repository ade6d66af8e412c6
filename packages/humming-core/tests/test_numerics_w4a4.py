"""Reference GEMM for W4A4 specs (int4 per token / per group, NVFP4 with its global scales, MXFP4):
reference_gemm equals an independent re-computation written from the formats' definitions: the
activation quantization by hand (e2m1 by nearest-grid search with ties to the even code, ue4m3 by
torch's own float8 cast) and the weights decoded straight from the canonical nibbles."""

from __future__ import annotations

import pytest
import torch

from humming_core.numerics.gemm import reference_gemm
from humming_core.numerics.quant import quantize_weight
from humming_core.spec import ActSpec, presets

E2M1 = torch.tensor([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0])


def _data(m: int, n: int, k: int, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    x = (torch.randn(m, k, generator=g) * torch.logspace(-1, 1, m).unsqueeze(1)).to(torch.bfloat16)
    x[1, :64] = 0.0  # all-zero groups
    return x, torch.randn(n, k, generator=g) * 0.05


def _e2m1(v: torch.Tensor) -> torch.Tensor:
    """Nearest e2m1 value, ties to the even code (index), saturating at 6."""
    a = v.abs().clamp(max=6.0).unsqueeze(-1)
    dist = (a - E2M1).abs()
    best = dist.min(dim=-1, keepdim=True).values
    # among equally near grid points take the even index (code mantissa bit 0)
    idx = torch.arange(8)
    tie_rank = torch.where(dist == best, (idx % 2) * 8 + idx, 99)
    return torch.copysign(E2M1[tie_rank.argmin(dim=-1)], v)


def _groups(x: torch.Tensor, g: int) -> torch.Tensor:
    return x.float().reshape(x.shape[0], -1, g)


def _int4_act(x: torch.Tensor, group: int | None) -> torch.Tensor:
    xg = _groups(x, group or x.shape[1])
    s = xg.abs().amax(dim=-1, keepdim=True) / 7
    q = torch.where(s > 0, torch.round(xg / torch.where(s > 0, s, 1)).clamp(-8, 7), 0.0)
    return (q * s).reshape(x.shape)


def _nvfp4_act(x: torch.Tensor, static: float | None) -> torch.Tensor:
    g = static if static is not None else (x.float().abs().amax() / 2688).item()
    xg = _groups(x, 16)
    target = (xg.abs().amax(dim=-1, keepdim=True) / 6 / g).clamp(max=448)
    s = target.to(torch.float8_e4m3fn).float() * g
    q = torch.where(s > 0, _e2m1(xg / torch.where(s > 0, s, 1)), 0.0)
    return (q * s).reshape(x.shape)


def _mxfp4_act(x: torch.Tensor) -> torch.Tensor:
    xg = _groups(x, 32)
    amax = xg.abs().amax(dim=-1, keepdim=True)
    e = torch.where(amax > 0, torch.floor(torch.log2(amax)) - 2, torch.tensor(-127.0))
    s = torch.exp2(e)
    return (_e2m1(xg / s) * s).reshape(x.shape)


def _weights(cw) -> torch.Tensor:
    """Dequantize from the canonical nibbles (element k at bits 4k of the little-endian stream)."""
    b = cw.qweight.contiguous().view(torch.uint8).to(torch.int64)
    codes = torch.stack([b & 0xF, b >> 4], dim=-1).reshape(cw.n, cw.k)
    ws = cw.spec.weight
    if ws.dtype.name == "int4":
        values = (codes - 8).float()  # offset binary
    else:
        values = torch.where(codes >= 8, -E2M1[codes % 8], E2M1[codes % 8])
    group = ws.scale.group_size if ws.scale.granularity == "group" else cw.k
    if ws.scale.dtype.name == "e8m0":
        s = torch.exp2(cw.scales.to(torch.float32) - 127)
    else:
        s = cw.scales.float()
    w = values * s.repeat_interleave(group, dim=1)[:, : cw.k]
    return w * cw.global_scale if ws.global_scale else w


def _int4_spec(group: int | None):
    act = ActSpec(
        dtype="int4", quant="dynamic", granularity="group" if group else "token", group_size=group
    )
    return presets.W4A4_INT4.replace(act=act, epilogue={"out_dtype": "fp32"})


@pytest.mark.parametrize("group", [None, 64, 128])
def test_int4_activations(group):
    x, w = _data(5, 24, 256)
    cw = quantize_weight(w, _int4_spec(group))
    expected = _int4_act(x, group) @ _weights(cw).T
    torch.testing.assert_close(reference_gemm(x, cw), expected, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("static", [None, 0.004])
def test_nvfp4_activations_with_global_scales(static):
    x, w = _data(5, 24, 256)
    cw = quantize_weight(w, presets.W4A4_NVFP4.replace(epilogue={"out_dtype": "fp32"}))
    expected = _nvfp4_act(x, static) @ _weights(cw).T
    out = reference_gemm(x, cw, act_scale_static=static)
    torch.testing.assert_close(out, expected, rtol=1e-5, atol=1e-6)


def test_mxfp4_activations():
    x, w = _data(5, 24, 256)
    cw = quantize_weight(w, presets.W4A4_MXFP4.replace(epilogue={"out_dtype": "fp32"}))
    expected = _mxfp4_act(x) @ _weights(cw).T
    torch.testing.assert_close(reference_gemm(x, cw), expected, rtol=1e-5, atol=1e-6)


def test_e2m1_ties_go_to_the_even_code():
    # the helper itself, on the ties between neighbours: 0.25 -> 0, 0.75 -> 1, 1.25 -> 1, 1.75 -> 2,
    # 2.5 -> 2, 3.5 -> 4, 5 -> 4
    v = torch.tensor([0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0, -5.0, 7.0])
    assert _e2m1(v).tolist() == [0.0, 1.0, 1.0, 2.0, 2.0, 4.0, 4.0, -4.0, 6.0]
