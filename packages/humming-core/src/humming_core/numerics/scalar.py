"""Exact value tables of scalar types (pure Python, used by spec validation and as test oracles)."""

from __future__ import annotations

import math
from functools import cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    # Spec validation imports this module while humming_core.spec is initialising: importing the
    # spec package here at run time would close that cycle.
    from ..spec.scalar import ScalarType


def decode_code(t: ScalarType, code: int) -> float:
    """The exact value of one stored code (ints as two's complement; nan/inf as Python floats)."""
    if t.is_integer:
        if t.kind == "int" and code >= 1 << (t.bits - 1):
            return float(code - (1 << t.bits))
        return float(code)
    if t.is_exponent_only:
        return math.nan if code == (1 << t.exponent) - 1 else 2.0 ** (code - t.bias)
    m_bits = t.mantissa
    sign = -1.0 if t.signed and code >> (t.bits - 1) & 1 else 1.0
    exp = (code >> m_bits) & ((1 << t.exponent) - 1)
    man = code & ((1 << m_bits) - 1)
    e_all = (1 << t.exponent) - 1
    if t.special == "ieee" and exp == e_all:
        return sign * math.inf if man == 0 else math.nan
    if t.special == "fn" and exp == e_all and man == (1 << m_bits) - 1:
        return math.nan
    if exp == 0:
        return sign * man * 2.0 ** (1 - t.bias - m_bits)
    return sign * (1 + man / (1 << m_bits)) * 2.0 ** (exp - t.bias)


@cache
def code_table(t: ScalarType) -> tuple[float, ...]:
    """Values of every code 0 .. 2^bits-1 (fp16/bf16/fp32 excluded: too many codes)."""
    if t.bits > 8:
        raise ValueError(f"code_table covers types of at most 8 bits, not {t.name}")
    return tuple(decode_code(t, c) for c in range(1 << t.bits))


@cache
def representable_values(t: ScalarType) -> frozenset[float]:
    """Every finite value the type can hold exactly."""
    if t.bits > 8:
        raise ValueError(f"representable_values covers types of at most 8 bits, not {t.name}")
    return frozenset(v for v in code_table(t) if math.isfinite(v))


def weight_values(t: ScalarType, zero_point: str = "none") -> frozenset[float]:
    """Values a weight of type t takes before its scale: codes, or codes minus an integer zero point."""
    if t.is_float:
        return representable_values(t)
    if zero_point == "int":
        span = (1 << t.bits) - 1
        return frozenset(float(v) for v in range(-span, span + 1))
    return frozenset(float(v) for v in range(t.min_int, t.max_int + 1))


@cache
def small_float_types() -> tuple[ScalarType, ...]:
    """Every float type of at most 8 bits that ScalarType accepts, in every special-value
    convention (e2m1, e4m3, e4m3ieee, ue4m3, e8m0, ...): the set conformance tests sweep."""
    from ..spec.scalar import ScalarType

    found: dict[str, ScalarType] = {}
    for e in range(1, 9):
        for m in range(8):
            for signed in (True, False):
                if e + m + int(signed) > 8 or (m == 0 and (signed or e != 8)):
                    continue
                base = f"{'' if signed else 'u'}e{e}m{m}"
                for suffix in ("", "fn", "ieee", "fin"):
                    try:
                        t = ScalarType.parse(base + suffix)
                    except ValueError:
                        continue
                    found[t.name] = t
    return tuple(found[name] for name in sorted(found))
