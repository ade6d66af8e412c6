"""ScalarType names parse and print back; derived limits match the OCP/IEEE definitions."""

from __future__ import annotations

import pytest

from humming_core.spec import ScalarType, scalar

NAMES = (
    [f"int{b}" for b in range(1, 9)]
    + [f"uint{b}" for b in range(1, 9)]
    + [
        "e2m1",
        "e3m2",
        "e2m3",
        "e4m3",
        "e5m2",
        "e3m4",
        "e4m2",
        "e8m0",
        "ue4m3",
        "fp16",
        "bf16",
        "fp32",
        "e4m3ieee",
        "e5m2fn",
    ]
)


@pytest.mark.parametrize("name", NAMES)
def test_round_trip(name):
    t = scalar(name)
    assert t.name == name
    assert ScalarType.parse(t.name) == t
    assert ScalarType.model_validate_json(t.model_dump_json()) == t


@pytest.mark.parametrize(
    ("name", "maximum", "tiny"),
    [
        ("e2m1", 6.0, 0.5),
        ("e2m3", 7.5, 0.125),
        ("e3m2", 28.0, 0.0625),
        ("e4m3", 448.0, 2.0**-9),
        ("e5m2", 57344.0, 2.0**-16),
        ("ue4m3", 448.0, 2.0**-9),
        ("e8m0", 2.0**127, 2.0**-127),
        ("fp16", 65504.0, 2.0**-24),
        ("int4", 7.0, 1.0),
        ("uint3", 7.0, 1.0),
    ],
)
def test_limits(name, maximum, tiny):
    t = scalar(name)
    assert t.max_value == maximum
    assert t.min_subnormal == tiny


def test_conventions():
    assert scalar("e4m3").special == "fn" and not scalar("e4m3").has_inf
    assert scalar("e5m2").has_inf and scalar("e5m2").has_nan
    assert not scalar("e2m1").has_nan
    assert scalar("int4").min_int == -8 and scalar("uint4").max_int == 15


@pytest.mark.parametrize("bad", ["int9", "uint0", "e9m2", "float4", "e0m3", ""])
def test_bad_names_say_what_is_allowed(bad):
    with pytest.raises(ValueError, match=r"int1\.\.int8|not supported|bits="):
        scalar(bad)


def test_ieee_needs_two_exponent_bits():
    with pytest.raises(ValueError, match="has no normal numbers"):
        scalar("e1m2ieee")


def test_exponent_only_names_round_trip():
    assert scalar("e5m0").name == "e5m0" and not scalar("e5m0").signed
    assert scalar("ue5m0") == scalar("e5m0")
