"""Exact, vectorized encode/decode between float tensors and the codes of every `ScalarType`.

Codes are the type's own bit patterns: two's complement for `int`, plain binary for `uint`, sign /
exponent / mantissa fields for floats; `uint8` for types of at most 8 bits, `int32` for fp16, bf16
and fp32 (whose codes are their raw bits, zero-extended). The canonical weight form stores integer
codes as offset binary instead; `to_canonical` / `from_canonical` convert between the two.

Rounding rules implemented by `encode` (inputs are taken as float32 first):
- eXmY floats: round to nearest, ties to the even code (mantissa LSB 0), subnormals included; the
  rounding is done with an unbounded exponent, so a value overflows exactly when it rounds above the
  largest finite value. On overflow: `saturate=True` gives ±max (±inf inputs too, except for ieee
  types, which keep inf); `saturate=False` gives the NaN pattern for "fn" types (e4m3, ue4m3) and
  ±inf for ieee types (e5m2). "finite" types (e2m1, e2m3, e3m2) always saturate. NaN inputs give
  the type's NaN, or raise for types without one.
- Unsigned floats (ue4m3): negative inputs (other than -0) have no code and give NaN (0 for
  unsigned types without NaN).
- e8m0 (2^(code-127), no zero, code 255 = NaN): nearest power of two, ties (1.5 * 2^e) to the
  larger one, as torch's and ml_dtypes' casts do for float32-normal inputs; values below 2^-127
  give code 0; values <= 0 and NaN give 255. (For float32-subnormal inputs, x < 2^-126, both
  libraries round every x > 2^-127 up to 2^-126; this encoder keeps the nearest-power rule there.) MX scale selection does not use this rounding: it takes floor(log2(amax)) - emax
  of the element type (OCP MX spec), see `numerics.scales.mx_exponent`.
- Integers: round half to even, then clamp to [min_int, max_int]; NaN raises.
"""

from __future__ import annotations

import math
from functools import cache

import torch

from ..spec.scalar import ScalarType
from .scalar import code_table

_WIDE_TORCH = {"fp16": torch.float16, "bf16": torch.bfloat16, "fp32": torch.float32}


def _as_type(t: ScalarType | str) -> ScalarType:
    return ScalarType.parse(t)


@cache
def _table(t: ScalarType, device: str) -> torch.Tensor:
    # Cached per device; internal callers only index it, never write to it.
    return torch.tensor(code_table(t), dtype=torch.float32, device=device)


def value_table(t: ScalarType | str, device: torch.device | str = "cpu") -> torch.Tensor:
    """float32 tensor of the value of every code 0 .. 2^bits-1 (types of at most 8 bits)."""
    return _table(_as_type(t), str(device)).clone()


def _pow2(k: torch.Tensor) -> torch.Tensor:
    """Exact float32 2^k for integer k in [-126, 127], built from the exponent bits."""
    return ((k.to(torch.int32) + 127) << 23).view(torch.float32)


def _check_no_nan(t: ScalarType, x: torch.Tensor) -> None:
    if torch.isnan(x).any():
        raise ValueError(
            f"input holds NaN but {t.name} has no NaN code: remove or replace the NaNs "
            "(e.g. torch.nan_to_num) before encoding"
        )


def _encode_int(t: ScalarType, x: torch.Tensor) -> torch.Tensor:
    _check_no_nan(t, x)
    q = torch.round(x).clamp(t.min_int, t.max_int).to(torch.int32)
    return (q & ((1 << t.bits) - 1)).to(torch.uint8)


def _encode_e8m0(t: ScalarType, x: torch.Tensor, saturate: bool) -> torch.Tensor:
    nan_code = (1 << t.exponent) - 1
    top = nan_code - 1 if saturate else nan_code
    mant, ex = torch.frexp(torch.where(torch.isfinite(x) & (x > 0), x, 1.0))
    # x = mant * 2^ex with mant in [0.5, 1): the nearer power is 2^(ex-1) unless mant >= 0.75.
    e = ex.to(torch.int32) - 1 + (mant >= 0.75).to(torch.int32)
    code = (e + t.bias).clamp(min=0)
    code = torch.where(code >= nan_code, top, code)
    code = torch.where(x == float("inf"), top, code)
    code = torch.where(torch.isnan(x) | (x <= 0), nan_code, code)
    return code.to(torch.uint8)


def _overflow_code(t: ScalarType, max_code: int, saturate: bool) -> int:
    """Magnitude code given to values beyond the largest finite one."""
    if saturate or t.special == "finite":
        return max_code
    if t.special == "ieee":
        return ((1 << t.exponent) - 1) << t.mantissa  # inf
    return (1 << (t.bits - (1 if t.signed else 0))) - 1  # fn: the all-ones NaN pattern


def _encode_float(t: ScalarType, x: torch.Tensor, saturate: bool) -> torch.Tensor:
    if not t.has_nan:
        _check_no_nan(t, x)
    m_bits = t.mantissa
    e_min = 1 - t.bias
    ax = x.abs()
    finite = torch.isfinite(ax)
    _, ex = torch.frexp(torch.where(finite, ax, 0.0))
    # Exponent of the leading bit, clamped so that subnormals (and zero) share the quantum of e_min.
    e = torch.where(ax > 0, ex.to(torch.int32) - 1, e_min).clamp(min=e_min)
    n = torch.round(torch.where(finite, ax, 0.0) * _pow2(m_bits - e))
    # Codes of positive values are monotonic: (e - e_min) binades of 2^m codes, plus n.
    mag = ((e - e_min) << m_bits) + n.to(torch.int32)
    max_code = _max_magnitude_code(t)
    inf_keep = torch.isinf(ax) & (t.special == "ieee")
    over = (mag > max_code) | (torch.isinf(ax) & ~inf_keep)
    mag = torch.where(over, _overflow_code(t, max_code, saturate), mag)
    if t.special == "ieee":
        mag = torch.where(inf_keep, ((1 << t.exponent) - 1) << m_bits, mag)
    nan_mag = (1 << (t.bits - (1 if t.signed else 0))) - 1
    mag = torch.where(torch.isnan(x), nan_mag, mag)
    if t.signed:
        code = mag | (torch.signbit(x).to(torch.int32) << (t.bits - 1))
    else:  # a negative value has no code: NaN where the type has one, else the bottom (0)
        code = torch.where(torch.signbit(x) & (ax > 0), nan_mag if t.has_nan else 0, mag)
    return code.to(torch.uint8)


@cache
def _max_magnitude_code(t: ScalarType) -> int:
    """Code of the largest finite value, read off the exact table (positive codes are monotonic)."""
    table = code_table(t)
    limit = 1 << (t.bits - (1 if t.signed else 0))
    return max(c for c in range(limit) if math.isfinite(table[c]))


def _encode_wide(t: ScalarType, x: torch.Tensor, saturate: bool) -> torch.Tensor:
    dtype = _WIDE_TORCH[t.name]
    y = x.to(dtype)
    if saturate:
        limit = torch.tensor(t.max_value, dtype=dtype)
        y = torch.where(torch.isinf(y) & torch.isfinite(x), torch.copysign(limit, y), y)
    if t.bits == 32:
        return y.view(torch.int32)
    return y.view(torch.int16).to(torch.int32) & 0xFFFF


def encode(t: ScalarType | str, x: torch.Tensor, saturate: bool = True) -> torch.Tensor:
    """Round float tensor `x` to codes of type `t` (see the module docstring for the rules)."""
    t = _as_type(t)
    if not x.is_floating_point():
        raise TypeError(f"encode takes a floating-point tensor, got dtype {x.dtype}")
    if t.bits > 8:
        return _encode_wide(t, x, saturate)
    xf = x.float()
    if t.is_integer:
        return _encode_int(t, xf)
    if t.is_exponent_only:
        return _encode_e8m0(t, xf, saturate)
    return _encode_float(t, xf, saturate)


def _decode_wide(t: ScalarType, codes: torch.Tensor) -> torch.Tensor:
    c = codes.to(torch.int64)
    if t.bits == 32:
        c = c & 0xFFFFFFFF
        return torch.where(c >= 1 << 31, c - (1 << 32), c).to(torch.int32).view(torch.float32)
    c = c & 0xFFFF
    c = torch.where(c >= 1 << 15, c - (1 << 16), c).to(torch.int16)
    return c.view(_WIDE_TORCH[t.name]).float()


def decode(t: ScalarType | str, codes: torch.Tensor) -> torch.Tensor:
    """Exact float32 values of codes of type `t`.

    Only the low `bits` bits of each code are read, so signed integer values (-8..7 for int4) and
    their two's complement patterns (8..15) decode alike.
    """
    t = _as_type(t)
    if codes.is_floating_point():
        raise TypeError(f"decode takes integer codes, got dtype {codes.dtype}")
    if t.bits > 8:
        return _decode_wide(t, codes)
    index = codes.to(torch.int64) & ((1 << t.bits) - 1)
    return _table(t, str(codes.device))[index]


def round_to(t: ScalarType | str, x: torch.Tensor, saturate: bool = True) -> torch.Tensor:
    """float32 values of `x` rounded onto the grid of `t`: decode(t, encode(t, x))."""
    return decode(t, encode(t, x, saturate))


def to_canonical(t: ScalarType | str, codes: torch.Tensor) -> torch.Tensor:
    """Type codes -> canonical codes: offset binary for signed integers (u = q + 2^(b-1)), else as is."""
    t = _as_type(t)
    if t.kind == "int":
        return codes ^ (1 << (t.bits - 1))
    return codes


def from_canonical(t: ScalarType | str, codes: torch.Tensor) -> torch.Tensor:
    """Canonical codes -> type codes (flipping the sign bit is its own inverse)."""
    return to_canonical(t, codes)


def canonical_table(t: ScalarType | str, device: torch.device | str = "cpu") -> torch.Tensor:
    """float32 value of every canonical code 0 .. 2^bits-1 (types of at most 8 bits)."""
    t = _as_type(t)
    codes = to_canonical(t, torch.arange(1 << t.bits, dtype=torch.int64))
    return value_table(t, device)[codes.to(device)]
