"""encode/decode of every scalar type against independent encoders, bit for bit.

Independent encoders: torch's float8 casts (e4m3fn saturating, e5m2, e8m0fnu) and ml_dtypes
(e2m1, e2m3, e3m2, e4m3fn non-saturating, e5m2, IEEE-style e4m3 / e3m4, e8m0). Types neither
library has (e.g. e3m4fn, e6m1, ue5m2) are checked against a brute-force nearest-value search over
the exact code table in float64.
"""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np
import pytest
import torch

from humming_core.numerics.codec import (
    canonical_table,
    decode,
    encode,
    from_canonical,
    round_to,
    to_canonical,
    value_table,
)
from humming_core.numerics.scalar import code_table, small_float_types
from humming_core.spec import scalar

# (type name, ml_dtypes dtype, saturate flag that reproduces it)
ML_DTYPES = [
    ("e2m1", ml_dtypes.float4_e2m1fn, True),
    ("e2m3", ml_dtypes.float6_e2m3fn, True),
    ("e3m2", ml_dtypes.float6_e3m2fn, True),
    ("e4m3", ml_dtypes.float8_e4m3fn, False),
    ("e5m2", ml_dtypes.float8_e5m2, False),
    ("e4m3ieee", ml_dtypes.float8_e4m3, False),
    ("e3m4ieee", ml_dtypes.float8_e3m4, False),
]
# torch's e4m3fn cast saturates (large values and inf -> ±448) in some releases (2.13) and gives NaN
# in others (2.11); its e5m2 cast overflows to inf.
TORCH_E4M3_SATURATES = (
    torch.tensor([1000.0]).to(torch.float8_e4m3fn).view(torch.uint8).item() == 126
)
TORCH_DTYPES = [
    ("e4m3", torch.float8_e4m3fn, TORCH_E4M3_SATURATES),
    ("e5m2", torch.float8_e5m2, False),
]


SMALL_FLOATS = [t.name for t in small_float_types()]


def _probe_values(t, n_random: int = 4000) -> torch.Tensor:
    """Every representable value, every midpoint (ties), one float32 ulp either side of each, the
    subnormal range, overflow, signed zeros, inf and random magnitudes over many binades."""
    table = torch.tensor([v for v in code_table(t) if math.isfinite(v)], dtype=torch.float64)
    vals = torch.unique(table).float()
    mids = ((vals[1:].double() + vals[:-1].double()) / 2).float()
    pts = torch.cat([vals, mids])
    near = torch.cat(
        [
            torch.nextafter(pts, torch.tensor(math.inf)),
            torch.nextafter(pts, torch.tensor(-math.inf)),
        ]
    )
    g = torch.Generator().manual_seed(len(t.name))
    scale = torch.exp2(torch.randint(-30, 30, (n_random,), generator=g).float())
    rand = torch.randn(n_random, generator=g) * scale
    top = float(max(v for v in code_table(t) if math.isfinite(v)))
    big = torch.tensor([top * f for f in (1.01, 1.06, 1.0625, 1.125, 1.2, 2.0, 1e6)])
    special = torch.tensor([0.0, -0.0, 1e-45, -1e-45, 1e-38, math.inf, -math.inf])
    out = torch.cat([pts, near, rand, big, -big, special])
    return out if t.signed else out[~torch.signbit(out)]


def _nearest_even(t, x: torch.Tensor, saturate: bool) -> torch.Tensor:
    """Brute force: the code whose value is nearest to x (float64), ties to the even code."""
    table = torch.tensor(code_table(t), dtype=torch.float64)
    finite = torch.isfinite(table)
    codes = torch.arange(table.numel())[finite]
    vals = table[finite]
    xd = x.double()
    dist = (xd[:, None] - vals[None, :]).abs()
    best = dist.min(dim=1, keepdim=True).values
    tie_rank = (dist == best).long() * (2 - (codes[None, :] % 2))  # prefer even codes
    code = codes[tie_rank.argmax(dim=1)]
    # Signed zero keeps the sign of x.
    if t.signed:
        neg_zero = (vals == 0) & (codes >= 1 << (t.bits - 1))
        zero_neg = codes[neg_zero][0] if neg_zero.any() else 0
        code = torch.where((table[code] == 0) & torch.signbit(x), zero_neg, code)
    # Overflow: beyond max + half a step of the next binade (RNE with unbounded exponent).
    top = float(vals.max())
    step = 2.0 ** (max(math.floor(math.log2(top)), 1 - t.bias) - t.mantissa)
    limit = top + step / 2
    max_code = int(codes[vals == top][0])
    over = (xd.abs() > limit) | ((xd.abs() == limit) & (max_code % 2 == 1))
    if saturate or t.special == "finite":
        over_code = torch.full_like(code, max_code)
    elif t.special == "ieee":
        over_code = torch.full_like(code, ((1 << t.exponent) - 1) << t.mantissa)
    else:
        over_code = torch.full_like(code, (1 << (t.bits - int(t.signed))) - 1)
    over_code = over_code | (torch.signbit(x).long() << (t.bits - 1) if t.signed else 0)
    return torch.where(over, over_code, code)


@pytest.mark.parametrize(("name", "dtype", "saturate"), ML_DTYPES)
def test_code_table_matches_ml_dtypes(name, dtype, saturate):
    t = scalar(name)
    codes = np.arange(1 << t.bits, dtype=np.uint8)
    theirs = torch.from_numpy(codes.view(dtype).astype(np.float32))
    ours = value_table(t)
    assert torch.equal(torch.isnan(ours), torch.isnan(theirs))
    ok = ~torch.isnan(ours)
    assert torch.equal(ours[ok], theirs[ok])
    # And every finite value encodes back to its own code (signed zero included).
    assert torch.equal(encode(t, ours[ok], saturate=saturate), torch.from_numpy(codes)[ok])


@pytest.mark.parametrize(("name", "dtype", "saturate"), ML_DTYPES)
def test_rounding_matches_ml_dtypes(name, dtype, saturate):
    t = scalar(name)
    x = _probe_values(t)
    theirs = torch.from_numpy(x.numpy().astype(dtype).view(np.uint8).copy())
    ours = encode(t, x, saturate=saturate)
    nan = torch.isnan(decode(t, theirs))
    assert torch.equal(torch.isnan(decode(t, ours)), nan)
    assert torch.equal(ours[~nan], theirs[~nan])


@pytest.mark.parametrize(("name", "dtype", "saturate"), TORCH_DTYPES)
def test_code_table_and_rounding_match_torch(name, dtype, saturate):
    t = scalar(name)
    codes = torch.arange(256, dtype=torch.uint8)
    theirs = codes.view(dtype).float()
    ours = value_table(t)
    assert torch.equal(torch.isnan(ours), torch.isnan(theirs))
    assert torch.equal(ours[~torch.isnan(ours)], theirs[~torch.isnan(theirs)])
    x = torch.cat([_probe_values(t), torch.tensor([math.nan])])
    assert torch.equal(encode(t, x, saturate=saturate), x.to(dtype).view(torch.uint8))


def test_e8m0_matches_torch_and_ml_dtypes():
    t = scalar("e8m0")
    codes = torch.arange(256, dtype=torch.uint8)
    torch_vals = codes.view(torch.float8_e8m0fnu).float()
    ours = value_table(t)
    assert torch.equal(torch.isnan(ours), torch.isnan(torch_vals))
    assert torch.equal(ours[:255], torch_vals[:255])
    assert torch.equal(encode(t, ours[:255]), codes[:255])
    g = torch.Generator().manual_seed(0)
    x = torch.rand(20000, generator=g) * torch.exp2(
        torch.randint(-140, 140, (20000,), generator=g).float()
    )
    pows = torch.exp2(torch.arange(-127, 128).float())
    x = torch.cat(
        [
            x,
            pows,
            pows * 1.5,
            torch.nextafter(pows * 1.5, torch.tensor(0.0)),
            torch.tensor([math.inf]),
        ]
    )
    # Both libraries round float32-subnormal inputs (x < 2^-126) by their raw mantissa bits; the
    # nearest-power rule is checked there separately below.
    x = x[x >= 2.0**-126]
    # Ties (1.5 * 2^e) go to the larger power in both libraries; torch also reads 0/negatives, ml_dtypes gives NaN.
    assert torch.equal(encode(t, x, saturate=False), x.to(torch.float8_e8m0fnu).view(torch.uint8))
    x = torch.cat([x, torch.tensor([0.0, -1.0, math.nan])])
    theirs = torch.from_numpy(x.numpy().astype(ml_dtypes.float8_e8m0fnu).view(np.uint8).copy())
    assert torch.equal(encode(t, x, saturate=False), theirs)
    assert encode(t, torch.tensor([3.0 * 2.0**127]), saturate=True).item() == 254
    tiny = torch.tensor([2.0**-127, 1.49 * 2.0**-127, 1.5 * 2.0**-127, 1e-44, 2.0**-149])
    assert encode(t, tiny).tolist() == [0, 0, 1, 0, 0]


def test_ue4m3_is_the_positive_half_of_e4m3fn():
    t = scalar("ue4m3")
    assert t.bits == 7
    codes = torch.arange(128, dtype=torch.uint8)
    theirs = codes.view(torch.float8_e4m3fn).float()
    assert torch.equal(value_table(t)[:127], theirs[:127]) and torch.isnan(value_table(t)[127])
    x = _probe_values(t)
    expected = x.to(torch.float8_e4m3fn).view(torch.uint8)
    assert torch.equal(encode(t, x, saturate=TORCH_E4M3_SATURATES), expected)
    assert encode(t, torch.tensor([-1.0])).item() == 127  # no sign bit: NaN
    assert encode(t, torch.tensor([-0.0])).item() == 0
    assert encode("ue3m2fin", torch.tensor([-1.0])).item() == 0  # no NaN to give: the bottom


@pytest.mark.parametrize("name", SMALL_FLOATS)
def test_every_small_float_against_brute_force(name):
    t = scalar(name)
    if t.is_exponent_only:
        pytest.skip("e8m0 rounds ties upward, tested against torch and ml_dtypes above")
    x = _probe_values(t, n_random=1000)
    x = x[torch.isfinite(x) | (t.special != "finite")]
    for saturate in (True, False):
        expected = _nearest_even(t, x, saturate)
        if t.special == "ieee":  # ±inf inputs stay inf in both modes
            inf_code = ((1 << t.exponent) - 1) << t.mantissa
            sign = torch.signbit(x).long() << (t.bits - 1)
            expected = torch.where(torch.isinf(x), inf_code | sign, expected)
        assert torch.equal(encode(t, x, saturate=saturate).long(), expected), (name, saturate)
    # decode agrees with the pure-Python table for every code
    assert torch.equal(
        decode(t, torch.arange(1 << t.bits)).nan_to_num(7.0), value_table(t).nan_to_num(7.0)
    )


@pytest.mark.parametrize("bits", range(1, 9))
def test_integers_round_half_even_and_clamp(bits):
    for kind in ("int", "uint"):
        t = scalar(f"{kind}{bits}")
        x = torch.tensor(
            [-1000.0, -2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 3.49, 3.5, 1000.0, t.max_int + 0.5]
        )
        q = torch.round(x).clamp(t.min_int, t.max_int)  # torch.round is half-to-even
        assert torch.equal(decode(t, encode(t, x)), q)
        table = torch.tensor([v for v in code_table(t)])
        assert table.min() == t.min_int and table.max() == t.max_int
    # signed values and their two's complement patterns decode alike
    t = scalar(f"int{bits}")
    v = torch.arange(t.min_int, t.max_int + 1)
    assert torch.equal(decode(t, v), v.float())
    assert torch.equal(decode(t, v & ((1 << bits) - 1)), v.float())


def test_integer_nan_raises_with_advice():
    with pytest.raises(ValueError, match="no NaN code"):
        encode("int4", torch.tensor([math.nan]))
    with pytest.raises(ValueError, match="no NaN code"):
        encode("e2m1", torch.tensor([1.0, math.nan]))


@pytest.mark.parametrize("name", ["fp16", "bf16", "fp32"])
def test_wide_types_pass_through(name):
    t = scalar(name)
    dtype = t.torch_dtype()
    g = torch.Generator().manual_seed(1)
    x = torch.randn(1000, generator=g) * 1e3
    x = torch.cat([x, torch.tensor([0.0, -0.0, math.inf, -math.inf, 1e-40])])
    assert torch.equal(decode(t, encode(t, x)), x.to(dtype).float())
    if name == "fp16":
        big = torch.tensor([70000.0, -1e9])
        assert torch.equal(
            decode(t, encode(t, big, saturate=True)), torch.tensor([65504.0, -65504.0])
        )
        assert torch.isinf(decode(t, encode(t, big, saturate=False))).all()


@pytest.mark.parametrize("name", ["int4", "int3", "uint4", "e2m1", "e4m3", "int8"])
def test_canonical_offset_binary(name):
    t = scalar(name)
    codes = torch.arange(1 << t.bits, dtype=torch.uint8)
    canon = to_canonical(t, codes)
    assert torch.equal(from_canonical(t, canon), codes)
    table = canonical_table(t)
    assert torch.equal(
        table.nan_to_num(99.0), value_table(t)[from_canonical(t, codes).long()].nan_to_num(99.0)
    )
    if t.kind == "int":  # u = q + 2^(b-1): canonical codes are sorted by value
        assert torch.equal(table, torch.arange(t.min_int, t.max_int + 1).float())


def test_round_to_is_decode_of_encode():
    x = torch.linspace(-8, 8, 101)
    assert torch.equal(round_to("e2m1", x), decode("e2m1", encode("e2m1", x)))
    assert round_to("e2m1", torch.tensor([2.5])).item() == 2.0  # tie to even mantissa
    assert round_to("e2m1", torch.tensor([3.5])).item() == 4.0
