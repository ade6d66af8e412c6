"""The MoE W8A8 family: the indexed (vLLM fused_moe-style sorted token ids) expert GEMM with 8-bit
activations quantized per token on the GPU, x 8-bit (int8 / fp8 E4M3) or 4-bit (int4, uint4 with
zero points, E2M1 / MXFP4) weights: W8A8_INT8, W8A8_FP8, W4A8_INT8, W4A8_FP8, MXFP4_A8 as layout
'moe', with the MoE epilogues (activations, GLUs, gpt-oss's SwiGLU) and router weights.

It composes the dense W8A8 kernel (stages, MMA, 4-bit expansion, promotion) with a gathered
activation tile and moe_wna16's epilogue policies (include/humming/kernel/moe_w8a8.cuh). Not yet
offered: per-group / static activation scales and 128x128 block weight scales (FP8_BLOCK128).
"""

from __future__ import annotations

from humming_core.device import DeviceCaps
from humming_core.spec import QuantSpec

from ..family import ModuleFamily
from ..w8a8.config import W8a8Format
from .bind import MoeW8a8Kernel
from .config import MoeW8a8Config
from .heuristics import candidates, supports
from .layout import MoeW8a8Layout
from .render import render


class MoeW8a8Family(ModuleFamily):
    """`KernelFamily` implementation (see humming_cuda.kernels.base)."""

    # tests/test_moe_w8a8_conformance.py passed on an H200 on 2026-11-29.
    hardware_verified = True

    name = "moe_w8a8"
    config_type = MoeW8a8Config
    kernel_type = MoeW8a8Kernel
    supports = staticmethod(supports)
    candidates = staticmethod(candidates)
    render = staticmethod(render)

    def weight_layout(
        self, spec: QuantSpec, config: MoeW8a8Config, caps: DeviceCaps
    ) -> MoeW8a8Layout:
        ep = spec.epilogue
        return MoeW8a8Layout(
            W8a8Format.from_spec(spec), ep.glu_layout if ep.glu != "none" else None
        )


FAMILY = MoeW8a8Family()

__all__ = ["FAMILY", "MoeW8a8Config", "MoeW8a8Family", "MoeW8a8Kernel", "MoeW8a8Layout"]
