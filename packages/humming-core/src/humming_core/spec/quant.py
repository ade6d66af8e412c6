"""What the user wants: a quantization format plus its epilogue, independent of any kernel.

Every model is frozen and forbids unknown fields; every invalid combination raises a pydantic
`ValidationError` whose message names the field, the value given and what is allowed.
"""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    PlainSerializer,
    field_validator,
    model_validator,
)

from .scalar import ScalarType

SPEC_VERSION = 1


def _as_scalar(value: Any) -> ScalarType:
    if isinstance(value, ScalarType):
        return value
    if isinstance(value, str):
        return ScalarType.parse(value)
    if isinstance(value, dict):
        return ScalarType(**value)
    raise ValueError(f"expected a scalar type name such as 'int4' or 'e4m3', got {value!r}")


# Scalar types travel as their short names in JSON ("int4", "e8m0").
Scalar = Annotated[
    ScalarType, BeforeValidator(_as_scalar), PlainSerializer(lambda s: s.name, return_type=str)
]

SCALE_DTYPES = ("fp32", "fp16", "bf16", "e8m0", "ue4m3")
WIDE_ACTS = ("fp16", "bf16")
QUANT_ACTS = ("int8", "e4m3", "e5m2", "int4", "e2m1")


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


def _pow2_at_least_16(name: str, value: int) -> int:
    if value < 16 or value & (value - 1):
        raise ValueError(
            f"{name}={value} is not allowed: use a power of two >= 16 (16, 32, 64, 128, ...)"
        )
    return value


class ScaleSpec(_Frozen):
    """How weights (or activations) are scaled: one scale per tensor, channel, group of K or n×k block."""

    granularity: Literal["tensor", "channel", "group", "block"]
    group_size: int | None = None
    block: tuple[int, int] | None = None
    dtype: Scalar = ScalarType.parse("fp16")

    @field_validator("dtype")
    @classmethod
    def _dtype(cls, v: ScalarType) -> ScalarType:
        if v.name not in SCALE_DTYPES:
            raise ValueError(
                f"scale dtype {v.name!r} is not allowed: use one of {', '.join(SCALE_DTYPES)}"
            )
        return v

    @field_validator("group_size")
    @classmethod
    def _group(cls, v: int | None) -> int | None:
        return None if v is None else _pow2_at_least_16("group_size", v)

    @field_validator("block")
    @classmethod
    def _block(cls, v: tuple[int, int] | None) -> tuple[int, int] | None:
        if v is not None:
            _pow2_at_least_16("block[0] (rows of N)", v[0])
            _pow2_at_least_16("block[1] (columns of K)", v[1])
        return v

    @model_validator(mode="after")
    def _shape(self) -> ScaleSpec:
        g = self.granularity
        if (g == "group") != (self.group_size is not None):
            raise ValueError(
                f"group_size={self.group_size} with granularity={g!r}: group_size is required for "
                "granularity 'group' and not allowed otherwise"
            )
        if (g == "block") != (self.block is not None):
            raise ValueError(
                f"block={self.block} with granularity={g!r}: block is required for granularity "
                "'block' and not allowed otherwise"
            )
        name = self.dtype.name
        if name == "e8m0" and self.group_size != 32:
            raise ValueError(
                f"dtype='e8m0' with granularity={g!r}, group_size={self.group_size}: MX formats "
                "share one E8M0 scale per group of 32 (granularity 'group', group_size 32)"
            )
        if name == "ue4m3" and self.group_size != 16:
            raise ValueError(
                f"dtype='ue4m3' with granularity={g!r}, group_size={self.group_size}: NVFP4 scales "
                "are UE4M3 per group of 16 (granularity 'group', group_size 16)"
            )
        return self


class WeightSpec(_Frozen):
    """Stored weights: element type, scales, zero points and the optional second-level scale."""

    dtype: Scalar
    scale: ScaleSpec
    zero_point: Literal["none", "int", "float"] = "none"
    # A second-level FP32 scale per tensor multiplying the group scales (NVFP4's global scale).
    global_scale: bool = False

    @field_validator("dtype")
    @classmethod
    def _dtype(cls, v: ScalarType) -> ScalarType:
        if v.bits > 8 or (v.is_float and (not v.signed or v.is_exponent_only)):
            raise ValueError(
                f"weight dtype {v.name!r} is not allowed: use int1..int8, uint1..uint8 or a signed "
                "float of at most 8 bits (e2m1, e3m2, e2m3, e4m3, e5m2, ...)"
            )
        return v

    @model_validator(mode="after")
    def _rules(self) -> WeightSpec:
        if self.dtype.name == "int1" and self.zero_point == "none":
            raise ValueError(
                "dtype='int1' with zero_point='none': symmetric 1-bit codes are {-1, 0} and hold no "
                "positive weight; use dtype='uint1' with zero_point='int' (or 'float')"
            )
        if self.zero_point != "none" and not self.dtype.is_integer:
            raise ValueError(
                f"zero_point={self.zero_point!r} with dtype={self.dtype.name!r}: zero points apply "
                "only to integer weights (int/uint); use zero_point='none'"
            )
        if self.zero_point != "none" and self.scale.dtype.name not in ("fp32", "fp16", "bf16"):
            raise ValueError(
                f"zero_point={self.zero_point!r} with scale dtype {self.scale.dtype.name!r}: zero "
                "points need fp32, fp16 or bf16 scales"
            )
        if self.zero_point != "none" and self.scale.granularity not in ("group", "channel"):
            raise ValueError(
                f"zero_point={self.zero_point!r} with scale granularity {self.scale.granularity!r}: "
                "zero points are per group or per channel"
            )
        if self.global_scale and self.scale.granularity not in ("group", "block"):
            raise ValueError(
                f"global_scale=True with scale granularity {self.scale.granularity!r}: a "
                "second-level scale is only allowed on top of group or block scales"
            )
        if self.scale.dtype.name == "ue4m3" and not self.global_scale:
            raise ValueError(
                "scale dtype 'ue4m3' needs global_scale=True: NVFP4 multiplies its UE4M3 group "
                "scales by an FP32 per-tensor scale"
            )
        return self

    @property
    def bits_per_weight(self) -> float:
        """Weight bits plus amortised scale and zero-point bits (block scales and tensor ones ~0)."""
        bits = float(self.dtype.bits)
        g = self.scale.group_size
        if g is not None:
            bits += self.scale.dtype.storage_bits / g
            if self.zero_point == "int":
                bits += self.dtype.bits / g
            elif self.zero_point == "float":
                bits += self.scale.dtype.storage_bits / g
        return bits


# A GLU the activation quantizer applies to its input first (ActSpec.input_glu).
InputGluFn = Literal["none", "silu_mul", "gelu_mul", "gelu_tanh_mul"]
INPUT_GLU_ACTS = ("int8", "e4m3")


class ActSpec(_Frozen):
    """Activations as the GEMM consumes them: 16-bit, or quantized with their own scales.

    `input_glu` (8-bit quantized activations): the layer's input is the previous layer's
    [gate | up] output, x [M, 2K] with gate = x[:, :K] and up = x[:, K:] (vLLM's merged gate_up
    projection), and the quantizer computes act(gate) * up in fp32, rounds it to x's dtype (what
    a separate activation kernel would store) and quantizes that: one pass over x instead of an
    activation kernel writing [M, K] and the quantizer reading it back."""

    dtype: Scalar = ScalarType.parse("fp16")
    quant: Literal["none", "dynamic", "static"] = "none"
    granularity: Literal["tensor", "token", "group"] | None = None
    group_size: int | None = None
    scale_dtype: Scalar = ScalarType.parse("fp32")
    global_scale: bool = False
    input_glu: InputGluFn = "none"

    @field_validator("dtype")
    @classmethod
    def _dtype(cls, v: ScalarType) -> ScalarType:
        if v.name not in WIDE_ACTS + QUANT_ACTS:
            raise ValueError(
                f"activation dtype {v.name!r} is not allowed: use one of "
                f"{', '.join(WIDE_ACTS + QUANT_ACTS)}"
            )
        return v

    @field_validator("group_size")
    @classmethod
    def _group(cls, v: int | None) -> int | None:
        return None if v is None else _pow2_at_least_16("act.group_size", v)

    @field_validator("scale_dtype")
    @classmethod
    def _scale(cls, v: ScalarType) -> ScalarType:
        if v.name not in ("fp32", "e8m0", "ue4m3"):
            raise ValueError(
                f"activation scale_dtype {v.name!r} is not allowed: use fp32, e8m0 or ue4m3"
            )
        return v

    @model_validator(mode="after")
    def _rules(self) -> ActSpec:
        wide = self.dtype.name in WIDE_ACTS
        if self.input_glu != "none" and self.dtype.name not in INPUT_GLU_ACTS:
            raise ValueError(
                f"act.input_glu={self.input_glu!r} with act dtype {self.dtype.name!r}: the GLU "
                f"is fused into the quantization of {' / '.join(INPUT_GLU_ACTS)} activations; "
                "otherwise apply it before the layer (or as the previous GEMM's epilogue.glu)"
            )
        if wide:
            if self.quant != "none" or self.granularity is not None or self.group_size is not None:
                raise ValueError(
                    f"act dtype {self.dtype.name!r} is not quantized: quant must be 'none' and "
                    "granularity/group_size unset"
                )
            return self
        if self.quant == "none":
            raise ValueError(
                f"act dtype {self.dtype.name!r} is quantized: set quant to 'dynamic' or 'static'"
            )
        if self.granularity is None:
            raise ValueError(
                f"act dtype {self.dtype.name!r}: granularity is required ('tensor', 'token' or 'group')"
            )
        if (self.granularity == "group") != (self.group_size is not None):
            raise ValueError(
                f"act.group_size={self.group_size} with granularity={self.granularity!r}: required "
                "for 'group' and not allowed otherwise"
            )
        if self.quant == "static" and self.granularity != "tensor":
            raise ValueError(
                f"act quant='static' with granularity={self.granularity!r}: static activation "
                "scales are per tensor"
            )
        sd = self.scale_dtype.name
        if sd == "e8m0" and self.group_size != 32:
            raise ValueError(
                "act scale_dtype 'e8m0' (MX) needs granularity 'group' with group_size 32"
            )
        if sd == "ue4m3" and (self.group_size != 16 or not self.global_scale):
            raise ValueError(
                "act scale_dtype 'ue4m3' (NVFP4) needs granularity 'group', group_size 16 and global_scale=True"
            )
        if self.global_scale and sd != "ue4m3":
            raise ValueError("act global_scale=True is only used with ue4m3 (NVFP4) group scales")
        return self

    @property
    def is_quantized(self) -> bool:
        return self.quant != "none"

    @property
    def x_columns(self) -> int:
        """Columns of a layer's x per column of K: 2 with an input GLU ([gate | up]), else 1."""
        return 2 if self.input_glu != "none" else 1


ActivationFn = Literal["none", "relu", "silu", "gelu", "gelu_tanh"]
GluFn = Literal["none", "silu_mul", "gelu_mul", "gelu_tanh_mul", "swiglu_oai"]


class EpilogueSpec(_Frozen):
    """What happens to the fp32 accumulator before it is stored."""

    bias: bool = False
    activation: ActivationFn = "none"
    glu: GluFn = "none"
    # Gate/up halves of a GLU layer: 'split' = [gate rows | up rows], 'interleaved' = row by row.
    glu_layout: Literal["split", "interleaved"] = "split"
    # gpt-oss's clamped SwiGLU: gate clamped to <= limit, up to [-limit, limit], out = (up + 1) * gate * sigmoid(alpha * gate).
    swiglu_limit: float = 7.0
    swiglu_alpha: float = 1.702
    topk_weight: bool = False
    out_dtype: Literal["fp16", "bf16", "fp32"] | None = None

    @model_validator(mode="after")
    def _rules(self) -> EpilogueSpec:
        if self.activation != "none" and self.glu != "none":
            raise ValueError(
                f"activation={self.activation!r} and glu={self.glu!r}: choose one; a GLU already "
                "applies its activation to the gate half"
            )
        return self


class QuantSpec(_Frozen):
    """The whole description: weights × activations, dense or MoE layout, and the epilogue."""

    version: Literal[1] = SPEC_VERSION
    weight: WeightSpec
    act: ActSpec = ActSpec()
    layout: Literal["dense", "moe"] = "dense"
    epilogue: EpilogueSpec = EpilogueSpec()

    @model_validator(mode="after")
    def _rules(self) -> QuantSpec:
        if self.act.is_quantized:
            self._check_act_represents_weights()
        if self.epilogue.topk_weight and self.layout != "moe":
            raise ValueError(
                "epilogue.topk_weight=True needs layout='moe': it multiplies by the router's top-k weight"
            )
        if self.act.input_glu != "none" and self.layout != "dense":
            raise ValueError(
                f"act.input_glu={self.act.input_glu!r} with layout={self.layout!r}: a MoE layer "
                "applies its GLU in w13's epilogue (epilogue.glu), before w2's quantizer"
            )
        return self

    def _check_act_represents_weights(self) -> None:
        from ..numerics.scalar import representable_values, weight_values

        if self.weight.zero_point == "float":
            raise ValueError(
                f"weight.zero_point='float' with quantized activations act.dtype={self.act.dtype.name!r}: "
                "float offsets cannot enter an integer or fp8 MMA; use 16-bit activations"
            )
        needed = weight_values(self.weight.dtype, self.weight.zero_point)
        have = representable_values(self.act.dtype)
        missing = sorted(set(needed) - have)
        if missing:
            raise ValueError(
                f"act.dtype={self.act.dtype.name!r} cannot represent the values of weight dtype "
                f"{self.weight.dtype.name!r} (zero_point={self.weight.zero_point!r}), e.g. "
                f"{missing[:4]}: choose an activation type that holds every weight value exactly "
                "(int4/uint4 -> int8 or e4m3; e2m1 -> e4m3 or e2m1)"
            )

    # ---- derived ------------------------------------------------------------------------------
    @property
    def output_dtype(self) -> str:
        """Output dtype name: the epilogue's, else the 16-bit activation type, else bf16."""
        if self.epilogue.out_dtype is not None:
            return self.epilogue.out_dtype
        return self.act.dtype.name if not self.act.is_quantized else "bf16"

    def weight_bytes(self, n: int, k: int) -> int:
        """Bytes of packed weights, scales and zero points for an n×k layer."""
        w = self.weight
        total = n * k * w.dtype.bits // 8
        s = w.scale
        scale_bytes = s.dtype.storage_bits // 8
        if s.granularity == "group":
            groups = n * (-(-k // s.group_size))
        elif s.granularity == "block":
            groups = -(-n // s.block[0]) * -(-k // s.block[1])
        elif s.granularity == "channel":
            groups = n
        else:
            groups = 1
        total += groups * scale_bytes
        if w.zero_point == "int":
            total += (
                groups * w.dtype.bits // 8 if w.dtype.bits >= 8 else -(-groups * w.dtype.bits // 8)
            )
        elif w.zero_point == "float":
            total += groups * scale_bytes
        if w.global_scale:
            total += 4
        return total

    def to_json(self) -> str:
        return self.model_dump_json()

    @classmethod
    def from_json(cls, text: str | bytes) -> QuantSpec:
        data = json.loads(text)
        version = data.get("version", SPEC_VERSION) if isinstance(data, dict) else None
        if version != SPEC_VERSION:
            raise ValueError(
                f"spec version {version!r} is not supported: this humming reads version {SPEC_VERSION}"
            )
        return cls.model_validate(data)

    def replace(self, **changes: Any) -> QuantSpec:
        """A copy with fields replaced, validated again."""
        data = self.model_dump()
        data.update(
            {k: v.model_dump() if isinstance(v, BaseModel) else v for k, v in changes.items()}
        )
        return QuantSpec.model_validate(data)
