"""Choosing scales and storing them in their dtype.

Rules (shared by weights and activations):
- fp32 / fp16 / bf16 / ue4m3 scales: the ideal scale (e.g. amax / max of the element type) is rounded
  to the scale dtype *before* any code is computed, so a dequantized value is exactly scale * value.
  Weight scales round *up* (to the smallest representable value >= the ideal one): amax then never
  lands past the element max, so every element is within half a step, even where the scale dtype is
  coarse (a subnormal fp16 scale, a ue4m3 scale far below the global one), and tiny tiles are not
  flushed to zero. Activation scales round to nearest, as runtime quantizers (vLLM, ModelOpt) do.
  fp16/bf16 scales saturate at the dtype's max instead of becoming inf.
- e8m0 (MX, OCP Microscaling spec v1.0, section 6.3): the shared exponent is
  X = floor(log2(amax)) - emax_elem, where emax_elem = floor(log2(max finite element value))
  (e2m1: 2, e2m3: 2, e3m2: 4, e4m3: 8, e5m2: 15; integers use their plain value range, int4: 2,
  int8: 6, which for int8 equals MXINT8's convention of an implicit 2^-6). X is clamped to
  [-127, 127] and an all-zero block gets X = -127. Elements that then exceed the element max are
  clamped to it, as the spec prescribes; that is the one case where the error exceeds half a step.
- Second-level (global) scale, one fp32 per tensor (per expert for MoE): the group scales are made
  relative to it. global = amax(tensor) / (elem_max * S) with S = 448 for ue4m3 group scales (NVFP4,
  NVIDIA ModelOpt's weight_scale_2 = amax / (6 * 448)) and S = 1 otherwise; a zero tensor gets 1.
  It is a direct multiplier: w = global * s * value.
"""

from __future__ import annotations

import math

import torch

from ..spec.scalar import ScalarType
from .codec import decode, encode

_FLOAT_SCALES = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}


def div(x: torch.Tensor, c: float) -> torch.Tensor:
    """x / c, correctly rounded on every device.

    PyTorch's CUDA kernels turn division by a Python scalar into multiplication by its reciprocal,
    which can differ from x / c by an ulp; dividing by a tensor on x's device is true division."""
    return x / torch.full((), c, dtype=x.dtype, device=x.device)


def element_max(t: ScalarType) -> float:
    """The largest finite value of an element type (the target of amax when choosing a scale)."""
    return float(t.max_value)


def element_emax(t: ScalarType) -> int:
    """floor(log2(largest element value)): the MX spec's emax_elem."""
    return math.floor(math.log2(element_max(t)))


def mx_exponent(amax: torch.Tensor, elem: ScalarType) -> torch.Tensor:
    """Shared MX exponent X per block (int32): floor(log2(amax)) - emax_elem, clamped to [-127, 127]."""
    _, ex = torch.frexp(amax.float())
    x = torch.where(amax > 0, ex.to(torch.int32) - 1 - element_emax(elem), -127)
    return x.clamp(-127, 127)


def _bump_up(stored: torch.Tensor, low: torch.Tensor, int_view: torch.dtype, top) -> torch.Tensor:
    """The next representable value above `stored` where `low` (bit patterns of non-negative
    floats are ordered like their values), never above `top`."""
    bits = stored.view(int_view)
    bumped = torch.where(low & (stored < top), bits + 1, bits)
    return bumped.view(stored.dtype)


def round_scale(
    target: torch.Tensor, dtype: ScalarType, up: bool = False
) -> tuple[torch.Tensor, torch.Tensor]:
    """Round ideal scales to `dtype`: (stored tensor in the canonical dtype, float32 values).

    Round to nearest, or with `up=True` to the smallest representable value >= target, so that no
    element is pushed past the element max by the rounding. A target beyond an fp32/fp16/bf16
    scale's range is an error (saturating would silently clip the weights); ue4m3 saturates, since
    NVFP4's global scale keeps its group scales in range.
    """
    target = target.float()
    name = dtype.name
    if name in _FLOAT_SCALES:
        torch_dtype = _FLOAT_SCALES[name]
        limit = torch.finfo(torch_dtype).max
        over = target.abs() > limit
        if over.any():
            raise ValueError(
                f"a scale or offset of {target.abs()[over].max().item():.6g} does not fit scale dtype "
                f"{name!r} (max {limit:.6g}): the weights are too large for {name} scales; use "
                "fp32 scales, or bf16 for a wider range"
            )
        stored = target.clamp(max=limit).to(torch_dtype)
        if up:
            int_view = torch.int32 if torch_dtype == torch.float32 else torch.int16
            stored = _bump_up(stored, stored.float() < target, int_view, limit)
        return stored, stored.float()
    if name == "ue4m3":
        codes = encode(dtype, target, saturate=True)
        if up:
            top = encode(dtype, torch.tensor(dtype.max_value)).item()
            codes = torch.where((decode(dtype, codes) < target) & (codes < top), codes + 1, codes)
        return codes.view(torch.float8_e4m3fn), decode(dtype, codes)
    if name == "e8m0":
        raise ValueError("e8m0 scales follow the MX shared-exponent rule: use mx_scale(amax, elem)")
    raise ValueError(f"scale dtype {name!r} is not supported: use fp32, fp16, bf16 or ue4m3")


def mx_scale(amax: torch.Tensor, elem: ScalarType) -> tuple[torch.Tensor, torch.Tensor]:
    """MX block scales from block amax: (uint8 e8m0 codes, float32 values 2^X)."""
    x = mx_exponent(amax, elem)
    codes = (x + 127).to(torch.uint8)
    return codes, decode("e8m0", codes)


def scale_values(stored: torch.Tensor, dtype: ScalarType) -> torch.Tensor:
    """float32 values of stored scales (fp types as is, e8m0 uint8 codes, ue4m3 as float8_e4m3fn)."""
    if dtype.name == "e8m0":
        if stored.dtype != torch.uint8:
            raise TypeError(f"e8m0 scales are stored as uint8 codes, got dtype {stored.dtype}")
        return decode(dtype, stored)
    return stored.float()


def global_scale(amax: torch.Tensor, elem: ScalarType, scale_dtype: ScalarType) -> torch.Tensor:
    """Second-level fp32 scale from the tensor (or per-expert) amax; see the module docstring."""
    span = element_max(elem) * (448.0 if scale_dtype.name == "ue4m3" else 1.0)
    g = div(amax.float(), span)
    return torch.where(g > 0, g, torch.ones_like(g))
