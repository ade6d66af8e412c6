"""Named presets: the formats users ask for by name. Each is a validated `QuantSpec` constant."""

from __future__ import annotations

from .quant import ActSpec, QuantSpec, ScaleSpec, WeightSpec


def _group(g: int, dtype: str = "fp16") -> ScaleSpec:
    return ScaleSpec(granularity="group", group_size=g, dtype=dtype)


def _channel(dtype: str = "fp16") -> ScaleSpec:
    return ScaleSpec(granularity="channel", dtype=dtype)


def _w(
    dtype: str, scale: ScaleSpec, zero_point: str = "none", global_scale: bool = False
) -> WeightSpec:
    return WeightSpec(dtype=dtype, scale=scale, zero_point=zero_point, global_scale=global_scale)


_A16 = ActSpec(dtype="fp16")
_BF16 = ActSpec(dtype="bf16")
_FP8_TOKEN = ActSpec(dtype="e4m3", quant="dynamic", granularity="token")
# NVFP4 activations: E2M1 per 16 with UE4M3 scales times an FP32 per-tensor scale (W4A4 NVFP4).
NVFP4_ACT = ActSpec(
    dtype="e2m1",
    quant="dynamic",
    granularity="group",
    group_size=16,
    scale_dtype="ue4m3",
    global_scale=True,
)
_INT8_TOKEN = ActSpec(dtype="int8", quant="dynamic", granularity="token")

# Weight-only (WnA16). Symmetric integer weights are the signed type (offset-binary in storage).
W4A16_G128 = QuantSpec(weight=_w("int4", _group(128)), act=_A16)
W8A16 = QuantSpec(weight=_w("int8", _channel()), act=_A16)
W3A16_G128 = QuantSpec(weight=_w("int3", _group(128)), act=_A16)
W2A16_G64 = QuantSpec(weight=_w("int2", _group(64)), act=_A16)
GPTQ_INT4 = QuantSpec(weight=_w("uint4", _group(128), zero_point="int"), act=_A16)
AWQ_INT4 = QuantSpec(weight=_w("uint4", _group(128), zero_point="int"), act=_A16)
GGUF_Q4_K = QuantSpec(weight=_w("uint4", _group(32), zero_point="float"), act=_A16)
MXFP4 = QuantSpec(weight=_w("e2m1", _group(32, "e8m0")), act=_BF16)
MXINT4 = QuantSpec(weight=_w("int4", _group(32, "e8m0")), act=_BF16)
NVFP4 = QuantSpec(weight=_w("e2m1", _group(16, "ue4m3"), global_scale=True), act=_BF16)
FP8_CHANNEL = QuantSpec(weight=_w("e4m3", _channel("fp32")), act=_BF16)
E4M3_G128 = QuantSpec(weight=_w("e4m3", _group(128)), act=_A16)

# Quantized activations.
FP8_BLOCK128 = QuantSpec(
    weight=_w("e4m3", ScaleSpec(granularity="block", block=(128, 128), dtype="fp32")),
    act=ActSpec(dtype="e4m3", quant="dynamic", granularity="group", group_size=128),
    epilogue={"out_dtype": "bf16"},
)
W8A8_FP8 = QuantSpec(
    weight=_w("e4m3", _channel("fp32")), act=_FP8_TOKEN, epilogue={"out_dtype": "bf16"}
)
W8A8_INT8 = QuantSpec(
    weight=_w("int8", _channel("fp32")), act=_INT8_TOKEN, epilogue={"out_dtype": "bf16"}
)
W4A8_FP8 = QuantSpec(weight=_w("int4", _group(128)), act=_FP8_TOKEN, epilogue={"out_dtype": "bf16"})
W4A8_INT8 = QuantSpec(
    weight=_w("int4", _group(128)), act=_INT8_TOKEN, epilogue={"out_dtype": "bf16"}
)
MXFP4_A8 = QuantSpec(
    weight=_w("e2m1", _group(32, "e8m0")), act=_FP8_TOKEN, epilogue={"out_dtype": "bf16"}
)
W4A4_NVFP4 = QuantSpec(
    weight=_w("e2m1", _group(16, "ue4m3"), global_scale=True),
    act=NVFP4_ACT,
    epilogue={"out_dtype": "bf16"},
)
W4A4_MXFP4 = QuantSpec(
    weight=_w("e2m1", _group(32, "e8m0")),
    act=ActSpec(
        dtype="e2m1", quant="dynamic", granularity="group", group_size=32, scale_dtype="e8m0"
    ),
    epilogue={"out_dtype": "bf16"},
)
W4A4_INT4 = QuantSpec(
    weight=_w("int4", _group(128)),
    act=ActSpec(dtype="int4", quant="dynamic", granularity="token"),
    epilogue={"out_dtype": "fp16"},
)

PRESETS: dict[str, QuantSpec] = {
    name: value
    for name, value in globals().items()
    if isinstance(value, QuantSpec) and name.isupper()
}


def preset(name: str) -> QuantSpec:
    """Look a preset up by name (case-insensitive)."""
    key = name.strip().upper().replace("-", "_")
    if key not in PRESETS:
        raise KeyError(f"unknown preset {name!r}: choose one of {', '.join(sorted(PRESETS))}")
    return PRESETS[key]
