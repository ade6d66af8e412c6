"""The MoE WnA16 family: the indexed (vLLM fused_moe-style sorted token ids) expert GEMM with
16-bit activations x any WnA16 weight format, optionally with a GLU epilogue (w13) and router
weights (w2). Reuses the dense WnA16 K loop (include/humming/kernel/moe_wna16.cuh), or with at most
8 rows per expert the decode kernel's (moe_wna16_decode.cuh, config tokens=8); no split-K (see
config.py).
"""

from __future__ import annotations

from humming_core.device import DeviceCaps
from humming_core.spec import QuantSpec

from ..family import ModuleFamily
from .bind import MoeWna16Kernel
from .config import MoeWna16Config
from .heuristics import block_m_for, candidates, supports
from .layout import MoeWna16Layout, moe_layout
from .render import render


class MoeWna16Family(ModuleFamily):
    """`KernelFamily` implementation (see humming_cuda.kernels.base)."""

    # Its cuda conformance tests (test_moe_wna16_conformance.py) passed on the H200 (sm_90a).
    hardware_verified = True

    name = "moe_wna16"
    config_type = MoeWna16Config
    kernel_type = MoeWna16Kernel
    supports = staticmethod(supports)
    candidates = staticmethod(candidates)
    render = staticmethod(render)

    def weight_layout(
        self, spec: QuantSpec, config: MoeWna16Config, caps: DeviceCaps
    ) -> MoeWna16Layout:
        return moe_layout(spec)


FAMILY = MoeWna16Family()

__all__ = [
    "FAMILY",
    "MoeWna16Config",
    "MoeWna16Family",
    "MoeWna16Kernel",
    "MoeWna16Layout",
    "block_m_for",
]
