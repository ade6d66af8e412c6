"""Exact reference numerics: the oracle every kernel, checkpoint loader and device is tested against.

The main functions are re-exported here lazily (PEP 562): spec validation imports
`humming_core.numerics.scalar` while `humming_core.spec` is still initialising, so this package must
not import the modules that depend on specs and packing until one of their names is used.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

_EXPORTS = {
    "dequantize_act": "act",
    "quantize_act": "act",
    "canonical_table": "codec",
    "decode": "codec",
    "encode": "codec",
    "from_canonical": "codec",
    "round_to": "codec",
    "to_canonical": "codec",
    "value_table": "codec",
    "apply_epilogue": "epilogue",
    "reference_gemm": "gemm",
    "moe_align": "moe",
    "reference_fused_moe": "moe",
    "reference_grouped_gemm": "moe",
    "reference_moe_gemm": "moe",
    "dequantize_codes": "quant",
    "dequantize_weight": "quant",
    "quantize_weight": "quant",
}

__all__ = [
    "apply_epilogue",
    "canonical_table",
    "decode",
    "dequantize_act",
    "dequantize_codes",
    "dequantize_weight",
    "encode",
    "from_canonical",
    "moe_align",
    "quantize_act",
    "quantize_weight",
    "reference_fused_moe",
    "reference_gemm",
    "reference_grouped_gemm",
    "reference_moe_gemm",
    "round_to",
    "to_canonical",
    "value_table",
]

if TYPE_CHECKING:
    from .act import dequantize_act, quantize_act
    from .codec import (
        canonical_table,
        decode,
        encode,
        from_canonical,
        round_to,
        to_canonical,
        value_table,
    )
    from .epilogue import apply_epilogue
    from .gemm import reference_gemm
    from .moe import moe_align, reference_fused_moe, reference_grouped_gemm, reference_moe_gemm
    from .quant import dequantize_codes, dequantize_weight, quantize_weight


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'humming_core.numerics' has no attribute {name!r}")
    value = getattr(import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value
