"""QuantSpec validation: every rule rejects bad input with a message naming the field and what is allowed."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from humming_core.spec import (
    PRESETS,
    ActSpec,
    EpilogueSpec,
    QuantSpec,
    ScaleSpec,
    WeightSpec,
    preset,
)

G128 = {"granularity": "group", "group_size": 128}


def _spec(weight=None, act=None, **kw):
    return QuantSpec(
        weight=weight or {"dtype": "int4", "scale": G128}, act=act or {"dtype": "fp16"}, **kw
    )


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_presets_validate_and_round_trip(name):
    spec = PRESETS[name]
    text = spec.to_json()
    assert json.loads(text)["version"] == 1
    assert QuantSpec.from_json(text) == spec
    assert preset(name.lower()) is spec


def test_json_version_is_checked():
    data = json.loads(PRESETS["W4A16_G128"].to_json())
    data["version"] = 2
    with pytest.raises(ValueError, match="version 2 is not supported"):
        QuantSpec.from_json(json.dumps(data))


def test_unknown_preset_lists_choices():
    with pytest.raises(KeyError, match="W4A16_G128"):
        preset("W5A16")


# Each case: constructor, kwargs, substrings the message must contain (field/value and what is allowed).
RULES = [
    (
        "group size not a power of two",
        ScaleSpec,
        {"granularity": "group", "group_size": 100},
        ["group_size=100", "power of two >= 16"],
    ),
    (
        "group size below 16",
        ScaleSpec,
        {"granularity": "group", "group_size": 8},
        ["group_size=8", ">= 16"],
    ),
    (
        "group size missing",
        ScaleSpec,
        {"granularity": "group"},
        ["group_size=None", "required for granularity 'group'"],
    ),
    (
        "group size on channel",
        ScaleSpec,
        {"granularity": "channel", "group_size": 128},
        ["group_size=128", "not allowed otherwise"],
    ),
    (
        "block missing",
        ScaleSpec,
        {"granularity": "block"},
        ["block=None", "required for granularity 'block'"],
    ),
    (
        "block not pow2",
        ScaleSpec,
        {"granularity": "block", "block": (128, 100)},
        ["block[1]", "100", "power of two"],
    ),
    (
        "bad scale dtype",
        ScaleSpec,
        {"granularity": "channel", "dtype": "int8"},
        ["'int8'", "fp32, fp16, bf16, e8m0, ue4m3"],
    ),
    (
        "e8m0 needs g32",
        ScaleSpec,
        {"granularity": "group", "group_size": 64, "dtype": "e8m0"},
        ["dtype='e8m0'", "group_size 32"],
    ),
    (
        "ue4m3 needs g16",
        ScaleSpec,
        {"granularity": "group", "group_size": 32, "dtype": "ue4m3"},
        ["dtype='ue4m3'", "group_size 16"],
    ),
    (
        "symmetric int1",
        WeightSpec,
        {"dtype": "int1", "scale": G128},
        ["dtype='int1'", "uint1", "zero_point='int'"],
    ),
    ("weight dtype e8m0", WeightSpec, {"dtype": "e8m0", "scale": G128}, ["'e8m0'", "int1..int8"]),
    (
        "weight dtype fp16",
        WeightSpec,
        {"dtype": "fp16", "scale": G128},
        ["'fp16'", "at most 8 bits"],
    ),
    (
        "zero point on float",
        WeightSpec,
        {"dtype": "e2m1", "scale": G128, "zero_point": "int"},
        ["zero_point='int'", "e2m1", "only to integer weights"],
    ),
    (
        "zero point with e8m0",
        WeightSpec,
        {
            "dtype": "uint4",
            "zero_point": "int",
            "scale": {"granularity": "group", "group_size": 32, "dtype": "e8m0"},
        },
        ["zero_point='int'", "'e8m0'", "fp32, fp16 or bf16"],
    ),
    (
        "zero point per tensor",
        WeightSpec,
        {"dtype": "uint4", "zero_point": "int", "scale": {"granularity": "tensor"}},
        ["granularity 'tensor'", "per group or per channel"],
    ),
    (
        "global scale per channel",
        WeightSpec,
        {"dtype": "e4m3", "global_scale": True, "scale": {"granularity": "channel"}},
        ["global_scale=True", "'channel'", "group or block"],
    ),
    (
        "ue4m3 without global",
        WeightSpec,
        {"dtype": "e2m1", "scale": {"granularity": "group", "group_size": 16, "dtype": "ue4m3"}},
        ["'ue4m3'", "global_scale=True"],
    ),
    ("bad act dtype", ActSpec, {"dtype": "int3"}, ["'int3'", "fp16, bf16, int8, e4m3"]),
    (
        "wide act quantized",
        ActSpec,
        {"dtype": "fp16", "quant": "dynamic"},
        ["'fp16'", "quant must be 'none'"],
    ),
    ("quant act without mode", ActSpec, {"dtype": "int8"}, ["'int8'", "'dynamic' or 'static'"]),
    (
        "quant act without granularity",
        ActSpec,
        {"dtype": "int8", "quant": "dynamic"},
        ["granularity is required", "'token'"],
    ),
    (
        "act group missing size",
        ActSpec,
        {"dtype": "e4m3", "quant": "dynamic", "granularity": "group"},
        ["act.group_size=None", "required for 'group'"],
    ),
    (
        "static per token",
        ActSpec,
        {"dtype": "int8", "quant": "static", "granularity": "token"},
        ["quant='static'", "'token'", "per tensor"],
    ),
    (
        "act e8m0 not g32",
        ActSpec,
        {"dtype": "e2m1", "quant": "dynamic", "granularity": "token", "scale_dtype": "e8m0"},
        ["'e8m0'", "group_size 32"],
    ),
    (
        "act scale dtype",
        ActSpec,
        {"dtype": "int8", "quant": "dynamic", "granularity": "token", "scale_dtype": "fp16"},
        ["'fp16'", "fp32, e8m0 or ue4m3"],
    ),
    (
        "act and glu",
        EpilogueSpec,
        {"activation": "silu", "glu": "silu_mul"},
        ["activation='silu'", "glu='silu_mul'", "choose one"],
    ),
]


@pytest.mark.parametrize(("what", "model", "kwargs", "needles"), RULES, ids=[r[0] for r in RULES])
def test_rule_rejects_with_named_field(what, model, kwargs, needles):
    with pytest.raises(ValidationError) as info:
        model(**kwargs)
    message = str(info.value)
    for needle in needles:
        assert needle in message, f"{what}: {needle!r} missing from {message!r}"


def test_act_must_represent_weight_values():
    with pytest.raises(
        ValidationError,
        match=r"act.dtype='e4m3' cannot represent the values of weight dtype 'int8'",
    ):
        _spec(
            weight={"dtype": "int8", "scale": {"granularity": "channel"}},
            act={"dtype": "e4m3", "quant": "dynamic", "granularity": "token"},
        )
    with pytest.raises(ValidationError, match=r"act.dtype='int8' cannot represent .* 'e2m1'"):
        _spec(
            weight={"dtype": "e2m1", "scale": G128},
            act={"dtype": "int8", "quant": "dynamic", "granularity": "token"},
        )
    # uint4 with integer zero points spans -15..15: exact in int8 and e4m3.
    _spec(
        weight={"dtype": "uint4", "scale": G128, "zero_point": "int"},
        act={"dtype": "e4m3", "quant": "dynamic", "granularity": "token"},
    )


def test_float_zero_point_rejected_with_quantized_act():
    with pytest.raises(ValidationError, match="zero_point='float' with quantized activations"):
        _spec(
            weight={"dtype": "uint4", "scale": G128, "zero_point": "float"},
            act={"dtype": "int8", "quant": "dynamic", "granularity": "token"},
        )


def test_topk_weight_needs_moe():
    with pytest.raises(ValidationError, match="topk_weight=True needs layout='moe'"):
        _spec(epilogue={"topk_weight": True})
    assert _spec(layout="moe", epilogue={"topk_weight": True}).epilogue.topk_weight


def test_frozen_and_extra_forbidden():
    spec = PRESETS["W4A16_G128"]
    with pytest.raises(ValidationError):
        spec.layout = "moe"
    with pytest.raises(ValidationError, match="extra"):
        _spec(colour="blue")


def test_derived_sizes():
    spec = PRESETS["W4A16_G128"]
    assert spec.weight.bits_per_weight == pytest.approx(4 + 16 / 128)
    assert spec.weight_bytes(4096, 4096) == 4096 * 4096 // 2 + 4096 * 32 * 2
    assert PRESETS["NVFP4"].weight.bits_per_weight == pytest.approx(4 + 8 / 16)
    assert PRESETS["W4A16_G128"].output_dtype == "fp16"
    assert PRESETS["W8A8_FP8"].output_dtype == "bf16"


def test_replace_revalidates():
    spec = PRESETS["W4A16_G128"]
    assert spec.replace(layout="moe").layout == "moe"
    with pytest.raises(ValidationError):
        spec.replace(
            act={"dtype": "e4m3", "quant": "dynamic", "granularity": "token"},
            weight={"dtype": "int8", "scale": {"granularity": "channel"}},
        )
