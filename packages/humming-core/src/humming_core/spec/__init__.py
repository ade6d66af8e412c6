"""Quantization specs: what the bits mean, separate from which kernel runs them."""

from .presets import *  # noqa: F403  (the named preset constants: W4A16_G128, MXFP4, ...)
from .presets import PRESETS, preset
from .quant import (
    SPEC_VERSION,
    ActSpec,
    EpilogueSpec,
    QuantSpec,
    ScaleSpec,
    WeightSpec,
)
from .scalar import ScalarType, scalar

__all__ = [
    *PRESETS,
    "PRESETS",
    "SPEC_VERSION",
    "ActSpec",
    "EpilogueSpec",
    "QuantSpec",
    "ScalarType",
    "ScaleSpec",
    "WeightSpec",
    "preset",
    "scalar",
]
