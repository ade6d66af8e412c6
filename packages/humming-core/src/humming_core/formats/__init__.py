"""Checkpoint formats: read what users have (GPTQ, AWQ, compressed-tensors, ModelOpt, gpt-oss MXFP4,
FP8 block, GGUF) into (QuantSpec, CanonicalWeight), exactly.

`open_checkpoint(path)` detects the format from the quantization config's `quant_method` (or the
.gguf suffix) and returns a `CheckpointFormat`: `.layers()` lists the quantized layers, `.load(name)`
converts one. Importing this package registers every format module below.
"""

from . import (  # noqa: F401  (importing registers the formats)
    awq,
    compressed_tensors,
    fp8_block,
    gguf,
    gptoss_mxfp4,
    gptq,
    modelopt,
)
from .base import FORMATS, Checkpoint, CheckpointFormat, QuantLayer, open_checkpoint
from .errors import FormatError

__all__ = [
    "FORMATS",
    "Checkpoint",
    "CheckpointFormat",
    "FormatError",
    "QuantLayer",
    "open_checkpoint",
]
