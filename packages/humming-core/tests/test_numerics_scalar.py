"""Every scalar type of at most 8 bits: its name round-trips, its exact code table has the shape its
convention promises, and ScalarType's derived limits agree with the table."""

from __future__ import annotations

import math

import pytest

from humming_core.numerics.scalar import (
    code_table,
    representable_values,
    small_float_types,
    weight_values,
)
from humming_core.spec import ScalarType, scalar

SMALL_FLOATS = [t.name for t in small_float_types()]
INTEGERS = [f"{kind}{b}" for kind in ("int", "uint") for b in range(1, 9)]
ALL_SMALL = INTEGERS + SMALL_FLOATS
# e1mY with the ieee convention has no normal binade (its only non-zero exponent is inf/NaN);
# ScalarType.max_value still reads exponent 0 as normal there.


def test_the_enumeration_covers_the_ocp_types():
    for name in (
        "e2m1",
        "e2m3",
        "e3m2",
        "e4m3",
        "e5m2",
        "ue4m3",
        "e8m0",
        "e4m3ieee",
        "e5m2fn",
        "e3m4",
    ):
        assert name in SMALL_FLOATS
    assert len(SMALL_FLOATS) > 100


@pytest.mark.parametrize("name", ALL_SMALL)
def test_name_round_trip(name):
    t = scalar(name)
    assert t.name == name
    assert ScalarType.parse(str(t)) == t
    assert ScalarType.model_validate_json(t.model_dump_json()) == t


@pytest.mark.parametrize("name", SMALL_FLOATS)
def test_code_table_follows_its_convention(name):
    t = scalar(name)
    table = code_table(t)
    assert len(table) == 1 << t.bits
    nans = sum(math.isnan(v) for v in table)
    infs = sum(math.isinf(v) for v in table)
    signs = 2 if t.signed else 1
    if t.special == "ieee":
        assert (nans, infs) == (signs * ((1 << t.mantissa) - 1), signs)
    elif t.special == "fn":
        assert (nans, infs) == (signs, 0)
    else:
        assert (nans, infs) == (0, 0)
    # positive codes are ordered by value (what lets the encoder work on code magnitudes)
    half = 1 << (t.bits - int(t.signed))
    finite = [v for v in table[:half] if math.isfinite(v)]
    assert finite == sorted(finite) and len(set(finite)) == len(finite)
    if t.signed:  # the sign bit mirrors every value
        for c in range(half):
            a, b = table[c], table[c + half]
            assert (math.isnan(a) and math.isnan(b)) or a == -b


@pytest.mark.parametrize(
    "name",
    [n for n in SMALL_FLOATS],
)
def test_limits_match_the_table(name):
    t = scalar(name)
    vals = representable_values(t)
    assert max(vals) == t.max_value
    assert min(v for v in vals if v > 0) == t.min_subnormal


@pytest.mark.parametrize("name", INTEGERS)
def test_integer_tables(name):
    t = scalar(name)
    assert sorted(representable_values(t)) == [float(v) for v in range(t.min_int, t.max_int + 1)]
    span = (1 << t.bits) - 1
    assert weight_values(t, "int") == frozenset(float(v) for v in range(-span, span + 1))
