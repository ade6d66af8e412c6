"""humming-vllm: serve quantized checkpoints in vLLM on Humming kernels.

`register()` is the `vllm.general_plugins` entry point. The vLLM-free core (`plan`, `schemes`,
`layout`, `guard`) imports without vLLM; `config` and `linear` are the thin vLLM 0.33 adapters.
"""

from __future__ import annotations

from .guard import no_compiles

QUANT_NAME = "humming_q"
VLLM_VERSION = "0.33.0"  # the minor the adapters and their contract tests are written against

__all__ = ["QUANT_NAME", "VLLM_VERSION", "no_compiles", "register"]


def register() -> None:
    """Register the `humming_q` quantization method with vLLM (idempotent; runs in every process)."""
    from vllm.model_executor.layers.quantization import (
        _CUSTOMIZED_METHOD_TO_QUANT_CONFIG,
        register_quantization_config,
    )

    from .config import HummingQuantConfig

    if _CUSTOMIZED_METHOD_TO_QUANT_CONFIG.get(QUANT_NAME) is HummingQuantConfig:
        return
    register_quantization_config(QUANT_NAME)(HummingQuantConfig)
